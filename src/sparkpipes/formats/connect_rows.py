"""Table rows of transformed Kafka Connect records as Confluent's JDBC sink makes them
(:class:`~sparkpipes.config.transforms.RecordRows`; sources: ``FieldsMetadata``,
``RecordValidator``, ``BufferedRecords`` and ``DbStructure`` of
confluentinc/kafka-connect-jdbc).

What is promised, for each chunk of records once transformed:

- a record the connector cannot write fails the batch whatever ``errors.tolerance``
  says, as the JDBC sink's task fails (these checks run in its ``put``, which Connect's
  error tolerance does not cover), with the connector's own message: a null key where
  ``pk.mode=record_key`` or ``delete.enabled`` needs one; a tombstone without
  ``delete.enabled``; a value that is not a struct (or a string); a ``pk.fields`` field
  the key or value does not have; a primitive key with other than one ``pk.fields``;
- the primary-key columns come from the key (a struct key's fields, a primitive key
  as the one column named), the Kafka coordinates (``__connect_topic``,
  ``__connect_partition``, ``__connect_offset`` or the three names given; the topic
  as the transforms leave it) or the value; a key column wins over a value field of
  its name;
- with ``deletes``, a tombstone is a row of its key marked as a delete (its other
  columns hold placeholders, never written: the sink deletes by key);
- a value field the table has no column for (among ``fields.whitelist`` when given)
  rejects its record with Confluent's message naming the table and the fields — unless
  the field is null there, which loses nothing: it is never dropped silently. Such a
  record fails the batch, or with ``errors.tolerance=all`` goes to the errors, as
  Connect's JDBC sink reports a record whose table it cannot amend.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config.transforms import RecordRows
from sparkpipes.errors import DecodeError
from sparkpipes.formats.base import RecordError
from sparkpipes.sources.connect import smt

#: the default names of ``pk.mode=kafka``'s columns (JdbcSinkConfig.DEFAULT_KAFKA_PK_NAMES)
KAFKA_PK_NAMES = ("__connect_topic", "__connect_partition", "__connect_offset")
#: the value of the staged delete mark of a tombstone
DELETE = "true"


def shape(
    done: smt.Records, rows: RecordRows, columns: Collection[str], table: pa.Table
) -> tuple[pa.Table, list[RecordError]]:
    """``table`` (the values' fields as columns) with the key's, the coordinates' and
    the delete mark's columns; the records refused (``columns``: the value fields the
    table's columns are mapped from). Raises DecodeError for a record the connector
    cannot write at all (see the module docstring)."""
    tombstones = pc.fill_null(done.value.is_null(), True)
    _require(done, rows, tombstones)
    live = pc.invert(tombstones)
    if pc.any(live).as_py() and not (
        pa.types.is_struct(done.value.type) or pa.types.is_string(done.value.type)
    ):
        raise DecodeError(f"Value schema must be of type Struct or String (table '{rows.table}')")
    if rows.pk_mode == "record_value" and rows.pk_fields and pa.types.is_struct(done.value.type):
        _has(rows, "value", [f.name for f in done.value.type], done)
    key_columns: dict[str, pa.Array] = {}
    if rows.pk_mode == "record_key":
        key_columns = _key_columns(done, rows)
    elif rows.pk_mode == "kafka":
        names = rows.pk_fields or KAFKA_PK_NAMES
        key_columns = {
            names[0]: done.topic.cast(pa.string()),
            names[1]: _or_nulls(done.partition, len(done)).cast(pa.int32()),
            names[2]: _or_nulls(done.offset, len(done)).cast(pa.int64()),
        }
    for name, column in key_columns.items():
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, column)
        else:
            table = table.append_column(name, column)
    if rows.deletes is not None:
        mark = pa.array(np.where(tombstones.to_numpy(zero_copy_only=False), DELETE, None))
        table = table.append_column(rows.deletes, mark.cast(pa.string()))
    errors = _missing(done, rows, set(columns) | set(key_columns), live)
    return table, errors


#: Kafka's primitive converters (``org.apache.kafka.connect.converters``): the bytes of
#: their serializers (big-endian), as numpy reads them, and their Connect type's name
PRIMITIVE_KEYS = {
    "long": (">i8", "Long"),
    "integer": (">i4", "Integer"),
    "short": (">i2", "Short"),
    "double": (">f8", "Double"),
    "float": (">f4", "Float"),
}


def primitive_keys(keys: pa.Array, kind: str) -> tuple[pa.Array, dict[int, str]]:
    """Keys read by Kafka's ``LongConverter`` (``IntegerConverter`` …; ``bytes``: the
    ``ByteArrayConverter``'s bytes as they are), and the ones of the wrong size, refused
    with the deserializer's message."""
    if kind == "bytes":
        return keys.cast(pa.binary()), {}
    dtype, name = PRIMITIVE_KEYS[kind]
    width = np.dtype(dtype).itemsize
    raw = keys.cast(pa.binary()).to_pylist()
    bad = {
        i: "Converting byte[] to Kafka Connect data failed due to serialization error: Size "
        f"of data received by {name}Deserializer is not {width}"
        for i, v in enumerate(raw)
        if v is not None and len(v) != width
    }
    values = [
        None if v is None or i in bad else np.frombuffer(v, dtype)[0].item()
        for i, v in enumerate(raw)
    ]
    arrow = pa.int64() if "i" in dtype else pa.float64()
    if dtype in (">i4", ">i2"):
        arrow = pa.int32() if dtype == ">i4" else pa.int16()
    elif dtype == ">f4":
        arrow = pa.float32()
    return pa.array(values, arrow), bad


def placeholders(table: pa.Table, rows: RecordRows) -> pa.Table:
    """``table`` with the empty non-key columns of delete rows filled with a value of
    their type: a delete is written by key only, and a NOT NULL column must not refuse
    it before it gets there."""
    if rows.deletes is None or rows.deletes not in table.column_names or not table.num_rows:
        return table
    gone = pc.equal(pc.fill_null(table.column(rows.deletes), ""), DELETE)
    if not pc.any(gone).as_py():
        return table
    keys = {*rows.pk_fields, rows.deletes}
    for i, name in enumerate(table.column_names):
        if name in keys:
            continue
        col = table.column(i)
        zero = _zero(col.type)
        if zero is None:
            continue
        fill = pc.and_(gone, col.is_null())
        table = table.set_column(i, name, pc.if_else(fill, zero, col))
    return table


def _zero(kind: pa.DataType) -> pa.Scalar | None:
    """A value of type ``kind`` (None where there is no simple one)."""
    try:
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return pa.scalar("", kind)
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            return pa.scalar(b"", kind)
        if pa.types.is_boolean(kind):
            return pa.scalar(False)
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return pa.scalar([], kind)
        if pa.types.is_decimal(kind):
            return pa.scalar(0, pa.int64()).cast(kind)
        return pa.scalar(0, pa.int64()).cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _or_nulls(column: pa.Array | None, n: int) -> pa.Array:
    return column if column is not None else pa.nulls(n)


def _where(done: smt.Records, i: int) -> str:
    """A record's coordinates as Connect's messages give them."""
    ts = done.timestamp.cast(pa.int64())[i].as_py() if done.timestamp is not None else None
    part = done.partition[i].as_py() if done.partition is not None else None
    off = done.offset[i].as_py() if done.offset is not None else None
    return f"(topic='{done.topic[i].as_py()}',partition={part},offset={off},timestamp={ts})"


def _require(done: smt.Records, rows: RecordRows, tombstones: pa.Array) -> None:
    """RecordValidator: a key where ``record_key`` or deletes need one; a value unless
    deletes are enabled."""
    settings = (
        f"Sink connector '{rows.connector}' is configured with "
        f"'delete.enabled={str(rows.deletes is not None).lower()}' and "
        f"'pk.mode={rows.pk_mode}' and therefore requires records with a non-null "
    )
    no_key = pc.fill_null(done.key.is_null(), True)
    need = no_key if rows.pk_mode == "record_key" else pc.and_(no_key, tombstones)
    if rows.deletes is not None or rows.pk_mode == "record_key":
        bad = pc.indices_nonzero(need)
        if len(bad):
            i = bad[0].as_py()
            raise DecodeError(
                settings + "key and non-null Struct or primitive key schema, but found record "
                f"at {_where(done, i)} with a null key and null key schema."
            )
    if rows.deletes is None:
        bad = pc.indices_nonzero(tombstones)
        if len(bad):
            i = bad[0].as_py()
            raise DecodeError(
                settings + "Struct or String value and non-null Struct or String schema, but "
                f"found record at {_where(done, i)} with a null value and null value schema."
            )


def _has(rows: RecordRows, part: str, names: list[str], done: smt.Records) -> None:
    for f in rows.pk_fields:
        if f not in names:
            mode = rows.pk_mode.upper()
            raise DecodeError(
                f"PK mode for table '{rows.table}' is {mode} with configured PK fields "
                f"{_list(rows.pk_fields)}, but record {part} schema does not contain field: {f}"
            )


def _key_columns(done: smt.Records, rows: RecordRows) -> dict[str, pa.Array]:
    """``record_key``: a struct key's ``pk_fields`` (all its fields when none are named),
    or a primitive key as the one column named."""
    key = done.key
    if pa.types.is_struct(key.type):
        names = [f.name for f in key.type]
        _has(rows, "key", names, done)
        wanted = rows.pk_fields or tuple(names)
        return {f: pc.struct_field(key, [names.index(f)]) for f in wanted}
    if pa.types.is_null(key.type):
        return {f: pa.nulls(len(done)) for f in rows.pk_fields}
    if len(rows.pk_fields) != 1:
        raise DecodeError(
            "Need exactly one PK column defined since the key schema for records is a "
            f"primitive type, defined columns are: {_list(rows.pk_fields)}"
        )
    return {rows.pk_fields[0]: key}


def _missing(
    done: smt.Records, rows: RecordRows, columns: set[str], live: pa.Array
) -> list[RecordError]:
    """The records with a value in a field the table has no column for."""
    value = done.value
    if not pa.types.is_struct(value.type):
        return []
    skip = set(rows.pk_fields) if rows.pk_mode == "record_key" else set()
    names = [f.name for f in value.type]
    extra = [
        n
        for n in names
        if n not in columns and n not in skip and (not rows.fields or n in rows.fields)
    ]
    if not extra:
        return []
    why: dict[int, list[str]] = {}
    for name in extra:
        held = pc.and_(live, pc.struct_field(value, [names.index(name)]).is_valid())
        for i in pc.indices_nonzero(pc.fill_null(held, False)).to_pylist():
            why.setdefault(i, []).append(name)
    out = []
    for i, missing in sorted(why.items()):
        text = f"Table {rows.table} is missing fields ({', '.join(missing)})"
        if rows.evolve:
            text += (
                ": auto.evolve adds a record's new fields as columns when the connector is "
                "created, reconfigured or restarted, not while it runs; restart it to add them"
            )
        else:
            text += " and auto-evolution is disabled"
        out.append(RecordError(done.index[i].as_py(), text))
    return out


def _list(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(names) + "]"

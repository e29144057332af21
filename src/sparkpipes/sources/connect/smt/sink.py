"""A sink connector's Kafka records as :class:`~sparkpipes.sources.connect.smt.base.Records`
— what Kafka Connect's ``JsonConverter`` and ``StringConverter`` make of them, column-wise
— so that a transform chain runs on them in the decoding task.

Promises:

- :func:`json_values`: each value's JSON as one Arrow column (a struct for objects); with
  ``schemas`` the JsonConverter's envelope: the value is its ``payload``, a record without
  ``schema`` and ``payload`` is refused with Connect's message, and the fields the schema
  gives a logical type (``Timestamp``, ``Date``, ``Time``) or ``bytes`` are converted as
  Connect converts them (epoch milliseconds to a timestamp, days to a date, base64 to
  bytes). A Kafka null is a tombstone (null value). Text that is not JSON is refused,
  that record alone.
- :func:`keys_of`: the keys as JSON (an envelope's payload) where every key of the chunk
  is JSON, else as text; keys are not loaded, a key transform or predicate reads them.
- :func:`headers_of`: each header name a column of its bytes (the last value of a name
  a record repeats; ``b""`` for a header without a value), null where a record lacks it:
  headers are not loaded, so what matters is which records have one
  (``HasHeaderKey``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.connect.smt import jsontext

ENVELOPE = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
_DATE = "org.apache.kafka.connect.data.Date"
_TIME = "org.apache.kafka.connect.data.Time"


def text(values: pa.Array) -> pa.Array:
    """Bytes as UTF-8 text (invalid sequences replaced)."""
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array(
            [None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()],
            pa.string(),
        )


def json_values(values: pa.Array, *, schemas: bool) -> tuple[pa.Array, dict[int, str]]:
    """The values (binary, null for a tombstone) decoded by the JsonConverter: (one
    column, the records refused by index with why).

    The whole chunk is read by Arrow; only a chunk Arrow will not read as one column (a
    record that is not JSON; an envelope whose schema holds defaults of several types)
    is read record by record, each envelope's ``payload`` then read by Arrow again."""
    texts = text(values)
    bad: dict[int, str] = {}
    try:
        column = jsontext.parse(texts)
    except (ValueError, jsontext.MixedTypes):
        return _slow(texts, schemas, bad), bad
    if not schemas or pa.types.is_null(column.type):
        return column, bad
    names = _names(column)
    if "payload" not in names or not set(names) <= {"schema", "payload"}:
        for i in pc.indices_nonzero(column.is_valid()).to_pylist():
            bad[i] = ENVELOPE
        return pa.nulls(len(column)), bad
    payload = pc.struct_field(column, [names.index("payload")])
    if "schema" in names:
        schema_col = pc.struct_field(column, [names.index("schema")])
        if schema_col.null_count < len(schema_col):
            first = int(pc.indices_nonzero(schema_col.is_valid())[0].as_py())
            payload = logical(payload, schema_col[first].as_py())
    return payload, bad


def _names(column: pa.Array) -> list[str]:
    return [f.name for f in column.type] if pa.types.is_struct(column.type) else []


def _slow(texts: pa.Array, schemas: bool, bad: dict[int, str]) -> pa.Array:
    """Record by record: each value's JSON (its payload's, with ``schemas``) as text,
    then read by Arrow as one column; the records that are not JSON refused."""
    out: list[str | None] = []
    schema: Any = None
    for i, t in enumerate(texts.to_pylist()):
        if t is None:
            out.append(None)
            continue
        try:
            doc = json.loads(t)
        except ValueError as e:
            bad[i] = (
                f"Converting byte[] to Kafka Connect data failed due to serialization error: {e}"
            )
            out.append(None)
            continue
        if schemas:
            if (
                not isinstance(doc, dict)
                or "payload" not in doc
                or set(doc) - {"schema", "payload"}
            ):
                bad[i] = ENVELOPE
                out.append(None)
                continue
            schema = schema if schema is not None else doc.get("schema")
            doc = doc["payload"]
        out.append(json.dumps(doc))
    try:
        column = jsontext.parse(pa.array(out, pa.string()))
    except jsontext.MixedTypes as e:
        for i, t in enumerate(out):
            if t is not None:
                bad.setdefault(i, str(e))
        return pa.nulls(len(out))
    return logical(column, schema) if schemas else column


def logical(column: pa.Array, schema: Mapping[str, Any] | None) -> pa.Array:
    """``column`` with the Connect ``schema``'s logical types and bytes applied."""
    if not isinstance(schema, Mapping):
        return column
    name = schema.get("name")
    if pa.types.is_integer(column.type) or pa.types.is_null(column.type):
        if name == _TIMESTAMP:
            return column.cast(pa.int64()).cast(pa.timestamp("ms", "UTC"))
        if name == _DATE:
            return column.cast(pa.int32()).cast(pa.date32())
        if name == _TIME:
            return column.cast(pa.int32()).cast(pa.time32("ms"))
    if schema.get("type") == "bytes" and name is None and pa.types.is_string(column.type):
        return pa.array(
            [None if v is None else base64.b64decode(v) for v in column.to_pylist()], pa.binary()
        )
    if schema.get("type") == "struct" and pa.types.is_struct(column.type):
        by_name = {f.get("field"): f for f in schema.get("fields") or () if isinstance(f, Mapping)}
        names = _names(column)
        children = [
            logical(pc.struct_field(column, [i]), by_name.get(n)) for i, n in enumerate(names)
        ]
        mask = pc.invert(column.is_valid()) if column.null_count else None
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    return column


def keys_of(keys: pa.Array | None, n: int) -> pa.Array:
    """The records' keys (see the module docstring); null where there are none."""
    if keys is None:
        return pa.nulls(n)
    texts = text(keys)
    try:
        column = jsontext.parse(texts)
    except (ValueError, jsontext.MixedTypes):
        return texts
    names = _names(column)
    if "payload" in names and set(names) <= {"schema", "payload"}:
        return pc.struct_field(column, [names.index("payload")])
    return column


def headers_of(headers: pa.Array | None, n: int) -> tuple[tuple[str, pa.Array], ...]:
    """The records' headers by name, each a binary column (see the module docstring)."""
    if headers is None or not len(headers):
        return ()
    flat = pc.list_flatten(headers)
    if not len(flat):
        return ()
    parents = pc.list_parent_indices(headers).to_numpy()
    names = pc.struct_field(flat, [0])
    values = pc.fill_null(pc.struct_field(flat, [1]), pa.scalar(b"", pa.binary()))
    out = []
    for name in pc.unique(names).to_pylist():
        if name is None:
            continue
        hit = pc.equal(names, name).to_numpy(zero_copy_only=False)
        where = np.full(n, -1, dtype=np.int64)
        where[parents[hit]] = np.nonzero(hit)[0]  # a repeated name: the last one wins
        index = pa.array(where, mask=where < 0)
        out.append((str(name), values.take(index)))
    return tuple(out)

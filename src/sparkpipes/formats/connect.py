"""Kafka records decoded as a Kafka Connect sink task sees them — the value by the
connector's converter, the key, headers, topic, partition, offset and timestamp with it
— passed through the connector's Single Message Transforms, then mapped to the table's
columns by field name (``FormatSpec.connect``; ``frontends.connect`` builds it).

What is promised:

- the chain runs in the decoding task, column-wise on Arrow (``sources.connect.smt``), on
  each fetched chunk, before any column is taken;
- a record the converter cannot read or a transform cannot process is a
  :class:`~sparkpipes.formats.base.RecordError` naming why (with the transform's alias and
  class): it fails the batch or, with ``errors.tolerance=all``, is skipped into the
  errors store, as any record that does not decode;
- a record a transform drops (``Filter``, Debezium's dropped deletes and tombstones) is
  neither a row nor an error: Connect never hands it to the sink;
- a record whose value is null once transformed (a tombstone) is an error: this sink
  inserts rows and does not delete them — except for Confluent's JDBC sink
  (``ConnectRecords.rows``), whose rows, keys and deletes ``formats.connect_rows`` makes;
- the value's fields map to the columns by name (as the SingleStore sink loads them), a
  field the table lacks is left out, a column no field reaches is NULL (or its
  DEFAULT), each column cast to its type, a value that does not convert rejecting its
  record (``formats.columnar``).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config import FieldMapping
from sparkpipes.config.transforms import ConnectRecords
from sparkpipes.errors import ConfigError
from sparkpipes.formats.avro import AvroMessageDecoder
from sparkpipes.formats.base import Decoded, Decoder, RecordError
from sparkpipes.formats.columnar import ColumnarDecoder
from sparkpipes.formats.connect_rows import PRIMITIVE_KEYS, placeholders, primitive_keys, shape
from sparkpipes.sources.base import Fetched
from sparkpipes.sources.connect import smt
from sparkpipes.sources.connect.smt import jsontext, sink

TOMBSTONE = (
    "the record has no value (a tombstone): this sink inserts rows and does not delete them "
    "(drop tombstones with a transform: Debezium's ExtractNewRecordState drops them by default)"
)


class ConnectDecoder(Decoder):
    """See the module docstring. Built where the pipeline is made (a chain whose classes
    or options are wrong is a ConfigError naming each key) and pickled to the tasks."""

    def __init__(
        self,
        schema: pa.Schema,
        mapping: Sequence[FieldMapping],
        records: ConnectRecords,
        options: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(schema, mapping)
        self.records = records
        self.chain, problems = smt.chain_of(records.chain, "sink")
        if problems:
            raise ConfigError("; ".join(m for _, m in dict(problems).items()))
        self.options = dict(options or {})
        self.avro = (
            AvroMessageDecoder(pa.schema([]), (), options=self.options)
            if records.converter == "avro"
            else None
        )
        #: the transformed values' fields to the table's columns
        self.columns = ColumnarDecoder(schema, mapping)

    def decode(self, values: pa.Array) -> Decoded:
        positions = pa.array(np.arange(len(values), dtype=np.int64))
        return self.decode_fetched(Fetched(values, positions), "0")

    def decode_fetched(self, fetched: Fetched, partition: str) -> Decoded:
        n = len(fetched.values)
        if n == 0:
            return Decoded(self.schema.empty_table(), pa.array([], pa.int32()), ())
        done, errors = self.transformed(fetched, partition)
        if self.records.rows is not None:
            return self._jdbc_rows(done, errors)
        value = done.value
        tombstones = value.is_null()
        if pc.any(tombstones).as_py():
            errors += [RecordError(i, TOMBSTONE) for i in done.index.filter(tombstones).to_pylist()]
            value, done = value.filter(pc.invert(tombstones)), done.filter(pc.invert(tombstones))
        if not pa.types.is_struct(value.type) and len(self.schema) != 1 and len(value):
            why = (
                f"the record's value is a {value.type}, not a struct: it loads into a table "
                f"of one column, and this table has {len(self.schema)}"
            )
            errors += [RecordError(i, why) for i in done.index.to_pylist()]
            return Decoded(self.schema.empty_table(), pa.array([], pa.int32()), tuple(errors))
        decoded = self.columns.decode_table(self._table(value))
        errors += [RecordError(done.index[e.index].as_py(), e.reason) for e in decoded.errors]
        kept = done.index.take(decoded.kept).cast(pa.int32())
        return Decoded(decoded.table, kept, tuple(sorted(errors, key=lambda e: e.index)))

    def _jdbc_rows(self, done: smt.Records, errors: list[RecordError]) -> Decoded:
        """The JDBC sink's rows of the transformed records (``formats.connect_rows``)."""
        rows = self.records.rows
        assert rows is not None
        value = done.value
        if pa.types.is_struct(value.type) or not len(value) or pc.all(value.is_null()).as_py():
            table = self._table(value) if pa.types.is_struct(value.type) else _rows(len(value))
        else:
            table = pa.table({rows.string_column: sink.text(value)})
        fields = [p[0] for c, p in self.paths.items() if p and not c.startswith("@")]
        table, refused = shape(done, rows, fields, table)
        decoded = self.columns.decode_table(table)
        errors += refused
        errors += [RecordError(done.index[e.index].as_py(), e.reason) for e in decoded.errors]
        refused_at = {e.index for e in refused}
        kept = done.index.take(decoded.kept).cast(pa.int32())
        out = placeholders(decoded.table, rows)
        if refused_at:
            mask = pa.array([i not in refused_at for i in kept.to_pylist()])
            out, kept = out.filter(mask), kept.filter(mask)
        unique = {e.index: e for e in errors}
        return Decoded(out, kept, tuple(sorted(unique.values(), key=lambda e: e.index)))

    def transformed(
        self, fetched: Fetched, partition: str
    ) -> tuple[smt.Records, list[RecordError]]:
        """The records of ``fetched`` decoded by the converter and through the chain (the
        value typed again where a merge left it as JSON text), and the ones refused. With
        ``rows`` (the JDBC sink's) the keys are read by its key converter."""
        n = len(fetched.values)
        value, bad = self._values(fetched.values)
        rows = self.records.rows
        key = sink.keys_of(fetched.keys, n)
        if rows is not None and fetched.keys is not None:
            key, bad_keys = self._values(fetched.keys, rows.key_converter, rows.key_schemas)
            bad.update({i: f"the record's key: {why}" for i, why in bad_keys.items()})
        records = smt.Records(
            key=key,
            value=value,
            topic=pa.array([self.records.topic] * n, pa.string()),
            index=pa.array(np.arange(n, dtype=np.int32)),
            partition=pa.array([_partition(partition)] * n, pa.int32()),
            offset=fetched.positions.cast(pa.int64()),
            timestamp=fetched.timestamps,
            headers=sink.headers_of(fetched.headers, n),
        )
        errors = [RecordError(i, why) for i, why in bad.items()]
        if bad:
            records = records.filter(pa.array([i not in bad for i in range(n)]))
        out = self.chain.apply(records)
        errors += [RecordError(i, r.reason) for r in out.refused for i in r.index.to_pylist()]
        done = out.records
        if isinstance(done.value.type, jsontext.JsonText):
            done = done.replace(value=jsontext.parse(done.value))
        return done, errors

    def _values(
        self, values: pa.Array, kind: str | None = None, schemas: bool | None = None
    ) -> tuple[pa.Array, dict[int, str]]:
        """The values (or keys) by the connector's converter (or ``kind``), and the ones
        it cannot read."""
        kind = kind or self.records.converter
        if kind in PRIMITIVE_KEYS or kind == "bytes":
            return primitive_keys(values, kind)
        if kind == "string":
            return sink.text(values), {}
        if kind == "json":
            return sink.json_values(
                values, schemas=self.records.schemas if schemas is None else schemas
            )
        return self._avro(values)

    def _avro(self, values: pa.Array) -> tuple[pa.Array, dict[int, str]]:
        """Confluent's AvroConverter: each message by its writer schema (record by
        record, as fastavro reads them), the records then one Arrow column."""
        import fastavro

        if self.avro is None:  # a key read by Confluent's AvroConverter, the value not
            self.avro = AvroMessageDecoder(pa.schema([]), (), options=self.options)
        out: list[Any] = []
        bad: dict[int, str] = {}
        for i, raw in enumerate(values.to_pylist()):
            if raw is None:
                out.append(None)
                continue
            try:  # the writer schema as the Avro decoder finds it (registry, cached)
                writer, start = self.avro._writer(raw)
                out.append(fastavro.schemaless_reader(io.BytesIO(raw[start:]), writer, None))
            except ValueError as e:
                bad[i] = str(e)
                out.append(None)
            except Exception as e:  # fastavro raises many kinds on bad bytes
                bad[i] = f"Avro bytes do not decode: {type(e).__name__}: {e}"
                out.append(None)
        try:
            return pa.array(out), bad
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            return pa.nulls(len(out)), {i: str(e) for i in range(len(out)) if out[i] is not None}

    def _table(self, value: pa.Array) -> pa.Table:
        """The values' fields as columns; a value that is not a struct (the string
        converter's text) is the one column of a table of one column."""
        if pa.types.is_struct(value.type):
            names = [f.name for f in value.type]
            cols = [pc.struct_field(value, [i]) for i in range(len(names))]
            return pa.Table.from_arrays(cols, names=names) if names else _rows(len(value))
        if not pa.types.is_string(value.type) and not pa.types.is_binary(value.type):
            value = jsontext.dump(value)
        return pa.table({self.schema[0].name: value})

    def _fast(self, values: pa.Array) -> pa.Table:  # pragma: no cover - decode is whole
        raise NotImplementedError

    def _parse_one(self, raw: bytes) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError


def _rows(n: int) -> pa.Table:
    """``n`` rows without columns."""
    return pa.table({"__rows": pa.nulls(n)}).drop_columns(["__rows"])


def _partition(partition: str) -> int | None:
    try:
        return int(partition)
    except ValueError:
        return None

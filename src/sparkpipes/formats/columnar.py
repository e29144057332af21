"""FORMAT PARQUET and FORMAT AVRO: objects whose records arrive already in columns.

Columns are taken by path (``col <- a::b`` reads field ``b`` of struct column ``a``;
a column the file does not have is NULL, as a missing JSON key is) and cast to the
table's types. A whole column is cast at once; only when that fails are its values
coerced one by one, so that the rows that cannot be held are rejected with a reason and
the rest load.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Decoded, Decoder, RecordError, all_kept
from sparkpipes.formats.coerce import coerce_column
from sparkpipes.sources.base import Framing
from sparkpipes.sources.framing import AvroFraming, ParquetFraming

_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


class ColumnarDecoder(Decoder):
    """Maps the columns of framed tables; has no use for raw payloads."""

    format_name = "columnar"
    columnar = True

    def decode(self, values: pa.Array) -> Decoded:
        if len(values) == 0:
            return Decoded(self.schema.empty_table(), all_kept(0), ())
        raise ConfigError(
            f"FORMAT {self.format_name.upper()} reads whole objects (LOAD DATA FS, S3, "
            "AZURE or HDFS), not records of a stream"
        )

    def _fast(self, values: pa.Array) -> pa.Table:  # pragma: no cover - decode overrides
        raise NotImplementedError

    def _parse_one(self, raw: bytes) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def decode_table(self, table: pa.Table) -> Decoded:
        n = table.num_rows
        bad: dict[int, str] = {}
        columns = []
        for f in self.schema:
            col = _pick(table, self.paths[f.name])
            if col is None:
                columns.append(pa.nulls(n, f.type))
                continue
            try:
                columns.append(col.cast(f.type, safe=True))
            except _CAST_ERRORS:
                columns.append(_coerce(col, f, bad))
        out = pa.Table.from_arrays(columns, schema=self.schema)
        if not bad:
            return Decoded(out, all_kept(n), ())
        keep = pa.array([i not in bad for i in range(n)])
        errors = tuple(RecordError(i, reason) for i, reason in sorted(bad.items()))
        kept = pc.indices_nonzero(keep).cast(pa.int32())
        return Decoded(out.filter(keep), kept, errors)


def _pick(table: pa.Table, path: tuple[str, ...]) -> Any:
    """The column at ``path`` (struct fields below the first name), or None."""
    if not path:
        return None
    names = {n.lower(): n for n in table.column_names}
    name = path[0] if path[0] in table.column_names else names.get(path[0].lower())
    if name is None:
        return None
    col: Any = table.column(name)
    for key in path[1:]:
        if not pa.types.is_struct(col.type):
            return None
        fields = {col.type.field(i).name: i for i in range(col.type.num_fields)}
        lower = {k.lower(): k for k in fields}
        key = key if key in fields else lower.get(key.lower())
        if key is None:
            return None
        col = pc.struct_field(col, [fields[key]])
    return col


def _coerce(col: Any, f: pa.Field, bad: dict[int, str]) -> pa.Array:
    out = []
    for i, v in enumerate(col.to_pylist()):
        try:
            out.append(coerce_column(v, f))
        except ValueError as e:
            bad.setdefault(i, str(e))
            out.append(None)
    return pa.array(out, f.type)


class ParquetDecoder(ColumnarDecoder):
    format_name = "parquet"

    def framing(self, skip_lines: int = 0) -> Framing:
        return ParquetFraming()


class AvroDecoder(ColumnarDecoder):
    format_name = "avro"

    def framing(self, skip_lines: int = 0) -> Framing:
        return AvroFraming()

"""FORMAT PARQUET and FORMAT AVRO: objects whose records arrive already in columns.

Columns are taken by path (``col <- a::b`` reads field ``b`` of struct column ``a``;
a column the file does not have is NULL, as a missing JSON key is) and cast to the
table's types. A whole column is cast at once; only when that fails are its values
coerced one by one, so that the rows that cannot be held are rejected with a reason and
the rest load.

From SingleStore SQL (``text_values``) values convert as SingleStore documents: Avro
files through ``formats.avro_values`` (each union's branch, ``%``, errors for paths the
schema lacks; values as text); Parquet columns keep Arrow's typed conversion except
where SingleStore's reading as text differs — a boolean is ``1`` / ``0``, a float that
is not finite is NULL — and a path the file does not have is an error unless the mapping
says ``DEFAULT`` (https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-parquet-files/create-a-parquet-pipeline).
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.errors import ConfigError
from sparkpipes.formats.avro_values import ERROR_COLUMN, AvroValues
from sparkpipes.formats.base import Decoded, Decoder, RecordError, all_kept
from sparkpipes.formats.coerce import coerce_column
from sparkpipes.sources.avro_framing import AvroFraming
from sparkpipes.sources.base import Framing
from sparkpipes.sources.framing import ParquetFraming

_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


class ColumnarDecoder(Decoder):
    """Maps the columns of framed tables; has no use for raw payloads."""

    format_name = "columnar"
    columnar = True
    #: with ``text_values``, this decoder converts framed columns as SingleStore does
    #: (Parquet); Avro files are extracted by ``formats.avro_values`` in the framing, and
    #: tables of other origins (Kafka Connect records) keep their values
    converts_columns: ClassVar[bool] = False

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
        extracted = ERROR_COLUMN in table.column_names  # by AvroValues: text, by name
        if extracted:
            why = table.column(ERROR_COLUMN).to_pylist()
            bad.update((i, w) for i, w in enumerate(why) if w is not None)
        columns = []
        for f in self.schema:
            col = table.column(f.name) if extracted else _pick(table, self.paths[f.name])
            singlestore = self.text_values and self.converts_columns
            if col is None:
                columns.append(self._absent(f, n, bad) if singlestore else pa.nulls(n, f.type))
                continue
            if singlestore:
                col = _as_singlestore_reads(col, f.type)
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

    def _absent(self, f: pa.Field, n: int, bad: dict[int, str]) -> pa.Array:
        """The column of a path the file does not have: NULL, the mapping's DEFAULT, or
        (a SingleStore mapping without DEFAULT) an error for every row."""
        m = self.on_missing.get(f.name)
        if m is None:
            return pa.nulls(n, f.type)
        if m.on_missing == "default":
            return pa.repeat(pa.scalar(coerce_column(m.default, f), f.type), n)
        why = (
            f"the file has no {'::'.join(m.path)} (for {f.name}; a mapping with DEFAULT "
            "gives a value for records without it)"
            if m.path
            else f"{f.name} <- %: a {self.format_name.capitalize()} record as a whole is not "
            "supported"
        )
        for i in range(n):
            bad.setdefault(i, why)
        return pa.nulls(n, f.type)


def _as_singlestore_reads(col: Any, target: pa.DataType) -> Any:
    """A Parquet column as SingleStore converts its values before they reach a column
    (as if from text): a boolean is ``1`` / ``0`` (so ``'1'`` in a text column), a float
    that is not finite is NULL, a timestamp into a text column its ``YYYY-MM-DD
    hh:mm:ss[.ffffff]`` text in UTC. Other types keep Arrow's conversion."""
    t = col.type
    if pa.types.is_boolean(t) and not pa.types.is_boolean(target):
        return pc.if_else(col, pa.scalar("1"), pa.scalar("0")).cast(pa.string())
    if pa.types.is_floating(t):
        return pc.if_else(pc.is_finite(col), col, pa.scalar(None, t))
    if pa.types.is_timestamp(t) and (
        pa.types.is_string(target) or pa.types.is_large_string(target)
    ):
        # DATETIME(6)'s text (in UTC), not Arrow's ISO text with its ``Z``
        return pc.strftime(col, format="%Y-%m-%d %H:%M:%S")
    return col


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
    converts_columns = True

    def framing(self, skip_lines: int = 0) -> Framing:
        return ParquetFraming()


class AvroDecoder(ColumnarDecoder):
    format_name = "avro"

    def framing(self, skip_lines: int = 0) -> Framing:
        if self.text_values:  # SingleStore's extraction needs each union's branch
            return AvroFraming(AvroValues(self.schema, self.paths, self.on_missing))
        return AvroFraming()

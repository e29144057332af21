"""JSON messages as Pinot's ``JSONMessageDecoder`` and ingestion store them: each column's
value converted by Pinot's rules (:mod:`~sparkpipes.formats.pinot_values`: its
``DataTypeTransformer``, ``PinotDataType`` and ``SpecialValueTransformer``), not by the
lenient coercion of ``FORMAT JSON``.

A message is read as Pinot's ``JacksonPayloadParser`` reads it
(:func:`~sparkpipes.formats.pinot_jackson.read_message`): its first JSON value, which must
be an object; what follows the closing brace is never read (``{"a":1} x`` is a record).

Options (set by the Pinot front end): ``pinot.json.columns``, the JSON columns
(comma-separated; text in them is stored as Pinot's ``toJson`` writes it), and
``pinot.continue.on.error`` (``true``: a value that does not convert is null, then the
column's default null value, and the row is kept, as Pinot's ``DataTypeTransformer`` does
under ``continueOnError``; otherwise the record is a bad record). Variables (``@name``,
the fields transforms read) are taken as ``FORMAT JSON`` takes them. Under a
``complexTypeConfig`` each leaf a record is flattened into and each element of an array
to unnest is converted as its column's value (:mod:`~sparkpipes.formats.pinot_leaves`),
as Pinot's ``DataTypeTransformer`` converts the rows its ``ComplexTypeTransformer`` makes.

The fast path (``pyarrow.json``) is kept for chunks whose columns are whole numbers,
reals, booleans, text (or lists of them but reals), TIMESTAMP or BYTES, where Arrow's
strict reading, when it succeeds, is Pinot's conversion (a real into a whole-number
column, text into a number column or a scalar into a list fails Arrow's reading and goes
record by record); a ``-0.0`` is then made ``0.0``. A TIMESTAMP is read as a whole number,
its epoch millis (one that fits an int, which Pinot refuses, or text: record by record);
BYTES as text, then converted column-wide. A chunk whose payloads name ``NaN`` or
``Infinity``, which Pinot's JSON parser refuses, goes record by record, where such a
record is a bad record; so does a chunk with a blank payload (Arrow reads it as no row).
BIG_DECIMAL and JSON columns and lists of reals are decoded
record by record.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.formats.base import Mismatch, OptionsDecoder, conform
from sparkpipes.formats.json import JsonDecoder
from sparkpipes.formats.pinot_jackson import read_message
from sparkpipes.formats.pinot_leaves import (
    column_of,
    converted,
    fix,
    has_column,
    leaves,
    read_type,
)
from sparkpipes.formats.pinot_values import convert

JSON_COLUMNS = "pinot.json.columns"
CONTINUE_ON_ERROR = "pinot.continue.on.error"
#: columns a transform fills whose record value counts only when it is a scalar: Pinot's
#: ``ExpressionTransformer`` runs the transform over an array or object value and stores
#: its value unless that is an array or object too (lowering: ``own_first``)
OWN_SCALAR = "pinot.own.scalar.columns"


def _plain(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
    )


#: Java's ``Integer`` range, which ``INT.toTimestamp`` refuses, and the epoch millis a
#: timestamp of years 1 to 9999 has (past them the per-record path refuses the value)
_INT32 = 2**31
_MILLIS = (-62135596800000, 253402300799999)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON: {name} is not a JSON number (Pinot's parser refuses it)")


def _read_leaf(t: pa.DataType) -> pa.DataType:
    """How Arrow's reader reads a converted leaf: a TIMESTAMP as epoch millis and BYTES
    as text (both converted in ``_fast``)."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    return pa.string() if pa.types.is_binary(t) or pa.types.is_large_binary(t) else t


class PinotJsonDecoder(OptionsDecoder, JsonDecoder):
    def configure(self) -> None:
        self.json_columns = frozenset(c for c in self.options.get(JSON_COLUMNS, "").split(",") if c)
        self.continue_on_error = self.options.get(CONTINUE_ON_ERROR, "") == "true"
        self.own_scalar = frozenset(c for c in self.options.get(OWN_SCALAR, "").split(",") if c)
        #: the fields holding a value a column's rules convert (a record: its leaves)
        self.converted = [f for f in self.schema if has_column(f)]
        #: the top-level leaves (column, type) and the records or arrays holding leaves,
        #: told apart once: the record-by-record path walks only the second
        self.flat = [(f.name, f.type, c) for f in self.converted if (c := column_of(f))]
        self.nested = [f for f in self.converted if column_of(f) is None]
        fast_types = all(
            (_column_fast(t) and column not in self.json_columns)
            or (
                pa.types.is_list(t)
                and _plain(t.value_type)
                and not pa.types.is_floating(t.value_type)
            )
            for f in self.converted
            for column, t in leaves(f)
        )
        self.fast = self.fast and fast_types

    def _parse_type(self, f: pa.Field) -> pa.DataType | None:
        nested = pa.types.is_struct(f.type) or pa.types.is_list(f.type)
        if has_column(f) and (nested or pa.types.is_timestamp(f.type)):  # as converted
            return read_type(f, _read_leaf)
        return super()._parse_type(f)

    def _loads(self, raw: bytes) -> Any:
        return read_message(raw, _refuse_constant)  # what follows the value is not read

    def _fast(self, values: pa.Array) -> pa.Table:
        if pc.any(pc.match_substring_regex(values, "NaN|Infinity")).as_py():
            raise Mismatch  # Pinot refuses the record; maybe text: record by record tells
        if pc.any(pc.match_substring_regex(values, "^[ \t\r\n]*$")).as_py():
            raise Mismatch  # a blank payload is no row to Arrow: rows could shift
        cols = self._read(values)
        for c in self.own_scalar & set(cols):
            if pa.types.is_list(cols[c].type) and cols[c].null_count < len(cols[c]):
                raise Mismatch  # an array of its own: the transform's value (record by record)
        for f in self.converted:
            cols[f.name] = fix(cols[f.name], f, _fixed)
        return conform(pa.table(cols), self.schema)

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        picked = super()._parse_one(raw)
        for c in self.own_scalar:
            if isinstance(picked.get(c), (list, dict)):
                picked[c] = None  # not kept: the transform's value is stored
        for name, t, column in self.flat:
            picked[name] = self._convert(picked[name], t, column)
        for f in self.nested:
            picked[f.name] = converted(picked[f.name], f, self._convert)
        return picked

    def _convert(self, value: Any, t: pa.DataType, column: str) -> Any:
        try:
            return convert(value, t, is_json=column in self.json_columns)
        except (ValueError, ArithmeticError) as e:
            if not self.continue_on_error:
                raise ValueError(
                    f"column '{column}': cannot convert {value!r} to {t}: {e}"
                ) from None
            return None  # its default null value, as Pinot stores it


def _fixed(col: pa.Array, t: pa.DataType) -> pa.Array:
    """A converted leaf as Arrow's reader read it, made what Pinot stores; a value whose
    reading is not Pinot's raises Mismatch (record by record)."""
    if pa.types.is_list(t) and pc.sum(pc.is_null(pc.list_flatten(col))).as_py():
        raise Mismatch  # Pinot drops the nulls in a list: record by record
    if pa.types.is_floating(t):
        if pc.all(pc.is_finite(col)).as_py() not in (True, None):
            raise Mismatch  # NaN and infinities: record by record
        return pc.add(col, pa.scalar(0.0, col.type))  # -0.0 → 0.0
    if pa.types.is_timestamp(t):
        return _epoch_millis(col, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _converted(col, t)
    return col


def _column_fast(t: pa.DataType) -> bool:
    """A column the fast path reads (then converts column-wide) as Pinot converts it."""
    return (
        _plain(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _epoch_millis(col: pa.ChunkedArray, t: pa.TimestampType) -> pa.ChunkedArray:
    """Whole numbers into a TIMESTAMP column: epoch millis, unless one fits an int
    (``INT.toTimestamp`` refuses it) or is past the years 1 to 9999: record by record."""
    valid = col.drop_null()
    if len(valid):
        fits_int = pc.and_(pc.greater_equal(valid, -_INT32), pc.less(valid, _INT32))
        outside = pc.or_(pc.less(valid, _MILLIS[0]), pc.greater(valid, _MILLIS[1]))
        if pc.any(pc.or_(fits_int, outside)).as_py():
            raise Mismatch
    return col.cast(pa.timestamp("ms", tz=t.tz))


def _converted(col: pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    """``convert`` of each value of ``col`` (read as text); a value that does not
    convert: record by record (its error, or null under ``continueOnError``)."""
    try:
        return pa.array([convert(v, t) for v in col.to_pylist()], t)
    except (ValueError, ArithmeticError):
        raise Mismatch from None

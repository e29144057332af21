"""Values of Pinot's CSV, Avro and Protobuf record extractors stored as Pinot's
``DataTypeTransformer`` stores them (apache/pinot@210c2951e72,
``pinot-segment-local/.../recordtransformer/DataTypeTransformer.java`` and
``pinot-spi/.../utils/PinotDataType.java``): the same rules as JSON messages, one copy of
them (:func:`sparkpipes.formats.pinot_values.convert`), for values of more Java types.

Pinot's conversion depends on the Java type an extractor gives, which Python loses:
``CSVRecordExtractor`` gives only ``String`` (and ``Object[]`` of them),
``AvroRecordExtractor`` and ``ProtoBufRecordExtractor`` also ``Long`` (:class:`JavaLong`:
``LONG.toTimestamp`` takes it, ``INT.toTimestamp`` refuses an ``Integer``), ``Float``
(:class:`JavaFloat`: ``Float.toString`` is ``1.1``, not the double's ``1.100000023841858``;
``FLOAT.toTimestamp`` refuses it), ``byte[]`` (to text: lower-case hex; to BIG_DECIMAL:
``BigDecimalUtils.deserialize``), ``Timestamp`` (a ``datetime``), ``LocalDate``,
``LocalTime`` and ``UUID`` (Avro's logical types). Every other value (``str``, ``int`` as
``Integer``, ``float`` as ``Double``, ``bool``, ``Decimal``, lists and maps) is converted by
``pinot_values.convert`` itself.

:func:`convert_value` raises ValueError (or ArithmeticError) where Pinot's conversion
throws; :class:`PinotValues` applies ``continueOnError`` to a decoder's record (a value that
does not convert is null, then the column's default null value, the row kept), and
:func:`fast_column` / :func:`fast_array` give a whole column on the Arrow path only where
Arrow's reading equals Pinot's conversion (else they raise ``Mismatch``: record by record).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.formats.base import Mismatch
from sparkpipes.formats.pinot_json import CONTINUE_ON_ERROR, JSON_COLUMNS
from sparkpipes.formats.pinot_values import (
    _EPOCH,
    _MILLIS,
    JavaFloat,
    JavaLong,
    _millis,
    convert,
    convert_multi,
    java_float,
    standardize,
)

__all__ = ["JavaFloat", "JavaLong", "java_float"]  # defined with the rules that read them

#: the option a format shared with other front ends (Avro) reads as "convert as Pinot"
PINOT_VALUES = "pinot.values"
_WHOLE = r"^[+-]?[0-9]+$"
_REAL = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_TRUE = r"^[\x00-\x20]*([tT][rR][uU][eE]|1)[\x00-\x20]*$"  # BooleanUtils after trim()


def java_int(value: int, bits: int) -> int:
    """An unsigned protobuf value as Java holds it (``uint32`` in an ``int``)."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def _ms(when: dt.datetime) -> int:
    aware = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
    return (aware - _EPOCH) // dt.timedelta(milliseconds=1)  # Timestamp.getTime: floor


def _timestamp_text(when: dt.datetime) -> str:
    """``java.sql.Timestamp.toString`` in UTC: ``2023-11-14 22:13:20.0``."""
    u = when.astimezone(dt.UTC) if when.tzinfo is not None else when
    frac = f"{u.microsecond:06d}".rstrip("0") or "0"
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d} {u.hour:02d}:{u.minute:02d}:{u.second:02d}.{frac}"
    )


def _time_text(t: dt.time) -> str:
    """``LocalTime.toString``: ``08:51``, ``08:51:32``, ``08:51:32.123``."""
    text = f"{t.hour:02d}:{t.minute:02d}"
    if t.second or t.microsecond:
        text += f":{t.second:02d}"
    if t.microsecond:
        text += (
            f".{t.microsecond // 1000:03d}"
            if t.microsecond % 1000 == 0
            else (f".{t.microsecond:06d}")
        )
    return text


def _kind(t: pa.DataType) -> str:
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_integer(t):
        return "LONG"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_decimal(t):
        return "BIG_DECIMAL"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BYTES"
    return "STRING"


def _refused(source: str, t: pa.DataType) -> ValueError:
    return ValueError(f"Cannot convert value from {source} to {_kind(t)}")


def _number(n: int | float, t: pa.DataType) -> Any:
    """A whole or real number of a temporal value into a column (its ``toLong`` …)."""
    if _kind(t) == "BIG_DECIMAL":
        return convert(decimal.Decimal(n), t)
    return convert(n, t)


def _one(value: Any, t: pa.DataType) -> Any:
    """One standardized value into a single-value column of type ``t``."""
    kind = _kind(t)
    if isinstance(value, JavaLong) and kind == "TIMESTAMP":
        return _millis(int(value))  # LONG.toTimestamp: new Timestamp(long)
    if isinstance(value, JavaFloat):
        if kind == "STRING":
            return java_float(value)
        if kind == "BIG_DECIMAL":
            return convert(java_float(value), t)  # new BigDecimal(Float.toString)
        if kind == "TIMESTAMP":
            raise _refused("FLOAT", t)
        return convert(float(value), t)
    if isinstance(value, bytes | bytearray):
        if kind == "BYTES":
            return bytes(value)
        if kind == "STRING":
            return bytes(value).hex()  # BytesUtils.toHexString
        if kind == "BIG_DECIMAL":  # BigDecimalUtils.deserialize
            if len(value) < 3:
                raise ValueError("Zero length BigInteger")
            scale = int.from_bytes(value[:2], "big", signed=True)
            unscaled = int.from_bytes(value[2:], "big", signed=True)
            return convert(decimal.Decimal(unscaled).scaleb(-scale), t)
        raise _refused("BYTES", t)
    if isinstance(value, dt.datetime):  # TIMESTAMP
        if kind in ("LONG", "DOUBLE", "BIG_DECIMAL"):
            return _number(_ms(value), t)
        if kind == "TIMESTAMP":
            return _millis(_ms(value))
        if kind == "STRING":
            return _timestamp_text(value)
        raise _refused("TIMESTAMP", t)
    if isinstance(value, dt.date):  # LocalDate
        days = (value - dt.date(1970, 1, 1)).days
        if kind in ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL"):
            return _number(days, t)
        if kind == "TIMESTAMP":
            return _millis(days * 86_400_000)
        if kind == "STRING":
            return value.isoformat()
        raise _refused("DATE", t)
    if isinstance(value, dt.time):  # LocalTime
        ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
        ms += value.microsecond // 1000
        if kind in ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL"):
            return _number(ms, t)
        if kind == "STRING":
            return _time_text(value)
        raise _refused("TIME", t)
    if isinstance(value, uuid.UUID):
        if kind == "STRING":
            return str(value)
        if kind == "BYTES":
            return value.bytes  # UuidUtils.toBytes
        raise _refused("UUID", t)
    return convert(value, t)


def _plain(value: Any) -> Any:
    """A value as a JSON column takes it (``toJson``): Java types as JSON writes them."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, JavaFloat):
        return float(java_float(value).replace("Infinity", "inf"))  # written as the float
    if isinstance(value, JavaLong):
        return int(value)
    if isinstance(value, dt.datetime):
        return _ms(value)  # Jackson writes a Timestamp as epoch millis
    if isinstance(value, dt.date | dt.time | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray):
        import base64

        return base64.b64encode(value).decode()  # Jackson writes byte[] as base64
    return value


def convert_value(value: Any, t: pa.DataType, *, is_json: bool = False) -> Any:
    """``value`` (as a Pinot extractor gives it, Java types marked: see the module) stored
    into a column of Arrow type ``t`` as ``DataTypeTransformerUtils.transformValue`` stores
    it; ``is_json``: a JSON column. None is null; raises where Pinot throws."""
    if value is None:
        return None
    if is_json:
        return convert(_plain(value), t, is_json=True)
    single = not (pa.types.is_list(t) or pa.types.is_large_list(t))
    value = standardize(value, single)
    if value is None:
        return None
    if single:
        return _one(value, t)
    return convert_multi(value, t, _one)


def pinot_options(json_columns: list[str], continue_on_error: bool) -> dict[str, str]:
    """The format options that make a Pinot decoder convert as ``DataTypeTransformer``."""
    opts = {PINOT_VALUES: "true", JSON_COLUMNS: ",".join(json_columns)}
    if continue_on_error:
        opts[CONTINUE_ON_ERROR] = "true"
    return opts


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or (pa.types.is_list(t) and _nested(t.value_type))


class PinotValues:
    """A decoder's columns converted as Pinot's ``DataTypeTransformer`` converts them,
    from the decoder's options (see :func:`pinot_options`). Columns ``@name`` (what
    transforms read, before Pinot converts anything) and records a ``complexTypeConfig``
    flattens are left as the decoder reads them."""

    def __init__(self, schema: pa.Schema, options: Mapping[str, str]) -> None:
        self.json_columns = frozenset(c for c in options.get(JSON_COLUMNS, "").split(",") if c)
        self.continue_on_error = options.get(CONTINUE_ON_ERROR, "") == "true"
        self.fields = [f for f in schema if not f.name.startswith("@") and not _nested(f.type)]
        self.names = frozenset(f.name for f in self.fields)

    def row(self, rec: dict[str, Any]) -> dict[str, Any]:
        """``rec``'s converted columns in place (and returned); a value that does not
        convert: null under ``continueOnError``, else ValueError naming the column."""
        for f in self.fields:
            value = rec.get(f.name)
            try:
                rec[f.name] = convert_value(value, f.type, is_json=f.name in self.json_columns)
            except (ValueError, ArithmeticError) as e:
                if not self.continue_on_error:
                    raise ValueError(
                        f"column '{f.name}': cannot convert {_short(value)} to {f.type}: {e}"
                    ) from None
                rec[f.name] = None  # its default null value, as Pinot stores it
        return rec

    def fast_column(self, col: pa.Array, f: pa.Field) -> pa.Array:
        """:func:`fast_column` of a column this converts; others cast as Arrow casts."""
        if f.name not in self.names:
            return col.cast(f.type)
        return fast_column(col, f.type, is_json=f.name in self.json_columns)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _all(mask: pa.Array) -> bool:
    return pc.all(mask).as_py() in (True, None)


def fast_column(col: pa.Array, t: pa.DataType, *, is_json: bool = False) -> pa.Array:
    """Text values (a CSV column: ``String``, lists of them) into type ``t`` as Pinot
    converts them, column-wide; raises Mismatch where only record by record can tell
    (text Arrow's cast reads otherwise than Java, a value that does not convert)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        flat = fast_column(pc.list_flatten(col), t.value_type)
        if flat.null_count:
            raise Mismatch  # Pinot drops the nulls of a list
        lengths = pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        return pa.ListArray.from_arrays(offsets, flat, mask=col.is_null()).cast(t)
    kind = _kind(t)
    if is_json or kind in ("BIG_DECIMAL", "BYTES"):
        try:
            return pa.array([convert_value(v, t, is_json=is_json) for v in col.to_pylist()], t)
        except (ValueError, ArithmeticError):
            raise Mismatch from None
    if kind == "STRING":
        return col.cast(t)
    if kind == "BOOLEAN":
        return pc.match_substring_regex(col, _TRUE)
    if kind == "TIMESTAMP":
        return _timestamps(col, t)
    pattern = _REAL if kind in ("FLOAT", "DOUBLE") else _WHOLE
    if not _all(pc.match_substring_regex(col, pattern)):
        raise Mismatch  # blanks, Java-only forms (1d, 0x1p3, NaN), or not a number
    out = col.cast(t)
    if kind in ("FLOAT", "DOUBLE"):
        out = pc.add(out, pa.scalar(0.0, t))  # -0.0 → 0.0 (SpecialValueTransformer)
    return out


#: ``TimestampUtils.toTimestamp``'s forms whose reading is Arrow's ISO 8601 one, in UTC:
#: a valid date (years from 1583: no Julian days), a valid time (no leap second, no 24:00),
#: an offset Java's ``XXX`` takes; ``Timestamp.valueOf`` reads the same of its form
_ISO = (
    r"^(1(58[3-9]|59[0-9]|[6-9][0-9][0-9])|[2-9][0-9]{3})-(0[1-9]|1[0-2])-"
    r"(0[1-9]|[12][0-9]|3[01])([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,9})?)?"
    r"(Z|[+-](0[0-9]|1[0-7]):[0-5][0-9])?)?$"
)
_ZONED = r"(Z|[+-][0-9][0-9]:[0-9][0-9])$"


def _timestamps(col: pa.Array, t: pa.DataType) -> pa.Array:
    """Text into a TIMESTAMP column as ``TimestampUtils.toTimestamp`` reads it
    (``pinot-spi/.../utils/TimestampUtils.java`` 84-105): epoch millis, or the ISO forms
    of :data:`_ISO` (no offset: the JVM's zone, UTC), their fraction truncated to millis
    (``Timestamp.getTime``, ``Instant.toEpochMilli``: floor). Mismatch for the rest."""
    digits = pc.match_substring_regex(col, _WHOLE)
    iso = pc.match_substring_regex(col, _ISO)
    if not _all(pc.or_(digits, iso)):
        raise Mismatch  # blanks, lenient or Julian dates, other forms: record by record
    try:
        ms = pc.if_else(digits, col, None).cast(pa.int64())
        valid = ms.drop_null()
        in_range = pc.and_(pc.greater_equal(valid, _MILLIS[0]), pc.less_equal(valid, _MILLIS[1]))
        if len(valid) and not _all(in_range):
            raise Mismatch
        if pc.any(iso).as_py():
            text = pc.if_else(iso, col, None)
            text = pc.replace_substring_regex(text, r"(\.[0-9]{1,3})[0-9]*", r"\1")
            text = pc.replace_substring_regex(text, r"^([0-9-]{10})$", r"\1T00:00")
            zoned = pc.match_substring_regex(text, _ZONED)
            text = pc.if_else(zoned, text, pc.binary_join_element_wise(text, "Z", ""))
            parsed = text.cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
            ms = pc.coalesce(ms, parsed)
    except pa.ArrowInvalid:
        raise Mismatch from None  # a day past its month's end, a long past a long
    return ms.cast(pa.timestamp("ms", tz=t.tz)).cast(t)


def _fits(v: Any, kind: str) -> bool:
    """Whether Arrow's building of ``v`` into a ``kind`` column is Pinot's conversion."""
    if kind in ("INT", "LONG"):
        return isinstance(v, int) and not isinstance(v, bool)
    if kind in ("FLOAT", "DOUBLE"):
        return isinstance(v, int | float) and not isinstance(v, bool)
    if kind == "BIG_DECIMAL":
        return isinstance(v, decimal.Decimal | int) and not isinstance(v, bool)
    if kind == "BOOLEAN":
        return isinstance(v, bool)
    if kind == "TIMESTAMP":
        if isinstance(v, dt.datetime):
            return v.microsecond % 1000 == 0 and v.tzinfo is not None
        return isinstance(v, JavaLong) and _MILLIS[0] <= v <= _MILLIS[1]
    if kind == "BYTES":
        return isinstance(v, bytes)
    return isinstance(v, str)


#: the column kinds whose values fit by their Python type alone (see :func:`_fits`)
_BY_TYPE = frozenset(
    ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "BOOLEAN", "BYTES", "STRING")
)


def _all_fit(values: Any, kind: str) -> bool:
    """Whether :func:`_fits` holds for each of ``values`` (None excluded): by their
    distinct Python types where the type decides, else value by value."""
    if kind in _BY_TYPE:
        sample: dict[type, Any] = {type(v): v for v in values}
        sample.pop(type(None), None)
        return all(_fits(v, kind) for v in sample.values())
    return all(v is None or _fits(v, kind) for v in values)


def fast_array(values: list[Any], t: pa.DataType, *, is_json: bool = False) -> pa.Array:
    """Extracted values (Java types marked) built into type ``t`` by Arrow in one call,
    when that is Pinot's conversion; raises Mismatch (or Arrow's errors) where not."""
    if is_json:
        raise Mismatch
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        kind = _kind(t.value_type)
        present = [v for v in values if v is not None]
        if not all(type(v) is list and v for v in present):
            raise Mismatch  # empty lists, a single value: record by record
        flat = [x for v in present for x in v]
        if None in flat or not _all_fit(flat, kind):
            raise Mismatch  # nulls in them (Pinot drops them), values of other types
    else:
        kind = _kind(t)
        if not _all_fit(values, kind):
            raise Mismatch
    out = pa.array(values, t)
    if kind in ("FLOAT", "DOUBLE"):
        flat = pc.list_flatten(out) if pa.types.is_list(t) else out
        if pc.any(pc.is_nan(flat)).as_py():
            raise Mismatch  # NaN is null for Pinot (SpecialValueTransformer)
        if not pa.types.is_list(t):
            out = pc.add(out, pa.scalar(0.0, t))  # -0.0 → 0.0
        elif pc.any(pc.equal(flat, 0.0)).as_py():
            raise Mismatch
    return out


def pick(decoder: Any, values: PinotValues, rec: Any) -> dict[str, Any]:
    """``decoder.pick`` of ``rec`` with its converted columns as the extractor gives
    them (a map or list as it is, for ``DataTypeTransformer`` to standardize), the
    others as the decoder gives them (a nested value into text: JSON text), converted."""
    out = decoder.pick(rec, nested_as_json=True)
    raw = decoder.pick(rec)
    out.update((name, raw[name]) for name in values.names)
    return values.row(out)


def arrow(values: PinotValues | None, column: list[Any], f: pa.Field) -> pa.Array:
    """A column of extracted values built by Arrow: converted columns by
    :func:`fast_array`, the others as before (a nested value: Mismatch)."""
    if values is not None and f.name in values.names:
        return fast_array(column, f.type, is_json=f.name in values.json_columns)
    if any(isinstance(v, dict | list) for v in column) and pa.types.is_string(f.type):
        raise Mismatch  # nested values as JSON text: record by record
    return pa.array(column, f.type)


def avro_java(schema: Any, value: Any, fields: frozenset[str] | None = None) -> Any:
    """A record fastavro read with the parsed ``schema`` as ``AvroRecordExtractor`` gives
    it: ``long`` a :class:`JavaLong`, ``float`` a :class:`JavaFloat`, local timestamps
    their raw ``Long`` (Pinot applies no conversion to them), ``timestamp-nanos`` a
    ``Timestamp``; the other logical types as fastavro applies them (``Timestamp``,
    ``LocalDate``, ``LocalTime``, ``UUID``, ``BigDecimal``, as Pinot's). ``fields``: only
    these top-level fields (those columns read) are walked, the others left as read."""
    named = schema.get("__named_schemas", {}) if isinstance(schema, dict) else {}
    if fields is None or not isinstance(value, dict) or not isinstance(schema, dict):
        return _avro(schema, value, named)
    if schema.get("type") not in ("record", "error"):
        return _avro(schema, value, named)
    for f in schema["fields"]:  # fastavro's fresh record: converted in place
        name, s = f["name"], f["type"]
        if name in fields and not (type(s) is str and s in _PLAIN):
            value[name] = _avro(s, value.get(name), named)
    return value


_LOCAL = {"local-timestamp-millis": 1000, "local-timestamp-micros": 1}
#: Avro types read as the Java type their Python one stands for (nothing to mark)
_PLAIN = frozenset(("null", "boolean", "int", "double", "string", "bytes"))


def _avro(s: Any, v: Any, named: Mapping[str, Any]) -> Any:
    if v is None:
        return None
    if isinstance(s, str):
        if s in named:
            return _avro(named[s], v, named)
        if s == "long" and isinstance(v, int) and not isinstance(v, bool):
            return JavaLong(v)
        if s == "float" and isinstance(v, float):
            return JavaFloat(v)
        return v
    if isinstance(s, list):
        branch = _branch(s, v, named)
        return v if branch is None else _avro(branch, v, named)
    t, logical = s.get("type"), s.get("logicalType")
    if t in ("record", "error"):
        if not isinstance(v, dict):
            return v
        return {f["name"]: _avro(f["type"], v.get(f["name"]), named) for f in s["fields"]}
    if t == "array":
        items = s["items"]
        if (type(items) is str and items in _PLAIN) or not isinstance(v, list):
            return v
        return [_avro(items, x, named) for x in v]
    if t == "map":
        return {k: _avro(s["values"], x, named) for k, x in v.items()} if isinstance(v, dict) else v
    if logical in _LOCAL and isinstance(v, dt.datetime):
        us = (v.replace(tzinfo=dt.UTC) - _EPOCH) // dt.timedelta(microseconds=1)
        return JavaLong(us // _LOCAL[logical])
    if logical == "timestamp-nanos" and isinstance(v, int):
        return _EPOCH + dt.timedelta(microseconds=v // 1000)
    if isinstance(t, str | list | dict) and t not in ("enum", "fixed"):
        return _avro(t, v, named)
    return v


_PYTHON_BRANCHES = {
    bool: ("boolean",),
    int: ("int", "long"),
    float: ("float", "double"),
    str: ("string", "enum"),
    bytes: ("bytes", "fixed"),
    dict: ("record", "error", "map"),
    list: ("array",),
}


def _branch(branches: list[Any], v: Any, named: Mapping[str, Any]) -> Any:
    """The union branch fastavro read ``v`` from, when its Python type tells (the first
    of ``int``/``long`` or ``float``/``double`` it fits, a ``float`` only if a float32
    holds it exactly; a record or map only when the union has one); None when it does
    not."""
    kinds = next((k for py, k in _PYTHON_BRANCHES.items() if type(v) is py), ())
    found = []
    for b in branches:
        r = named.get(b, b) if isinstance(b, str) else b
        base = r if isinstance(r, str) else r.get("type")
        if isinstance(r, dict) and r.get("logicalType") and not isinstance(v, int | str | bytes):
            found.append(b)  # a logical type's value (a datetime, a Decimal …)
        elif base in kinds:
            found.append(b)
    if isinstance(v, int) and not isinstance(v, bool):
        found = [b for b in found if b != "int" or -(2**31) <= v < 2**31]
    if type(v) is float and math.isfinite(v) and float(np.float32(v)) != v:
        found = [b for b in found if b != "float"]  # no float32 holds it: read from a double
    if not found or (isinstance(v, dict) and len(found) > 1):
        return None
    return found[0]

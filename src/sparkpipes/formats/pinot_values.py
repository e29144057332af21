"""A JSON record's value stored into a column as Pinot stores it (apache/pinot@210c2951e72):
``JSONRecordExtractor`` gives Java values (``Integer``, ``Long``, ``BigDecimal`` past a
long, ``Double``, ``Boolean``, ``String``, ``Object[]``, ``Map``);
``DataTypeTransformerUtils.transformValue`` standardizes them (an empty list or object is
null, a list or object of one value is that value, the values of an object, nulls dropped;
several values into a single-value column fail) and converts them with ``PinotDataType``
(``INT.convert`` → ``sourceType.toInt`` …); ``SpecialValueTransformerUtils`` makes a NaN
null and ``-0.0`` ``0.0``.

So, unlike a plain copy: ``2.7`` into an INT or LONG column is ``2`` (``Number.intValue``,
Java's narrowing: truncated, saturated; a long wraps into an INT); a boolean into a number
column is 1 or 0; any non-zero number into a BOOLEAN is true and a text is true only for
``true`` (any case) or ``1`` (``BooleanUtils``); text into a BYTES column is hex
(``BytesUtils.toBytes``); text into a TIMESTAMP is ``TimestampUtils.toTimestamp``'s
(``yyyy-mm-dd hh:mm:ss[.f]``, epoch millis, ISO 8601), a number epoch millis, but an
``Integer`` (a number that fits an int) is refused (``INT.toTimestamp``); a double into
text is Java's ``Double.toString`` (``1.0E10``); text into a JSON column is parsed and
written compact, or, when it is not JSON, written as a JSON string (``toJson``).

:func:`convert` raises ValueError where Pinot's conversion throws.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
from typing import Any

import pyarrow as pa

_INT32 = 2**31
_INT64 = 2**63
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Java's ``Float.parseFloat`` / ``Double.parseDouble`` (decimal forms; blanks trimmed)
_JAVA_REAL = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)", re.ASCII)
_JAVA_WHOLE = re.compile(r"[+-]?\d+", re.ASCII)
_DECIMAL_DIGITS = 160
_FLOAT_MAX = 3.4028234663852886e38  # Float.MAX_VALUE
_FLOAT_INF = 3.4028235677973366e38  # MAX_VALUE + half an ulp: (float) gives infinity
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})*", re.ASCII)


class _Number(str):
    """A number of a JSON text kept as written (``toJson`` of text: Jackson's
    ``BigDecimal`` reading keeps ``1.50``)."""


def standardize(value: Any, single: bool) -> Any:
    """``DataTypeTransformerUtils.standardize``: None for an empty list or object, the
    value of one, a list of the values (nulls dropped) of several."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return value
    if len(value) == 1:
        return standardize(value[0], single)
    values = [v for v in (standardize(v, True) for v in value) if v is not None]
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    if single:
        raise ValueError(f"cannot read a single value from {len(values)} values")
    return values


def _java(value: Any) -> Any:
    """The Java value ``JSONRecordExtractor`` gives a JSON scalar (a whole number past
    a long is a ``BigDecimal``)."""
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return decimal.Decimal(value)
    return value


def _wrap(n: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return (n + half) % (1 << bits) - half


def _narrow(value: float, bits: int) -> int:
    """Java's ``(int)`` / ``(long)`` of a double: NaN 0, truncated, saturated."""
    if math.isnan(value):
        return 0
    half = 1 << (bits - 1)
    if math.isinf(value):
        return half - 1 if value > 0 else -half
    return max(-half, min(half - 1, int(value)))


def _whole(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return _wrap(value, bits)  # Number.intValue of a Long: its low bits
    if isinstance(value, float):
        return _narrow(value, bits)
    if isinstance(value, decimal.Decimal):
        return _wrap(int(value), bits)  # BigDecimal.intValue / longValue
    if isinstance(value, str):
        text = value.strip()
        if not _JAVA_WHOLE.fullmatch(text):
            raise ValueError(f"For input string: {value!r}")
        n = int(text)
        if not -(1 << (bits - 1)) <= n < 1 << (bits - 1):
            raise ValueError(f"For input string: {value!r} (out of range)")
        return n
    raise ValueError(f"cannot convert {type(value).__name__} to a number")


def _real(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not _JAVA_REAL.fullmatch(text):
            raise ValueError(f"For input string: {value!r}")
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    raise ValueError(f"cannot convert {type(value).__name__} to a number")


def _big_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool):
        return decimal.Decimal(1 if value else 0)
    if isinstance(value, int | decimal.Decimal):
        return decimal.Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("Infinite or NaN")
        return decimal.Decimal(java_double(value))  # new BigDecimal(Double.toString)
    if isinstance(value, str):
        try:
            out = decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            raise ValueError(f"not a decimal: {value!r}") from None
        if not out.is_finite():
            raise ValueError(f"not a decimal: {value!r}")
        return out
    raise ValueError(f"cannot convert {type(value).__name__} to BIG_DECIMAL")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        return value != 0  # INT/LONG/DOUBLE/BIG_DECIMAL.toBoolean
    if isinstance(value, str):
        text = value.strip()
        return text.lower() == "true" or text == "1"  # BooleanUtils.toBoolean
    raise ValueError(f"cannot convert {type(value).__name__} to BOOLEAN")


def _timestamp(value: Any) -> dt.datetime:
    if isinstance(value, bool):
        raise ValueError("Cannot convert value from BOOLEAN to TIMESTAMP")
    if isinstance(value, int):
        if -_INT32 <= value < _INT32:
            raise ValueError("Cannot convert value from INT to TIMESTAMP")
        return _millis(value)
    if isinstance(value, float | decimal.Decimal):
        if isinstance(value, float):
            return _millis(_narrow(value, 64))
        return _millis(_wrap(int(value), 64))
    if isinstance(value, str):
        return _millis(timestamp_millis(value.strip()))
    raise ValueError(f"cannot convert {type(value).__name__} to TIMESTAMP")


def _millis(ms: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(milliseconds=ms)


_SQL_TS = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?")
_ISO_TS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.(\d{1,9}))?)?"
    r"(Z|[+-]\d{2}:\d{2})?"
)


def timestamp_millis(text: str) -> int:
    """``TimestampUtils.toMillisSinceEpoch``: ``Timestamp.valueOf``
    (``yyyy-[m]m-[d]d hh:mm:ss[.f…]``), else epoch millis (``Long.parseLong``), else ISO
    8601 (``yyyy-MM-dd[THH:mm[:ss][.f]][XXX]``). A time without an offset is read in the
    JVM's zone, UTC here."""
    m = _SQL_TS.fullmatch(text)
    if m is None and _JAVA_WHOLE.fullmatch(text):
        n = int(text)
        if -_INT64 <= n < _INT64:
            return n
    m = m or _ISO_TS.fullmatch(text)
    if m is None:
        raise ValueError(f"Invalid timestamp: {text!r}")
    y, mo, d, h, mi, s, frac = (m.group(i) for i in range(1, 8))
    zone = m.group(8) if m.re is _ISO_TS else None
    try:
        when = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    except ValueError:
        raise ValueError(f"Invalid timestamp: {text!r}") from None
    tz = dt.UTC
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        tz = dt.timezone(sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    ms = int(((frac or "") + "000")[:3])
    return int(when.replace(tzinfo=tz).timestamp()) * 1000 + ms


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``1.0E10``, ``1.0E-5``, ``NaN``,
    ``Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exp = decimal.Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exp + len(digits) - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # BigDecimal.toPlainString
    if isinstance(value, int | str):
        return str(value)
    raise ValueError(f"cannot convert {type(value).__name__} to STRING")


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not _HEX.fullmatch(text):  # Commons Codec's Hex.decodeHex
            raise ValueError(f"Value: {value} is not Hex encoded")
        return bytes.fromhex(text)
    raise ValueError(f"cannot convert {type(value).__name__} to BYTES")


def json_text(value: Any) -> str:
    """``PinotDataType.toJson``: text that is JSON, compact; other text a JSON string;
    any other value its JSON."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value, parse_float=_Number, parse_int=_Number)
        except ValueError:
            parsed = value
            return json.dumps(parsed, ensure_ascii=False)
        return _compact(parsed)
    return _compact(value)


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(k, ensure_ascii=False)}:{_compact(v)}" for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(_compact(v) for v in value) + "]"
    if isinstance(value, _Number):
        return str.__str__(value)
    if isinstance(value, float):
        return java_double(value) if math.isfinite(value) else json.dumps(java_double(value))
    return json.dumps(value, ensure_ascii=False)


def _one(value: Any, t: pa.DataType) -> Any:
    value = _java(value)
    if pa.types.is_integer(t):
        return _whole(value, t.bit_width)
    if pa.types.is_floating(t):
        out = _real(value)
        if pa.types.is_float32(t) and math.isfinite(out) and abs(out) > _FLOAT_MAX:
            # Java's (float) rounds to the nearest float: past MAX_VALUE by half an ulp
            # or more it is infinity, short of that MAX_VALUE
            out = math.copysign(math.inf if abs(out) >= _FLOAT_INF else _FLOAT_MAX, out)
        return None if math.isnan(out) else out + 0.0  # SpecialValueTransformer
    if pa.types.is_decimal(t):
        with decimal.localcontext(prec=_DECIMAL_DIGITS):  # exact: not the default 28
            return _big_decimal(value).normalize()  # SpecialValueTransformer strips zeros
    if pa.types.is_boolean(t):
        return _boolean(value)
    if pa.types.is_timestamp(t):
        return _timestamp(value)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _text(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _bytes(value)
    raise ValueError(f"unsupported column type {t}")


def convert(value: Any, t: pa.DataType, *, is_json: bool = False) -> Any:
    """``value`` (as ``json.loads`` gives it) stored into a column of Arrow type ``t`` as
    Pinot stores it; ``is_json``: a JSON column (text, not standardized). None is null."""
    if value is None:
        return None
    if is_json:
        if isinstance(value, list) and not value:
            return "[]"
        return json_text(value)
    single = not (pa.types.is_list(t) or pa.types.is_large_list(t))
    value = standardize(value, single)
    if value is None:
        return None
    if single:
        return _one(value, t)
    values = value if isinstance(value, list) else [value]
    out = [v for v in (_one(v, t.value_type) for v in values) if v is not None]
    return out or None

"""A JSON record's value stored into a column as Pinot stores it (apache/pinot@210c2951e72):
``JSONRecordExtractor`` gives Java values (``Integer``, ``Long``, ``BigDecimal`` past a
long, ``Double``, ``Boolean``, ``String``, ``Object[]``, ``HashMap``);
``DataTypeTransformerUtils.transformValue`` standardizes them (an empty list or object is
null, a list or object of one value is that value, the values of an object in its
``HashMap``'s order, nulls dropped; several values into a single-value column fail) and
converts them with ``PinotDataType`` (``INT.convert`` → ``sourceType.toInt`` …);
``SpecialValueTransformerUtils`` makes a NaN null and ``-0.0`` ``0.0``.

So, unlike a plain copy: ``2.7`` into an INT or LONG column is ``2`` (``Number.intValue``,
Java's narrowing: truncated, saturated; a long wraps into an INT); a boolean into a number
column is 1 or 0; any non-zero number into a BOOLEAN is true and a text is true only for
``true`` (any case) or ``1`` (``BooleanUtils``); text into a BYTES column is hex
(``BytesUtils.toBytes``), a whole number past a long ``BigDecimalUtils.serialize``; text
into a TIMESTAMP is ``TimestampUtils.toTimestamp``'s (:func:`timestamp_millis`: Java's
lenient ``Timestamp.valueOf``, epoch millis, ISO 8601), a number epoch millis, but an
``Integer`` (a number that fits an int) is refused (``INT.toTimestamp``); a double into
text is Java's ``Double.toString`` (``1.0E10``). A multi-value field's elements are all
converted by the first element's type (``getMultiValueType(values[0])``: ``["1", 2.5]``
into INT fails, as ``Integer.parseInt("2.5")``). A JSON column takes ``toJson``
(:func:`json_text`, written as Jackson writes: :mod:`~sparkpipes.formats.pinot_jackson`).

:func:`convert` raises ValueError (or ArithmeticError) where Pinot's conversion throws.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from sparkpipes.formats.pinot_jackson import (
    hash_order,
    java_double,
    java_special,
    tree_text,
    write,
)

_INT32 = 2**31
_INT64 = 2**63
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Java's ``Float.parseFloat`` / ``Double.parseDouble`` (decimal forms; blanks trimmed)
_JAVA_REAL = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)", re.ASCII)
_DECIMAL_DIGITS = 160
_FLOAT_MAX = 3.4028234663852886e38  # Float.MAX_VALUE
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})*", re.ASCII)
#: ``new BigDecimal(String)``: no underscores, no NaN or Infinity (Unicode digits allowed)
_JAVA_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_MILLIS = (-62135596800000, 253402300799999)  # years 1 to 9999 (Python's datetime)
_FLOAT_HALF = decimal.Decimal(2**128 - 2**103)  # MAX_VALUE + half an ulp: infinity


class JavaLong(int):
    """A ``java.lang.Long`` (an ``int`` alone is an ``Integer``, or a ``Long`` past one)."""


class JavaFloat(float):
    """A ``java.lang.Float`` (a ``float`` alone is a ``Double``)."""


def java_float(value: float) -> str:
    """Java's ``Float.toString``: the shortest digits of the float, ``1.1``, ``1.0E10``."""
    if (special := java_special(value)) is not None:
        return special
    f = np.float32(value)
    if 1e-3 <= abs(value) < 1e7:
        text = np.format_float_positional(f, unique=True, trim="0")
        return text if not text.endswith(".") else text + "0"
    mantissa, exp = np.format_float_scientific(f, unique=True, trim="0").split("e")
    mantissa = mantissa if not mantissa.endswith(".") else mantissa + "0"
    return f"{mantissa}E{int(exp)}"


def float32(exact: decimal.Decimal) -> float:
    """The float nearest ``exact`` (ties to even), as Java's ``Float.parseFloat`` and
    ``(float)`` of a long or ``BigDecimal.floatValue`` round: once, from the exact value
    (not through a double: ``1.00000017881393432617187499`` is ``1.0000001``)."""
    if abs(exact) >= _FLOAT_HALF:
        return math.copysign(math.inf, exact)
    with np.errstate(over="ignore", under="ignore"):
        f = np.float32(float(exact))  # the nearest, or its neighbour (rounded twice)
        if not math.isfinite(f):
            f = np.float32(math.copysign(_FLOAT_MAX, exact))
        fd = decimal.Decimal(float(f))
        if fd == exact:
            return float(f)
        g = np.nextafter(f, np.float32(math.inf if exact > fd else -math.inf))
    gd = decimal.Decimal(float(g))
    df, dg = abs(exact - fd), abs(exact - gd)
    if dg < df or (dg == df and int(g.view(np.uint32)) % 2 == 0):
        return float(g)
    return float(f)


def standardize(value: Any, single: bool) -> Any:
    """``DataTypeTransformerUtils.standardize``: None for an empty list or object, the
    value of one, a list of the values (nulls dropped) of several; an object's values in
    its ``HashMap``'s order (``JSONRecordExtractor.convertMap``)."""
    if isinstance(value, dict):
        value = [value[k] for k in hash_order(value)]
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
        text = value.strip(_TRIM)  # String.trim: chars up to U+0020 only
        if not _JAVA_INT.fullmatch(text):
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
        text = value.strip(_TRIM)  # FloatingDecimal trims as String.trim
        if not _JAVA_REAL.fullmatch(text):
            raise ValueError(f"For input string: {value!r}")
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    raise ValueError(f"cannot convert {type(value).__name__} to a number")


def _exact(value: Any, double: float) -> decimal.Decimal:
    """The exact value a ``toFloat`` rounds: a text's or a whole number's own (not the
    double's), a double's."""
    if isinstance(value, str):
        return decimal.Decimal(value.strip(_TRIM).rstrip("fFdD"))
    if isinstance(value, int | decimal.Decimal) and not isinstance(value, bool):
        return decimal.Decimal(value)
    return decimal.Decimal(double)


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
        text = value.strip(_TRIM)
        if not _JAVA_DECIMAL.fullmatch(text):  # Decimal also takes 1_000, NaN, " 5\xa0"
            raise ValueError(f"not a decimal: {value!r}")
        return decimal.Decimal(text)
    raise ValueError(f"cannot convert {type(value).__name__} to BIG_DECIMAL")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        return value != 0  # INT/LONG/DOUBLE/BIG_DECIMAL.toBoolean
    if isinstance(value, str):
        text = value.strip(_TRIM)
        return text.lower() == "true" or text == "1"  # BooleanUtils.toBoolean
    raise ValueError(f"cannot convert {type(value).__name__} to BOOLEAN")


def _timestamp(value: Any) -> dt.datetime:
    if isinstance(value, bool):
        raise ValueError("Cannot convert value from BOOLEAN to TIMESTAMP")
    if isinstance(value, int):
        if -_INT32 <= value < _INT32 and not isinstance(value, JavaLong):
            raise ValueError("Cannot convert value from INT to TIMESTAMP")
        return _millis(value)
    if isinstance(value, float | decimal.Decimal):
        if isinstance(value, float):
            return _millis(_narrow(value, 64))
        return _millis(_wrap(int(value), 64))
    if isinstance(value, str):
        return _millis(timestamp_millis(value.strip(_TRIM)))
    raise ValueError(f"cannot convert {type(value).__name__} to TIMESTAMP")


def _millis(ms: int) -> dt.datetime:
    """``new Timestamp(ms)`` (within the years Python's datetime holds)."""
    if not _MILLIS[0] <= ms <= _MILLIS[1]:
        raise ValueError(f"timestamp {ms} ms is outside the years 1 to 9999")
    return _EPOCH + dt.timedelta(milliseconds=ms)


_ISO_TS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.(\d{1,9}))?)?"
    r"(Z|[+-]\d{2}:\d{2})?",
    re.ASCII,
)
_JAVA_INT = re.compile(r"[+-]?\d+")  # Integer.parseInt / Long.parseLong: Unicode digits too
_DAY_MS = 86_400_000
_TRIM = "".join(map(chr, range(33)))  # what Java's String.trim removes
_CUTOVER_DAY = -141427  # 1582-10-15, the first Gregorian day of java.util.Date
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def timestamp_millis(text: str) -> int:
    """``TimestampUtils.toTimestamp(text).getTime()``: ``Timestamp.valueOf``
    (``yyyy-[m]m-[d]d hh:mm:ss[.f…]``, leniently: ``2024-02-30 00:00:00`` is March 1st,
    ``25:61:61`` rolls over; only a month of 1 to 12 and a day of 1 to 31 are checked),
    else epoch millis (``Long.parseLong``), else ISO 8601
    (``yyyy-MM-dd[THH:mm[:ss][.f]][XXX]``, resolved ``SMART``: a day past the month's
    end is its last day, ``24:00`` the next midnight).
    A time without an offset is read in the JVM's zone (UTC here) by ``java.util.Date``:
    before 1582-10-15 in the Julian calendar."""
    ms = _sql_timestamp(text)
    if ms is not None:
        return ms
    if _JAVA_INT.fullmatch(text) and -_INT64 <= int(text) < _INT64:
        return int(text)
    m = _ISO_TS.fullmatch(text)
    if m is None:
        raise ValueError(f"Invalid timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(m.group(i) or 0) for i in range(1, 7))
    frac, zone = m.group(7), m.group(8)
    if not (y >= 1 and 1 <= mo <= 12 and 1 <= d <= 31 and h <= 24 and mi < 60 and s < 60):
        raise ValueError(f"Invalid timestamp: {text!r}")
    if h == 24 and (mi or s or int(frac or 0)):
        raise ValueError(f"Invalid timestamp: {text!r}")
    d = min(d, _MONTH_DAYS[mo - 1] if mo != 2 or _leap(y) else 28)
    ms = int(((frac or "") + "000")[:3])
    if zone is None:  # Timestamp.valueOf(LocalDateTime): java.util.Date's calendars
        return _date_millis(y, mo, d, h, mi, s) + ms
    offset = 0
    if zone != "Z":
        offset = (int(zone[1:3]) * 60 + int(zone[4:6])) * 60_000 * (-1 if zone[0] == "-" else 1)
    return _gregorian_day(y, mo, d) * _DAY_MS + ((h * 60 + mi) * 60 + s) * 1000 + ms - offset


def _leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _java_int(text: str) -> int:
    if not _JAVA_INT.fullmatch(text):
        raise ValueError(text)
    n = int(text)
    if not -_INT32 <= n < _INT32:
        raise ValueError(text)
    return n


def _sql_timestamp(s: str) -> int | None:
    """``java.sql.Timestamp.valueOf(s).getTime()`` (JDK 17), or None where it throws."""
    s = s.strip(_TRIM)
    space = s.find(" ")
    if space < 0:
        return None
    date, time = s[:space], s[space + 1 :]
    dash1 = date.find("-")
    dash2 = date.find("-", dash1 + 1)
    colon1 = time.find(":")
    colon2 = time.find(":", colon1 + 1)
    period = time.find(".", colon2 + 1)
    n = len(time)
    try:
        if not (dash1 == 4 and 1 < dash2 - dash1 <= 3 and 1 < len(date) - dash2 <= 3):
            return None
        year, month = _java_int(date[:4]), _java_int(date[5:dash2])
        day = _java_int(date[dash2 + 1 :])
        if not (1 <= month <= 12 and 1 <= day <= 31) or not (colon1 > 0 and 0 < colon2 < n - 1):
            return None
        hour, minute = _java_int(time[:colon1]), _java_int(time[colon1 + 1 : colon2])
        nanos = 0
        if 0 < period < n - 1:
            second, frac = _java_int(time[colon2 + 1 : period]), time[period + 1 :]
            if len(frac) > 9 or not re.fullmatch(r"\d+", frac):
                return None
            nanos = int(frac) * 10 ** (9 - len(frac))
        elif period > 0:
            return None
        else:
            second = _java_int(time[colon2 + 1 :])
    except ValueError:
        return None
    return _date_millis(year, month, day, hour, minute, second) + nanos // 1_000_000


def _gregorian_day(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of proleptic Gregorian ``y-m-d`` (``d`` may pass the month)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy + d - 1 - 719468


def _julian_day(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of Julian ``y-m-d`` (year 0 is 1 BC)."""
    y -= m <= 2
    era = y // 4
    yoe = y - era * 4
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5
    return era * 1461 + yoe * 365 + doy + d - 1 - 719470


def _date_millis(y: int, m: int, d: int, h: int, mi: int, s: int) -> int:
    """``new java.util.Date(y - 1900, m - 1, d, h, mi, s).getTime()`` in UTC: lenient (a
    day, hour, minute or second past its range rolls over), Julian before the Gregorian
    cutover as ``Date.normalize`` chooses (by year, then by the time it gives; 1582 as a
    lenient ``GregorianCalendar``)."""
    tod = ((h * 60 + mi) * 60 + s) * 1000
    if y == 1582:
        days, tod = divmod(tod, _DAY_MS)
        g = _gregorian_day(y, m, d) + days
        day = g if g >= _CUTOVER_DAY else _julian_day(y, m, d) + days
        return day * _DAY_MS + tod
    cal = _gregorian_day if y > 1582 else _julian_day
    ms = cal(y, m, d) * _DAY_MS + tod
    other = _gregorian_day if ms >= _CUTOVER_DAY * _DAY_MS else _julian_day
    return ms if other is cal else other(y, m, d) * _DAY_MS + tod


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
    if isinstance(value, decimal.Decimal):  # BigDecimalUtils.serialize: scale, unscaled
        sign, digits, exp = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        size = ((-unscaled - 1 if unscaled < 0 else unscaled).bit_length()) // 8 + 1
        return (-int(exp) & 0xFFFF).to_bytes(2, "big") + unscaled.to_bytes(size, "big", signed=True)
    if isinstance(value, str):
        text = value.strip(_TRIM)
        if not _HEX.fullmatch(text):  # Commons Codec's Hex.decodeHex
            raise ValueError(f"Value: {value} is not Hex encoded")
        return bytes.fromhex(text)
    raise ValueError(f"cannot convert {type(value).__name__} to BYTES")


def json_text(value: Any) -> str:
    """``PinotDataType.toJson`` of a value into a JSON column: an object (a ``Map``:
    ``MAP.toJson``, ``MapUtils.toString``) with its keys sorted at every depth; an array
    (``Object[]``) as ``JsonUtils.objectToString`` writes it, its objects in ``HashMap``
    order; text as Jackson reads its first JSON value (``readTree`` with ``BigDecimal``
    reals: ``10.0`` → ``1E+1``; ``2024 was great`` → ``2024``), or, where Jackson cannot
    read it, the text as a JSON string; a scalar its JSON."""
    if isinstance(value, dict):
        return write(value, sort=True)
    if isinstance(value, str):
        tree = tree_text(value)
        return write(value) if tree is None else tree
    return write(value)


def _one(value: Any, t: pa.DataType) -> Any:
    value = _java(value)
    if pa.types.is_integer(t):
        return _whole(value, t.bit_width)
    if pa.types.is_floating(t):
        out = _real(value)
        if pa.types.is_float32(t) and math.isfinite(out):
            out = float32(_exact(value, out))  # rounded once, to a float
        return None if math.isnan(out) else out + 0.0  # SpecialValueTransformer: -0.0
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


def _kind(value: Any) -> str:
    """``PinotDataType.getSingleValueType`` of an extractor's value (Java types marked:
    :mod:`~sparkpipes.formats.pinot_convert`)."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, JavaLong):
        return "LONG"
    if isinstance(value, JavaFloat):
        return "FLOAT"
    if isinstance(value, bytes | bytearray):
        return "BYTES"
    if isinstance(value, dt.datetime):
        return "TIMESTAMP"
    if isinstance(value, dt.date):
        return "DATE"
    if isinstance(value, dt.time):
        return "TIME"
    if isinstance(value, int):
        return "INT" if -_INT32 <= value < _INT32 else "LONG"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, decimal.Decimal):
        return "BIG_DECIMAL"
    return "STRING" if isinstance(value, str) else "OBJECT"


_NUMBERS = ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL")
_One = Callable[[Any, pa.DataType], Any]


def _java_text(value: Any, one: _One) -> str:
    """``Object.toString`` of a Java value (``BigDecimal.toString``, not plain)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, JavaFloat):
        return java_float(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, bytes | bytearray):
        raise ValueError("byte[].toString is not its value")
    if isinstance(value, int | str | decimal.Decimal):
        return str(value)
    return one(value, pa.string())  # Timestamp, LocalDate, LocalTime, UUID


def _as_first(first: str, value: Any, t: pa.DataType, one: _One = _one) -> Any:
    """One element of a multi-value field converted by the first element's type
    (``DataTypeTransformerUtils.java:74``: the source type is
    ``getMultiValueType(values[0])``, then ``PinotDataType.to<Type>Array`` calls that
    type's ``to<Type>`` on each element; only the INT, LONG, FLOAT and DOUBLE arrays
    retry an element by its own type when the cast fails, ``PinotDataType.java``
    1474-1661). A ``to<Type>`` that refuses every value (``INT.toTimestamp``) refuses
    the first element too, so only the casts that can succeed are told apart here.
    ``one`` converts one value by its own type."""
    kind = _kind(value)
    if kind == first or first == "OBJECT":
        return one(value, t)
    if first == "STRING":  # STRING.to<Type>(value.toString())
        return one(_java_text(value, one), t)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return one(value, t)  # the failed cast is retried by the value's own type
    if pa.types.is_decimal(t) and first in ("FLOAT", "DOUBLE"):  # new BigDecimal(toString)
        text = _java_text(value, one)
        if text != text.strip(_TRIM):
            raise ValueError(f"Character array is missing exponent or digits: {text!r}")
        return one(text, t)
    if pa.types.is_boolean(t) and first == "BIG_DECIMAL":
        return True  # !value.equals(BigDecimal.ZERO): never equal to another type
    if pa.types.is_timestamp(t) and first == "BIG_DECIMAL" and kind in _NUMBERS:
        n = _narrow(float(value), 64) if kind in ("FLOAT", "DOUBLE") else int(value)
        return _millis(n)  # new Timestamp(((Number) value).longValue())
    if (pa.types.is_string(t) or pa.types.is_large_string(t)) and first not in (
        "BIG_DECIMAL",
        "BYTES",
    ):
        return one(value, t)  # value.toString()
    raise ValueError(f"class {kind} cannot be cast to the first value's type, {first}")


def convert_multi(values: Any, t: pa.DataType, one: _One = _one) -> list[Any] | None:
    """A standardized value into a multi-value column of type ``t``: each element by the
    first element's type (:func:`_as_first`), nulls dropped, an empty result null."""
    if not isinstance(values, list):
        return None if (v := one(values, t.value_type)) is None else [v]
    first = _kind(_java(values[0]))
    out = [_as_first(first, _java(v), t.value_type, one) for v in values]
    return [v for v in out if v is not None] or None


def convert(value: Any, t: pa.DataType, *, is_json: bool = False) -> Any:
    """``value`` (as ``json.loads`` gives it) stored into a column of Arrow type ``t`` as
    Pinot stores it; ``is_json``: a JSON column (text, not standardized). None is null."""
    if value is None:
        return None
    if is_json:
        return json_text(value)
    single = not (pa.types.is_list(t) or pa.types.is_large_list(t))
    value = standardize(value, single)
    if value is None:
        return None
    return _one(value, t) if single else convert_multi(value, t)

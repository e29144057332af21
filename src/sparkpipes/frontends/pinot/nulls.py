"""What a Pinot table stores for a field a record leaves out (or gives null), and how long
its text may be — read from Pinot's ``FieldSpec``, ``NullValueTransformer`` and
``SanitizationTransformer`` — as the column's ``NullFill`` and ``MaxLength``.

Nulls. Pinot always stores the field's default null value: ``defaultNullValue``, else its
type's (:data:`IMPLICIT`: a metric's is 0, a dimension's or dateTime's the least value —
``Integer.MIN_VALUE``, ``-Infinity`` …, ``"null"`` for text, empty bytes). With null
handling (``enableColumnBasedNullHandling`` in the schema: each field but the ``notNull``
ones; else ``tableIndexConfig.nullHandlingEnabled``: every field) it also records the
null, and a query with null handling sees NULL. So a field with null handling stores NULL
here, and one without stores the default, as each of Pinot's queries reads it. (A Pinot
query without the ``enableNullHandling`` option reads the default even where the null is
recorded; here it reads NULL.) The table's time column gets its default only when that is
a time within 1971-2071 (Pinot's ``TimeUtils``); otherwise, the time the row is loaded.

Lengths. A STRING is cut to ``maxLength`` (512 unless given) UTF-16 units and at a NUL;
JSON and BYTES are left whole unless ``maxLengthExceedStrategy`` says otherwise
(Pinot's defaults: ``TRIM_LENGTH`` for STRING, ``NO_ACTION`` for the others).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
from typing import Any

from sparkpipes.config.tables import MaxLength, NullFill
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.schema import FieldSpec, PinotSchema
from sparkpipes.frontends.pinot.units import TIME_UNITS_MS

#: Pinot's ``FieldSpec.DEFAULT_MAX_LENGTH``
DEFAULT_MAX_LENGTH = 512

_INT_MIN, _LONG_MIN = str(-(2**31)), str(-(2**63))

#: role → data type → Pinot's default null value (``FieldSpec.DEFAULT_*_NULL_VALUE_OF_*``)
IMPLICIT: dict[str, dict[str, str]] = {
    "metric": {
        "INT": "0",
        "LONG": "0",
        "FLOAT": "0.0",
        "DOUBLE": "0.0",
        "BIG_DECIMAL": "0",
        "STRING": "null",
        "BYTES": "",
    },
    "dimension": {
        "INT": _INT_MIN,
        "LONG": _LONG_MIN,
        "FLOAT": "-inf",
        "DOUBLE": "-inf",
        "BIG_DECIMAL": "0",
        "BOOLEAN": "false",
        "TIMESTAMP": "1970-01-01T00:00:00.000000Z",
        "STRING": "null",
        "JSON": "null",
        "BYTES": "",
    },
}
IMPLICIT["dateTime"] = IMPLICIT["dimension"]

#: Pinot's ``TimeUtils.VALID_MIN_TIME_MILLIS`` / ``VALID_MAX_TIME_MILLIS``
VALID_TIME_MS = (31536000000, 3187296000000)


def nullable(f: FieldSpec, schema: PinotSchema, table_null_handling: bool) -> bool:
    """Whether Pinot records a null of ``f`` (``MutableSegmentImpl.isNullable``)."""
    return not f.not_null if schema.column_nulls else table_null_handling


def null_fill(
    f: FieldSpec, schema: PinotSchema, table_null_handling: bool, time_column: str | None
) -> NullFill | None:
    """What a null of ``f`` is stored as, or None (NULL, the field has null handling; a
    multi-value field's fill of NULL makes an empty list NULL, as Pinot reads one)."""
    if nullable(f, schema, table_null_handling):
        return None if f.single_value else NullFill(None)
    if f.name == time_column:
        return _time_fill(f)
    return NullFill(default_text(f))


def max_length(f: FieldSpec) -> MaxLength | None:
    """How long ``f``'s values may be, or None (no limit: Pinot's ``NO_ACTION`` on JSON
    and BYTES)."""
    exceed = f.exceed or ("TRIM_LENGTH" if f.data_type == "STRING" else "NO_ACTION")
    if f.data_type not in ("STRING", "JSON", "BYTES"):
        return None
    if f.data_type != "STRING" and exceed == "NO_ACTION":
        return None
    limit = f.max_length if f.max_length is not None else DEFAULT_MAX_LENGTH
    return MaxLength(limit, exceed, default_text(f))


def default_text(f: FieldSpec) -> str:
    """``f``'s default null value as ``NullFill.value`` writes it; a ConfigError naming
    ``defaultNullValue`` when the value is not one of the field's type."""
    given = f.default_null
    if given is None:
        return IMPLICIT[f.role][f.data_type]
    text = _java_text(given)
    try:
        return CONVERT.get(f.data_type, str)(text)
    except (ValueError, OverflowError):
        raise ConfigError(
            f"field '{f.name}': defaultNullValue {given!r} is not a {f.data_type} value"
        ) from None


def _java_text(value: Any) -> str:
    """A JSON value as Pinot's ``FieldSpec.getStringValue`` reads it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _whole(bits: int):
    def convert(text: str) -> str:
        n = int(text.strip())
        if not -(2 ** (bits - 1)) <= n < 2 ** (bits - 1):
            raise ValueError(text)
        return str(n)

    return convert


def _real(text: str) -> str:
    v = float(text.strip())
    return "-inf" if v == -math.inf else "inf" if v == math.inf else repr(v)


def _decimal(text: str) -> str:
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise ValueError(text) from None
    if not value.is_finite():
        raise ValueError(text)
    return str(value)


def _boolean(text: str) -> str:
    return "true" if text.lower() == "true" or text == "1" else "false"  # BooleanUtils


def _timestamp(text: str) -> str:
    """``TimestampUtils.toMillisSinceEpoch``: ``yyyy-mm-dd hh:mm:ss[.f]`` (UTC here), or
    epoch milliseconds, or ISO 8601."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        when = dt.datetime.fromtimestamp(int(text) / 1000, dt.UTC)
    else:
        when = dt.datetime.fromisoformat(text.replace(" ", "T"))
        when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _bytes(text: str) -> str:
    return bytes.fromhex(text).hex()  # BytesUtils.toBytes: hex


#: Pinot data type → its ``DataType.convert`` of a default's text, as NullFill text
CONVERT = {
    "INT": _whole(32),
    "LONG": _whole(64),
    "FLOAT": _real,
    "DOUBLE": _real,
    "BIG_DECIMAL": _decimal,
    "BOOLEAN": _boolean,
    "TIMESTAMP": _timestamp,
    "BYTES": _bytes,
}

_JODA = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}
_JODA_TOKEN = re.compile(r"yyyy|MM|dd|HH|mm|ss|'[^']*'|[^A-Za-z']|[A-Za-z]+")


def _time_fill(f: FieldSpec) -> NullFill:
    """The time column's fill: its default when that is a valid time, else the load time
    in the column's format (``NullValueTransformerUtils.getDefaultTimeValue``)."""
    text = default_text(f)
    fmt = f.format
    assert fmt is not None  # a dateTime field
    ms = None
    try:
        if fmt.kind == "EPOCH":  # new BigDecimal(text).longValue(), any data type
            ms = int(decimal.Decimal(_decimal(text))) * TIME_UNITS_MS[fmt.unit] * fmt.size
        elif f.data_type == "TIMESTAMP" or fmt.kind == "TIMESTAMP":
            when = dt.datetime.fromisoformat(_timestamp(text).replace("Z", "+00:00"))
            ms = int(when.timestamp() * 1000)
        elif fmt.pattern is not None:
            stamp = dt.datetime.strptime(text, _strftime(fmt.pattern, f, parse=True))
            ms = int(stamp.replace(tzinfo=dt.UTC).timestamp() * 1000)
    except ValueError:
        ms = None
    if ms is not None and VALID_TIME_MS[0] <= ms <= VALID_TIME_MS[1]:
        return NullFill(text)
    if fmt.kind == "EPOCH" and f.data_type in ("INT", "LONG"):
        return NullFill(now=True, unit_ms=TIME_UNITS_MS[fmt.unit] * fmt.size)
    if f.data_type == "TIMESTAMP" or fmt.kind == "TIMESTAMP":
        return NullFill(now=True)
    return NullFill(now=True, strftime=_strftime(fmt.pattern or "", f))


def _strftime(pattern: str, f: FieldSpec, *, parse: bool = False) -> str:
    """A date pattern (``yyyy-MM-dd HH:mm:ss``) as C's ``strftime`` writes it (``parse``:
    as ``strptime`` reads it, milliseconds too); a pattern with other letters is a
    ConfigError (the load time cannot be written in it), or with ``parse`` a ValueError."""
    out = []
    for tok in _JODA_TOKEN.findall(pattern):
        if tok in _JODA:
            out.append(_JODA[tok])
        elif parse and tok == "SSS":
            out.append("%f")
        elif parse and tok[0].isalpha():
            raise ValueError(tok)
        elif tok[0].isalpha():
            raise ConfigError(
                f"field '{f.name}': the time column's format pattern '{pattern}' has "
                f"'{tok}', in which a missing time (stored as the load time, as Pinot does) "
                "cannot be written here (yyyy, MM, dd, HH, mm, ss are supported); give the "
                "field a defaultNullValue in that format"
            )
        else:
            out.append(tok.strip("'").replace("%", "%%"))
    return "".join(out)

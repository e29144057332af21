"""What Pinot stores for a JSON record's fields, worked out here by hand from Pinot's own
source (apache/pinot@210c2951e72), for ``test_pinot_corpus_loads`` to compare a table's
rows with, column by column. Nothing here calls sparkpipes.

- ``JSONRecordExtractor``: a JSON whole number is an ``Integer`` (fits 32 bits) or a
  ``Long``, a real a ``Double``, an array ``Object[]``, an object a ``Map``.
- ``DataTypeTransformerUtils.transformValue``: ``standardize`` (an empty list is null, a
  list of one its value), then ``PinotDataType.<dest>.convert(value, sourceType)``:
  ``STRING.toInt`` is ``Integer.parseInt(trim)``, ``DOUBLE.toLong`` ``(long)`` (truncated),
  ``STRING.toBytes`` ``BytesUtils.toBytes`` (hex), ``LONG.toTimestamp`` epoch millis,
  ``JSON.convert`` ``toJson`` (text that is JSON as it is, objects their JSON), a single
  value into a multi-value column a list of one.
- ``NullValueTransformer`` with ``FieldSpec.getDefaultNullValue``: a field the record
  leaves out stores ``defaultNullValue``, else its type's default — a metric 0, a
  dimension or dateTime ``Integer.MIN_VALUE``, ``Long.MIN_VALUE``,
  ``Float.NEGATIVE_INFINITY``, ``Double.NEGATIVE_INFINITY``, ``"null"``, empty bytes,
  false, epoch 0 — a multi-value field a list of that; with null handling
  (``nullHandlingEnabled``, or ``enableColumnBasedNullHandling`` and not ``notNull``) a
  query with null handling reads NULL.
- ``ExpressionTransformer``: a transform's value, then converted as above; a column the
  record gives is not transformed.
- ``ComplexTypeTransformer`` (``complexTypeConfig``) runs first
  (``RecordTransformerUtils.getTransformers``): ``flattenMap`` puts each leaf of a nested
  object under its dotted name as the record gave it (an array of primitives stays an
  array under ``NON_PRIMITIVE``), ``unnestCollection`` one row per element; each is then a
  column's value, converted as above by ``DataTypeTransformer`` (so ``stored`` of the
  flat record's value is also Pinot's value of a flattened field).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import struct
from collections.abc import Callable
from typing import Any

INT_MIN, LONG_MIN = -(2**31), -(2**63)
#: ``FieldSpec.DEFAULT_DIMENSION_NULL_VALUE_OF_*`` / ``DEFAULT_METRIC_NULL_VALUE_OF_*``
DIMENSION_DEFAULT = {
    "INT": INT_MIN,
    "LONG": LONG_MIN,
    "FLOAT": float("-inf"),
    "DOUBLE": float("-inf"),
    "BIG_DECIMAL": decimal.Decimal(0),
    "BOOLEAN": False,
    "TIMESTAMP": 0,
    "STRING": "null",
    "JSON": "null",
    "BYTES": "",
}
METRIC_DEFAULT = {
    "INT": 0,
    "LONG": 0,
    "FLOAT": 0.0,
    "DOUBLE": 0.0,
    "BIG_DECIMAL": decimal.Decimal(0),
    "STRING": "null",
    "BYTES": "",
}


def f32(x: float) -> float:
    """A Java ``float`` (what a FLOAT column holds)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _one(value: Any, kind: str) -> Any:
    """``PinotDataType.<kind>.convert`` of one standardized Java value (normalized for
    comparison: TIMESTAMP as epoch millis, BYTES as hex, JSON parsed)."""
    if kind in ("INT", "LONG"):
        if isinstance(value, str):
            return int(value.strip())  # STRING.toInt/toLong: parseInt(trim)
        return int(value)  # Number.intValue / longValue: a double truncated
    if kind in ("FLOAT", "DOUBLE"):
        x = float(value)  # STRING.toDouble: Double.parseDouble; Number.doubleValue
        return f32(x) if kind == "FLOAT" else x
    if kind == "BIG_DECIMAL":
        return decimal.Decimal(str(value)).normalize()
    if kind == "BOOLEAN":
        if isinstance(value, str):  # BooleanUtils.toBoolean
            return value.strip().lower() == "true" or value.strip() == "1"
        return bool(value)  # INT/LONG/DOUBLE.toBoolean: != 0
    if kind == "TIMESTAMP":
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            return int(value.strip())  # TimestampUtils.toTimestamp: Long.parseLong
        if isinstance(value, str):  # Timestamp.valueOf: yyyy-mm-dd hh:mm:ss (UTC here)
            when = dt.datetime.strptime(value.strip(), "%Y-%m-%d %H:%M:%S")
            return int(when.replace(tzinfo=dt.UTC).timestamp() * 1000)
        return int(value)  # LONG.toTimestamp: new Timestamp(millis)
    if kind == "STRING":
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if kind == "BYTES":
        return bytes.fromhex(value.strip()).hex()  # BytesUtils.toBytes: Hex.decodeHex
    if kind == "JSON":
        return json.loads(value) if isinstance(value, str) else value
    raise AssertionError(kind)


def stored(value: Any, spec: dict) -> Any:
    """What Pinot stores for the record's ``value`` (None: the field is missing)."""
    kind = spec.get("dataType", "STRING")
    single = spec.get("singleValueField", True)
    if kind == "JSON":  # not standardized; toJson
        return None if value is None else _one(value, kind)
    while isinstance(value, list) and len(value) == 1:  # standardize: one value is it
        value = value[0]
    if value is None or value == []:
        return None
    if single:
        return _one(value, kind)
    return [_one(v, kind) for v in (value if isinstance(value, list) else [value])]


def default(spec: dict, role: str, nullable: bool) -> Any:
    """``NullValueTransformer``: the field's default null value, or None (NULL) with null
    handling."""
    if nullable:
        return None
    kind = spec.get("dataType", "STRING")
    given = spec.get("defaultNullValue")
    if given is not None:
        value = _one(given if isinstance(given, str) else json.dumps(given), kind)
    else:
        value = (METRIC_DEFAULT if role == "metric" else DIMENSION_DEFAULT)[kind]
        value = f32(value) if kind == "FLOAT" else value
    return value if spec.get("singleValueField", True) else [value]


# -- transform functions, from their Pinot source --------------------------------------------
def _joda_millis(text: str) -> int:
    """``DateTimeFunctions.fromDateTime`` of our texts (``DateTimePatternHandler``, Joda,
    UTC): whole seconds of the date and time, plus the fraction of a second (Joda's
    ``S…`` is a fraction: ``.12`` is 120 ms, ``.766000`` 766 ms), minus an offset
    (``Z``: ``+0000``)."""
    m = re.search(r"(\d{4})\D(\d\d)\D(\d\d)\D+(\d\d):(\d\d):(\d\d)(?:\.(\d+))?", text)
    if m is None:
        m2 = re.fullmatch(r"(\d\d)/(\d\d)/(\d{4})T(\d\d):(\d\d):(\d\d)", text)
        assert m2 is not None, text
        mo, d, y, h, mi, s = map(int, m2.groups())
        frac = None
    else:
        y, mo, d, h, mi, s = map(int, m.groups()[:6])
        frac = m.group(7)
    when = dt.datetime(y, mo, d, h, mi, s, tzinfo=dt.UTC)
    ms = int(((frac or "") + "000")[:3])
    return int(when.timestamp()) * 1000 + ms


def _bucket(ms: int, seconds: int) -> int:
    """``DateTimeConversionTransformFunction`` (``1:MILLISECONDS:EPOCH`` in and out) with
    granularity ``<n>:SECONDS``: the millis rounded down to the bucket."""
    size = seconds * 1000
    return ms // size * size


#: transform expression → its value from the record (``DateTimeFunctions``:
#: ``fromEpochDays`` ``TimeUnit.DAYS.toMillis``, ``toEpochDays`` ``TimeUnit.MILLISECONDS
#: .toDays``; ``JsonFunctions.jsonFormat`` ``JsonUtils.objectToString``; a literal is
#: itself, a column name the column's value)
TRANSFORMS: dict[str, Callable[[dict], Any]] = {
    "fromEpochDays(DaysSinceEpoch)": lambda r: r["DaysSinceEpoch"] * 86_400_000,
    'toEpochDays("timestamp")': lambda r: r["timestamp"] // 86_400_000,
    "1704067200000": lambda r: 1704067200000,
    "timestamp1": lambda r: r["timestamp1"],
    "timestamp2": lambda r: r["timestamp2"],
    "FromDateTime(timestamp3, 'MM/dd/yyyy''T''HH:mm:ss')": lambda r: _joda_millis(r["timestamp3"]),
    "FromDateTime(tsString, 'YYYY-MM-dd''T''HH:mm:ss.SS''Z''')": lambda r: _joda_millis(
        r["tsString"]
    ),
    "FromDateTime(tsString, 'YYYY-MM-dd''T''HH:mm:ss.SSSSSS''Z''')": lambda r: _joda_millis(
        r["tsString"]
    ),
    "fromDateTime(created_at, 'yyyy-MM-dd''T''HH:mm:ssZ')": lambda r: _joda_millis(r["created_at"]),
    "jsonFormat(event)": lambda r: r["event"],
    'jsonFormat("group")': lambda r: r["group"],
    "jsonFormat(member)": lambda r: r["member"],
    "jsonFormat(venue)": lambda r: r["venue"],
    "json_format(payload)": lambda r: r["payload"],
    "DATETIME_CONVERT(eventTime, '1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', "
    "'10:SECONDS')": lambda r: _bucket(r["eventTime"], 10),
    "DATETIME_CONVERT(eventTime, '1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', "
    "'30:SECONDS')": lambda r: _bucket(r["eventTime"], 30),
}
#: transforms whose value is JSON text (compared parsed: Jackson writes a ``HashMap``)
JSON_TEXT = ("jsonFormat(", "json_format(")
#: transforms whose value is not worked out here, and why
NOT_CHECKED = {
    "now()": "the load time",
    "toSphericalGeography": "GeometrySerializer bytes (test_pinot_geo_time.py checks them)",
    "Groovy": "not run here (a gap)",
}


def checked(expr: str) -> bool:
    return not any(expr.startswith(k) for k in NOT_CHECKED)


def normalized(value: Any, spec: dict) -> Any:
    """A stored value as the expected ones are written: TIMESTAMP epoch millis, BYTES
    hex, JSON parsed, BIG_DECIMAL normalized."""
    if value is None:
        return None
    if isinstance(value, list):
        return [normalized(v, {**spec, "singleValueField": True}) for v in value]
    kind = spec.get("dataType", "STRING")
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000) if value.year > 1 else value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    if kind == "JSON" and value == "null":
        return value  # the default null value's text, told apart from NULL (None)
    if kind == "JSON" or (isinstance(value, str) and spec.get("json")):
        return json.loads(value)
    return value

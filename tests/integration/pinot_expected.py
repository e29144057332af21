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
# A transform is parsed as Pinot's ``InbuiltFunctionEvaluator`` plans it: a literal is
# itself, an identifier (bare or in double quotes) the record's value of that column, a
# function call ``FunctionRegistry.lookupFunctionInfo(canonicalize(name), nArgs)`` with
# ``canonicalize`` = underscores removed, lower case, and ``a * b`` the function ``mult``.
# A function whose parameters are not ``nullableParameters`` gives null for a null
# argument (``FunctionExecutionNode``).
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|'(?P<str>(?:[^']|'')*)'|\"(?P<qid>[^\"]*)\""
    r"|(?P<id>[A-Za-z_$][\w$.]*)|(?P<op>[(),*]))"
)


def parse(expr: str) -> tuple:
    """``("lit", value)``, ``("col", name)`` or ``("call", canonical name, [args])``."""
    tokens, pos = [], 0
    while pos < len(expr.rstrip()):
        m = _TOKEN.match(expr, pos)
        assert m is not None and m.end() > pos, (expr, pos)
        tokens.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    tokens.append(("end", ""))
    at = 0

    def term() -> tuple:
        nonlocal at
        kind, text = tokens[at]
        at += 1
        if kind == "num":
            return ("lit", float(text) if "." in text else int(text))
        if kind == "str":
            return ("lit", text.replace("''", "'"))
        if kind == "qid":
            return ("col", text)
        if kind == "op" and text == "(":
            node = product()
            assert tokens[at] == ("op", ")"), expr
            at += 1
            return node
        assert kind == "id", (expr, text)
        if tokens[at] != ("op", "("):
            return ("col", text)
        at += 1
        args = []
        while tokens[at] != ("op", ")"):
            args.append(product())
            if tokens[at] == ("op", ","):
                at += 1
        at += 1
        return ("call", text.replace("_", "").lower(), args)

    def product() -> tuple:
        nonlocal at
        node = term()
        while tokens[at] == ("op", "*"):
            at += 1
            node = ("call", "mult", [node, term()])
        return node

    tree = product()
    assert tokens[at][0] == "end", expr
    return tree


def _java_div(a: int, b: int) -> int:
    """Java's ``long`` division (toward zero), as ``TimeUnit.convert`` does it."""
    q = abs(a) // b
    return q if a >= 0 else -q


# Joda ``DateTimeFormat.forPattern`` (``parsePatternTo``), UTC, English: the letters the
# corpus uses. y/Y year (``Y`` is year of era in Joda), M month (3 letters: short text,
# 4+: full), d day, H hour, m minute, s second, S fraction of second (parsed to millis:
# digits after the third dropped), E day of week (<4: short text), Z offset (1: ``+0000``,
# 2: ``+00:00``; ``Z`` parsed as zero), z zone short name (``DateTimeUtils
# .getDefaultTimeZoneNames``: UT, UTC, GMT are UTC).
_JODA_TOKEN = re.compile(r"'((?:[^']|'')*)'|([A-Za-z])\2*|([^A-Za-z']+)")
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_UTC_NAMES = ("UTC", "UT", "GMT")


def _joda_tokens(pattern: str) -> list[tuple[str, str]]:
    """(letter or "" for a literal, text) of each pattern token."""
    out = []
    for m in _JODA_TOKEN.finditer(pattern):
        if m.group(1) is not None:
            out.append(("", m.group(1).replace("''", "'") or "'"))
        elif m.group(2):
            out.append((m.group(2), m.group(0)))
        else:
            out.append(("", m.group(3)))
    return out


def joda_print(millis: int, pattern: str) -> str:
    """``DateTimePatternHandler.parseEpochMillisToDateTimeString``: ``millis`` printed by
    the Joda pattern in UTC (``DateTimeFunctions.toDateTime``)."""
    when = dt.datetime.fromtimestamp(millis / 1000, dt.UTC).replace(microsecond=0)
    out = []
    for letter, text in _joda_tokens(pattern):
        n = len(text)
        if not letter:
            out.append(text)
        elif letter in ("y", "Y"):
            out.append(f"{when.year:0{n}d}" if n != 2 else f"{when.year % 100:02d}")
        elif letter == "M":
            out.append(f"{when.month:0{n}d}" if n < 3 else when.strftime("%b" if n == 3 else "%B"))
        elif letter == "E":
            out.append(when.strftime("%a" if n < 4 else "%A"))
        elif letter in "dHms":
            value = {"d": when.day, "H": when.hour, "m": when.minute, "s": when.second}[letter]
            out.append(f"{value:0{n}d}")
        elif letter == "S":
            out.append(f"{millis % 1000:03d}"[:n].ljust(n, "0"))
        elif letter == "Z":
            out.append({1: "+0000", 2: "+00:00"}.get(n, "UTC"))
        elif letter == "z":
            out.append("UTC" if n < 4 else "Coordinated Universal Time")
        else:
            raise AssertionError(f"Joda letter {letter!r} not worked out here")
    return "".join(out)


def joda_parse(text: str, pattern: str) -> int:
    """``DateTimePatternHandler.parseDateTimeStringToEpochMillis``: ``text`` read by the
    Joda pattern in UTC, epoch millis (``DateTimeFunctions.fromDateTime``)."""
    tokens = _joda_tokens(pattern)
    regex = []
    for n, (letter, tok) in enumerate(tokens):
        after = tokens[n + 1][0] if n + 1 < len(tokens) else ""
        fixed = bool(after) and after in "yYMdHmsS"  # Joda: a number right before another
        width = len(tok)
        if not letter:
            regex.append(re.escape(tok))
        elif letter in ("y", "Y"):
            regex.append(rf"(?P<y>[-+]?\d{{{width}}})" if fixed else r"(?P<y>[-+]?\d{1,9})")
        elif letter == "M" and width >= 3:
            regex.append(r"(?P<Mt>[A-Za-z]+)")
        elif letter in "MdHms":
            digits = width if fixed else f"1,{max(width, 2)}"
            regex.append(rf"(?P<{letter}>\d{{{digits}}})")
        elif letter == "S":
            regex.append(rf"(?P<S>\d{{1,{width}}})")
        elif letter == "E":
            regex.append(r"(?P<E>[A-Za-z]+)")
        elif letter == "Z":
            regex.append(r"(?P<Z>Z|[-+]\d\d:?\d\d)")
        elif letter == "z":
            regex.append(r"(?P<z>[A-Za-z]+)")
        else:
            raise AssertionError(f"Joda letter {letter!r} not worked out here")
    m = re.fullmatch("".join(regex), text, flags=re.IGNORECASE)
    assert m is not None, (text, pattern)  # Joda: IllegalArgumentException
    g = m.groupdict()
    month = (
        [x.lower() for x in _MONTHS].index(g["Mt"][:3].lower()) + 1
        if g.get("Mt")
        else int(g.get("M") or 1)
    )
    when = dt.datetime(
        int(g.get("y") or 1970),
        month,
        int(g.get("d") or 1),
        int(g.get("H") or 0),
        int(g.get("m") or 0),
        int(g.get("s") or 0),
        tzinfo=dt.UTC,
    )
    if g.get("E"):  # a day of week that agrees with the date leaves it as it is
        assert _DAYS[when.weekday()].lower() == g["E"][:3].lower(), (text, pattern)
    offset = 0
    if g.get("Z") and g["Z"].upper() != "Z":
        sign = -1 if g["Z"][0] == "-" else 1
        digits = g["Z"][1:].replace(":", "")
        offset = sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60_000
    if g.get("z"):
        assert g["z"].upper() in _UTC_NAMES, (text, pattern)
    frac = int(((g.get("S") or "") + "000")[:3])
    return int(when.timestamp()) * 1000 + frac - offset


def _datetime_convert(ms: int, in_fmt: str, out_fmt: str, granularity: str) -> int:
    """``DateTimeConversionTransformFunction`` for ``1:MILLISECONDS:EPOCH`` in and out:
    the millis rounded down to the granularity (``<n>:SECONDS``, …)."""
    assert in_fmt == out_fmt == "1:MILLISECONDS:EPOCH", (in_fmt, out_fmt)
    size, unit = granularity.split(":")
    size_ms = int(size) * {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000}[unit]
    return ms // size_ms * size_ms


def _json_read(obj: Any, path: str) -> Any:
    """``JsonFunctions.jsonPath``: text parsed (Jackson), then Jayway ``read`` with
    ``SUPPRESS_EXCEPTIONS`` (a missing key is null). The paths here: ``$.a.b``; ``….length()``
    (Jayway ``Length``: an array's or object's size, an ``Integer``); ``$.sum($.[*].k)``
    (Jayway ``Sum`` via ``AbstractAggregation``: the numbers of the array it is called on,
    none here as its elements are objects, plus those the parameter path reads from the
    root, summed as a ``Double``)."""
    node = json.loads(obj) if isinstance(obj, str) else obj
    m = re.fullmatch(r"\$\.sum\(\$\.?\[\*\]\.(\w+)\)", path)
    if m is not None:
        items = node if isinstance(node, list) else []
        numbers = [float(e[m.group(1)]) for e in items if isinstance(e, dict) and m.group(1) in e]
        numbers += [float(e) for e in items if isinstance(e, int | float)]
        if not numbers:
            raise ValueError("Aggregation function attempted to calculate value using empty array")
        return sum(numbers)
    m = re.fullmatch(r"\$((?:\.\w+)*?)(\.length\(\))?", path)
    assert m is not None, path
    for key in m.group(1).split(".")[1:]:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if m.group(2):
        return len(node) if isinstance(node, list | dict) else None
    return node


def _jackson(value: Any) -> str:
    """``JsonUtils.objectToString`` (Jackson's ``writeValueAsString``)."""
    return json.dumps(value, separators=(",", ":"))


def _json_path_string(obj: Any, path: str) -> str | None:
    """``jsonPathString``: a text leaf as it is, anything else its Jackson text
    (``jsonValueToString``)."""
    value = _json_read(obj, path)
    if value is None or isinstance(value, str):
        return value
    return _jackson(value)


def _json_path_long(obj: Any, path: str, default: int = LONG_MIN) -> int:
    """``jsonPathLong``: ``Number.longValue`` (truncated), a boolean 1/0, else
    ``Long.parseLong``; the default (``Long.MIN_VALUE``) for null or a failure."""
    try:
        value = _json_read(obj, path) if obj is not None else None
        if value is None:
            return default
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, (int, float)):
            return int(value)
        return int(str(value))
    except (ValueError, TypeError):
        return default


def _json_path_double(obj: Any, path: str, default: float = float("nan")) -> float:
    """``jsonPathDouble``: ``Number.doubleValue``, a boolean 1/0, else
    ``Double.parseDouble``; the default (``NaN``) for null or a failure."""
    try:
        value = _json_read(obj, path) if obj is not None else None
        if value is None:
            return default
        return float(value)
    except (ValueError, TypeError):
        return default


def _json_path_array(obj: Any, path: str) -> list | None:
    """``jsonPathArray``: ``convertObjectToArray`` — a list's elements, else one."""
    value = _json_read(obj, path)
    if value is None:
        return None
    return list(value) if isinstance(value, list) else [value]


_MS = {"SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}
#: canonical function name → (its value from the argument values, nullable parameters)
#: ``DateTimeFunctions``: ``toEpoch<Unit>`` ``TimeUnit.MILLISECONDS.to<Unit>`` (Java
#: division), ``fromEpoch<Unit>`` ``TimeUnit.<UNIT>.toMillis``, ``toDateTime`` /
#: ``fromDateTime`` ``DateTimePatternHandler`` (Joda, UTC); ``JsonFunctions``:
#: ``jsonFormat`` ``JsonUtils.objectToString``, ``jsonPath*`` above;
#: ``MultScalarFunction`` by argument count: ``doubleMult``.
FUNCTIONS: dict[str, tuple[Callable[..., Any], bool]] = {
    **{
        f"toepoch{u.lower()}": ((lambda ms, k=k: _java_div(int(ms), k)), False)
        for u, k in _MS.items()
    },
    **{f"fromepoch{u.lower()}": ((lambda n, k=k: int(n) * k), False) for u, k in _MS.items()},
    "todatetime": (lambda ms, pattern: joda_print(int(ms), pattern), False),
    "fromdatetime": (lambda text, pattern: joda_parse(str(text), pattern), False),
    "jsonformat": (_jackson, False),
    "jsonpath": (_json_read, False),
    "jsonpathstring": (_json_path_string, False),
    "jsonpathlong": (_json_path_long, False),  # the 2-argument form: not nullableParameters
    "jsonpathdouble": (_json_path_double, False),
    "jsonpatharray": (_json_path_array, False),
    "mult": (lambda a, b: float(a) * float(b), False),
    "times": (lambda a, b: float(a) * float(b), False),
    "datetimeconvert": (_datetime_convert, False),
}


def evaluate(expr: str | tuple, record: dict, transforms: dict[str, str]) -> Any:
    """The value of the transform ``expr`` for ``record``. A column the record leaves out
    that another transform computes is that transform's value (``ExpressionTransformer``
    runs them in dependency order and puts each value in the record)."""
    node = parse(expr) if isinstance(expr, str) else expr
    if node[0] == "lit":
        return node[1]
    if node[0] == "col":
        value = record.get(node[1])
        if value is None and node[1] in transforms:
            return evaluate(transforms[node[1]], record, transforms)
        return value
    function, nullable = FUNCTIONS[node[1]]
    args = [evaluate(a, record, transforms) for a in node[2]]
    if not nullable and any(a is None for a in args):
        return None
    return function(*args)


def json_text(expr: str) -> bool:
    """Whether the transform's value is JSON text (``jsonFormat``: compared parsed, since
    Jackson writes a ``HashMap`` in its own order)."""
    node = parse(expr)
    return node[0] == "call" and node[1] == "jsonformat"


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

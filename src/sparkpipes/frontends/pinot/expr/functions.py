"""The string, math, JSON and miscellaneous functions, registered in ``FUNCTIONS``."""

from __future__ import annotations

import re
from collections.abc import Callable

from sparkpipes.frontends.pinot.expr.core import (
    _INT_MIN,
    _LONG_MIN,
    _NOT,
    _as,
    _Build,
    _def,
    _Fail,
    _lit,
    _Node,
    _numeric,
    _str,
    _unify,
    millis_ts,
)

# --- strings --------------------------------------------------------------------------

for _names, _tmpl, _doc in (
    ("upper", "upper({0})", "upper case"),
    ("lower", "lower({0})", "lower case"),
    ("reverse", "reverse({0})", "the characters in reverse order"),
    (
        "trim",
        "regexp_replace({0}, '^[\\\\x00-\\\\x20]+|[\\\\x00-\\\\x20]+$', '')",
        "without leading and trailing spaces and control characters (Java's trim)",
    ),
    ("ltrim", "regexp_replace({0}, '^\\\\s+', '')", "without leading whitespace"),
    ("rtrim", "regexp_replace({0}, '\\\\s+$', '')", "without trailing whitespace"),
    ("encodeUrl", "url_encode({0})", "URL-encoded (UTF-8, form encoding)"),
    ("decodeUrl", "try_url_decode({0})", "URL-decoded; NULL if malformed"),
):
    _def(f"{_names}(input:S) -> S", _tmpl, _doc)
# Java's String.length(): UTF-16 units (a character outside the BMP counts 2), an int
_def(
    "length(input:S) -> I",
    "(octet_length(encode({0}, 'UTF-16BE')) div 2)",
    "the number of UTF-16 units (Java's String.length)",
)
_defs_s = (
    ("startsWith(input:S, prefix:S) -> Z", "startswith({0}, {1})"),
    ("endsWith(input:S, suffix:S) -> Z", "endswith({0}, {1})"),
    ("contains(input:S, substring:S) -> Z", "contains({0}, {1})"),
    ("replace(input:S, find:S, substitute:S) -> S", "replace({0}, {1}, {2})"),
    ("remove(input:S, search:S) -> S", "replace({0}, {1}, '')"),
    ("leftSubStr(input:S, length:I) -> S", "left({0}, {1})"),
    ("rightSubStr(input:S, length:I) -> S", "right({0}, {1})"),
    ("toUtf8(input:S) -> B", "encode({0}, 'UTF-8')"),
    ("fromUtf8(input:B) -> S", "decode({0}, 'UTF-8')"),
    ("toBytes(input:S, charset:S) -> B", "encode({0}, {1})"),
    ("fromBytes(input:B, charset:S) -> S", "decode({0}, {1})"),
    ("toBase64(input:B) -> S", "base64({0})"),
    ("fromBase64(input:S) -> B", "try_to_binary({0}, 'base64')"),
    ("md5(input:B) -> S", "md5({0})"),
    ("sha(input:B) -> S", "sha1({0})"),
    ("sha256(input:B) -> S", "sha2({0}, 256)"),
    ("sha512(input:B) -> S", "sha2({0}, 512)"),
    # Jackson's readTree reads '' (or only whitespace) as a missing node, not an error
    (
        "isJson(input:S) -> Z",
        "({0} RLIKE '^[ \\\\t\\\\r\\\\n]*$' OR try_parse_json({0}) IS NOT NULL)",
    ),
)
for _spec, _tmpl in _defs_s:
    _def(_spec, _tmpl)
_def(
    "concat(input1:S, input2:S, separator:S?) -> S",
    {2: "concat({0}, {1})", 3: "concat({0}, {2}, {1})"},
    "input1 + separator + input2 (Pinot's separator is the THIRD argument)",
)
_def("concat_ws(separator:S, input1:S, input2:S) -> S", "concat({1}, {0}, {2})")
_def(
    "repeat(input:S, timesOrSeparator:*, times:I?) -> S",
    lambda a: (
        f"repeat({_as(a[0], 'STRING').sql}, {_as(a[1], 'INT').sql})"
        if len(a) == 2
        else f"array_join(array_repeat({a[0].sql}, {a[2].sql}), {_as(a[1], 'STRING').sql})"
    ),
)
_def(
    "strcmp(input1:S, input2:S) -> I",
    "CASE WHEN {0} = {1} THEN 0 WHEN {0} < {1} THEN -1 WHEN {0} > {1} THEN 1 END",
    "-1, 0 or 1 as input1 sorts before, with or after input2",
)


def _pad(side: str) -> _Build:
    return lambda a: (
        f"CASE WHEN char_length({a[0].sql}) >= {a[1].sql} THEN {a[0].sql} "
        f"ELSE {side}({a[0].sql}, {a[1].sql}, {a[2].sql}) END"
    )


_def("lpad(input:S, size:I, pad:S) -> S", _pad("lpad"), "padded on the left; never cut")
_def("rpad(input:S, size:I, pad:S) -> S", _pad("rpad"), "padded on the right; never cut")


def _substr(args: list[_Node]) -> str:
    s, b = args[0].sql, args[1]
    e = args[2] if len(args) > 2 else None
    bv = b.literal(int)
    ev = -1 if e is None else e.literal(int)
    if bv is not _NOT and bv >= 0 and ev is not _NOT and (ev == -1 or ev >= 0):
        if ev == -1:
            return f"substring({s}, {bv + 1})"
        return f"substring({s}, {bv + 1}, {max(ev - bv, 0)})"
    n = f"char_length({s})"
    begin = f"CASE WHEN {b.sql} < 0 THEN greatest({n} + {b.sql}, 0) ELSE {b.sql} END"
    end = (
        n
        if e is None
        else f"CASE WHEN {e.sql} = -1 THEN {n} WHEN {e.sql} < 0 THEN {n} + {e.sql} "
        f"ELSE least({e.sql}, {n}) END"
    )
    return f"substring({s}, ({begin}) + 1, greatest(({end}) - ({begin}), 0))"


_def(
    "substr(input:S, beginIndex:I, endIndex:I?) -> S",
    _substr,
    "characters beginIndex (0-based; negative counts from the end) up to endIndex "
    "(exclusive; -1: to the end)",
)
_def(
    "substring(input:S, beginIndex:I, length:I?) -> S",
    {2: "substring({0}, {1})", 3: "substring({0}, {1}, {2})"},
    "SQL's substring: 1-based",
)


def _strpos(args: list[_Node]) -> str:
    s, f = args[0].sql, args[1].sql
    if len(args) == 2:
        return f"(instr({s}, {f}) - 1)"
    n = args[2].sql
    nth = (
        f"aggregate(sequence(1, {n}), 0, (acc, i) -> CASE WHEN i > 1 AND acc = 0 THEN 0 "
        f"ELSE locate({f}, {s}, acc + 1) END)"
    )
    return f"CASE WHEN {n} <= 0 THEN -1 WHEN {f} = '' THEN 0 ELSE ({nth}) - 1 END"


_def(
    "strpos(input:S, find:S, instance:I?) -> I",
    _strpos,
    "0-based index of the first (or instance-th) occurrence of find; -1 if none",
)
_def(
    "strrpos(input:S, find:S) -> I",
    "CASE WHEN instr(reverse({0}), reverse({1})) = 0 THEN -1 ELSE "
    "char_length({0}) - char_length({1}) - instr(reverse({0}), reverse({1})) + 1 END",
    "0-based index of the last occurrence of find; -1 if none",
)


def _java_quote(text: str) -> str:
    if "\\E" not in text:
        return "\\Q" + text + "\\E"
    return "".join("\\" + c if not c.isalnum() else c for c in text)


def _tokens(s: _Node, delim: _Node) -> str:
    """Commons-lang's splitByWholeSeparator: the pieces between whole delimiters, empty
    ones dropped but the last (``'a,b,'`` is ``a``, ``b``, ``''``: its scan adds what
    follows the last delimiter as it ends); none for ``''``. An empty delimiter splits on
    whitespace and keeps no empty piece."""
    d = delim.literal(str)
    if d == "":
        return f"filter(split({s.sql}, '\\\\s+'), x -> x != '')"
    regex = f"concat('\\\\Q', {delim.sql}, '\\\\E')" if d is _NOT else _str(_java_quote(d))
    pieces = f"split({s.sql}, {regex}, -1)"
    kept = f"filter({pieces}, (x, i) -> x != '' OR i = size({pieces}) - 1)"
    return f"CASE WHEN {s.sql} = '' THEN CAST(array() AS ARRAY<STRING>) ELSE {kept} END"


_def(
    "split(input:S, delimiter:S) -> A",
    lambda a: _tokens(a[0], a[1]),
    "the pieces between delimiters (whole string, not a regex), empty pieces dropped",
)
_def(
    "splitPart(input:S, delimiter:S, index:I) -> S",
    lambda a: (
        f"CASE WHEN {a[0].sql} IS NULL THEN NULL ELSE coalesce(try_element_at("
        f"{_tokens(a[0], a[1])}, CASE WHEN {a[2].sql} >= 0 THEN {a[2].sql} + 1 "
        f"ELSE {a[2].sql} END), 'null') END"
    ),
    "piece index (0-based; negative counts from the end) of split(input, delimiter); "
    "the text 'null' when there is none, as Pinot",
)


def _regex(pattern: _Node, flag: _Node | None) -> str:
    """``pattern``'s SQL, case-insensitive when ``flag`` (a literal) contains 'i'."""
    if flag is None:
        return pattern.sql
    f = _lit(flag, str, "the match flag")
    if "i" not in f:
        return pattern.sql
    value = pattern.literal(str)
    return _str("(?i)" + value) if value is not _NOT else f"concat('(?i)', {pattern.sql})"


def _regexp_extract(args: list[_Node]) -> str:
    s, r = args[0].sql, args[1].sql
    group = args[2].sql if len(args) > 2 else "0"
    default = args[3].sql if len(args) > 3 else "''"
    return (
        f"CASE WHEN {s} IS NULL THEN NULL WHEN {s} RLIKE {r} "
        f"THEN regexp_extract({s}, {r}, {group}) ELSE {default} END"
    )


_def(
    "regexpExtract(input:S, regexp:S, group:I?, default:S?) -> S",
    _regexp_extract,
    "group (default 0) of the first match of regexp; default ('' if not given) if none",
)


def _regexp_replace(args: list[_Node]) -> str:
    s, rep = args[0].sql, args[2]
    regex = _regex(args[1], args[5] if len(args) > 5 else None)
    start = "1"
    if len(args) > 3:
        pos = args[3].literal(int)
        start = f"{args[3].sql} + 1" if pos is _NOT else str(pos + 1)
    occurrence = _lit(args[4], int, "the occurrence of regexpReplace") if len(args) > 4 else -1
    if occurrence < 0:
        return f"regexp_replace({s}, {regex}, {rep.sql}, {start})"
    r, text = args[1].literal(str), rep.literal(str)
    if r is _NOT or text is _NOT or "$" in text or "\\" in text:
        raise _Fail(
            "regexpReplace replaces one occurrence only with a literal regexp and a "
            "replacement without '$' or '\\'"
        )
    flags = "(?si)" if regex != args[1].sql else "(?s)"
    nth = _str(f"{flags}^((?:.*?(?:{r})){{{occurrence}}}.*?)(?:{r})")
    return f"regexp_replace({s}, {nth}, {_str('$1' + text)}, {start})"


_def(
    "regexpReplace(input:S, regexp:S, replacement:S, matchStartPos:I?, "
    "occurrence:I?, flag:S?) -> S",
    _regexp_replace,
    "matches of regexp from matchStartPos (0-based) replaced, all or only the "
    "occurrence-th (0-based); flag 'i': case-insensitive",
)
_def(
    "regexpLike(input:S, regexp:S, flag:S?) -> Z",
    lambda a: f"({a[0].sql} RLIKE {_regex(a[1], a[2] if len(a) > 2 else None)})",
    "whether regexp matches somewhere in input; flag 'i': case-insensitive",
)

# --- math -----------------------------------------------------------------------------

#: 2^52: a double this large is a whole number (and NaN compares above it in Spark)
_WHOLE = "4503599627370496D"


def _clamp_long(x: str) -> str:
    """Java's ``(long)`` of a double that is not NaN, kept a double: clamped to a long."""
    return f"greatest(least({x}, 9.223372036854775807E18D), -9.223372036854775808E18D)"


for _names, _tmpl in (
    ("abs", "abs({0})"),
    # Spark's floor / ceil of a DOUBLE is a BIGINT, which fails the batch past 2^63 (and on
    # Infinity): a double of 2^52 or more is whole already, NaN and Infinity stay as they are
    (
        "ceil|ceiling",
        f"CASE WHEN abs({{0}}) >= {_WHOLE} THEN {{0}} ELSE CAST(ceil({{0}}) AS DOUBLE) END",
    ),
    ("floor", f"CASE WHEN abs({{0}}) >= {_WHOLE} THEN {{0}} ELSE CAST(floor({{0}}) AS DOUBLE) END"),
    ("exp", "exp({0})"),
    ("ln|log", "ln({0})"),
    ("log2", "log2({0})"),
    ("log10", "log10({0})"),
    ("sqrt", "sqrt({0})"),
    ("sign", "signum({0})"),
):
    _def(f"{_names}(a:D) -> D", _tmpl)
for _names, _tmpl in (
    ("plus|add", "({0} + {1})"),
    ("minus|sub", "({0} - {1})"),
    ("times|mult", "({0} * {1})"),
    ("mod", "try_mod({0}, {1})"),
    ("power|pow", "power({0}, {1})"),
    ("least", "CASE WHEN {0} IS NULL OR {1} IS NULL THEN NULL ELSE least({0}, {1}) END"),
    ("greatest", "CASE WHEN {0} IS NULL OR {1} IS NULL THEN NULL ELSE greatest({0}, {1}) END"),
):
    _def(f"{_names}(a:D, b:D) -> D", _tmpl, "on DOUBLE, as Pinot; / and % by zero are NULL")
_def(
    "divide|div(a:D, b:D, default:D?) -> D",
    {2: "try_divide({0}, {1})", 3: "CASE WHEN {1} = 0 THEN {2} ELSE try_divide({0}, {1}) END"},
    "on DOUBLE, as Pinot; by zero: default if given, else NULL",
)
_def(
    "roundDecimal(a:D, scale:I?) -> D",
    {
        # Math.round, kept a double: NaN and Infinity as they are (Pinot checks them first),
        # a whole double as it is, the rest half up
        1: f"CASE WHEN isnan({{0}}) OR abs({{0}}) = double('Infinity') THEN {{0}} "
        f"WHEN abs({{0}}) >= {_WHOLE} THEN {_clamp_long('{0}')} "
        "ELSE CAST(floor({0} + 0.5D) AS DOUBLE) END",
        2: "round({0}, {1})",
    },
    "a rounded half up to scale decimals (none: to a whole number)",
)

# --- JSON -----------------------------------------------------------------------------


def _json_path(node: _Node) -> str:
    """The SQL of a JSONPath for get_json_object, checked when it is a literal."""
    path = node.literal(str)
    return node.sql if path is _NOT else _str(_jayway(path))


def _jayway(path: str) -> str:
    """A literal JSONPath as get_json_object reads Jayway's; refused where it cannot."""
    p = path.strip()
    if not p.startswith("$"):
        p = "$." + p  # Jayway JsonPath reads 'a.b' as '$.a.b'
    p = re.sub(r'\["((?:[^"\\]|\\.)*)"\]', lambda m: "['" + m.group(1) + "']", p)
    # Jayway reads '$.[0]' as '$[0]' (a lone dot: '$..[0]' is a deep scan, refused below)
    p = re.sub(r"(?<!\.)\.\[", "[", p)
    for bad, what in (
        ("..", "deep scan ('..')"),
        ("?(", "a filter ('?(...)')"),
        ("[-", "a negative index"),
        ("()", "a function"),
        (":", "a slice"),
        ("','", "a union of keys"),
    ):
        if bad in p:
            raise _Fail(f"JSON path '{path}' uses {what}, which sparkpipes does not support")
    return p


def _json_value(args: list[_Node]) -> str:
    return f"get_json_object({args[0].sql}, {_json_path(args[1])})"


def _not_json(node: _Node) -> str | None:
    """Where Pinot's ``JsonFunctions.jsonPath`` throws for ``node``'s text: Jayway's
    ``PARSE_CONTEXT.parse`` of text that is not JSON (``InvalidJsonException``; empty text
    an ``IllegalArgumentException``). ``Option.SUPPRESS_EXCEPTIONS`` covers only the
    reading of the path, so a path that is absent gives null without throwing. JSON is
    judged by Spark's parser (``try_parse_json``), not Jackson's."""
    if node.type not in (None, "STRING") or node.is_null:
        return None
    return f"(({node.sql}) IS NOT NULL AND try_parse_json({node.sql}) IS NULL)"


def _json_throwing(build: Callable[[list[_Node]], str], t: str) -> _Build:
    """``build`` of a JSON-path function whose two-argument form throws for text that is
    not JSON (``jsonPathString(Object, String)``, ``jsonPath``, ``jsonPathArray``:
    ``JsonFunctions.java``, no try/catch); the forms with a default catch and return it."""

    def node(args: list[_Node]) -> _Node:
        return _Node(build(args), t, fails=_not_json(args[0]) if len(args) == 2 else None)

    return node


#: a JSONPath ``variant_get`` reads as ``get_json_object`` does (keys and indices)
_SIMPLE_PATH = re.compile(r"\$(?:\.\w+|\['[^'\\]*'\]|\[\d+\])*", re.ASCII)


def _is_boolean(args: list[_Node]) -> str:
    """SQL: the value at the path is a JSON boolean, not the string ``"true"`` (which
    get_json_object gives alike, and which Pinot reads as no number)."""
    path = args[1].literal(str)
    if path is _NOT:
        return "false"
    p = _jayway(path)
    if not _SIMPLE_PATH.fullmatch(p):
        return "false"
    value = f"try_variant_get(try_parse_json({args[0].sql}), {_str(p)})"
    return f"coalesce(schema_of_variant({value}) = 'BOOLEAN', false)"


def _flag(v: str, is_bool: str, one: str, zero: str) -> str:
    pick = f"CASE {v} WHEN 'true' THEN {one} ELSE {zero} END"
    return f"CASE WHEN {v} IN ('true', 'false') AND {is_bool} THEN {pick} END"


def _json_long(v: str, is_bool: str = "true") -> str:
    """A JSON value as Pinot's jsonPathLong reads it: a number cut to a whole one, a
    boolean 1 or 0 (JsonFunctions' numeric convention; ``is_bool``: SQL telling a boolean
    from the string ``"true"``)."""
    flag = _flag(v, is_bool, "1L", "0L")
    return f"coalesce(try_cast({v} AS BIGINT), try_cast(try_cast({v} AS DOUBLE) AS BIGINT), {flag})"


def _json_int(v: str, is_bool: str = "true") -> str:
    flag = _flag(v, is_bool, "1", "0")
    return f"coalesce(try_cast({v} AS INT), try_cast(try_cast({v} AS DOUBLE) AS INT), {flag})"


def _json_double(v: str, is_bool: str = "true") -> str:
    return f"coalesce(try_cast({v} AS DOUBLE), {_flag(v, is_bool, '1D', '0D')})"


def _json_typed(conv: Callable[[str, str], str], missing: str) -> _Build:
    def build(args: list[_Node]) -> str:
        value = conv(_json_value(args), _is_boolean(args))
        if len(args) > 2:
            return f"coalesce({value}, {args[2].sql})"
        return f"CASE WHEN {args[0].sql} IS NULL THEN NULL ELSE coalesce({value}, {missing}) END"

    return build


_def(
    "jsonPathString(json:S, path:S, default:S?) -> S",
    _json_throwing(
        lambda a: f"coalesce({_json_value(a)}, {a[2].sql})" if len(a) > 2 else _json_value(a),
        "STRING",
    ),
    "the value at path: a string as is, anything else as JSON text; NULL (or default) if absent",
)
_def("jsonPath(json:S, path:S) -> S", _json_throwing(_json_value, "STRING"), "as jsonPathString")
_def(
    "jsonPathLong(json:S, path:S, default:L?) -> L",
    _json_typed(_json_long, _LONG_MIN),
    "the value at path as BIGINT (fractions truncated); default, or Long.MIN_VALUE, if "
    "absent or not a number",
)
_def(
    "jsonPathInt(json:S, path:S, default:I?) -> I",
    _json_typed(_json_int, _INT_MIN),
    "as jsonPathLong, INT (Integer.MIN_VALUE)",
)
_def(
    "jsonPathDouble(json:S, path:S, default:D?) -> D",
    _json_typed(_json_double, "CAST('NaN' AS DOUBLE)"),
    "the value at path as DOUBLE; default, or NaN, if absent or not a number",
)


def _indefinite(path: _Node) -> bool:
    """Whether Jayway reads ``path`` as indefinite (a wildcard): it then gives a list of the
    matches, empty when nothing matches, never "absent"."""
    p = path.literal(str)
    return p is not _NOT and ("[*]" in p or ".*" in p)


def _json_array(args: list[_Node]) -> str:
    v = _json_value(args)
    found = (
        f"CASE WHEN {v} IS NULL THEN NULL WHEN startswith(ltrim({v}), '[') "
        f"THEN from_json({v}, 'array<string>') ELSE array({v}) END"
    )
    if not _indefinite(args[1]):
        return found
    return (
        f"CASE WHEN try_parse_json({args[0].sql}) IS NOT NULL "
        f"THEN coalesce({found}, CAST(array() AS ARRAY<STRING>)) END"
    )


def _json_exists(args: list[_Node]) -> str:
    """Pinot's evaluator gives NULL for a NULL argument; a wildcard path exists in any
    JSON document (its list of matches may be empty)."""
    j, p = args[0].sql, args[1].sql
    found = f"try_parse_json({j}) IS NOT NULL" if _indefinite(args[1]) else None
    found = found or f"{_json_value(args)} IS NOT NULL"
    return f"CASE WHEN {j} IS NULL OR {p} IS NULL THEN NULL ELSE ({found}) END"


_def(
    "jsonPathArray(json:S, path:S) -> A",
    _json_throwing(_json_array, "ARRAY<STRING>"),
    "the array at path as ARRAY<STRING> (strings as is, other elements as JSON text); a "
    "single value becomes a one-element array; NULL if absent",
)
_def(
    "jsonPathArrayDefaultEmpty(json:S, path:S) -> A",
    lambda a: f"coalesce({_json_array(a)}, CAST(array() AS ARRAY<STRING>))",
    "as jsonPathArray, an empty array if absent",
)
_def(
    "jsonPathExists(json:S, path:S) -> Z",
    _json_exists,
    "whether path has a non-null value",
)


def _json_format(args: list[_Node]) -> str:
    x, t = args[0].sql, args[0].type
    if t is not None and (t.startswith("ARRAY") or t.startswith("MAP") or t.startswith("STRUCT")):
        return f"to_json({x})"
    if _numeric(t) or t == "BOOLEAN":
        return f"CAST({x} AS STRING)"
    if t == "TIMESTAMP":
        return f"CAST(unix_millis({x}) AS STRING)"
    if t == "BINARY":
        return f"concat('\"', base64({x}), '\"')"
    quoted = f"regexp_extract(to_json(array({x})), '^\\\\[(.*)\\\\]$', 1)"
    return (
        f"CASE WHEN {x} IS NULL THEN NULL WHEN try_parse_json({x}) IS NOT NULL THEN {x} "
        f"ELSE {quoted} END"
    )


_def(
    "jsonFormat|toJsonMapStr(object:*) -> S",
    _json_format,
    "the value as JSON text; text that is JSON already (how sparkpipes carries nested "
    "records) is kept as it is, other text becomes a JSON string",
)


def _json_extract_scalar(args: list[_Node]) -> str:
    kind = _lit(args[2], str, "the result type of jsonExtractScalar").upper()
    value = _json_value(args)
    given = args[3] if len(args) > 3 else None
    types = {
        "STRING": ("STRING", value, "NULL"),
        "JSON": ("STRING", value, "NULL"),
        "INT": ("INT", _json_int(value), _INT_MIN),
        "LONG": ("BIGINT", _json_long(value), _LONG_MIN),
        "TIMESTAMP": ("TIMESTAMP", millis_ts(_json_long(value)), "NULL"),
        "FLOAT": ("FLOAT", f"try_cast({value} AS FLOAT)", "NULL"),
        "DOUBLE": ("DOUBLE", f"try_cast({value} AS DOUBLE)", "4.9E-324D"),
        "BIG_DECIMAL": ("DECIMAL(38,18)", f"try_cast({value} AS DECIMAL(38,18))", "NULL"),
        "BOOLEAN": ("BOOLEAN", f"(lower({value}) = 'true')", "false"),
    }
    if kind not in types:
        raise _Fail(f"result type '{kind}' is not one of {', '.join(types)}")
    t, sql, missing = types[kind]
    default = _as(given, t).sql if given is not None else missing
    return f"CASE WHEN {args[0].sql} IS NULL THEN NULL ELSE coalesce({sql}, {default}) END"


_def(
    "jsonExtractScalar(json:S, path:S, resultType:S, default:*?) -> X",
    _json_extract_scalar,
    "the value at path in resultType (INT, LONG, FLOAT, DOUBLE, BIG_DECIMAL, BOOLEAN, "
    "TIMESTAMP, STRING, JSON); default, else Pinot's (MIN_VALUE, false, NULL), if absent",
)

# --- misc -----------------------------------------------------------------------------

_def("isNull(value:*) -> Z", "({0} IS NULL)")
_def("isNotNull(value:*) -> Z", "({0} IS NOT NULL)")
_def("isDistinctFrom(a:*, b:*) -> Z", "({0} IS DISTINCT FROM {1})")
_def("isNotDistinctFrom(a:*, b:*) -> Z", "({0} IS NOT DISTINCT FROM {1})")
_def(
    "coalesce(value:*...) -> X",
    lambda a: f"coalesce({', '.join(n.sql for n in _unify(a))})",
    "the first non-NULL value",
)

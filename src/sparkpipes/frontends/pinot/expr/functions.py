"""The string, math and miscellaneous functions, registered in ``FUNCTIONS`` (the JSON ones:
:mod:`.json_functions`)."""

from __future__ import annotations

from sparkpipes.frontends.pinot.expr.core import (
    _NOT,
    _as,
    _Build,
    _def,
    _Fail,
    _lit,
    _Node,
    _str,
    _unify,
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

"""Pinot's JSON scalar functions (``JsonFunctions``: ``jsonPath*``, ``jsonFormat``,
``jsonExtractScalar`` …) in Spark SQL, paths read as Jayway reads them
(:mod:`.jsonpath`); registered in ``FUNCTIONS`` when imported."""

from __future__ import annotations

from collections.abc import Callable

from sparkpipes.frontends.pinot.expr.core import (
    _INT_MIN,
    _LONG_MIN,
    _NOT,
    _any,
    _as,
    _Build,
    _def,
    _Fail,
    _lit,
    _Node,
    _numeric,
    _str,
    millis_ts,
)
from sparkpipes.frontends.pinot.expr.jsonpath import _SIMPLE_PATH, PathCall, _jayway, path_call

# --- JSON -----------------------------------------------------------------------------


def _json_path(node: _Node) -> str:
    """The SQL of a JSONPath for get_json_object, checked when it is a literal."""
    path = node.literal(str)
    return node.sql if path is _NOT else _str(_jayway(path))


def _json_value(args: list[_Node]) -> str:
    """The value at the path as ``get_json_object`` gives it, but a JSON null array
    element NULL (it writes the text ``null``, which Jayway reads as null)."""
    path = _json_path(args[1])
    value = f"get_json_object({args[0].sql}, {path})"
    if args[1].literal(str) is _NOT or "*" in path or not path.endswith("]'"):
        return value
    json_null = f"is_variant_null(try_variant_get(try_parse_json({args[0].sql}), {path}))"
    return f"CASE WHEN {value} = 'null' AND {json_null} THEN NULL ELSE {value} END"


def _call(args: list[_Node], *refused: str) -> PathCall | None:
    """Jayway's read when the path is a literal that ends in a path function (``length()``,
    ``sum()`` …: :mod:`.jsonpath`); None for a plain path. A function whose result
    (``refused``: its kind) this Pinot function cannot be shown to convert as Pinot does
    is refused."""
    path = args[1].literal(str)
    call = None if path is _NOT else path_call(args[0], path)
    if call is not None and call.kind in refused:
        raise _Fail(
            f"JSON path '{path}' gives {call.name}()'s Java Set of keys, which sparkpipes "
            "does not convert here (jsonPathString gives them as a JSON array)"
        )
    return call


def _call_text(call: PathCall) -> str:
    """``jsonValueToString`` of a path function's result: a String as it is, anything
    else as ``JsonUtils.objectToString`` (Jackson) writes it: an Integer's digits, a
    Double as ``Double.toString`` (NaN and the infinities as JSON strings, quoted)."""
    if call.kind == "int":
        return f"CAST({call.value} AS STRING)"
    if call.kind == "double":
        v = call.value
        return (
            f"CASE WHEN isnan({v}) OR abs({v}) = double('Infinity') "
            f"THEN concat('\"', CAST({v} AS STRING), '\"') ELSE CAST({v} AS STRING) END"
        )
    return call.text


def _not_json(node: _Node) -> str | None:
    """Where Pinot's ``JsonFunctions.jsonPath`` throws for ``node``'s text: Jayway's
    ``PARSE_CONTEXT.parse`` of text that is not JSON (``InvalidJsonException``; empty text
    an ``IllegalArgumentException``). ``Option.SUPPRESS_EXCEPTIONS`` covers only the
    reading of the path, so a path that is absent gives null without throwing. JSON is
    judged by Spark's parser (``try_parse_json``), not Jackson's."""
    if node.type not in (None, "STRING") or node.is_null:
        return None
    return f"(({node.sql}) IS NOT NULL AND try_parse_json({node.sql}) IS NULL)"


def _json_throwing(build: Callable[[list[_Node]], str | _Node], t: str) -> _Build:
    """``build`` of a JSON-path function whose two-argument form throws for text that is
    not JSON (``jsonPathString(Object, String)``, ``jsonPath``, ``jsonPathArray``:
    ``JsonFunctions.java``, no try/catch), and where the path's function throws (Jayway's
    exception, not caught either); the forms with a default catch and return it."""

    def node(args: list[_Node]) -> _Node:
        built = build(args)
        sql, typ = (built.sql, built.type) if isinstance(built, _Node) else (built, t)
        if len(args) != 2:
            return _Node(sql, typ)
        call = _call(args)
        return _Node(sql, typ, fails=_any(_not_json(args[0]), call and call.throws))

    return node


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


def _java_whole(v: str, t: str) -> str:
    """Java's ``Double.longValue()`` / ``intValue()`` (``(long)`` / ``(int)``): toward
    zero, NaN 0, past the range its end."""
    if t == "BIGINT":  # 2^63 and -2^63 as doubles
        hi, lo, top, bottom = (
            "9223372036854775807L",
            _LONG_MIN,
            "9.2233720368547758E18D",
            "-9.2233720368547758E18D",
        )
    else:
        hi, lo, top, bottom = "2147483647", _INT_MIN, "2147483647D", "-2147483648D"
    return (
        f"CASE WHEN isnan({v}) THEN 0 WHEN {v} >= {top} THEN {hi} WHEN {v} <= {bottom} "
        f"THEN {lo} ELSE CAST({v} AS {t}) END"
    )


def _json_typed(conv: Callable[[str, str], str], missing: str, t: str) -> _Build:
    def build(args: list[_Node]) -> str:
        call = _call(args)
        if call is None:
            value = conv(_json_value(args), _is_boolean(args))
        elif call.kind == "json":
            value = conv(call.text, call.is_bool)
        elif call.kind == "keys":  # a Set's text is no number: Pinot's parse of it throws
            value = "NULL"
        elif t == "DOUBLE" or call.kind == "int":  # Number.longValue / doubleValue
            value = f"CAST({call.value} AS {t})"
        else:
            value = _java_whole(call.value, t)
        if len(args) > 2:
            return f"coalesce({value}, {args[2].sql})"
        return f"CASE WHEN {args[0].sql} IS NULL THEN NULL ELSE coalesce({value}, {missing}) END"

    return build


def _json_string(args: list[_Node]) -> str:
    call = _call(args)
    value = _json_value(args) if call is None else _call_text(call)
    return f"coalesce({value}, {args[2].sql})" if len(args) > 2 else value


def _json_path_object(args: list[_Node]) -> str | _Node:
    """``jsonPath``: the Object Jayway reads; a path function's Integer or Double keeps
    its type (the column converts it as Pinot converts that Java type)."""
    call = _call(args, "keys")
    if call is None:
        return _json_value(args)
    if call.kind == "json":
        return call.text
    return _Node(call.value, "INT" if call.kind == "int" else "DOUBLE")


_def(
    "jsonPathString(json:S, path:S, default:S?) -> S",
    _json_throwing(_json_string, "STRING"),
    "the value at path: a string as is, anything else as JSON text; NULL (or default) if absent",
)
_def(
    "jsonPath(json:S, path:S) -> S",
    _json_throwing(_json_path_object, "STRING"),
    "as jsonPathString; a path function's number keeps its type",
)
_def(
    "jsonPathLong(json:S, path:S, default:L?) -> L",
    _json_typed(_json_long, _LONG_MIN, "BIGINT"),
    "the value at path as BIGINT (fractions truncated); default, or Long.MIN_VALUE, if "
    "absent or not a number",
)
_def(
    "jsonPathInt(json:S, path:S, default:I?) -> I",
    _json_typed(_json_int, _INT_MIN, "INT"),
    "as jsonPathLong, INT (Integer.MIN_VALUE)",
)
_def(
    "jsonPathDouble(json:S, path:S, default:D?) -> D",
    _json_typed(_json_double, "CAST('NaN' AS DOUBLE)", "DOUBLE"),
    "the value at path as DOUBLE; default, or NaN, if absent or not a number",
)


def _indefinite(path: _Node) -> bool:
    """Whether Jayway reads ``path`` as indefinite (a wildcard): it then gives a list of the
    matches, empty when nothing matches, never "absent"."""
    p = path.literal(str)
    return p is not _NOT and ("[*]" in p or ".*" in p)


def _json_array(args: list[_Node]) -> str:
    call = _call(args, "keys")
    if call is not None and call.kind != "json":  # a number: a one-element array
        return f"CASE WHEN {call.value} IS NOT NULL THEN array(CAST({call.value} AS STRING)) END"
    v = _json_value(args) if call is None else call.text
    found = (
        f"CASE WHEN {v} IS NULL THEN NULL WHEN startswith(ltrim({v}), '[') "
        f"THEN from_json({v}, 'array<string>') ELSE array({v}) END"
    )
    if call is not None or not _indefinite(args[1]):
        return found
    return (
        f"CASE WHEN try_parse_json({args[0].sql}) IS NOT NULL "
        f"THEN coalesce({found}, CAST(array() AS ARRAY<STRING>)) END"
    )


def _json_exists(args: list[_Node]) -> str:
    """Pinot's evaluator gives NULL for a NULL argument; a wildcard path exists in any
    JSON document (its list of matches may be empty); a path function that throws gives
    false (``jsonPathExists`` catches)."""
    j, p = args[0].sql, args[1].sql
    call = _call(args)
    if call is not None:
        v = call.value if call.kind in ("int", "double") else call.text
        found = f"{v} IS NOT NULL"
    else:
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

"""Pinot's JSON paths: Jayway JsonPath 2.10.0 (``jsonpath.version`` in apache/pinot
210c2951e72's pom.xml), read by ``JsonFunctions``' ``PARSE_CONTEXT``: Jackson's provider
(numbers are Integer, Long, BigInteger or Double; objects keep their order), the option
``SUPPRESS_EXCEPTIONS`` (an absent path reads null) and no try/catch around a path
function, whose exception is the Pinot function's.

:func:`_jayway` checks a path as Spark's ``get_json_object`` / ``variant_get`` read it;
:func:`path_call` writes a path that ends in one of Jayway's path functions
(``internal/function/PathFunctionFactory.java``) in Spark SQL. Supported, as Jayway's
classes compute them (``internal/function/…``), after a path of keys and indices:

* ``length()`` / ``size()`` (``text/Length``): an array's elements, an object's keys, as
  an Integer; anything else null;
* ``sum()``, ``avg()``, ``min()``, ``max()``, ``stddev()`` (``numeric/…``): Doubles over
  the numbers of the array (other elements skipped) and of the arguments (JSON numbers,
  ``$`` paths with at most one wildcard, read from the document's root: a number, or the
  numbers of an array, or of a wildcard's matches), in their order; none (an empty array,
  no array, no number) throws "Aggregation function attempted to calculate value using
  empty array". ``max`` starts from ``Double.MIN_VALUE`` (so negative numbers give
  4.9E-324), ``min`` from ``Double.MAX_VALUE``; ``stddev`` is
  ``sqrt(sumSq/n - sum*sum/n/n)`` (NaN where rounding makes it negative);
* ``first()``, ``last()``, ``index(i)`` (``sequence/…``): the element; not an array
  throws, ``first()`` of an empty array and an index past the end throw
  (IndexOutOfBounds), and ``last()`` / a negative index throw unless ``size + i > 0``
  (so ``last()`` of a one-element array throws, as Jayway's check is ``> 0``);
* ``keys()`` (``json/KeySetFunction``): an object's keys in order (a Set); else null.

Refused by name: ``concat()``, ``append()``, ``length(path)``, a function after a
wildcard or a deep scan, a function before the path's end, other arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparkpipes.frontends.pinot.expr.core import _Fail, _Node, _str


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
        ("(", "a function"),
        (":", "a slice"),
        ("','", "a union of keys"),
    ):
        if bad in p:
            raise _Fail(f"JSON path '{path}' uses {what}, which sparkpipes does not support")
    return p


#: a JSONPath ``variant_get`` reads as ``get_json_object`` does (keys and indices)
_SIMPLE_PATH = re.compile(r"\$(?:\.\w+|\['[^'\\]*'\]|\[\d+\])*", re.ASCII)
#: Jayway 2.10.0's path functions (PathFunctionFactory.FUNCTIONS)
_JAYWAY_FUNCTIONS = frozenset(
    {"avg", "stddev", "sum", "min", "max", "concat", "length", "size", "append", "keys"}
    | {"first", "last", "index"}
)
_AGGREGATIONS = frozenset({"sum", "avg", "min", "max", "stddev"})
#: a JSON number as a function argument (Jayway parses it with its JSON provider)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_EMPTY = "CAST(array() AS ARRAY<DOUBLE>)"


@dataclass(frozen=True)
class PathCall:
    """Jayway's read of a path ending in a function, for one record, in SQL.

    ``kind``: what the function returns: ``"int"`` (an Integer: ``value``), ``"double"``
    (a Double: ``value``), ``"json"`` (an element of the document: ``text`` as
    get_json_object gives it, ``is_bool`` telling a JSON boolean) or ``"keys"`` (a Set of
    keys: ``text`` their JSON array). Each is NULL where Jayway's read is null (the path
    before the function is absent, the function gives null) or throws; ``throws`` is
    true where it throws (the document parsed)."""

    name: str
    kind: str
    value: str = "NULL"
    text: str = "NULL"
    is_bool: str = "false"
    throws: str | None = None


def _split(p: str) -> tuple[str, str, str] | None:
    """``(prefix, name, arguments)`` of a path that calls a function (``p`` trimmed, with
    its ``$``); None without one. What Jayway would not read as a function at the path's
    end is left to :func:`_jayway` or refused."""
    if "(" not in p or "?(" in p:
        return None
    i = p.index("(")
    m = re.search(r"\.([^.\[\]()'\"\s]*)$", p[:i])
    if m is None or not m.group(1):
        raise _Fail(f"JSON path '{p}' uses a function, which sparkpipes does not support")
    depth = 0
    for j in range(i, len(p)):
        depth += {"(": 1, ")": -1}.get(p[j], 0)
        if depth == 0:
            break
    if depth != 0 or j != len(p) - 1:
        raise _Fail(
            f"JSON path '{p}' uses a function before the end of the path, which sparkpipes "
            "does not support"
        )
    return p[: m.start()] or "$", m.group(1), p[i + 1 : -1]


def _arguments(text: str) -> list[str]:
    """The arguments of a function call, split at its top-level commas."""
    out, depth, quote, cur = [], 0, "", ""
    for c in text:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "[({":
            depth += 1
        elif c in "])}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    return [a for a in [*out, cur.strip()] if a] if text.strip() else []


def path_call(json: _Node, path: str) -> PathCall | None:
    """Jayway's read of literal ``path`` over ``json``'s text when the path ends in a
    function; None when it calls none. Refused (``_Fail``) where sparkpipes cannot
    compute it as Jayway does."""
    p = path.strip()
    if not p.startswith("$"):
        p = "$." + p
    split = _split(p)
    if split is None:
        return None
    prefix, name, args_text = split
    shown = f"JSON path '{path}'"
    if name not in _JAYWAY_FUNCTIONS:
        raise _Fail(f"{shown} calls {name}(), which is no Jayway JsonPath function")
    if name in ("concat", "append"):
        raise _Fail(f"{shown} uses the function {name}(), which sparkpipes does not support")
    pre = _jayway(prefix)
    if not _SIMPLE_PATH.fullmatch(pre):
        raise _Fail(
            f"{shown} uses a function after a wildcard, which sparkpipes does not support "
            "(Jayway calls it on each match)"
        )
    args = _arguments(args_text)
    doc = f"try_parse_json({json.sql})"
    reached = f"({_at(doc, pre)} IS NOT NULL)"
    if name in _AGGREGATIONS:
        return _aggregation(name, doc, json.sql, pre, reached, args, shown)
    if name == "index":
        if len(args) != 1 or not re.fullmatch(r"-?\d{1,9}", args[0]):
            raise _Fail(f"{shown}: index() takes one whole number, which sparkpipes supports")
        return _element(name, doc, json.sql, pre, reached, int(args[0]))
    if args:
        raise _Fail(f"{shown} gives {name}() arguments, which sparkpipes does not support")
    if name in ("length", "size"):
        arr, obj = _at(doc, pre, "array<variant>"), _at(doc, pre, "map<string,variant>")
        n = f"coalesce(array_size({arr}), CASE WHEN {obj} IS NOT NULL THEN size({obj}) END)"
        return PathCall(name, "int", value=n)
    if name == "keys":
        obj = _at(doc, pre, "map<string,variant>")
        keys = f"to_json(json_object_keys(get_json_object({json.sql}, {_str(pre)})))"
        return PathCall(name, "keys", text=f"CASE WHEN {obj} IS NOT NULL THEN {keys} END")
    return _element(name, doc, json.sql, pre, reached, 0 if name == "first" else -1)


def _at(doc: str, path: str, t: str | None = None) -> str:
    """The variant at ``path`` of ``doc`` (NULL if absent), or its ``t`` (NULL if not)."""
    if path == "$" and t is None:
        return doc
    return f"try_variant_get({doc}, {_str(path)}{'' if t is None else f', {_str(t)}'})"


def _is_number(e: str) -> str:
    t = f"schema_of_variant({e})"
    kinds = "'TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE'"
    return f"({t} IN ({kinds}) OR {t} LIKE 'DECIMAL%')"


def _double(e: str) -> str:
    """A JSON number as Jackson's ``Number.doubleValue()``: a double as it is, an integer
    or decimal by its exact text (``Double.parseDouble``, correctly rounded, as
    ``Long`` / ``BigInteger.doubleValue`` and Jackson's parse of a fraction)."""
    return (
        f"CASE WHEN schema_of_variant({e}) IN ('DOUBLE', 'FLOAT') THEN variant_get({e}, '$', "
        f"'double') ELSE CAST(to_json({e}) AS DOUBLE) END"
    )


def _numbers(arr: str) -> str:
    """The doubles of the numbers of variant array ``arr`` (other elements skipped: Jayway
    keeps each ``instanceof Number``), in order."""
    return f"transform(filter({arr}, jp_e -> {_is_number('jp_e')}), jp_e -> {_double('jp_e')})"


def _argument_numbers(doc: str, json: str, arg: str, shown: str) -> str:
    """The numbers an aggregation's argument adds (``Parameter.toList(Number.class)``):
    a JSON number itself; a path read from the document's root: the numbers of its array,
    or the number it is, or, with a wildcard, the numbers among its matches."""
    if _NUMBER.fullmatch(arg):
        return f"array(CAST({_str(arg)} AS DOUBLE))"
    if not arg.startswith("$"):
        raise _Fail(f"{shown}: the argument '{arg}' is not a number or a '$' path")
    p = _jayway(arg)
    if _SIMPLE_PATH.fullmatch(p):
        x = _at(doc, p)
        single = f"CASE WHEN {_is_number(x)} THEN array({_double(x)}) END"
        return f"coalesce({_numbers(_at(doc, p, 'array<variant>'))}, {single}, {_EMPTY})"
    wild = list(re.finditer(r"\[\*\]|\.\*", p))
    left, right = (p[: wild[0].start()], "$" + p[wild[0].end() :]) if len(wild) == 1 else ("", "")
    if not (_SIMPLE_PATH.fullmatch(left) and _SIMPLE_PATH.fullmatch(right)):
        raise _Fail(f"{shown}: the argument '{arg}' has more than one wildcard or a union")
    # a wildcard's matches: an array's elements, an object's values in its order
    obj = _at(doc, left, "map<string,variant>")
    keys = f"json_object_keys(get_json_object({json}, {_str(left)}))"
    values = (
        f"element_at(transform(array({obj}), jp_m -> CASE WHEN jp_m IS NOT NULL THEN "
        f"transform({keys}, jp_k -> element_at(jp_m, jp_k)) END), 1)"
    )
    children = f"coalesce({_at(doc, left, 'array<variant>')}, {values})"
    matches = children if right == "$" else f"transform({children}, jp_c -> {_at('jp_c', right)})"
    return f"coalesce({_numbers(matches)}, {_EMPTY})"


def _aggregation(
    name: str, doc: str, json: str, pre: str, reached: str, args: list[str], shown: str
) -> PathCall:
    own = f"coalesce({_numbers(_at(doc, pre, 'array<variant>'))}, {_EMPTY})"
    parts = [own, *(_argument_numbers(doc, json, a, shown) for a in args)]
    nums = parts[0] if len(parts) == 1 else f"concat({', '.join(parts)})"
    n = "CAST(size(jp_ns) AS DOUBLE)"
    total = "aggregate(jp_ns, 0D, (jp_a, jp_x) -> jp_a + jp_x)"
    agg = {
        "sum": total,
        "avg": f"({total} / {n})",
        "min": "aggregate(jp_ns, 1.7976931348623157E308D, "
        "(jp_a, jp_x) -> CASE WHEN jp_a > jp_x THEN jp_x ELSE jp_a END)",
        "max": "aggregate(jp_ns, 4.9E-324D, "
        "(jp_a, jp_x) -> CASE WHEN jp_a < jp_x THEN jp_x ELSE jp_a END)",
        "stddev": "aggregate(jp_ns, named_struct('s', 0D, 'q', 0D), (jp_a, jp_x) -> "
        "named_struct('s', jp_a.s + jp_x, 'q', jp_a.q + jp_x * jp_x), "
        f"jp_a -> sqrt(jp_a.q / {n} - jp_a.s * jp_a.s / {n} / {n}))",
    }[name]
    value = (
        f"CASE WHEN {reached} THEN element_at(transform(array({nums}), jp_ns -> "
        f"CASE WHEN size(jp_ns) > 0 THEN {agg} END), 1) END"
    )
    return PathCall(name, "double", value=value, throws=f"({reached} AND size({nums}) = 0)")


def _element(name: str, doc: str, json: str, pre: str, reached: str, i: int) -> PathCall:
    """``first()`` (0), ``last()`` (-1), ``index(i)``: ``AbstractSequenceAggregation``."""
    arr = _at(doc, pre, "array<variant>")
    size = f"array_size({arr})"
    if i >= 0:
        ok, idx = f"({size} > {i})", str(i)
        at = f"get_json_object({json}, {_str(pre + f'[{i}]')})"
    else:
        ok, idx = f"({size} + {i} > 0)", f"({size} + {i})"
        inner = f"get_json_object({json}, {_str(pre)})"
        at = f"get_json_object({inner}, concat('$[', CAST({idx} AS STRING), ']'))"
    e = f"CASE WHEN {ok} THEN element_at({arr}, {idx} + 1) END"
    text = f"CASE WHEN {ok} AND NOT is_variant_null({e}) THEN {at} END"
    is_bool = f"coalesce(schema_of_variant({e}) = 'BOOLEAN', false)"
    throws = f"({reached} AND NOT coalesce({ok}, false))"
    return PathCall(name, "json", text=text, is_bool=is_bool, throws=throws)

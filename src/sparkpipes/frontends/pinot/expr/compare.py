"""Pinot's comparison operators as its ingestion evaluates them.

Pinot's ``InbuiltFunctionEvaluator`` looks functions up by their number of arguments
(``FunctionRegistry.lookupFunctionInfo(name, int)``), so a comparison gets the variant its
polymorphic function keeps "for backward compatibility": the DOUBLE one
(``PolymorphicComparisonScalarFunction.defaultFunctionInfo``, ``BetweenScalarFunction``).
Every operand is converted to a double as ``FunctionInvoker.convertTypes`` converts it,
text by ``Double.parseDouble``, so text that is no number throws (Pinot's own
``RecordTransformerTest``: the filter ``svInt = 'abc'`` fails at run time), however
``country = 'US'`` reads. ``=`` and ``!=`` are ``doubleEqualsWithTolerance`` /
``doubleNotEqualsWithTolerance`` (``|a - b| < 1e-7``); the orderings and ``BETWEEN`` are
Java's ``double`` comparisons, false for NaN. A boolean operand keeps the boolean
comparison: a JSON ``true`` reaches Pinot as a ``Boolean`` (1.0), which a field's text
cannot be told from here.

``IN`` has no scalar function in Pinot (``Unsupported function: in``), so its controller
refuses the table; so does this. ``LIKE`` is Pinot's ``like`` scalar: the pattern made a
regular expression by ``RegexpPatternConverterUtils.likeToRegexpLike`` and matched
case-insensitively (``PatternFactory.compile(regex, true)``: ``UNICODE_CASE |
CASE_INSENSITIVE``) by ``find``, which Spark's ``RLIKE`` (``java.util.regex``, ``find``)
does the same way.
"""

from __future__ import annotations

import math
import re

from sparkpipes.frontends.pinot.expr.core import (
    _NOT,
    _as,
    _compare_types,
    _Literal,
    _Node,
    _numeric,
    _operand_fails,
    _str,
    _with,
)

#: Pinot's ``DOUBLE_COMPARISON_TOLERANCE``
_TOLERANCE = "1.0E-7D"
#: what ``RegexpPatternConverterUtils`` escapes (a backslash is handled on its own)
_META = frozenset("^$.{}[]()*+?|<>-&/")
#: a text literal read at plan time: the decimal numbers ``Double.parseDouble`` reads the
#: same as Python, after its ``trim()`` (other text is left to Spark's reading)
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_JAVA_BLANK = "".join(map(chr, range(33)))


def _double(n: _Node) -> _Node:
    """``n`` converted to a double as Pinot converts an argument."""
    text = n.literal(str)
    if text is not _NOT and _DECIMAL.fullmatch(text.strip(_JAVA_BLANK)):
        value = float(text.strip(_JAVA_BLANK))
        if math.isfinite(value):
            return _Node(f"{value!r}D", "DOUBLE", _Literal(value), n.pos)
    return n if n.type == "DOUBLE" or n.is_null else _as(n, "DOUBLE")


def _doubles(nodes: list[_Node]) -> list[_Node] | None:
    """``nodes`` as the doubles Pinot compares, or None where one is a boolean, an array
    or bytes (compared as before: Pinot's conversion of them is not a text's)."""
    for n in nodes:
        if n.is_null or n.type in (None, "STRING", "TIMESTAMP") or _numeric(n.type):
            continue
        return None
    return [_double(n) for n in nodes]


def _not_nan(*nodes: _Node) -> list[str]:
    """Guards that make a Spark comparison Java's: Spark orders NaN above every number,
    Java's ``<`` and ``>=`` are false for it."""
    return [f"NOT isnan({n.sql})" for n in nodes if n.lit is None]


def _all(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def compare(op: str, left: _Node, right: _Node) -> _Node:
    """``left op right`` (``op`` one of ``= != < <= > >=``) as Pinot's ingestion
    evaluates it."""
    doubles = _doubles([left, right])
    if doubles is None:
        a, b = _compare_types([left, right])
        node = _Node(f"({a.sql} {op} {b.sql})", "BOOLEAN", pos=left.pos)
        return _with(node, left, right, extra=_operand_fails([left, right], [a, b]))
    a, b = doubles
    if op in ("=", "!="):
        diff = f"abs({a.sql} - {b.sql})"
        # NaN: Java's |NaN| < tol and |NaN| >= tol are both false
        sql = (
            f"({diff} < {_TOLERANCE})"
            if op == "="
            else _all([*_not_nan(_Node(f"({a.sql} - {b.sql})")), f"({diff} >= {_TOLERANCE})"])
        )
    else:
        sql = _all([*_not_nan(a, b), f"({a.sql} {op} {b.sql})"])
    node = _Node(sql, "BOOLEAN", pos=left.pos)
    return _with(node, left, right, extra=_operand_fails([left, right], [a, b]))


def between(x: _Node, low: _Node, high: _Node, negate: bool) -> _Node:
    """``x [NOT] BETWEEN low AND high``: Pinot's ``between`` (DOUBLE variant), under
    ``NOT`` when negated."""
    doubles = _doubles([x, low, high])
    if doubles is None:
        a, lo, hi = _compare_types([x, low, high])
        sql = f"({a.sql} {'NOT ' if negate else ''}BETWEEN {lo.sql} AND {hi.sql})"
        return _with(_Node(sql, "BOOLEAN", pos=x.pos), x, low, high)
    a, lo, hi = doubles
    inside = _all([*_not_nan(a, lo, hi), f"({a.sql} >= {lo.sql})", f"({a.sql} <= {hi.sql})"])
    node = _Node(f"(NOT {inside})" if negate else inside, "BOOLEAN", pos=x.pos)
    return _with(node, x, low, high, extra=_operand_fails([x, low, high], doubles))


def like_regex(pattern: str) -> str:
    """The regular expression Pinot's ``likeToRegexpLike`` makes of a LIKE pattern: ``_``
    any one character, ``%`` any run, each unless after a backslash; a pattern that
    starts (ends) with ``%`` is not anchored there; regex metacharacters escaped, and
    any character after a backslash."""
    if not pattern:
        return "^$"
    prefix, suffix = "^", "$"
    if pattern == "%":
        return ""
    if len(pattern) > 1:
        if pattern[0] == "%":
            stripped = pattern.lstrip("%")
            if not stripped:
                return ""
            pattern, prefix = stripped, ""
        if pattern[-1] == "%":
            pattern, suffix = pattern.rstrip("%"), ""
    out = [prefix]
    after_backslash = False
    for c in pattern:
        if c == "_":
            out.append(c if after_backslash else ".")
        elif c == "%":
            out.append(c if after_backslash else ".*")
        else:
            if c in _META or after_backslash:
                out.append("\\")
            out.append(c)
        after_backslash = c == "\\"
    if after_backslash:
        out.append("\\")
    out.append(suffix)
    return "".join(out)


def like(x: _Node, pattern: str, negate: bool) -> _Node:
    """``x [NOT] LIKE 'pattern'``: Pinot's ``like`` scalar, under ``NOT`` when negated."""
    text = _as(x, "STRING")
    regex = _str("(?iu)" + like_regex(pattern))
    sql = f"({text.sql} RLIKE {regex})"
    return _with(_Node(f"(NOT {sql})" if negate else sql, "BOOLEAN", pos=x.pos), text)

"""Types and values of the JVM-free query path (``quick``): which Spark type a column, a
literal or an aggregate has, whether DataFusion's result type delivers the same Python
values, and whether Spark compares two values as DataFusion does.

Everything here either answers for certain or raises ``_Fallback`` (the query is Spark's to
answer); ``quick_plan`` builds on it, ``quick_run`` checks results with it. Imports pyarrow
and sqlglot on use only.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

_INT64 = 2**63 - 1
_EXACT_DOUBLE = 2**53  # integers up to this add up exactly as doubles, in any order


class _Fallback(Exception):
    """The query is Spark's to answer."""


# -- types ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _T:
    kind: str  # int, dec, float, str, bool, date, null
    p: int = 0  # int: digits of the type as Spark widens it to a decimal; dec: precision
    s: int = 0  # dec: scale
    exact: bool = False  # float: never NaN or -0.0 (an average of integers)


_BIGINT = _T("int", 20)
_ORDERED = ("int", "dec", "str", "bool", "date")


def _arrow_type(t: Any) -> _T | None:
    import pyarrow as pa

    if pa.types.is_signed_integer(t):
        return _T("int", {8: 3, 16: 5, 32: 10, 64: 20}[t.bit_width])
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return _T("float")
    if pa.types.is_decimal128(t):
        return _T("dec", t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _T("str")
    if pa.types.is_boolean(t):
        return _T("bool")
    if pa.types.is_date32(t):
        return _T("date")
    return None


def _delivers(arrow: Any, t: _T) -> bool:
    """Whether DataFusion's result type ``arrow`` gives Python values of Spark's type ``t``."""
    import pyarrow as pa

    if t.kind == "null":
        return pa.types.is_null(arrow)
    got = _arrow_type(arrow)
    if got is None or got.kind != t.kind:
        return False
    return t.kind != "dec" or (got.p, got.s) == (t.p, t.s)


@dataclass(frozen=True)
class _E:
    """A checked expression: its DataFusion SQL, Spark type and Spark's name for it."""

    sql: str
    t: _T
    name: str
    agg: bool = False
    text: str | None = None  # a string literal's value
    avg_of: str | None = None  # avg(decimal column): computed from sum and count afterwards


@dataclass(frozen=True)
class _Item:
    e: _E
    name: str
    alias: bool


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _only(node: Any, *allowed: str) -> None:
    for k, v in node.args.items():
        if k not in allowed and k != "_type" and v not in (None, False, []):
            raise _Fallback


def _literal(node: Any) -> _E:
    """A literal as Spark types and names it (``-1``, ``1.50``, ``'a'``, ``DATE '…'`` …)."""
    from sqlglot import exp

    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
        if not isinstance(node, exp.Literal) or node.is_string:
            raise _Fallback
    if isinstance(node, exp.Null):
        return _E("NULL", _T("null"), "NULL")
    if isinstance(node, exp.Boolean):
        return _E("TRUE" if node.this else "FALSE", _T("bool"), str(bool(node.this)).lower())
    if isinstance(node, exp.Cast):  # DATE '…' (a CAST or a call is refused by its tokens)
        _only(node, "this", "to")
        lit = node.this
        if not node.to.is_type("date") or not isinstance(lit, exp.Literal) or not lit.is_string:
            raise _Fallback
        day = _date(lit.this)
        return _E(f"DATE '{day}'", _T("date"), f"DATE '{day}'")
    if not isinstance(node, exp.Literal):
        raise _Fallback
    _only(node, "this", "is_string")
    raw = node.this
    if node.is_string:
        return _E("'" + raw.replace("'", "''") + "'", _T("str"), raw, text=raw)
    if re.fullmatch(r"\d+", raw):
        v = -int(raw) if negative else int(raw)
        if not -_INT64 <= v <= _INT64:
            raise _Fallback
        return _E(str(v), _T("int", 10 if -(2**31) <= v < 2**31 else 20), str(v))
    if re.fullmatch(r"\d+\.\d+", raw):
        d = -Decimal(raw) if negative else Decimal(raw)
        _, digits, exponent = d.as_tuple()
        scale = -int(exponent)
        precision = max(len(digits), scale)
        name = str(d)
        if (negative and not d) or precision > 38:
            raise _Fallback  # Spark names -0.0 "0.0"
        return _E(
            f"CAST('{d:f}' AS DECIMAL({precision}, {scale}))", _T("dec", precision, scale), name
        )
    raise _Fallback


def _date(text: str) -> dt.date:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise _Fallback  # Spark's casts take more forms than a strict date
    return dt.date.fromisoformat(text)


def _comparable(a: _E, b: _E) -> tuple[_E, _E]:
    """``a`` and ``b`` if Spark compares them as DataFusion does (a string literal against
    a date becomes a date, as Spark casts it); else Spark's to answer."""
    if a.t.kind == "date" and b.text is not None:
        b = _E(f"DATE '{_date(b.text)}'", _T("date"), b.name)
    if b.t.kind == "date" and a.text is not None:
        a = _E(f"DATE '{_date(a.text)}'", _T("date"), a.name)
    x, y = a.t, b.t
    if "null" in (x.kind, y.kind):
        return a, b
    numbers = ("int", "dec", "float")
    if x.kind in numbers and y.kind in numbers:
        if (x.kind == "float" and not x.exact) or (y.kind == "float" and not y.exact):
            raise _Fallback
        if "float" in (x.kind, y.kind) or x.kind == y.kind == "int":
            return a, b
        digits = max(x.p - x.s, y.p - y.s) + max(x.s, y.s)
        if digits > 38:
            raise _Fallback  # Spark would round to a common decimal type
        return a, b
    if x.kind != y.kind or x.kind == "float":
        raise _Fallback
    return a, b

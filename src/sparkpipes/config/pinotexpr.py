"""Pinot ingestion expressions (``transformFunction``, ``filterFunction``) → Spark SQL.

:func:`translate` reads one Pinot expression and writes the Spark SQL that computes the
same value over a record, Pinot's function semantics included; :func:`filter_sql` writes
the condition of the records a Pinot ``filterFunction`` keeps. Errors are
:class:`~sparkpipes.errors.ConfigError` messages that begin with the caller's ``where``.

What the SQL reads and returns:

* every record field (``ts``, ``"a.b"``, ``"__metadata$offset"``) is the column
  ```@name``` — a pipeline variable, which sparkpipes loads as text (nested values as JSON
  text). Arguments are converted to the type the Pinot function declares (``long millis``
  → BIGINT, ``String`` → STRING …) with ``try_cast``, so a value that does not convert is
  NULL rather than a failed batch; a comparison or arithmetic between a field and a number
  compares / computes numerically.
* Pinot's epoch millis are BIGINT; date-time functions work in UTC unless given a time
  zone, and never depend on ``spark.sql.session.timeZone`` (they compute on
  TIMESTAMP_NTZ wall clocks and explicit zone conversions, not Spark's zone-dependent
  ``date_format`` / ``year`` on TIMESTAMP).
* a function returns NULL when an argument is NULL, as Pinot's scalar functions do, except
  where Pinot's takes a default (``jsonPathString(json, path, default)`` …).
* division and remainder by zero are NULL (Pinot's doubles give Infinity / NaN; Spark's
  ANSI mode would fail the batch).

:data:`FUNCTIONS` lists every function: its name lower-cased without underscores (Pinot
matches names that way, so ``to_epoch_seconds`` is ``toEpochSeconds``) → its
:class:`Function` (Pinot's spelling, parameters, argument count, what it returns).
``Groovy({...}, ...)`` is refused: a Groovy script is arbitrary code.
"""

from __future__ import annotations

import difflib
import re
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from sparkpipes.errors import ConfigError

__all__ = ["FUNCTIONS", "Function", "PinotExpr", "filter_sql", "translate"]


@dataclass(frozen=True)
class PinotExpr:
    """One translated expression.

    ``sql`` is Spark SQL text, parenthesised as needed so it can be embedded anywhere;
    ``fields`` are the record fields it reads (each is the column ```@name``` in ``sql``),
    in order of first appearance, without duplicates.
    """

    sql: str
    fields: tuple[str, ...]
    #: the Spark type of the result where it is known (BIGINT for epoch millis …)
    type: str | None = None


def translate(expr: str, *, where: str) -> PinotExpr:
    """The Spark SQL of the Pinot expression ``expr`` (a ``transformFunction``).

    Raises :class:`ConfigError`, its message starting with ``where``, for an empty or
    malformed expression, an unknown function (naming the nearest known one), a wrong
    number of arguments, an argument a function needs as a literal (a date pattern, a JSON
    type …) given otherwise, and ``Groovy(...)``.
    """
    node, fields = _Parser(expr, where, "transform").parse()
    return PinotExpr(node.sql, fields, node.type)


def filter_sql(expr: str, *, where: str) -> PinotExpr:
    """The Spark SQL condition of the records a Pinot ``filterFunction`` keeps.

    Pinot drops a record for which the filter is true, so this is
    ``NOT coalesce((<filter>), false)``: a record whose filter is false or NULL is kept.
    Errors as for :func:`translate`.
    """
    node, fields = _Parser(expr, where, "filter").parse()
    cond = _as(node, "BOOLEAN").sql
    return PinotExpr(f"(NOT coalesce(({cond}), false))", fields)


# ---------------------------------------------------------------------------------------
# typed SQL fragments

#: the record fields are text; ``None`` below means "a field's text, or not known"
_INTEGRAL = ("BIGINT", "INT")
_FRACTIONAL = ("DOUBLE", "FLOAT")
_EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
_LONG_MIN = "(-9223372036854775807L - 1L)"
_INT_MIN = "(-2147483647 - 1)"


class _Literal:
    """Marks a node that is a literal; ``value`` is its Python value."""

    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass(frozen=True)
class _Node:
    sql: str
    type: str | None = None  # Spark type when known (BIGINT, DOUBLE, STRING, ...)
    lit: _Literal | None = None
    pos: int = 0

    @property
    def is_null(self) -> bool:
        return self.lit is not None and self.lit.value is None

    def literal(self, kind: type | tuple[type, ...]) -> Any:
        """The literal's value if this node is a literal of ``kind``, else ``_NOT``."""
        if self.lit is None or not isinstance(self.lit.value, kind):
            return _NOT
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(self.lit.value, bool) and bool not in kinds:
            return _NOT
        return self.lit.value


_NOT = object()


def _numeric(t: str | None) -> bool:
    return t is not None and (t in _INTEGRAL or t in _FRACTIONAL or t.startswith("DECIMAL"))


def _str(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _s(text: str) -> _Node:
    return _Node(_str(text), "STRING", _Literal(text))


def _typed(sql: str, t: str | None) -> _Node:
    return _Node(sql, t)


def _as(n: _Node, t: str) -> _Node:
    """``n`` converted to Spark type ``t`` the way Pinot converts an argument."""
    src = n.type
    if src == t or n.is_null:
        return replace(n, type=t)
    number = n.literal((int, float))
    if number is not _NOT:  # a number literal stays one (builders read literal arguments)
        if (
            t in _INTEGRAL
            and isinstance(number, int)
            and abs(number) < 2 ** (31 if t == "INT" else 63)
        ):
            sql = str(abs(number)) + ("L" if t == "BIGINT" else "")
            return replace(n, sql=f"(-{sql})" if number < 0 else sql, type=t)
        if t == "DOUBLE":
            sql = f"{float(abs(number))!r}D"
            return replace(n, sql=f"(-{sql})" if number < 0 else sql, type=t)
    x = n.sql
    if t in _INTEGRAL:
        if src == "TIMESTAMP":
            sql = f"unix_millis({x})"
            return _typed(sql if t == "BIGINT" else f"try_cast({sql} AS INT)", t)
        if src in _INTEGRAL and t == "BIGINT":
            return replace(n, type=t)
        if src == "BOOLEAN":
            return _typed(f"CAST({x} AS {t})", t)
        return _typed(f"try_cast({x} AS {t})", t)
    if t in _FRACTIONAL or t.startswith("DECIMAL"):
        if src == "TIMESTAMP":
            return _typed(f"CAST(unix_millis({x}) AS {t})", t)
        if _numeric(src) or src == "BOOLEAN":
            return _typed(f"CAST({x} AS {t})", t)
        return _typed(f"try_cast({x} AS {t})", t)
    if t == "STRING":
        if src is None:
            return replace(n, type=t)
        if src == "TIMESTAMP":
            return _typed(f"CAST({_ntz(f'unix_millis({x})')} AS STRING)", t)
        if src == "BINARY":
            return _typed(f"lower(hex({x}))", t)
        if src.startswith("ARRAY"):
            return _typed(f"to_json({x})", t)
        return _typed(f"CAST({x} AS STRING)", t)
    if t == "BOOLEAN":
        if _numeric(src):
            return _typed(f"({x} != 0)", t)
        return _typed(f"try_cast({x} AS BOOLEAN)", t)
    if t == "TIMESTAMP":
        if _numeric(src):
            return _typed(f"timestamp_millis({_as(n, 'BIGINT').sql})", t)
        return _typed(_text_to_timestamp(x), t)
    if t == "BINARY":
        if src in (None, "STRING"):
            return _typed(f"unhex({x})", t)  # Pinot's STRING → BYTES reads hex
        return _typed(f"try_cast({x} AS BINARY)", t)
    if t == "ARRAY<STRING>":
        if src is not None and src.startswith("ARRAY"):
            return _typed(f"CAST({x} AS ARRAY<STRING>)", t)
        return _typed(f"array({_as(n, 'STRING').sql})", t)
    return _typed(f"try_cast({x} AS {t})", t)


def _unify(nodes: Sequence[_Node]) -> list[_Node]:
    """``nodes`` converted to one type (the first known one) where they differ; a field's
    text among numbers or booleans stays text (the column it lands in converts it)."""
    known = [n.type for n in nodes if n.type is not None and not n.is_null]
    if not known:
        return list(nodes)
    t = known[0]
    text = any(n.type is None and not n.is_null for n in nodes)
    if text and all(_numeric(k) or k in ("BOOLEAN", "STRING") for k in known):
        # a field's text with numbers: keep the text (the column's type converts it)
        return [n if n.type in (None, "STRING") or n.is_null else _as(n, "STRING") for n in nodes]
    if all(_numeric(k) for k in known):
        t = "DOUBLE" if any(k not in _INTEGRAL for k in known) else "BIGINT"
        if any(k.startswith("DECIMAL") for k in known) and "DOUBLE" not in known:
            t = next(k for k in known if k.startswith("DECIMAL"))
    if all(n.type == t or n.is_null for n in nodes):
        return list(nodes)
    return [n if n.type == t or (_numeric(n.type) and _numeric(t)) else _as(n, t) for n in nodes]


def _compare_types(nodes: Sequence[_Node]) -> list[_Node]:
    """Operands of a comparison converted so Spark compares them as Pinot does: a field's
    text against a number numerically (exactly: DECIMAL for whole numbers)."""
    known = {n.type for n in nodes if n.type is not None and not n.is_null}
    if not known or None not in {n.type for n in nodes if not n.is_null}:
        return _unify(nodes) if len(known) > 1 else list(nodes)
    if all(_numeric(k) for k in known):
        t = "DOUBLE" if known & set(_FRACTIONAL) else "DECIMAL(38, 9)"
        return [_as(n, t) if n.type is None and not n.is_null else n for n in nodes]
    return _unify(nodes)


def _ntz(millis: str) -> str:
    """The TIMESTAMP_NTZ wall clock of ``millis`` read in UTC."""
    return f"timestampadd(MILLISECOND, {millis}, {_EPOCH})"


def _ntz_millis(ntz: str) -> str:
    """The epoch millis of the UTC wall clock ``ntz`` (a TIMESTAMP_NTZ)."""
    seconds = f"CAST(CAST(({ntz}) - {_EPOCH} AS INTERVAL SECOND) AS DECIMAL(24, 6))"
    return f"CAST(FLOOR({seconds} * 1000) AS BIGINT)"


def _text_to_timestamp(x: str) -> str:
    """Pinot's text → TIMESTAMP: epoch millis, or a date-time (UTC unless it names an
    offset)."""
    zoned = _str(r"(?i)\d:\d\d.*(z|utc|[+-]\d\d(:?\d\d)?)$")
    naive = f"timestamp_millis({_ntz_millis(f'try_cast({x} AS TIMESTAMP_NTZ)')})"
    return (
        f"coalesce(timestamp_millis(try_cast({x} AS BIGINT)), CASE WHEN {x} RLIKE {zoned} "
        f"THEN try_cast({x} AS TIMESTAMP) ELSE {naive} END)"
    )


def _utc(tz: _Node | None) -> bool:
    if tz is None:
        return True
    value = tz.literal(str)
    return value is not _NOT and value.upper() in ("UTC", "GMT", "Z", "ETC/UTC", "+00:00")


def _to_local(millis: str, tz: _Node | None) -> str:
    """Epoch millis shifted by ``tz``'s offset at that instant (local wall clock as UTC)."""
    if _utc(tz):
        return millis
    assert tz is not None
    return f"unix_millis(from_utc_timestamp(timestamp_millis({millis}), {tz.sql}))"


def _from_local(millis: str, tz: _Node | None) -> str:
    """The epoch millis of the wall clock ``millis`` (read as UTC) in zone ``tz``."""
    if _utc(tz):
        return millis
    assert tz is not None
    return f"unix_millis(to_utc_timestamp(timestamp_millis({millis}), {tz.sql}))"


def _floordiv(a: str, n: int) -> str:
    return f"(({a}) - pmod({a}, {n})) div {n}"


# ---------------------------------------------------------------------------------------
# the function registry


class _Fail(Exception):
    """A builder's complaint about its arguments (the parser adds where and position)."""


_Build = Callable[[list[_Node]], str]


@dataclass(frozen=True)
class Function:
    """One Pinot scalar function and how it is written in Spark SQL.

    ``params`` are Pinot's parameter names, ``types`` the Spark type each argument is
    converted to first (None: as given); the first ``min_args`` are required, at most
    ``max_args`` are taken (None: any number, the last parameter repeating).
    """

    name: str
    params: tuple[str, ...]
    types: tuple[str | None, ...]
    min_args: int
    max_args: int | None
    returns: str | None
    build: str | Mapping[int, str] | _Build
    doc: str = ""

    @property
    def signature(self) -> str:
        """``toDateTime(millis, pattern[, timezone])``."""
        req = ", ".join(self.params[: self.min_args])
        opt = "".join(f"[, {p}" for p in self.params[self.min_args :])
        if opt and not req:
            opt = "[" + opt[3:]
        tail = ", ..." if self.max_args is None else ""
        return f"{self.name}({req}{opt}{']' * len(self.params[self.min_args :])}{tail})"

    def arity(self) -> str:
        lo, hi = self.min_args, self.max_args
        n = "argument" if (hi or lo) == 1 else "arguments"
        if hi is None:
            return f"at least {lo} {n}"
        return f"{lo} {n}" if lo == hi else f"{lo} to {hi} {n}"

    def sql(self, args: list[_Node]) -> str:
        types = list(self.types)
        if self.max_args is None:
            types += [types[-1]] * (len(args) - len(types))
        conv = [a if t is None else _as(a, t) for a, t in zip(args, types)]
        if callable(self.build):
            return self.build(conv)
        template = self.build if isinstance(self.build, str) else self.build[len(args)]
        return template.format(*(a.sql for a in conv))


_TYPES = {
    "L": "BIGINT",
    "I": "INT",
    "D": "DOUBLE",
    "F": "FLOAT",
    "S": "STRING",
    "B": "BINARY",
    "T": "TIMESTAMP",
    "Z": "BOOLEAN",
    "A": "ARRAY<STRING>",
    "*": None,
}
_REGISTRY: dict[str, Function] = {}


def _def(spec: str, build: str | Mapping[int, str] | _Build, doc: str = "") -> None:
    """Register ``"name|alias(param:T, opt:T?, rest:T...) -> T"``."""
    m = re.fullmatch(r"([\w|]+)\((.*)\) -> (\w)", spec)
    assert m, spec
    names, plist, ret = m.groups()
    params, types, required, variadic = [], [], 0, False
    for p in filter(None, (p.strip() for p in plist.split(","))):
        name, code = p.split(":")
        variadic = code.endswith("...")
        optional = code.endswith("?")
        params.append(name)
        types.append(_TYPES[code.rstrip("?.")])
        required += 0 if optional else 1
    for name in names.split("|"):
        _REGISTRY[_canonical(name)] = Function(
            name,
            tuple(params),
            tuple(types),
            required,
            None if variadic else len(params),
            _TYPES[ret] if ret != "X" else None,
            build,
            doc,
        )


def _canonical(name: str) -> str:
    return name.replace("_", "").lower()


def _lit(node: _Node, kind: type | tuple[type, ...], what: str) -> Any:
    value = node.literal(kind)
    if value is _NOT:
        text = "text in single quotes" if kind is str else "a literal"
        hint = ""
        if kind is str and node.sql.startswith("`@"):
            hint = " (a double-quoted \"...\" is a field name; quotes inside '...' are doubled: "
            hint += "'yyyy-MM-dd''T''HH:mm')"
        raise _Fail(f"{what} must be {text}{hint}")
    return value


# --- date and time --------------------------------------------------------------------

_UNITS = {
    "Seconds": 1000,
    "Minutes": 60_000,
    "Hours": 3_600_000,
    "Days": 86_400_000,
}
for _unit, _f in _UNITS.items():
    _u = _unit.lower()
    _def(
        f"toEpoch{_unit}(millis:L) -> L",
        f"({{0}} div {_f})",
        f"epoch millis → whole {_u} since the epoch (truncated, as Java's TimeUnit)",
    )
    _def(
        f"toEpoch{_unit}Rounded(millis:L, roundToNearest:L) -> L",
        f"((({{0}} div {_f}) div {{1}}) * {{1}})",
        f"epoch {_u}, rounded down to a multiple of roundToNearest",
    )
    _def(
        f"toEpoch{_unit}Bucket(millis:L, bucket:L) -> L",
        f"(({{0}} div {_f}) div {{1}})",
        f"epoch {_u} divided by bucket (n-{_u}-since-epoch)",
    )
    _def(
        f"fromEpoch{_unit}(value:L) -> L",
        f"({{0}} * {_f})",
        f"epoch {_u} → epoch millis",
    )
    _def(
        f"fromEpoch{_unit}Bucket(value:L, bucket:L) -> L",
        f"(({{0}} * {{1}}) * {_f})",
        f"n-{_u}-since-epoch (value * bucket {_u}) → epoch millis",
    )
_def(
    "round(timeValue:L, roundToNearest:L) -> L",
    "(({0} div {1}) * {1})",
    "Pinot's round: timeValue rounded down to a multiple of roundToNearest (BIGINT)",
)
_def("toTimestamp(millis:L) -> T", "timestamp_millis({0})", "epoch millis → TIMESTAMP")
_def("fromTimestamp(timestamp:T) -> L", "unix_millis({0})", "TIMESTAMP → epoch millis")
_def("now() -> L", "unix_millis(current_timestamp())", "the batch's start, in epoch millis")

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
    r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.I,
)


def _ago(args: list[_Node]) -> str:
    text = _lit(args[0], str, "the period of ago (an ISO-8601 duration such as 'P1D')")
    m = _DURATION.fullmatch(text.strip())
    if not m or not any(m.groups()[1:]) or text.strip().upper().endswith("T"):
        raise _Fail(f"'{text}' is not an ISO-8601 duration such as 'P1D', 'PT15M' or 'PT1.5S'")
    sign, d, h, mi, s, frac = m.groups()
    seconds = Decimal(f"{s or 0}.{frac or 0}")
    seconds += sum(int(v or 0) * k for v, k in ((d, 86400), (h, 3600), (mi, 60)))
    millis = int(seconds * 1000) * (-1 if sign == "-" else 1)
    return f"(unix_millis(current_timestamp()) - {millis})"


_def("ago(period:S) -> L", _ago, "now minus an ISO-8601 duration ('P1D'), in epoch millis")


def _zone_checked(tz: _Node | None) -> _Node | None:
    value = None if tz is None else tz.literal(str)
    if value is None or value is _NOT or _utc(tz):
        return tz
    offset = re.fullmatch(r"(?:UTC|GMT)?[+-]\d{1,2}(?::?\d\d)?", value)
    zones = zoneinfo.available_timezones()
    if not offset and zones and value not in zones:
        near = difflib.get_close_matches(value, zones, n=1)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        raise _Fail(f"unknown time zone '{value}'{hint}")
    return tz


def _field(sql: str) -> Callable[[list[_Node]], str]:
    def build(args: list[_Node]) -> str:
        tz = _zone_checked(args[1] if len(args) > 1 else None)
        return sql.format(_ntz(_to_local(args[0].sql, tz)))

    return build


for _names, _sql, _what in (
    ("year", "year({})", "year"),
    ("yearOfWeek|yow", "extract(YEAROFWEEK FROM {})", "ISO week-based year"),
    ("quarter", "quarter({})", "quarter, 1-4"),
    ("month", "month({})", "month, 1-12"),
    ("week|weekOfYear", "weekofyear({})", "ISO week of the year, 1-53"),
    ("dayOfYear|doy", "dayofyear({})", "day of the year, 1-366"),
    ("day|dayOfMonth", "dayofmonth({})", "day of the month, 1-31"),
    ("dayOfWeek|dow", "(weekday({}) + 1)", "day of the week, 1 (Monday) to 7 (Sunday)"),
    ("hour", "hour({})", "hour of the day, 0-23"),
    ("minute", "minute({})", "minute of the hour"),
    ("second", "second({})", "second of the minute"),
):
    _def(
        f"{_names}(millis:L, timezone:S?) -> I",
        _field(_sql),
        f"the {_what} of epoch millis, in UTC or the given time zone",
    )
_def(
    "millisecond(millis:L, timezone:S?) -> I",
    lambda a: f"CAST(pmod({a[0].sql}, 1000) AS INT)",
    "the millisecond of the second, 0-999",
)

_MONTHS = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _names_at(names: Sequence[str], index: str) -> str:
    return f"element_at(array({', '.join(map(_str, names))}), {index})"


def _joda(pattern: str) -> list[str | tuple[str, int]]:
    """A Joda-Time pattern as literal texts and (letter, count) fields."""
    out: list[str | tuple[str, int]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            if pattern.startswith("''", i):
                out.append("'")
                i += 2
                continue
            j, buf = i + 1, []
            while True:
                if j >= len(pattern):
                    raise _Fail(f"pattern {pattern!r} has an unterminated quote")
                if pattern[j] == "'":
                    if pattern.startswith("''", j):
                        buf.append("'")
                        j += 2
                        continue
                    break
                buf.append(pattern[j])
                j += 1
            out.append("".join(buf))
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            out.append((c, j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return out


def _num(sql: str, n: int) -> str:
    return f"CAST({sql} AS STRING)" if n == 1 else f"format_string('%0{n}d', {sql})"


def _format(millis: str, pattern: str, tz: _Node | None) -> str:
    """SQL formatting epoch ``millis`` by the Joda-Time ``pattern`` in zone ``tz``."""
    local = _ntz(_to_local(millis, tz))
    parts: list[str] = []
    for piece in _joda(pattern):
        if isinstance(piece, str):
            parts.append(_str(piece))
            continue
        c, n = piece
        numeric = {
            "y": f"year({local})",
            "Y": f"year({local})",
            "x": f"extract(YEAROFWEEK FROM {local})",
            "w": f"weekofyear({local})",
            "D": f"dayofyear({local})",
            "d": f"dayofmonth({local})",
            "e": f"(weekday({local}) + 1)",
            "H": f"hour({local})",
            "k": f"(pmod(hour({local}) + 23, 24) + 1)",
            "K": f"(hour({local}) % 12)",
            "h": f"(pmod(hour({local}) + 11, 12) + 1)",
            "m": f"minute({local})",
            "s": f"second({local})",
            "C": f"(year({local}) div 100)",
        }
        if c in "yYx" and n == 2:
            parts.append(_num(f"pmod({numeric[c]}, 100)", 2))
        elif c in numeric:
            parts.append(_num(numeric[c], n))
        elif c == "M":
            month = f"month({local})"
            names = [m[:3] for m in _MONTHS] if n == 3 else _MONTHS
            parts.append(_num(month, n) if n <= 2 else _names_at(names, month))
        elif c == "E":
            names = [d[:3] for d in _DAYS] if n <= 3 else _DAYS
            parts.append(_names_at(names, f"(weekday({local}) + 1)"))
        elif c == "a":
            parts.append(f"CASE WHEN hour({local}) < 12 THEN 'AM' ELSE 'PM' END")
        elif c == "S":
            digits = f"format_string('%03d', pmod({millis}, 1000))"
            zeros = "0" * (n - 3)
            parts.append(f"substr({digits}, 1, {n})" if n <= 3 else f"concat({digits}, '{zeros}')")
        elif c == "G":
            parts.append("'AD'")
        elif c == "Z" or (c == "z" and _utc(tz)):
            parts.append(_offset(millis, tz, n if c == "Z" else 3))
        else:
            raise _Fail(f"pattern letter '{c}' of {pattern!r} is not supported")
    return f"concat({', '.join(parts)})" if len(parts) > 1 else (parts or ["''"])[0]


def _offset(millis: str, tz: _Node | None, n: int) -> str:
    """Joda's Z (+0000), ZZ (+00:00) and ZZZ (the zone id) for ``tz`` at ``millis``."""
    if n >= 3:
        return "'UTC'" if _utc(tz) else tz.sql  # type: ignore[union-attr]
    sep = ":" if n == 2 else ""
    if _utc(tz):
        return _str(f"+00{sep}00")
    off = f"(({_to_local(millis, tz)} - {millis}) div 60000)"
    return (
        f"concat(CASE WHEN {off} < 0 THEN '-' ELSE '+' END, format_string('%02d', "
        f"abs({off}) div 60), '{sep}', format_string('%02d', abs({off}) % 60))"
    )


def _to_date_time(args: list[_Node]) -> str:
    pattern = _lit(args[1], str, "the pattern of toDateTime")
    tz = _zone_checked(args[2] if len(args) > 2 else None)
    return _format(args[0].sql, pattern, tz)


_def(
    "toDateTime(millis:L, pattern:S, timezone:S?) -> S",
    _to_date_time,
    "epoch millis → text by a Joda-Time pattern, in UTC or the given time zone",
)

_ZONE_LETTERS = {"Z": {1: "XX", 2: "XXX"}, "z": {}}


def _spark_pattern(pattern: str) -> tuple[str, bool]:
    """A Joda-Time pattern for parsing, in Spark's pattern letters; and whether it reads
    a zone or offset."""
    out, zoned = [], False
    same = set("GyDMdaKhHkmsSE")
    for piece in _joda(pattern):
        if isinstance(piece, str):
            plain = not any(ch.isalpha() or ch == "'" for ch in piece)
            out.append(piece if plain else "'" + piece.replace("'", "''") + "'")
            continue
        c, n = piece
        if c in same:
            out.append(c * n)
        elif c == "Y":
            out.append("y" * n)
        elif c == "Z":
            zoned = True
            out.append({1: "XX", 2: "XXX"}.get(n, "VV"))
        elif c == "z":
            zoned = True
            out.append("z" * n)
        else:
            raise _Fail(f"pattern letter '{c}' of {pattern!r} is not supported for parsing")
    return "".join(out), zoned


def _from_date_time(args: list[_Node]) -> str:
    text = args[0].sql
    pattern, zoned = _spark_pattern(_lit(args[1], str, "the pattern of fromDateTime"))
    tz = _zone_checked(args[2] if len(args) > 2 else None)
    p = _str(pattern)
    if zoned:
        sql = f"unix_millis(try_to_timestamp({text}, {p}))"
    else:
        wall = _ntz_millis(f"to_timestamp_ntz({text}, {p})")
        sql = (
            f"CASE WHEN try_to_timestamp({text}, {p}) IS NULL THEN NULL "
            f"ELSE {_from_local(wall, tz)} END"
        )
    return f"coalesce({sql}, {_as(args[3], 'BIGINT').sql})" if len(args) > 3 else sql


_def(
    "fromDateTime(text:S, pattern:S, timezone:S?, default:L?) -> L",
    _from_date_time,
    "text by a Joda-Time pattern → epoch millis, read in UTC or the given time zone "
    "(an offset in the text wins); text that does not parse is NULL, or default",
)

_TIME_UNITS = {
    "NANOSECONDS": -1_000_000,
    "MICROSECONDS": -1_000,
    "MILLISECONDS": 1,
    "SECONDS": 1_000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
_TRUNC = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
}


def _time_unit(node: _Node, what: str) -> int:
    unit = _lit(node, str, what).upper()
    if unit not in _TIME_UNITS:
        raise _Fail(f"{what} '{unit}' is not one of {', '.join(_TIME_UNITS)}")
    return _TIME_UNITS[unit]


def _date_trunc(args: list[_Node]) -> str:
    unit = _lit(args[0], str, "the unit of dateTrunc").lower()
    units = [*_TRUNC, "week", "month", "quarter", "year"]
    if unit not in units:
        raise _Fail(f"dateTrunc unit '{unit}' is not one of {', '.join(units)}")
    fin = _time_unit(args[2], "the input time unit") if len(args) > 2 else 1
    tz = _zone_checked(args[3] if len(args) > 3 else None)
    fout = _time_unit(args[4], "the output time unit") if len(args) > 4 else fin
    value = args[1].sql
    millis = f"({value} div {-fin})" if fin < 0 else f"({value} * {fin})" if fin > 1 else value
    local = _to_local(millis, tz)
    day = 86_400_000
    if unit in _TRUNC:
        size = _TRUNC[unit]
        trunc = local if size == 1 else f"({local} - pmod({local}, {size}))"
    else:
        days = _floordiv(local, day)
        if unit == "week":
            trunc = f"(({days}) - pmod(({days}) + 3, 7)) * {day}"
        else:
            fmt = {"month": "MM", "quarter": "QUARTER", "year": "YEAR"}[unit]
            start = f"trunc(date_from_unix_date(CAST({days} AS INT)), '{fmt}')"
            trunc = f"(CAST(unix_date({start}) AS BIGINT) * {day})"
    out = _from_local(trunc, tz)
    return f"({out} * {-fout})" if fout < 0 else f"({out} div {fout})" if fout > 1 else out


_def(
    "dateTrunc(unit:S, timeValue:L, inputTimeUnit:S?, timezone:S?, outputTimeUnit:S?) -> L",
    _date_trunc,
    "timeValue truncated to the start of its millisecond/second/minute/hour/day/week "
    "(Monday)/month/quarter/year, in UTC or the given time zone",
)

# --- strings --------------------------------------------------------------------------

for _names, _tmpl, _doc in (
    ("upper", "upper({0})", "upper case"),
    ("lower", "lower({0})", "lower case"),
    ("reverse", "reverse({0})", "the characters in reverse order"),
    ("length", "char_length({0})", "the number of characters"),
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
    ("isJson(input:S) -> Z", "({0} IS NULL OR try_parse_json({0}) IS NOT NULL)"),
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
    """Commons-lang's splitByWholeSeparator: pieces between whole delimiters, no empty
    ones."""
    d = delim.literal(str)
    if d is _NOT:
        regex = f"concat('\\\\Q', {delim.sql}, '\\\\E')"
    else:
        regex = _str("\\s+" if d == "" else _java_quote(d))
    return f"filter(split({s.sql}, {regex}), x -> x != '')"


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

for _names, _tmpl in (
    ("abs", "abs({0})"),
    ("ceil|ceiling", "CAST(ceil({0}) AS DOUBLE)"),
    ("floor", "CAST(floor({0}) AS DOUBLE)"),
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
    ("divide|div", "try_divide({0}, {1})"),
    ("mod", "try_mod({0}, {1})"),
    ("power|pow", "power({0}, {1})"),
    ("least", "CASE WHEN {0} IS NULL OR {1} IS NULL THEN NULL ELSE least({0}, {1}) END"),
    ("greatest", "CASE WHEN {0} IS NULL OR {1} IS NULL THEN NULL ELSE greatest({0}, {1}) END"),
):
    _def(f"{_names}(a:D, b:D) -> D", _tmpl, "on DOUBLE, as Pinot; / and % by zero are NULL")
_def(
    "roundDecimal(a:D, scale:I?) -> D",
    {1: "CAST(floor({0} + 0.5D) AS DOUBLE)", 2: "round({0}, {1})"},
    "a rounded half up to scale decimals (none: to a whole number)",
)

# --- JSON -----------------------------------------------------------------------------


def _json_path(node: _Node) -> str:
    """The SQL of a JSONPath for get_json_object, checked when it is a literal."""
    path = node.literal(str)
    if path is _NOT:
        return node.sql
    p = path.strip()
    if not p.startswith("$"):
        p = "$." + p  # Jayway JsonPath reads 'a.b' as '$.a.b'
    p = re.sub(r'\["((?:[^"\\]|\\.)*)"\]', lambda m: "['" + m.group(1) + "']", p)
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
    return _str(p)


def _json_value(args: list[_Node]) -> str:
    return f"get_json_object({args[0].sql}, {_json_path(args[1])})"


def _json_long(v: str) -> str:
    return f"coalesce(try_cast({v} AS BIGINT), try_cast(try_cast({v} AS DOUBLE) AS BIGINT))"


def _json_int(v: str) -> str:
    return f"coalesce(try_cast({v} AS INT), try_cast(try_cast({v} AS DOUBLE) AS INT))"


def _json_typed(conv: Callable[[str], str], missing: str) -> _Build:
    def build(args: list[_Node]) -> str:
        value = conv(_json_value(args))
        if len(args) > 2:
            return f"coalesce({value}, {args[2].sql})"
        return f"CASE WHEN {args[0].sql} IS NULL THEN NULL ELSE coalesce({value}, {missing}) END"

    return build


_def(
    "jsonPathString(json:S, path:S, default:S?) -> S",
    lambda a: f"coalesce({_json_value(a)}, {a[2].sql})" if len(a) > 2 else _json_value(a),
    "the value at path: a string as is, anything else as JSON text; NULL (or default) if absent",
)
_def("jsonPath(json:S, path:S) -> S", _json_value, "as jsonPathString")
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
    _json_typed(lambda v: f"try_cast({v} AS DOUBLE)", "CAST('NaN' AS DOUBLE)"),
    "the value at path as DOUBLE; default, or NaN, if absent or not a number",
)


def _json_array(args: list[_Node]) -> str:
    v = _json_value(args)
    return (
        f"CASE WHEN {v} IS NULL THEN NULL WHEN startswith(ltrim({v}), '[') "
        f"THEN from_json({v}, 'array<string>') ELSE array({v}) END"
    )


_def(
    "jsonPathArray(json:S, path:S) -> A",
    _json_array,
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
    lambda a: f"({_json_value(a)} IS NOT NULL)",
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
        "TIMESTAMP": ("TIMESTAMP", f"timestamp_millis({_json_long(value)})", "NULL"),
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

#: lower-cased Pinot name without underscores → the function
FUNCTIONS: Mapping[str, Function] = MappingProxyType(_REGISTRY)

_RETURNS_FIRST = {"coalesce", "jsonextractscalar"}


# ---------------------------------------------------------------------------------------
# tokens and parser

_KEYWORDS = {
    "AND",
    "OR",
    "NOT",
    "TRUE",
    "FALSE",
    "NULL",
    "IS",
    "IN",
    "BETWEEN",
    "LIKE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "AS",
}
_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    |(?P<str>'(?:[^']|'')*')
    |(?P<qid>"(?:[^"]|"")*")
    |(?P<bid>`(?:[^`]|``)*`)
    |(?P<word>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op><=|>=|<>|!=|==|\|\||[-+*/%(),=<>])""",
    re.X,
)
_CAST_TYPES = {
    "INT": "INT",
    "INTEGER": "INT",
    "LONG": "BIGINT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BIG_DECIMAL": "DECIMAL(38,18)",
    "DECIMAL": "DECIMAL(38,18)",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "STRING": "STRING",
    "VARCHAR": "STRING",
    "CHAR": "STRING",
    "JSON": "STRING",
    "BYTES": "BINARY",
    "BINARY": "BINARY",
    "VARBINARY": "BINARY",
}
_COMPARE = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num, str, id, word, kw, op, end
    text: str
    pos: int
    value: Any = None


class _Parser:
    def __init__(self, text: str, where: str, kind: str) -> None:
        self.text, self.where, self.kind = text, where, kind
        self.fields: dict[str, None] = {}
        if not isinstance(text, str):
            raise self.error(f"the expression must be text, not {type(text).__name__}")
        self.toks = self.tokenize()
        self.i = 0

    # --- errors ---

    def error(self, message: str) -> ConfigError:
        return ConfigError(f"{self.where}: {message}")

    def syntax(self, pos: int, message: str) -> ConfigError:
        before = self.text[max(0, pos - 25) : pos]
        after = self.text[pos : pos + 25]
        at = f"after '{before}'" if before else "at the start"
        at += f", before '{after}'" if after else ", at the end"
        return self.error(f"syntax error at character {pos + 1}: {message} ({at})")

    # --- tokens ---

    def tokenize(self) -> list[_Tok]:
        text, toks, pos = self.text, [], 0
        if not text.strip():
            raise self.error("the expression is empty")
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                c = text[pos]
                if c in "'\"`":
                    what = {"'": "string", '"': "quoted name", "`": "quoted name"}[c]
                    raise self.syntax(pos, f"unterminated {what} starting here")
                raise self.syntax(pos, f"unexpected character {c!r}")
            kind, t = m.lastgroup or "", m.group()
            end = m.end()
            if kind == "str":
                toks.append(_Tok("str", t, pos, t[1:-1].replace("''", "'")))
            elif kind in ("qid", "bid"):
                q = t[0]
                name = t[1:-1].replace(q + q, q)
                if not name:
                    raise self.syntax(pos, "an empty quoted name")
                toks.append(_Tok("id", t, pos, name))
            elif kind == "num":
                if end < len(text) and (text[end].isalnum() or text[end] == "_"):
                    raise self.syntax(end, f"unexpected {text[end]!r} after the number {t}")
                toks.append(_Tok("num", t, pos))
            elif kind == "word":
                if end < len(text) and text[end] in ".$":
                    full = re.match(r"[\w$.]+", text[pos:])
                    name = full.group() if full else t
                    raise self.syntax(
                        pos,
                        f"a field name with '.' or '$' must be double-quoted: \"{name}\"",
                    )
                if t.lower() == "groovy" and text[end:].lstrip().startswith("("):
                    raise self.error(
                        f"Groovy scripts are not supported ({self.kind} at character "
                        f"{pos + 1}): a script could run arbitrary code on the engine. Write "
                        "the same logic with scalar functions and operators, e.g. "
                        "Groovy({ts / 1000}, ts) → toEpochSeconds(ts), "
                        "Groovy({a + ' ' + b}, a, b) → concat(a, b, ' '), "
                        "Groovy({x > 10}, x) → x > 10"
                    )
                up = t.upper()
                toks.append(_Tok("kw" if up in _KEYWORDS else "word", t, pos, up))
            elif kind == "op":
                toks.append(_Tok("op", t, pos))
            pos = end
        toks.append(_Tok("end", "", len(text)))
        return toks

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def is_kw(self, *words: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "kw" and tok.value in words

    def is_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.text in ops

    def describe(self, tok: _Tok) -> str:
        return "the end of the expression" if tok.kind == "end" else f"'{tok.text}'"

    def expect_op(self, op: str, context: str = "") -> _Tok:
        if not self.is_op(op):
            tok = self.peek()
            raise self.syntax(tok.pos, f"expected '{op}'{context}, found {self.describe(tok)}")
        return self.take()

    def expect_kw(self, word: str, context: str = "") -> _Tok:
        if not self.is_kw(word):
            tok = self.peek()
            raise self.syntax(tok.pos, f"expected {word}{context}, found {self.describe(tok)}")
        return self.take()

    # --- grammar ---

    def parse(self) -> tuple[_Node, tuple[str, ...]]:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise self.syntax(tok.pos, f"unexpected {self.describe(tok)}")
        return node, tuple(self.fields)

    def expr(self) -> _Node:
        return self.disjunction()

    def disjunction(self) -> _Node:
        left = self.conjunction()
        while self.is_kw("OR"):
            self.take()
            right = self.conjunction()
            left = self.logical("OR", left, right)
        return left

    def conjunction(self) -> _Node:
        left = self.negation()
        while self.is_kw("AND"):
            self.take()
            right = self.negation()
            left = self.logical("AND", left, right)
        return left

    @staticmethod
    def logical(op: str, a: _Node, b: _Node) -> _Node:
        sql = f"({_as(a, 'BOOLEAN').sql} {op} {_as(b, 'BOOLEAN').sql})"
        return _Node(sql, "BOOLEAN", pos=a.pos)

    def negation(self) -> _Node:
        if self.is_kw("NOT"):
            tok = self.take()
            inner = self.negation()
            return _Node(f"(NOT {_as(inner, 'BOOLEAN').sql})", "BOOLEAN", pos=tok.pos)
        return self.predicate()

    def predicate(self) -> _Node:
        left = self.additive()
        tok = self.peek()
        if tok.kind == "op" and tok.text in _COMPARE:
            self.take()
            right = self.additive()
            a, b = _compare_types([left, right])
            return _Node(f"({a.sql} {_COMPARE[tok.text]} {b.sql})", "BOOLEAN", pos=left.pos)
        if self.is_kw("IS"):
            self.take()
            negate = " NOT" if self.is_kw("NOT") else ""
            if negate:
                self.take()
            if not self.is_kw("NULL", "TRUE", "FALSE"):
                found = self.describe(self.peek())
                raise self.syntax(
                    self.peek().pos, f"expected NULL, TRUE or FALSE after IS, found {found}"
                )
            what = self.take().value
            x = left if what == "NULL" else _as(left, "BOOLEAN")
            return _Node(f"({x.sql} IS{negate} {what})", "BOOLEAN", pos=left.pos)
        negate = ""
        if self.is_kw("NOT") and self.is_kw("IN", "BETWEEN", "LIKE", k=1):
            self.take()
            negate = "NOT "
        if self.is_kw("IN"):
            self.take()
            self.expect_op("(", " after IN")
            items = [self.expr()]
            while self.is_op(","):
                self.take()
                items.append(self.expr())
            self.expect_op(")", " closing the IN list")
            x, *rest = _compare_types([left, *items])
            inside = ", ".join(n.sql for n in rest)
            return _Node(f"({x.sql} {negate}IN ({inside}))", "BOOLEAN", pos=left.pos)
        if self.is_kw("BETWEEN"):
            self.take()
            low = self.additive()
            self.expect_kw("AND", " in BETWEEN ... AND ...")
            high = self.additive()
            x, lo, hi = _compare_types([left, low, high])
            sql = f"({x.sql} {negate}BETWEEN {lo.sql} AND {hi.sql})"
            return _Node(sql, "BOOLEAN", pos=left.pos)
        if self.is_kw("LIKE"):
            self.take()
            pattern = _as(self.additive(), "STRING")
            x = _as(left, "STRING")
            return _Node(f"({x.sql} {negate}LIKE {pattern.sql})", "BOOLEAN", pos=left.pos)
        if negate:
            raise self.syntax(self.peek().pos, "expected IN, BETWEEN or LIKE after NOT")
        return left

    def additive(self) -> _Node:
        left = self.multiplicative()
        while self.is_op("+", "-", "||"):
            op = self.take().text
            right = self.multiplicative()
            if op == "||":
                a, b = _as(left, "STRING"), _as(right, "STRING")
                left = _Node(f"concat({a.sql}, {b.sql})", "STRING", pos=left.pos)
            else:
                left = self.arithmetic(op, left, right)
        return left

    def multiplicative(self) -> _Node:
        left = self.unary()
        while self.is_op("*", "/", "%"):
            op = self.take().text
            left = self.arithmetic(op, left, self.unary())
        return left

    @staticmethod
    def arithmetic(op: str, a: _Node, b: _Node) -> _Node:
        a, b = (n if _numeric(n.type) or n.is_null else _as(n, "DOUBLE") for n in (a, b))
        types = {a.type, b.type} - {None}
        if types <= set(_INTEGRAL):
            t = "BIGINT"
        elif "DOUBLE" not in types and any(x.startswith("DECIMAL") for x in types):
            t = "DECIMAL"
        else:
            t = "DOUBLE"
        if t == "BIGINT":  # whole-number literals are INT in Spark: widen, not overflow
            a, b = _as(a, t), _as(b, t)
        if op == "/":
            sql, t = f"try_divide({a.sql}, {b.sql})", "DOUBLE" if t == "BIGINT" else t
        elif op == "%":
            sql = f"try_mod({a.sql}, {b.sql})"
        else:
            sql = f"({a.sql} {op} {b.sql})"
        return _Node(sql, t, pos=a.pos)

    def unary(self) -> _Node:
        if self.is_op("-", "+"):
            tok = self.take()
            inner = self.unary()
            if tok.text == "+":
                return inner
            value = inner.literal((int, float))
            if value is not _NOT:
                sql = inner.sql[2:-1] if inner.sql.startswith("(-") else f"(-{inner.sql})"
                return _Node(sql, inner.type, _Literal(-value), tok.pos)
            x = inner if _numeric(inner.type) else _as(inner, "DOUBLE")
            return _Node(f"(- {x.sql})", x.type, pos=tok.pos)
        return self.primary()

    def primary(self) -> _Node:
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            return self.number(tok)
        if tok.kind == "str":
            self.take()
            return replace(_s(tok.value), pos=tok.pos)
        if tok.kind == "id":
            self.take()
            return self.field(tok.value, tok.pos)
        if tok.kind == "kw":
            if tok.value in ("TRUE", "FALSE"):
                self.take()
                return _Node(tok.value, "BOOLEAN", _Literal(tok.value == "TRUE"), tok.pos)
            if tok.value == "NULL":
                self.take()
                return _Node("NULL", None, _Literal(None), tok.pos)
            if tok.value == "CASE":
                return self.case()
            if tok.value == "CAST":
                return self.cast()
            raise self.syntax(tok.pos, f"unexpected {tok.value}")
        if tok.kind == "word":
            self.take()
            if self.is_op("("):
                return self.call(tok)
            return self.field(tok.text, tok.pos)
        if self.is_op("("):
            self.take()
            inner = self.expr()
            self.expect_op(")", " closing the parenthesis")
            return inner
        if tok.kind == "end":
            raise self.syntax(tok.pos, "the expression ends too early")
        raise self.syntax(tok.pos, f"unexpected {self.describe(tok)}")

    def number(self, tok: _Tok) -> _Node:
        t = tok.text
        if re.fullmatch(r"\d+", t):
            v = int(t)
            if v >= 2**63:
                return _Node(f"{v}BD", "DECIMAL(38,0)", _Literal(v), tok.pos)
            if v < 2**31:
                return _Node(str(v), "INT", _Literal(v), tok.pos)
            return _Node(f"{v}L", "BIGINT", _Literal(v), tok.pos)
        sql = ("0" + t if t.startswith(".") else t).replace(".e", ".0e").replace(".E", ".0E")
        sql = sql + "0" if sql.endswith(".") else sql
        if "e" not in sql.lower():
            sql += "D"
        return _Node(sql, "DOUBLE", _Literal(float(t)), tok.pos)

    def field(self, name: str, pos: int) -> _Node:
        self.fields.setdefault(name, None)
        return _Node("`@" + name.replace("`", "``") + "`", None, pos=pos)

    def case(self) -> _Node:
        start = self.take()
        subject = None if self.is_kw("WHEN") else self.expr()
        whens: list[tuple[_Node, _Node]] = []
        while self.is_kw("WHEN"):
            self.take()
            cond = self.expr()
            if subject is not None:
                a, b = _compare_types([subject, cond])
                cond = _Node(f"({a.sql} = {b.sql})", "BOOLEAN")
            self.expect_kw("THEN", " after the WHEN condition")
            whens.append((_as(cond, "BOOLEAN"), self.expr()))
        if not whens:
            raise self.syntax(self.peek().pos, f"expected WHEN, found {self.describe(self.peek())}")
        other = None
        if self.is_kw("ELSE"):
            self.take()
            other = self.expr()
        self.expect_kw("END", " closing CASE")
        values = _unify([v for _, v in whens] + ([other] if other is not None else []))
        parts = [f"WHEN {c.sql} THEN {v.sql}" for (c, _), v in zip(whens, values)]
        if other is not None:
            parts.append(f"ELSE {values[-1].sql}")
        t = next((v.type for v in values if v.type is not None), None)
        return _Node(f"(CASE {' '.join(parts)} END)", t, pos=start.pos)

    def cast(self) -> _Node:
        start = self.take()
        self.expect_op("(", " after CAST")
        inner = self.expr()
        self.expect_kw("AS", " in CAST(... AS type)")
        tok = self.peek()
        if tok.kind not in ("word", "kw"):
            raise self.syntax(tok.pos, f"expected a type name, found {self.describe(tok)}")
        self.take()
        name = tok.text.upper()
        if name not in _CAST_TYPES:
            near = difflib.get_close_matches(name, _CAST_TYPES, n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise self.syntax(
                tok.pos,
                f"unknown type {tok.text} (Pinot's types: INT, LONG, FLOAT, DOUBLE, "
                f"BIG_DECIMAL, BOOLEAN, TIMESTAMP, STRING, JSON, BYTES){hint}",
            )
        t = _CAST_TYPES[name]
        if self.is_op("("):  # DECIMAL(p, s), VARCHAR(n)
            self.take()
            sizes = [self.take()]
            while self.is_op(","):
                self.take()
                sizes.append(self.take())
            self.expect_op(")", " closing the type's size")
            if any(s.kind != "num" or not s.text.isdigit() for s in sizes):
                raise self.syntax(sizes[0].pos, "a type's size must be whole numbers")
            if t.startswith("DECIMAL"):
                t = f"DECIMAL({', '.join(s.text for s in sizes)})"
        self.expect_op(")", " closing CAST")
        return replace(_as(inner, t), pos=start.pos)

    def call(self, tok: _Tok) -> _Node:
        name = tok.text
        key = _canonical(name)
        self.take()  # (
        args: list[_Node] = []
        if not self.is_op(")"):
            args.append(self.expr())
            while self.is_op(","):
                self.take()
                args.append(self.expr())
        self.expect_op(")", f" closing the arguments of {name}")
        fn = FUNCTIONS.get(key)
        if fn is None:
            near = difflib.get_close_matches(key, FUNCTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean '{FUNCTIONS[near[0]].name}'?" if near else ""
            raise self.error(
                f"unknown {self.kind} function '{name}' (character {tok.pos + 1}){hint}"
            )
        n = len(args)
        if n < fn.min_args or (fn.max_args is not None and n > fn.max_args):
            raise self.error(
                f"{fn.name} takes {fn.arity()} ({fn.signature}), got {n} (character {tok.pos + 1})"
            )
        try:
            sql = fn.sql(args)
        except _Fail as e:
            raise self.error(f"{fn.signature} at character {tok.pos + 1}: {e}") from None
        returns = fn.returns
        if key in _RETURNS_FIRST:
            returns = self.first_type(key, args)
        return _Node(sql, returns, pos=tok.pos)

    @staticmethod
    def first_type(key: str, args: list[_Node]) -> str | None:
        if key == "coalesce":
            return next((a.type for a in _unify(args) if a.type is not None), None)
        kind = str(args[2].literal(str)).upper()
        return {
            "INT": "INT",
            "LONG": "BIGINT",
            "TIMESTAMP": "TIMESTAMP",
            "FLOAT": "FLOAT",
            "DOUBLE": "DOUBLE",
            "BIG_DECIMAL": "DECIMAL(38,18)",
            "BOOLEAN": "BOOLEAN",
        }.get(kind, "STRING")

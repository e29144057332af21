"""Typed SQL fragments (``_Node`` and the conversions between Spark types Pinot
makes) and the function registry core: :class:`Function`, ``_def`` to register one, and
:data:`FUNCTIONS`, filled by :mod:`.times` and :mod:`.functions`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

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
    #: Spark SQL true exactly for the records where Pinot's evaluation of this part throws
    #: (None: it cannot): Pinot then drops the record, unless ``continueOnError``
    fails: str | None = None

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


def _any(*fails: str | None) -> str | None:
    """The SQL true where any of ``fails`` is (None: none can be)."""
    some = list(dict.fromkeys(f for f in fails if f is not None))
    if not some:
        return None
    return some[0] if len(some) == 1 else "(" + " OR ".join(some) + ")"


def _throws_into(t: str) -> bool:
    """Whether Pinot's conversion of text into Spark type ``t`` can throw: its
    ``PinotDataType.STRING`` parses the text (``Integer.parseInt``, ``Long.parseLong``,
    ``Double.parseDouble``, ``new BigDecimal``, ``TimestampUtils.toTimestamp``,
    ``BytesUtils.toBytes``) and throws where it cannot; ``toBoolean``
    (``BooleanUtils.toBoolean``) never throws, nor does text into text."""
    return _numeric(t) or t in ("TIMESTAMP", "BINARY")


def _conv_fails(n: _Node, conv: _Node, t: str) -> str | None:
    """Where converting ``n``'s text into ``t`` (giving ``conv``) throws in Pinot: the text
    is there and Spark's conversion of it is NULL, as Pinot's parse of it fails."""
    if n.type not in (None, "STRING") or n.is_null or not _throws_into(t):
        return None
    if conv.lit is not None and not conv.is_null:
        return None  # a literal converted when planned
    return f"(({n.sql}) IS NOT NULL AND ({conv.sql}) IS NULL)"


def _guarded(fails: str | None, nodes: Sequence[_Node]) -> str | None:
    """``fails`` where every one of ``nodes`` is non-null: Pinot's evaluator returns null
    for a call with a null argument before converting any (``FunctionExecutionNode``)."""
    if fails is None:
        return None
    checks = [f"({n.sql}) IS NOT NULL" for n in nodes if n.lit is None]
    if len(checks) == 1 and fails.startswith(f"({checks[0]} AND "):
        return fails  # one argument, whose conversion's failure (a conjunction) checks it
    return f"({' AND '.join(checks)} AND {fails})" if checks else fails


def _with(node: _Node, *parts: _Node, extra: str | None = None) -> _Node:
    """``node`` failing where any of ``parts`` (its operands) or ``extra`` does."""
    return replace(node, fails=_any(*(p.fails for p in parts), extra))


def _operand_fails(given: Sequence[_Node], used: Sequence[_Node]) -> str | None:
    """Where an operator's text operands (``given``, converted to ``used``) do not convert:
    in ingestion Pinot's comparison and arithmetic functions take doubles
    (``PolymorphicComparisonScalarFunction.getFunctionInfo(int)``,
    ``BaseBinaryArithmeticScalarFunction.getFunctionInfo(int)``: the DOUBLE variant), so
    text that is no number throws, every operand non-null."""
    conv = [_conv_fails(g, u, u.type) for g, u in zip(given, used) if u.type is not None]
    return _guarded(_any(*conv), given)


#: the texts of infinities and NaN Spark's cast reads and ``Double.parseDouble`` does not
#: (it reads ``NaN`` and ``Infinity``, signed, between blanks), made unreadable
_SPARK_ONLY = _str(r"^\s*[+-]?(?!(Infinity|NaN)\s*$)(?i:inf|infinity|nan)\s*$")


def _as(n: _Node, t: str) -> _Node:
    """``n`` converted to Spark type ``t`` the way Pinot converts an argument; the
    result fails where ``n`` does (the conversion's own failure is the caller's:
    :func:`_conv_fails`)."""
    out = _as_value(n, t)
    return out if out.fails == n.fails else replace(out, fails=n.fails)


def _as_value(n: _Node, t: str) -> _Node:
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
        if t in _FRACTIONAL and src in (None, "STRING"):
            # Spark also reads inf, infinity and nan in any case; Double.parseDouble only
            # NaN and Infinity, signed or not
            return _typed(f"try_cast(regexp_replace({x}, {_SPARK_ONLY}, 'x') AS {t})", t)
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
            return _typed(millis_ts(_as(n, "BIGINT").sql), t)
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


def _cast_whole(n: _Node, t: str) -> _Node:
    """Pinot's ``CAST(text AS INT / LONG)`` (``DataTypeConversionFunctions.cast``), which
    differs from its argument conversion: text that is no whole number is read as a double
    and cut by Java's ``(int)`` / ``(long)`` (``'10.0'`` is 10; NaN 0; past the range, its
    end); LONG first reads a timestamp's epoch millis (``TimestampUtils``)."""
    x = n.sql
    lo, hi = (
        ("(-2147483647 - 1)", "2147483647") if t == "INT" else (_LONG_MIN, "9223372036854775807L")
    )
    d = f"try_cast({x} AS DOUBLE)"
    cut = (
        f"CASE WHEN isnan({d}) THEN 0 WHEN {d} >= {hi} THEN {hi} WHEN {d} <= {lo} THEN {lo} "
        f"ELSE CAST({d} AS {t}) END"
    )
    whole = f"try_cast({x} AS {t})"
    if t == "BIGINT":  # a whole number is that long; other text may be a timestamp
        whole = f"coalesce({whole}, unix_millis({_text_to_timestamp(x)}))"
    out = _Node(f"coalesce({whole}, {cut})", t)
    # text that is no number (nor, into LONG, a timestamp): Double.parseDouble throws
    return replace(out, fails=_any(n.fails, _conv_fails(n, out, t)))


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


#: the epoch millis Spark's ``timestamp_millis`` takes (past them it throws, failing the
#: whole batch: ``Math.multiplyExact`` into micros)
_MILLIS_MAX = "9223372036854775"


def millis_ts(millis: str) -> str:
    """``timestamp_millis(millis)``, null where Spark's would overflow."""
    return (
        f"CASE WHEN ({millis}) BETWEEN -{_MILLIS_MAX} AND {_MILLIS_MAX} "
        f"THEN timestamp_millis({millis}) END"
    )


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
        f"coalesce({millis_ts(f'try_cast({x} AS BIGINT)')}, CASE WHEN {x} RLIKE {zoned} "
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
    return f"unix_millis(from_utc_timestamp({millis_ts(millis)}, {tz.sql}))"


def _from_local(millis: str, tz: _Node | None) -> str:
    """The epoch millis of the wall clock ``millis`` (read as UTC) in zone ``tz``."""
    if _utc(tz):
        return millis
    assert tz is not None
    return f"unix_millis(to_utc_timestamp({millis_ts(millis)}, {tz.sql}))"


def _var(name: str) -> str:
    """The pipeline variable holding the record's field ``name`` (its text)."""
    return "`@" + name.replace("`", "``") + "`"


def _first_existing(name: str, value: _Node) -> _Node:
    """What a transform's destination ``name`` holds after Pinot's ``ExpressionTransformer``:
    it skips a transform when the record already has a non-null value for the column (the
    record extractor reads every destination for that reason), so the record's own value
    wins, converted as the transform's value would be, and ``value`` fills the rest."""
    var = _Node(_var(name), None)
    t = value.type
    if t is None or value.is_null:  # text, or not known: the record's text as it is
        return _Node(f"coalesce({var.sql}, {value.sql})", None)
    if t.startswith("ARRAY"):  # a multi-value field's JSON text; a single value: one element
        own = f"coalesce(from_json({var.sql}, '{t}'), array({var.sql}))"
    else:
        own = _as(var, t).sql
    return _Node(f"CASE WHEN {var.sql} IS NOT NULL THEN {own} ELSE {value.sql} END", t)


def _floordiv(a: str, n: int) -> str:
    return f"(({a}) - pmod({a}, {n})) div {n}"


# ---------------------------------------------------------------------------------------
# the function registry


class _Fail(Exception):
    """A builder's complaint about its arguments (the parser adds where and position)."""


#: a builder writes the SQL of a call; one whose type depends on its arguments returns the
#: typed node (``dateTimeConvert``: BIGINT or STRING by its output format)
_Build = Callable[[list[_Node]], str | _Node]


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

    def _converted(self, args: list[_Node]) -> list[tuple[_Node, str | None]]:
        types = list(self.types)
        if self.max_args is None:
            types += [types[-1]] * (len(args) - len(types))
        return [(a if t is None else _as(a, t), t) for a, t in zip(args, types)]

    def sql(self, args: list[_Node]) -> str | _Node:
        conv = [c for c, _ in self._converted(args)]
        if callable(self.build):
            return self.build(conv)
        template = self.build if isinstance(self.build, str) else self.build[len(args)]
        return template.format(*(a.sql for a in conv))

    def fails(self, args: list[_Node], built: str | _Node) -> str | None:
        """Where Pinot's call of this function over ``args`` (``built`` by :meth:`sql`)
        throws: an argument's evaluation throws (Pinot evaluates every argument first),
        or, every argument non-null, one's text does not convert to the parameter's type
        (``FunctionInvoker.convertTypes``), or the function itself throws (a builder's
        node says where)."""
        conv = [
            _conv_fails(a, c, t) if t is not None else None
            for a, (c, t) in zip(args, self._converted(args))
        ]
        own = built.fails if isinstance(built, _Node) else None
        return _any(*(a.fails for a in args), _guarded(_any(*conv), args), own)


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


#: lower-cased Pinot name without underscores → the function
FUNCTIONS: Mapping[str, Function] = MappingProxyType(_REGISTRY)

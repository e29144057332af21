"""Small read-only queries answered without starting Spark.

A cold ``sparkpipes sql -e "SELECT count(*) FROM t"`` would spend seconds starting a JVM for
a query Apache DataFusion (``deltalake``'s ``QueryBuilder``) answers in milliseconds from the
table's Delta snapshot. :func:`answer` takes such a query only where it can promise what Spark
SQL (ANSI mode, as the engine runs it) gives: the same column names, rows, Python values and
types. The user can tell the engines apart by speed only. It accepts a whitelist, checked
node by node on sqlglot's tree of the query:

* ``FROM`` one local warehouse table, optionally aliased; no joins, subqueries, CTEs, hints;
* ``SELECT [DISTINCT]`` of ``*``, columns, literals (integers, decimals, strings, booleans,
  ``NULL``, ``DATE '…'``) and ``count(*)``, ``count(col)``, ``count(DISTINCT col)``,
  ``sum``, ``min``, ``max``, ``avg`` of a column, each optionally aliased;
* ``WHERE`` and ``HAVING``: comparisons, ``<=>``, AND / OR / NOT, IS [NOT] NULL, [NOT] IN
  lists, [NOT] BETWEEN, [NOT] LIKE with a pattern without backslashes;
* ``GROUP BY`` columns or select-list positions; ``ORDER BY`` columns, aliases, aggregates or
  positions with ASC / DESC and NULLS FIRST / LAST (Spark's defaults made explicit); LIMIT.

What the engines do differently falls back: timestamp, binary and nested columns (Spark
returns timestamps in its session time zone); floating-point columns anywhere but a plain
projection or a count (NaN and -0.0 compare, group and order differently); sums and averages
of integers whose bounds (from the Delta statistics) do not rule out an overflow or an inexact
partial sum; comparisons of types Spark casts by its own rules. That, and any failure at all,
returns ``None``: Spark answers the query and raises its usual errors.

Importing this module is cheap (sqlglot and deltalake are imported on use): the CLI's start-up
time matters.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.results import Result

if TYPE_CHECKING:
    from sparkpipes.engine import Engine

#: set to 0 to send every query to Spark
ENV = "SPARKPIPES_QUICK_QUERIES"
log = logging.getLogger("sparkpipes.sql.quick")

_INT64 = 2**63 - 1
_EXACT_DOUBLE = 2**53  # integers up to this add up exactly as doubles, in any order
#: sqlglot token types the whitelist is written in (others: Spark's to answer)
_TOKENS = frozenset(
    (
        *("SELECT", "DISTINCT", "FROM", "WHERE", "GROUP_BY", "HAVING", "ORDER_BY", "LIMIT"),
        *("ASC", "DESC", "FIRST", "AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE"),
        *("TRUE", "FALSE", "DATE", "ALIAS", "VAR", "IDENTIFIER", "NUMBER", "STRING", "COMMA"),
        *("DOT", "L_PAREN", "R_PAREN", "STAR", "DASH", "EQ", "NEQ", "LT", "LTE", "GT", "GTE"),
        *("NULLSAFE_EQ", "SEMICOLON"),
    )
)
_CLAUSES = ("expressions", "distinct", "from_", "where", "group", "having", "order", "limit")


class _Fallback(Exception):
    """The query is Spark's to answer."""


class _Refused(Exception):
    """``reads`` refused the table: its error is the answer."""

    def __init__(self, error: SparkpipesError) -> None:
        super().__init__(error.message)
        self.error = error


def wanted() -> bool:
    """False when ``$SPARKPIPES_QUICK_QUERIES`` is 0."""
    return os.environ.get(ENV, "1").strip() != "0"


def usable(engine: Engine) -> bool:
    """The fast path serves a cold process: once Spark runs in it, Spark answers."""
    runtime = getattr(engine, "rt", None)
    return wanted() and runtime is not None and not runtime.spark_started


def answer(
    engine: Engine,
    text: str,
    *,
    max_rows: int | None = None,
    reads: Callable[[list[str]], None] | None = None,
) -> Result | None:
    """Spark's result of query ``text``, computed without Spark; ``None`` when the query is
    not one this module can answer exactly as Spark would (never an error of its own).
    ``max_rows`` as in ``SqlSession``: at most this many rows plus one. ``reads`` is told
    the table before it is read (the privilege check: its errors are raised)."""
    try:
        return _answer(engine, text, max_rows, reads)
    except _Fallback:
        return None
    except _Refused as e:
        raise e.error from None
    except Exception:  # promised: the fast path never raises; Spark answers instead
        log.debug("quick path gave up on %r", text, exc_info=True)
        return None


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


# -- the query --------------------------------------------------------------------------
def _answer(
    engine: Engine, text: str, max_rows: int | None, reads: Callable[[list[str]], None] | None
) -> Result:
    import sqlglot
    from sqlglot import exp

    from sparkpipes.engine.sql.dialect import translate
    from sparkpipes.util.sparkfiles import remote

    views: list[str] = []
    if translate(text, on_view=views.append) != text or views:
        raise _Fallback  # information_schema, JSON helpers, @variables: Spark's
    tokens = sqlglot.tokenize(text, read="spark")
    for i, tok in enumerate(tokens):
        kind = tok.token_type.name
        if kind not in _TOKENS or (kind == "SEMICOLON" and i != len(tokens) - 1):
            raise _Fallback
        if kind == "STRING" and ("\\" in text[tok.start : tok.end + 1] or "'" in tok.text):
            raise _Fallback  # escapes: the engines' string literals differ
    tree = sqlglot.parse_one(text, read="spark")
    if not isinstance(tree, exp.Select):
        raise _Fallback
    _only(tree, *_CLAUSES)
    source = tree.args.get("from_")
    if source is None:
        raise _Fallback
    table = source.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise _Fallback
    _only(source, "this")
    _only(table, "this", "alias")
    alias = table.args.get("alias")
    if alias is not None:
        _only(alias, "this")
    names = [t for t in engine.tables() if t.lower() == table.name.lower()]
    if len(names) != 1:
        raise _Fallback
    if reads is not None:
        try:
            reads(names)
        except SparkpipesError as e:
            raise _Refused(e) from None
    rec = engine.catalog.table(names[0])
    if remote(rec.location):
        raise _Fallback
    delta = _open(rec)
    plan = _Plan(rec.schema, (alias.name if alias is not None else table.name).lower(), delta)
    sql = plan.build(tree, max_rows)
    commas = sum(t.token_type.name == "COMMA" for t in tokens)
    parens = sum(t.token_type.name == "L_PAREN" for t in tokens)
    if (commas, parens) != (plan.commas, plan.parens):
        raise _Fallback  # sqlglot forgave something (a trailing comma …) Spark rejects
    return plan.run(sql)


def _open(rec: Any) -> Any:
    """The table's Delta snapshot, if DataFusion reads the rows Spark reads from it."""
    import pyarrow as pa
    from deltalake import DeltaTable

    delta = DeltaTable(rec.location)
    if delta.protocol().min_reader_version != 1 or delta.metadata().partition_columns:
        raise _Fallback  # deletion vectors, column mapping, partition values: Spark reads files
    schema = pa.schema(delta.schema().to_arrow())
    if schema.names != rec.schema.names:
        raise _Fallback
    for a, b in zip(schema, rec.schema, strict=True):
        if _arrow_type(a.type) != _arrow_type(b.type):
            raise _Fallback
    return delta


class _Plan:
    """One SELECT, checked and written out in DataFusion's SQL."""

    def __init__(self, schema: Any, qualifier: str, delta: Any) -> None:
        self.fields = [(f.name, _arrow_type(f.type)) for f in schema]
        self.qualifier = qualifier
        self.delta = delta
        self.items: list[_Item] = []
        self.commas = 0
        self.parens = 0
        self._magnitudes: dict[str, int | None] | None = None

    # -- clauses --------------------------------------------------------------------------
    def build(self, tree: Any, max_rows: int | None) -> str:
        from sqlglot import exp

        distinct = tree.args.get("distinct")
        if distinct is not None:
            _only(distinct)
        selected = tree.expressions
        if not selected:
            raise _Fallback
        self.commas += len(selected) - 1
        for node in selected:
            self._select(node)
        aggregated = any(i.e.agg for i in self.items)
        if distinct is not None and any(
            i.e.avg_of is not None or (i.e.t.kind == "float" and not i.e.t.exact)
            for i in self.items
        ):
            raise _Fallback
        parts = ["SELECT DISTINCT" if distinct is not None else "SELECT", self._outputs()]
        parts.append('FROM "q"')
        where = tree.args.get("where")
        if where is not None:
            parts.append("WHERE " + self._pred(where.this, agg=False))
        group = tree.args.get("group")
        if group is not None:
            _only(group, "expressions")
            if not group.expressions:
                raise _Fallback
            self.commas += len(group.expressions) - 1
            parts.append("GROUP BY " + ", ".join(self._group(g) for g in group.expressions))
            aggregated = True
        having = tree.args.get("having")
        if having is not None:
            if not aggregated:
                raise _Fallback
            parts.append("HAVING " + self._pred(having.this, agg=True))
        order = tree.args.get("order")
        if order is not None:
            _only(order, "expressions")
            self.commas += len(order.expressions) - 1
            keys = [self._order(o, aggregated, distinct is not None) for o in order.expressions]
            parts.append("ORDER BY " + ", ".join(keys))
        limit = tree.args.get("limit")
        n = None
        if limit is not None:
            _only(limit, "expression")
            lit = limit.expression
            if not isinstance(lit, exp.Literal) or lit.is_string or not lit.this.isdigit():
                raise _Fallback
            n = int(lit.this)
        if max_rows is not None:
            n = max_rows + 1 if n is None else min(n, max_rows + 1)
        if n is not None:
            parts.append(f"LIMIT {n}")
        return " ".join(parts)

    def _outputs(self) -> str:
        out = []
        for k, item in enumerate(self.items):
            e = item.e
            if e.avg_of is not None:
                out.append(f'sum({e.avg_of}) AS "c{k}", count({e.avg_of}) AS "n{k}"')
            else:
                out.append(f'{e.sql} AS "c{k}"')
        return ", ".join(out)

    def _select(self, node: Any) -> None:
        from sqlglot import exp

        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            star = node if isinstance(node, exp.Star) else node.this
            _only(star)
            if isinstance(node, exp.Column):
                _only(node, "this", "table")
                if node.args.get("table") is not None and node.table.lower() != self.qualifier:
                    raise _Fallback
            for name, t in self.fields:
                if t is None:
                    raise _Fallback
                self.items.append(_Item(_E(_q(name), t, name), name, False))
            return
        if isinstance(node, exp.Alias):
            _only(node, "this", "alias")
            e = self._value(node.this, agg=True)
            self.items.append(_Item(e, node.alias, True))
            return
        e = self._value(node, agg=True)
        self.items.append(_Item(e, e.name, False))

    def _group(self, node: Any) -> str:
        from sqlglot import exp

        if isinstance(node, exp.Literal) and not node.is_string:
            e = self._ordinal(node)
            if e.agg or not e.sql.startswith('"'):
                raise _Fallback  # a position must name a column
        elif isinstance(node, exp.Column):
            e = self._column(node)
        else:
            raise _Fallback
        if e.t.kind not in _ORDERED:
            raise _Fallback
        return e.sql

    def _order(self, node: Any, aggregated: bool, distinct: bool) -> str:
        from sqlglot import exp

        if not isinstance(node, exp.Ordered):
            raise _Fallback
        _only(node, "this", "desc", "nulls_first")
        what = node.this
        if isinstance(what, exp.Literal) and not what.is_string:
            e = self._ordinal(what)
        elif isinstance(what, exp.Column) and what.args.get("table") is None:
            # Spark resolves ORDER BY names against the select list first
            ident = what.this
            if not isinstance(ident, exp.Identifier):
                raise _Fallback
            _only(what, "this")
            named = [i for i in self.items if i.name.lower() == ident.this.lower()]
            if len({i.e.sql for i in named}) > 1 or any(
                not i.alias and not i.e.sql.startswith('"') for i in named
            ):
                raise _Fallback
            e = named[0].e if named else self._column(what)
        elif isinstance(what, (exp.Column, exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)):
            e = self._value(what, agg=aggregated)
        else:
            raise _Fallback  # a constant: Spark keeps any order, so may DataFusion, but why
        if e.avg_of is not None or (e.t.kind not in (*_ORDERED, "null") and not e.t.exact):
            raise _Fallback
        sql = next((f'"c{k}"' for k, i in enumerate(self.items) if i.e.sql == e.sql), None)
        if sql is None:
            if distinct:
                raise _Fallback
            sql = e.sql
        desc = bool(node.args.get("desc"))
        first = node.args.get("nulls_first")
        first = (not desc) if first is None else bool(first)
        return f"{sql} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if first else 'LAST'}"

    def _ordinal(self, node: Any) -> _E:
        if not node.this.isdigit() or not 1 <= int(node.this) <= len(self.items):
            raise _Fallback
        return self.items[int(node.this) - 1].e

    # -- expressions ----------------------------------------------------------------------
    def _column(self, node: Any) -> _E:
        from sqlglot import exp

        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            raise _Fallback
        _only(node, "this", "table")
        if node.args.get("table") is not None and node.table.lower() != self.qualifier:
            raise _Fallback
        typed = node.this.this
        found = [(n, t) for n, t in self.fields if n.lower() == typed.lower()]
        if len(found) != 1 or found[0][1] is None:
            raise _Fallback
        name, t = found[0]
        return _E(_q(name), t, typed)

    def _value(self, node: Any, *, agg: bool, having: bool = False) -> _E:
        from sqlglot import exp

        if isinstance(node, exp.Column):
            return self._having_column(node) if having else self._column(node)
        if agg and isinstance(node, (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)):
            return self._aggregate(node)
        return _literal(node)

    def _having_column(self, node: Any) -> _E:
        """A name in HAVING: a select-list alias, else a column; both, unless the same, is
        Spark's to decide."""
        from sqlglot import exp

        if node.args.get("table") is not None or not isinstance(node.this, exp.Identifier):
            return self._column(node)
        typed = node.this.this.lower()
        aliased = {i.e.sql: i.e for i in self.items if i.alias and i.name.lower() == typed}
        if not aliased:
            return self._column(node)
        if len(aliased) > 1:
            raise _Fallback
        (e,) = aliased.values()
        if any(n.lower() == typed for n, _ in self.fields) and self._column(node).sql != e.sql:
            raise _Fallback
        return e

    def _aggregate(self, node: Any) -> _E:
        from sqlglot import exp

        self.parens += 1
        fn = type(node).__name__.lower()
        arg = node.this
        if isinstance(node, exp.Count):
            _only(node, "this", "big_int")
            if isinstance(arg, exp.Star):
                _only(arg)
                return _E("count(*)", _BIGINT, "count(1)", agg=True)
            if isinstance(arg, exp.Literal):
                lit = _literal(arg)
                if lit.t.kind != "int":
                    raise _Fallback
                return _E("count(*)", _BIGINT, f"count({lit.name})", agg=True)
            if isinstance(arg, exp.Distinct):
                _only(arg, "expressions")
                if len(arg.expressions) != 1:
                    raise _Fallback
                col = self._column(arg.expressions[0])
                if col.t.kind == "float":
                    raise _Fallback
                name = f"count(DISTINCT {col.name})"
                return _E(f"count(DISTINCT {col.sql})", _BIGINT, name, agg=True)
            col = self._column(arg)
            return _E(f"count({col.sql})", _BIGINT, f"count({col.name})", agg=True)
        _only(node, "this")
        col = self._column(arg)
        name, t = f"{fn}({col.name})", col.t
        if fn in ("min", "max"):
            if t.kind not in _ORDERED:
                raise _Fallback
            return _E(f"{fn}({col.sql})", t, name, agg=True)
        if t.kind == "dec" and t.p <= 28:  # wider sums may overflow: Spark's errors
            if fn == "sum":
                return _E(f"sum({col.sql})", _T("dec", t.p + 10, t.s), name, agg=True)
            return _E(f"avg({col.sql})", _T("dec", t.p + 4, t.s + 4), name, True, avg_of=col.sql)
        if t.kind != "int":
            raise _Fallback
        magnitude = self._magnitude(col.sql)
        if fn == "sum" and magnitude is not None and magnitude <= _INT64:
            return _E(f"sum(CAST({col.sql} AS BIGINT))", _BIGINT, name, agg=True)
        if fn == "avg" and magnitude is not None and magnitude <= _EXACT_DOUBLE:
            return _E(f"avg(CAST({col.sql} AS DOUBLE))", _T("float", exact=True), name, True)
        raise _Fallback

    def _magnitude(self, column: str) -> int | None:
        """A bound on the sum of the absolute values of ``column`` (largest absolute value
        times rows, from the Delta statistics); ``None`` without statistics. Within bounds no
        partial sum of Spark's, in whatever order, overflows a BIGINT or rounds a double."""
        import pyarrow as pa

        if self._magnitudes is None:
            self._magnitudes = {}
            stats = self.delta.get_add_actions(flatten=True)  # pa.table() would import pandas
            actions = pa.RecordBatchReader.from_stream(stats).read_all().to_pylist()
            for name, t in self.fields:
                if t is not None and t.kind == "int":
                    self._magnitudes[_q(name)] = _bound(actions, name)
        return self._magnitudes.get(column)

    def _pred(self, node: Any, *, agg: bool) -> str:
        from sqlglot import exp

        compare = {
            exp.EQ: "=",
            exp.NEQ: "<>",
            exp.GT: ">",
            exp.GTE: ">=",
            exp.LT: "<",
            exp.LTE: "<=",
            exp.NullSafeEQ: "IS NOT DISTINCT FROM",
        }
        if isinstance(node, exp.Paren):
            self.parens += 1
            return f"({self._pred(node.this, agg=agg)})"
        if isinstance(node, (exp.And, exp.Or)):
            op = "AND" if isinstance(node, exp.And) else "OR"
            _only(node, "this", "expression")
            left, right = self._pred(node.this, agg=agg), self._pred(node.expression, agg=agg)
            return f"({left} {op} {right})"
        if isinstance(node, exp.Not):
            return f"(NOT {self._pred(node.this, agg=agg)})"
        if type(node) in compare:
            _only(node, "this", "expression")
            null_ok = isinstance(node, exp.NullSafeEQ)
            left = self._operand(node.this, agg, null_ok=null_ok)
            right = self._operand(node.expression, agg, null_ok=null_ok)
            left, right = _comparable(left, right)
            return f"({left.sql} {compare[type(node)]} {right.sql})"
        if isinstance(node, exp.Is):
            _only(node, "this", "expression", "negate")
            if not isinstance(node.expression, exp.Null):
                raise _Fallback
            what = self._value(node.this, agg=agg, having=agg)
            if what.avg_of is not None:
                raise _Fallback
            return f"({what.sql} IS {'NOT ' if node.args.get('negate') else ''}NULL)"
        if isinstance(node, exp.In):
            _only(node, "this", "expressions")
            if not node.expressions:
                raise _Fallback
            self.parens += 1
            self.commas += len(node.expressions) - 1
            left = self._operand(node.this, agg)
            items = []
            for x in node.expressions:
                a, b = _comparable(left, self._operand(x, agg))
                left = a
                items.append(b.sql)
            return f"({left.sql} IN ({', '.join(items)}))"
        if isinstance(node, exp.Between):
            _only(node, "this", "low", "high")
            what = self._operand(node.this, agg)
            lo = _comparable(what, self._operand(node.args["low"], agg))
            hi = _comparable(what, self._operand(node.args["high"], agg))
            return f"({lo[0].sql} >= {lo[1].sql} AND {hi[0].sql} <= {hi[1].sql})"
        if isinstance(node, exp.Like):
            _only(node, "this", "expression", "negate")
            what = self._operand(node.this, agg)
            pattern = _literal(node.expression)
            if what.t.kind != "str" or pattern.text is None:
                raise _Fallback
            neg = "NOT " if node.args.get("negate") else ""
            return f"({what.sql} {neg}LIKE {pattern.sql})"
        if isinstance(node, exp.Column):
            e = self._value(node, agg=agg, having=agg)
            if e.t.kind != "bool":
                raise _Fallback
            return e.sql
        if isinstance(node, exp.Boolean):
            return _literal(node).sql
        raise _Fallback

    def _operand(self, node: Any, agg: bool, *, null_ok: bool = False) -> _E:
        """A value compared in WHERE or HAVING. A NULL literal only with ``<=>``: DataFusion
        simplifies NULL to FALSE in a filter, also under NOT (``NOT (a IN (1, NULL))``)."""
        e = self._value(node, agg=agg, having=agg)
        if e.avg_of is not None or (e.t.kind == "float" and not e.t.exact):
            raise _Fallback
        if e.t.kind == "null" and not null_ok:
            raise _Fallback
        return e

    # -- running ------------------------------------------------------------------------
    def run(self, sql: str) -> Result:
        import pyarrow as pa
        from deltalake import QueryBuilder

        reader = QueryBuilder().register("q", self.delta).execute(sql)
        table = pa.RecordBatchReader.from_stream(reader).read_all()
        columns = []
        for k, item in enumerate(self.items):
            e = item.e
            if e.avg_of is not None:
                total, n = table.column(f"c{k}"), table.column(f"n{k}")
                if not _delivers(total.type, _T("dec", e.t.p + 6, e.t.s - 4)):
                    raise _Fallback
                values = [
                    _as_spark(_spark_avg(v, c, e.t.s))
                    for v, c in zip(total.to_pylist(), n.to_pylist(), strict=True)
                ]
            else:
                col = table.column(f"c{k}")
                if not _delivers(col.type, e.t):
                    raise _Fallback
                values = col.to_pylist()
            if e.t.kind == "dec":
                values = [_as_spark(v) for v in values]
            columns.append(values)
        rows = list(zip(*columns, strict=True)) if table.num_rows else []
        return Result([i.name for i in self.items], rows)


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


def _bound(actions: list[dict[str, Any]], name: str) -> int | None:
    largest, rows = 0, 0
    for a in actions:
        n, nulls = a.get("num_records"), a.get(f"null_count.{name}")
        if n is None:
            return None
        rows += n
        if nulls == n:
            continue
        lo, hi = a.get(f"min.{name}"), a.get(f"max.{name}")
        if lo is None or hi is None:
            return None
        largest = max(largest, abs(int(lo)), abs(int(hi)))
    return largest * rows


def _spark_avg(total: Decimal | None, n: int, scale: int) -> Decimal | None:
    """Spark's avg of a DECIMAL column from its sum and count: the quotient rounded half up
    to 38 places, then to ``scale`` (of Spark's result type, the column's scale + 4)."""
    if total is None or not n:
        return None
    sign, digits, exponent = total.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    q38 = _div_half_up(unscaled * 10 ** (38 + int(exponent)), n)
    q = _div_half_up(q38, 10 ** (38 - scale))
    return Decimal(f"{q}E-{scale}")


def _as_spark(v: Decimal | None) -> Decimal | None:
    """``v`` as PySpark hands it over: through Java's engineering notation, so 1E-20 of a
    DECIMAL(38, 20) arrives as Decimal('1.0E-20') (equal, but printed differently)."""
    if v is None or "E" not in str(v):
        return v
    return Decimal(v.to_eng_string())


def _div_half_up(a: int, b: int) -> int:
    q, r = divmod(abs(a), b)
    if 2 * r >= b:
        q += 1
    return q if a >= 0 else -q

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

The parts: this module decides whether a query is one to take (its tokens, its one table
and how that table is stored) and answers; ``quick_plan`` checks the SELECT clause by clause
and writes it in DataFusion's SQL, ``quick_values`` types its values as Spark does,
``quick_run`` runs it and hands back Spark's rows.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkpipes.catalog.settings import DEFAULT_DATABASE
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.quick_plan import _Plan
from sparkpipes.frontends.singlestore.quick_run import run
from sparkpipes.frontends.singlestore.quick_values import _arrow_type, _Fallback, _only
from sparkpipes.frontends.singlestore.results import Result
from sparkpipes.util.sparkfiles import remote

if TYPE_CHECKING:
    from sparkpipes.engine import Engine

#: set to 0 to send every query to Spark
ENV = "SPARKPIPES_QUICK_QUERIES"
log = logging.getLogger("sparkpipes.sql.quick")

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


# -- the query --------------------------------------------------------------------------
def _answer(
    engine: Engine, text: str, max_rows: int | None, reads: Callable[[list[str]], None] | None
) -> Result:
    import sqlglot
    from sqlglot import exp

    from sparkpipes.engine.sql.dialect import translate

    views: list[str] = []
    names = (DEFAULT_DATABASE, engine.catalog.database.name())
    if translate(text, on_view=views.append, databases=names) != text or views:
        raise _Fallback  # information_schema, JSON helpers, @variables, db.t: Spark's
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
    rec = engine.catalog.tables.get(names[0])
    if remote(rec.location):
        raise _Fallback
    delta = _open(rec)
    plan = _Plan(rec.schema, (alias.name if alias is not None else table.name).lower(), delta)
    sql = plan.build(tree, max_rows)
    commas = sum(t.token_type.name == "COMMA" for t in tokens)
    parens = sum(t.token_type.name == "L_PAREN" for t in tokens)
    if (commas, parens) != (plan.commas, plan.parens):
        raise _Fallback  # sqlglot forgave something (a trailing comma …) Spark rejects
    return run(plan.delta, plan.items, sql)


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

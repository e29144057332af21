"""Statement nodes of queries and DML: ``Query`` (handed to Spark SQL as written),
``INSERT | REPLACE INTO``, ``DELETE`` and ``UPDATE``."""

from __future__ import annotations

from dataclasses import dataclass

from sparkpipes.frontends.singlestore.ast_base import Expr, Node, Statement, quote_ident
from sparkpipes.frontends.singlestore.ast_pipelines import Assignment


@dataclass(frozen=True)
class OrderItem(Node):
    """``expr [ASC | DESC]`` of a DELETE's or UPDATE's ``ORDER BY``."""

    expr: Expr
    desc: bool = False

    def to_sql(self) -> str:
        return self.expr.to_sql() + (" DESC" if self.desc else "")


def _order_limit(order: tuple[OrderItem, ...], limit: int | None) -> str:
    """`` ORDER BY … LIMIT n`` as written back (empty when neither is given)."""
    out = " ORDER BY " + ", ".join(o.to_sql() for o in order) if order else ""
    return out + (f" LIMIT {limit}" if limit is not None else "")


@dataclass(frozen=True)
class Query(Statement):
    """A statement handed to Spark SQL untouched: SELECT, WITH, EXPLAIN, ``(``, and the
    SHOW forms the dialect does not model. ``text`` is normalized like ``Expr.text``."""

    text: str

    def to_sql(self) -> str:
        return self.text


@dataclass(frozen=True)
class Insert(Statement):
    """``INSERT|REPLACE INTO table [(columns)] VALUES (…), …`` or ``… SELECT …``.

    Exactly one of ``rows`` (a tuple of rows of expressions) and ``query`` is non-empty.
    """

    table: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Expr, ...], ...] = ()
    query: Query | None = None
    #: ``REPLACE INTO``: a row replaces the one with the same primary key
    replace: bool = False
    #: ``… SELECT … ON DUPLICATE KEY UPDATE col = expr, …``
    on_duplicate: tuple[Assignment, ...] = ()
    #: ``INSERT IGNORE``: a row whose primary key the table (or an earlier row) holds is
    #: skipped
    ignore: bool = False

    def to_sql(self) -> str:
        verb = "REPLACE" if self.replace else "INSERT IGNORE" if self.ignore else "INSERT"
        out = f"{verb} INTO {quote_ident(self.table)}"
        if self.columns:
            out += " (" + ", ".join(quote_ident(c) for c in self.columns) + ")"
        if self.query is not None:
            out = f"{out} {self.query.to_sql()}"
            if self.on_duplicate:
                updates = ", ".join(a.to_sql() for a in self.on_duplicate)
                out += f" ON DUPLICATE KEY UPDATE {updates}"
            return out
        rows = ", ".join("(" + ", ".join(e.to_sql() for e in row) + ")" for row in self.rows)
        return f"{out} VALUES {rows}"


@dataclass(frozen=True)
class Delete(Statement):
    """``DELETE FROM table [[AS] alias] [WHERE condition] [ORDER BY …] [LIMIT n]``, or
    MySQL's multi-table form with one other table: ``DELETE t FROM t [AS a] JOIN u [AS b]
    [ON c] [WHERE w] [LIMIT n]`` (the rows of ``t`` that some row of ``u`` joins).
    ``limit``: at most this many of the rows the condition holds for go, the first ones in
    ``order`` (MySQL's single-table form; SingleStore documents LIMIT for both)."""

    table: str
    alias: str | None = None
    where: Expr | None = None
    #: the joined table and its alias, and the join's ON condition
    join: str | None = None
    join_alias: str | None = None
    on: Expr | None = None
    order: tuple[OrderItem, ...] = ()
    limit: int | None = None

    def to_sql(self) -> str:
        name = quote_ident(self.alias or self.table)
        out = f"DELETE {name} FROM " if self.join else "DELETE FROM "
        out += quote_ident(self.table)
        if self.alias:
            out += f" AS {quote_ident(self.alias)}"
        if self.join:
            out += f" JOIN {quote_ident(self.join)}"
            if self.join_alias:
                out += f" AS {quote_ident(self.join_alias)}"
            if self.on:
                out += f" ON {self.on.to_sql()}"
        out = f"{out} WHERE {self.where.to_sql()}" if self.where else out
        return out + _order_limit(self.order, self.limit)

    def condition(self) -> str:
        """Which rows go, as one condition over the table's row (the join: EXISTS)."""
        where = self.where.text if self.where is not None else "TRUE"
        if not self.join:
            return where
        joined = quote_ident(self.join)
        if self.join_alias:
            joined += f" AS {quote_ident(self.join_alias)}"
        on = self.on.text if self.on is not None else "TRUE"
        return f"EXISTS (SELECT 1 FROM {joined} WHERE ({on}) AND ({where}))"


@dataclass(frozen=True)
class Update(Statement):
    """``UPDATE table [[AS] alias] SET col = expr, … [WHERE condition] [ORDER BY …]
    [LIMIT n]`` (one table; LIMIT: of the rows the condition holds for, as MySQL counts)."""

    table: str
    assignments: tuple[Assignment, ...]
    alias: str | None = None
    where: Expr | None = None
    order: tuple[OrderItem, ...] = ()
    limit: int | None = None

    def to_sql(self) -> str:
        out = f"UPDATE {quote_ident(self.table)}"
        if self.alias:
            out += f" AS {quote_ident(self.alias)}"
        out += " SET " + ", ".join(a.to_sql() for a in self.assignments)
        out = f"{out} WHERE {self.where.to_sql()}" if self.where else out
        return out + _order_limit(self.order, self.limit)

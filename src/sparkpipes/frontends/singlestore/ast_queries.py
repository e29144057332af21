"""Statement nodes of queries and DML: ``Query`` (handed to Spark SQL as written) and
``INSERT | REPLACE INTO``."""

from __future__ import annotations

from dataclasses import dataclass

from sparkpipes.frontends.singlestore.ast_base import Expr, Statement, quote_ident
from sparkpipes.frontends.singlestore.ast_pipelines import Assignment


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

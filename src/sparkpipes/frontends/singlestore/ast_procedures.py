"""Statement nodes of stored procedures: ``CREATE [OR REPLACE] PROCEDURE`` with its
parameters, ``DROP PROCEDURE`` and ``SHOW PROCEDURES``."""

from __future__ import annotations

from dataclasses import dataclass

from sparkpipes.frontends.singlestore.ast_base import (
    DataType,
    Node,
    Statement,
    quote_ident,
    quote_string,
)


@dataclass(frozen=True)
class DropProcedure(Statement):
    """``DROP PROCEDURE [IF EXISTS] name``."""

    name: str
    if_exists: bool = False

    def to_sql(self) -> str:
        return "DROP PROCEDURE " + ("IF EXISTS " if self.if_exists else "") + quote_ident(self.name)


@dataclass(frozen=True)
class ShowProcedures(Statement):
    """``SHOW PROCEDURES [LIKE 'pattern']``."""

    like: str | None = None

    def to_sql(self) -> str:
        like = f" LIKE {quote_string(self.like)}" if self.like is not None else ""
        return "SHOW PROCEDURES" + like


@dataclass(frozen=True)
class ProcedureParam(Node):
    """A stored-procedure parameter, e.g. ``batch QUERY(id BIGINT, record JSON)``."""

    name: str
    type: DataType

    def to_sql(self) -> str:
        return f"{quote_ident(self.name)} {self.type.to_sql()}"


@dataclass(frozen=True)
class CreateProcedure(Statement):
    """``CREATE [OR REPLACE] PROCEDURE name (params) [RETURNS type] AS [DECLARE …] BEGIN …
    END``; ``body`` is the text from DECLARE/BEGIN to the final END, normalized like
    ``Expr.text``."""

    name: str
    params: tuple[ProcedureParam, ...]
    body: str
    or_replace: bool = False
    returns: DataType | None = None

    def to_sql(self) -> str:
        out = "CREATE " + ("OR REPLACE " if self.or_replace else "") + "PROCEDURE "
        out += quote_ident(self.name)
        out += "(" + ", ".join(p.to_sql() for p in self.params) + ")"
        if self.returns is not None:
            out += f" RETURNS {self.returns.to_sql()}"
        return f"{out} AS {self.body}"

"""Statement nodes of session settings: ``SET [GLOBAL|SESSION] name = value``, ``SHOW
VARIABLES``, and the database: ``CREATE DATABASE``, ``USE``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal as Lit

from sparkpipes.frontends.singlestore.ast_base import Literal, Statement, quote_ident, quote_string


def _dotted(name: str) -> str:
    return ".".join(quote_ident(part) for part in name.split("."))


@dataclass(frozen=True)
class SetVariable(Statement):
    """``SET [GLOBAL|SESSION] name = value``; ``SET @@GLOBAL.name = value`` parses to the
    same node. ``name`` may be dotted (``spark.sql.shuffle.partitions``)."""

    name: str
    value: Literal
    scope: Lit["GLOBAL", "SESSION"] | None = None

    def to_sql(self) -> str:
        scope = f"{self.scope} " if self.scope else ""
        return f"SET {scope}{_dotted(self.name)} = {self.value.to_sql()}"


@dataclass(frozen=True)
class ShowVariables(Statement):
    """``SHOW [GLOBAL|SESSION] VARIABLES [LIKE 'pattern']``."""

    scope: Lit["GLOBAL", "SESSION"] | None = None
    like: str | None = None

    def to_sql(self) -> str:
        out = "SHOW " + (f"{self.scope} " if self.scope else "") + "VARIABLES"
        return out + (f" LIKE {quote_string(self.like)}" if self.like is not None else "")


@dataclass(frozen=True)
class CreateDatabase(Statement):
    """``CREATE DATABASE [IF NOT EXISTS] name``: names the warehouse's one database
    (``catalog.settings.Database``)."""

    name: str
    if_not_exists: bool = False

    def to_sql(self) -> str:
        exists = "IF NOT EXISTS " if self.if_not_exists else ""
        return f"CREATE DATABASE {exists}{quote_ident(self.name)}"


@dataclass(frozen=True)
class UseDatabase(Statement):
    """``USE name``: the database must be the warehouse's (by either of its names)."""

    name: str

    def to_sql(self) -> str:
        return f"USE {quote_ident(self.name)}"

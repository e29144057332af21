"""Statement nodes of session settings: ``SET [GLOBAL|SESSION] name = value`` and
``SHOW VARIABLES``."""

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

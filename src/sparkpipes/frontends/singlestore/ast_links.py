"""Statement nodes of connection links: ``CREATE LINK``, ``DROP LINK``, ``SHOW LINKS``,
``SHOW CREATE LINK`` (SingleStore's stored source connections)."""

from __future__ import annotations

from dataclasses import dataclass

from sparkpipes.frontends.singlestore.ast_base import Statement, quote_ident, quote_string


@dataclass(frozen=True)
class CreateLink(Statement):
    """``CREATE LINK [IF NOT EXISTS] name AS kind [CONFIG '…'] [CREDENTIALS '…']
    [DESCRIPTION '…']``; ``kind`` upper-cased (``S3``, ``KAFKA`` …)."""

    name: str
    kind: str
    config: str | None = None
    credentials: str | None = None
    description: str | None = None
    if_not_exists: bool = False

    def to_sql(self) -> str:
        exists = "IF NOT EXISTS " if self.if_not_exists else ""
        out = [f"CREATE LINK {exists}{quote_ident(self.name)} AS {quote_ident(self.kind)}"]
        for keyword, value in (
            ("CONFIG", self.config),
            ("CREDENTIALS", self.credentials),
            ("DESCRIPTION", self.description),
        ):
            if value is not None:
                out.append(f"{keyword} {quote_string(value)}")
        return " ".join(out)


@dataclass(frozen=True)
class DropLink(Statement):
    """``DROP LINK [IF EXISTS] name``."""

    name: str
    if_exists: bool = False

    def to_sql(self) -> str:
        return "DROP LINK " + ("IF EXISTS " if self.if_exists else "") + quote_ident(self.name)


@dataclass(frozen=True)
class ShowLinks(Statement):
    """``SHOW LINKS [ON db]``."""

    database: str | None = None

    def to_sql(self) -> str:
        return "SHOW LINKS" + (f" ON {quote_ident(self.database)}" if self.database else "")


@dataclass(frozen=True)
class ShowCreateLink(Statement):
    """``SHOW CREATE LINK name``: its CREDENTIALS never shown."""

    name: str

    def to_sql(self) -> str:
        return f"SHOW CREATE LINK {quote_ident(self.name)}"

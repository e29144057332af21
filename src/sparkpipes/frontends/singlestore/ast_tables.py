"""Statement nodes of tables and their indexes: ``CREATE | DROP | ALTER TABLE`` with column
definitions and keys, ``CREATE | DROP INDEX``, ``OPTIMIZE TABLE``, ``VACUUM``, ``DESCRIBE``,
``SHOW TABLES``, ``SHOW TABLE STATUS`` and ``SHOW CREATE TABLE``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal as Lit

from sparkpipes.frontends.singlestore.ast_base import (
    DataType,
    Expr,
    Literal,
    Node,
    Statement,
    quote_ident,
    quote_string,
)


@dataclass(frozen=True)
class ColumnDef(Node):
    """A column of CREATE TABLE / ALTER TABLE ADD COLUMN.

    ``nullable`` is None when neither NULL nor NOT NULL was written. A computed column
    (``name AS expr PERSISTED type``) has ``computed`` set and no other attributes.
    """

    name: str
    type: DataType
    nullable: bool | None = None
    default: Literal | None = None
    primary_key: bool = False
    auto_increment: bool = False
    charset: str | None = None
    collate: str | None = None
    comment: str | None = None
    computed: Expr | None = None
    #: ``ON UPDATE CURRENT_TIMESTAMP`` / ``NOW()``: set to the time a row is updated
    on_update: bool = False
    #: ``SERIES TIMESTAMP``: the column time-series functions default to (no effect here)
    series_timestamp: bool = False

    def to_sql(self) -> str:
        name = quote_ident(self.name)
        if self.computed is not None:
            return f"{name} AS ({self.computed.to_sql()}) PERSISTED {self.type.to_sql()}"
        out = [name, self.type.to_sql()]
        if self.nullable is not None:
            out.append("NULL" if self.nullable else "NOT NULL")
        if self.default is not None:
            out.append(f"DEFAULT {self.default.to_sql()}")
        if self.primary_key:
            out.append("PRIMARY KEY")
        if self.auto_increment:
            out.append("AUTO_INCREMENT")
        if self.charset is not None:
            out.append(f"CHARACTER SET {quote_ident(self.charset)}")
        if self.collate is not None:
            out.append(f"COLLATE {quote_ident(self.collate)}")
        if self.comment is not None:
            out.append(f"COMMENT {quote_string(self.comment)}")
        if self.on_update:
            out.append("ON UPDATE CURRENT_TIMESTAMP")
        if self.series_timestamp:
            out.append("SERIES TIMESTAMP")
        return " ".join(out)


KeyKind = Lit["PRIMARY", "SHARD", "SORT", "KEY", "UNIQUE", "FULLTEXT"]


@dataclass(frozen=True)
class TableKey(Node):
    """A table-level key: PRIMARY KEY, SHARD KEY, SORT KEY, KEY/INDEX (kind KEY) or UNIQUE.

    ``using`` is HASH, BTREE or CLUSTERED COLUMNSTORE. An empty ``columns`` is only valid
    for SHARD KEY (keyless sharding).
    """

    kind: KeyKind
    columns: tuple[str, ...]
    name: str | None = None
    using: str | None = None
    #: the columns written ``DESC``
    descending: tuple[str, ...] = ()

    def to_sql(self) -> str:
        out = ["KEY" if self.kind == "KEY" else f"{self.kind} KEY"]
        if self.name is not None:
            out.append(quote_ident(self.name))
        cols = [quote_ident(c) + (" DESC" if c in self.descending else "") for c in self.columns]
        out.append("(" + ", ".join(cols) + ")")
        if self.using is not None:
            out.append(f"USING {self.using}")
        return " ".join(out)


@dataclass(frozen=True)
class CreateTable(Statement):
    """``CREATE [ROWSTORE|COLUMNSTORE] [REFERENCE] TABLE [IF NOT EXISTS] name (…)``.

    Column definitions and keys are kept apart, each in written order.
    """

    name: str
    columns: tuple[ColumnDef, ...]
    keys: tuple[TableKey, ...] = ()
    if_not_exists: bool = False
    storage: Lit["ROWSTORE", "COLUMNSTORE"] | None = None
    reference: bool = False
    #: options after the column list: (NAME, value as written)
    options: tuple[tuple[str, str], ...] = ()

    def to_sql(self) -> str:
        out = ["CREATE"]
        if self.storage is not None:
            out.append(self.storage)
        if self.reference:
            out.append("REFERENCE")
        out.append("TABLE")
        if self.if_not_exists:
            out.append("IF NOT EXISTS")
        elements = [c.to_sql() for c in self.columns] + [k.to_sql() for k in self.keys]
        out.append(f"{quote_ident(self.name)} ({', '.join(elements)})")
        out += [f"{name} = {value}" for name, value in self.options]
        return " ".join(out)


@dataclass(frozen=True)
class DropTable(Statement):
    """``DROP TABLE [IF EXISTS] name``."""

    name: str
    if_exists: bool = False

    def to_sql(self) -> str:
        return "DROP TABLE " + ("IF EXISTS " if self.if_exists else "") + quote_ident(self.name)


@dataclass(frozen=True)
class ShowTables(Statement):
    """``SHOW TABLES [LIKE 'pattern']``."""

    like: str | None = None

    def to_sql(self) -> str:
        return "SHOW TABLES" + (f" LIKE {quote_string(self.like)}" if self.like is not None else "")


@dataclass(frozen=True)
class ShowTableStatus(Statement):
    """``SHOW TABLE STATUS [LIKE 'pattern']``: version, files, size, maintenance."""

    like: str | None = None

    def to_sql(self) -> str:
        like = f" LIKE {quote_string(self.like)}" if self.like is not None else ""
        return "SHOW TABLE STATUS" + like


@dataclass(frozen=True)
class OptimizeTable(Statement):
    """``OPTIMIZE TABLE name [FULL]``: compact small files now (``FULL``: and cluster by
    the table's keys)."""

    name: str
    full: bool = False

    def to_sql(self) -> str:
        return f"OPTIMIZE TABLE {quote_ident(self.name)}" + (" FULL" if self.full else "")


@dataclass(frozen=True)
class Vacuum(Statement):
    """``VACUUM [TABLE] name [RETAIN n HOURS] [DRY RUN]`` (Delta Lake's statement)."""

    name: str
    retain_hours: int | None = None
    dry_run: bool = False

    def to_sql(self) -> str:
        out = f"VACUUM {quote_ident(self.name)}"
        if self.retain_hours is not None:
            out += f" RETAIN {self.retain_hours} HOURS"
        return out + (" DRY RUN" if self.dry_run else "")


@dataclass(frozen=True)
class DescribeTable(Statement):
    """``DESCRIBE [database.]name`` / ``DESC …`` (``information_schema.PIPELINES`` too)."""

    name: str
    database: str | None = None

    def to_sql(self) -> str:
        db = f"{quote_ident(self.database)}." if self.database else ""
        return f"DESCRIBE {db}{quote_ident(self.name)}"


@dataclass(frozen=True)
class AlterTableAddColumn(Statement):
    """``ALTER TABLE table ADD [COLUMN] column_def`` (computed columns too)."""

    table: str
    column: ColumnDef

    def to_sql(self) -> str:
        return f"ALTER TABLE {quote_ident(self.table)} ADD COLUMN {self.column.to_sql()}"


@dataclass(frozen=True)
class AlterTableDropColumn(Statement):
    """``ALTER TABLE table DROP [COLUMN] column``."""

    table: str
    column: str

    def to_sql(self) -> str:
        return f"ALTER TABLE {quote_ident(self.table)} DROP COLUMN {quote_ident(self.column)}"


@dataclass(frozen=True)
class AlterTableModifyColumn(Statement):
    """``ALTER TABLE table MODIFY [COLUMN] column_def``: the column's new definition."""

    table: str
    column: ColumnDef

    def to_sql(self) -> str:
        return f"ALTER TABLE {quote_ident(self.table)} MODIFY COLUMN {self.column.to_sql()}"


@dataclass(frozen=True)
class CreateIndex(Statement):
    """``CREATE INDEX name ON table (columns)``."""

    name: str
    table: str
    columns: tuple[str, ...]

    def to_sql(self) -> str:
        cols = ", ".join(quote_ident(c) for c in self.columns)
        return f"CREATE INDEX {quote_ident(self.name)} ON {quote_ident(self.table)} ({cols})"


@dataclass(frozen=True)
class DropIndex(Statement):
    """``DROP INDEX name ON table``."""

    name: str
    table: str

    def to_sql(self) -> str:
        return f"DROP INDEX {quote_ident(self.name)} ON {quote_ident(self.table)}"


@dataclass(frozen=True)
class ShowCreateTable(Statement):
    """``SHOW CREATE TABLE name``."""

    name: str

    def to_sql(self) -> str:
        return f"SHOW CREATE TABLE {quote_ident(self.name)}"

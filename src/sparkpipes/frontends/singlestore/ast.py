"""Typed AST of the sparkpipes SQL dialect.

Every node is a frozen dataclass holding tuples, never lists, so nodes are hashable and
compare by value. ``to_sql()`` renders canonical SQL (upper-case keywords, single-quoted
strings, identifiers backquoted only where needed) and for every parsed statement ``s``
``parse_one(s.to_sql()) == s``.

Expressions, queries and procedure bodies are not modelled: they are kept as their source
text with comments removed and whitespace outside literals collapsed (see ``Expr``), which
is what they compare by.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from typing import Literal as Lit

from sparkpipes.frontends.singlestore import grammar

_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT_CHARS = _IDENT_START | frozenset("0123456789$")
_STRING_ESCAPES = {
    "\\": "\\\\",
    "'": "\\'",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\0": "\\0",
    "\b": "\\b",
    "\x1a": "\\Z",
}


def quote_ident(name: str) -> str:
    """``name`` as it must be written to read back as that identifier."""
    if (
        name
        and name[0] in _IDENT_START
        and all(c in _IDENT_CHARS for c in name)
        and name.upper() not in grammar.identifier_keywords()
    ):
        return name
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
    """``value`` as a single-quoted SQL string literal that reads back as ``value``."""
    return "'" + "".join(_STRING_ESCAPES.get(c, c) for c in value) + "'"


def _dotted(name: str) -> str:
    return ".".join(quote_ident(part) for part in name.split("."))


def _json_object(raw: str | None) -> dict[str, Any]:
    return {} if raw is None else json.loads(raw)


class Node:
    """Base of all AST nodes."""

    def to_sql(self) -> str:
        raise NotImplementedError


class Statement(Node):
    """Base of the statement nodes returned by ``parse``."""


# ---------------------------------------------------------------------------- leaves


@dataclass(frozen=True)
class Expr(Node):
    """An expression kept as text, to be handed to Spark SQL.

    ``text`` is the source span with comments removed (optimizer hints ``/*+ … */`` kept)
    and whitespace outside string literals and quoted identifiers collapsed to one space.
    """

    text: str

    def to_sql(self) -> str:
        return self.text


LiteralKind = Lit["string", "number", "boolean", "null", "word", "call"]


@dataclass(frozen=True)
class Literal(Node):
    """A constant: a string, a number, TRUE/FALSE, NULL, a bare word such as ``ON`` or
    ``CURRENT_TIMESTAMP`` (kept as written), or a call such as ``NOW()`` (kept as text)."""

    kind: LiteralKind
    value: str | int | float | bool | None

    def to_sql(self) -> str:
        if self.kind == "string":
            return quote_string(str(self.value))
        if self.kind == "number":
            return repr(self.value)
        if self.kind == "boolean":
            return "TRUE" if self.value else "FALSE"
        if self.kind == "null":
            return "NULL"
        if self.kind == "word":
            return "ON" if self.value == "ON" else quote_ident(str(self.value))
        return str(self.value)


@dataclass(frozen=True)
class StructField(Node):
    """A named member of ``STRUCT<…>`` or of a procedure's ``QUERY(…)`` parameter type."""

    name: str
    type: DataType

    def to_sql(self) -> str:
        return f"{quote_ident(self.name)}: {self.type.to_sql()}"


@dataclass(frozen=True)
class DataType(Node):
    """A column or parameter type: ``name`` upper-cased as spelled (``VARCHAR``, ``BIGINT``,
    ``ARRAY``), numeric ``params`` (``DECIMAL(10,2)``), element types ``args``
    (``ARRAY<T>``, ``MAP<K, V>``) and ``fields`` (``STRUCT<a: T>``, ``QUERY(a T)``)."""

    name: str
    params: tuple[int, ...] = ()
    args: tuple[DataType, ...] = ()
    fields: tuple[StructField, ...] = ()
    unsigned: bool = False

    @property
    def text(self) -> str:
        """The normalized spelling, e.g. ``DECIMAL(10,2)`` or ``MAP<STRING, INT>``."""
        return self.to_sql()

    def to_sql(self) -> str:
        if self.name == "QUERY":
            inner = ", ".join(f"{quote_ident(f.name)} {f.type.to_sql()}" for f in self.fields)
            return f"QUERY({inner})"
        if self.fields:
            return f"{self.name}<{', '.join(f.to_sql() for f in self.fields)}>"
        if self.args:
            return f"{self.name}<{', '.join(a.to_sql() for a in self.args)}>"
        out = self.name
        if self.params:
            out += "(" + ",".join(str(p) for p in self.params) + ")"
        return out + (" UNSIGNED" if self.unsigned else "")


# ---------------------------------------------------------------------------- pipelines


@dataclass(frozen=True)
class Target(Node):
    """Where a pipeline loads: ``INTO TABLE name`` or ``INTO PROCEDURE name``."""

    kind: Lit["TABLE", "PROCEDURE"]
    name: str

    def to_sql(self) -> str:
        return f"INTO {self.kind} {quote_ident(self.name)}"


@dataclass(frozen=True)
class FieldMapping(Node):
    """``column <- a::b::c [DEFAULT literal]`` of a JSON/Avro/Parquet load.

    ``path`` holds the keys; ``rooted`` means the path was written from ``%`` (the whole
    record): ``%`` alone is the whole record, ``%::a`` the key ``a`` of it. ``variable``
    marks an ``@variable`` target.
    """

    column: str
    path: tuple[str, ...]
    variable: bool = False
    rooted: bool = False
    default: Literal | None = None

    @property
    def whole_record(self) -> bool:
        return self.rooted and not self.path

    def to_sql(self) -> str:
        target = ("@" if self.variable else "") + quote_ident(self.column)
        keys = [quote_ident(k) for k in self.path]
        path = "::".join(["%", *keys] if self.rooted else keys)
        out = f"{target} <- {path}"
        if self.default is not None:
            out += f" DEFAULT {self.default.to_sql()}"
        return out


@dataclass(frozen=True)
class LoadColumn(Node):
    """One entry of a CSV load's column list: a column or an ``@variable``."""

    name: str
    variable: bool = False

    def to_sql(self) -> str:
        return ("@" if self.variable else "") + quote_ident(self.name)


@dataclass(frozen=True)
class FieldsFormat(Node):
    """``FIELDS TERMINATED BY … [OPTIONALLY] ENCLOSED BY … ESCAPED BY …`` of a CSV load."""

    terminated_by: str | None = None
    enclosed_by: str | None = None
    optionally_enclosed: bool = False
    escaped_by: str | None = None

    def to_sql(self) -> str:
        out = ["FIELDS"]
        if self.terminated_by is not None:
            out.append(f"TERMINATED BY {quote_string(self.terminated_by)}")
        if self.enclosed_by is not None:
            opt = "OPTIONALLY " if self.optionally_enclosed else ""
            out.append(f"{opt}ENCLOSED BY {quote_string(self.enclosed_by)}")
        if self.escaped_by is not None:
            out.append(f"ESCAPED BY {quote_string(self.escaped_by)}")
        return " ".join(out)


@dataclass(frozen=True)
class LinesFormat(Node):
    """``LINES [STARTING BY …] [TERMINATED BY …]`` of a CSV load."""

    terminated_by: str | None = None
    starting_by: str | None = None

    def to_sql(self) -> str:
        out = ["LINES"]
        if self.starting_by is not None:
            out.append(f"STARTING BY {quote_string(self.starting_by)}")
        if self.terminated_by is not None:
            out.append(f"TERMINATED BY {quote_string(self.terminated_by)}")
        return " ".join(out)


@dataclass(frozen=True)
class Assignment(Node):
    """``column = expression`` of a pipeline's SET clause."""

    column: str
    expr: Expr

    def to_sql(self) -> str:
        return f"{quote_ident(self.column)} = {self.expr.to_sql()}"


SkipErrors = Lit["PARSER", "ALL", "CONSTRAINT", "DUPLICATE KEY"]


@dataclass(frozen=True)
class CreatePipeline(Statement):
    """``CREATE [OR REPLACE] [INFERRED] PIPELINE … AS LOAD DATA source 'location' …``.

    ``source`` is upper-cased (``KAFKA``, ``FS``, ``S3`` …; the engine decides which it
    supports). ``config``/``credentials`` are the raw JSON text, always a JSON object;
    ``config_json``/``credentials_json`` parse it. ``target`` is None only for an
    INFERRED pipeline written without INTO. ``on_conflict`` is REPLACE or IGNORE.
    ``check_source`` is False for ``SKIP SOURCE CHECK``: the statement then does not
    ask the source whether it is reachable (a source that is not up yet); it is an
    instruction to CREATE, not part of the stored definition.
    """

    name: str
    source: str
    location: str
    target: Target | None = None
    or_replace: bool = False
    inferred: bool = False
    if_not_exists: bool = False
    config: str | None = None
    credentials: str | None = None
    batch_interval: int | None = None
    max_partitions_per_batch: int | None = None
    max_offsets_per_batch_partition: int | None = None
    max_retries_per_batch_partition: int | None = None
    skip_errors: SkipErrors | None = None
    on_conflict: Lit["REPLACE", "IGNORE"] | None = None
    format: str | None = None
    schema_registry: str | None = None  # FORMAT AVRO SCHEMA REGISTRY 'url'
    schema: str | None = None  # FORMAT AVRO SCHEMA '<Avro schema JSON>'
    mappings: tuple[FieldMapping, ...] = ()
    fields: FieldsFormat | None = None
    lines: LinesFormat | None = None
    ignore_lines: int | None = None
    columns: tuple[LoadColumn, ...] = ()
    assignments: tuple[Assignment, ...] = ()
    where: Expr | None = None
    check_source: bool = True

    @property
    def config_json(self) -> dict[str, Any]:
        """CONFIG parsed (a fresh dict each call; empty when absent)."""
        return _json_object(self.config)

    @property
    def credentials_json(self) -> dict[str, Any]:
        """CREDENTIALS parsed (a fresh dict each call; empty when absent)."""
        return _json_object(self.credentials)

    def to_sql(self) -> str:
        out = ["CREATE"]
        if self.or_replace:
            out.append("OR REPLACE")
        if self.inferred:
            out.append("INFERRED")
        out.append("PIPELINE")
        if self.if_not_exists:
            out.append("IF NOT EXISTS")
        out += [quote_ident(self.name), "AS LOAD DATA", quote_ident(self.source)]
        out.append(quote_string(self.location))
        if self.config is not None:
            out.append(f"CONFIG {quote_string(self.config)}")
        if self.credentials is not None:
            out.append(f"CREDENTIALS {quote_string(self.credentials)}")
        for keyword, value in (
            ("BATCH_INTERVAL", self.batch_interval),
            ("MAX_PARTITIONS_PER_BATCH", self.max_partitions_per_batch),
            ("MAX_OFFSETS_PER_BATCH_PARTITION", self.max_offsets_per_batch_partition),
            ("MAX_RETRIES_PER_BATCH_PARTITION", self.max_retries_per_batch_partition),
        ):
            if value is not None:
                out.append(f"{keyword} {value}")
        if self.skip_errors is not None:
            out.append(f"SKIP {self.skip_errors} ERRORS")
        if not self.check_source:
            out.append("SKIP SOURCE CHECK")
        if self.on_conflict is not None:
            out.append(self.on_conflict)
        if self.target is None:
            if self.format is not None:
                out.append(f"FORMAT {self.format}")
            return " ".join(out)
        out.append(self.target.to_sql())
        if self.format is not None:
            out.append(f"FORMAT {self.format}")
            if self.schema_registry is not None:
                out.append(f"SCHEMA REGISTRY {quote_string(self.schema_registry)}")
            elif self.schema is not None:
                out.append(f"SCHEMA {quote_string(self.schema)}")
        if self.mappings:
            out.append("(" + ", ".join(m.to_sql() for m in self.mappings) + ")")
        if self.fields is not None:
            out.append(self.fields.to_sql())
        if self.lines is not None:
            out.append(self.lines.to_sql())
        if self.ignore_lines is not None:
            out.append(f"IGNORE {self.ignore_lines} LINES")
        if self.columns:
            out.append("(" + ", ".join(c.to_sql() for c in self.columns) + ")")
        if self.assignments:
            out.append("SET " + ", ".join(a.to_sql() for a in self.assignments))
        if self.where is not None:
            out.append(f"WHERE {self.where.to_sql()}")
        return " ".join(out)


@dataclass(frozen=True)
class StartPipeline(Statement):
    """``START PIPELINE [IF NOT RUNNING] name [FOREGROUND [LIMIT n BATCHES]]``."""

    name: str
    if_not_running: bool = False
    foreground: bool = False
    limit_batches: int | None = None

    def to_sql(self) -> str:
        out = "START PIPELINE " + ("IF NOT RUNNING " if self.if_not_running else "")
        out += quote_ident(self.name)
        if self.foreground or self.limit_batches is not None:
            out += " FOREGROUND"
        if self.limit_batches is not None:
            out += f" LIMIT {self.limit_batches} BATCHES"
        return out


@dataclass(frozen=True)
class StartAllPipelines(Statement):
    """``START ALL PIPELINES``."""

    def to_sql(self) -> str:
        return "START ALL PIPELINES"


@dataclass(frozen=True)
class StopPipeline(Statement):
    """``STOP PIPELINE [IF RUNNING] name``."""

    name: str
    if_running: bool = False

    def to_sql(self) -> str:
        return (
            "STOP PIPELINE " + ("IF RUNNING " if self.if_running else "") + quote_ident(self.name)
        )


@dataclass(frozen=True)
class StopAllPipelines(Statement):
    """``STOP ALL PIPELINES``."""

    def to_sql(self) -> str:
        return "STOP ALL PIPELINES"


@dataclass(frozen=True)
class DropPipeline(Statement):
    """``DROP PIPELINE [IF EXISTS] name``."""

    name: str
    if_exists: bool = False

    def to_sql(self) -> str:
        return "DROP PIPELINE " + ("IF EXISTS " if self.if_exists else "") + quote_ident(self.name)


@dataclass(frozen=True)
class AlterPipeline(Statement):
    """``ALTER PIPELINE [IF EXISTS] name SET …, …``.

    ``offsets`` is EARLIEST or LATEST; ``offsets_json`` the raw JSON object of
    ``SET OFFSETS '{…}'`` (at most one of the two is set). Unset fields are None.
    """

    name: str
    if_exists: bool = False
    offsets: Lit["EARLIEST", "LATEST"] | None = None
    offsets_json: str | None = None
    batch_interval: int | None = None
    max_partitions_per_batch: int | None = None
    max_offsets_per_batch_partition: int | None = None
    max_retries_per_batch_partition: int | None = None

    def to_sql(self) -> str:
        items = []
        if self.offsets is not None:
            items.append(f"OFFSETS {self.offsets}")
        if self.offsets_json is not None:
            items.append(f"OFFSETS {quote_string(self.offsets_json)}")
        for keyword, value in (
            ("BATCH_INTERVAL", self.batch_interval),
            ("MAX_PARTITIONS_PER_BATCH", self.max_partitions_per_batch),
            ("MAX_OFFSETS_PER_BATCH_PARTITION", self.max_offsets_per_batch_partition),
            ("MAX_RETRIES_PER_BATCH_PARTITION", self.max_retries_per_batch_partition),
        ):
            if value is not None:
                items.append(f"{keyword} {value}")
        head = "ALTER PIPELINE " + ("IF EXISTS " if self.if_exists else "")
        return head + quote_ident(self.name) + " SET " + ", ".join(items)


@dataclass(frozen=True)
class AlterPipelineDropFile(Statement):
    """``ALTER PIPELINE [IF EXISTS] name DROP FILE 'key'``: forget an object, so that the
    next batch loads it again."""

    name: str
    file: str
    if_exists: bool = False

    def to_sql(self) -> str:
        head = "ALTER PIPELINE " + ("IF EXISTS " if self.if_exists else "")
        return head + quote_ident(self.name) + " DROP FILE " + quote_string(self.file)


@dataclass(frozen=True)
class TestPipeline(Statement):
    """``TEST PIPELINE name [LIMIT n]``."""

    __test__ = False  # not a pytest test class

    name: str
    limit: int | None = None

    def to_sql(self) -> str:
        out = f"TEST PIPELINE {quote_ident(self.name)}"
        return out + (f" LIMIT {self.limit}" if self.limit is not None else "")


@dataclass(frozen=True)
class ShowPipelines(Statement):
    """``SHOW PIPELINES``."""

    def to_sql(self) -> str:
        return "SHOW PIPELINES"


@dataclass(frozen=True)
class ShowCreatePipeline(Statement):
    """``SHOW CREATE PIPELINE name``."""

    name: str

    def to_sql(self) -> str:
        return f"SHOW CREATE PIPELINE {quote_ident(self.name)}"


# ---------------------------------------------------------------------------- variables


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


# ---------------------------------------------------------------------------- tables


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
        return " ".join(out)


KeyKind = Lit["PRIMARY", "SHARD", "SORT", "KEY", "UNIQUE"]


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

    def to_sql(self) -> str:
        out = ["KEY" if self.kind == "KEY" else f"{self.kind} KEY"]
        if self.name is not None:
            out.append(quote_ident(self.name))
        out.append("(" + ", ".join(quote_ident(c) for c in self.columns) + ")")
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


# ---------------------------------------------------------------------------- DML, queries


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

    def to_sql(self) -> str:
        out = f"{'REPLACE' if self.replace else 'INSERT'} INTO {quote_ident(self.table)}"
        if self.columns:
            out += " (" + ", ".join(quote_ident(c) for c in self.columns) + ")"
        if self.query is not None:
            return f"{out} {self.query.to_sql()}"
        rows = ", ".join("(" + ", ".join(e.to_sql() for e in row) + ")" for row in self.rows)
        return f"{out} VALUES {rows}"


@dataclass(frozen=True)
class ShowCreateTable(Statement):
    """``SHOW CREATE TABLE name``."""

    name: str

    def to_sql(self) -> str:
        return f"SHOW CREATE TABLE {quote_ident(self.name)}"


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

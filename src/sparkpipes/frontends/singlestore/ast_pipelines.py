"""Statement nodes of pipelines: ``CREATE PIPELINE`` with its load clauses (target, field
mappings, CSV formats, SET, WHERE), ``START | STOP | DROP | ALTER | TEST PIPELINE``,
``SHOW PIPELINES`` and ``SHOW CREATE PIPELINE``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from typing import Literal as Lit

from sparkpipes.frontends.singlestore.ast_base import (
    Expr,
    Literal,
    Node,
    Statement,
    quote_ident,
    quote_string,
)


def _json_object(raw: str | None) -> dict[str, Any]:
    return {} if raw is None else json.loads(raw)


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
    """One entry of a CSV load's column list: a column, an ``@variable``, or a bare ``@``
    (``name`` empty) that discards its field."""

    name: str
    variable: bool = False

    def to_sql(self) -> str:
        if not self.name:
            return "@"
        return ("@" if self.variable else "") + quote_ident(self.name)


@dataclass(frozen=True)
class Transform(Node):
    """``WITH TRANSFORM ('uri', 'executable', 'arguments')``: a program the records pass
    through before they are parsed."""

    uri: str
    executable: str = ""
    arguments: str = ""

    def to_sql(self) -> str:
        parts = ", ".join(quote_string(v) for v in (self.uri, self.executable, self.arguments))
        return f"WITH TRANSFORM ({parts})"


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
    #: ``NULL DEFINED BY '…' [OPTIONALLY ENCLOSED]``: the text that is NULL, and whether
    #: it is NULL enclosed too
    null_defined_by: str | None = None
    null_enclosed: bool = False
    trailing_nullcols: bool = False
    ignore_lines: int | None = None
    columns: tuple[LoadColumn, ...] = ()
    assignments: tuple[Assignment, ...] = ()
    where: Expr | None = None
    check_source: bool = True
    #: ``CREATE AGGREGATOR PIPELINE``: SingleStore runs it on its aggregator; no effect here
    aggregator: bool = False
    #: load options that change nothing here, as written (``DISABLE OUT_OF_ORDER
    #: OPTIMIZATION``, ``ENABLE OFFSETS METADATA GC``)
    hints: tuple[str, ...] = ()
    #: ``LOAD DATA LINK name 'path'``: the connection link whose kind, CONFIG and
    #: CREDENTIALS the pipeline loads with (``source`` is then ``LINK`` until the run
    #: resolves it)
    link: str | None = None
    transform: Transform | None = None
    #: ``ON DUPLICATE KEY UPDATE col = expr, …``: how a row whose key is there changes it
    on_duplicate: tuple[Assignment, ...] = ()
    #: ``HEADER_DETECTION ON | OFF`` of an inferred pipeline without INTO: whether its CSV
    #: header is looked for (None: SingleStore's default detection)
    header_detection: bool | None = None

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
        if self.aggregator:
            out.append("AGGREGATOR")
        out.append("PIPELINE")
        if self.if_not_exists:
            out.append("IF NOT EXISTS")
        out += [quote_ident(self.name), "AS LOAD DATA"]
        out.append(f"LINK {quote_ident(self.link)}" if self.link else quote_ident(self.source))
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
        out += self.hints
        if self.transform is not None:
            out.append(self.transform.to_sql())
        if self.skip_errors is not None:
            out.append(f"SKIP {self.skip_errors} ERRORS")
        if not self.check_source:
            out.append("SKIP SOURCE CHECK")
        if self.on_conflict is not None:
            out.append(self.on_conflict)
        if self.header_detection is not None:
            out.append(f"HEADER_DETECTION {'ON' if self.header_detection else 'OFF'}")
        if self.target is not None:
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
        if self.trailing_nullcols:
            out.append("TRAILING NULLCOLS")
        if self.null_defined_by is not None:
            out.append(f"NULL DEFINED BY {quote_string(self.null_defined_by)}")
            if self.null_enclosed:
                out.append("OPTIONALLY ENCLOSED")
        if self.ignore_lines is not None:
            out.append(f"IGNORE {self.ignore_lines} LINES")
        if self.columns:
            out.append("(" + ", ".join(c.to_sql() for c in self.columns) + ")")
        if self.assignments:
            out.append("SET " + ", ".join(a.to_sql() for a in self.assignments))
        if self.where is not None:
            out.append(f"WHERE {self.where.to_sql()}")
        if self.on_duplicate:
            out.append(
                "ON DUPLICATE KEY UPDATE " + ", ".join(a.to_sql() for a in self.on_duplicate)
            )
        return " ".join(out)


@dataclass(frozen=True)
class InferPipeline(Statement):
    """``INFER PIPELINE | TABLE AS LOAD DATA source 'location' …``: the ``CREATE TABLE``
    (and ``CREATE PIPELINE``) that ``CREATE INFERRED PIPELINE`` would run, inferred from
    what the source holds now; nothing is made. ``pipeline`` is the load, an INFERRED
    pipeline without INTO named as the answer names it (``infer_example_pipeline``)."""

    pipeline: CreatePipeline
    table_only: bool = False

    def to_sql(self) -> str:
        text = self.pipeline.to_sql()
        rest = text[text.index(" AS LOAD DATA ") :]
        return ("INFER TABLE" if self.table_only else "INFER PIPELINE") + rest


@dataclass(frozen=True)
class FlushExtractorPools(Statement):
    """``FLUSH [NODE] EXTRACTOR POOLS``: SingleStore drops the extractors it caches per
    node; sparkpipes caches none (each batch opens its consumers), so there is nothing to
    flush."""

    node: bool = False

    def to_sql(self) -> str:
        return "FLUSH NODE EXTRACTOR POOLS" if self.node else "FLUSH EXTRACTOR POOLS"


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
    """``STOP PIPELINE [IF RUNNING] name [DETACH]``: ``DETACH`` stops it the same way here
    (offsets are kept either way, and ALTER TABLE needs no detached pipeline)."""

    name: str
    if_running: bool = False
    detach: bool = False

    def to_sql(self) -> str:
        return (
            "STOP PIPELINE "
            + ("IF RUNNING " if self.if_running else "")
            + quote_ident(self.name)
            + (" DETACH" if self.detach else "")
        )


@dataclass(frozen=True)
class LoadData(Statement):
    """``LOAD DATA [LOCAL] INFILE 'path' … INTO TABLE t …`` (or ``LOAD DATA S3 'path'
    [CONFIG …] [CREDENTIALS …] …``): one load, with the load clauses of CREATE PIPELINE,
    kept as the ``pipeline`` that runs it once (an FS pipeline of ``path`` for INFILE)."""

    pipeline: CreatePipeline
    local: bool = False
    infile: bool = True

    def to_sql(self) -> str:
        text = self.pipeline.to_sql()
        head = f"AS LOAD DATA {quote_ident(self.pipeline.source)} "
        rest = text[text.index(head) + len(head) :]
        if not self.infile:
            return f"LOAD DATA {quote_ident(self.pipeline.source)} {rest}"
        return "LOAD DATA " + ("LOCAL " if self.local else "") + "INFILE " + rest


@dataclass(frozen=True)
class DetachPipeline(Statement):
    """``DETACH PIPELINE [IF EXISTS] name``: SingleStore's STOP that lets its table be
    altered; here it stops the pipeline if it runs (its offsets kept; START resumes)."""

    name: str
    if_exists: bool = False

    def to_sql(self) -> str:
        return (
            "DETACH PIPELINE " + ("IF EXISTS " if self.if_exists else "") + quote_ident(self.name)
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
    """``SHOW CREATE PIPELINE name [EXTENDED]``: ``EXTENDED`` adds SingleStore's ``ALTER
    PIPELINE`` lines for settings changed since; here CREATE PIPELINE's text already holds
    them, so it shows the same."""

    name: str
    extended: bool = False

    def to_sql(self) -> str:
        return f"SHOW CREATE PIPELINE {quote_ident(self.name)}" + (
            " EXTENDED" if self.extended else ""
        )

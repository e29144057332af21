"""From a spec and its table to the parts that run: source, decoder, sink, task schema.

:func:`validate` is what ``CREATE PIPELINE`` / ``ALTER PIPELINE`` check before anything is
stored: each plugin validates its own options (the source its CONFIG and CREDENTIALS, the
decoder its format options, the sink its write strategy), and the mapping, provenance and
keys are checked against the table. :func:`assemble` builds the same parts for running;
neither does I/O against the source or the destination.

Where the tasks write depends on the sink's strategy: straight into the table when rows
need no ingest-time SQL and no dedupe, else into a scratch area of the pipeline that the
sink's own driver-side step reads (see ``sparkpipes.sinks.delta.sink``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import TableRecord
from sparkpipes.config import PipelineSpec
from sparkpipes.config.core import is_metadata_column
from sparkpipes.config.tables import ColumnDefault, ValueRules
from sparkpipes.engine.batch.contract import OFFSET_COLUMN, PARTITION_COLUMN
from sparkpipes.engine.batch.generated import Generated
from sparkpipes.engine.batch.transform import Refiner, Transform
from sparkpipes.engine.sql.sandbox import check_expression
from sparkpipes.engine.sql.updates import stored_columns, update_expression, with_on_update
from sparkpipes.errors import ConfigError
from sparkpipes.formats import Decoder, build_decoder
from sparkpipes.sinks import SINKS, Sink, SinkContext, SinkWriter
from sparkpipes.sources import Source, build_source

PROVENANCE = (PARTITION_COLUMN, OFFSET_COLUMN)


@dataclass(frozen=True)
class Assembled:
    """A pipeline's running parts. ``task_schema`` is what its tasks hand the writer."""

    spec: PipelineSpec
    pipeline_id: str
    source: Source
    decoder: Decoder
    sink: Sink
    writer: SinkWriter
    task_schema: pa.Schema
    not_null: tuple[str, ...]
    refines: bool
    upserts: bool
    #: the ingest-time SQL handed to the sink, whose rejected rows the runner records
    refiner: Refiner | None = None
    #: table columns the tasks fill from record metadata (see ``metadata_columns``)
    metadata_columns: tuple[str, ...] = ()
    #: the DEFAULT of each column the tasks hand on that a record may not load
    defaults: tuple[tuple[str, ColumnDefault], ...] = ()
    #: the value rules of the columns the tasks hand on
    rules: ValueRules = field(default_factory=ValueRules)

    @property
    def stages(self) -> bool:
        """Tasks stage rows (with their partition and offset) for a Spark job to finish."""
        return self.refines or self.upserts


def build_source_of(spec: PipelineSpec) -> Source:
    s = spec.source
    return build_source(s.kind, s.location, s.config, s.credentials)


def validate(spec: PipelineSpec, table: TableRecord) -> None:
    """Check a spec against its plugins and its table; raise ConfigError naming the
    pipeline and what is wrong."""
    source = build_source_of(spec)
    names = set(table.schema.names)
    for m in spec.format.mapping:
        if m.column not in names and not m.is_variable:
            raise ConfigError(
                f"field mapping names column '{m.column}', which table '{spec.table}' "
                f"does not have (columns: {', '.join(table.schema.names)})",
                pipeline=spec.name,
            )
    if spec.sink.provenance:
        missing = [c for c in PROVENANCE if c not in names]
        if missing:
            raise ConfigError(
                f"provenance needs table '{spec.table}' to have columns "
                f"{PARTITION_COLUMN} STRING and {OFFSET_COLUMN} BIGINT (missing: "
                f"{', '.join(missing)})",
                pipeline=spec.name,
            )
    if write_mode(spec, table) != "append":
        key = primary_key(spec, table)
        _check_update(spec, table, key)
    if spec.format.skip_lines and not source.line_oriented:
        raise ConfigError(
            f"IGNORE n LINES applies to sources of lines (files), not {spec.source.kind}",
            pipeline=spec.name,
        )
    SINKS.get(spec.sink.kind)
    decoder = build_decoder(
        spec.format.kind,
        load_schema(spec, table),
        spec.format.mapping,
        spec.format.csv,
        spec.format.decoder_options(),
        text_values=spec.format.text_values,
        program=spec.format.program,
        nested=spec.format.nested,
        connect=spec.format.connect,
    )
    framed(spec, source, decoder)


def framed(spec: PipelineSpec, source: Source, decoder: Decoder) -> Source:
    """``source`` reading objects the way the format cuts them into records."""
    fmt = spec.format.kind.upper()
    if source.structured and not decoder.columnar:
        raise ConfigError(
            f"LOAD DATA {spec.source.kind.upper()} delivers records with a schema: give "
            f"FORMAT AVRO (not FORMAT {fmt})",
            pipeline=spec.name,
        )
    if decoder.columnar and not (source.lists_files or source.structured):
        avro = (
            "; for Avro messages give FORMAT AVRO SCHEMA REGISTRY 'url' or SCHEMA '<schema>'"
            if fmt == "AVRO"
            else ""
        )
        raise ConfigError(
            f"FORMAT {fmt} reads whole objects (LOAD DATA FS, S3, AZURE or HDFS), not "
            f"records of a {spec.source.kind} stream{avro}",
            pipeline=spec.name,
        )
    if decoder.columnar and spec.format.skip_lines:
        raise ConfigError(
            f"IGNORE n LINES applies to lines (FORMAT JSON, CSV), not FORMAT {fmt}",
            pipeline=spec.name,
        )
    if source.lists_files:
        return source.framed(decoder.framing(spec.format.skip_lines))
    if decoder.framing_only:
        raise ConfigError(
            f"{decoder.framing_only} cuts objects into records (LOAD DATA FS, S3, AZURE or "
            f"HDFS); it is not supported with records of a {spec.source.kind} stream",
            pipeline=spec.name,
        )
    return source


def metadata_columns(source: Source, table: TableRecord) -> tuple[str, ...]:
    """The table's ``__key``, ``__header$…`` and ``__metadata$…`` columns, when the source
    hands over record metadata (Pinot's ``metadata.populate``; only ``__key`` when it
    says ``"key"``, as Pinot's consumer without ``metadata.populate``)."""
    given = getattr(source, "record_metadata", False)
    if not given:
        return ()
    if given == "key":
        return tuple(c for c in table.schema.names if c == "__key")
    return tuple(c for c in table.schema.names if is_metadata_column(c))


def load_schema(spec: PipelineSpec, table: TableRecord) -> pa.Schema:
    """The columns a pipeline's decoder produces: the mapped ones (variables as
    STRING), or every table column but computed and provenance ones."""
    schema = table.schema
    if spec.format.mapping:
        return pa.schema(
            [
                pa.field(m.column, schema.field(m.column).type)
                if m.column in schema.names
                else pa.field(m.column, pa.string())
                for m in spec.format.mapping
            ]
        )
    skip = set(table.computed)
    if spec.sink.provenance:
        skip |= set(PROVENANCE)
    return pa.schema([f for f in schema if f.name not in skip])


def _check_update(spec: PipelineSpec, table: TableRecord, key: list[str]) -> None:
    """``ON DUPLICATE KEY UPDATE``'s assignments: of columns of the table other than its
    key, over its columns; none reads a column an earlier one changes (MySQL would read
    the changed value, the fold reads the row as it was)."""
    names = set(table.schema.names)
    for i, (column, expr) in enumerate(spec.sink.update):
        if column not in names or column in key:
            what = "a primary-key column" if column in key else "no column of the table"
            raise ConfigError(
                f"ON DUPLICATE KEY UPDATE assigns '{column}', {what}", pipeline=spec.name
            )
        read = stored_columns(update_expression(expr, table.schema.names, table.name))
        changed = [c for c, _ in spec.sink.update[:i] if c in read]
        if changed:
            raise ConfigError(
                f"ON DUPLICATE KEY UPDATE: '{column} = {expr}' reads '{changed[0]}', which "
                "an earlier assignment changes; SingleStore would read the changed value "
                "and here it is read as stored: assign it after, or write its expression out",
                pipeline=spec.name,
            )


def _admitted_updates(
    spec: PipelineSpec, table: TableRecord, spark: Callable[[], Any]
) -> tuple[tuple[str, str], ...]:
    """``ON DUPLICATE KEY UPDATE``'s assignments as Spark SQL, each admitted by the query
    sandbox as a pipeline's SET expressions are."""
    out = with_on_update(
        [(c, update_expression(e, table.schema.names, table.name)) for c, e in spec.sink.update],
        table.on_update,
    )
    for _, expr in out:
        check_expression(spark(), expr)
    return out


def write_mode(spec: PipelineSpec, table: TableRecord) -> str:
    """How rows meet the table: the spec's write mode, ``skip_duplicates``, ``update`` and
    ``insert`` resolved by whether the table has a primary key (duplicates of a key it does not have
    cannot happen, so every row is inserted, as SingleStore does)."""
    if spec.sink.write not in ("skip_duplicates", "update", "insert"):
        return spec.sink.write
    if not table.primary_key:
        return "append"
    return "ignore" if spec.sink.write == "skip_duplicates" else spec.sink.write


def primary_key(spec: PipelineSpec, table: TableRecord) -> list[str]:
    if spec.sink.write == "aggregate":
        return []  # the key is every column not aggregated: the sink's to say
    if table.primary_key:
        return list(table.primary_key)
    raise ConfigError(
        f"{spec.sink.write.upper()} INTO TABLE needs a PRIMARY KEY (or one UNIQUE KEY) on table "
        f"'{table.name}' to know which rows are duplicates",
        pipeline=spec.name,
    )


def _generated(
    spec: PipelineSpec, table: TableRecord, reserve_ids: Callable[[str, int, int], int] | None
) -> Generated | None:
    """The table's ``AUTO_INCREMENT`` column, numbered from the catalog's counter."""
    if not table.auto_increment or spec.sink.kind != "delta":
        return None
    if reserve_ids is None:
        raise ConfigError(
            f"table '{table.name}' has an AUTO_INCREMENT column: its values need the catalog",
            pipeline=spec.name,
        )
    return Generated.of(table, reserve_ids)


def assemble(
    spec: PipelineSpec,
    pipeline_id: str,
    table: TableRecord,
    spark: Callable[[], Any],
    *,
    procedure: Any = None,
    reserve_ids: Callable[[str, int, int], int] | None = None,
) -> Assembled:
    """The running parts of a pipeline; ``spark`` gives the session when a part needs it;
    ``procedure`` is the ``ProcedureBody`` of an ``INTO PROCEDURE`` pipeline;
    ``reserve_ids`` the catalog's ``Tables.reserve_ids``, for a table with an
    ``AUTO_INCREMENT`` column."""
    source = build_source_of(spec)
    load = load_schema(spec, table)
    decoder = build_decoder(
        spec.format.kind,
        load,
        spec.format.mapping,
        spec.format.csv,
        spec.format.decoder_options(),
        text_values=spec.format.text_values,
        program=spec.format.program,
        nested=spec.format.nested,
        connect=spec.format.connect,
    )
    source = framed(spec, source, decoder)
    transform = Transform(
        spec.transform.assignments,
        spec.transform.where,
        tuple(table.computed.items()),
        tuple(table.defaults.items()),
        table.rules,
        spec.transform.functions,
        spec.transform.rejects,
    )
    write = write_mode(spec, table)
    upserts = write != "append"
    generated = _generated(spec, table, reserve_ids)
    refines = bool(transform) or (upserts and bool(transform.defaults)) or generated is not None
    if refines or upserts:
        where = (
            [table.schema.field(c) for c in PROVENANCE]
            if spec.sink.provenance
            else [
                pa.field(PARTITION_COLUMN, pa.string()),
                pa.field(OFFSET_COLUMN, source.position_type),
            ]
        )
        meta = [table.schema.field(c) for c in metadata_columns(source, table)]
        task_schema = pa.schema([*load, *meta, *where])
    else:
        task_schema = pa.schema(
            [f for f in table.schema if not (spec.sink.provenance and f.name in PROVENANCE)]
        )
    filled = {c for c, _ in spec.transform.assignments} | set(table.computed)
    numbered = set(table.auto_increment)
    refiner = (
        Refiner(
            transform,
            table.schema,
            spec.format.skip_constraint_errors,
            PROVENANCE,
            tuple(c for c in table.not_null if c in filled and c not in numbered),
            source.locate,
            generated=generated,
        )
        if refines
        else None
    )
    scratch = os.path.join(
        table.location, "_sparkpipes_staging", pipeline_id, uuid.uuid4().hex[:12]
    )
    ctx = SinkContext(
        table=table.name,
        location=table.location,
        schema=table.schema,
        write=write,
        primary_key=tuple(primary_key(spec, table)) if upserts else (),
        staged_schema=task_schema,
        refine=refiner,
        scratch=scratch,
        spark=spark,
        procedure=procedure,
        sink_config=spec.sink.config,
        sink_credentials=spec.sink.credentials,
        update=_admitted_updates(spec, table, spark),
        skipped_duplicates=PROVENANCE if spec.sink.write == "skip_duplicates" else None,
    )
    sink = SINKS.get(spec.sink.kind).for_pipeline(ctx)
    not_null = tuple(
        c for c in table.not_null if c in task_schema.names and c not in filled | numbered
    )
    return Assembled(
        spec=spec,
        pipeline_id=pipeline_id,
        source=source,
        decoder=decoder,
        sink=sink,
        writer=sink.writer(),
        task_schema=task_schema,
        not_null=not_null,
        refines=refines,
        upserts=upserts,
        refiner=refiner,
        metadata_columns=metadata_columns(source, table),
        defaults=tuple((c, d) for c, d in table.defaults.items() if c in task_schema.names),
        # a column SET assigns gets its rules after SET (the refiner), not as loaded
        rules=table.rules.of([c for c in task_schema.names if c not in filled]),
    )

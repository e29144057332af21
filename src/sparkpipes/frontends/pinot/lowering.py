"""A Pinot schema + REALTIME table config → the table to create and the pipeline that loads
it (no I/O). The pipeline is named ``<table>_REALTIME``, as Pinot names the physical table;
a table with several streams (``streamConfigMaps``) has one pipeline per stream into it,
``<table>_REALTIME_<index>`` (:mod:`~sparkpipes.frontends.pinot.multistream`), each the
same lowering over its own stream config and each committing its own batches exactly once.

How Pinot's parts land:

* each schema field is a column, loaded from the record field of the same name;
  ``transformConfigs`` (and a field's own ``transformFunction``) become ``SET`` expressions
  over the record fields they read (loaded as variables), Pinot's geospatial functions in
  them ``FunctionCall``s computed first; a field another transform makes is read as that
  transform's value, and a record's own non-null value of a transform's column wins, as
  in Pinot's ``ExpressionTransformer`` (:mod:`~sparkpipes.frontends.pinot.chain`);
  ``filterConfig`` becomes a ``WHERE`` keeping the rows the filter does not drop, judged
  on what the transforms made;
* a transform (or the filter) that throws in Pinot for a record (``PinotExpr.fails``)
  is, without ``continueOnError``, a reject of the pipeline (``TransformSpec.rejects``):
  the record goes to ``PIPELINES_ERRORS`` with its partition and offset, as Pinot's
  consumer drops it; under ``continueOnError`` the column is null there (the filter keeps
  the record), as Pinot leaves it;
* what a field the record leaves empty stores (its default null value, unless null
  handling keeps the null) and how long its text may be are rules of the table's columns
  (:mod:`~sparkpipes.frontends.pinot.nulls`), applied after the ``SET``, as Pinot's
  transformers run after its transform functions;
* ``rowTimeValueCheck`` checks the time column as Pinot's ``TimeValidationTransformer``
  does, after the filter and before the null rule: a time that does not parse or falls
  outside 1971-2071 is a reject, or under ``continueOnError`` NULL (then the column's
  default) (:mod:`~sparkpipes.frontends.pinot.timecheck`);
* ``primaryKeyColumns`` is the table's PRIMARY KEY; ``upsertConfig`` makes the pipeline
  replace rows by key (``comparisonColumns``, by default the time column, decide which
  record wins; PARTIAL merges column by column), ``dedupConfig`` keep the first row;
* ``aggregationConfigs`` make each aggregated metric a ``SET`` of its per-record value
  (the source field; ``COUNT``: 1 or 0) and the pipeline's write mode ``aggregate``: rows
  with equal dimension and dateTime values become one, combined with the stored row
  (:mod:`~sparkpipes.frontends.pinot.aggregation`); ``aggregateMetrics`` sums every metric
  as loaded;
* ``metadata.populate`` fills the ``__key``, ``__header$…`` and ``__metadata$…`` columns
  the schema lists from the record's key, headers, offset, partition and timestamp;
  without it, as in Pinot, only ``__key`` is filled (from a Kafka record's key) and the
  others store their default null value (a warning says so);
* ``complexTypeConfig`` flattens nested records into the dotted columns and unnests
  arrays into rows before the columns are taken (``FormatSpec.nested``, done on Arrow by
  ``formats.nested``); transforms and the filter read the flattened names, as Pinot's
  transformers run after its ``ComplexTypeTransformer``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sparkpipes.config.core import is_metadata_column
from sparkpipes.config.parts import (
    BatchSpec,
    FieldMapping,
    FormatSpec,
    FunctionCall,
    SinkSpec,
    SourceSpec,
    TransformSpec,
)
from sparkpipes.config.spec import PipelineSpec
from sparkpipes.config.tables import ColumnSpec, TableKey, TableSpec
from sparkpipes.formats.pinot_convert import PINOT_VALUES
from sparkpipes.formats.pinot_json import CONTINUE_ON_ERROR, JSON_COLUMNS, OWN_SCALAR
from sparkpipes.frontends.pinot import chain, timecheck
from sparkpipes.frontends.pinot.aggregation import per_record
from sparkpipes.frontends.pinot.decoders import (
    JSON_KINDS,
    OWN_KINDS,
    REGISTRY_FORMATS,
    format_options,
)
from sparkpipes.frontends.pinot.expr import (
    Budget,
    PinotExpr,
    as_type,
    filter_sql,
    first_existing,
)
from sparkpipes.frontends.pinot.expr.core import _any, millis_ts
from sparkpipes.frontends.pinot.kinesis import source_spec as kinesis_source
from sparkpipes.frontends.pinot.model import PinotSchema, PinotTableConfig
from sparkpipes.frontends.pinot.multistream import pipeline_names
from sparkpipes.frontends.pinot.nulls import max_length, null_fill, nullable
from sparkpipes.frontends.pinot.onerror import skip_flags
from sparkpipes.frontends.pinot.schema import FieldSpec
from sparkpipes.frontends.pinot.stream import StreamConfig
from sparkpipes.sources.kafka import KEY_ONLY, PARTITIONS, RECORD_METADATA


def pipeline_name(table: str) -> str:
    """The pipeline of a table with one stream."""
    return pipeline_names(table, 1)[0]


def table_spec(schema: PinotSchema, cfg: PinotTableConfig) -> TableSpec:
    """The Delta table a Pinot schema becomes: its fields in order (Spark types; a
    single-value JSON field declared JSON), the primary key, NOT NULL fields, and what a
    null of each field stores and how long its values may be (``nulls``)."""
    columns = []
    rolled = _rolled_up(cfg)
    for f in schema.fields:
        # an aggregated metric is never null; a record without its source is skipped
        fill = (
            None if f.name in rolled else null_fill(f, schema, cfg.null_handling, cfg.time_column)
        )
        columns.append(
            ColumnSpec(
                f.name,
                f.ddl_type,
                "JSON" if f.data_type == "JSON" and f.single_value else None,
                # Pinot refuses no row for a null: a NOT NULL field is filled
                f.not_null and not nullable(f, schema, cfg.null_handling) and f.name not in rolled,
                fill=fill,
                max_length=max_length(f),
            )
        )
    keys = (TableKey("PRIMARY", tuple(schema.primary_key)),) if schema.primary_key else ()
    return TableSpec(cfg.name, tuple(columns), keys)


def lower_all(
    schema: PinotSchema, cfg: PinotTableConfig, defaults: Mapping[str, Any] | None = None
) -> tuple[PipelineSpec, ...]:
    """The pipelines of ``cfg``, one per stream in stream order, all into its table."""
    return tuple(lower(schema, cfg, defaults, index=i) for i in range(len(cfg.streams)))


def lower(
    schema: PinotSchema,
    cfg: PinotTableConfig,
    defaults: Mapping[str, Any] | None = None,
    *,
    index: int = 0,
) -> PipelineSpec:
    """The pipeline of ``cfg``'s stream ``index`` (its only one, by default) into the
    table of ``schema``."""
    defaults = defaults or {}
    stream = cfg.streams[index]
    rolled = _rolled_up(cfg)
    # every transform, as Pinot's ExpressionTransformer holds them: transformConfigs, then
    # the schema fields' own; each translated over the record's fields only (.chain)
    every = dict(cfg.transforms)
    for f in schema.fields:
        if f.transform and f.name not in every:
            every[f.name] = f.transform
    budget = Budget()  # spent as the model spent it checking: resolve, sources, filter
    made = chain.resolve(every, budget)
    # what each transform stores, converted as Pinot's DataTypeTransformer converts it (an
    # array into a single-value column, text into a TIMESTAMP), and where that conversion
    # throws: judged after the filter, as that transformer runs after it
    kept = dict(made)
    conversion: dict[str, str] = {}
    for c in made:
        if c in schema.names:
            kept[c], fails = _converted(made[c], schema.field(c))
            if fails is not None:
                conversion[c] = fails
    # the columns they fill (the others make a field an aggregation or a transform reads)
    transforms = [c for c in every if c in schema.names]
    reads: list[str] = []
    assignments: list[tuple[str, str]] = []
    calls: dict[str, FunctionCall] = {}
    # Pinot's JSON decoder converts a record's own value as it converts any column's
    # (formats.pinot_json), so it is loaded into the column and the transform fills the rest
    own_typed = _json_decoded(stream)
    # a transform that throws in Pinot drops the record (without continueOnError): each
    # is a reject where it would, the record's own value of its column first (it does not
    # run then), intermediates too (Pinot evaluates every one)
    rejects: list[tuple[str, str]] = []
    for col in every:
        if cfg.continue_on_error or kept[col].fails is None:
            continue
        own = own_typed and col in transforms and col not in rolled
        if own and not is_metadata_column(col):
            runs = own_first(col, kept[col], schema.field(col).ddl_type)
        else:
            runs = first_existing(col, kept[col])
        if runs.fails is None:  # (the record's own value always stands in)
            continue
        reads += runs.fields
        rejects.append((runs.fails, rejected(chain.where(col), every[col])))
    own_scalar = []
    converting: list[str] = []  # where a conversion throws, the record's own value first
    for col in transforms:
        ddl = schema.field(col).ddl_type
        expr = kept[col]
        own = own_typed and col not in rolled and not is_metadata_column(col)
        if own and not (made[col].type or "").upper().startswith("ARRAY"):
            own_scalar.append(col)
        expr = _own_wins(col, expr, ddl, own)
        if col in conversion:
            converts = _own_wins(col, replace(kept[col], fails=conversion[col]), ddl, own).fails
            if converts is not None:
                converting.append(converts)
                if cfg.continue_on_error:  # the default null value, as Pinot stores it
                    expr = replace(expr, fails=_any(expr.fails, converts))
        if expr.fails is not None and cfg.continue_on_error:  # Pinot leaves it null
            expr = replace(expr, sql=f"(CASE WHEN {expr.fails} THEN NULL ELSE {expr.sql} END)")
        reads += expr.fields
        calls.update((c.column, c) for c in expr.calls)
        assignments.append((col, expr.sql))
    for column, (function, source) in rolled.items():
        expr = None if source is None else chain.source(source, made, budget)
        if expr is not None:
            reads += expr.fields
            calls.update((c.column, c) for c in expr.calls)
        sql = per_record(
            function, None if expr is None else expr.sql, schema.field(column).data_type
        )
        assignments = [(c, e) for c, e in assignments if c != column] + [(column, sql)]
    where = None
    if cfg.filter:
        # Pinot filters after its transforms: a field one makes is read as made
        expr = filter_sql(
            cfg.filter,
            where="ingestionConfig.filterConfig.filterFunction",
            derived=made,
            budget=budget,
        )
        reads += expr.fields
        calls.update((c.column, c) for c in expr.calls)
        where = expr.sql
        if expr.fails is not None and not cfg.continue_on_error:  # after the transforms
            what = "ingestionConfig.filterConfig.filterFunction"
            rejects.append((expr.fails, rejected(what, cfg.filter)))
        elif expr.fails is not None:  # continueOnError: FilterTransformer keeps the record
            where = f"(coalesce({expr.fails}, false) OR {where})"
    if converting and not cfg.continue_on_error:  # DataTypeTransformer: after the filter
        kept_by_filter = (lambda c: c) if where is None else (lambda c: f"(({where}) AND {c})")
        for fails in converting:
            rejects.append((kept_by_filter(fails), CONVERSION))
    if cfg.row_time_check and cfg.time_column:  # after the filter, as Pinot checks (.timecheck)
        time_field = schema.field(cfg.time_column)
        assignments, checked = timecheck.lowered(
            time_field, assignments, where, cfg.continue_on_error
        )
        rejects += checked
    mapping: list[FieldMapping] = []
    for f in schema.fields:
        if is_metadata_column(f.name) or f.name in rolled:
            continue
        if f.name in transforms and not own_typed:
            continue
        mapping.append(FieldMapping(f.name, (f.name,)))
    for name in dict.fromkeys(reads):
        mapping.append(FieldMapping("@" + name, (name,)))

    fmt_opts: dict[str, str] = {}
    fmt_creds = {}
    # Pinot's decoders' values converted as its DataTypeTransformer (formats.pinot_convert)
    converted = {PINOT_VALUES: "true", **_json_options(schema, cfg)}
    if stream.decoder == "avro":
        kind, fmt_opts = "avro", {"schema": stream.avro_schema or "", **converted}
    elif stream.decoder in REGISTRY_FORMATS:  # Avro, Protobuf or JSON (.decoders)
        kind = REGISTRY_FORMATS[stream.decoder]
        fmt_opts = {
            "schema.registry.url": stream.registry_url or "",
            **stream.registry,
            **converted,
        }
        fmt_creds = dict(stream.registry_secrets)
    elif stream.decoder == "stream":
        kind = "stream"
        fmt_opts = {
            "decoder.class": stream.decoder_class or "",
            "decoder.topic": stream.topic,
            **{f"decoder.prop.{k}": v for k, v in stream.decoder_props.items()},
        }
    elif stream.decoder in OWN_KINDS:  # Pinot's decoders with props (.decoders)
        kind = stream.decoder
        fmt_opts = {**format_options(stream.decoder, stream.decoder_props), **converted}
        if own_scalar and kind in JSON_KINDS:  # JSON as pinot-json reads it (own_typed)
            fmt_opts[OWN_SCALAR] = ",".join(own_scalar)
    else:  # Pinot's JSONMessageDecoder, values converted by its rules (formats.pinot_json)
        kind = "pinot-json"
        fmt_opts = _json_options(schema, cfg)
        if own_scalar:  # (own_typed: the record's own values are loaded)
            fmt_opts[OWN_SCALAR] = ",".join(own_scalar)
    source = SOURCES.get(stream.stream_type, _plugin_source)(stream)
    keyed = source.kind == "kafka" and not stream.high_level  # (highlevel: the value only)
    if keyed and not stream.metadata_populate and "__key" in schema.names:
        # Pinot gives a record's key to ``__key`` without metadata.populate too
        source = replace(source, config={**source.config, RECORD_METADATA: KEY_ONLY})
    batch = BatchSpec(
        interval_ms=defaults.get("batch_interval_ms") or BatchSpec.interval_ms,
        fetch_timeout_ms=stream.fetch_timeout_ms or BatchSpec.fetch_timeout_ms,
    )
    return PipelineSpec(
        name=pipeline_names(cfg.name, len(cfg.streams))[index],
        source=source,
        format=FormatSpec(
            kind=kind,
            mapping=tuple(mapping),
            **skip_flags(stream.stop_on_decode_error),
            options=fmt_opts,
            credentials=fmt_creds,
            nested=cfg.complex.nested() if cfg.complex is not None else None,
        ),
        transform=TransformSpec(tuple(assignments), where, tuple(calls.values()), tuple(rejects)),
        sink=_sink(schema, cfg),
        batch=batch,
    )


def rejected(where: str, expr: str) -> str:
    """Why a record is rejected: ``where`` (a transform of a column, or the filter), its
    Pinot expression ``expr``, throws for it in Pinot."""
    return (
        f"{where} ({expr}) fails for this record: Pinot's function throws here (text that "
        "is not JSON, not a number or not a date where it reads one), and Pinot drops the "
        "record (with continueOnError it would leave the column null and load the record)"
    )


def _json_decoded(stream: StreamConfig) -> bool:
    """The stream's records are read by ``pinot-json`` (the last branch of :func:`lower`)
    or a decoder of JSON like it (``JSON_KINDS``)."""
    if stream.decoder in JSON_KINDS:
        return True
    return stream.decoder not in ("avro", "stream", *REGISTRY_FORMATS, *OWN_KINDS)


def own_first(column: str, expr: PinotExpr, ddl_type: str) -> PinotExpr:
    """What Pinot stores in ``column``, the destination of ``expr``, when the decoder
    loads the record's own value into it converted by Pinot's rules: that value when the
    record has one (``ExpressionTransformer`` skips the transform), else ``expr``'s
    value as ``DataTypeTransformer`` converts it into ``ddl_type``. Text stays text, so a
    value the column cannot hold is still the row's error when the table is written."""
    own, t = _quoted(column), expr.type
    if t is None or t == "STRING":
        keep = t == ddl_type or not ddl_type.startswith(("BINARY", "ARRAY"))
    else:
        keep = t == ddl_type
    if expr.fails is not None:  # the transform runs, and can fail, only without a value
        expr = replace(expr, fails=f"({own} IS NULL AND {expr.fails})")
    if keep:  # the column's value as text is read back the same (or the types agree)
        value = own if t == ddl_type else as_type(own, ddl_type, "STRING")
        sql = f"CASE WHEN {own} IS NOT NULL THEN {value} ELSE {expr.sql} END"
        return replace(expr, sql=sql, type=t if t == ddl_type else "STRING")
    made = as_type(expr.sql, t, ddl_type)
    return replace(
        expr, sql=f"CASE WHEN {own} IS NOT NULL THEN {own} ELSE {made} END", type=ddl_type
    )


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _json_options(schema: PinotSchema, cfg: PinotTableConfig) -> dict[str, str]:
    """The options of ``pinot-json``: the JSON columns (text in them stored as Pinot's
    ``PinotDataType.toJson`` writes it) and whether a value that does not convert to its
    column's type is null (then its default null value) with the row kept, as Pinot's
    ``DataTypeTransformer`` does under ``continueOnError``, or a bad record."""
    opts = {JSON_COLUMNS: ",".join(f.name for f in schema.fields if f.data_type == "JSON")}
    if cfg.continue_on_error:
        opts[CONTINUE_ON_ERROR] = "true"
    return opts


def _kafka_source(stream: StreamConfig) -> SourceSpec:
    config: dict[str, Any] = dict(stream.client)
    if stream.metadata_populate:
        config[RECORD_METADATA] = True
    if stream.partition_ids is not None:
        config[PARTITIONS] = list(stream.partition_ids)
    return SourceSpec(
        kind="kafka",
        location=f"{stream.brokers}/{stream.topic}",
        config=config,
        credentials=dict(stream.secrets),
        start=stream.start,
    )


def _plugin_source(stream: StreamConfig) -> SourceSpec:
    """A stream plugin's source (seed 003)."""
    return SourceSpec(
        kind="stream",
        location=f"{stream.stream_type}/{stream.topic}",
        config={"streamType": stream.stream_type, **stream.plugin},
        credentials=dict(stream.plugin_secrets),
        start=stream.start,
    )


#: streamType → the source it reads (any other: a stream plugin)
SOURCES: dict[str, Callable[[StreamConfig], SourceSpec]] = {
    "kafka": _kafka_source,
    "kinesis": kinesis_source,
}

_NUMBERS = ("BIGINT", "INT", "DOUBLE", "FLOAT", "SMALLINT", "TINYINT")


def _rolled_up(cfg: PinotTableConfig) -> dict[str, tuple[str, str | None]]:
    """The metrics ``aggregationConfigs`` aggregate: column → (function, source field)."""
    agg = cfg.aggregation
    if agg is None or agg.own_fields:
        return {}
    return {m.column: (m.function, m.source) for m in agg.metrics}


def _own_wins(col: str, expr: PinotExpr, ddl_type: str, own_typed: bool) -> PinotExpr:
    """The record's own value of ``col`` wins over the transform's, as in Pinot: converted
    as any column's value where the decoder converts it (``own_first``)."""
    return own_first(col, expr, ddl_type) if own_typed else first_existing(col, expr)


#: the reason a record whose transform's value does not convert to its column is dropped
CONVERSION = (
    "a transform's value does not convert to its column's type (Pinot's DataTypeTransformer "
    "drops the record; continueOnError stores the default null value)"
)


def _converted(expr: PinotExpr, field: FieldSpec) -> tuple[PinotExpr, str | None]:
    """``expr``'s value as Pinot's ``DataTypeTransformer`` stores it in ``field``, and
    where that throws (None: it cannot). An array into a single-value column
    (``DataTypeTransformerUtils.standardize``): of its non-null elements, none is null,
    one is that element (``JSONPATHARRAY(items, '$.length()')`` into an INT column), more
    throw ("Cannot read single-value from Object[]"); a JSON column takes the array
    whole. Into a TIMESTAMP a number is epoch millis, and so is a text of digits
    (``TimestampUtils`` reads a long's text as millis), other text a timestamp, text that
    is none throws; BYTES into a STRING is hex."""
    t = (expr.type or "").upper()
    fails = None
    if t.startswith("ARRAY<") and field.single_value and field.data_type != "JSON":
        kept = f"filter({expr.sql}, x -> x IS NOT NULL)"
        sql = f"CASE WHEN size({kept}) = 1 THEN element_at({kept}, 1) END"
        fails = f"coalesce(size({kept}) > 1, false)"
        expr = replace(expr, sql=sql, type=t[len("ARRAY<") : -1])
    ddl_type = field.ddl_type
    if ddl_type == "TIMESTAMP" and expr.type in _NUMBERS:
        sql = millis_ts(f"CAST({expr.sql} AS BIGINT)")
        return replace(expr, sql=sql, type="TIMESTAMP"), fails
    if ddl_type == "TIMESTAMP" and expr.type in (None, "STRING"):
        v = expr.sql
        sql = (
            f"CASE WHEN trim({v}) RLIKE '^-?[0-9]+$' THEN "
            f"{millis_ts(f'try_cast(trim({v}) AS BIGINT)')} ELSE try_cast({v} AS TIMESTAMP) END"
        )
        unread = f"(({v}) IS NOT NULL AND ({sql}) IS NULL)"
        return replace(expr, sql=sql, type="TIMESTAMP"), _any(fails, unread)
    if ddl_type == "STRING" and expr.type == "BINARY":
        return replace(expr, sql=f"lower(hex({expr.sql}))", type="STRING"), fails
    return expr, fails


def _sink(schema: PinotSchema, cfg: PinotTableConfig) -> SinkSpec:
    if cfg.aggregation is not None:
        config = {"aggregate": cfg.aggregation.sink_functions()}
        return SinkSpec(table=cfg.name, write="aggregate", config=config)
    if cfg.dedup:
        return SinkSpec(table=cfg.name, write="ignore")
    u = cfg.upsert
    if u is None:
        return SinkSpec(table=cfg.name)
    config: dict[str, Any] = {}
    if u.comparison:
        config["comparison"] = list(u.comparison)
    if u.mode == "PARTIAL":
        key = set(schema.primary_key)
        config["partial"] = {
            f.name: u.strategies.get(f.name, u.default_strategy)
            for f in schema.fields
            if f.name not in key
        }
    if u.delete_column:
        config["delete"] = u.delete_column
    return SinkSpec(table=cfg.name, write="replace", config=config)

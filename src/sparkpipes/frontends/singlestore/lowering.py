"""The SQL front end: ``CREATE PIPELINE`` (SingleStore dialect) ↔ ``PipelineSpec``.

:func:`to_spec` lowers a parsed statement into a spec; a clause the statement leaves out
is left to ``defaults`` (the engine's variables under their flat option names, e.g.
``batch_interval_ms``), which the engine hands in, so SQL and the Python API share one
set of defaults and this module never reads the engine. :func:`to_create_pipeline` is
the way back, which ``SHOW CREATE PIPELINE`` prints (credentials redacted, and a
password inside a URL as ``<redacted>`` in its URL):
``to_spec(parse_one(create_pipeline_sql(spec)), defaults) == spec`` for every spec SQL
can express and whose fetch timeout and chunk size are the ``defaults``' (no clause sets
them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from sparkpipes.config import CsvOptions, FieldMapping, urls
from sparkpipes.config.core import REDACTED, reject_unknown
from sparkpipes.config.kwargs import OPTIONS
from sparkpipes.config.spec import PipelineSpec, from_kwargs
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import ast as A

#: the variable a bare ``@`` of a column list loads into (then dropped), with its position
DISCARDED = "_discarded_"
#: a source hint naming the connection link a pipeline was made from (``LINK name``)
LINK_HINT = "LINK "


def to_spec(stmt: A.CreatePipeline, defaults: Mapping[str, Any]) -> PipelineSpec:
    """Lower ``CREATE PIPELINE`` into a spec; ``defaults`` (flat option names) fill the
    batch options the statement does not give. Raises ConfigError for what the dialect
    parses but sparkpipes does not do yet (INTO PROCEDURE, a pipeline without a target,
    DEFAULT in a field mapping, LINES STARTING BY, a LINES TERMINATED BY without a newline) and
    for invalid values, naming the clause or option; a ``defaults`` name that is not a
    pipeline option is a ConfigError too, so an engine variable cannot silently go
    unused."""
    s = stmt
    if s.target is None and not s.inferred:
        raise ConfigError(
            "a pipeline needs INTO TABLE (or INTO PROCEDURE); CREATE INFERRED PIPELINE "
            "makes its own table",
            pipeline=s.name,
        )
    procedure = s.target is not None and s.target.kind == "PROCEDURE"
    if s.on_duplicate and (s.on_conflict or procedure):
        into = s.on_conflict if s.on_conflict else "INTO PROCEDURE"
        raise ConfigError(
            f"ON DUPLICATE KEY UPDATE cannot go with {into}: it says how a row changes the "
            "stored row of its key",
            pipeline=s.name,
        )
    connector = s.source.upper() == "KAFKACONNECT"
    allowed = [o for o in OPTIONS if o != "name"]
    reject_unknown(defaults, allowed, what="pipeline default", pipeline=s.name)
    kw: dict[str, Any] = {
        "name": s.name,
        "source": s.source.lower(),
        "location": s.location,
        "table": s.target.name if s.target is not None else s.name,
        "config": s.config_json if s.config else {},
        "credentials": s.credentials_json if s.credentials else {},
        "format": (s.format or ("avro" if connector else "csv")).lower(),
        "batch_interval_ms": s.batch_interval,
        "max_partitions_per_batch": s.max_partitions_per_batch,
        "max_offsets_per_batch_partition": s.max_offsets_per_batch_partition,
        "max_retries": s.max_retries_per_batch_partition,
        **_skips(s),
        "text_values": True,
        "program": (
            (s.transform.uri, s.transform.executable, s.transform.arguments)
            if s.transform
            else None
        ),
        "assignments": [(a.column, a.expr.text) for a in s.assignments],
        "where": s.where.text if s.where else None,
        "skip_lines": s.ignore_lines or 0,
        "on_duplicate_key": "update"
        if s.on_duplicate
        else s.on_conflict.lower()
        if s.on_conflict
        else "skip_duplicates"
        if s.skip_errors in ("DUPLICATE KEY", "ALL")
        else "insert",
        "on_duplicate_key_update": [(a.column, a.expr.text) for a in s.on_duplicate],
        "source_hints": (("AGGREGATOR",) if s.aggregator else ()) + s.hints,
        "format_options": (
            {"schema.registry.url": s.schema_registry}
            if s.schema_registry
            else {"schema": s.schema}
            if s.schema
            else {}
        ),
    }
    whole = [m.column for m in s.mappings if not m.path]
    if kw["format"] == "parquet" and whole:  # what SingleStore makes of it is not documented
        raise ConfigError(
            f"FORMAT PARQUET: {whole[0]} <- % (the whole record) is not supported; map its "
            "fields (col <- a::b)",
            pipeline=s.name,
        )
    mapping: list[Any] = [_field_mapping(m) for m in s.mappings]
    loaded = [m.column for m in s.mappings if not m.variable]
    if any(n.startswith("@") for n in [*loaded, *(c.name for c in s.columns if not c.variable)]):
        raise ConfigError(  # it would read back as a variable
            "a column a pipeline loads cannot have a name starting with @", pipeline=s.name
        )
    for i, c in enumerate(s.columns):
        name = c.name or f"{DISCARDED}{i}"
        mapping.append(("@" + name if c.variable else name, (name,)))
    kw["mapping"] = mapping
    if procedure:
        kw["sink"] = "procedure"
    if kw["format"] == "csv":
        line_end = (s.lines and s.lines.terminated_by) or "\n"
        kw["csv"] = {
            **csv_options(s.fields or A.FieldsFormat()),
            "null_text": s.null_defined_by,
            "null_enclosed": s.null_enclosed,
            "trailing_nullcols": s.trailing_nullcols,
            "line_end": line_end,
            "carriage_return": not line_end.endswith("\r\n"),
            "line_start": (s.lines and s.lines.starting_by) or "",
        }
    elif s.fields or s.lines:
        clause = "FIELDS" if s.fields else "LINES"
        raise ConfigError(f"{clause} applies to FORMAT CSV, not FORMAT {kw['format'].upper()}")
    return from_kwargs(kw, defaults)


def _field_mapping(m: A.FieldMapping) -> FieldMapping:
    """``col <- path [DEFAULT literal]``, read as SingleStore reads it: a record without
    the path gets the DEFAULT, and without one it is a bad record (a JSON null is there:
    NULL)."""
    column = "@" + m.column if m.variable else m.column
    if not m.path:
        return FieldMapping(column, ())
    if m.default is None:
        return FieldMapping(column, tuple(m.path), "error")
    if m.default.kind == "null":  # a missing path is NULL: the rule without SingleStore's
        return FieldMapping(column, tuple(m.path))
    return FieldMapping(column, tuple(m.path), "default", m.default.value)


_LITERAL_KINDS: dict[type, A.LiteralKind] = {str: "string", int: "number", float: "number"}


def _default_literal(m: FieldMapping) -> A.Literal | None:
    """The DEFAULT that says what a record without ``m``'s path gives (``DEFAULT NULL``
    for NULL, as Python-built and other front ends' mappings do), None for none (a bad
    record)."""
    if m.on_missing == "error" or not m.path:
        return None
    if m.on_missing == "null" or m.default is None:
        return A.Literal("null", None)
    if isinstance(m.default, bool):
        return A.Literal("boolean", m.default)
    return A.Literal(_LITERAL_KINDS[type(m.default)], m.default)


def csv_options(f: A.FieldsFormat) -> dict[str, Any]:
    """SingleStore's reading of a FIELDS clause: what it does not say is LOAD DATA's
    default (fields terminated by a tab, not enclosed, escaped by a backslash); ``''``
    encloses or escapes nothing."""
    return {
        "delimiter": "\t" if f.terminated_by is None else f.terminated_by,
        "quote": f.enclosed_by or None,
        "escape": "\\" if f.escaped_by is None else (f.escaped_by or None),
        "optionally": f.optionally_enclosed,
    }


def _skips(s: A.CreatePipeline) -> dict[str, bool]:
    """SingleStore's ``SKIP … ERRORS``: ``PARSER`` puts records that do not decode (a
    wrong number of fields, text that is not JSON) in the errors view; ``CONSTRAINT``
    rows that break the table's constraints (a NOT NULL column without a value, a value
    a computed column's type cannot hold); ``DUPLICATE KEY`` is a write mode (a row whose
    primary key the table holds is skipped); ``ALL`` is the three. Without it, each of
    these fails the batch."""
    return {
        "skip_parser_errors": s.skip_errors in ("PARSER", "ALL"),
        "skip_constraint_errors": s.skip_errors in ("CONSTRAINT", "ALL"),
    }


def _skip_errors(spec: PipelineSpec) -> A.SkipErrors | None:
    parser, constraint = spec.format.skip_parser_errors, spec.format.skip_constraint_errors
    duplicates = spec.sink.write == "skip_duplicates"
    if parser and constraint and spec.sink.write not in ("append", "insert"):  # no duplicates
        return "ALL"
    if parser:
        return "PARSER"
    return "CONSTRAINT" if constraint else "DUPLICATE KEY" if duplicates else None


def to_create_pipeline(spec: PipelineSpec) -> A.CreatePipeline:
    """The ``CREATE PIPELINE`` statement that lowers back to ``spec``, credentials
    redacted (their keys kept). Batch options are written out as resolved, so the
    statement does not depend on the variables in force when it is run again. What SQL has
    no clause for (start offsets, out-of-range policy, provenance, sink kind, fetch timeout,
    chunk size, CSV header) is not written."""
    fmt = spec.format
    csv = fmt.kind == "csv"
    fields = (
        A.FieldsFormat(
            terminated_by=fmt.csv.delimiter,
            enclosed_by=fmt.csv.quote or "",
            optionally_enclosed=fmt.csv.optionally,
            escaped_by=fmt.csv.escape or "",
        )
        if csv
        else None
    )
    mappings: list[A.FieldMapping] = []
    columns: list[A.LoadColumn] = []
    for m in fmt.mapping:
        name = m.column[1:] if m.is_variable else m.column
        if csv:
            columns.append(A.LoadColumn("" if name.startswith(DISCARDED) else name, m.is_variable))
        else:
            mappings.append(
                A.FieldMapping(
                    name, m.path, m.is_variable, rooted=not m.path, default=_default_literal(m)
                )
            )
    src, batch, tr = spec.source, spec.batch, spec.transform
    # a URL's password shows as ``<redacted>`` in the URL itself, not as a credential
    shown = sorted(k for k in src.credentials if urls.option_of(k) is None)
    # made from a link: shown as loading from it, its CONFIG and CREDENTIALS the link's
    link = next((h[len(LINK_HINT) :] for h in src.hints if h.startswith(LINK_HINT)), None)
    return A.CreatePipeline(
        name=spec.name,
        aggregator="AGGREGATOR" in src.hints,
        hints=tuple(h for h in src.hints if h != "AGGREGATOR" and not h.startswith(LINK_HINT)),
        source="LINK" if link else src.kind.upper(),
        link=link,
        location=src.location,
        target=A.Target("PROCEDURE" if spec.sink.kind == "procedure" else "TABLE", spec.sink.table),
        config=json.dumps(dict(src.config), sort_keys=True) if src.config and not link else None,
        credentials=json.dumps({k: REDACTED for k in shown}) if shown and not link else None,
        batch_interval=batch.interval_ms,
        max_partitions_per_batch=batch.max_partitions,
        max_offsets_per_batch_partition=batch.max_offsets_per_partition,
        max_retries_per_batch_partition=batch.max_retries,
        skip_errors=_skip_errors(spec),
        transform=A.Transform(*dataclasses.astuple(fmt.program)) if fmt.program else None,
        on_duplicate=tuple(A.Assignment(c, A.Expr(e)) for c, e in spec.sink.update),
        on_conflict=spec.sink.write.upper() if spec.sink.write in ("replace", "ignore") else None,
        format=fmt.kind.upper(),
        schema_registry=fmt.options.get("schema.registry.url"),
        schema=fmt.options.get("schema"),
        mappings=tuple(mappings),
        fields=fields,
        null_defined_by=fmt.csv.null_text if csv else None,
        null_enclosed=csv and fmt.csv.null_enclosed,
        trailing_nullcols=csv and fmt.csv.trailing_nullcols,
        lines=_lines(fmt.csv) if csv else None,
        ignore_lines=fmt.skip_lines or None,
        columns=tuple(columns),
        assignments=tuple(A.Assignment(c, A.Expr(e)) for c, e in tr.assignments),
        where=A.Expr(tr.where) if tr.where else None,
    )


def create_pipeline_sql(spec: PipelineSpec) -> str:
    """``SHOW CREATE PIPELINE``'s text: :func:`to_create_pipeline` rendered."""
    return to_create_pipeline(spec).to_sql()


def _lines(csv: CsvOptions) -> A.LinesFormat | None:
    """``LINES …`` as SHOW CREATE PIPELINE writes it: what differs from the defaults."""
    if csv.line_end == "\n" and not csv.line_start:
        return None
    return A.LinesFormat(csv.line_end if csv.line_end != "\n" else None, csv.line_start or None)

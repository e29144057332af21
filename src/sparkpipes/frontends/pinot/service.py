"""Pinot realtime tables (seed 002): a schema and a REALTIME table config become a Delta
table and the pipeline that loads it from the stream, as ``pinot-admin AddTable`` and the
controller's ``POST /schemas`` / ``POST /tables`` make a Pinot table.

The catalog keeps the schema and the table config (secrets redacted) beside the table and
the pipeline (``<table>_REALTIME``, an ordinary pipeline: ``SHOW PIPELINES``, ``sparkpipes
status`` and information_schema show it). Adding a table sets its pipeline Running, so
``sparkpipes run`` / ``serve`` load it; deleting a table drops the pipeline and the table
with its rows, as Pinot deletes a table's segments.

Maintenance (:meth:`PinotTables.maintain`, run by a running engine every few seconds):
rows older than ``retentionTimeValue`` ``retentionTimeUnit`` by the time column are
deleted, and a table's small files — every batch commits its own, so fresh rows are
queryable within the batch interval — are compacted into segment-sized files when the
``realtime.segment.flush.threshold.*`` say a Pinot segment would be flushed (rows, or
size when rows is 0, or time). See ``sparkpipes.sinks.delta.maintenance``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.engine.batch.assembly import build_source_of
from sparkpipes.engine.extensions import Extension
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError
from sparkpipes.formats import build_decoder
from sparkpipes.frontends.pinot.lowering import lower, pipeline_name, table_spec
from sparkpipes.frontends.pinot.model import PinotSchema, PinotTableConfig, load_schema, load_table
from sparkpipes.frontends.pinot.problems import Problems
from sparkpipes.frontends.pinot.units import TIME_UNITS_MS
from sparkpipes.sinks.delta.maintenance import CompactionPolicy, compact, expire

if TYPE_CHECKING:
    pass

log = logging.getLogger("sparkpipes.pinot")

Doc = str | Mapping[str, Any]


class PinotTables(Extension):
    """Add, list, show and delete Pinot schemas and realtime tables."""

    # -- schemas ------------------------------------------------------------------------
    def add_schema(self, doc: Doc | PinotSchema, *, override: bool = False) -> PinotSchema:
        schema = doc if isinstance(doc, PinotSchema) else load_schema(doc)
        catalog = self.engine.catalog
        exists = schema.name in catalog.pinot["schema"].names()
        if exists and not override:
            if catalog.pinot["schema"].get(schema.name) == dict(schema.raw):
                return schema
            raise AlreadyExistsError(
                f"schema '{schema.name}' already exists (override it to change it)"
            )
        if exists:
            users = self._users(schema.name)
            if users:
                raise ConfigError(
                    f"schema '{schema.name}' is used by table(s) {', '.join(users)}; change "
                    "their columns with ALTER TABLE, or delete them first"
                )
        catalog.pinot["schema"].put(schema.name, dict(schema.raw), replace=exists)
        return schema

    def schema(self, name: str) -> PinotSchema:
        try:
            return load_schema(self.engine.catalog.pinot["schema"].get(name))
        except NotFoundError:
            raise NotFoundError(f"schema '{name}' does not exist") from None

    def schema_names(self) -> list[str]:
        return self.engine.catalog.pinot["schema"].names()

    def delete_schema(self, name: str) -> None:
        users = self._users(name)
        if users:
            raise ConfigError(
                f"schema '{name}' is used by table(s) {', '.join(users)}; delete them first"
            )
        self.schema(name)
        self.engine.catalog.pinot["schema"].drop(name)

    # -- tables -------------------------------------------------------------------------
    def plan(self, table: Doc, schema: Doc | None = None) -> dict[str, Any]:
        """What adding ``table`` (with ``schema``, or the stored schema it names) would do,
        checked as far as can be without touching the stream: the columns, the pipeline and
        its source, and notes on keys that change nothing here."""
        s, cfg = self._load(table, schema)
        spec = lower(s, cfg, self.engine.pipeline_defaults())
        _check_plugins(spec)
        return self._describe(s, cfg, spec)

    def _describe(self, s: PinotSchema, cfg: PinotTableConfig, spec: Any) -> dict[str, Any]:
        return {
            "table": cfg.name,
            "schema": s.name,
            "columns": table_spec(s, cfg).schema,
            "primaryKey": list(s.primary_key),
            "pipeline": spec.name,
            "source": f"kafka {spec.source.location}",
            "decoder": spec.format.kind,
            "write": spec.sink.write,
            "start": spec.source.start,
            "retentionMs": cfg.retention_ms,
            "notes": list(cfg.notes),
            # accepted and kept, not applied here: Pinot's own name for them
            "unrecognizedProperties": list(cfg.unrecognized),
            "schemaUnrecognizedProperties": list(s.unrecognized),
        }

    def add(self, table: Doc, schema: Doc | None = None, *, run: bool = False) -> dict[str, Any]:
        """Add the table: store the schema (when given), create the Delta table and the
        pipeline, set it Running (``run``: and run it in this engine)."""
        s, cfg = self._load(table, schema)
        catalog = self.engine.catalog
        if cfg.name in self.names():
            raise AlreadyExistsError(f"table '{cfg.name}' already exists")
        spec = lower(s, cfg, self.engine.pipeline_defaults())
        if cfg.name in self.engine.tables():
            raise AlreadyExistsError(
                f"table '{cfg.name}' already exists in the warehouse (not as a Pinot table); "
                "drop it or name the Pinot table otherwise"
            )
        if any(p.name == spec.name for p in catalog.pipelines.all()):
            raise AlreadyExistsError(
                f"pipeline '{spec.name}' already exists (not as a Pinot table's): drop it or "
                "name the Pinot table otherwise"
            )
        if schema is not None:
            self.add_schema(s)
        self.engine.create_table_spec(table_spec(s, cfg))
        stored = {
            "config": cfg.shown(),
            "maintenance": _maintenance(s, cfg),
            "unrecognizedProperties": dict(cfg.unrecognized),
        }
        made = False  # undo only what this call made
        try:
            self.engine.create_pipeline_spec(spec)
            made = True
            catalog.pinot["table"].put(cfg.name, stored, replace=False)
        except BaseException:
            if made:
                self.engine.drop_pipeline(spec.name, if_exists=True)
            self.engine.drop_table(cfg.name, if_exists=True)
            raise
        for note in cfg.notes:
            log.info("table %s: %s", cfg.name, note)
        if cfg.unrecognized:
            log.info(
                "table %s: unrecognizedProperties (accepted, not applied): %s",
                cfg.name,
                ", ".join(cfg.unrecognized),
            )
        self.engine.start(spec.name, run=run)
        return self._describe(s, cfg, spec) | {"status": f"Table {spec.name} successfully added"}

    def _load(self, table: Doc, schema: Doc | None) -> tuple[PinotSchema, PinotTableConfig]:
        """Both documents checked, every problem of both in one error."""
        if schema is not None:
            found = Problems("schema")
            s = load_schema(schema, found)
            # a broken schema is not checked against: its problems would echo in the table's
            return s, load_table(table, None if found.errors else s, schema_problems=found)
        cfg = load_table(table)
        try:
            s = self.schema(cfg.schema_name)
        except NotFoundError:
            raise ConfigError(
                f"table '{cfg.name}' names schema '{cfg.schema_name}', which does not exist: "
                "add the schema first (POST /schemas, or AddTable -schemaFile)"
            ) from None
        return s, load_table(table, s)

    def _users(self, schema: str) -> list[str]:
        """The tables whose config names ``schema``."""
        out = []
        for t in self.names():
            seg = self.config(t).get("segmentsConfig") or {}
            if (seg.get("schemaName") or t) == schema:
                out.append(t)
        return out

    def names(self) -> list[str]:
        return self.engine.catalog.pinot["table"].names()

    def maintained(self) -> list[str]:
        """Pinot tables keep their own retention and flush thresholds."""
        return self.names()

    def config(self, name: str) -> dict[str, Any]:
        """The table config as given, secrets redacted."""
        return self._stored(name)["config"]

    def unrecognized(self, name: str) -> dict[str, Any]:
        """The table config's keys accepted without effect (JSON path → value, secrets
        redacted), as reported when it was added."""
        return dict(self._stored(name).get("unrecognizedProperties") or {})

    def _stored(self, name: str) -> dict[str, Any]:
        try:
            return self.engine.catalog.pinot["table"].get(_base(name))
        except NotFoundError:
            raise NotFoundError(f"table '{name}' does not exist") from None

    # -- maintenance ----------------------------------------------------------------------
    def maintain(
        self, name: str | None = None, *, now_ms: int | None = None, force: bool = False
    ) -> dict[str, dict[str, Any]]:
        """Retention, then compaction when due (``force``: compact now), for one table or
        all; per table, the rows deleted and the files compacted."""
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        out = {}
        for table in [_base(name)] if name else self.names():
            m = self._stored(table)["maintenance"]
            location = self.engine.catalog.tables.get(table).location
            done: dict[str, Any] = {"expired": 0, "compacted": 0}
            predicate = retention_predicate(m.get("retention"), now_ms)
            if predicate:
                done["expired"] = expire(location, table, predicate)
            f = m["flush"]
            policy = CompactionPolicy(
                target_bytes=f["segment_bytes"], rows=f["rows"], max_age_ms=f["time_ms"]
            )
            metrics = compact(location, table, policy, force=force)
            if metrics:
                done["compacted"] = metrics.get("numFilesRemoved", 0)
            out[table] = done
        return out

    def delete(self, name: str) -> str:
        """Drop the table's pipeline, the table and its rows, and its config; the
        pipeline's name."""
        base = _base(name)
        self.config(base)
        pipeline = pipeline_name(base)
        self.engine.drop_pipeline(pipeline, if_exists=True)
        self.engine.drop_table(base, if_exists=True)
        self.engine.catalog.pinot["table"].drop(base)
        return pipeline


def _check_plugins(spec: Any) -> None:
    """Build the pipeline's source and decoder once, so a stream type, consumer factory
    or decoder class that does not load is an error now (no I/O)."""
    import pyarrow as pa

    try:
        build_source_of(spec)
    except ConfigError as e:
        if spec.source.kind != "stream":
            raise
        stype = spec.source.config.get("streamType")
        raise ConfigError(f"streamType '{stype}' is not supported here: {e.message}") from None
    build_decoder(spec.format.kind, pa.schema([]), (), None, spec.format.decoder_options())


def _maintenance(s: PinotSchema, cfg: PinotTableConfig) -> dict[str, Any]:
    """What maintenance needs of a table, kept with its (redacted) config."""
    out: dict[str, Any] = {"flush": dataclasses.asdict(cfg.stream.flush)}
    if cfg.retention_ms:
        if not cfg.time_column:
            raise ConfigError(
                f"table '{cfg.name}': retention needs segmentsConfig.timeColumnName, the "
                "column whose age it measures"
            )
        f = s.field(cfg.time_column)
        fmt = f.format
        if fmt is None:
            raise AssertionError("a time column is a dateTime field")
        if fmt.kind == "SIMPLE_DATE_FORMAT" and not _sortable(fmt.pattern or ""):
            raise ConfigError(
                f"table '{cfg.name}': retention over time column '{f.name}' needs a pattern "
                f"whose text sorts as time does (yyyy first, numbers only), not "
                f"'{fmt.pattern}'"
            )
        out["retention"] = {
            "ms": cfg.retention_ms,
            "column": f.name,
            "type": f.data_type,
            "format": dataclasses.asdict(fmt),
        }
    return out


_PATTERN = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}
_TOKEN = re.compile(r"yyyy|MM|dd|HH|mm|ss|SSS|'[^']*'|[^A-Za-z']")


def _sortable(pattern: str) -> bool:
    tokens = _TOKEN.findall(pattern)
    return "".join(tokens) == pattern and bool(tokens) and tokens[0] == "yyyy"


def _strftime(pattern: str, when: dt.datetime) -> str:
    out = []
    for tok in _TOKEN.findall(pattern):
        if tok == "SSS":
            out.append(f"{when.microsecond // 1000:03d}")
        elif tok in _PATTERN:
            out.append(when.strftime(_PATTERN[tok]))
        else:
            out.append(tok.strip("'"))
    return "".join(out)


def retention_predicate(r: Mapping[str, Any] | None, now_ms: int) -> str | None:
    """The delta-rs predicate of a table's rows past retention, or None."""
    if not r:
        return None
    cutoff_ms = now_ms - int(r["ms"])
    col = "`" + r["column"].replace("`", "``") + "`"
    fmt = r["format"]
    if r["type"] == "TIMESTAMP" or fmt["kind"] == "TIMESTAMP":
        when = dt.datetime.fromtimestamp(cutoff_ms / 1000, dt.UTC)
        return f"{col} < '{when.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"
    if fmt["kind"] == "EPOCH":
        unit = TIME_UNITS_MS[fmt["unit"]] * fmt["size"]
        return f"{col} < {int(cutoff_ms // unit)}"
    when = dt.datetime.fromtimestamp(cutoff_ms / 1000, dt.UTC)
    return f"{col} < '{_strftime(fmt['pattern'], when)}'"


def _base(name: str) -> str:
    for suffix in ("_REALTIME", "_OFFLINE"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name

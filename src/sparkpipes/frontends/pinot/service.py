"""Pinot realtime tables (seed 002): a schema and a REALTIME table config become a Delta
table and the pipeline that loads it from the stream, as ``pinot-admin AddTable`` and the
controller's ``POST /schemas`` / ``POST /tables`` make a Pinot table.

The catalog keeps the schema and the table config (secrets redacted) beside the table and
its pipelines: ``<table>_REALTIME``, or with several streams (``streamConfigMaps``,
:mod:`.multistream`) one per stream, ``<table>_REALTIME_<index>`` — ordinary pipelines
into the one table, each committing its own batches exactly once (``SHOW PIPELINES``,
``sparkpipes status`` and information_schema show them). Everything done to a Pinot table
is done to all its pipelines: adding it sets them Running, so ``sparkpipes run`` / ``serve``
load it; pausing and resuming stop and start them; :meth:`PinotTables.status` shows each
stream with its partitions under Pinot's ids; deleting the table drops them and the table
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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sparkpipes.engine.batch.assembly import build_source_of
from sparkpipes.engine.extensions import Extension
from sparkpipes.engine.status import pipeline_status
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError, SparkpipesError
from sparkpipes.formats import build_decoder
from sparkpipes.frontends.pinot.lowering import lower_all, pipeline_name, table_spec
from sparkpipes.frontends.pinot.model import PinotSchema, PinotTableConfig, load_schema, load_table
from sparkpipes.frontends.pinot.multistream import pinot_partition
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
        specs = lower_all(s, cfg, self.engine.pipeline_defaults())
        for spec in specs:
            _check_plugins(spec)
        return self._describe(s, cfg, specs)

    def _describe(
        self, s: PinotSchema, cfg: PinotTableConfig, specs: tuple[Any, ...]
    ) -> dict[str, Any]:
        """What the table is made of; ``pipeline``, ``source``, ``decoder``, ``start``
        are its first stream's (its only one, for most tables), ``streams`` each one's."""
        spec = specs[0]
        return {
            "table": cfg.name,
            "schema": s.name,
            "columns": table_spec(s, cfg).schema,
            "primaryKey": list(s.primary_key),
            "pipeline": spec.name,
            "source": f"{spec.source.kind} {spec.source.location}",
            "decoder": spec.format.kind,
            "write": spec.sink.write,
            "start": spec.source.start,
            "pipelines": [p.name for p in specs],
            "streams": [
                {
                    "index": i,
                    "pipeline": p.name,
                    "source": f"{p.source.kind} {p.source.location}",
                    "decoder": p.format.kind,
                    "start": p.source.start,
                }
                for i, p in enumerate(specs)
            ],
            "retentionMs": cfg.retention_ms,
            "notes": list(cfg.notes),
            # accepted and kept, not applied here: Pinot's own name for them
            "unrecognizedProperties": list(cfg.unrecognized),
            "schemaUnrecognizedProperties": list(s.unrecognized),
        }

    def add(self, table: Doc, schema: Doc | None = None, *, run: bool = False) -> dict[str, Any]:
        """Add the table: store the schema (when given), create the Delta table and its
        pipelines (one per stream), set them Running (``run``: and run them in this
        engine). Nothing is left behind when any of it fails."""
        s, cfg = self._load(table, schema)
        catalog = self.engine.catalog
        if cfg.name in self.names():
            raise AlreadyExistsError(f"table '{cfg.name}' already exists")
        specs = lower_all(s, cfg, self.engine.pipeline_defaults())
        if cfg.name in self.engine.tables():
            raise AlreadyExistsError(
                f"table '{cfg.name}' already exists in the warehouse (not as a Pinot table); "
                "drop it or name the Pinot table otherwise"
            )
        existing = {p.name for p in catalog.pipelines.all()}
        for spec in specs:
            if spec.name in existing:
                raise AlreadyExistsError(
                    f"pipeline '{spec.name}' already exists (not as a Pinot table's): drop it "
                    "or name the Pinot table otherwise"
                )
        if schema is not None:
            self.add_schema(s)
        self.engine.create_table_spec(table_spec(s, cfg))
        stored = {
            "config": cfg.shown(),
            "maintenance": _maintenance(s, cfg),
            "unrecognizedProperties": dict(cfg.unrecognized),
            "pipelines": [spec.name for spec in specs],
        }
        made: list[str] = []  # undo only what this call made
        try:
            for spec in specs:
                self.engine.create_pipeline_spec(spec)
                made.append(spec.name)
            catalog.pinot["table"].put(cfg.name, stored, replace=False)
        except BaseException:
            for name in made:
                self.engine.drop_pipeline(name, if_exists=True)
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
        for spec in specs:
            self.engine.start(spec.name, run=run)
        return self._describe(s, cfg, specs) | {
            "status": f"Table {cfg.name}_REALTIME successfully added"
        }

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

    def pipelines(self, name: str) -> list[str]:
        """The table's pipelines, one per stream in stream order (a table stored before
        several streams were supported has its one, ``<table>_REALTIME``)."""
        stored = self._stored(name)
        return list(stored.get("pipelines") or [pipeline_name(_base(name))])

    def status(self, name: str, *, lag: bool = True) -> dict[str, Any]:
        """Each stream of the table: its pipeline, source, state, rows loaded, lag and
        partitions — each under Pinot's id (``index * 10000 + partition`` with several
        streams), with the stream's own partition and the committed offset (next to
        read). A source that cannot answer leaves its partitions out (``None``), never a
        false 0. ``paused``: every stream is stopped."""
        base = _base(name)
        names = self.pipelines(base)
        streams = []
        for i, pipeline in enumerate(names):
            spec = self.engine.spec(pipeline)
            (st,) = pipeline_status(self.engine, pipeline, lag=False)
            parts = self._partitions(pipeline, i, len(names)) if lag else None
            lags = [p["lag"] for p in parts or ()]
            streams.append(
                {
                    "index": i,
                    "pipeline": pipeline,
                    "source": f"{spec.source.kind} {spec.source.location}",
                    "state": st["state"],
                    "rowsLoaded": st["rows_loaded"],
                    "lag": sum(lags) if parts and None not in lags else None,
                    "lastError": st["last_error"],
                    "partitions": parts,
                }
            )
        return {
            "table": base,
            "tableNameWithType": f"{base}_REALTIME",
            "paused": all(s["state"] != "Running" for s in streams),
            "streams": streams,
        }

    def _partitions(self, pipeline: str, index: int, streams: int) -> list[dict] | None:
        try:
            snap = self.engine.offset_snapshot(self.engine.pipeline(pipeline))
        except SparkpipesError:
            return None
        out = []
        for o in snap:
            own = o.key.get("partition", o.partition) if isinstance(o.key, Mapping) else None
            own = o.partition if own is None else own
            out.append(
                {
                    "partition": pinot_partition(index, own, streams),
                    "streamPartition": own,
                    "offset": o.committed,
                    "latest": o.latest,
                    "lag": o.lag,
                }
            )
        return out

    def pause(self, name: str, streams: Sequence[int] | None = None) -> list[str]:
        """Stop the table's streams (Pinot's ``pauseConsumption``; ``streams``: only those,
        by index, as ``pauseTopicConsumption`` takes ``topicIndices``); returns once
        batches in flight have committed. The pipelines stopped."""
        names = self._chosen(name, streams)
        for pipeline in names:
            self.engine.stop(pipeline)
        return names

    def resume(
        self,
        name: str,
        streams: Sequence[int] | None = None,
        *,
        consume_from: str | None = None,
        run: bool = False,
    ) -> list[str]:
        """Set the table's streams (``streams``: only those) Running again (Pinot's
        ``resumeConsumption`` / ``resumeTopicConsumption``): from the committed offsets
        (``consumeFrom`` ``lastConsumed``, the default), or each partition's first
        (``smallest``: rows are loaded again) or last (``largest``: rows are skipped)
        offset, as Pinot's ``consumeFrom`` says. The pipelines resumed."""
        key = (consume_from or "lastConsumed").lower()
        if key not in CONSUME_FROM:
            raise ConfigError(
                f"consumeFrom param '{consume_from}' is not valid. Valid values are "
                "'lastConsumed', 'smallest' and 'largest'."
            )
        names = self._chosen(name, streams)
        for pipeline in names:
            if CONSUME_FROM[key] is not None:
                self.engine.set_offsets(pipeline, CONSUME_FROM[key])
            self.engine.start(pipeline, run=run)
        return names

    def _chosen(self, name: str, streams: Sequence[int] | None) -> list[str]:
        names = self.pipelines(name)
        if streams is None:
            return names
        wrong = [i for i in streams if not 0 <= i < len(names)]
        if wrong:
            raise ConfigError(
                f"table '{_base(name)}' has {len(names)} stream(s) (indices 0-"
                f"{len(names) - 1}), not {', '.join(map(str, wrong))}"
            )
        return [names[i] for i in dict.fromkeys(streams)]

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
        """Drop the table's pipelines (every stream's), the table and its rows, and its
        config; the table's name with its type, as Pinot's answer names it."""
        base = _base(name)
        for pipeline in self.pipelines(base):
            self.engine.drop_pipeline(pipeline, if_exists=True)
        self.engine.drop_table(base, if_exists=True)
        self.engine.catalog.pinot["table"].drop(base)
        return pipeline_name(base)


#: Pinot's ``consumeFrom`` (lower case) → where the offsets move first (None: stay)
CONSUME_FROM: dict[str, str | None] = {
    "lastconsumed": None,
    "smallest": "earliest",
    "largest": "latest",
}


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

"""The Python API: an engine over one warehouse (tables, pipelines, catalog, SparkSession).

    from sparkpipes import Engine
    eng = Engine(warehouse="./warehouse")
    eng.create_table("events", "ts BIGINT, uuid STRING, count INT")
    eng.create_pipeline("events_p", source="kafka", location="127.0.0.1:9092/events",
                        table="events", format="json")
    eng.run_batches("events_p", 3)          # or eng.start("events_p") … eng.stop()
    eng.table("events").count()

Pipelines are ``Stopped`` when created; ``start`` makes them ``Running`` and the engine's
scheduler thread runs their batches every ``batch_interval_ms``. A batch that fails with
a transient error (broker unreachable, Spark task lost) is retried with exponential
backoff up to ``max_retries`` times; a terminal error (record that does not decode,
offset out of range, bad option) or the last failed retry puts the pipeline into
``Error`` with the error recorded in the catalog and in ``errors(pipeline)``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sparkpipes.catalog import Catalog, PipelineRecord
from sparkpipes.config import PipelineSpec
from sparkpipes.engine.batch import BatchResult, BatchRunner
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.engine.task import OFFSET_COLUMN, PARTITION_COLUMN
from sparkpipes.errors import (
    ConfigError,
    NotFoundError,
    PipelineStateError,
    SparkpipesError,
)
from sparkpipes.formats import build_decoder
from sparkpipes.sinks import DeltaSink
from sparkpipes.sources import build_source

log = logging.getLogger("sparkpipes.engine")

RUNNING, STOPPED, ERROR = "Running", "Stopped", "Error"


class Engine:
    """One warehouse: a directory of Delta tables plus a catalog (SQLite file by default).

    ``catalog_url`` (or $SPARKPIPES_CATALOG_URL) may name any SQLAlchemy database, e.g.
    ``postgresql+psycopg2://user@host/db``. ``spark_master`` defaults to
    $SPARKPIPES_SPARK_MASTER or ``local[*]``; the session is created on first use.
    """

    def __init__(
        self,
        warehouse: str | os.PathLike[str] | None = None,
        *,
        catalog_url: str | None = None,
        spark_master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
    ) -> None:
        self.warehouse = os.path.abspath(
            os.fspath(warehouse or os.environ.get("SPARKPIPES_WAREHOUSE", "./warehouse"))
        )
        os.makedirs(os.path.join(self.warehouse, "tables"), exist_ok=True)
        url = catalog_url or os.environ.get("SPARKPIPES_CATALOG_URL")
        self.catalog = Catalog(url or f"sqlite:///{os.path.join(self.warehouse, 'catalog.db')}")
        self._master = spark_master
        self._spark_conf = dict(spark_conf or {})
        self._spark = None
        self._runners: dict[str, BatchRunner] = {}
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._next_due: dict[str, float] = {}

    # -- session ----------------------------------------------------------------------
    @property
    def spark(self):
        if self._spark is None:
            from sparkpipes.engine.spark import build_session

            self._spark = build_session(self._master, self._spark_conf)
        return self._spark

    def close(self) -> None:
        """Stop the scheduler (finishing the batch in flight) and release connections."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        for r in self._runners.values():
            r.close()
        self._runners.clear()
        self.catalog.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tables -----------------------------------------------------------------------
    def create_table(
        self,
        name: str,
        schema: Any,
        *,
        keys: Sequence[Mapping[str, Any]] = (),
        if_not_exists: bool = False,
    ) -> None:
        """Create a Delta table from Spark DDL text, a StructType or an Arrow schema."""
        PipelineSpec.build(name="x", source="fs", location="x", table=name)  # name check
        if if_not_exists and name in self.tables():
            return
        if isinstance(schema, str):
            self.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(schema)
        location = os.path.join(self.warehouse, "tables", name)
        sink = DeltaSink(location, arrow, name)
        if sink.exists():
            raise ConfigError(f"a Delta table already exists at {location}; drop it first")
        self.catalog.create_table(name, location, ddl, arrow, keys)
        try:
            sink.create()
        except Exception:
            self.catalog.drop_table(name)
            raise

    def drop_table(self, name: str, *, if_exists: bool = False) -> None:
        users = [p.name for p in self.catalog.pipelines() if p.table == name]
        if users:
            raise PipelineStateError(
                f"table '{name}' is loaded by pipeline(s) {', '.join(users)}; drop them first"
            )
        try:
            rec = self.catalog.table(name)
        except NotFoundError:
            if if_exists:
                return
            raise
        self.catalog.drop_table(name)
        import shutil

        shutil.rmtree(rec.location, ignore_errors=True)

    def tables(self) -> list[str]:
        return [t.name for t in self.catalog.tables()]

    def _sink(self, table: str) -> DeltaSink:
        rec = self.catalog.table(table)
        return DeltaSink(rec.location, rec.schema, rec.name)

    def table(self, name: str):
        """The table's current snapshot as a Spark DataFrame."""
        rec = self.catalog.table(name)
        files = DeltaSink(rec.location, rec.schema, name).file_uris()
        schema = to_spark(rec.schema)
        if not files:
            return self.spark.createDataFrame([], schema)
        return self.spark.read.schema(schema).parquet(*files)

    def table_arrow(self, name: str):
        """The table's current snapshot as an Arrow table (no Spark needed)."""
        from deltalake import DeltaTable

        return DeltaTable(self.catalog.table(name).location).to_pyarrow_table()

    def sql(self, query: str):
        """Run Spark SQL with every table registered as a view of its current snapshot."""
        for t in self.tables():
            self.table(t).createOrReplaceTempView(t)
        return self.spark.sql(query)

    # -- pipelines --------------------------------------------------------------------
    def create_pipeline(self, name: str, *, replace: bool = False, **options: Any) -> PipelineSpec:
        """Define a pipeline (state ``Stopped``). Options are those of PipelineSpec."""
        spec = PipelineSpec.build(name=name, **options)
        table = self.catalog.table(spec.table)
        self._check(spec, table.schema)
        existing = None
        if replace:
            try:
                existing = self.catalog.pipeline(name)
            except NotFoundError:
                pass
        pid = existing.id if existing else uuid.uuid4().hex
        self.catalog.create_pipeline(
            name,
            pid,
            spec.source,
            spec.table,
            spec.to_json(),
            {k: v.reveal() for k, v in spec.credentials.items()},
            STOPPED,
            replace=replace,
        )
        self._runners.pop(name, None)
        return spec

    def _check(self, spec: PipelineSpec, schema) -> None:
        build_source(spec.source, spec.location, spec.config, spec.credentials)
        names = set(schema.names)
        for m in spec.mapping:
            if m.column not in names:
                raise ConfigError(
                    f"field mapping names column '{m.column}', which table '{spec.table}' "
                    f"does not have (columns: {', '.join(schema.names)})",
                    pipeline=spec.name,
                )
        if spec.provenance:
            missing = [c for c in (PARTITION_COLUMN, OFFSET_COLUMN) if c not in names]
            if missing:
                raise ConfigError(
                    f"provenance needs table '{spec.table}' to have columns "
                    f"{PARTITION_COLUMN} STRING and {OFFSET_COLUMN} BIGINT (missing: "
                    f"{', '.join(missing)})",
                    pipeline=spec.name,
                )
        build_decoder(spec.format, self._data_schema(spec, schema), spec.mapping, spec.csv)

    @staticmethod
    def _data_schema(spec: PipelineSpec, schema):
        if not spec.provenance:
            return schema
        import pyarrow as pa

        return pa.schema([f for f in schema if f.name not in (PARTITION_COLUMN, OFFSET_COLUMN)])

    def spec(self, name: str) -> PipelineSpec:
        rec = self.catalog.pipeline(name)
        return PipelineSpec.from_json(rec.definition, self.catalog.credentials(name))

    def pipeline(self, name: str) -> PipelineRecord:
        return self.catalog.pipeline(name)

    def pipelines(self) -> list[PipelineRecord]:
        return self.catalog.pipelines()

    def drop_pipeline(self, name: str, *, if_exists: bool = False) -> None:
        try:
            rec = self.catalog.pipeline(name)
        except NotFoundError:
            if if_exists:
                return
            raise
        with self._lock:
            runner = self._runners.pop(name, None)
            if runner:
                runner.close()
            self.catalog.drop_pipeline(name)
            self.catalog.drop_pipeline_history(rec.id)

    def alter_pipeline(self, name: str, **changes: Any) -> PipelineSpec:
        """Change options of a pipeline (e.g. batch_interval_ms) keeping its offsets."""
        spec = self.spec(name)
        data = spec.to_json(with_credentials=True)
        creds = data.pop("credentials")
        data.update(changes)
        new = PipelineSpec.from_json(data, creds)
        self._check(new, self.catalog.table(new.table).schema)
        self.catalog.update_pipeline(name, definition=new.to_json())
        with self._lock:
            self._runners.pop(name, None)
        return new

    def _runner(self, name: str) -> BatchRunner:
        with self._lock:
            runner = self._runners.get(name)
            if runner is None:
                rec = self.catalog.pipeline(name)
                spec = self.spec(name)
                table = self.catalog.table(spec.table)
                source = build_source(spec.source, spec.location, spec.config, spec.credentials)
                decoder = build_decoder(
                    spec.format, self._data_schema(spec, table.schema), spec.mapping, spec.csv
                )
                sink = DeltaSink(table.location, table.schema, table.name)
                runner = BatchRunner(spec, rec.id, source, decoder, sink, self.catalog, self.spark)
                self._runners[name] = runner
            return runner

    def offsets(self, name: str) -> dict[str, Any]:
        """The committed end offset of every partition, read from the destination table."""
        committed = self._runner(name).committed()
        return dict(committed.offsets) if committed else {}

    def batches(self, name: str) -> list[dict[str, Any]]:
        return self.catalog.batches(self.catalog.pipeline(name).id)

    def errors(self, name: str) -> list[dict[str, Any]]:
        return self.catalog.errors(self.catalog.pipeline(name).id)

    # -- running ----------------------------------------------------------------------
    def run_batch(self, name: str) -> BatchResult:
        """Run one batch with the retry policy; on final failure the pipeline is ``Error``."""
        spec = self._runner(name).spec
        attempt = 0
        while True:
            attempt += 1
            try:
                result = self._runner(name).run(attempt)
            except SparkpipesError as e:
                e.with_context(pipeline=name)
                if e.transient and attempt <= spec.max_retries:
                    delay = min(0.25 * 2 ** (attempt - 1), 10.0)
                    log.warning("%s; retry %d/%d in %.1fs", e, attempt, spec.max_retries, delay)
                    with self._lock:
                        old = self._runners.pop(name, None)
                        if old:
                            old.close()
                    time.sleep(delay)
                    continue
                self.catalog.update_pipeline(name, state=ERROR, last_error=str(e))
                raise
            rec = self.catalog.pipeline(name)
            if rec.last_error and rec.state != ERROR:
                self.catalog.update_pipeline(name, last_error=None)
            return result

    def run_batches(self, name: str, n: int = 1, *, until_idle: bool = False) -> list[BatchResult]:
        """Run up to ``n`` batches now, in this thread; stop early at an idle batch if asked."""
        out = []
        for _ in range(n):
            r = self.run_batch(name)
            out.append(r)
            if until_idle and r.state == "NoData":
                break
        return out

    def start(self, name: str | None = None) -> None:
        """Set the pipeline (or all) ``Running`` and make sure the scheduler thread runs."""
        names = [name] if name else [p.name for p in self.catalog.pipelines()]
        for n in names:
            self.catalog.pipeline(n)
            self.catalog.update_pipeline(n, state=RUNNING, last_error=None)
        self._ensure_thread()

    def stop(self, name: str | None = None) -> None:
        """Set the pipeline (or all) ``Stopped``; a batch in flight finishes first."""
        names = [name] if name else [p.name for p in self.catalog.pipelines()]
        for n in names:
            self.catalog.update_pipeline(n, state=STOPPED)
        with self._lock:  # wait for a batch in flight
            pass

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._halt.clear()
            self._thread = threading.Thread(target=self.run_forever, name="sparkpipes", daemon=True)
            self._thread.start()

    def run_forever(self, halt: threading.Event | None = None) -> None:
        """Run batches of every ``Running`` pipeline until ``halt`` (or ``close``) is set."""
        halt = halt or self._halt
        while not halt.is_set() and not self._halt.is_set():
            ran = False
            for rec in self.catalog.pipelines():
                if halt.is_set() or self._halt.is_set():
                    break
                if rec.state != RUNNING or time.time() < self._next_due.get(rec.name, 0):
                    continue
                with self._lock:
                    try:
                        if self.catalog.pipeline(rec.name).state != RUNNING:
                            continue
                        result = self.run_batch(rec.name)
                        ran = ran or result.state != "NoData"
                    except SparkpipesError as e:
                        log.error("%s", e)
                    except Exception:
                        log.exception("unexpected failure in pipeline %s", rec.name)
                        self.catalog.update_pipeline(rec.name, state=ERROR)
                interval = rec.definition.get("batch_interval_ms", 2500) / 1000
                self._next_due[rec.name] = time.time() + (0 if ran else interval)
            halt.wait(0.05)

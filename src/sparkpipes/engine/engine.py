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

import datetime as dt
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import Catalog, PipelineRecord
from sparkpipes.catalog.views import PartitionOffsets
from sparkpipes.config import PipelineSpec, check_name
from sparkpipes.engine.batch import BatchResult, BatchRunner
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.engine.task import OFFSET_COLUMN, PARTITION_COLUMN
from sparkpipes.engine.transform import Transform
from sparkpipes.errors import (
    ConfigError,
    DecodeError,
    NotFoundError,
    PipelineStateError,
    SparkpipesError,
)
from sparkpipes.formats import build_decoder
from sparkpipes.sinks import DeltaSink
from sparkpipes.sources import build_source

log = logging.getLogger("sparkpipes.engine")

RUNNING, STOPPED, ERROR = "Running", "Stopped", "Error"
SNAPSHOT_TIMEOUT_S = 3.0


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

    def warm_up(self) -> None:
        """Prepare the session for batches (Python workers started and exercised, Spark's
        job path compiled; see ``engine.spark.warm_up``), once per SparkContext. The
        first batch does it if nobody did; a long-running engine does it at start."""
        from sparkpipes.engine.spark import warm_up

        warm_up(self.spark)

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
        computed: Mapping[str, str] | None = None,
        if_not_exists: bool = False,
    ) -> None:
        """Create a Delta table from Spark DDL text, a StructType or an Arrow schema.

        ``keys`` (SingleStore-style PRIMARY / SHARD / SORT / KEY) are recorded in the
        catalog. ``computed`` maps columns of the schema to SQL expressions over the other
        columns, evaluated whenever rows are loaded (``col AS (expr) PERSISTED type``).
        """
        check_name(name, "table name")
        if if_not_exists and name in self.tables():
            return
        if isinstance(schema, str):
            self.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(schema)
        for col in computed or {}:
            if col not in arrow.names:
                raise ConfigError(f"computed column '{col}' is not a column of table '{name}'")
        location = os.path.join(self.warehouse, "tables", name)
        sink = DeltaSink(location, arrow, name)
        if sink.exists():
            raise ConfigError(f"a Delta table already exists at {location}; drop it first")
        options = {"keys": [dict(k) for k in keys], "computed": dict(computed or {})}
        self.catalog.create_table(name, location, ddl, arrow, options)
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

    def add_column(self, table: str, column: str, type_ddl: str, computed: str | None = None):
        """Add a column (NULL in existing rows; a computed column is computed for rows
        loaded from now on)."""
        from deltalake.schema import Field

        rec = self.catalog.table(table)
        if column in rec.schema.names:
            raise ConfigError(f"table '{table}' already has a column '{column}'")
        self.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(f"`{column}` {type_ddl}")
        from deltalake import DeltaTable

        DeltaTable(rec.location).alter.add_columns([Field.from_arrow(arrow.field(0))])
        options = dict(rec.options)
        if computed:
            options["computed"] = {**rec.computed, column: computed}
        self.catalog.update_table(
            table,
            schema=rec.schema.append(arrow.field(0)),
            ddl=f"{rec.ddl}, {ddl}",
            options=options,
        )
        with self._lock:
            for name in [p.name for p in self.catalog.pipelines() if p.table == table]:
                self._runners.pop(name, None)

    def add_key(self, table: str, key: Mapping[str, Any]) -> None:
        """Record a key / index (SingleStore-style) on the table; Delta enforces none."""
        rec = self.catalog.table(table)
        missing = [c for c in key.get("columns", ()) if c not in rec.schema.names]
        if missing:
            raise ConfigError(f"table '{table}' has no column(s) {', '.join(missing)}")
        options = dict(rec.options)
        options["keys"] = [*options.get("keys", []), dict(key)]
        self.catalog.update_table(table, options=options)

    def insert(self, table: str, df) -> int:
        """Append a DataFrame's rows (columns by name; computed columns are computed) in
        one Delta commit. Returns the number of rows written."""
        from sparkpipes.engine import transform as tf

        rec = self.catalog.table(table)
        sink = DeltaSink(rec.location, rec.schema, rec.name)
        out = tf.apply(df, Transform(computed=tuple(rec.computed.items())), rec.schema)
        files = tf.write_dataframe(out, sink, "part-insert")
        if files:
            sink.commit_files(files, operation="INSERT")
        return sum(f.num_records for f in files)

    # -- variables --------------------------------------------------------------------
    def variables(self) -> dict[str, Any]:
        from sparkpipes.engine.variables import resolve

        return resolve(self.catalog.variables())

    def set_variable(self, name: str, value: Any) -> Any:
        from sparkpipes.engine.variables import coerce

        v = coerce(name, value)
        self.catalog.set_variable(name.lower(), str(v))
        return v

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
        build_source(spec.source, spec.location, spec.config, spec.credentials)
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
            if m.column not in names and not m.column.startswith("@"):
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
        if spec.on_duplicate_key:
            self._primary_key(spec, self.catalog.table(spec.table))
        if spec.skip_lines and spec.source != "fs":
            raise ConfigError("IGNORE n LINES applies to files only", pipeline=spec.name)
        build_decoder(spec.format, self._load_schema(spec, schema, {}), spec.mapping, spec.csv)

    @staticmethod
    def _load_schema(spec: PipelineSpec, schema, computed: Mapping[str, str]):
        """The columns a pipeline's decoder produces: the mapped ones (variables as
        STRING), or every table column but computed and provenance ones."""
        if spec.mapping:
            return pa.schema(
                [
                    pa.field(m.column, schema.field(m.column).type)
                    if m.column in schema.names
                    else pa.field(m.column, pa.string())
                    for m in spec.mapping
                ]
            )
        skip = set(computed)
        if spec.provenance:
            skip |= {PARTITION_COLUMN, OFFSET_COLUMN}
        return pa.schema([f for f in schema if f.name not in skip])

    @staticmethod
    def _primary_key(spec: PipelineSpec, table) -> list[str]:
        for key in table.options.get("keys", []):
            if key.get("kind") == "PRIMARY":
                return list(key["columns"])
        raise ConfigError(
            f"{spec.on_duplicate_key.upper()} INTO TABLE needs a PRIMARY KEY on table "
            f"'{table.name}' to know which rows are duplicates",
            pipeline=spec.name,
        )

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
                load = self._load_schema(spec, table.schema, table.computed)
                decoder = build_decoder(spec.format, load, spec.mapping, spec.csv)
                sink = DeltaSink(table.location, table.schema, table.name)
                transform = Transform(spec.assignments, spec.where, tuple(table.computed.items()))
                data = pa.schema(
                    [f for f in table.schema if f.name not in (PARTITION_COLUMN, OFFSET_COLUMN)]
                    if spec.provenance
                    else list(table.schema)
                )
                root = os.path.join(table.location, "_sparkpipes_staging", rec.id)
                staging = merging = None
                if transform:
                    staged = list(load)
                    if spec.provenance:
                        staged += [table.schema.field(c) for c in (PARTITION_COLUMN, OFFSET_COLUMN)]
                    staging = DeltaSink(
                        os.path.join(root, "decoded"), pa.schema(staged), f"{table.name} (staging)"
                    )
                if spec.on_duplicate_key:
                    merging = DeltaSink(
                        os.path.join(root, "merge"), table.schema, f"{table.name} (upsert)"
                    )
                runner = BatchRunner(
                    spec,
                    rec.id,
                    source,
                    decoder,
                    sink,
                    self.catalog,
                    self.spark,
                    output_schema=load if transform else data,
                    transform=transform,
                    staging=staging,
                    upsert=(
                        (spec.on_duplicate_key, self._primary_key(spec, table)) if merging else None
                    ),
                    merging=merging,
                    staging_root=root,
                )
                self._runners[name] = runner
            return runner

    def offsets(self, name: str) -> dict[str, Any]:
        """The committed end offset of every partition, read from the destination table."""
        committed = self._runner(name).committed()
        return dict(committed.offsets) if committed else {}

    def set_offsets(self, name: str, offsets: str | Mapping[str, Any]) -> dict[str, Any]:
        """Move a pipeline's offsets: ``"earliest"``, ``"latest"`` or {partition: offset}.

        Done as an empty batch committed to the table, like any other: the offsets stay
        in the one place they are read from, and a batch in flight cannot overwrite them.
        """
        with self._lock:
            runner = self._runner(name)
            committed = runner.committed()
            current = dict(committed.offsets) if committed else {}
            parts = runner.meta.partitions()
            if isinstance(offsets, str):
                if offsets.lower() not in ("earliest", "latest"):
                    raise ConfigError(
                        f"offsets must be EARLIEST, LATEST or a JSON object, got '{offsets}'",
                        pipeline=name,
                    )
                new = {
                    p: runner.source.start_offset(runner.meta, p, offsets.lower()) for p in parts
                }
            else:
                unknown = [str(p) for p in offsets if str(p) not in parts]
                if unknown:
                    raise ConfigError(
                        f"partition(s) {', '.join(unknown)} do not exist in the source "
                        f"(partitions: {', '.join(parts)})",
                        pipeline=name,
                    )
                new = {**current, **{str(p): v for p, v in offsets.items()}}
            batch_id = committed.batch_id + 1 if committed else 1
            runner.sink.commit([], app_id=runner.app_id, batch_id=batch_id, offsets=new)
            self.catalog.record_batch(
                pipeline_id=runner.pipeline_id,
                pipeline_name=name,
                batch_id=batch_id,
                attempt=1,
                state="OffsetsSet",
                started_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
                offsets=new,
            )
            runner.forget_idle()
            return new

    def test_pipeline(self, name: str, limit: int = 10):
        """Decode up to ``limit`` records from the committed offsets; load nothing."""
        runner = self._runner(name)
        spec = runner.spec
        committed = runner.committed()
        offsets = dict(committed.offsets) if committed else {}
        tables = []
        left = limit
        for p in runner.meta.partitions():
            if left <= 0:
                break
            start = offsets.get(p)
            if start is None:
                start = runner.source.start_offset(runner.meta, p, spec.offsets)
            consumer = runner.source.consumer(p, out_of_range="fail", pipeline=name)
            try:
                consumer.open(start)
                fetched = consumer.fetch(left, max(spec.fetch_timeout_ms / 1000, 1.0))
            finally:
                consumer.close()
            decoded = runner.decoder.decode(fetched.values)
            if decoded.errors and not spec.skip_parser_errors:
                e = decoded.errors[0]
                raise DecodeError(
                    f"cannot decode the record at partition {p} offset "
                    f"{fetched.positions[e.index].as_py()}: {e.reason}",
                    pipeline=name,
                    partition=p,
                )
            tables.append(decoded.table)
            left -= len(fetched)
        if not tables:
            return runner.decoder.schema.empty_table()
        return pa.concat_tables(tables)

    def offset_snapshot(self, rec: PipelineRecord) -> list[PartitionOffsets]:
        """Per source partition: committed offset (from the table) and, if the source
        answers within a few seconds, earliest / latest offsets and lag. For the
        information_schema views and `sparkpipes status`."""
        runner = self._runner(rec.name)
        committed = runner.committed()
        offs = dict(committed.offsets) if committed else {}
        meta = runner.source.metadata(timeout_s=SNAPSHOT_TIMEOUT_S)
        try:
            parts = meta.partitions()
        except SparkpipesError:
            parts = []
        out = []
        for p in sorted(set(parts) | set(offs)):
            earliest = latest = lag = size = None
            if p in parts:
                try:
                    earliest = meta.earliest(p)
                    latest = meta.end(p)
                    if isinstance(latest, int) and isinstance(offs.get(p), int):
                        lag = max(0, latest - offs[p])
                    elif p in offs:
                        lag = meta.lag(p, offs[p])
                    size = meta.size(p)
                except SparkpipesError:
                    pass
            out.append(
                PartitionOffsets(
                    p, runner.source.partition_key(p), offs.get(p), earliest, latest, lag, size
                )
            )
        meta.close()
        return out

    def information_schema(self, view: str, cache: dict | None = None):
        """An information_schema view (PIPELINES, PIPELINES_BATCHES, …) as an Arrow table.

        ``cache`` shares source snapshots between the views of one query."""
        from sparkpipes.catalog import views

        if view.upper() not in views.VIEWS:
            raise NotFoundError(
                f"information_schema.{view} does not exist (views: {', '.join(views.VIEWS)})"
            )
        cache = {} if cache is None else cache

        def snapshot(rec: PipelineRecord) -> list[PartitionOffsets]:
            if rec.name not in cache:
                cache[rec.name] = self.offset_snapshot(rec)
            return cache[rec.name]

        return views.build(self.catalog, view, snapshot)

    def batches(self, name: str) -> list[dict[str, Any]]:
        return self.catalog.batches(self.catalog.pipeline(name).id)

    def errors(self, name: str) -> list[dict[str, Any]]:
        return self.catalog.errors(self.catalog.pipeline(name).id)

    # -- running ----------------------------------------------------------------------
    def run_batch(self, name: str) -> BatchResult:
        """Run one batch with the retry policy; on final failure the pipeline is ``Error``."""
        spec = self._runner(name).spec
        self.warm_up()
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
            if result.state != "NoData":
                log.info(
                    "pipeline %s batch %d: %s, %d rows in %.2fs",
                    name,
                    result.batch_id,
                    result.state,
                    result.rows,
                    result.seconds,
                )
            return result

    def run_batches(
        self,
        name: str,
        n: int = 1,
        *,
        until_idle: bool = False,
        progress: Callable[[BatchResult], None] | None = None,
    ) -> list[BatchResult]:
        """Run up to ``n`` batches now, in this thread; stop early at an idle batch if asked.
        ``progress`` is called after each batch."""
        out = []
        for _ in range(n):
            r = self.run_batch(name)
            out.append(r)
            if progress is not None:
                progress(r)
            if until_idle and r.state == "NoData":
                break
        return out

    def start(self, name: str | None = None, *, run: bool = True) -> None:
        """Set the pipeline (or all) ``Running``; with ``run``, make sure this engine's
        scheduler thread runs it (else a ``sparkpipes run`` process will)."""
        names = [name] if name else [p.name for p in self.catalog.pipelines()]
        for n in names:
            self.catalog.pipeline(n)
            self.catalog.update_pipeline(n, state=RUNNING, last_error=None)
        if run:
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

"""The Python API: an engine over one warehouse (tables, pipelines, catalog, SparkSession).

    from sparkpipes import Engine
    eng = Engine(warehouse="./warehouse")
    eng.create_table("events", "ts BIGINT, uuid STRING, count INT")
    eng.create_pipeline("events_p", source="kafka", location="127.0.0.1:9092/events",
                        table="events", format="json")
    eng.run_batches("events_p", 3)          # or eng.start("events_p") … eng.stop()
    eng.table("events").count()

``Engine`` is a facade; the work is done by services that share one :class:`Runtime`
(a method that only passes its call on is the service's own, ``util.facade.forward``):
``tables`` (DDL, INSERT, snapshots), ``pipelines`` (definitions), ``offsets`` (where
pipelines are, SET OFFSETS, TEST PIPELINE), ``scheduler`` (batches, retries, the
background thread) and ``information_schema``. Pipelines are ``Stopped`` when created;
``start`` makes them ``Running``; see ``engine.scheduling`` for the retry policy.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import Catalog
from sparkpipes.catalog.secrets import ENV, SecretBox
from sparkpipes.config import PipelineSpec
from sparkpipes.config.tables import ColumnSpec, TableKey, TableSpec, ddl_types
from sparkpipes.engine.batch.protocol import BatchResult
from sparkpipes.engine.extensions import Extension
from sparkpipes.engine.extensions import load as load_extensions
from sparkpipes.engine.housekeeping import Housekeeper
from sparkpipes.engine.information_schema import InformationSchema
from sparkpipes.engine.offsets import Offsets
from sparkpipes.engine.pipelines import Pipelines
from sparkpipes.engine.procedures import Procedures
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.scheduler.scheduling import Scheduler
from sparkpipes.engine.schema import to_arrow
from sparkpipes.engine.tables import Tables
from sparkpipes.engine.variables import coerce, resolve
from sparkpipes.errors import ConfigError
from sparkpipes.util.facade import forward
from sparkpipes.util.sparkfiles import remote

#: how often a running engine looks for new topics of ``topics.regex`` connectors
CONNECTOR_REFRESH_S = 10.0
log = logging.getLogger("sparkpipes.engine")


class Engine:
    """One warehouse: a directory of Delta tables plus a catalog (SQLite file by default).

    ``catalog_url`` (or $SPARKPIPES_CATALOG_URL) may name any SQLAlchemy database, e.g.
    ``postgresql+psycopg2://user@host/db``. Credentials are sealed in the catalog with
    $SPARKPIPES_SECRET_KEY, else with the key file the warehouse keeps (0600); the
    warehouse directories are created owner-only (0700). ``spark_master`` defaults to
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
        where = os.fspath(warehouse or os.environ.get("SPARKPIPES_WAREHOUSE", "./warehouse"))
        url = catalog_url or os.environ.get("SPARKPIPES_CATALOG_URL")
        if remote(where):
            if not url or not os.environ.get(ENV):
                raise ConfigError(
                    f"a warehouse on an object store ({where}) needs a shared catalog "
                    "(--catalog-url / $SPARKPIPES_CATALOG_URL, e.g. PostgreSQL) and "
                    f"${ENV}: the catalog and its key cannot live in the bucket"
                )
            self.warehouse = where.rstrip("/")
        else:
            self.warehouse = os.path.abspath(where)
            os.makedirs(os.path.join(self.warehouse, "tables"), mode=0o700, exist_ok=True)
        catalog = Catalog(
            url or f"sqlite:///{os.path.join(self.warehouse, 'catalog.db')}",
            None if os.environ.get(ENV) else SecretBox.for_warehouse(self.warehouse),
        )
        self.rt = Runtime(self.warehouse, catalog, spark_master, spark_conf)
        self._tables = Tables(self.rt)
        self.rt.frame = self._tables.frame
        self._pipelines = Pipelines(self.rt)
        self._procedures = Procedures(self.rt)
        self._offsets = Offsets(self.rt)
        self._scheduler = Scheduler(self.rt, self.warm_up)
        self._info = InformationSchema(self.rt, self._offsets)
        #: front ends' services (``engine.extensions``): Kafka Connect's connectors
        #: (``engine.connectors``), Pinot's schemas and realtime tables (``engine.pinot``)
        self.extensions: dict[str, Extension] = load_extensions(self)
        #: compaction, vacuum and history pruning beside the scheduler (``housekeeping``);
        #: the tables a front end maintains itself are left to it
        self.housekeeper = Housekeeper(
            self.rt, self.engine_id, own=self._maintain_own, own_names=self._own_tables
        )

    def __getattr__(self, name: str) -> Any:
        extensions = self.__dict__.get("extensions", {})
        if name in extensions:
            return extensions[name]
        raise AttributeError(f"'Engine' object has no attribute '{name}'")

    def _own_tables(self) -> list[str]:
        return [t for ext in self.extensions.values() for t in ext.maintained()]

    def _maintain_own(self, table: str) -> Mapping[str, Any]:
        for ext in self.extensions.values():
            if table in ext.maintained():
                return ext.maintain(table)[table]
        return {}

    @property
    def catalog(self) -> Catalog:
        return self.rt.catalog

    # -- session ----------------------------------------------------------------------
    @property
    def spark(self):
        return self.rt.spark

    @property
    def engine_id(self) -> str:
        """This engine among those sharing the catalog (``host:pid:random``): the holder
        named by pipeline leases, ``sparkpipes status`` and each commit's metadata."""
        return self._scheduler.leases.me

    def warm_up(self) -> None:
        """Prepare the session for batches (Python workers started and exercised, Spark's
        job path compiled; see ``engine.spark.warm_up``), once per SparkContext. The
        first batch does it if nobody did; a long-running engine does it at start."""
        from sparkpipes.engine.spark.session import warm_up

        warm_up(self.spark)

    def close(self) -> None:
        """Stop the scheduler (finishing the batch in flight) and release connections."""
        self._scheduler.close()
        self.rt.close()

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
        declared: Mapping[str, str] | None = None,
        not_null: Sequence[str] = (),
    ) -> None:
        """Create a Delta table from Spark DDL text, a StructType or an Arrow schema.

        ``keys`` (SingleStore-style PRIMARY / SHARD / SORT / KEY) are recorded in the
        catalog. ``computed`` maps columns of the schema to SQL expressions over the other
        columns, evaluated whenever rows are loaded (``col AS (expr) PERSISTED type``).
        ``declared`` keeps the types as the user wrote them (``JSON``) for DESCRIBE;
        ``not_null`` columns reject rows without a value (a record error at ingest).
        The front ends describe their tables as a :class:`TableSpec` instead
        (:meth:`create_table_spec`).
        """
        if if_not_exists and name in self.tables():
            return
        if isinstance(schema, str):
            self.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(schema)
        spark_types = ddl_types(ddl)
        computed, declared, nulls = computed or {}, declared or {}, set(not_null)
        unknown = [c for c in [*computed, *nulls] if c not in arrow.names]
        if unknown:
            raise ConfigError(f"table '{name}' has no column(s) {', '.join(unknown)}")
        columns = tuple(
            ColumnSpec(
                f.name,
                f.type if isinstance(schema, pa.Schema) else spark_types[f.name],
                declared.get(f.name),
                f.name in nulls,
                computed.get(f.name),
            )
            for f in arrow
        )
        spec = TableSpec(name, columns, tuple(TableKey.from_json(k) for k in keys))
        self.create_table_spec(spec)

    create_table_spec = forward("_tables", Tables.create)
    drop_table = forward("_tables", Tables.drop)
    add_column = forward("_tables", Tables.add_column)
    drop_column = forward("_tables", Tables.drop_column)
    modify_column = forward("_tables", Tables.modify_column)
    add_key = forward("_tables", Tables.add_key)
    drop_key = forward("_tables", Tables.drop_key)
    insert = forward("_tables", Tables.insert)
    change = forward("_tables", Tables.change)
    tables = forward("_tables", Tables.names)

    # -- table maintenance --------------------------------------------------------------
    def optimize_table(self, name: str, *, full: bool = False) -> dict[str, Any]:
        """``OPTIMIZE TABLE``: bin-pack the table's small files now; ``full`` also
        clusters it by its keys (as ``CREATE INDEX`` does). What was done."""
        rec = self.catalog.tables.get(name)
        metrics = self.housekeeper.optimize(rec, trigger="user", force=True) or {}
        out = {
            "files_removed": metrics.get("numFilesRemoved", 0),
            "files_added": metrics.get("numFilesAdded", 0),
            "clustered": 0,
        }
        if full:
            clustered = self._tables.cluster(rec, "OPTIMIZE FULL")
            out["clustered"] = (clustered or {}).get("numFilesAdded", 0)
        return out

    def vacuum_table(
        self, name: str, *, retain_hours: int | None = None, dry_run: bool = False
    ) -> list[str]:
        """``VACUUM``: delete the table's files no commit references, older than
        ``retain_hours`` (default ``table_vacuum_retain_hours``); the files."""
        rec = self.catalog.tables.get(name)
        return self.housekeeper.vacuum(
            rec, trigger="user", retain_hours=retain_hours, dry_run=dry_run
        )

    def table_status(self, name: str) -> dict[str, Any]:
        """``SHOW TABLE STATUS``: the table's version, files, size, checkpoint and last
        maintenance."""
        rec = self.catalog.tables.get(name)
        layout = self.housekeeper.layout(rec)
        history = self.catalog.history
        return {
            "name": rec.name,
            "version": layout.version,
            "rows": layout.rows,
            "bytes": layout.bytes,
            "files": layout.files,
            "small_files": layout.small_files,
            "checkpoint": layout.checkpoint,
            "last_compaction": history.last_done(rec.name, "COMPACT"),
            "last_vacuum": history.last_done(rec.name, "VACUUM"),
            "created_at": rec.created_at,
        }

    table = forward("_tables", Tables.frame)
    table_arrow = forward("_tables", Tables.arrow)
    sql = forward("_tables", Tables.sql)

    # -- variables --------------------------------------------------------------------
    def variables(self) -> dict[str, Any]:
        return resolve(self.catalog.variables.all())

    def set_variable(self, name: str, value: Any) -> Any:
        v = coerce(name, value)
        self.catalog.variables.set(name.lower(), str(v))
        self._scheduler.forget_values()  # the next batch here goes by it
        return v

    # -- pipelines --------------------------------------------------------------------
    pipeline_defaults = forward("_pipelines", Pipelines.defaults)

    def create_pipeline(self, name: str, *, replace: bool = False, **options: Any) -> PipelineSpec:
        """Define a pipeline (state ``Stopped``) from the Python API's options (README)."""
        return self._pipelines.create(self._pipelines.build(name, options), replace=replace)

    create_pipeline_spec = forward("_pipelines", Pipelines.create)
    prepare_pipeline = forward("_pipelines", Pipelines.prepare)
    inferred_table = forward("_pipelines", Pipelines.inferred_table)
    sample_source = forward("_pipelines", Pipelines.sample)
    create_procedure = forward("_procedures", Procedures.create)
    drop_procedure = forward("_procedures", Procedures.drop)
    procedures = forward("_procedures", Procedures.names)
    check_source = forward("_pipelines", Pipelines.check_source)
    spec = forward("_pipelines", Pipelines.spec)
    pipeline = forward("_pipelines", Pipelines.get)
    pipelines = forward("_pipelines", Pipelines.all)
    drop_pipeline = forward("_pipelines", Pipelines.drop)
    alter_pipeline = forward("_pipelines", Pipelines.alter)

    # -- offsets ----------------------------------------------------------------------
    offsets = forward("_offsets", Offsets.committed)
    set_offsets = forward("_offsets", Offsets.move)
    reset_offsets = forward("_offsets", Offsets.reset)
    drop_file = forward("_offsets", Offsets.forget)
    test_pipeline = forward("_offsets", Offsets.dry_run)
    offset_snapshot = forward("_offsets", Offsets.snapshot)
    information_schema = forward("_info", InformationSchema.view)

    def batches(self, name: str, last: int | None = None) -> list[dict[str, Any]]:
        """The pipeline's batch attempts, oldest first (only the newest ``last``)."""
        return self.catalog.batches.list(self.catalog.pipelines.get(name).id, last)

    def errors(self, name: str, last: int | None = None) -> list[dict[str, Any]]:
        """The pipeline's stored errors, oldest first (only the newest ``last``)."""
        return self.catalog.batches.errors(self.catalog.pipelines.get(name).id, last)

    # -- running ----------------------------------------------------------------------
    def run_batch(self, name: str) -> BatchResult:
        """Run one batch with the retry policy; on final failure the pipeline is ``Error``."""
        return self._scheduler.run_batch(name)

    run_batches = forward("_scheduler", Scheduler.run_batches)
    start = forward("_scheduler", Scheduler.start)
    stop = forward("_scheduler", Scheduler.stop)

    def run_forever(self, halt: threading.Event | None = None) -> None:
        """Run batches of every ``Running`` pipeline until ``halt`` (or ``close``) is set;
        meanwhile, every ``CONNECTOR_REFRESH_S``, ``topics.regex`` connectors get pipelines
        for topics that came to match, and the housekeeper maintains the tables
        (``engine.housekeeping``)."""
        done = threading.Event()

        def refresh() -> None:
            while not done.wait(CONNECTOR_REFRESH_S):
                for name, ext in self.extensions.items():
                    try:
                        ext.refresh()
                    except Exception as e:  # the next round tries again
                        log.warning("refreshing %s: %s", name, e)

        refresher = threading.Thread(target=refresh, name="sparkpipes-connectors", daemon=True)
        keeper = threading.Thread(
            target=self.housekeeper.run, args=(done,), name="sparkpipes-maintenance", daemon=True
        )
        refresher.start()
        keeper.start()
        try:
            self._scheduler.run_forever(halt)
        finally:
            done.set()
            refresher.join()
            keeper.join()

    def _runner(self, name: str):
        """The assembled pipeline's batch runner (tests step through the protocol)."""
        return self.rt.runner(name)

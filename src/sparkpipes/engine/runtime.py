"""What every engine service shares: the warehouse, the catalog, the SparkSession, and the
assembled pipelines with one lock each.

Locks: a pipeline's lock is held by whatever changes where it resumes (a batch, SET
OFFSETS, DROP) and by nothing else. Reads — information_schema views, ``status``, SHOW —
take no pipeline lock: they read the destination's commit log and the catalog, which are
consistent on their own, so they never wait for a running batch. The cache of assembled
pipelines has its own short lock, never held across I/O to a source or a Spark job.

Several threads use one Runtime at once (the scheduler's workers, one per pipeline, and
whoever calls the engine): a pipeline is assembled once even when two threads ask for it
together, and an assembly that a ``forget`` (its spec or table changed) overtook while it
read the catalog is not cached: the next caller assembles from the new definition.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from sparkpipes.catalog import Catalog
from sparkpipes.config import PipelineSpec
from sparkpipes.engine.batch.assembly import assemble
from sparkpipes.engine.batch.protocol import BatchRunner
from sparkpipes.engine.procedures import Procedures
from sparkpipes.engine.spark.session import build_session


class Runtime:
    def __init__(
        self,
        warehouse: str,
        catalog: Catalog,
        spark_master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
    ) -> None:
        self.warehouse = warehouse
        self.catalog = catalog
        #: a table's current snapshot as a DataFrame (the engine's ``Tables.frame``), for
        #: what a procedure's body reads
        self.frame: Callable[[str], Any] | None = None
        self._master = spark_master
        self._spark_conf = dict(spark_conf or {})
        self._spark = None
        self._spark_lock = threading.Lock()
        self._runners: dict[str, BatchRunner] = {}
        self._forgotten: dict[str, int] = {}  # pipeline -> how many times forgotten
        self._locks: dict[str, threading.RLock] = {}
        self._cache_lock = threading.Lock()

    @property
    def tables_dir(self) -> str:
        return os.path.join(self.warehouse, "tables")

    # -- Spark --------------------------------------------------------------------------
    @property
    def spark(self):
        """The SparkSession, created on first use."""
        if self._spark is None:
            with self._spark_lock:
                if self._spark is None:
                    self._spark = build_session(self._master, self._spark_conf)
        return self._spark

    @property
    def spark_started(self) -> bool:
        """Whether a SparkSession runs in this process (this engine's or another's); never
        starts one."""
        if self._spark is not None:
            return True
        context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
        return context is not None and context._active_spark_context is not None

    def session(self):
        """A callable for parts that need the session only sometimes (sinks)."""
        return self.spark

    # -- pipelines ----------------------------------------------------------------------
    def lock(self, name: str) -> threading.RLock:
        """The lock of pipeline ``name``: held while its resume point may change."""
        with self._cache_lock:
            return self._locks.setdefault(name, threading.RLock())

    def runner(self, name: str) -> BatchRunner:
        """The assembled pipeline ``name`` (assembled on first use after a change)."""
        while True:
            with self._cache_lock:
                runner = self._runners.get(name)
                generation = self._forgotten.get(name, 0)
            if runner is not None:
                return runner
            built = self._assemble(name)
            with self._cache_lock:
                current = self._forgotten.get(name, 0) == generation
                if current:
                    runner = self._runners.setdefault(name, built)
            if current and runner is built:
                return runner
            built.close()  # another thread's is cached, or this one was built stale
            if current:
                return runner

    def assembled(self, name: str) -> BatchRunner | None:
        """The assembled pipeline ``name`` if it is at hand; never assembles."""
        with self._cache_lock:
            return self._runners.get(name)

    def _assemble(self, name: str) -> BatchRunner:
        rec = self.catalog.pipelines.get(name)
        spec = PipelineSpec.from_json(rec.definition, self.catalog.pipelines.credentials(name))

        procs = Procedures(self)
        table = procs.target(spec)
        procedure = None
        if spec.sink.kind == "procedure":
            procedure = procs.body(procs.get(spec.table))
        pipeline = assemble(
            spec,
            rec.id,
            table,
            self.session,
            procedure=procedure,
            reserve_ids=self.catalog.tables.reserve_ids,
        )
        return BatchRunner(pipeline, self.catalog, self.session)

    def forget(self, name: str) -> None:
        """Drop the assembled pipeline: its spec or table changed."""
        with self._cache_lock:
            runner = self._runners.pop(name, None)
            self._forgotten[name] = self._forgotten.get(name, 0) + 1
        if runner is not None:
            runner.close()

    def forget_table(self, table: str) -> None:
        for p in self.catalog.pipelines.all():
            if p.table == table:
                self.forget(p.name)

    def close(self) -> None:
        with self._cache_lock:
            runners, self._runners = list(self._runners.values()), {}
        for r in runners:
            r.close()
        self.catalog.close()

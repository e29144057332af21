"""Delta Lake destination (delta-rs): executors write Parquet, the driver commits once.

Parts, along the sink SPI (``sparkpipes.sinks.base``):

* :class:`~sparkpipes.sinks.parquet.ParquetWriter` — executor side: writes one Parquet
  file under a unique name below a root directory and returns its ``AddFile``. A file in
  the table directory is invisible until a commit references it; a file whose batch never
  commits is never referenced (``VACUUM`` removes it once older than its retention; so a
  commit never references data files older than ``MAX_UNCOMMITTED_AGE_S``: that attempt
  is reloaded).
* :class:`DeltaSink` — the table, with the write strategy of one pipeline:

  - **append** without ingest-time SQL: tasks write the table's files directly; the
    commit is **one** Delta commit holding every add-action, the app transaction
    ``(app_id, batch_id)`` and the end offsets in the commit info.
  - **append** with ingest-time SQL (``SET``/``WHERE``/computed columns): tasks stage
    what they decoded in a scratch directory; :meth:`DeltaSink.finish` runs one Spark
    job that applies the SQL and writes the table's files from the executors.
  - **upsert** (``REPLACE``/``IGNORE INTO TABLE``): tasks stage in scratch; the commit
    runs one Spark job (SQL, then one row per key: the last for replace, the first for
    ignore, in partition and offset order) whose output streams, one Spark partition at
    a time, into a delta-rs MERGE with the same app transaction. The batch is never
    collected into driver memory.

  :meth:`DeltaSink.committed` reads back the last committed batch and its offsets: the
  table, not the catalog, is the source of truth for where a pipeline resumes.

Concurrent writers (several pipelines loading one table, an ``INSERT`` beside them): a
commit that loses the race to another writer's is rebased by delta-rs itself when it can
be (an append beside an append, up to ``DELTA_RS_RETRIES`` times); one it cannot rebase
(retries exhausted; a MERGE whose target another writer added to, which must be rerun; the
same app transaction committed by another writer) raises ``CommitFailedError``. The sink
then starts the commit again from a fresh snapshot, *with the exactly-once check*: the
table's transaction version for the pipeline says whether the batch is there already (it
then is a replay). At most ``COMMIT_ATTEMPTS`` times (``commits.retrying``); then
the conflict is a transient :class:`SinkError`, for the batch's own retry policy.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.errors import ConfigError, SinkError
from sparkpipes.sinks.base import BatchCommit, Committed, Sink, SinkContext, Staged
from sparkpipes.sinks.delta.checkpoints import CheckpointPolicy
from sparkpipes.sinks.delta.commits import CommitConflict, StaleChanges, is_conflict, retrying
from sparkpipes.sinks.delta.log import checkpoint_interval, exists, last_checkpoint, log_dir
from sparkpipes.sinks.delta.merge import merge, merged_rows
from sparkpipes.sinks.delta.upsert import Upsert
from sparkpipes.sinks.frames import write_frame
from sparkpipes.sinks.parquet import AddFile, ParquetWriter, local_path, write_error
from sparkpipes.util.arrow import to_spark_schema
from sparkpipes.util.sparkfiles import remote

log = logging.getLogger("sparkpipes.sinks")

#: how many times delta-rs rebases a commit that lost the race, by itself
DELTA_RS_RETRIES = 15
#: a batch never commits data files older than this: a vacuum (retention at least twice
#: this, ``engine.maintenance``) may delete files that no commit references yet; such an
#: attempt fails (transient) and the batch is loaded again into new files
MAX_UNCOMMITTED_AGE_S = 1800

META_PIPELINE = "sparkpipes.pipeline"
META_BATCH = "sparkpipes.batch"
META_OFFSETS = "sparkpipes.offsets"
SEQ = "__sp_seq"

#: the engine's ingest-time SQL: DataFrame of staged rows -> DataFrame of table rows,
#: carrying the named extra columns through
Refine = Callable[[Any, Sequence[str]], Any]


@dataclass(frozen=True)
class Append:
    """Rows are added to the table."""


WriteStrategy = Append | Upsert


class TableChanged(SinkError):
    """The table's columns are no longer those the writer was made for: its definition
    changed (``ALTER TABLE`` from another process) after the pipeline was assembled.
    Transient: a retry assembles the pipeline again, from the new definition."""


def _columns(schema) -> list[tuple[str, Any]]:
    """A Delta schema's columns as (name, type) (nullability and metadata left out)."""
    return [(f["name"], f["type"]) for f in json.loads(schema.to_json())["fields"]]


class DeltaSink(Sink):
    """One Delta table, with one pipeline's write strategy (append by default).

    ``scratch`` is the pipeline's own staging directory, ``staged_schema`` what its tasks
    decode, ``refine`` the ingest-time SQL (from the engine) and ``spark`` a callable
    giving the session that runs it; all four are needed only by a strategy that stages
    (see the module docstring). Driver side; its writer is what travels to executors.
    """

    kind = "delta"

    def __init__(
        self,
        uri: str,
        schema: pa.Schema,
        name: str | None = None,
        *,
        strategy: WriteStrategy = Append(),
        staged_schema: pa.Schema | None = None,
        refine: Refine | None = None,
        scratch: str | None = None,
        spark: Callable[[], Any] | None = None,
        read_version: int | None = None,
        report: tuple[str, ...] = (),
    ) -> None:
        self.uri = uri
        #: the staged rows' (partition, offset) columns, when the duplicates an ``ignore``
        #: upsert leaves out are reported (SKIP DUPLICATE KEY ERRORS)
        self.report = report
        self._rejected: list[dict[str, Any]] = []
        #: the version the staged changes were computed from (mode ``changes``), or one
        #: before it: the commit is made on it or not at all (:class:`StaleChanges`)
        self.read_version = read_version
        self.schema = schema
        self.name = name or os.path.basename(uri.rstrip("/"))
        self.strategy = strategy
        self.refine = refine
        self.spark = spark
        self.stages = isinstance(strategy, Upsert) or refine is not None
        if self.stages and (scratch is None or staged_schema is None or spark is None):
            raise SinkError(f"Delta sink of '{self.name}' needs a scratch area and Spark")
        if self.stages and remote(uri):
            raise ConfigError(
                f"table '{self.name}' is on an object store ({uri}): upserts and ingest-time "
                "SQL (SET, WHERE) into it are not supported yet; load appended rows, or keep "
                "the table in a local or shared-file warehouse"
            )
        self.scratch = scratch
        self.staged_schema = staged_schema
        self._delta_columns: list[tuple[str, Any]] | None = None
        self._seen = None  # the table as this sink last read or committed it
        self._seen_lock = threading.Lock()
        self._checkpoints = CheckpointPolicy()

    @classmethod
    def for_pipeline(cls, ctx: SinkContext) -> DeltaSink:
        strategy: WriteStrategy = (
            Append()
            if ctx.write == "append"
            else Upsert.of(
                ctx.primary_key,
                ctx.write,
                ctx.sink_config or {},
                ctx.schema.names,
                ctx.update,
                types={f.name: str(f.type) for f in ctx.schema},
            )
        )
        return cls(
            ctx.location,
            ctx.schema,
            ctx.table,
            strategy=strategy,
            staged_schema=ctx.staged_schema,
            refine=ctx.refine,
            scratch=ctx.scratch,
            spark=ctx.spark,
            report=tuple(ctx.skipped_duplicates or ()),
        )

    # -- table lifecycle (driver) ---------------------------------------------------------
    def create(self, properties: dict[str, str] | None = None) -> None:
        """Create the table; ``properties`` are Delta table properties
        (``delta.checkpointInterval`` …)."""
        from deltalake import DeltaTable

        if not remote(self.uri):
            os.makedirs(local_path(self.uri), exist_ok=True)
        DeltaTable.create(
            self.uri,
            schema=self.schema,
            name=self.name,
            mode="error",
            configuration=properties or None,
        )

    def exists(self) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(self.uri)

    def _table(self):
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.uri)
        except TableNotFoundError:
            raise SinkError(f"Delta table '{self.name}' is missing at {self.uri}") from None

    def file_uris(self) -> list[str]:
        return self._table().file_uris()

    def version(self) -> int:
        return self._table().version()

    # -- executor side --------------------------------------------------------------------
    def writer(self) -> ParquetWriter:
        if self.stages:
            return ParquetWriter(self.scratch, self.staged_schema, self.name)
        return self.table_writer()

    def table_writer(self) -> ParquetWriter:
        """Writes data files of the table itself (not yet committed)."""
        return ParquetWriter(self.uri, self.schema, self.name)

    def write_file(self, table: pa.Table, name: str) -> AddFile:
        """Stage one data file of the table (tests and tools; tasks use :meth:`writer`)."""
        return self.table_writer().write(table, name)

    # -- driver side ----------------------------------------------------------------------
    def finish(self, staged: Sequence[Staged], batch_id: int) -> list[Staged]:
        """Append with ingest-time SQL: one Spark job writes the table's files from the
        staged ones. Upserts keep their staged files for the commit's MERGE."""
        if not self.stages or isinstance(self.strategy, Upsert) or not staged:
            return list(staged)
        df = self._staged_frame(staged)
        return write_frame(
            self.refine(df, ()), self.table_writer(), f"part-b{batch_id:08d}-t", self.name
        )

    def commit(self, staged: Sequence[Staged], batch: BatchCommit) -> bool:
        """Publish a batch atomically. Returns False if it was already committed (replay)."""
        from deltalake import CommitProperties, Transaction

        self._rejected = []

        props = CommitProperties(
            app_transactions=[Transaction(batch.app_id, batch.batch_id, int(time.time() * 1000))],
            custom_metadata={
                META_PIPELINE: batch.app_id,
                META_BATCH: str(batch.batch_id),
                META_OFFSETS: json.dumps(dict(batch.offsets), sort_keys=True),
                **dict(batch.extra),
            },
            max_commit_retries=DELTA_RS_RETRIES,
        )

        if not isinstance(self.strategy, Upsert):
            self._check_age(staged)

        def once(dt) -> bool:
            done = dt.transaction_version(batch.app_id)
            if done is not None and done >= batch.batch_id:
                return False  # committed before (a crash, a retry, another writer)
            if staged:
                self._check_columns(dt)
            if isinstance(self.strategy, Upsert) and staged:
                self._merge(dt, staged, self.strategy, props, batch.report)
            else:
                if self.reports_in_commit and batch.report is not None:
                    batch.report([])  # the batch's own errors: nothing merged to skip
                self._add(dt, staged, props, "commit to")
            return True

        if self.read_version is not None:
            if (self._table().transaction_version(batch.app_id) or 0) >= batch.batch_id:
                return False
            return self._on_read_version(once)
        return self._retrying_conflicts(once)

    def committed(self, app_id: str, hint: Committed | None = None) -> Committed | None:
        """The last batch ``app_id`` committed to this table, with its end offsets.

        ``hint`` (the catalog's record) is trusted only if it names the same batch the
        table's app transaction does; otherwise the commit log is searched newest first.

        Asked before every batch, and by an idle pipeline every turn: the table this
        sink read or committed last is kept while no commit came after it (two file
        statuses tell) instead of being loaded again.
        """
        with self._seen_lock:
            dt = self._seen = self._latest(self._seen)
            version = dt.transaction_version(app_id)
            if version is None:
                return None
            if hint is not None and hint.batch_id == version:
                return hint
            for info in dt.history():
                if info.get(META_PIPELINE) == app_id and info.get(META_BATCH) == str(version):
                    return Committed(version, json.loads(info[META_OFFSETS]))
        raise SinkError(
            f"Delta table '{self.name}' records batch {version} of {app_id} but its commit "
            "info is gone (log cleaned up?)"
        )

    def _snapshot(self):
        """The table a commit starts from: as fresh as a load (:meth:`_latest`)."""
        with self._seen_lock:
            self._seen = self._latest(self._seen)
            return self._seen

    def _keep(self, dt, started: float) -> None:
        """Keep ``dt``, which this sink just committed on (at ``started``, a
        ``perf_counter``), as its snapshot: a table object does not advance with its own
        commit, so it reads that one commit. A steady pipeline then loads no table per
        batch (each load costs CPU, and delta-rs's I/O threads and allocator grow with
        loads under CPU contention). If reading it fails, the next one loads the table;
        the commit stands. Then a checkpoint, when :mod:`sparkpipes.sinks.delta.checkpoints`
        says one is due."""
        with self._seen_lock:
            try:
                dt.update_incremental()
                self._seen = dt
            except Exception as e:  # delta-rs raises its own; a load next time
                log.debug("Delta table '%s': %s", self.name, e)
                self._seen = None
                return
            self._checkpoint(dt, time.perf_counter() - started)

    def _checkpoint(self, dt, seconds: float) -> None:
        """Write a checkpoint of ``dt`` if its commit (``seconds``, with the refresh) makes
        one due and no other writer wrote one meanwhile. A checkpoint that cannot be
        written is logged and tried again later: the table is whole without it."""
        policy = self._checkpoints
        if policy.checkpoint is None:
            known = last_checkpoint(self.uri)
            policy.seen(-1 if known is None else known)
        version = dt.version()
        if not policy.due(version, seconds):
            return
        newest = last_checkpoint(self.uri)
        if newest is not None and newest > policy.checkpoint and newest < version:
            policy.seen(newest)
            return
        policy.interval = checkpoint_interval(dt)
        started = time.perf_counter()
        try:
            dt.create_checkpoint()
            # a table object never drops the commits it read since it was loaded, not even
            # for its own checkpoint: only a load starts from the checkpoint
            self._seen = self._table()
        except Exception as e:  # delta-rs raises its own; the commit stands
            log.warning("checkpoint of Delta table '%s' at version %d: %s", self.name, version, e)
            self._seen = None
            policy.written(version, None)
            return
        policy.written(version, time.perf_counter() - started)

    def _latest(self, dt):
        """``dt`` while the log has no version after it and still has its own (two file
        statuses), else the table loaded afresh: another writer's commit (or a trimmed
        log) makes the next read a load. Any failure to look (a store pyarrow cannot
        reach this way) is a reason to load."""
        if dt is not None:
            try:
                filesystem, logs = log_dir(self.uri)
                v = dt.version()
                if exists(filesystem, f"{logs}/{v:020d}.json") and not exists(
                    filesystem, f"{logs}/{v + 1:020d}.json"
                ):
                    return dt
            except Exception as e:  # a store that cannot be listed this way: load it
                log.debug("Delta table '%s': %s", self.name, e)
        return self._table()

    def discard(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(local_path(self.scratch), ignore_errors=True)

    def abort(self, staged: Sequence[Staged]) -> None:
        """Delete the data files of a failed attempt: the table's own (appends) and the
        staged ones (scratch). Names are unique per attempt, so a file is looked for under
        each root without any risk of hitting another one."""
        files = [f for f in staged if isinstance(f, AddFile)]
        self.table_writer().remove(files)
        if self.stages:
            self.writer().remove(files)

    def commit_files(
        self,
        files: Sequence[AddFile],
        *,
        operation: str = "WRITE",
        check: Callable[[Any], None] | None = None,
    ) -> None:
        """Append files in one commit, without an app transaction (``INSERT``); ``check``
        is called with the table version the commit applies to (again after a conflict),
        and may refuse it by raising."""
        from deltalake import CommitProperties

        props = CommitProperties(
            custom_metadata={"sparkpipes.op": operation}, max_commit_retries=DELTA_RS_RETRIES
        )

        self._check_age(files)

        def once(dt) -> None:
            self._check_columns(dt)
            if check is not None:
                check(dt)
            self._add(dt, files, props, "commit to")

        self._retrying_conflicts(once)

    def apply(self, staged: Sequence[Staged]) -> None:
        """The staged rows met with the table by this sink's upsert, in one commit of a
        statement's own (no pipeline's app transaction): a DELETE's or UPDATE's changes."""
        from deltalake import CommitProperties

        props = CommitProperties(max_commit_retries=DELTA_RS_RETRIES)
        merge = lambda dt: self._merge(dt, staged, self.strategy, props)  # noqa: E731
        if self.read_version is not None:
            self._on_read_version(merge)
        else:
            self._retrying_conflicts(merge)

    def replace_all(
        self, files: Sequence[AddFile], *, operation: str, snapshot: Any = None
    ) -> None:
        """Make ``files`` the table's only data, under this sink's schema, in one commit
        (``ALTER TABLE``). The log, and with it every app transaction, stays.

        With ``snapshot`` (the ``DeltaTable`` that ``files`` were made from) the commit is
        made on top of it or not at all: if anything committed since, it raises
        :class:`CommitConflict` and nothing changes (delta-rs would otherwise rebase the
        overwrite, keeping what was committed meanwhile in its old shape)."""
        from deltalake import CommitProperties
        from deltalake.transaction import AddAction

        props = CommitProperties(
            custom_metadata={"sparkpipes.op": operation},
            max_commit_retries=0 if snapshot is not None else None,
        )
        actions = [AddAction(f.path, f.size, {}, f.modification_time, True, f.stats) for f in files]
        dt = snapshot if snapshot is not None else self._table()
        try:
            dt.create_write_transaction(actions, "overwrite", self.schema, commit_properties=props)
        except Exception as e:  # delta-rs raises its own and Rust panics; keep the message
            what = f"rewriting Delta table '{self.name}' failed"
            err = write_error(what, self._log_dir(), e)
            if is_conflict(e):
                raise CommitConflict(
                    f"Delta table '{self.name}' changed (version {dt.version()} was read) "
                    "while being rewritten"
                ) from None
            raise err from None

    # -- internals ------------------------------------------------------------------------
    def _check_columns(self, dt) -> None:
        """Files are added only under the table's current columns (:class:`TableChanged`)."""
        from deltalake import Schema

        if self._delta_columns is None:
            self._delta_columns = _columns(Schema.from_arrow(self.schema))
        now = _columns(dt.schema())
        if now != self._delta_columns:
            raise TableChanged(
                f"Delta table '{self.name}' changed since its writer was set up (its columns "
                f"are now {', '.join(n for n, _ in now)}); nothing was committed"
            )

    def _check_age(self, files: Sequence[Staged]) -> None:
        """Data files of the table older than ``MAX_UNCOMMITTED_AGE_S`` are not committed
        (a vacuum may have deleted them meanwhile)."""
        times = [f.modification_time for f in files if isinstance(f, AddFile)]
        if not times:
            return
        age = time.time() - min(times) / 1000
        if age > MAX_UNCOMMITTED_AGE_S:
            raise SinkError(
                f"the data files of this attempt to load table '{self.name}' were written "
                f"{age / 60:.0f} minutes ago, longer than a commit may wait "
                f"({MAX_UNCOMMITTED_AGE_S // 60} minutes: vacuum may remove them); "
                "the batch is loaded again"
            )

    def _retrying_conflicts(self, commit: Callable[[Any], Any]) -> Any:
        """``commit(snapshot)``, started again from a freshly loaded snapshot while it
        raises a :class:`CommitConflict` (``commits.retrying``). A snapshot older than the
        table cannot commit a batch twice: delta-rs's conflict check rejects a commit whose
        app transaction another writer set meanwhile."""
        return retrying(
            f"committing to Delta table '{self.name}'",
            lambda attempt: commit(self._snapshot() if attempt == 1 else self._table()),
            gave_up=lambda cause, n: (
                f"{cause} (conflicting commits of other writers, {n} attempts)"
            ),
            wrap_failures=False,
        )

    def _on_read_version(self, commit: Callable[[Any], Any]) -> Any:
        """``commit`` on the table as of :attr:`read_version`. delta-rs's conflict check
        then refuses it if another writer committed data since (it does so for a MERGE
        after any concurrent add), and the conflict is not tried again on a fresher
        snapshot, as other commits are: it is a :class:`StaleChanges`."""
        from deltalake import DeltaTable

        try:
            return commit(DeltaTable(self.uri, version=self.read_version))
        except Exception as e:
            if not is_conflict(e):
                raise
            raise StaleChanges(
                f"Delta table '{self.name}' changed while its changes were computed (from "
                f"version {self.read_version}): they are computed again"
            ) from None

    def _add(self, dt, files: Sequence[Staged], props, what: str) -> None:
        """Append ``files`` in one commit on ``dt``; its checkpoint is this sink's choice
        (:meth:`_checkpoint`), not delta-rs's every ``delta.checkpointInterval``."""
        from deltalake import PostCommitHookProperties
        from deltalake.transaction import AddAction

        actions = [AddAction(f.path, f.size, {}, f.modification_time, True, f.stats) for f in files]
        started = time.perf_counter()
        try:
            dt.create_write_transaction(
                actions,
                "append",
                self.schema,
                commit_properties=props,
                post_commithook_properties=PostCommitHookProperties(create_checkpoint=False),
            )
        except Exception as e:  # delta-rs raises its own and Rust panics; keep the message
            failed = f"{what} Delta table '{self.name}' failed"
            err = write_error(failed, self._log_dir(), e)
            raise (CommitConflict(err.message) if is_conflict(e) else err) from None
        self._keep(dt, started)

    def _log_dir(self) -> str:
        return f"{local_path(self.uri).rstrip('/')}/_delta_log"

    def _staged_frame(self, staged: Sequence[Staged]):
        """The staged files as one DataFrame, with ``__sp_seq`` ordering its rows by file
        (the order the tasks returned them: partition order) and row within the file."""
        from pyspark.sql import functions as F

        root = local_path(self.scratch)
        paths = [os.path.join(root, f.path) for f in staged]
        df = self.spark().read.schema(to_spark_schema(self.staged_schema)).parquet(*paths)
        order = F.create_map(
            *[x for i, f in enumerate(staged) for x in (F.lit(os.path.basename(f.path)), F.lit(i))]
        )
        seq = order[F.col("_metadata.file_name")].cast("long") * F.lit(1 << 40) + F.col(
            "_metadata.row_index"
        )
        return df.withColumn(SEQ, seq)

    def _merge(self, dt, staged: Sequence[Staged], upsert: Upsert, props, listing=None) -> None:
        """One MERGE by key from a stream of the refined staged rows (``merge``); the
        duplicates it leaves out kept for :meth:`rejected` when the sink reports them,
        and handed to ``listing`` (``BatchCommit.report``) before the MERGE commits."""
        df = self._staged_frame(staged)
        if self.refine is not None:
            extra = tuple(c for c in self.report if c not in self.schema.names)
            df = self.refine(df, (SEQ, *extra))
        rows, schema, self._rejected = merged_rows(
            dt, df, upsert, self.schema, self.staged_schema, self.name, SEQ, self.report
        )
        if listing is not None and self.reports_in_commit:
            listing(self._rejected)
        merge(dt, rows, schema, upsert, props, self.schema.names, self.name, self.uri)

    @property
    def reports_in_commit(self) -> bool:
        """SKIP DUPLICATE KEY ERRORS: the MERGE's skipped rows (and the batch's errors)
        are reported once the app transaction says the batch is not there."""
        return bool(self.report)

    def rejected(self) -> list[dict[str, Any]]:
        """The rows the last commit's MERGE left out as duplicate keys, where the pipeline
        reports them (SKIP DUPLICATE KEY ERRORS); each reported once."""
        out, self._rejected = self._rejected, []
        return out

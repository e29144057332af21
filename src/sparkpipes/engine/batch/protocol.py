"""One batch of one pipeline, run by the commit protocol, whatever the sink.

1. **Plan.** The start offsets of batch *B* are the end offsets committed by batch *B-1*,
   read from the destination (``Sink.committed``; the catalog's copy is used only when
   the destination confirms it). Partitions with no committed offset start where the
   source's start policy says (``earliest``/``latest``) on the pipeline's first batch and
   at ``earliest`` when they appear later. At most ``max_partitions`` partitions are
   chosen, rotating by batch id; a partition known to be drained is skipped until its
   source reports a change.
2. **Extract, decode, stage.** One Spark task per chosen partition (``engine.task``):
   consume from its start offset to the batch limit or the partition's end (the source's
   end report or an empty fetch, never short of the planned watermark), decode to Arrow,
   stage through the sink's writer, return a ``TaskResult`` with the staged handles,
   counts, skipped records and the end offset reached. Then ``Sink.finish`` does the
   sink's driver-side work (ingest-time SQL). Records that did not decode are stored in
   the errors store (keyed by pipeline and batch, so a retried batch replaces, never
   duplicates, them) before the commit, or fail the batch.
3. **Commit.** ``Sink.commit``: every staged handle + the end offsets of *all*
   partitions, atomically, under the app id ``sparkpipes:<pipeline id>`` and batch *B*.
   If the destination already holds batch ≥ *B* of the pipeline, the batch was committed
   before a crash (or by another writer) and is skipped. Run by the scheduler, the commit
   is first fenced by the pipeline's lease (``engine.leasing``): an engine that lost it
   commits nothing, and the commit's metadata names the engine and lease token. Staged
   data of failed attempts is never visible; when an attempt fails (a task, the
   driver-side work, or a commit the destination then shows did not happen) its staged
   data is removed (``Sink.abort``),
   so that retries do not fill the destination's storage with files nothing references
   (a crash still leaves them behind, and so may a failed upsert: delta-rs writes the
   MERGE's files itself).
4. **Record.** The batch (rows, bytes, time, per-partition offsets) goes to the catalog.
   A crash before this step loses only the history row; the next plan reads the offsets
   from the destination and the catalog is reconciled from it.

A crash between any two steps therefore either redoes the batch from the same start
offsets (nothing visible happened) or finds it committed and moves on: every record is
in the table exactly once.
"""

from __future__ import annotations

import datetime as dt
import logging
import pickle
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from sparkpipes.catalog import BatchState, Catalog
from sparkpipes.engine.batch import planning
from sparkpipes.engine.batch.assembly import Assembled
from sparkpipes.engine.batch.contract import ErrorRecord, Piece, TaskResult, TaskSpec
from sparkpipes.engine.batch.planning import Pending
from sparkpipes.engine.batch.task import run_task
from sparkpipes.engine.faults import crash_point
from sparkpipes.errors import CatalogError, EngineError, SparkpipesError
from sparkpipes.sinks import BatchCommit, Committed, Staged
from sparkpipes.sources import MetadataProvider
from sparkpipes.sources.base import start_at

log = logging.getLogger("sparkpipes.batch")

#: a drained partition whose watermark stays put is read again after this long anyway (a
#: recreated topic may repeat a watermark; new records always move it); meanwhile an idle
#: turn runs no Spark job
IDLE_RECHECK_S = 60.0

#: checked right before a commit: raises to stop it, or gives metadata for the commit
Fence = Callable[[], dict[str, str]]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


@dataclass
class BatchResult:
    pipeline: str
    batch_id: int
    state: BatchState
    rows: int = 0
    bytes: int = 0
    errors: int = 0
    seconds: float = 0.0
    partitions: list[dict[str, Any]] = field(default_factory=list)
    offsets: dict[str, Any] = field(default_factory=dict)
    caught_up: bool = False  # all there was at the plan is loaded (planning.caught_up)


def app_id(pipeline_id: str) -> str:
    """The pipeline's Delta app transaction id: the table's record of its last batch."""
    return f"sparkpipes:{pipeline_id}"


@dataclass(frozen=True)
class Plan:
    batch_id: int
    committed: dict[str, Any]
    starts: dict[str, Any]  # the partitions this batch reads
    offsets: dict[str, Any]  # every known partition's offset before the batch
    watermarks: dict[str, Any] = field(default_factory=dict)  # of the partitions it reads
    tasks: tuple[tuple[Piece, ...], ...] = ()  # what each Spark task reads
    complete: bool = False  # nothing to read was left out (a window, an object budget)

    @property
    def width(self) -> int:
        """The Spark tasks (cluster partitions) the batch runs: what the scheduler admits."""
        return len(self.tasks)


@dataclass(frozen=True)
class Written:
    """What step 2 produced: the staged data and offsets one commit will publish."""

    plan: Plan
    staged: list[Staged]
    errors: list[ErrorRecord]
    ends: dict[str, Any]
    parts: list[dict[str, Any]]
    rows: int
    nbytes: int
    t0: float
    part_rows: dict[str, int] = field(default_factory=dict)
    caught_up: bool = False


class BatchRunner:
    """Runs batches of one assembled pipeline. Keeps only a drained-partition hint in
    memory; everything else is read from the destination and the source each batch."""

    def __init__(
        self,
        pipeline: Assembled,
        catalog: Catalog,
        spark: Callable[[], Any],
    ) -> None:
        self.pipeline = pipeline
        self.spec = pipeline.spec
        self.pipeline_id = pipeline.pipeline_id
        self.app_id = app_id(pipeline.pipeline_id)
        self.source = pipeline.source
        self.sink = pipeline.sink
        self.catalog = catalog
        self._spark = spark
        self._meta: MetadataProvider | None = None
        self._idle: dict[str, tuple[Any, float]] = {}
        #: what the destination held at the last plan or commit of this runner, and when
        self._known: tuple[Committed, float] | None = None

    @property
    def meta(self) -> MetadataProvider:
        if self._meta is None:
            self._meta = self.source.metadata()
        return self._meta

    def read_at(self) -> float | None:
        """When the source's shared reading this runner last used was asked for."""
        return None if self._meta is None else self._meta.read_at

    def close(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None
        self.sink.close()

    # -- step 1 -----------------------------------------------------------------------
    def committed(self) -> Committed | None:
        hint = self.catalog.batches.last_succeeded(self.pipeline_id)
        committed = self.sink.committed(self.app_id, Committed(*hint) if hint else None)
        self._know(committed)
        return committed

    def _resume_point(self) -> Committed | None:
        """What this runner last saw committed (its own last commit, while nothing
        forgot it), else read from the destination. A stale answer cannot load twice:
        the commit finds the batch taken and the attempt is replayed."""
        known = self._known
        if known is None or time.monotonic() - known[1] > IDLE_RECHECK_S:
            return self.committed()  # now and then from the destination (a restore)
        return known[0]

    def _know(self, committed: Committed | None) -> None:
        self._known = (committed, time.monotonic()) if committed is not None else None

    def nothing_new(self, since: float) -> bool:
        """Whether the source says, cheaply, that nothing was added past what this runner
        last saw committed (the scheduler skips the turn). Only this engine commits while
        it holds the lease, and the scheduler forgets what was seen whenever that may
        have changed (:meth:`forget_idle`); still, a real plan is made every
        ``IDLE_RECHECK_S`` whatever the source says."""
        known = self._known
        if known is None or time.monotonic() - known[1] > IDLE_RECHECK_S:
            return False
        return self.meta.unchanged(known[0].offsets, since)

    def plan(self, max_partitions: int | None = None, since: float | None = None) -> Plan:
        """Step 1. ``max_partitions`` (the engine's share of the cluster) caps the
        batch's tasks: a stream's partitions then share tasks (all are read), objects are
        packed into that many tasks within the pipeline's own ``max_partitions``; an
        object source with neither gets Spark's default parallelism. ``since``: the
        source's shared answers may be from a reading asked for since then
        (``MetadataProvider.since``; None: now)."""
        self.meta.since = time.monotonic() if since is None else since  # one reading
        try:
            return self._plan(max_partitions)
        finally:
            self.meta.rest()

    def _plan(self, max_partitions: int | None) -> Plan:
        committed = self._resume_point()
        batch_id = committed.batch_id + 1 if committed else 1
        known = dict(committed.offsets) if committed else {}
        partitions = self.meta.partitions()
        offsets = dict(known)
        for p in partitions:
            if p not in offsets:
                policy = self.spec.source.start if committed is None else "earliest"
                offsets[p] = start_at(self.source, self.meta, p, policy)
        marks = {p: self.meta.watermark(p) for p in partitions}
        limits = [n for n in (self.spec.batch.max_partitions, max_partitions) if n]
        width = min(limits) if limits else None
        if self.source.lists_files:
            items = [
                Pending(p, offsets[p], marks[p], self.source.pending(offsets[p], marks[p]))
                for p in partitions
                if not self.source.reached(offsets[p], marks[p])
                and not self._still_idle(p, marks[p])
            ]
            width = width or self._parallelism()
            packing = getattr(self.source, "packing", True)
            tasks = planning.object_tasks(self.source, items, width, packing=packing)
        else:
            items = [
                Pending(p, offsets[p], marks[p], None)
                for p in self.source.ready(partitions, offsets)
                if not self._still_idle(p, marks[p])
            ]
            groups = self.source.assignment(partitions)
            tasks = planning.stream_tasks(
                items, self.spec.batch.max_partitions, batch_id, groups, slots=max_partitions
            )
        chosen = list(dict.fromkeys(piece.partition for t in tasks for piece in t))
        return Plan(
            batch_id,
            known,
            {p: offsets[p] for p in chosen},
            offsets,
            {p: marks[p] for p in chosen},
            tuple(tuple(t) for t in tasks),
            complete=len(chosen) == len(items),
        )

    def _parallelism(self) -> int:
        try:
            return max(1, int(self._spark().sparkContext.defaultParallelism))
        except Exception:  # no cluster to ask (a dry plan): one task per object batch
            return 2

    def _current(self, plan: Plan) -> bool:
        committed = self._resume_point()
        return (committed.batch_id + 1 if committed else 1) == plan.batch_id

    def forget_idle(self) -> None:
        """Forget the drained-partition hints and what was seen committed: the next turn
        plans from the destination and the source (offsets set, a lease taken again)."""
        self._idle.clear()
        self._known = None

    def _still_idle(self, partition: str, watermark: Any) -> bool:
        """Skip a drained partition while its latest offset stays put, for a while only:
        a watermark can repeat (a recreated topic, a broker that under-reports it). A
        source that cannot tell (a connector: watermark None) is read every batch, as
        whatever was added since the last one can only be found by reading."""
        if watermark is None or partition not in self._idle:
            return False
        token, since = self._idle[partition]
        if time.time() - since > IDLE_RECHECK_S:
            return False
        return token == watermark

    # -- steps 1 to 4 -----------------------------------------------------------------
    def run(
        self,
        attempt: int = 1,
        max_partitions: int | None = None,
        plan: Plan | None = None,
        fence: Fence | None = None,
        driver_records: int = 0,
        in_driver: bool = False,
    ) -> BatchResult:
        """Steps 1 to 4 of the protocol, with a crash point after each. ``plan``, made
        earlier by :meth:`plan` (the scheduler plans to learn a batch's width), is used only
        while the destination still holds the batch it was planned after; it is re-made
        on a retry (``attempt`` > 1) and when another batch committed since. ``fence``
        (the scheduler's lease check) runs right before the commit and either raises
        (nothing is committed, the staged data is removed) or gives metadata for it. A
        batch the source can tell holds at most ``driver_records`` records runs its tasks
        in this process rather than as a Spark job (:func:`planning.driver_sized`);
        ``in_driver`` (the scheduler admitted it as such) keeps every attempt there, each
        reading at most ``driver_records`` records."""
        started_at = _now()
        try:
            if attempt > 1:
                self._known = None
            if plan is None or attempt > 1 or not self._current(plan):
                plan = self.plan(max_partitions)
            crash_point("after_plan")
            written = self.extract(plan, attempt, started_at, driver_records, in_driver)
            crash_point("after_write")
            return self.commit(written, attempt, started_at, fence)
        except BaseException:
            self._known = None  # read from the destination again
            raise

    # -- step 2 -----------------------------------------------------------------------
    def extract(
        self,
        plan: Plan,
        attempt: int = 1,
        started_at: dt.datetime | None = None,
        driver_records: int = 0,
        in_driver: bool = False,
    ) -> Written:
        """Run the tasks and the sink's driver-side work; nothing is visible yet."""
        started_at = started_at or _now()
        t0 = time.time()
        refiner = self.pipeline.refiner
        if refiner is not None:
            refiner.drain()  # what an attempt that did not commit rejected
        results = self._execute(plan, driver_records, in_driver)
        for r in results:
            err = r.error()
            if err is not None:
                err.with_context(batch=plan.batch_id, pipeline=self.spec.name)
                if r.trace:
                    log.debug("task trace for %s:\n%s", err, r.trace)
                self._abort([s for done in results for s in done.staged])
                self._record_failure(plan, attempt, started_at, err)
                raise err

        ends = dict(plan.offsets)
        staged: list[Staged] = []
        errors: list[ErrorRecord] = []
        reached: dict[str, list[Any]] = {}
        drained: dict[str, bool] = {}
        part_rows: dict[str, int] = {}
        for r in results:
            staged.extend(r.staged)
            errors.extend(r.errors)
            for piece in r.pieces:
                reached.setdefault(piece.partition, []).append(piece.end)
                part_rows[piece.partition] = part_rows.get(piece.partition, 0) + piece.rows
                drained[piece.partition] = drained.get(piece.partition, True) and piece.drained
        for partition, piece_ends in reached.items():
            ends[partition] = self.source.merge(partition, piece_ends)
            if drained[partition]:
                self._idle[partition] = (plan.watermarks[partition], time.time())
            else:
                self._idle.pop(partition, None)
        rows = sum(r.rows for r in results)
        try:
            staged = self.sink.finish(staged, plan.batch_id)
        except SparkpipesError as e:
            e.with_context(batch=plan.batch_id, pipeline=self.spec.name)
            self._abort(staged)
            self._not_drained(plan)
            self._record_failure(plan, attempt, started_at, e)
            raise
        if self.pipeline.refines and not self.pipeline.upserts:
            rows = sum(s.num_records for s in staged)
        if refiner is not None:
            errors.extend(refiner.drain())
        parts = [line for r in results for line in r.report()]
        nbytes = sum(r.bytes for r in results)
        done = plan.complete and planning.caught_up(
            self.source, plan.watermarks, [p for r in results for p in r.pieces]
        )
        return Written(plan, staged, errors, ends, parts, rows, nbytes, t0, part_rows, done)

    # -- steps 3 and 4 ----------------------------------------------------------------
    def commit(
        self,
        w: Written,
        attempt: int = 1,
        started_at: dt.datetime | None = None,
        fence: Fence | None = None,
    ) -> BatchResult:
        """One commit through the sink (none for an idle batch), then the catalog record."""
        started_at = started_at or _now()
        plan = w.plan
        result = BatchResult(
            self.spec.name,
            plan.batch_id,
            BatchState.SUCCEEDED,
            w.rows,
            w.nbytes,
            len(w.errors),
            partitions=w.parts,
            offsets=w.ends,
            caught_up=w.caught_up,
        )
        if not w.staged and w.ends == plan.committed:
            result.state = BatchState.NO_DATA
            result.seconds = time.time() - w.t0
            if plan.batch_id > 1 and self._known is None:
                self._know(Committed(plan.batch_id - 1, dict(plan.committed)))
            return result

        errors = tuple(e.to_dict() for e in w.errors)
        # a sink that reports in its commit stores them there, once it knows the batch is
        # its to commit: stored here, they would replace the list of an attempt that won
        if errors and not self.sink.reports_in_commit:
            self.catalog.batches.replace_errors(
                self.pipeline_id, self.spec.name, plan.batch_id, list(errors)
            )

        def report(skipped) -> None:  # what the commit skips, before it is final
            self.catalog.batches.replace_errors(
                self.pipeline_id, self.spec.name, plan.batch_id, [*errors, *skipped]
            )

        batch = BatchCommit(
            self.app_id,
            self.spec.name,
            plan.batch_id,
            w.ends,
            {"sparkpipes.pipeline_name": self.spec.name},
            starts=plan.offsets,
            rows=w.part_rows,
            errors=errors,
            report=report,
        )
        try:
            if fence is not None:
                batch = replace(batch, extra={**batch.extra, **fence()})
            fresh = self.sink.commit(w.staged, batch)
        except SparkpipesError as e:
            e.with_context(batch=plan.batch_id, pipeline=self.spec.name)
            self._abort_uncommitted(w.staged, plan.batch_id)
            self._not_drained(plan)
            self._record_failure(plan, attempt, started_at, e)
            raise
        finally:
            self.sink.discard()
        if not fresh:
            # another writer committed batch B first: its data and offsets stand, this
            # attempt's do not, and the catalog row is the winner's to write
            won = self.sink.committed(self.app_id)
            self._known = None
            result.state = BatchState.REPLAYED
            result.rows = result.bytes = result.errors = 0
            result.offsets = dict(won.offsets) if won else {}
            result.seconds = time.time() - w.t0
            return result
        crash_point("after_commit")
        late = self.pipeline.refiner.drain() if self.pipeline.refiner is not None else []
        late += [ErrorRecord(**e) for e in self.sink.rejected()]
        if late:  # rows an upsert's refining or the destination rejected in the commit
            w.errors.extend(late)
            result.errors = len(w.errors)
            self.catalog.batches.replace_errors(
                self.pipeline_id, self.spec.name, plan.batch_id, [e.to_dict() for e in w.errors]
            )
        result.seconds = time.time() - w.t0
        self.catalog.batches.record(
            pipeline_id=self.pipeline_id,
            pipeline_name=self.spec.name,
            batch_id=plan.batch_id,
            attempt=attempt,
            state=BatchState.SUCCEEDED,
            started_at=started_at,
            rows=w.rows,
            nbytes=w.nbytes,
            errors=len(w.errors),
            partitions=w.parts,
            offsets=w.ends,
        )
        crash_point("after_record")
        self._know(Committed(plan.batch_id, dict(w.ends)))
        return result

    def _execute(
        self, plan: Plan, driver_records: int = 0, in_driver: bool = False
    ) -> list[TaskResult]:
        if not plan.tasks:
            return []
        self.sink.discard()  # leftovers of an attempt that did not commit
        p = self.pipeline
        max_records = self.spec.batch.max_offsets_per_partition
        here = in_driver or (
            self.source.runs_in_driver
            and planning.driver_sized(plan.tasks, max_records, driver_records)
        )
        if here:  # small for sure: a retry that finds more, or a watermark that said less
            share = max(1, driver_records // max(1, sum(len(t) for t in plan.tasks)))
            max_records = min(max_records, share) if max_records else share
        whole = self.source.lists_files
        specs = [
            TaskSpec(
                pipeline=self.spec.name,
                pipeline_id=self.pipeline_id,
                batch_id=plan.batch_id,
                pieces=pieces,
                source=self.source,
                decoder=p.decoder,
                writer=p.writer,
                output_schema=p.task_schema,
                not_null=p.not_null,
                defaults=p.defaults,
                rules=p.rules,
                metadata_columns=p.metadata_columns,
                max_records=max_records,
                fetch_timeout_s=self.spec.batch.fetch_timeout_ms / 1000,
                skip_parser_errors=self.spec.format.skip_parser_errors,
                skip_constraint_errors=self.spec.format.skip_constraint_errors,
                out_of_range=self.spec.source.on_out_of_range,
                provenance=self.spec.sink.provenance or p.stages,
                chunk_records=self.spec.batch.chunk_records,
                whole=whole,
                task=i,
            )
            for i, pieces in enumerate(plan.tasks)
        ]
        if here:  # each task from its own pickled copy, as a Spark worker gets it
            copies = [pickle.loads(pickle.dumps(s)) for s in specs]
            if len(copies) == 1:
                return [run_task(copies[0], in_driver=True)]
            with ThreadPoolExecutor(len(copies), thread_name_prefix="sparkpipes-task") as pool:
                # their waits on the broker overlap
                return list(pool.map(lambda s: run_task(s, in_driver=True), copies))
        sc = self._spark().sparkContext
        sc.setJobGroup(f"{self.spec.name}-{plan.batch_id}", f"pipeline {self.spec.name}", True)
        try:
            return sc.parallelize(specs, len(specs)).map(run_task).collect()
        except Exception as e:  # py4j / Spark: an executor lost, the JVM gone; retried
            msg = str(e).strip().splitlines()
            raise EngineError(
                f"Spark job failed: {msg[0] if msg else type(e).__name__}",
                pipeline=self.spec.name,
                batch=plan.batch_id,
            ) from None

    def _not_drained(self, plan: Plan) -> None:
        """A batch that fails after its tasks read its partitions to the end did not drain
        them: the next batch reads them again, without waiting for the idle recheck."""
        for partition in plan.starts:
            self._idle.pop(partition, None)

    def _abort(self, staged: list[Staged]) -> None:
        """Best effort: remove what a failed attempt staged (a full disk is a likely
        reason for the failure; its retries must not fill it further)."""
        if not staged:
            return
        try:
            self.sink.abort(staged)
        except Exception as e:  # left behind, unreferenced: harmless but for the space
            log.warning("could not remove the files of a failed attempt: %s", e)

    def _abort_uncommitted(self, staged: list[Staged], batch_id: int) -> None:
        """After a failed commit: remove the staged data only if the destination shows the
        batch is not there (a commit that reports a failure may still have been written,
        e.g. when a post-commit step fails; its files must stay)."""
        try:
            held = self.sink.committed(self.app_id)
        except Exception as e:
            log.warning("not removing the files of batch %d: %s", batch_id, e)
            return
        if held is None or held.batch_id < batch_id:
            self._abort(staged)

    def _record_failure(
        self, plan: Plan, attempt: int, started_at: dt.datetime, err: SparkpipesError
    ) -> None:
        """Best effort: when the catalog cannot take the record (its disk is full too),
        the batch's own error is still the one raised."""
        if err.offset is None and err.partition in plan.starts:
            err.offset = plan.starts[err.partition]
        try:
            self._write_failure(plan, attempt, started_at, err)
        except CatalogError as e:
            log.warning("could not record the failure of %s: %s", err.where(), e)

    def _write_failure(
        self, plan: Plan, attempt: int, started_at: dt.datetime, err: SparkpipesError
    ) -> None:
        self.catalog.batches.replace_errors(
            self.pipeline_id, self.spec.name, plan.batch_id, [ErrorRecord.of(err).to_dict()]
        )
        self.catalog.batches.record(
            pipeline_id=self.pipeline_id,
            pipeline_name=self.spec.name,
            batch_id=plan.batch_id,
            attempt=attempt,
            state=BatchState.FAILED,
            started_at=started_at,
            partitions=[{"partition": p, "start": s} for p, s in plan.starts.items()],
            error=str(err),
        )

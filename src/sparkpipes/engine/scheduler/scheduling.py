"""Running pipelines: one batch with the retry policy, a run of batches, the scheduler.

Retry policy: a batch that fails with a *transient* error (source unreachable, a lost
Spark executor, a failed commit) is retried with exponential backoff (0.25 s doubling, at
most 10 s) up to the pipeline's ``max_retries``, re-assembling the pipeline each time; a
terminal error (a record that does not decode, an offset out of range, bad options, a
bug) or the last failed retry puts the pipeline into ``Error`` with the error recorded.
While retries are pending the pipeline stays ``Running`` and its last error says what is
being retried (``status`` shows it); a batch that then succeeds clears it.

The scheduler (``run_forever``: a dispatcher thread) serves every ``Running`` pipeline
from a worker thread of its own, turn after turn: plan the next batch under the
pipeline's lock (a read: committed offsets and the source's listing) to learn its width,
ask for room for that width (``engine.admission``:
``pipelines_max_concurrent_batch_partitions``, default Spark's default parallelism, caps
the Spark tasks of all batches at once, ``pipelines_max_concurrent`` the pipelines; served
in turn, none starves; a plan wider than the cap was capped by the planner and runs
alone), then run exactly that plan under the pipeline's lock, as Spark jobs in the
pipeline's own FAIR pool, and free the room. A plan of width 0 (nothing new) takes no
room and is not run. A retry waits its backoff without holding room, then asks again.

Cost flat in the number of pipelines (issue 36): an idle turn reads neither the catalog
nor the source on its own. The pipeline's state is the dispatcher's last reading of all
records (one query a second); whether anything is new is asked of the source's shared
watch (``MetadataProvider.unchanged``: for Kafka one ListOffsets request per cluster
answers every pipeline on it), against what the pipeline last saw committed; only then is
a batch planned. A plan that the source can tell reads at most
``pipelines_driver_batch_records`` records runs in this process (``DRIVER_BATCHES`` at
once, without Spark room), where a Spark job's fixed cost would dominate it.

Promises: a batch starts only while its pipeline is ``Running`` (checked under its lock:
once ``stop`` returns, no batch of the pipeline runs); concurrent batches never take more
than the room they were admitted with (a re-plan is capped to it); a pipeline whose turn
loaded data goes again at once if more may be waiting, and once ``pipelines_batch_gap_ms``
(at most its interval) has passed since the turn began if the batch read all there was
(a steady stream: batches that far apart, not back to back); one with nothing new waits,
from an eighth of its ``batch_interval_ms`` doubling while it stays idle, up to the interval
itself
(:func:`idle_wait`); ``close`` (or the ``halt`` given to ``run_forever``) ends every worker
after its batch in flight, and returns once they have. The admission's state (who runs
with how many partitions, who waits) is noted in the catalog on every change, for
``sparkpipes status`` in other processes, and again every ``HEARTBEAT_S`` while the
scheduler serves: a note older than ``STALE_S`` is from a scheduler that died (SIGKILL),
and ``status`` shows no share from it.

Leases (``engine.leasing``): a worker runs its pipeline only while this engine holds the
pipeline's lease, waits for it while another engine does, and releases it when it ends;
the dispatcher renews held leases; each batch's commit is fenced by a last renewal.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable

from sparkpipes.catalog import BatchState, PipelineRecord, PipelineState
from sparkpipes.config import PipelineSpec
from sparkpipes.engine import variables
from sparkpipes.engine.batch.planning import driver_sized
from sparkpipes.engine.batch.protocol import BatchResult, BatchRunner, Fence, Plan
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.scheduler.admission import Admission
from sparkpipes.engine.scheduler.leasing import Keeper
from sparkpipes.engine.scheduler.rooms import NOTE, Rooms
from sparkpipes.errors import CatalogError, InternalError, LeaseLostError, SparkpipesError

#: how often the dispatcher reads which pipelines are Running (a START in this process
#: wakes it at once; one from another process is seen within this time)
DISPATCH_S = 1.0

log = logging.getLogger("sparkpipes.engine")

#: small batches run in this process at once (``_in_driver``)
DRIVER_BATCHES = 8
#: a small batch that waited this long for one of them is planned again before it runs
REPLAN_S = 0.1
MAX_BACKOFF_S = 10.0
#: an idle pipeline's first wait is its interval divided by 2 ** IDLE_STEPS
IDLE_STEPS = 3
MIN_IDLE_S = 0.01


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based)."""
    return min(0.25 * 2 ** (attempt - 1), MAX_BACKOFF_S)


def idle_wait(interval_s: float, idle: int) -> float:
    """Seconds a pipeline waits before its next turn after ``idle`` (>= 1) turns in a row
    found nothing new: an eighth of its interval, doubling, up to the interval."""
    step = min(max(idle, 1) - 1, IDLE_STEPS)
    return max(MIN_IDLE_S, interval_s / 2 ** (IDLE_STEPS - step))


class Ran(enum.Enum):
    """What a turn did, which decides when the pipeline's next turn comes."""

    NOTHING = 0  # nothing new, or it failed: the next turn waits as an idle one does
    MORE = 1  # loaded, and more may be waiting: the next turn at once
    CAUGHT_UP = 2  # loaded all there was when it was planned: the next after the gap

    def __bool__(self) -> bool:
        return self is not Ran.NOTHING

    @classmethod
    def of(cls, result: BatchResult) -> Ran:
        if result.state == BatchState.NO_DATA:
            return cls.NOTHING
        return cls.CAUGHT_UP if result.caught_up else cls.MORE


class Scheduler(Rooms):
    def __init__(self, rt: Runtime, warm_up: Callable[[], None]) -> None:
        self.rt = rt
        self._warm_up = warm_up
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._wake = threading.Event()
        self._cv = threading.Condition()  # guards the admission and the workers
        self._admission = Admission(1)
        self._workers: dict[str, threading.Thread] = {}
        self._warm_lock = threading.Lock()
        self._note_lock = threading.Lock()
        self._changes = 0  # the admission's state changes, counted under _cv
        self._noted: tuple[int, dict] = (0, {})  # the last change noted in the catalog
        self._noted_at = 0.0
        self._ttl = (10.0, 0.0)  # (lease time-to-live, read at)
        self._variables: tuple[dict, float] = ({}, -1e9)
        self._parallelism: int | None = None  # Spark's default, read once
        self._driver_slots = threading.BoundedSemaphore(DRIVER_BATCHES)
        #: when each pipeline's worker last looked at its source (``MetadataProvider.since``)
        self._looked: dict[str, float] = {}
        #: every pipeline's record as the dispatcher last read it
        self._seen: dict[str, PipelineRecord] = {}
        #: this engine's pipeline leases: only their holder's scheduler runs a pipeline
        self.leases = Keeper(rt.catalog, self._lease_ttl_s)

    def _lease_ttl_s(self) -> float:
        ttl, at = self._ttl
        if time.monotonic() - at > 5.0:
            try:
                values = variables.resolve(self.rt.catalog.variables.all())
                ttl = max(0.5, values["pipelines_lease_ttl_ms"] / 1000)
            except CatalogError:
                pass
            self._ttl = (ttl, time.monotonic())
        return ttl

    def _values(self) -> dict:
        """The engine variables, read again once they are a second old."""
        values, at = self._variables
        if time.monotonic() - at > 1.0:
            values = variables.resolve(self.rt.catalog.variables.all())
            self._variables = (values, time.monotonic())
        return values

    def forget_values(self) -> None:
        """A variable was set in this process: read them again at the next use."""
        self._variables = ({}, -1e9)

    def _limits(self) -> tuple[int, int]:
        """(partitions of all batches at once, pipelines at once; 0: no cap)."""
        values = self._values()
        cap = values["pipelines_max_concurrent_batch_partitions"]
        if not cap:
            if self._parallelism is None:
                self._parallelism = int(self.rt.spark.sparkContext.defaultParallelism)
            cap = self._parallelism
        return max(1, cap), values["pipelines_max_concurrent"]

    def _partition_cap(self) -> int:
        """A batch run outside the dispatcher has the whole cluster: as many tasks as
        ``_limits`` gives all batches at once (one wave; a stream's extra partitions
        share tasks, which spares a second wave's task start-up)."""
        return self._limits()[0]

    def run_batch(
        self,
        name: str,
        *,
        plan: Plan | None = None,
        max_partitions: int | None = None,
        pause: Callable[[float], int] | None = None,
        fence: Fence | None = None,
        in_driver: bool = False,
    ) -> BatchResult:
        """Run one batch with the retry policy; on final failure the pipeline is ``Error``.
        From the scheduler: ``plan`` (first attempt only), ``max_partitions`` (the room
        the batch was admitted with) and ``pause(seconds)``, the wait before a retry,
        which returns the room the retry is admitted with (0: give up, the pipeline
        stopped or the scheduler halts; the error is raised, the state stays)."""
        max_retries = self._max_retries(name)
        with self._warm_lock:  # once, even when the first batches start together
            self._warm_up()
        attempt = 0
        cap = max_partitions or self._partition_cap()
        with self.rt.lock(name):
            while True:
                attempt += 1
                try:
                    result = self.rt.runner(name).run(
                        attempt,
                        cap,
                        plan=plan if attempt == 1 else None,
                        fence=fence,
                        driver_records=self._driver_records(),
                        in_driver=in_driver,
                    )
                except LeaseLostError:
                    raise  # not this engine's pipeline any more: no retry, no error state
                except SparkpipesError as e:
                    e.with_context(pipeline=name)
                    if e.transient and attempt <= max_retries:
                        delay = backoff(attempt)
                        log.warning("%s; retry %d/%d in %.1fs", e, attempt, max_retries, delay)
                        self._note(name, last_error=f"{e} (retry {attempt}/{max_retries})")
                        self.rt.forget(name)
                        if pause is None:
                            time.sleep(delay)
                        elif not (cap := pause(delay)):
                            raise
                        continue
                    self._note(name, state=PipelineState.ERROR, last_error=str(e))
                    raise
                break
        rec = self.rt.catalog.pipelines.get(name)
        if rec.last_error and rec.state != PipelineState.ERROR:
            self.rt.catalog.pipelines.update(name, last_error=None)
        if result.state != BatchState.NO_DATA:
            log.info(
                "pipeline %s batch %d: %s, %d rows in %.2fs",
                name,
                result.batch_id,
                result.state,
                result.rows,
                result.seconds,
            )
        return result

    def _max_retries(self, name: str) -> int:
        """From the stored definition: assembling the pipeline is the first attempt's
        work, retried like the rest (a sink that reads its table's columns from a
        database that is restarting)."""
        return PipelineSpec.from_json(
            self.rt.catalog.pipelines.get(name).definition
        ).batch.max_retries

    def _note(self, name: str, **values: object) -> None:
        """Best effort: a catalog that cannot take the update (its disk is full too) must
        not hide the batch's own error, nor stop its retries."""
        try:
            self.rt.catalog.pipelines.update(name, **values)
        except CatalogError as e:
            log.warning("could not record pipeline %s's state: %s", name, e)

    def run_batches(
        self,
        name: str,
        n: int = 1,
        *,
        until_idle: bool = False,
        progress: Callable[[BatchResult], None] | None = None,
    ) -> list[BatchResult]:
        """Run up to ``n`` batches now, in this thread; stop early at an idle batch if
        asked. ``progress`` is called after each batch."""
        out = []
        for _ in range(n):
            r = self.run_batch(name)
            out.append(r)
            if progress is not None:
                progress(r)
            if until_idle and r.state == BatchState.NO_DATA:
                break
        return out

    def start(self, name: str | None = None, *, run: bool = True) -> None:
        """Set the pipeline (or all) ``Running``; with ``run``, make sure this engine's
        scheduler thread runs it (else a ``sparkpipes run`` process will)."""
        names = [name] if name else [p.name for p in self.rt.catalog.pipelines.all()]
        for n in names:
            self.rt.catalog.pipelines.get(n)
            self.rt.catalog.pipelines.update(n, state=PipelineState.RUNNING, last_error=None)
        self._wake.set()
        if run:
            self._ensure_thread()

    def stop(self, name: str | None = None) -> None:
        """Set ``Stopped``; returns once a batch in flight has finished."""
        names = [name] if name else [p.name for p in self.rt.catalog.pipelines.all()]
        for n in names:
            self.rt.catalog.pipelines.update(n, state=PipelineState.STOPPED)
            self._seen.pop(n, None)  # its worker reads the catalog until the next dispatch
        for n in names:
            with self.rt.lock(n):
                pass

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._halt.clear()
            self._thread = threading.Thread(target=self.run_forever, name="sparkpipes", daemon=True)
            self._thread.start()

    def _halted(self, halt: threading.Event) -> bool:
        return halt.is_set() or self._halt.is_set()

    def run_forever(self, halt: threading.Event | None = None) -> None:
        """Serve every ``Running`` pipeline, each from its own thread, until ``halt`` (or
        ``close``) is set; returns when every pipeline thread has finished its batch."""
        halt = halt or self._halt
        mine: list[threading.Thread] = []
        try:
            while not self._halted(halt):
                try:
                    records = self.rt.catalog.pipelines.states()
                except CatalogError as e:  # a catalog that is down for a while
                    log.warning("scheduler: %s", e)
                    halt.wait(1.0)
                    continue
                self._seen = {p.name: p for p in records}
                running = [p.name for p in records if p.state == PipelineState.RUNNING]
                mine = [w for w in mine if w.is_alive()]
                with self._cv:  # two dispatchers (start() and `run`) share the workers
                    for name in running:
                        worker = self._workers.get(name)
                        if worker is None or not worker.is_alive():
                            worker = threading.Thread(
                                target=self._serve,
                                args=(name, halt),
                                name=f"sparkpipes-{name}",
                                daemon=True,
                            )
                            self._workers[name] = worker
                            mine.append(worker)
                            worker.start()
                if mine:
                    self._publish(self._changes, beat=True)
                self.leases.renew_due()
                self._nap(halt)
        finally:
            with self._cv:
                self._cv.notify_all()
            for worker in mine:
                worker.join()
            with self._cv:
                for name, worker in list(self._workers.items()):
                    if not worker.is_alive():
                        del self._workers[name]
                self._changes += 1
                change = self._changes
            self._publish(change)  # what still runs or waits (nothing, for one engine)
            with self._cv:
                idle = not self._workers
            if idle:  # this engine serves nothing any more: its note goes
                try:
                    self.rt.catalog.notes.drop(f"{NOTE}:{self.leases.me}")
                except CatalogError:
                    pass

    def _nap(self, halt: threading.Event) -> None:
        """Until the next dispatch: ``DISPATCH_S``, or a START or ``close`` in this
        process (a halt set elsewhere is seen by the next dispatch); lease renewals stay
        on their own, shorter clock (woken when one is due, not polled)."""
        until = time.monotonic() + DISPATCH_S
        while not self._halted(halt) and not self._wake.is_set():
            left = until - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(min(left, max(0.02, self.leases.due_in_s())))
            self.leases.renew_due()
        self._wake.clear()

    def _serve(self, name: str, halt: threading.Event) -> None:
        """One pipeline's turns, while it is ``Running`` and this engine holds its lease
        (waiting for the lease while another engine holds it); the lease is released
        when the pipeline stops or the scheduler halts. An idle turn costs no catalog
        read and no request of its own: the state is the dispatcher's last reading
        (:meth:`_state`), and the source's shared watch says whether anything is new
        (``BatchRunner.nothing_new``); what the runner saw is forgotten when the lease
        is taken again or the pipeline's record changes (offsets set by hand)."""
        idle = 0
        held: str | None = None
        seen: tuple[object, ...] = ()
        try:
            while not self._halted(halt):
                state = self._state(name)
                if state is None or state.state != PipelineState.RUNNING:
                    return
                if not self.leases.hold(state.id):
                    halt.wait(self.leases.poll_s)
                    continue
                held = state.id
                now = (state.id, self.leases.token(state.id), state.updated_at)
                if now != seen:
                    seen = now
                    self._forget_seen(name)
                looked = time.monotonic()
                ran = Ran.NOTHING if self._quiet(name, idle) else self._turn(name, halt, state.id)
                self._looked[name] = self._next_look(name, looked)
                if ran:
                    idle = 0
                    if ran is Ran.CAUGHT_UP:
                        halt.wait(max(0.0, looked + self._gap_s(name) - time.monotonic()))
                    continue
                idle += 1
                halt.wait(idle_wait(self._interval_s(name), idle))
        finally:
            self._looked.pop(name, None)
            if held is not None:
                self.leases.release(held)

    def _state(self, name: str) -> PipelineRecord | None:
        """The pipeline's record as the dispatcher last read it, without its definition
        (read now, whole, if it has not yet); None once dropped."""
        rec = self._seen.get(name)
        if rec is not None:
            return rec
        try:
            return self.rt.catalog.pipelines.get(name)
        except SparkpipesError:
            return None

    def _forget_seen(self, name: str) -> None:
        runner = self.rt.assembled(name)
        if runner is not None:
            runner.forget_idle()

    def _next_look(self, name: str, looked: float) -> float:
        """What the pipeline's next look asks of the source's shared reading: one asked
        for after the reading this turn used (another pipeline's will do), not merely
        after this turn began: this turn's own reading would pass that, and the next look
        would see nothing that came since (an idle pipeline then noticed news a turn
        late). A source without a shared reading: after this turn began."""
        runner = self.rt.assembled(name)
        read_at = runner.read_at() if runner is not None else None
        return looked if read_at is None else max(looked, read_at + 1e-6)

    def _quiet(self, name: str, idle: int) -> bool:
        """Whether the turn can be skipped: the source tells, cheaply, that nothing was
        added since the pipeline's last turn (never before its first)."""
        runner = self.rt.assembled(name)
        if runner is None or not idle:
            return False
        try:
            return runner.nothing_new(since=self._looked.get(name, time.monotonic()))
        except SparkpipesError:
            return False  # the turn's plan meets the error, under the retry policy

    def _interval_s(self, name: str) -> float:
        runner = self.rt.assembled(name)
        if runner is not None:
            return runner.spec.batch.interval_ms / 1000
        try:
            rec = self.rt.catalog.pipelines.get(name)
        except SparkpipesError:
            return 2.5
        return rec.definition.get("batch", {}).get("interval_ms", 2500) / 1000

    def _gap_s(self, name: str) -> float:
        """How long after a caught-up batch started the pipeline's next one may start:
        ``pipelines_batch_gap_ms``, or its ``BATCH_INTERVAL`` if shorter. A steady stream
        is then loaded in batches this far apart instead of back to back; each batch has
        a fixed cost (readers, a commit, a file), and back to back they came as fast as
        the broker answered."""
        try:
            gap = self._values()["pipelines_batch_gap_ms"] / 1000
        except SparkpipesError:  # the catalog unreachable: its default
            gap = variables.VARIABLES["pipelines_batch_gap_ms"].default / 1000
        return min(gap, self._interval_s(name))

    def _turn(self, name: str, halt: threading.Event, pipeline_id: str) -> Ran:
        """Plan, wait for room, run one batch; what it loaded. Errors are recorded, not
        raised: the other pipelines go on."""
        try:
            cap, most = self._limits()
            plan: Plan | None = None
            with self.rt.lock(name):
                if not self._still_running(name):
                    return Ran.NOTHING
                planner = self.rt.runner(name)
                try:
                    plan = planner.plan(cap, since=self._looked.get(name))
                except SparkpipesError:
                    pass  # the batch fails the same way, under the retry policy
            if plan is not None and plan.width == 0:
                return Ran.NOTHING  # nothing new: no batch, no room
            if plan is not None and self._small(planner, plan):
                return self._in_driver(name, planner, plan, halt, pipeline_id)
            width = self._wait_for_room(name, plan.width if plan else 1, cap, most, halt)
            if not width:
                return Ran.NOTHING
            try:
                with self.rt.lock(name):
                    if not self._still_running(name):
                        return Ran.NOTHING  # stopped while it waited for room
                    if plan is not None and (
                        plan.width > width or self.rt.runner(name) is not planner
                    ):
                        plan = None  # the cap went down, or the pipeline changed: re-plan
                    self.rt.spark.sparkContext.setLocalProperty("spark.scheduler.pool", name)
                    result = self.run_batch(
                        name,
                        plan=plan,
                        max_partitions=width,
                        pause=lambda delay: self._pause(name, width, halt, delay),
                        fence=lambda: self.leases.fence(pipeline_id, name),
                    )
                return Ran.of(result)
            finally:
                self._free(name)
        except LeaseLostError as e:
            log.warning("%s", e)
        except SparkpipesError as e:
            log.error("%s", e)
        except Exception as e:  # a bug must not stop the other pipelines
            log.exception("unexpected failure in pipeline %s", name)
            err = InternalError(f"unexpected failure: {type(e).__name__}: {e}", pipeline=name)
            self._note(name, state=PipelineState.ERROR, last_error=str(err))
        return Ran.NOTHING

    def _driver_records(self) -> int:
        """``pipelines_driver_batch_records``, or 0 (every batch a Spark job, as seed 004
        shares the cluster) while a cap on concurrent batches is set."""
        values = self._values()
        caps = ("pipelines_max_concurrent", "pipelines_max_concurrent_batch_partitions")
        return 0 if any(values[c] for c in caps) else values["pipelines_driver_batch_records"]

    def _small(self, runner: BatchRunner, plan: Plan) -> bool:
        """Whether the batch runs in this process without asking for room."""
        limit = self._driver_records()
        return (
            bool(limit)
            and runner.source.runs_in_driver
            and driver_sized(plan.tasks, runner.spec.batch.max_offsets_per_partition, limit)
        )

    def _in_driver(
        self, name: str, planner: BatchRunner, plan: Plan, halt: threading.Event, pid: str
    ) -> Ran:
        """Run a small batch in this process: it takes no Spark room, only one of
        ``DRIVER_BATCHES`` slots (its cost is mostly waiting on the broker, the table's
        storage and the catalog, so a few overlap well)."""
        waiting = time.monotonic()
        while not self._driver_slots.acquire(timeout=0.2):
            if self._halted(halt):
                return Ran.NOTHING
        try:
            with self.rt.lock(name):
                if not self._still_running(name):
                    return Ran.NOTHING
                if self.rt.runner(name) is not planner:
                    return Ran.MORE  # the pipeline changed: the next turn plans again
                if time.monotonic() - waiting > REPLAN_S:
                    # it waited for a slot while its records kept coming: a plan made
                    # now takes them too (a reading taken while it waited will do)
                    try:
                        plan = planner.plan(plan.width, since=waiting)
                    except SparkpipesError:
                        pass  # the first plan runs, and meets the error under the retry policy
                    if plan.width == 0:
                        return Ran.NOTHING

                def pause(delay: float) -> int:
                    gone = halt.wait(delay) or self._halted(halt)
                    return 0 if gone or not self._still_running(name) else plan.width

                result = self.run_batch(
                    name,
                    plan=plan,
                    max_partitions=plan.width,
                    pause=pause,
                    fence=lambda: self.leases.fence(pid, name),
                    in_driver=True,
                )
            return Ran.of(result)
        finally:
            self._driver_slots.release()

    def _still_running(self, name: str) -> bool:
        try:
            return self.rt.catalog.pipelines.get(name).state == PipelineState.RUNNING
        except SparkpipesError:
            return False

    def close(self) -> None:
        self._halt.set()
        self._wake.set()  # the dispatcher's nap
        with self._cv:
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

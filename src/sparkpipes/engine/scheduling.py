"""Running pipelines: one batch with the retry policy, a run of batches, the scheduler.

Retry policy: a batch that fails with a *transient* error (source unreachable, a lost
Spark executor, a failed commit) is retried with exponential backoff (0.25 s doubling, at
most 10 s) up to the pipeline's ``max_retries``, re-assembling the pipeline each time; a
terminal error (a record that does not decode, an offset out of range, bad options, a
bug) or the last failed retry puts the pipeline into ``Error`` with the error recorded.
While retries are pending the pipeline stays ``Running`` and its last error says what is
being retried (``status`` shows it); a batch that then succeeds clears it.

The scheduler serves every ``Running`` pipeline from a thread of its own: plan the next
batch (a read: committed offsets and the source's listing), ask for room for its width
(``engine.admission``: ``pipelines_max_concurrent_batch_partitions``, default Spark's
default parallelism, caps the Spark tasks of all batches at once, and
``pipelines_max_concurrent`` the pipelines; served in turn, none starves), run it as a
Spark job in the pipeline's own FAIR pool, free the room. A pipeline with data goes again
at once; one with nothing new waits ``batch_interval_ms``, doubling while it stays idle,
up to ``max(interval, IDLE_CAP_S)``. A batch holds only its own pipeline's lock. The
admission's state (who runs with how many partitions, who waits) is noted in the catalog
for ``sparkpipes status`` in other processes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable

from sparkpipes.catalog import BatchState, PipelineState
from sparkpipes.engine import variables
from sparkpipes.engine.admission import Admission
from sparkpipes.engine.batch import BatchResult, Plan
from sparkpipes.engine.runtime import Runtime
from sparkpipes.errors import CatalogError, InternalError, SparkpipesError

log = logging.getLogger("sparkpipes.engine")

MAX_BACKOFF_S = 10.0
IDLE_CAP_S = 2.0


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based)."""
    return min(0.25 * 2 ** (attempt - 1), MAX_BACKOFF_S)


class Scheduler:
    def __init__(self, rt: Runtime, warm_up: Callable[[], None]) -> None:
        self.rt = rt
        self._warm_up = warm_up
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._cv = threading.Condition()
        self._admission = Admission(1)
        self._workers: dict[str, threading.Thread] = {}

    def _limits(self) -> tuple[int, int]:
        """(partitions of all batches at once, pipelines at once; 0: no cap)."""
        values = variables.resolve(self.rt.catalog.variables())
        cap = values["pipelines_max_concurrent_batch_partitions"]
        if not cap:
            cap = int(self.rt.spark.sparkContext.defaultParallelism)
        return max(1, cap), values["pipelines_max_concurrent"]

    def _partition_cap(self) -> int | None:
        cap = variables.resolve(self.rt.catalog.variables())[
            "pipelines_max_concurrent_batch_partitions"
        ]
        return cap or None

    def run_batch(
        self, name: str, *, plan: Plan | None = None, max_partitions: int | None = None
    ) -> BatchResult:
        """Run one batch with the retry policy; on final failure the pipeline is ``Error``.
        ``plan`` (first attempt only) and ``max_partitions`` come from the scheduler."""
        max_retries = self.rt.runner(name).spec.batch.max_retries
        self._warm_up()
        attempt = 0
        cap = max_partitions or self._partition_cap()
        with self.rt.lock(name):
            while True:
                attempt += 1
                try:
                    result = self.rt.runner(name).run(
                        attempt, cap, plan=plan if attempt == 1 else None
                    )
                except SparkpipesError as e:
                    e.with_context(pipeline=name)
                    if e.transient and attempt <= max_retries:
                        delay = backoff(attempt)
                        log.warning("%s; retry %d/%d in %.1fs", e, attempt, max_retries, delay)
                        self._note(name, last_error=f"{e} (retry {attempt}/{max_retries})")
                        self.rt.forget(name)
                        time.sleep(delay)
                        continue
                    self._note(name, state=PipelineState.ERROR, last_error=str(e))
                    raise
                break
        rec = self.rt.catalog.pipeline(name)
        if rec.last_error and rec.state != PipelineState.ERROR:
            self.rt.catalog.update_pipeline(name, last_error=None)
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

    def _note(self, name: str, **values: object) -> None:
        """Best effort: a catalog that cannot take the update (its disk is full too) must
        not hide the batch's own error, nor stop its retries."""
        try:
            self.rt.catalog.update_pipeline(name, **values)
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
        names = [name] if name else [p.name for p in self.rt.catalog.pipelines()]
        for n in names:
            self.rt.catalog.pipeline(n)
            self.rt.catalog.update_pipeline(n, state=PipelineState.RUNNING, last_error=None)
        if run:
            self._ensure_thread()

    def stop(self, name: str | None = None) -> None:
        """Set ``Stopped``; returns once a batch in flight has finished."""
        names = [name] if name else [p.name for p in self.rt.catalog.pipelines()]
        for n in names:
            self.rt.catalog.update_pipeline(n, state=PipelineState.STOPPED)
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
        try:
            while not self._halted(halt):
                for rec in self.rt.catalog.pipelines():
                    worker = self._workers.get(rec.name)
                    if rec.state == PipelineState.RUNNING and (
                        worker is None or not worker.is_alive()
                    ):
                        worker = threading.Thread(
                            target=self._serve,
                            args=(rec.name, halt),
                            name=f"sparkpipes-{rec.name}",
                            daemon=True,
                        )
                        self._workers[rec.name] = worker
                        worker.start()
                halt.wait(0.1)
        finally:
            with self._cv:
                self._cv.notify_all()
            for worker in list(self._workers.values()):
                worker.join()
            self._workers.clear()
            self._publish()  # nothing runs or waits any more

    def _serve(self, name: str, halt: threading.Event) -> None:
        """One pipeline's turns, while it is ``Running``."""
        idle = 0
        while not self._halted(halt):
            try:
                rec = self.rt.catalog.pipeline(name)
            except SparkpipesError:
                return  # dropped
            if rec.state != PipelineState.RUNNING:
                return
            if self._turn(name, halt):
                idle = 0
                continue
            idle += 1
            interval = rec.definition.get("batch", {}).get("interval_ms", 2500) / 1000
            wait = min(max(interval, 0.05) * 2 ** (idle - 1), max(interval, IDLE_CAP_S))
            halt.wait(wait)

    def _turn(self, name: str, halt: threading.Event) -> bool:
        """Plan, wait for room, run one batch; whether it loaded anything. Errors are
        recorded, not raised: the other pipelines go on."""
        try:
            cap, most = self._limits()
            try:
                plan: Plan | None = self.rt.runner(name).plan(cap)
            except SparkpipesError:
                plan = None  # the batch fails the same way, under the retry policy
            if plan is not None and plan.width == 0:
                return False
            if not self._wait_for_room(name, plan.width if plan else 1, cap, most, halt):
                return False
            try:
                self.rt.spark.sparkContext.setLocalProperty("spark.scheduler.pool", name)
                result = self.run_batch(name, plan=plan, max_partitions=cap)
                return result.state != BatchState.NO_DATA
            finally:
                self._free(name)
        except SparkpipesError as e:
            log.error("%s", e)
        except Exception as e:  # a bug must not stop the other pipelines
            log.exception("unexpected failure in pipeline %s", name)
            err = InternalError(f"unexpected failure: {type(e).__name__}: {e}", pipeline=name)
            self._note(name, state=PipelineState.ERROR, last_error=str(err))
        return False

    def _wait_for_room(
        self, name: str, width: int, cap: int, most: int, halt: threading.Event
    ) -> bool:
        """Queue for ``width`` partitions; False if halted or stopped while waiting."""
        with self._cv:
            adm = self._admission
            adm.capacity, adm.max_pipelines = cap, most
            adm.ask(name, width)
            published = False
            check_at = time.monotonic() + 1.0
            while True:
                if adm.admit():
                    self._cv.notify_all()
                    published = False
                if name in adm.running:
                    self._publish()
                    return True
                if not published:
                    self._publish()
                    published = True
                stopped = False
                if time.monotonic() >= check_at:
                    check_at = time.monotonic() + 1.0
                    stopped = not self._still_running(name)
                if stopped or self._halted(halt):
                    adm.withdraw(name)
                    self._publish()
                    return False
                self._cv.wait(0.2)

    def _still_running(self, name: str) -> bool:
        try:
            return self.rt.catalog.pipeline(name).state == PipelineState.RUNNING
        except SparkpipesError:
            return False

    def _free(self, name: str) -> None:
        with self._cv:
            self._admission.release(name)
            self._admission.admit()
            self._cv.notify_all()
            self._publish()

    def _publish(self) -> None:
        """Best effort: the admission's state, for ``status`` in any process."""
        adm = self._admission
        state = {
            "at": time.time(),
            "capacity": adm.capacity,
            "running": dict(adm.running),
            "waiting": adm.waiting,
        }
        try:
            self.rt.catalog.put_note("scheduler", json.dumps(state, sort_keys=True))
        except CatalogError as e:
            log.debug("could not note the scheduler's state: %s", e)

    def close(self) -> None:
        self._halt.set()
        with self._cv:
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

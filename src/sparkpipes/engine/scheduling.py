"""Running pipelines: one batch with the retry policy, a run of batches, the scheduler.

Retry policy: a batch that fails with a *transient* error (source unreachable, a lost
Spark executor, a failed commit) is retried with exponential backoff (0.25 s doubling, at
most 10 s) up to the pipeline's ``max_retries``, re-assembling the pipeline each time; a
terminal error (a record that does not decode, an offset out of range, bad options, a
bug) or the last failed retry puts the pipeline into ``Error`` with the error recorded.
While retries are pending the pipeline stays ``Running`` and its last error says what is
being retried (``status`` shows it); a batch that then succeeds clears it.

The scheduler thread runs the batches of every ``Running`` pipeline, each pipeline every
``batch_interval_ms`` when idle and at once while it has data. A batch holds only its own
pipeline's lock. ``pipelines_max_concurrent_batch_partitions`` (when > 0) caps the
partitions one batch reads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sparkpipes.catalog import BatchState, PipelineState
from sparkpipes.engine import variables
from sparkpipes.engine.batch import BatchResult
from sparkpipes.engine.runtime import Runtime
from sparkpipes.errors import CatalogError, InternalError, SparkpipesError

log = logging.getLogger("sparkpipes.engine")

MAX_BACKOFF_S = 10.0


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based)."""
    return min(0.25 * 2 ** (attempt - 1), MAX_BACKOFF_S)


class Scheduler:
    def __init__(self, rt: Runtime, warm_up: Callable[[], None]) -> None:
        self.rt = rt
        self._warm_up = warm_up
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._next_due: dict[str, float] = {}

    def _partition_cap(self) -> int | None:
        cap = variables.resolve(self.rt.catalog.variables())[
            "pipelines_max_concurrent_batch_partitions"
        ]
        return cap or None

    def run_batch(self, name: str) -> BatchResult:
        """Run one batch with the retry policy; on final failure the pipeline is ``Error``."""
        max_retries = self.rt.runner(name).spec.batch.max_retries
        self._warm_up()
        attempt = 0
        with self.rt.lock(name):
            while True:
                attempt += 1
                try:
                    result = self.rt.runner(name).run(attempt, self._partition_cap())
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

    def run_forever(self, halt: threading.Event | None = None) -> None:
        """Run batches of every ``Running`` pipeline until ``halt`` (or ``close``) is set."""
        halt = halt or self._halt
        while not halt.is_set() and not self._halt.is_set():
            for rec in self.rt.catalog.pipelines():
                if halt.is_set() or self._halt.is_set():
                    break
                if rec.state != PipelineState.RUNNING:
                    continue
                if time.time() < self._next_due.get(rec.name, 0):
                    continue
                ran = self._run_one(rec.name)
                interval = rec.definition.get("batch", {}).get("interval_ms", 2500) / 1000
                self._next_due[rec.name] = time.time() + (0 if ran else interval)
            halt.wait(0.05)

    def _run_one(self, name: str) -> bool:
        """One scheduled batch; whether it loaded anything. Errors are recorded, not
        raised: the scheduler goes on with the other pipelines."""
        try:
            if self.rt.catalog.pipeline(name).state != PipelineState.RUNNING:
                return False
            return self.run_batch(name).state != BatchState.NO_DATA
        except SparkpipesError as e:
            log.error("%s", e)
        except Exception as e:  # a bug must not stop the other pipelines
            log.exception("unexpected failure in pipeline %s", name)
            err = InternalError(f"unexpected failure: {type(e).__name__}: {e}", pipeline=name)
            self.rt.catalog.update_pipeline(name, state=PipelineState.ERROR, last_error=str(err))
        return False

    def close(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

"""A statement's Spark jobs, so that they can be stopped: by ``KILL QUERY`` (or ``KILL``)
of its connection, and by the time limit ``max_execution_time`` puts on a ``SELECT``.

Every Spark action a statement runs (a collect, a streamed result's partitions) carries
the statement's own job tag, added on the calling thread for the action and removed after
it (:meth:`Statement.running`); PySpark pins each Python thread to a JVM thread, whose local
properties the jobs of that action carry, and a streamed result's serving thread inherits
them when the iterator is made. :meth:`Statement.cancel` cancels the jobs with the tag,
interrupting running tasks, and the statement's error then says why it stopped, as MySQL
says it (``ER_QUERY_INTERRUPTED``, ``ER_QUERY_TIMEOUT``), instead of Spark's "job
cancelled". A tag is one statement's: a pipeline's batches, or a later statement on the
same thread, never carry it.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from sparkpipes.errors import QueryError

#: the statements that ran a Spark action and are not closed (to stop at shutdown)
_LIVE: weakref.WeakSet[Statement] = weakref.WeakSet()
INTERRUPTED = "Query execution was interrupted"
TIMED_OUT = "Query execution was interrupted, maximum statement execution time exceeded"


class Statement:
    """The Spark jobs of one statement. ``spark`` gives the session when the statement
    first runs an action (a statement that runs none starts no JVM); ``limit_ms`` > 0
    cancels its jobs that long after its first action starts (0: no limit)."""

    def __init__(self, spark: Callable[[], Any], limit_ms: int = 0) -> None:
        self._spark = spark
        self.tag = f"sparkpipes-statement-{uuid.uuid4().hex}"
        self.limit_ms = limit_ms
        self.reason: str | None = None
        self._ran = False
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The calling thread's Spark actions inside carry this statement's tag (the clock
        starts at the first). Raises at once if the statement was stopped, and on the way
        out if it was stopped meanwhile (whatever Spark raised)."""
        self.check()
        sc = self._spark().sparkContext
        with self._lock:
            if self.limit_ms > 0 and self._timer is None:
                self._timer = threading.Timer(self.limit_ms / 1000, self.cancel, (TIMED_OUT,))
                self._timer.daemon = True
                self._timer.start()
        self._ran = True
        _LIVE.add(self)
        sc.setInterruptOnCancel(True)
        sc.addJobTag(self.tag)
        try:
            yield
        except Exception:
            self.check()
            raise
        finally:
            sc.removeJobTag(self.tag)
        self.check()

    def cancel(self, reason: str = INTERRUPTED) -> None:
        """Stop the statement's jobs, now and later ones; its error says ``reason``."""
        with self._lock:
            if self.reason is None:
                self.reason = reason
        if self._timer is not None or self._ran:
            self._spark().sparkContext.cancelJobsWithTag(self.tag)

    def check(self) -> None:
        """QueryError naming why, once the statement was stopped."""
        if self.reason is not None:
            raise QueryError(self.reason)

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        _LIVE.discard(self)


def stop_all(reason: str = "the server is stopping") -> None:
    """Stop every statement still running (``serve`` at SIGTERM: a query that would run
    for hours must not keep the process from ending; pipelines' batches finish)."""
    for statement in list(_LIVE):
        statement.cancel(f"{INTERRUPTED}: {reason}")

"""Lag over time for the web console (``server.console``): the catalog keeps no lag
history, so one light thread samples every pipeline's lag into a bounded in-memory ring
per pipeline, starting empty with the server.

Promises: samples cover the last ``WINDOW_S`` seconds, at most ``WINDOW_S /
WATCHED_EVERY_S`` points per pipeline; they are taken every ``WATCHED_EVERY_S`` while the
console is watched (a page or fragment in the last ``WATCHED_S``) and every
``IDLE_EVERY_S`` otherwise, so an unwatched server asks its sources little; a chart gets at
most ``LAG_POINTS`` points and never averages a spike away; a dropped pipeline's samples
are forgotten at the next sample; a failing sample is logged (debug) and the thread goes on.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Iterable

from sparkpipes.engine import Engine
from sparkpipes.engine.status import total_lag

log = logging.getLogger("sparkpipes.server.console")

#: seconds between lag samples while someone watches (a console request in the last
#: WATCHED_S) and otherwise; how far back samples are kept, and at most how many are sent
WATCHED_EVERY_S = 2.0
IDLE_EVERY_S = 10.0
WATCHED_S = 30.0
WINDOW_S = 3600.0
LAG_POINTS = 360


class LagHistory:
    """Per pipeline, ``(unix time, lag)`` samples of the last ``window_s`` seconds (lag
    None when the source could not tell); at most ``window_s / every_s`` points each."""

    def __init__(self, window_s: float = WINDOW_S, every_s: float = WATCHED_EVERY_S) -> None:
        self.window_s = window_s
        self._size = math.ceil(window_s / every_s) + 1
        self._points: dict[str, deque[tuple[float, int | None]]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, lag: int | None, at: float | None = None) -> None:
        at = time.time() if at is None else at
        with self._lock:
            ring = self._points.setdefault(name, deque(maxlen=self._size))
            ring.append((at, lag))
            while ring and ring[0][0] < at - self.window_s:
                ring.popleft()

    def points(self, name: str) -> list[tuple[float, int | None]]:
        with self._lock:
            return list(self._points.get(name, ()))

    def series(self, name: str, most: int = LAG_POINTS) -> dict[str, list]:
        """The samples as chart columns, at most ``most`` points: each the last time and
        the highest lag of a run of consecutive samples (a spike is never averaged away)."""
        points = self.points(name)
        step = max(1, math.ceil(len(points) / most))
        x, y = [], []
        for i in range(0, len(points), step):
            run = points[i : i + step]
            known = [v for _, v in run if v is not None]
            x.append(round(run[-1][0], 3))
            y.append(max(known) if known else None)
        return {"x": x, "y": y}

    def latest(self, name: str) -> tuple[float, int | None] | None:
        with self._lock:
            ring = self._points.get(name)
            return ring[-1] if ring else None

    def retain(self, names: Iterable[str]) -> None:
        """Forget pipelines not in ``names`` (dropped)."""
        keep = set(names)
        with self._lock:
            for name in [n for n in self._points if n not in keep]:
                del self._points[name]


class LagSampler:
    """Samples every pipeline's lag into a :class:`LagHistory` from one daemon thread:
    every ``WATCHED_EVERY_S`` while the console is being watched (:meth:`touch`), every
    ``IDLE_EVERY_S`` otherwise, so an unwatched server asks its sources little."""

    def __init__(self, engine: Engine, history: LagHistory) -> None:
        self.engine, self.history = engine, history
        self._watched_at = -math.inf
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._halt.clear()
                self._thread = threading.Thread(
                    target=self._run, name="sparkpipes-console-lag", daemon=True
                )
                self._thread.start()

    def touch(self) -> None:
        """Someone is watching: sample often (starts the thread if the lifespan did not)."""
        self._watched_at = time.monotonic()
        self.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._halt.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def sample(self) -> None:
        recs = self.engine.pipelines()
        self.history.retain(r.name for r in recs)
        for rec in recs:
            if self._halt.is_set():
                return
            self.history.add(rec.name, total_lag(self.engine, rec))

    def _run(self) -> None:
        while not self._halt.is_set():
            try:
                self.sample()
            except Exception as e:  # the engine closing under it, a catalog hiccup
                log.debug("lag sample failed: %s", e)
            sampled = time.monotonic()
            while not self._halt.is_set():
                watched = time.monotonic() - self._watched_at < WATCHED_S
                left = sampled + (WATCHED_EVERY_S if watched else IDLE_EVERY_S) - time.monotonic()
                if left <= 0:
                    break
                self._halt.wait(min(left, WATCHED_EVERY_S))

"""Which pipeline batches may run now: seed 004's scheduling, as a pure class.

Pipelines run in parallel until the cluster's partitions are saturated: the widths
(Spark tasks) of the batches running at once sum to at most ``capacity``
(``pipelines_max_concurrent_batch_partitions``), and at most ``max_pipelines``
(``pipelines_max_concurrent``, 0: no cap) run at once. A batch wider than the cluster
runs alone, capped to it (to the capacity of the moment: it may change while it waits).

Fairness: batches wait in the order they asked. A batch that does not fit may be
overtaken by a later one that fits, but only by one whose pipeline has not finished a
batch since the waiting one began to wait: a pipeline never runs twice while another
waits for room. So with 10 partitions and batches of 4, 8 and 4 asked together, the
first and third run together, the second alone after them, and from then on they take
turns (seed 004's example); none starves.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Waiting:
    name: str
    width: int
    since: int  # when it asked, on the admission's clock


class Admission:
    """Not thread-safe by itself: the scheduler calls it under its own lock."""

    def __init__(self, capacity: int, max_pipelines: int = 0) -> None:
        self.capacity = max(1, capacity)
        self.max_pipelines = max_pipelines
        self.running: dict[str, int] = {}
        self._queue: list[_Waiting] = []
        self._clock = 0
        self._finished: dict[str, int] = {}  # pipeline -> when its last batch finished

    @property
    def waiting(self) -> dict[str, int]:
        """Batches waiting for room: pipeline -> the partitions it needs."""
        return {w.name: self.width(w.width) for w in self._queue}

    @property
    def used(self) -> int:
        return sum(self.running.values())

    def width(self, asked: int) -> int:
        """The partitions a batch of ``asked`` tasks takes: at most the whole cluster."""
        return min(max(1, asked), self.capacity)

    def ask(self, name: str, width: int) -> None:
        """Queue a batch of ``width`` tasks of pipeline ``name`` (one per pipeline)."""
        if name in self.running or any(w.name == name for w in self._queue):
            raise ValueError(f"pipeline {name} already has a batch queued or running")
        self._clock += 1
        self._queue.append(_Waiting(name, self.width(width), self._clock))

    def withdraw(self, name: str) -> None:
        """Forget a queued batch (its pipeline stopped while it waited)."""
        self._queue = [w for w in self._queue if w.name != name]

    def admit(self) -> list[str]:
        """Start every queued batch that may start now, in queue order; their names."""
        started: list[str] = []
        passed: list[_Waiting] = []
        for w in list(self._queue):
            width = self.width(w.width)  # the capacity may have gone down since it asked
            fits = self.used + width <= self.capacity and (
                not self.max_pipelines or len(self.running) < self.max_pipelines
            )
            done = self._finished.get(w.name, 0)
            if fits and all(done < p.since for p in passed):
                self.running[w.name] = width
                self._queue.remove(w)
                started.append(w.name)
            else:
                passed.append(w)
        return started

    def release(self, name: str) -> None:
        """A batch finished: its partitions are free."""
        self.running.pop(name, None)
        self._clock += 1
        self._finished[name] = self._clock

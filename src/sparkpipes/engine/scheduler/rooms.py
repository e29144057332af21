"""The scheduler's room on the cluster: a batch queues for the Spark tasks it needs
(``admission``), frees them when done, and the admission's state is noted in the catalog
for ``sparkpipes status`` in any process (a note older than :data:`STALE_S` is from a
scheduler that died)."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparkpipes.engine.runtime import Runtime
    from sparkpipes.engine.scheduler.admission import Admission
    from sparkpipes.engine.scheduler.leasing import Keeper

#: how often a serving scheduler renews its note, and the age at which a note is stale
HEARTBEAT_S = 5.0
STALE_S = 3 * HEARTBEAT_S
#: the catalog note of each engine's scheduler is ``scheduler:<engine id>``
NOTE = "scheduler"

log = logging.getLogger("sparkpipes.engine")


class Rooms:
    """The part of :class:`~sparkpipes.engine.scheduler.scheduling.Scheduler` that asks for,
    frees and notes room on the cluster."""

    rt: Runtime
    leases: Keeper
    _admission: Admission
    _cv: threading.Condition
    _note_lock: threading.Lock
    _changes: int
    _noted: tuple[int, dict]
    _noted_at: float

    def _limits(self) -> tuple[int, int]:
        raise NotImplementedError

    def _halted(self, halt: threading.Event) -> bool:
        raise NotImplementedError

    def _still_running(self, name: str) -> bool:
        raise NotImplementedError

    def _pause(self, name: str, width: int, halt: threading.Event, delay: float) -> int:
        """Between two attempts of a batch: free its room, wait ``delay``, ask for the
        same room again; the room admitted, 0 if halted or stopped meanwhile."""
        self._free(name)
        if halt.wait(delay) or self._halted(halt):
            return 0
        cap, most = self._limits()
        return self._wait_for_room(name, width, cap, most, halt)

    def _wait_for_room(
        self, name: str, width: int, cap: int, most: int, halt: threading.Event
    ) -> int:
        """Queue for ``width`` partitions; the room admitted (at most ``cap``), or 0 if
        halted or stopped while waiting."""
        adm = self._admission
        with self._cv:
            adm.capacity, adm.max_pipelines = cap, most
            adm.ask(name, width)
            self._changes += 1
        gone = False
        check_at = time.monotonic() + 1.0
        while True:
            with self._cv:
                if adm.admit():
                    self._changes += 1
                    self._cv.notify_all()
                admitted = adm.running.get(name, 0)
                done = bool(admitted) or gone or self._halted(halt)
                if done and not admitted:
                    adm.withdraw(name)
                    self._changes += 1
                change = self._changes
            self._publish(change)
            if done:
                return admitted
            if time.monotonic() >= check_at:  # a catalog read: not under the lock
                check_at = time.monotonic() + 1.0
                gone = not self._still_running(name)
                continue
            with self._cv:
                if name not in adm.running and not self._halted(halt):
                    self._cv.wait(0.2)

    def _free(self, name: str) -> None:
        with self._cv:
            self._admission.release(name)
            self._admission.admit()
            self._changes += 1
            change = self._changes
            self._cv.notify_all()
        self._publish(change)

    def _publish(self, change: int, *, beat: bool = False) -> None:
        """Best effort, outside the admission's lock: note the admission's state (as of
        now, at least as new as ``change``) for ``status`` in any process, if it differs
        from the state noted last or (``beat``) the last note is getting old."""
        with self._note_lock:
            due = beat and time.time() - self._noted_at >= HEARTBEAT_S
            if change <= self._noted[0] and not due:
                return  # a newer state was noted already
            with self._cv:
                adm = self._admission
                latest = self._changes
                state = {
                    "capacity": adm.capacity,
                    "running": dict(adm.running),
                    "waiting": adm.waiting,
                }
            if state != self._noted[1] or due:
                try:
                    now = time.time()
                    note = json.dumps({"at": now, **state}, sort_keys=True)
                    self.rt.catalog.notes.put(f"{NOTE}:{self.leases.me}", note)
                    self._noted_at = now
                except Exception as e:  # best effort: status shows less, batches go on
                    log.debug("could not note the scheduler's state: %s", e)
                    return
            self._noted = (latest, state)

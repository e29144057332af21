"""This engine's pipeline leases (``catalog.leases``): the scheduler runs a pipeline only
while it holds the pipeline's lease, and checks it again just before each commit.

Promises:

- a worker of the scheduler starts no batch of a pipeline whose lease it cannot take; it
  tries again every ``poll_s`` (a quarter of the lease, at most 1 s), so an engine takes
  over a dead engine's pipelines within the lease's time-to-live plus one poll;
- a held lease is renewed every third of its time-to-live, batches running or not; a
  renewal that fails (the lease was taken) drops it at once;
- :meth:`Keeper.fence` renews the lease in the catalog (one transaction) right before the
  batch's commit and raises :class:`LeaseLostError` if it is no longer this engine's with
  the same token; its answer (engine and token) goes into the commit's metadata, so the
  table's log says which engine and lease made each batch. An engine paused past its
  expiry (SIGSTOP, a stalled VM) therefore commits nothing once it resumes, unless the
  pause falls in the instant between the fence and the commit, where the destination's
  own check (batch ids per pipeline) still keeps every record exactly once;
- a clean stop or halt releases the lease, so another engine need not wait for it.

``pipelines_lease_ttl_ms`` (``SET GLOBAL``, default 10 s) sets the time-to-live.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable

from sparkpipes.catalog import Catalog
from sparkpipes.errors import CatalogError, LeaseLostError

log = logging.getLogger("sparkpipes.engine")


def engine_id() -> str:
    """``host:pid:random``: unique among the engines sharing a catalog."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"


class Keeper:
    def __init__(self, catalog: Catalog, ttl_s: Callable[[], float], me: str | None = None):
        self.catalog = catalog
        self.me = me or engine_id()
        self._ttl_s = ttl_s
        self._held: dict[str, tuple[int, float]] = {}  # pipeline id → (token, renewed at)
        self._lock = threading.Lock()

    @property
    def ttl_s(self) -> float:
        return self._ttl_s()

    @property
    def poll_s(self) -> float:
        return min(self.ttl_s / 4, 1.0)

    def token(self, pipeline_id: str) -> int | None:
        with self._lock:
            held = self._held.get(pipeline_id)
        return held[0] if held else None

    def hold(self, pipeline_id: str) -> bool:
        """Whether this engine holds the lease now (taking it if it is free)."""
        if self.token(pipeline_id) is not None:
            return True
        try:
            token = self.catalog.leases.acquire(pipeline_id, self.me, self.ttl_s)
        except CatalogError as e:
            log.warning("lease of pipeline %s: %s", pipeline_id, e)
            return False
        if token is None:
            return False
        with self._lock:
            self._held[pipeline_id] = (token, time.monotonic())
        log.info("engine %s holds pipeline %s (lease token %d)", self.me, pipeline_id, token)
        return True

    def fence(self, pipeline_id: str, pipeline: str) -> dict[str, str]:
        """Renew now; the commit's metadata, or LeaseLostError."""
        token = self.token(pipeline_id)
        if token is None or not self._renew(pipeline_id, token):
            raise LeaseLostError(
                f"engine {self.me} lost the lease of the pipeline (another engine runs it "
                "now); this batch is not committed",
                pipeline=pipeline,
            )
        return {"sparkpipes.engine": self.me, "sparkpipes.lease": str(token)}

    def _renew(self, pipeline_id: str, token: int) -> bool:
        ok = self.catalog.leases.renew(pipeline_id, self.me, token, self.ttl_s)
        with self._lock:
            if ok:
                self._held[pipeline_id] = (token, time.monotonic())
            elif self._held.get(pipeline_id, (None,))[0] == token:
                del self._held[pipeline_id]
        if not ok:
            log.warning("engine %s lost the lease of pipeline %s", self.me, pipeline_id)
        return ok

    def renew_due(self) -> None:
        """Renew every lease last renewed a third of its time-to-live ago or more, and
        with them those half-way there: leases taken at different times fall into step,
        so the renewals of many pipelines come together, in one transaction."""
        third = self.ttl_s / 3
        now = time.monotonic()
        with self._lock:
            ages = {pid: (token, now - at) for pid, (token, at) in self._held.items()}
        if not any(age >= third for _, age in ages.values()):
            return
        due = [(pid, token) for pid, (token, age) in ages.items() if age >= third / 2]
        if not due:
            return
        sent = time.monotonic()
        try:  # one transaction for all of them
            kept = self.catalog.leases.renew_many(dict(due), self.me, self.ttl_s)
        except CatalogError as e:  # kept until they expire; the fence decides
            log.warning("could not renew the leases of %d pipelines: %s", len(due), e)
            return
        with self._lock:
            for pid, token in due:
                if pid in kept and self._held.get(pid, (None,))[0] == token:
                    self._held[pid] = (token, sent)  # not one released meanwhile
                elif self._held.get(pid, (None,))[0] == token:
                    del self._held[pid]
        for pid, _ in due:
            if pid not in kept:
                log.warning("engine %s lost the lease of pipeline %s", self.me, pid)

    def due_in_s(self) -> float:
        """Seconds until the next renewal is due; a lease taken meanwhile is due a third
        of the time-to-live after it was taken, so that long at most."""
        third = self.ttl_s / 3
        now = time.monotonic()
        with self._lock:
            renewed = [at for _, at in self._held.values()]
        return max(0.0, min((at + third - now for at in renewed), default=third))

    def release(self, pipeline_id: str) -> None:
        with self._lock:
            held = self._held.pop(pipeline_id, None)
        if held is None:
            return
        try:
            self.catalog.leases.release(pipeline_id, self.me, held[0])
        except CatalogError as e:  # it expires on its own
            log.warning("could not release the lease of pipeline %s: %s", pipeline_id, e)

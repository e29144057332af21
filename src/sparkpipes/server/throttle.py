"""What a failed sign-in costs, on every surface of ``sparkpipes serve`` (HTTP Basic,
``POST /api/login``, the console's login form, the MySQL handshake).

:class:`Throttle` backs off per user name and per client address: the first ``FREE``
failures of a key cost nothing more, then every attempt is refused at once (HTTP 429 with
``Retry-After``, MySQL error 1045 saying to wait) for ``FIRST_WAIT_S``, doubling with each
further failure up to ``MAX_WAIT_S``. An address that keeps trying while it is refused stays
refused (each refused try renews its wait), so hammering never gets through faster than
waiting. A success clears the user's and the address's failures; failures are forgotten
``FORGET_S`` after the last one. A name that does not exist is counted like one that does,
so the answers never tell names apart. The state lives in memory (a restart forgets it) and
is bounded (``MAX_KEYS``).

:class:`Hasher` runs the password checks (scrypt, ~16 MiB and tens of milliseconds each) on
a small pool of their own, with at most ``MAX_PENDING`` waiting: a flood of wrong passwords
queues there, never on the threads that serve signed-in requests, and past that bound a
sign-in is refused at once rather than queued.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

FREE = 5
FIRST_WAIT_S = 1.0
MAX_WAIT_S = 300.0
FORGET_S = 900.0
MAX_KEYS = 10_000
#: password checks at once, and waiting at most, before sign-ins are refused outright
HASH_THREADS = max(1, min(4, (os.cpu_count() or 2) // 2))
MAX_PENDING = 64

T = TypeVar("T")


@dataclass
class _Key:
    failures: int = 0
    last: float = 0.0
    until: float = 0.0


class Throttle:
    """Failed sign-ins per user name and per client address (thread-safe)."""

    def __init__(
        self,
        *,
        free: int = FREE,
        first_wait_s: float = FIRST_WAIT_S,
        max_wait_s: float = MAX_WAIT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free, self.first_wait_s, self.max_wait_s = free, first_wait_s, max_wait_s
        self._clock = clock
        self._keys: dict[tuple[str, str], _Key] = {}
        self._lock = threading.Lock()

    def wait_s(self, user: str, address: str) -> float:
        """Seconds before ``user`` may try again from ``address`` (0: now). A refused
        address that asks again keeps waiting (its wait is renewed)."""
        now = self._clock()
        with self._lock:
            keys = [self._get(k, now) for k in _keys(user, address)]
            left = max((k.until - now for k in keys if k is not None), default=0.0)
            by_address = keys[1]
            if left > 0 and by_address is not None and by_address.until > now:
                by_address.until = max(by_address.until, now + self.first_wait_s)
        return max(left, 0.0)

    def failed(self, user: str, address: str) -> None:
        """A wrong password (or unknown name) for ``user`` from ``address``."""
        now = self._clock()
        with self._lock:
            if len(self._keys) >= MAX_KEYS:
                self._prune(now)
            for key in _keys(user, address):
                k = self._get(key, now) or self._keys.setdefault(key, _Key())
                k.failures += 1
                k.last = now
                if k.failures >= self.free:
                    wait = self.first_wait_s * 2 ** min(k.failures - self.free, 32)
                    k.until = now + min(wait, self.max_wait_s)

    def succeeded(self, user: str, address: str) -> None:
        with self._lock:
            for key in _keys(user, address):
                self._keys.pop(key, None)

    def _get(self, key: tuple[str, str], now: float) -> _Key | None:
        k = self._keys.get(key)
        if k is not None and now - k.last > FORGET_S and k.until <= now:
            del self._keys[key]
            return None
        return k

    def _prune(self, now: float) -> None:
        for key in [key for key, k in self._keys.items() if k.until <= now]:
            del self._keys[key]
        if len(self._keys) >= MAX_KEYS:  # all refused right now: keep the newest half
            newest = sorted(self._keys.items(), key=lambda kv: kv[1].last)[MAX_KEYS // 2 :]
            self._keys = dict(newest)


def _keys(user: str, address: str) -> tuple[tuple[str, str], tuple[str, str]]:
    return ("user", user[:256]), ("address", address)


def retry_after(wait_s: float) -> str:
    """``wait_s`` as a ``Retry-After`` value (whole seconds, at least 1)."""
    return str(max(1, math.ceil(wait_s)))


class Busy(Exception):
    """More password checks are waiting than :data:`MAX_PENDING`."""


class Hasher:
    """Password checks on their own bounded pool (see the module's docstring)."""

    def __init__(self, threads: int = HASH_THREADS, max_pending: int = MAX_PENDING) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="sparkpipes-scrypt")
        self._slots = threading.BoundedSemaphore(max_pending)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the pool; :class:`Busy` at once when too many wait."""
        if not self._slots.acquire(blocking=False):
            raise Busy("too many sign-ins at once")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        finally:
            self._slots.release()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

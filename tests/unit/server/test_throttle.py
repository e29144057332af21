"""Back-off on failed sign-ins and the bounded pool of password checks, with real time
(short waits) and real threads."""

from __future__ import annotations

import asyncio
import threading
import time

from sparkpipes.server.throttle import Busy, Hasher, Throttle, retry_after

WAIT = 0.2


def throttle() -> Throttle:
    return Throttle(free=3, first_wait_s=WAIT, max_wait_s=4 * WAIT)


def test_a_few_failures_are_free_then_each_costs_a_growing_wait():
    t = throttle()
    for _ in range(2):
        t.failed("ana", "10.0.0.1")
        assert t.wait_s("ana", "10.0.0.1") == 0
    t.failed("ana", "10.0.0.1")
    first = t.wait_s("ana", "10.0.0.1")
    assert 0 < first <= WAIT
    time.sleep(first + 0.05)
    assert t.wait_s("ana", "10.0.0.1") == 0
    t.failed("ana", "10.0.0.1")
    assert WAIT < t.wait_s("ana", "10.0.0.1") <= 2 * WAIT  # doubled
    for _ in range(10):
        t.failed("ana", "10.0.0.1")
    assert t.wait_s("ana", "10.0.0.2") <= 4 * WAIT  # capped


def test_the_name_and_the_address_back_off_separately():
    t = throttle()
    for i in range(3):
        t.failed("ana", f"10.0.0.{i}")  # one name from many addresses
    assert t.wait_s("ana", "10.9.9.9") > 0 and t.wait_s("bo", "10.0.0.1") == 0
    for name in ("a", "b", "c"):
        t.failed(name, "10.0.1.1")  # many names from one address
    assert t.wait_s("zed", "10.0.1.1") > 0 and t.wait_s("zed", "10.0.1.2") == 0


def test_an_address_that_keeps_trying_keeps_waiting_and_a_success_clears_it():
    t = throttle()
    for _ in range(3):
        t.failed("ana", "10.0.0.1")
    deadline = time.monotonic() + 3 * WAIT
    while time.monotonic() < deadline:  # hammering: never let in
        assert t.wait_s("ana", "10.0.0.1") > 0
        time.sleep(WAIT / 4)
    time.sleep(WAIT + 0.05)
    assert t.wait_s("ana", "10.0.0.1") == 0
    t.failed("ana", "10.0.0.1")
    t.succeeded("ana", "10.0.0.1")
    assert t.wait_s("ana", "10.0.0.1") == 0
    t.failed("ana", "10.0.0.1")
    assert t.wait_s("ana", "10.0.0.1") == 0  # counting starts again


def test_retry_after_is_whole_seconds_at_least_one():
    assert retry_after(0.01) == "1" and retry_after(1.0) == "1" and retry_after(1.2) == "2"


def test_password_checks_queue_on_their_own_bounded_pool():
    hasher = Hasher(threads=1, max_pending=3)
    release = threading.Event()
    names: list[str] = []

    def check() -> str:
        names.append(threading.current_thread().name)
        release.wait(10)
        return "checked"

    async def flood() -> list[object]:
        calls = [asyncio.ensure_future(hasher.run(check)) for _ in range(5)]
        await asyncio.sleep(0.2)
        # the event loop stays free meanwhile, and the pool is not the loop's own
        loop_pool = await asyncio.to_thread(threading.current_thread)
        release.set()
        return [loop_pool, *(await asyncio.gather(*calls, return_exceptions=True))]

    try:
        loop_pool, *answers = asyncio.run(flood())
    finally:
        hasher.close()
    assert answers.count("checked") == 3
    assert [type(a) for a in answers if a != "checked"] == [Busy, Busy]
    assert set(names) == {"sparkpipes-scrypt_0"} and loop_pool.name != "sparkpipes-scrypt_0"

"""The catalog under the scheduler's load: batches of several pipelines recorded from
several threads at once, beside a second engine (``sparkpipes status`` in another
process) reading and noting, on SQLite (no "database is locked") and on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import threading

import pytest

from sparkpipes.catalog import Catalog
from tests.integration.databases import pg_database


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'catalog.db'}"
        return
    with pg_database() as url:
        yield url


def test_batches_of_several_pipelines_recorded_at_once(url, monkeypatch):
    monkeypatch.setenv("SPARKPIPES_SECRET_KEY", "a passphrase for the test")
    scheduler, status = Catalog(url), Catalog(url)  # two engines on one catalog
    names = [f"p{i}" for i in range(4)]
    for n in names:
        scheduler.pipelines.create(n, f"id-{n}", "kafka", "t", {}, {}, "Running")
    failures: list[BaseException] = []

    def pipeline(name: str) -> None:  # what one worker thread writes per batch
        try:
            for b in range(1, 26):
                scheduler.pipelines.get(name)
                scheduler.batches.record(
                    pipeline_id=f"id-{name}",
                    pipeline_name=name,
                    batch_id=b,
                    attempt=1,
                    state="Succeeded",
                    started_at=dt.datetime.now(),
                    partitions=[{"partition": str(p), "rows": 10} for p in range(4)],
                    offsets={"0": b},
                )
                scheduler.batches.replace_errors(
                    f"id-{name}", name, b, [{"partition": 0, "reason": "x"}]
                )
                scheduler.pipelines.update(name, last_error=None)
                scheduler.notes.put("scheduler", json.dumps({"running": {name: b}}))
        except BaseException as e:
            failures.append(e)

    def reader() -> None:  # `sparkpipes status` meanwhile
        try:
            while any(t.is_alive() for t in threads):
                status.pipelines.all()
                status.batches.list()
                status.notes.get("scheduler")
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=pipeline, args=(n,)) for n in names]
    for t in threads:
        t.start()
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in [*threads, watcher]:
        t.join()
    assert failures == []
    for n in names:
        assert [b["batch_id"] for b in status.batches.list(f"id-{n}")] == list(range(1, 26))
        assert len(status.batches.errors(f"id-{n}")) == 25
    assert json.loads(status.notes.get("scheduler"))["running"].popitem()[1] == 25
    scheduler.close()
    status.close()


def test_two_engines_setting_one_variable_at_once(url, monkeypatch):
    """SET GLOBAL from two engines sharing the catalog: never a unique violation (as the
    delete-then-insert it once was gave on PostgreSQL); the last value stands."""
    monkeypatch.setenv("SPARKPIPES_SECRET_KEY", "a passphrase for the test")
    engines = [Catalog(url), Catalog(url)]
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def setter(cat: Catalog, tag: str) -> None:
        try:
            start.wait()
            for i in range(40):
                cat.variables.set(f"v{i % 3}", f"{tag}{i}")
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=setter, args=(c, t)) for c, t in zip(engines, "ab")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    values = engines[0].variables.all()
    assert {values[f"v{i}"][1:] for i in range(3)} == {"39", "37", "38"}
    for c in engines:
        c.close()


def test_leases_give_each_pipeline_one_holder_with_rising_tokens(url, monkeypatch):
    import time

    monkeypatch.setenv("SPARKPIPES_SECRET_KEY", "a passphrase for the test")
    a, b = Catalog(url), Catalog(url)  # two engines on one catalog
    a.pipelines.create("p", "id-p", "kafka", "t", {}, {}, "Running")
    won: list[tuple[str, int | None]] = []
    barrier = threading.Barrier(8)

    def race(cat: Catalog, who: str) -> None:
        barrier.wait()
        won.append((who, cat.leases.acquire("id-p", who, 30.0)))

    threads = [
        threading.Thread(target=race, args=(cat, f"e{i}"))
        for i, cat in enumerate([a, b, a, b, a, b, a, b])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    holders = [(who, tok) for who, tok in won if tok is not None]
    assert len(holders) == 1 and holders[0][1] == 1, won
    first = holders[0][0]
    assert a.leases.acquire("id-p", first, 30.0) == 1  # its own: extended, same token
    assert b.leases.acquire("id-p", "other", 30.0) is None
    assert a.leases.all()["id-p"].holder == first and a.leases.all()["id-p"].held

    assert a.leases.acquire("id-p", first, 0.3) == 1  # now expiring soon
    time.sleep(0.6)
    assert b.leases.acquire("id-p", "other", 30.0) == 2  # taken over: a larger token
    assert not a.leases.renew("id-p", first, 1, 30.0)  # the old holder learns it lost it
    assert b.leases.renew("id-p", "other", 2, 30.0)
    b.leases.release("id-p", "other", 2)
    assert not a.leases.all()["id-p"].held
    assert a.leases.acquire("id-p", first, 30.0) == 3  # never back to an old token
    a.pipelines.drop("p")
    assert "id-p" not in a.leases.all()
    a.close()
    b.close()


def test_a_postgresql_catalog_session_cannot_sit_in_a_transaction_for_ever():
    import sqlalchemy as sa

    from sparkpipes.catalog.store import IDLE_TX_MS

    with pg_database() as url:
        cat = Catalog(url)
        with cat.engine.connect() as c:
            shown = c.execute(sa.text("SHOW idle_in_transaction_session_timeout")).scalar()
        cat.close()
    assert shown == f"{IDLE_TX_MS // 1000}s"

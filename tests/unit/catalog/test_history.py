"""Bounded history: batches, errors and maintenance records are pruned to their retention
while the rows a pipeline has loaded never go down."""

import datetime as dt

import pytest

from sparkpipes.catalog import Catalog, history


@pytest.fixture
def cat(tmp_path):
    c = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    yield c
    c.close()


def _batches(cat, pipeline_id, ids, *, rows=10, state="Succeeded"):
    start = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    for b in ids:
        for attempt in (1, 2) if b % 7 == 0 else (1,):  # some batches were retried
            cat.batches.record(
                pipeline_id=pipeline_id,
                pipeline_name="p",
                batch_id=b,
                attempt=attempt,
                state=state if attempt > 1 or b % 7 else "Failed",
                started_at=start,
                rows=rows,
                nbytes=100,
            )


def test_pruning_keeps_the_newest_batches_and_the_loaded_total(cat):
    _batches(cat, "id1", range(1, 51))
    _batches(cat, "id2", range(1, 6))
    before = cat.batches.loaded("id1")
    deleted = cat.history.prune("id1", keep_batches=10, errors_before=dt.datetime(2000, 1, 1))
    left = cat.batches.list("id1")
    assert sorted({b["batch_id"] for b in left}) == list(range(41, 51))
    assert deleted == 40 + len([b for b in range(1, 41) if b % 7 == 0])  # retried: 2 rows
    assert cat.batches.loaded("id1") == before  # 50 succeeded batches of 10 rows: 500
    assert before[0] == 500
    assert cat.history.pruned("id1")[:2] == (40, 400)
    assert len(cat.batches.list("id2")) == 5  # another pipeline's history is its own
    # pruning again adds nothing twice
    cat.history.prune("id1", keep_batches=10, errors_before=dt.datetime(2000, 1, 1))
    assert cat.batches.loaded("id1")[0] == 500
    _batches(cat, "id1", range(51, 61))
    cat.history.prune("id1", keep_batches=10, errors_before=dt.datetime(2000, 1, 1))
    assert cat.batches.loaded("id1")[0] == 600
    assert cat.history.pruned("id1")[:2] == (50, 500)
    cat.batches.drop_history("id1")
    assert cat.batches.loaded("id1") == (0, None)


def test_errors_are_kept_for_their_retention(cat):
    cat.batches.replace_errors("id1", "p", 1, [{"partition": "0", "offset": 1, "reason": "old"}])
    edge = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(seconds=1)
    cat.batches.replace_errors("id1", "p", 2, [{"partition": "0", "offset": 2, "reason": "new"}])
    cat.history.prune("id1", keep_batches=1000, errors_before=edge - dt.timedelta(hours=1))
    assert [e["reason"] for e in cat.batches.errors("id1")] == ["old", "new"]
    cat.history.prune("id1", keep_batches=1000, errors_before=edge)
    left = [e["reason"] for e in cat.batches.errors("id1")]
    assert "old" not in left


def test_maintenance_records_are_bounded_per_table(cat, monkeypatch):
    monkeypatch.setattr(history, "MAINTENANCE_TO_KEEP", 5)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    for i in range(12):
        for table in ("a", "b"):
            cat.history.record(
                table_name=table,
                operation="COMPACT" if i % 2 else "VACUUM",
                trigger="auto",
                started_at=now + dt.timedelta(seconds=i),
                duration_ms=i,
                files_removed=i,
                files_added=1,
            )
    a = cat.history.maintenance("a")
    assert [m["duration_ms"] for m in a] == [7, 8, 9, 10, 11]
    assert len(cat.history.maintenance("b")) == 5
    assert [m["duration_ms"] for m in cat.history.maintenance("a", last=2)] == [10, 11]
    assert cat.history.last_done("a", "VACUUM") == now + dt.timedelta(seconds=10)
    assert cat.history.last_done("a", "CLUSTER") is None

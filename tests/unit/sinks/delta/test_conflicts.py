"""Several writers committing to one Delta table at once (pipelines loading one table):
a commit that loses the race is started again from a fresh snapshot, with the
exactly-once check, and neither loses nor duplicates a batch."""

import threading

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkpipes.errors import SinkError
from sparkpipes.sinks import BatchCommit, Committed, DeltaSink
from sparkpipes.sinks.delta import commits
from sparkpipes.sinks.delta import sink as delta_mod
from sparkpipes.sinks.delta.sink import Upsert

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def batch(app_id, batch_id, offsets):
    return BatchCommit(app_id, "p", batch_id, offsets)


@pytest.fixture
def sinks(tmp_path):
    """Two pipelines' sinks on one table."""
    first = DeltaSink(str(tmp_path / "t"), SCHEMA, "t")
    first.create()
    return first, DeltaSink(str(tmp_path / "t"), SCHEMA, "t")


@pytest.fixture
def no_rebase(monkeypatch):
    """delta-rs rebases a lost append by itself; without that, every race is a conflict
    (what a MERGE beside an append always is)."""
    monkeypatch.setattr(delta_mod, "DELTA_RS_RETRIES", 0)
    monkeypatch.setattr(commits, "CONFLICT_PAUSE_S", 0.001)


def racing(monkeypatch, sink, other_commits):
    """Make ``sink`` read its snapshot, then let another writer commit before it does
    (``other_commits(n)`` for the n-th snapshot taken); returns the snapshots taken."""
    real = sink._table
    taken = []

    def table():
        dt = real()
        taken.append(dt.version())
        other_commits(len(taken))
        return dt

    monkeypatch.setattr(sink, "_table", table)
    return taken


def ids(sink):
    return sorted(DeltaTable(sink.uri).to_pyarrow_table().column("id").to_pylist())


def test_a_commit_that_lost_the_race_is_made_again_from_a_fresh_snapshot(
    sinks, no_rebase, monkeypatch
):
    a, b = sinks
    theirs = b.write_file(pa.table({"id": [2], "s": ["b"]}), "b1")

    def b_commits_first(n):
        if n == 1:
            assert b.commit([theirs], batch("b", 1, {"0": 1}))

    taken = racing(monkeypatch, a, b_commits_first)
    mine = a.write_file(pa.table({"id": [1], "s": ["a"]}), "a1")
    assert a.commit([mine], batch("a", 1, {"0": 1}))
    assert taken == [0, 1]  # the first snapshot lost; the second was fresh
    assert ids(a) == [1, 2]
    assert a.committed("a") == Committed(1, {"0": 1})
    assert b.committed("b") == Committed(1, {"0": 1})


def test_a_batch_another_writer_committed_meanwhile_is_a_replay(sinks, no_rebase, monkeypatch):
    """The same pipeline's batch committed by another writer (a second engine): the
    retry finds it in the table and adds nothing."""
    a, b = sinks
    theirs = b.write_file(pa.table({"id": [1], "s": ["x"]}), "a1")

    def same_batch_first(n):
        if n == 1:
            assert b.commit([theirs], batch("a", 1, {"0": 1}))

    racing(monkeypatch, a, same_batch_first)
    mine = a.write_file(pa.table({"id": [1], "s": ["x"]}), "a1")
    assert not a.commit([mine], batch("a", 1, {"0": 1}))
    assert ids(a) == [1]
    assert DeltaTable(a.uri).transaction_version("a") == 1


def test_conflicts_that_persist_fail_the_commit_as_a_transient_error(sinks, no_rebase, monkeypatch):
    a, b = sinks

    def b_always_first(n):
        assert b.commit([], batch("b", n, {"0": n}))

    taken = racing(monkeypatch, a, b_always_first)
    mine = a.write_file(pa.table({"id": [1], "s": ["a"]}), "a1")
    attempts = f"{commits.COMMIT_ATTEMPTS} attempts"
    with pytest.raises(SinkError, match=rf"commit to Delta table .t. failed.*{attempts}") as e:
        a.commit([mine], batch("a", 1, {"0": 1}))
    assert e.value.transient
    assert len(taken) == commits.COMMIT_ATTEMPTS
    assert a.committed("a") is None and ids(a) == []


def test_an_insert_beside_a_pipeline_is_retried_too(sinks, no_rebase, monkeypatch):
    a, b = sinks

    def b_commits_first(n):
        if n == 1:
            b.commit([], batch("b", 1, {"0": 1}))

    racing(monkeypatch, a, b_commits_first)
    a.commit_files([a.write_file(pa.table({"id": [7], "s": ["i"]}), "ins")], operation="INSERT")
    assert ids(a) == [7]


def test_four_pipelines_committing_at_once_lose_and_duplicate_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(delta_mod, "DELTA_RS_RETRIES", 2)  # conflicts reach the sink's loop
    uri = str(tmp_path / "t")
    DeltaSink(uri, SCHEMA, "t").create()
    failures = []

    def pipeline(app: str) -> None:
        sink = DeltaSink(uri, SCHEMA, "t")
        for b in range(1, 16):
            f = sink.write_file(pa.table({"id": [ord(app) * 1000 + b], "s": [app]}), f"b{b}")
            try:
                assert sink.commit([f], batch(app, b, {"0": b}))
            except Exception as e:  # pragma: no cover - the assertion below names it
                failures.append(e)

    threads = [threading.Thread(target=pipeline, args=(app,)) for app in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    want = sorted(ord(app) * 1000 + b for app in "abcd" for b in range(1, 16))
    assert ids(DeltaSink(uri, SCHEMA, "t")) == want
    dt = DeltaTable(uri)
    assert [dt.transaction_version(app) for app in "abcd"] == [15] * 4


def test_a_merge_another_writer_appended_beside_is_run_again(tmp_path, engine, monkeypatch):
    """delta-rs cannot rebase a MERGE over an append made since its snapshot (the rows
    it matched may have changed): with its own retries left, it still fails; the sink
    runs the MERGE again from a fresh snapshot."""
    uri = str(tmp_path / "t")
    upsert = DeltaSink(
        uri,
        SCHEMA,
        "t",
        strategy=Upsert(("id",), "replace"),
        staged_schema=SCHEMA,
        scratch=str(tmp_path / "scratch"),
        spark=lambda: engine.spark,
    )
    upsert.create()
    other = DeltaSink(uri, SCHEMA, "t")
    first = other.write_file(pa.table({"id": [1], "s": ["old"]}), "o1")
    assert other.commit([first], batch("other", 1, {"0": 1}))
    theirs = other.write_file(pa.table({"id": [2], "s": ["theirs"]}), "o2")

    def other_appends_first(n):
        if n == 1:
            assert other.commit([theirs], batch("other", 2, {"0": 2}))

    taken = racing(monkeypatch, upsert, other_appends_first)
    staged = upsert.writer().write(pa.table({"id": [1, 3], "s": ["new", "ins"]}), "u1")
    assert upsert.commit([staged], batch("u", 1, {"0": 2}))
    assert taken == [1, 2]
    rows = DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "s": "new"}, {"id": 2, "s": "theirs"}, {"id": 3, "s": "ins"}]
    assert upsert.committed("u") == Committed(1, {"0": 2})

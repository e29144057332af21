"""The Delta sink's half of the commit protocol, on a real delta-rs table."""

import itertools
import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkpipes.sinks import BatchCommit, Committed, DeltaSink
from sparkpipes.sinks.delta.sink import CommitConflict, TableChanged

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def batch(app_id, batch_id, offsets):
    return BatchCommit(app_id, "p", batch_id, offsets)


@pytest.fixture
def sink(tmp_path):
    s = DeltaSink(str(tmp_path / "t"), SCHEMA, "t")
    s.create()
    return s


def test_files_are_invisible_until_the_one_commit(sink):
    f1 = sink.write_file(pa.table({"id": [1, 2], "s": ["a", "b"]}), "part-b1-p0")
    f2 = sink.write_file(pa.table({"id": [3], "s": ["c"]}), "part-b1-p1")
    assert DeltaTable(sink.uri).to_pyarrow_table().num_rows == 0
    assert json.loads(f1.stats)["numRecords"] == 2
    assert json.loads(f1.stats)["minValues"] == {"id": 1, "s": "a"}
    assert sink.commit([f1, f2], batch("a", 1, {"0": 2, "1": 1}))
    dt = DeltaTable(sink.uri)
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
    assert dt.transaction_version("a") == 1
    assert sink.committed("a") == Committed(1, {"0": 2, "1": 1})


def test_a_replayed_batch_is_skipped(sink):
    f = sink.write_file(pa.table({"id": [1], "s": ["a"]}), "p")
    assert sink.commit([f], batch("a", 1, {"0": 1}))
    again = sink.write_file(pa.table({"id": [1], "s": ["a"]}), "p")
    assert not sink.commit([again], batch("a", 1, {"0": 1}))
    assert DeltaTable(sink.uri).to_pyarrow_table().num_rows == 1
    assert sink.commit([], batch("a", 2, {"0": 1, "1": 0}))  # offsets only
    assert sink.committed("a") == Committed(2, {"0": 1, "1": 0})


def test_the_table_wins_over_a_stale_catalog_hint(sink):
    for b in (1, 2, 3):
        sink.commit([], batch("a", b, {"0": b * 10}))
        sink.commit([], batch("other", b, {"0": -b}))
    assert sink.committed("a", hint=Committed(2, {"0": 20})) == Committed(3, {"0": 30})
    assert sink.committed("a", hint=Committed(3, {"0": 30})) == Committed(3, {"0": 30})
    assert sink.committed("nobody") is None


def test_files_of_a_table_whose_columns_changed_are_not_committed(sink):
    """A writer set up before ALTER TABLE (in another process) must not add files of the
    old shape: a transient error, so that the pipeline is assembled again."""
    stale = DeltaSink(sink.uri, SCHEMA, "t")
    wider = pa.schema([*SCHEMA, ("c", pa.string())])
    f = sink.write_file(pa.table({"id": [1], "s": ["a"]}), "p")
    DeltaSink(sink.uri, wider, "t").replace_all([], operation="ADD COLUMN c")
    with pytest.raises(TableChanged, match="columns are now id, s, c") as err:
        stale.commit([f], batch("a", 1, {"0": 1}))
    assert err.value.transient
    assert DeltaTable(sink.uri).transaction_version("a") is None
    stale.commit([], batch("a", 1, {"0": 1}))  # no files: offsets alone are fine


def test_replacing_on_a_snapshot_that_moved_on_is_refused(sink):
    snapshot = DeltaTable(sink.uri)
    sink.commit([sink.write_file(pa.table({"id": [1], "s": ["a"]}), "p")], batch("a", 1, {}))
    with pytest.raises(CommitConflict, match=r"changed .*while being rewritten"):
        sink.replace_all([], operation="REWRITE", snapshot=snapshot)
    assert DeltaTable(sink.uri).to_pyarrow_table().num_rows == 1
    sink.replace_all([], operation="REWRITE", snapshot=DeltaTable(sink.uri))
    assert DeltaTable(sink.uri).to_pyarrow_table().num_rows == 0


def test_files_older_than_a_vacuum_could_spare_are_not_committed(sink):
    """A batch whose data files were written longer ago than MAX_UNCOMMITTED_AGE_S does
    not commit them (a vacuum may have deleted them meanwhile): a transient error, the
    batch is loaded again into new files."""
    import dataclasses
    import time

    from sparkpipes.errors import SinkError
    from sparkpipes.sinks.delta.sink import MAX_UNCOMMITTED_AGE_S

    f = sink.write_file(pa.table({"id": [1], "s": ["a"]}), "p")
    old = dataclasses.replace(
        f, modification_time=int((time.time() - MAX_UNCOMMITTED_AGE_S - 60) * 1000)
    )
    with pytest.raises(SinkError, match="written 31 minutes ago") as e:
        sink.commit([old], batch("a", 1, {"0": 1}))
    assert e.value.transient
    assert DeltaTable(sink.uri).version() == 0
    with pytest.raises(SinkError, match="vacuum may remove them"):
        sink.commit_files([old])
    assert sink.commit([f], batch("a", 1, {"0": 1}))
    assert DeltaTable(sink.uri).to_pyarrow_table().num_rows == 1


def test_the_last_batch_is_read_afresh_after_other_writers_and_a_trimmed_log(sink):
    """``committed`` keeps the table it read while nothing came after it: what another
    writer (a second engine) commits afterwards is seen, and so is the table after its
    log was trimmed past the kept version (it is then loaded again)."""
    from sparkpipes.sinks.delta.maintenance import trim_log

    assert sink.committed("a") is None
    other = DeltaSink(sink.uri, SCHEMA, "t")
    assert other.commit([], batch("a", 1, {"0": 10}))
    assert sink.committed("a") == Committed(1, {"0": 10})
    for b in range(2, 12):
        assert other.commit([], batch("a", b, {"0": b * 10}))
        if b in (6, 10):
            DeltaTable(sink.uri).create_checkpoint()
    assert trim_log(sink.uri, 1, min_age_s=0).removed > 0
    assert not os.path.exists(os.path.join(sink.uri, "_delta_log", f"{3:020d}.json"))
    assert sink.committed("a") == Committed(11, {"0": 110})
    assert sink.committed("a", hint=Committed(11, {"0": 110})) == Committed(11, {"0": 110})


def test_a_steady_pipeline_commits_on_its_own_last_commit_without_loading(sink, monkeypatch):
    """While only this sink commits, the table it committed on last is its next snapshot:
    neither ``committed`` nor the commit loads the table again, and what it reads is the
    commit it made (``_table`` wrapped, not replaced, to count the loads)."""
    sink.committed("a")
    loads = []
    real = sink._table
    monkeypatch.setattr(sink, "_table", lambda: loads.append(1) or real())
    for b in range(1, 6):
        assert sink.committed("a", hint=None) == (Committed(b - 1, {"0": b - 1}) if b > 1 else None)
        f = sink.write_file(pa.table({"id": [b], "s": ["x"]}), f"part-b{b}")
        assert sink.commit([f], batch("a", b, {"0": b}))
    assert loads == []
    assert sink.committed("a") == Committed(5, {"0": 5})
    assert sorted(DeltaTable(sink.uri).to_pyarrow_table().column("id").to_pylist()) == [
        1,
        2,
        3,
        4,
        5,
    ]


def test_a_kept_snapshot_that_another_writer_overtook_commits_nothing_twice(sink, monkeypatch):
    """If a second engine commits the same batch after the kept snapshot was judged fresh
    (a race the file-status probe cannot see), delta-rs refuses the stale commit (the app
    transaction moved) and the retry from a loaded snapshot finds the batch there.

    Only the probe's blind spot is simulated (``_latest`` made to trust the kept table:
    no hook can land a commit between two file statuses); the tables, both commits and
    delta-rs's refusal are real. ``_table`` is wrapped, not replaced, to count loads."""
    f = sink.write_file(pa.table({"id": [1], "s": ["x"]}), "part-b1")
    assert sink.commit([f], batch("a", 1, {"0": 1}))
    other = DeltaSink(sink.uri, SCHEMA, "t")
    theirs = other.write_file(pa.table({"id": [2], "s": ["x"]}), "part-b2-theirs")
    assert other.commit([theirs], batch("a", 2, {"0": 2}))
    monkeypatch.setattr(sink, "_latest", lambda dt: dt)
    loads = []
    real = sink._table
    monkeypatch.setattr(sink, "_table", lambda: loads.append(1) or real())
    mine = sink.write_file(pa.table({"id": [2], "s": ["x"]}), "part-b2-mine")
    assert not sink.commit([mine], batch("a", 2, {"0": 2}))
    assert loads == [1]  # the stale attempt was refused; the second one loaded the table
    assert sorted(DeltaTable(sink.uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert DeltaTable(sink.uri).transaction_version("a") == 2


def checkpoints(sink) -> list[int]:
    logs = os.path.join(sink.uri, "_delta_log")
    return sorted(
        int(n[:20])
        for n in os.listdir(logs)
        if n.endswith(".checkpoint.parquet") and os.path.isfile(os.path.join(logs, n))
    )


def test_a_young_tables_commits_checkpoint_sooner_than_its_interval(sink):
    """A table with few files: its checkpoint costs less than re-reading a hundred commits,
    so the pipeline's commits write one sooner than ``delta.checkpointInterval`` (100), never
    within ``MIN_COMMITS`` of the last; the table reads whole from them."""
    from sparkpipes.sinks.delta.checkpoints import MIN_COMMITS

    for b in range(1, 61):
        f = sink.write_file(pa.table({"id": [b], "s": ["x"]}), f"part-b{b}")
        assert sink.commit([f], batch("a", b, {"0": b}))
    made = checkpoints(sink)
    assert made and made[0] < 60, made
    assert all(b - a >= MIN_COMMITS for a, b in itertools.pairwise(made)), made
    dt = DeltaTable(sink.uri)
    assert dt.version() == 60 and dt.transaction_version("a") == 60
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == list(range(1, 61))
    assert DeltaSink(sink.uri, SCHEMA, "t").committed("a") == Committed(60, {"0": 60})


def test_a_checkpoint_that_cannot_be_written_leaves_the_commits_whole(sink, caplog):
    """Writing the checkpoint fails for real (each checkpoint's path is taken by a
    directory, so delta-rs cannot rename its file there): every commit stands, the failure
    is logged with the table's name, and the checkpoint is tried again later, not at every
    commit; once the paths are free, checkpoints come again."""
    logs = os.path.join(sink.uri, "_delta_log")
    taken = [os.path.join(logs, f"{v:020d}.checkpoint.parquet") for v in range(1, 41)]
    for path in taken:
        os.makedirs(path)
    for b in range(1, 41):
        f = sink.write_file(pa.table({"id": [b], "s": ["x"]}), f"part-b{b}")
        assert sink.commit([f], batch("a", b, {"0": b}))
    assert checkpoints(sink) == []
    tries = [r for r in caplog.records if "checkpoint of Delta table 't'" in r.getMessage()]
    assert 1 <= len(tries) <= 4, [r.getMessage() for r in tries]
    assert "Is a directory" in tries[0].getMessage()
    for path in taken:
        os.rmdir(path)
    for b in range(41, 61):
        f = sink.write_file(pa.table({"id": [b], "s": ["x"]}), f"part-b{b}")
        assert sink.commit([f], batch("a", b, {"0": b}))
    assert checkpoints(sink)
    assert sorted(DeltaTable(sink.uri).to_pyarrow_table().column("id").to_pylist()) == list(
        range(1, 61)
    )

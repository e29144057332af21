"""Step 1 of the commit protocol (plan) over real files, a real Delta table and a real
SQLite catalog; no Spark job runs."""

import os
import time

import pyarrow as pa
import pytest

SCHEMA = pa.schema([("a", pa.int64())])


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for i in range(5):
        (d / f"f{i}.json").write_text("".join(f'{{"a": {i * 10 + j}}}\n' for j in range(3)))
    return d


def make(engine, files, **kw):
    engine.create_table("t", SCHEMA)
    engine.create_pipeline("p", source="fs", location=str(files / "*.json"), table="t", **kw)
    return engine._runner("p")


def test_a_first_plan_starts_every_partition_at_the_start_policy(engine, files):
    plan = make(engine, files).plan()
    assert plan.batch_id == 1 and plan.committed == {}
    assert sorted(plan.starts) == sorted(str(files / f"f{i}.json") for i in range(5))
    assert all(s == {"byte": 0} for s in plan.starts.values())
    assert all(m["byte"] > 0 for m in plan.watermarks.values())


def test_latest_starts_a_new_pipeline_at_the_end(engine, files):
    plan = make(engine, files, offsets="latest").plan()
    assert plan.starts == {} and plan.width == 0
    assert plan.offsets == {p: {"byte": os.path.getsize(p)} for p in plan.offsets}


def test_the_next_plan_starts_where_the_destination_says(engine, files):
    runner = make(engine, files)
    f0 = str(files / "f0.json")
    engine.set_offsets("p", {f0: {"byte": 7}})
    plan = runner.plan()
    assert plan.batch_id == 2
    assert plan.starts[f0] == {"byte": 7}
    (files / "f9.json").write_text('{"a": 1}\n')  # a partition that appears later
    assert runner.plan().starts[str(files / "f9.json")] == {"byte": 0}


def test_small_objects_are_packed_into_the_batch_width(engine, files):
    runner = make(engine, files, max_partitions_per_batch=2)
    plan = runner.plan()
    assert plan.width == 2 and len(plan.starts) == 5  # every object, in two tasks
    assert sorted(len(t) for t in plan.tasks) == [2, 3]
    assert runner.plan(max_partitions=1).width == 1  # the engine's cap wins if lower


def test_a_drained_partition_is_skipped_until_it_moves(engine, files):
    runner = make(engine, files)
    f1 = str(files / "f1.json")
    mark = runner.meta.watermark(f1)
    runner._idle[f1] = (mark, time.time())
    assert f1 not in runner.plan().starts
    with open(f1, "a") as f:
        f.write('{"a": 99}\n')
    assert f1 in runner.plan().starts

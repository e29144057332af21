"""The scheduler runs many pipelines on one cluster: seed 004's example from the batches'
recorded start and end times, and two pipelines loading one Delta table at once (their
commits conflict and are retried) without losing or duplicating a record."""

from __future__ import annotations

import json
import time
import uuid

from sparkpipes.cli import status_rows


def _objects(d, n: int) -> None:
    d.mkdir()
    for i in range(n):
        (d / f"o{i:03d}.json").write_text(json.dumps({"id": i}) + "\n")


def _wait(check, timeout_s: float = 120.0) -> None:
    deadline = time.time() + timeout_s
    while not check():
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)


def _spans(engine, name):
    return [
        (b["started_at"].timestamp(), b["finished_at"].timestamp())
        for b in engine.batches(name)
        if b["rows"]
    ]


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_seed_004_pipelines_of_4_8_and_4_partitions_on_10(engine, tmp_path):
    """P1 and P3 run together, P2 alone after them, then they take turns."""
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 10)
    engine.create_table("t", "id BIGINT")
    for name, width in (("p1", 4), ("p2", 8), ("p3", 4)):
        _objects(tmp_path / name, 3 * width)  # three batches of one object per task
        engine.create_pipeline(
            name,
            source="fs",
            location=str(tmp_path / name / "*.json"),
            config={"packing": False},
            table="t",
            max_partitions_per_batch=width,
            batch_interval_ms=100,
        )
    engine.start()
    seen_waiting = []

    def loaded() -> bool:
        cols, rows = status_rows(engine)
        seen_waiting.extend(r[cols.index("Cluster")] for r in rows)
        return engine.table_arrow("t").num_rows == 48

    _wait(loaded)
    engine.stop()
    p1, p2, p3 = (_spans(engine, n) for n in ("p1", "p2", "p3"))
    assert (len(p1), len(p2), len(p3)) == (3, 3, 3)
    assert _overlap(p1[0], p3[0])  # 4 + 4 fit in 10: together
    for b in p2:  # 8 fits beside neither
        assert not any(_overlap(b, o) for o in p1 + p3)
    # turns: P2's batch k comes after P1's and P3's batch k, before their batch k + 1
    for k in range(3):
        assert p2[k][0] >= max(p1[k][1], p3[k][1])
        if k < 2:
            assert p2[k][1] <= min(p1[k + 1][0], p3[k + 1][0])
    assert "waiting (needs 8)" in seen_waiting and "4/10" in seen_waiting


def test_two_pipelines_into_one_table_at_once_lose_and_duplicate_nothing(engine, broker):
    topics = [f"c{uuid.uuid4().hex[:8]}" for _ in range(2)]
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 4)  # room for both
    engine.create_table("events", "id BIGINT, __source_partition STRING, __source_offset BIGINT")
    for i, topic in enumerate(topics):
        broker.create_topic(topic, 2)
        broker.produce(
            topic,
            [json.dumps({"id": i * 100_000 + n}).encode() for n in range(3000)],
            partitions=2,
        )
        engine.create_pipeline(
            f"k{i}",
            source="kafka",
            location=f"{broker.bootstrap}/{topic}",
            table="events",
            provenance=True,
            max_offsets_per_batch_partition=150,  # many small batches: many commits at once
            batch_interval_ms=50,
        )
    engine.start()
    _wait(lambda: engine.table_arrow("events").num_rows >= 6000)
    engine.stop()
    t = engine.table_arrow("events")
    ids = t.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 6000
    assert set(ids) == {i * 100_000 + n for i in range(2) for n in range(3000)}
    spans = [_spans(engine, "k0"), _spans(engine, "k1")]
    assert any(_overlap(a, b) for a in spans[0] for b in spans[1])  # they did run at once

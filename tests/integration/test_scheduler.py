"""The scheduler runs many pipelines on one cluster, checked from the batches' recorded
start and end times: seed 004's example (4, 8 and 4 partitions on 10), a wide pipeline
among narrow ones that would starve it, the pipeline-count cap, stop while others run,
a pipeline in Error beside a healthy one then resumed, and two pipelines loading one
Delta table at once (their commits conflict and are retried) without losing or
duplicating a record."""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid

from sparkpipes.cli import status_rows
from sparkpipes.frontends.singlestore.executor import SqlSession


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


def _groups(spans: dict[str, list[tuple[float, float]]]) -> list[list[tuple[float, float, str]]]:
    """The batches grouped by time: a batch that starts before every batch of the
    current group has ended joins it."""
    groups: list[list[tuple[float, float, str]]] = []
    for start, end, name in sorted((s, e, n) for n, ss in spans.items() for s, e in ss):
        if groups and start < max(e for _, e, _ in groups[-1]):
            groups[-1].append((start, end, name))
        else:
            groups.append([(start, end, name)])
    return groups


def _rounds(spans: dict[str, list[tuple[float, float]]]) -> list[list[str]]:
    """The pipelines of each group of :func:`_groups`, sorted."""
    return [sorted(n for _, _, n in g) for g in _groups(spans)]


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
    spans = {n: _spans(engine, n) for n in ("p1", "p2", "p3")}
    assert [len(s) for s in spans.values()] == [3, 3, 3]
    # which pipeline asks first depends on thread timing; from then on: P1 and P3 together
    # (4 + 4 fit in 10), P2 alone (8 fits beside neither), in turns
    turns = _rounds(spans)
    assert turns in (
        [["p1", "p3"], ["p2"]] * 3,
        [["p2"], ["p1", "p3"]] * 3,
    ), turns
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
    for i in range(2):  # every record of each topic once, by its place in the topic
        mine = [
            (r["__source_partition"], r["__source_offset"])
            for r in t.to_pylist()
            if r["id"] // 100_000 == i
        ]
        assert sorted(mine) == [(p, o) for p in ("0", "1") for o in range(1500)]
    spans = [_spans(engine, "k0"), _spans(engine, "k1")]
    assert any(_overlap(a, b) for a in spans[0] for b in spans[1])  # they did run at once


def test_batches_admitted_together_are_concurrent_spark_jobs(engine, tmp_path):
    """Overlapping batch times alone do not show that the Spark jobs overlapped (a batch
    also plans, commits and records): Spark's status tracker must show both pipelines'
    stages active at the same moment (with two cores, their one task each runs at once),
    each job in its pipeline's FAIR pool. Tasks of a fraction of a second (one object of
    100k records each), for the sampler to see them."""
    sc = engine.spark.sparkContext
    assert sc.getConf().get("spark.scheduler.mode") == "FAIR"
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 2)
    engine.create_table("events", "id BIGINT")
    for name in ("s0", "s1"):
        (tmp_path / name).mkdir()
        lines = "".join(f'{{"id": {i}}}\n' for i in range(100_000))
        (tmp_path / name / "big.json").write_text(lines)
        engine.create_pipeline(
            name, source="fs", location=str(tmp_path / name / "*.json"), table="events"
        )
    engine.warm_up()
    sampler = _StageSampler(sc)
    sampler.start()
    engine.start()
    try:
        _wait(lambda: engine.table_arrow("events").num_rows == 200_000, 60)
    finally:
        engine.stop()
        sampler.done.set()
        sampler.join()
    assert sampler.most == 2, sampler.most
    # the FAIR scheduler made a pool for each pipeline when its first job came in
    assert all(sc._jsc.sc().getPoolForName(n).isDefined() for n in ("s0", "s1"))
    assert not sc._jsc.sc().getPoolForName("nobody").isDefined()


class _StageSampler(threading.Thread):
    """Samples Spark's status tracker: the most stages active (submitted to the task
    scheduler, not finished) at once. Its task counts are not used: without the UI,
    Spark does not update them while a stage runs."""

    def __init__(self, sc) -> None:
        super().__init__(daemon=True)
        self.sc = sc
        self.most = 0
        self.done = threading.Event()

    def run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self.done.is_set():
            busy = tracker.getActiveStageIds()
            self.most = max(self.most, len(busy))
            self.done.wait(0.01)


def _kafka(engine, broker, name: str, partitions: int, values: list[bytes], **kw) -> str:
    topic = f"{name}{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions)
    broker.produce(topic, values, partitions=partitions)
    engine.create_pipeline(
        name,
        source="kafka",
        location=f"{broker.bootstrap}/{topic}",
        table="events",
        batch_interval_ms=50,
        **kw,
    )
    return topic


def _ids(engine) -> list[int]:
    return sorted(engine.table_arrow("events").column("id").to_pylist())


def _records(base: int, n: int) -> list[bytes]:
    return [json.dumps({"id": base + i}).encode() for i in range(n)]


def test_a_wide_pipeline_is_not_starved_by_narrow_ones_on_the_broker(engine, broker):
    """4 partitions; two pipelines of 2 keep them busy, each asking again as soon as its
    batch ends. The wide one (4), started while they run, still gets every other turn:
    once it waits, neither narrow one runs again before it has run."""
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 4)
    engine.create_table("events", "id BIGINT")
    for name, base, parts, batches in (("a", 0, 2, 5), ("b", 10_000, 2, 5), ("w", 20_000, 4, 2)):
        _kafka(
            engine,
            broker,
            name,
            parts,
            _records(base, 10 * batches * parts),
            max_offsets_per_batch_partition=10,
        )
    engine.start("a")
    engine.start("b")
    _wait(lambda: engine.batches("a"), 60)  # a's first batch done: they are in full swing
    asked = time.time()
    engine.start("w")
    _wait(lambda: len(_ids(engine)) == 100 + 100 + 80, 60)
    engine.stop()
    assert _ids(engine) == [
        b + i for b, n in ((0, 100), (10_000, 100), (20_000, 80)) for i in range(n)
    ]
    spans = {n: _spans(engine, n) for n in ("a", "b", "w")}
    assert [len(s) for s in spans.values()] == [5, 5, 2]
    turns = _rounds(spans)
    starts = [min(s for s, _, _ in g) for g in _groups(spans)]
    assert ["a", "b"] in turns  # the narrow ones do run together
    wide = [i for i, t in enumerate(turns) if "w" in t]
    assert all(turns[i] == ["w"] for i in wide), turns  # alone
    first_after = next(i for i, s in enumerate(starts) if s >= asked)
    assert wide[0] <= first_after + 1, turns  # at most the turn already under way first
    assert turns[wide[0] + 1] == ["a", "b"] and wide[1] == wide[0] + 2, turns  # in turns


def test_the_pipeline_cap_and_stop_while_others_run(engine, broker):
    """``pipelines_max_concurrent = 1``: batches of different pipelines never overlap,
    though the partitions would allow it. A stopped pipeline starts no batch after
    ``stop`` returns, while the other goes on."""
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 8)
    engine.set_variable("pipelines_max_concurrent", 1)
    engine.create_table("events", "id BIGINT")
    topics = {}
    for name, base in (("x", 0), ("y", 10_000)):
        topics[name] = _kafka(
            engine, broker, name, 2, _records(base, 40), max_offsets_per_batch_partition=10
        )
    engine.start()
    _wait(lambda: len(_ids(engine)) == 80, 60)
    spans = sorted(s for n in ("x", "y") for s in _spans(engine, n))
    assert len(spans) == 4  # two batches each
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # one at a time
    engine.stop("x")
    stopped_at = time.time()
    broker.produce(topics["x"], _records(5_000, 20), partitions=2)
    broker.produce(topics["y"], _records(15_000, 20), partitions=2)
    _wait(lambda: len(_ids(engine)) == 100, 60)  # y's new records only
    time.sleep(0.5)
    engine.stop()
    assert engine.pipeline("x").state == "Stopped"
    assert all(b["started_at"].timestamp() < stopped_at for b in engine.batches("x"))
    assert _ids(engine) == list(range(40)) + list(range(10_000, 10_040)) + list(
        range(15_000, 15_020)
    )


def test_a_failing_pipeline_goes_to_error_while_the_other_loads_then_resumes(engine, broker):
    """A record that does not decode fails its pipeline's batch (terminal: Error, the
    error recorded) without disturbing the pipeline running beside it; after the fix
    (SKIP PARSER ERRORS), START resumes from the committed offsets: every good record
    once."""
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 4)
    engine.create_table("events", "id BIGINT")
    bad = [*_records(0, 10), b"{not json", *_records(10, 10)]
    _kafka(engine, broker, "bad", 1, bad, max_offsets_per_batch_partition=5)
    _kafka(engine, broker, "good", 2, _records(1000, 60), max_offsets_per_batch_partition=10)
    engine.start()
    _wait(lambda: engine.pipeline("bad").state == "Error" and len(_ids(engine)) >= 70, 60)
    rec = engine.pipeline("bad")
    assert "invalid JSON" in rec.last_error and "offset 10" in rec.last_error
    (err,) = engine.errors("bad")
    assert err["partition"] == "0" and err["offset"] == 10
    assert engine.offsets("bad") == {"0": 10}  # two batches of 5 committed before it
    assert _ids(engine) == list(range(10)) + list(range(1000, 1060))

    engine.alter_pipeline("bad", skip_parser_errors=True)
    engine.start("bad")
    _wait(lambda: len(_ids(engine)) == 80, 60)
    engine.stop()
    assert engine.pipeline("bad").state == "Stopped"
    assert _ids(engine) == list(range(20)) + list(range(1000, 1060))
    assert engine.offsets("bad") == {"0": 21}


def test_an_upsert_and_an_append_into_one_table_at_once(engine, broker):
    """An upsert's MERGE that another pipeline's append got ahead of cannot be rebased:
    the sink runs it again from a fresh snapshot (``sparkpipes.sinks`` logs it when it
    happens; ``tests/unit/sinks/test_delta_conflicts.py`` makes it happen). Every key
    once, with its last value."""
    engine.set_variable("pipelines_max_concurrent_batch_partitions", 4)
    SqlSession(engine).execute("CREATE TABLE events (id BIGINT, v BIGINT, PRIMARY KEY (id))")
    versions = [json.dumps({"id": i % 40, "v": i // 40}).encode() for i in range(80)]
    _kafka(
        engine,
        broker,
        "up",
        2,
        versions,
        max_offsets_per_batch_partition=10,
        on_duplicate_key="replace",
    )
    appends = [json.dumps({"id": 1000 + i, "v": 0}).encode() for i in range(160)]
    _kafka(engine, broker, "app", 2, appends, max_offsets_per_batch_partition=10)
    engine.start()
    _wait(lambda: engine.offsets("up") == {"0": 40, "1": 40} and len(_ids(engine)) == 200, 90)
    engine.stop()
    rows = engine.table_arrow("events").to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(40)) + list(range(1000, 1160))
    assert all(r["v"] == 1 for r in rows if r["id"] < 40)  # the last version of each key

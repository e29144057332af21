"""Kafka → Delta pipelines against the real embedded broker (Tansu) and a real Spark."""

from __future__ import annotations

import itertools
import json
import time

import pytest

from sparkpipes.errors import (
    ConfigError,
    DecodeError,
    NotFoundError,
    OffsetOutOfRangeError,
)

SCHEMA = "id BIGINT, name STRING, __source_partition STRING, __source_offset BIGINT"


def events(n, start=0):
    return [json.dumps({"id": i, "name": f"n{i}"}) for i in range(start, start + n)]


def ids(engine, table="events"):
    return sorted(engine.table_arrow(table).column("id").to_pylist())


def make(engine, broker, topic, **kw):
    engine.create_table("events", SCHEMA)
    opts = dict(
        source="kafka",
        location=f"{broker.bootstrap}/{topic}",
        table="events",
        provenance=True,
        max_retries=0,
    )
    opts.update(kw)
    return engine.create_pipeline("p", **opts)


def test_json_four_partitions_exactly_once_with_batch_limits(engine, broker, topic):
    broker.produce(topic, events(4000), partitions=4)
    make(engine, broker, topic, max_offsets_per_batch_partition=400)
    results = engine.run_batches("p", 20, until_idle=True)
    assert [r.state for r in results][-1] == "NoData"
    assert all(r.rows <= 1600 for r in results)
    assert ids(engine) == list(range(4000))
    assert engine.offsets("p") == {"0": 1000, "1": 1000, "2": 1000, "3": 1000}
    t = engine.table_arrow("events")
    parts, offs = t.column("__source_partition"), t.column("__source_offset")
    pairs = set(zip(parts.to_pylist(), offs.to_pylist()))
    assert len(pairs) == 4000
    # batches in the catalog chain: each starts where the previous ended
    done = [b for b in engine.batches("p") if b["state"] == "Succeeded"]
    assert [b["batch_id"] for b in done] == list(range(1, len(done) + 1))
    for prev, cur in itertools.pairwise(done):
        for part in cur["partitions"]:
            assert part["start"] == prev["offsets"][part["partition"]]
    # more data later continues from the committed offsets, via Spark SQL too
    broker.produce(topic, events(400, start=4000), partitions=4)
    engine.run_batches("p", 5, until_idle=True)
    assert ids(engine) == list(range(4400))
    assert engine.sql("SELECT count(DISTINCT id) AS n FROM events").first()["n"] == 4400


def test_restart_resumes_from_the_table_not_from_memory(tmp_path, broker, topic):
    from sparkpipes import Engine

    broker.produce(topic, events(800), partitions=4)
    with Engine(tmp_path / "wh") as eng:
        make(eng, broker, topic, max_offsets_per_batch_partition=100)
        eng.run_batches("p", 1)
    broker.produce(topic, events(200, start=800), partitions=4)
    with Engine(tmp_path / "wh") as eng:
        eng.run_batches("p", 20, until_idle=True)
        assert ids(eng) == list(range(1000))
        assert len(eng.batches("p")) >= 3


def test_csv_with_field_options(engine, broker, topic):
    broker.produce(topic, [f"{i};'x;{i}'" for i in range(100)], partitions=4)
    engine.create_table("events", "id BIGINT, name STRING")
    engine.create_pipeline(
        "p",
        source="kafka",
        location=f"{broker.bootstrap}/{topic}",
        table="events",
        format="csv",
        csv={"delimiter": ";", "quote": "'"},
    )
    engine.run_batches("p", 5, until_idle=True)
    t = engine.table_arrow("events").sort_by("id")
    assert t.column("id").to_pylist() == list(range(100))
    assert t.column("name").to_pylist()[:2] == ["x;0", "x;1"]


def test_bad_record_fails_the_batch_naming_topic_partition_offset(engine, broker, topic):
    broker.produce(topic, [*events(10), "{oops", *events(10, start=10)], partition=2)
    make(engine, broker, topic)
    with pytest.raises(DecodeError) as e:
        engine.run_batch("p")
    msg = str(e.value)
    assert f"topic '{topic}' partition 2 offset 10" in msg
    assert "invalid JSON" in msg and "'{oops'" in msg
    assert engine.pipeline("p").state == "Error"
    assert "offset 10" in engine.pipeline("p").last_error
    assert engine.table_arrow("events").num_rows == 0  # nothing committed
    (err,) = engine.errors("p")
    assert (err["partition"], err["offset"], err["code"]) == ("2", 10, "SP300")
    assert engine.batches("p")[-1]["state"] == "Failed"


def test_skip_parser_errors_records_them_and_commits_the_rest(engine, broker, topic):
    bad = ["{oops", '{"id": "not a number"}', "[]"]
    broker.produce(topic, [*events(5), *bad, *events(5, start=5)], partition=1)
    make(engine, broker, topic, skip_parser_errors=True)
    results = engine.run_batches("p", 3, until_idle=True)
    assert ids(engine) == list(range(10))
    assert results[0].errors == 3
    errs = engine.errors("p")
    assert [(e["partition"], e["offset"]) for e in errs] == [("1", 5), ("1", 6), ("1", 7)]
    assert errs[0]["excerpt"] == "{oops" and errs[0]["batch_id"] == 1
    assert "column 'id'" in errs[1]["reason"]
    assert engine.offsets("p")["1"] == 13


def test_unknown_or_dangerous_client_option_is_refused_up_front(engine, broker, topic):
    engine.create_table("events", SCHEMA)
    with pytest.raises(ConfigError, match=r"unknown or unsupported Kafka option 'fetch\.speed'"):
        engine.create_pipeline(
            "p",
            source="kafka",
            location=f"{broker.bootstrap}/{topic}",
            table="events",
            config={"fetch.speed": "max"},
        )
    with pytest.raises(ConfigError, match=r"sasl\.jaas\.config"):
        engine.create_pipeline(
            "p",
            source="kafka",
            location=f"{broker.bootstrap}/{topic}",
            table="events",
            config='{"sasl.jaas.config": "x"}',
        )
    with pytest.raises(NotFoundError):
        engine.pipeline("p")


def test_missing_topic_fails_the_batch(engine, broker):
    engine.create_table("events", SCHEMA)
    engine.create_pipeline(
        "p", source="kafka", location=f"{broker.bootstrap}/nope", table="events", max_retries=0
    )
    with pytest.raises(Exception, match="topic 'nope' does not exist"):
        engine.run_batch("p")
    assert engine.pipeline("p").state == "Error"  # terminal: the unreachable broker is in
    # tests/integration/test_kafka_errors.py


def test_offsets_out_of_range_fail_by_default_or_resume_with_a_recorded_gap(
    engine, broker, topic, monkeypatch
):
    from sparkpipes.engine.batch import protocol as batch

    monkeypatch.setattr(batch, "IDLE_RECHECK_S", 2.0)
    # Tansu keeps no retention and has no DeleteRecords, so the committed offsets are made
    # to fall outside the broker's range by recreating the topic with fewer records.
    broker.produce(topic, events(400), partitions=4)
    make(engine, broker, topic)
    engine.run_batches("p", 3, until_idle=True)
    assert engine.offsets("p") == {"0": 100, "1": 100, "2": 100, "3": 100}
    broker.delete_topic(topic)
    time.sleep(0.5)
    broker.create_topic(topic, 4)
    broker.produce(topic, events(40, start=1000), partitions=4)
    time.sleep(2.1)  # drained partitions are re-polled after IDLE_RECHECK_S
    with pytest.raises(OffsetOutOfRangeError) as e:
        engine.run_batch("p")
    assert f"offset 100 of topic '{topic}' partition" in str(e.value)
    assert "out of range" in str(e.value)
    assert engine.pipeline("p").state == "Error"

    engine.alter_pipeline("p", on_offset_out_of_range="earliest")
    engine.run_batches("p", 3, until_idle=True)
    assert ids(engine) == list(range(400)) + list(range(1000, 1040))
    gaps = [e for e in engine.errors("p") if e["kind"] == "offset_out_of_range"]
    assert sorted(g["partition"] for g in gaps) == ["0", "1", "2", "3"]
    assert all(g["offset"] == 100 and "resumed at earliest offset 0" in g["reason"] for g in gaps)


def test_partitions_added_while_running_are_read_from_earliest(engine, broker, topic):
    # Tansu refuses CreatePartitions, so the topic is recreated with 6 partitions and the
    # old 4 refilled to the same offsets: to a consumer, exactly partitions 4 and 5 added.
    broker.produce(topic, events(400), partitions=4)
    make(engine, broker, topic)
    engine.start("p")
    deadline = time.time() + 60
    while engine.offsets("p") != {str(p): 100 for p in range(4)} and time.time() < deadline:
        time.sleep(0.2)
    engine.stop("p")  # only while the topic is briefly missing: that is an error by itself
    broker.delete_topic(topic)
    time.sleep(0.5)
    broker.create_topic(topic, 6)
    broker.produce(topic, events(400, start=10_000), partitions=4)  # refill 0-3 to offset 100
    engine.start("p")
    broker.produce(topic, events(60, start=5000), partitions=6)  # 10 more in each partition
    want = list(range(400)) + list(range(5000, 5060))
    while time.time() < deadline and ids(engine) != want:
        time.sleep(0.3)
    engine.stop("p")
    assert ids(engine) == want
    offsets = engine.offsets("p")
    assert offsets == {"0": 110, "1": 110, "2": 110, "3": 110, "4": 10, "5": 10}
    assert engine.pipeline("p").state == "Stopped"


def test_latest_starts_at_the_end_for_a_new_pipeline(engine, broker, topic):
    broker.produce(topic, events(100), partitions=4)
    make(engine, broker, topic, offsets="latest")
    engine.run_batches("p", 2, until_idle=True)
    broker.produce(topic, events(8, start=100), partitions=4)
    engine.run_batches("p", 3, until_idle=True)
    assert ids(engine) == list(range(100, 108))


def test_max_partitions_per_batch_rotates_over_all_partitions(engine, broker, topic):
    broker.produce(topic, events(400), partitions=4)
    make(engine, broker, topic, max_partitions_per_batch=2)
    results = engine.run_batches("p", 10, until_idle=True)
    assert all(len(r.partitions) <= 2 for r in results)
    assert ids(engine) == list(range(400))
    assert engine.offsets("p") == {"0": 100, "1": 100, "2": 100, "3": 100}


def test_metadata_provider_answers_offsets_and_times(broker, topic):
    from sparkpipes.sources import build_source

    before = int(time.time() * 1000) - 1
    broker.produce(topic, events(10), partition=3)
    meta = build_source("kafka", f"{broker.bootstrap}/{topic}", {}, {}).metadata()
    try:
        assert meta.partitions() == ["0", "1", "2", "3"]
        assert meta.earliest("3") == 0
        assert meta.end("3") == 10  # exact, whatever the broker's high watermark says
        assert meta.offset_for_timestamp("3", before) == 0
        assert meta.earliest("0") == meta.end("0") == 0
    finally:
        meta.close()


def test_a_batch_committed_by_another_writer_is_not_loaded_twice(tmp_path, broker, topic):
    """Two engines on one warehouse run the same batch; the table's app transaction lets
    only the first commit count, and the loser records nothing of its own."""
    from sparkpipes import Engine

    broker.produce(topic, events(100), partition=0)
    first, second = Engine(tmp_path / "wh"), Engine(tmp_path / "wh")
    make(first, broker, topic)
    runner = first._runner("p")
    written = runner.extract(runner.plan())  # batch 1 read to offset 100, not committed
    broker.produce(topic, events(100, start=100), partition=0)
    assert second.run_batch("p").offsets["0"] == 200  # the other writer commits batch 1
    result = runner.commit(written)
    assert result.state == "Replayed" and result.offsets["0"] == 200
    first.run_batches("p", 3, until_idle=True)
    assert ids(first) == list(range(200))
    assert [b["batch_id"] for b in first.batches("p")] == [1]
    assert first.batches("p")[0]["offsets"]["0"] == 200
    first.close()
    second.close()


def test_partition_consumer_stops_at_the_end_without_waiting_and_never_before_it(broker, topic):
    """librdkafka's end-of-partition event ends a task's reading at once; an end reported
    where the consumer opened (a fetch that starts at a broker's under-reported high
    watermark) is not trusted, so the last records are neither lost nor stalled."""
    from sparkpipes.sources import build_source

    broker.produce(topic, events(25_003), partition=0)
    source = build_source("kafka", f"{broker.bootstrap}/{topic}", {}, {})
    meta = source.metadata()
    try:
        latest, end = meta.latest("0"), meta.end("0")
    finally:
        meta.close()
    assert end == 25_003

    def drain(start, timeout_s):
        consumer = source.consumer("0")
        consumer.open(start)
        seen, t0 = 0, time.perf_counter()
        try:
            while True:
                fetched = consumer.fetch(20_000, timeout_s)
                seen += len(fetched)
                if fetched.at_end or not len(fetched):
                    return consumer.position(), seen, fetched.at_end, time.perf_counter() - t0
        finally:
            consumer.close()

    position, seen, at_end, took = drain(0, timeout_s=5.0)
    assert (position, seen, at_end) == (end, end, True)
    assert took < 4.0  # the end event, not the 5 s fetch timeout, ended it

    # Tansu reports the last batch's base offset + 1 as its high watermark
    for start in {latest, end - 1}:
        position, seen, _, _ = drain(start, timeout_s=2.0)
        assert (position, seen) == (end, end - start), start

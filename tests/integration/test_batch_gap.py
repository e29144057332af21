"""A steady stream is loaded in batches spaced ``pipelines_batch_gap_ms`` apart (issue 36):
a batch reads each partition up to the offset planned for it; a pipeline whose batch read
all there was (caught up) starts its next batch no sooner than the gap after this one,
while a batch that left records behind (a ``MAX_PARTITIONS_PER_BATCH`` window) is not
caught up and is followed at once. Every record is still loaded exactly once."""

from __future__ import annotations

import itertools
import json
import threading
import time

from confluent_kafka import Producer


def _ids(engine, table: str) -> list[int]:
    return sorted(engine.table_arrow(table).column("id").to_pylist())


def test_a_batch_that_read_everything_is_caught_up_and_a_windowed_one_is_not(engine, broker, topic):
    broker.produce(topic, [json.dumps({"id": i}) for i in range(40)], partitions=4)
    engine.create_table("whole", "id BIGINT")
    engine.create_pipeline(
        "whole", source="kafka", location=f"{broker.bootstrap}/{topic}", table="whole"
    )
    (first,) = engine.run_batches("whole", 1)
    assert first.rows == 40 and first.caught_up

    engine.create_table("window", "id BIGINT")
    engine.create_pipeline(
        "window",
        source="kafka",
        location=f"{broker.bootstrap}/{topic}",
        table="window",
        max_partitions_per_batch=2,
    )
    (part,) = engine.run_batches("window", 1)
    assert 0 < part.rows < 40 and not part.caught_up  # two of four partitions were read
    engine.run_batches("window", 5, until_idle=True)
    assert _ids(engine, "window") == list(range(40))


def test_a_steady_stream_is_loaded_in_batches_a_gap_apart_exactly_once(engine, broker, topic):
    engine.set_variable("pipelines_batch_gap_ms", 1000)
    engine.create_table("steady", "id BIGINT")
    engine.create_pipeline(
        "steady",
        source="kafka",
        location=f"{broker.bootstrap}/{topic}",
        table="steady",
        batch_interval_ms=2500,
    )
    engine.start()
    n = 0

    def produce() -> None:  # 50 records every 0.1 s for 4 s, over 4 partitions
        nonlocal n
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for _ in range(40):
            for _ in range(50):
                p.produce(topic, json.dumps({"id": n}).encode(), partition=n % 4)
                n += 1
            p.poll(0)
            time.sleep(0.1)
        assert p.flush(30) == 0

    producer = threading.Thread(target=produce)
    producer.start()
    producer.join()
    deadline = time.monotonic() + 60
    while len(engine.table_arrow("steady")) < n:
        assert time.monotonic() < deadline, "the stream was not loaded"
        time.sleep(0.2)
    engine.stop()
    assert _ids(engine, "steady") == list(range(n))
    loaded = [b for b in engine.batches("steady") if b["state"] == "Succeeded" and b["rows"]]
    starts = sorted(b["started_at"] for b in loaded)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    # the gap runs from the start of the turn, which plans before the batch starts
    assert gaps and min(gaps) >= 0.8, gaps
    assert len(loaded) <= 4 / 1.0 + 3, f"{len(loaded)} batches for a 4 s stream"

"""Connect's dead-letter topic (``errors.deadletterqueue.topic.name``) on the Tansu broker:
the records a sink connector could not load are written there as they were read (key,
value, headers, timestamp) with Connect's ``__connect.errors.*`` context headers, read
back by a real ``read_committed`` consumer; published after their batch commits, once,
however often publishing runs, and once even when an earlier publisher died in the
middle of its transaction (fenced; its progress never counts). Tansu, unlike Apache
Kafka, shows such a dead transaction's own records to ``read_committed`` consumers."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect.deadletter import HEADER_PREFIX, group_of
from sparkpipes.frontends.connect.model import load

SCHEMA = {"type": "struct", "fields": [{"field": "id", "type": "int64", "optional": False}]}


def good(i: int) -> bytes:
    return json.dumps({"schema": SCHEMA, "payload": {"id": i}}).encode()


def produce(broker, topic: str, records: list[tuple[int, bytes | None, bytes, list]]) -> None:
    """(partition, key, value, headers) each, with a timestamp of their own."""
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for part, key, value, headers in records:
        p.produce(topic, value, key=key, partition=part, headers=headers, timestamp=1_780_000_000)
    assert p.flush(30) == 0


def read_all(broker, topic: str, expected: int) -> list:
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        while True:
            msg = c.poll(10)
            assert msg is not None, f"the dead-letter topic ended early: {len(out)} records"
            if msg.error():
                if len(out) >= expected:
                    return out
                continue
            out.append(msg)
    finally:
        c.close()


def config(broker, topic: str, dlq: str, **extra) -> dict:
    return {
        "name": "dlq-sink",
        "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
        "topics": topic,
        "bootstrap.servers": broker.bootstrap,
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.context.headers.enable": "true",
        "errors.deadletterqueue.topic.replication.factor": "3",
        **extra,
    }


def drain(engine) -> None:
    for p in engine.connectors.get("dlq-sink")["pipelines"]:
        engine.run_batches(p, 20, until_idle=True)


def test_failed_records_reach_the_dead_letter_topic_once_with_connects_headers(
    broker, topic, engine
):
    dlq = f"dlq_{uuid.uuid4().hex[:8]}"
    trace = [("trace-id", b"abc")]
    produce(
        broker,
        topic,
        [
            *[(i % 4, f"k{i}".encode(), good(i), []) for i in range(20)],
            (1, b"bad-1", b"{not json", trace),
            (2, None, b"[1, 2", []),
        ],
    )
    engine.connectors.create(config(broker, topic, dlq))
    drain(engine)
    assert engine.sql(f"SELECT COUNT(*) FROM {topic}").collect()[0][0] == 20
    assert engine.connectors.publish_dead_letters() == 2
    assert engine.connectors.publish_dead_letters() == 0  # published once

    # an earlier publisher that died inside its transaction: fenced, its record never seen
    pipeline_id = engine.pipeline(engine.connectors.get("dlq-sink")["pipelines"][0]).id
    zombie = Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": group_of(pipeline_id)}
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(dlq, b"half-published")
    zombie.flush(30)
    produce(broker, topic, [(3, b"bad-3", b"nope", [])])
    drain(engine)
    engine.connectors.refresh()  # the engine's periodic connector work publishes
    assert engine.connectors.publish_dead_letters() == 0

    # Tansu does not hide an aborted transaction's records from read_committed consumers
    # as Apache Kafka does: the zombie's record is there, and nothing else twice
    got = [m for m in read_all(broker, dlq, 4) if m.value() != b"half-published"]
    assert [m.value() for m in got] == [b"{not json", b"[1, 2", b"nope"]
    assert [m.key() for m in got] == [b"bad-1", None, b"bad-3"]
    first = dict(got[0].headers())
    assert first["trace-id"] == b"abc"  # the original's headers first
    assert got[0].timestamp()[1] == 1_780_000_000
    context = {
        k.removeprefix(HEADER_PREFIX): v.decode() for k, v in first.items() if k != "trace-id"
    }
    assert context["topic"] == topic and context["partition"] == "1"
    assert context["connector.name"] == "dlq-sink" and context["task.id"] == "0"
    assert context["stage"] == "VALUE_CONVERTER"
    assert context["class.name"] == "org.apache.kafka.connect.json.JsonConverter"
    assert context["exception.class.name"] == "org.apache.kafka.connect.errors.DataException"
    assert context["exception.message"] and context["exception.stacktrace"].startswith(
        "org.apache.kafka.connect.errors.DataException: "
    )
    assert set(context) == {
        "topic",
        "partition",
        "offset",
        "connector.name",
        "task.id",
        "stage",
        "class.name",
        "exception.class.name",
        "exception.message",
        "exception.stacktrace",
    }
    offsets = {
        (
            dict(m.headers())[HEADER_PREFIX + "partition"],
            dict(m.headers())[HEADER_PREFIX + "offset"],
        )
        for m in got
    }
    assert offsets == {(b"1", b"5"), (b"2", b"5"), (b"3", b"5")}
    errors = engine.information_schema("PIPELINES_ERRORS").to_pylist()
    assert len([e for e in errors if e["PIPELINE_NAME"] == "dlq_sink"]) == 3  # kept there too


def test_a_dead_letter_topic_is_checked_by_name(broker):
    base = config(broker, "t", "dlq")
    with pytest.raises(
        ConfigError, match=re.escape("errors.deadletterqueue.topic.name needs errors.tolerance=all")
    ):
        load({**base, "errors.tolerance": "none"})
    with pytest.raises(ConfigError, match="is not a Kafka topic name"):
        load({**base, "errors.deadletterqueue.topic.name": "no spaces"})
    with pytest.raises(ConfigError, match=re.escape("context.headers.enable")):
        load({**base, "errors.deadletterqueue.context.headers.enable": "yes"})
    assert (
        load(
            {**base, "errors.deadletterqueue.topic.replication.factor": "-1"}
        ).dead_letter_replication
        == -1
    )


def test_a_spent_budget_defers_batches_and_tasks_to_later_rounds_never_losing_one(
    broker, engine, monkeypatch
):
    """Each round of a connector publishes within its time budget: with none at all, a
    round still publishes one batch (so every round makes progress), the rest waits,
    and the next round begins with the next task; every failed record reaches the
    dead-letter topic once."""
    from sparkpipes.frontends.connect import deadletter

    monkeypatch.setattr(deadletter, "BUDGET_S", 0.0)
    first, second = (f"dl{i}_{uuid.uuid4().hex[:6]}" for i in range(2))
    for t in (first, second):
        broker.create_topic(t, 1)
    dlq = f"dlq_{uuid.uuid4().hex[:8]}"
    produce(broker, first, [(0, None, good(1), []), (0, None, b"bad-a1", [])])
    produce(broker, second, [(0, None, good(2), []), (0, None, b"bad-b1", [])])
    engine.connectors.create(config(broker, f"{first},{second}", dlq))
    pipelines = engine.connectors.get("dlq-sink")["pipelines"]
    for p in pipelines:
        engine.run_batches(p, 5, until_idle=True)
    produce(broker, first, [(0, None, b"bad-a2", [])])
    engine.run_batches(pipelines[0], 5, until_idle=True)

    rounds = [engine.connectors.publish_dead_letters() for _ in range(4)]
    assert rounds == [1, 1, 1, 0]  # one batch a round, the other task's in between
    got = sorted(m.value() for m in read_all(broker, dlq, 3))
    assert got == [b"bad-a1", b"bad-a2", b"bad-b1"]

"""Pinot-style stream plugins (seed 003): Redis Streams, the built-in second stream type,
on the real Redis server on 127.0.0.1:6379; and the SPI's promises (offsets only go
forward, partitions never shrink, timeouts honoured, a decoder by Python path) checked
with a plugin defined here (:class:`Counting`, a real plugin of the SPI that makes its
messages from its config; no server to mock)."""

from __future__ import annotations

import copy
import json
import time
import uuid
from pathlib import Path

import pytest
import redis

from sparkpipes.errors import ConfigError, SparkpipesError
from sparkpipes.sources.plugin import (
    MessageBatch,
    PartitionLevelConsumer,
    StreamConsumerFactory,
    StreamMessage,
    StreamMessageDecoder,
    StreamMetadataProvider,
)
from sparkpipes.util.registry import PLUGIN_MODULES_ENV

SCHEMA = {
    "schemaName": "s",
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "INT"},
        {"name": "name", "dataType": "STRING"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}


@pytest.fixture(autouse=True)
def _allow_this_module(monkeypatch):
    """The plugins here are named by their Python path: the operator allows this module."""
    monkeypatch.setenv(PLUGIN_MODULES_ENV, __name__)


def table(stream: dict, name: str = "t") -> dict:
    return {
        "tableName": name,
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "s", "replicasPerPartition": "1"},
        "tableIndexConfig": {"streamConfigs": stream},
    }


def redis_stream(topic: str, **extra: str) -> dict:
    return {
        "streamType": "redis",
        "stream.redis.consumer.type": "lowlevel",
        "stream.redis.topic.name": topic,
        "stream.redis.url": "redis://127.0.0.1:6379/0",
        "stream.redis.decoder.class.name": "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder",
        "stream.redis.consumer.prop.auto.offset.reset": "smallest",
        **extra,
    }


@pytest.fixture
def rds():
    r = redis.Redis(host="127.0.0.1", port=6379)
    r.ping()
    topic = f"sp-{uuid.uuid4().hex[:8]}"
    yield r, topic
    for key in r.scan_iter(f"{topic}*"):
        r.delete(key)


def ids(engine, name="t"):
    return sorted(engine.table_arrow(name).column("id").to_pylist())


def test_redis_streams_partitions_offsets_and_restart(engine, rds, tmp_path):
    r, topic = rds
    for i in range(30):  # three partitions: <topic>:0 … <topic>:2
        r.xadd(f"{topic}:{i % 3}", {"value": json.dumps({"id": i, "name": f"n{i}", "ts": i})})
    r.xadd(f"{topic}:1", {"id": "30", "name": "fields", "ts": "30"})  # fields as JSON
    stream = redis_stream(topic, **{"metadata.populate": "true"})
    schema = copy.deepcopy(SCHEMA)
    schema["dimensionFieldSpecs"] += [
        {"name": "__metadata$offset", "dataType": "LONG"},
        {"name": "__metadata$recordTimestamp", "dataType": "LONG"},
    ]
    plan = engine.pinot.plan(table(stream), schema)
    assert plan["source"] == "kafka" or plan["pipeline"] == "t_REALTIME"
    engine.pinot.add(table(stream), schema)
    engine.run_batches("t_REALTIME", 5, until_idle=True)
    assert ids(engine) == list(range(31))
    offsets = engine.offsets("t_REALTIME")
    assert sorted(offsets) == ["0", "1", "2"]
    rows = {x["id"]: x for x in engine.table_arrow("t").to_pylist()}
    last_id = r.xrevrange(f"{topic}:1", count=1)[0][0].decode()
    ms, seq = (int(x) for x in last_id.split("-"))
    assert rows[30]["__metadata$offset"] == (ms << 20) + seq
    assert rows[30]["__metadata$recordTimestamp"] == ms
    # new entries, and a restarted engine: each record once
    for i in range(31, 40):
        r.xadd(f"{topic}:{i % 3}", {"value": json.dumps({"id": i, "name": "later", "ts": i})})
    from sparkpipes import Engine

    with Engine(engine.warehouse) as again:
        again.run_batches("t_REALTIME", 5, until_idle=True)
        assert ids(again) == list(range(40))


def test_redis_largest_start_a_deleted_entry_and_a_bad_key(engine, rds):
    r, topic = rds
    for i in range(5):
        r.xadd(topic, {"value": json.dumps({"id": i, "ts": i})})  # one partition: <topic>
    stream = redis_stream(topic, **{"stream.redis.consumer.prop.auto.offset.reset": "largest"})
    engine.pinot.add(table(stream), SCHEMA)
    engine.run_batches("t_REALTIME", 3, until_idle=True)
    assert ids(engine) == []  # largest: only what comes after
    r.xadd(topic, {"value": json.dumps({"id": 5, "ts": 5})})
    gone = r.xadd(topic, {"value": json.dumps({"id": 6, "ts": 6})})
    r.xadd(topic, {"value": json.dumps({"id": 7, "ts": 7})})
    engine.run_batches("t_REALTIME", 3, until_idle=True)
    assert ids(engine) == [5, 6, 7]
    r.xadd(topic, {"value": json.dumps({"id": 8, "ts": 8})})
    doomed = r.xadd(topic, {"value": json.dumps({"id": 9, "ts": 9})})
    r.xdel(topic, doomed)  # deleted before it was read: a gap, not a silent loss
    assert gone
    with pytest.raises(SparkpipesError, match="out of range"):
        engine.run_batches("t_REALTIME", 1)
    bad = redis_stream(topic, **{"stream.redis.urll": "x"})
    with pytest.raises(ConfigError, match=r"did you mean 'stream\.redis\.url'"):
        engine.pinot.plan(table(bad, "u"), SCHEMA)
    with pytest.raises(ConfigError, match="unknown streamType 'pulsar'"):
        pulsar = {
            k.replace("redis", "pulsar"): v.replace("redis", "pulsar")
            for k, v in redis_stream(topic).items()
        }
        engine.pinot.plan(table(pulsar, "u"), SCHEMA)


# -- a plugin of the SPI, from its config alone ------------------------------------------
class Counting(StreamConsumerFactory):
    """Partition p holds messages at offsets 0, 10, 20 … (``count`` of them), each
    ``{"id": p * 1000 + n, "ts": n}``; ``backwards`` makes partition 0 repeat an offset,
    ``partitions.file`` reads the partition count from a file, ``hang.ms`` stalls fetches."""

    def create_metadata_provider(self, client_id):
        return CountingMeta(self.config)

    def create_partition_consumer(self, client_id, partition):
        return CountingConsumer(self.config, partition)


class CountingMeta(StreamMetadataProvider):
    def __init__(self, config):
        self.config = config

    def fetch_partition_count(self, timeout_ms):
        path = self.config.get("partitions.file")
        return int(Path(path).read_text()) if path else int(self.config.get("partitions", "2"))

    def fetch_offset(self, criteria, partition, timeout_ms):
        count = int(self.config.get("count"))
        return 0 if criteria == "smallest" or not count else (count - 1) * 10 + 1


class CountingConsumer(PartitionLevelConsumer):
    def __init__(self, config, partition):
        self.config, self.partition = config, partition

    def fetch_messages(self, start_offset, timeout_ms, max_messages):
        hang = int(self.config.get("hang.ms", "0"))
        if hang:
            time.sleep(hang / 1000)
        count = int(self.config.get("count"))
        first = -(-start_offset // 10)
        msgs = [
            StreamMessage(
                json.dumps({"id": self.partition * 1000 + n, "ts": n}).encode(), n * 10, key=b"k"
            )
            for n in range(first, min(count, first + max_messages))
        ]
        if self.config.get("backwards") and self.partition == 0 and len(msgs) > 2:
            msgs[2] = StreamMessage(msgs[2].value, msgs[1].offset)
        return MessageBatch(msgs, msgs[-1].offset + 1 if msgs else start_offset)


class Upper(StreamMessageDecoder):
    """A decoder by Python path: ``name`` upper-cased, with a prop-given suffix."""

    def init(self, props, fields, topic):
        self.suffix = props.get("suffix", "")

    def decode(self, payload):
        row = json.loads(payload)
        if row.get("id") == 1003:
            return None  # a record this decoder rejects
        row["name"] = f"P{row['id'] // 1000}{self.suffix}".upper()
        return row


def counting(**props: str) -> dict:
    return {
        "streamType": "counting",
        "stream.counting.topic.name": "numbers",
        "stream.counting.consumer.factory.class.name": f"{__name__}.Counting",
        "stream.counting.decoder.class.name": "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder",
        "stream.counting.consumer.prop.auto.offset.reset": "smallest",
        **{f"stream.counting.{k}": v for k, v in props.items()},
    }


def test_a_plugin_by_python_path_with_its_own_decoder(engine):
    stream = counting(count="6", **{"decoder.prop.suffix": "x"})
    stream["stream.counting.decoder.class.name"] = f"{__name__}:Upper"
    t = table(stream)
    t["ingestionConfig"] = {"continueOnError": True}
    engine.pinot.add(t, SCHEMA)
    engine.run_batches("t_REALTIME", 3, until_idle=True)
    rows = {x["id"]: x["name"] for x in engine.table_arrow("t").to_pylist()}
    assert sorted(rows) == [*range(6), *(i for i in range(1000, 1006) if i != 1003)]
    assert rows[1001] == "P1X"
    errors = engine.errors("t_REALTIME")
    assert len(errors) == 1 and "decoded no row" in errors[0]["reason"]
    assert errors[0]["partition"] == "1" and errors[0]["offset"] == 30


def test_a_plugin_that_goes_backwards_fails_naming_partition_and_offsets(engine):
    engine.pinot.add(table(counting(count="5", backwards="1")), SCHEMA)
    with pytest.raises(
        SparkpipesError, match=r"partition 0 went backwards: offset 10 came after offset 10"
    ):
        engine.run_batches("t_REALTIME", 1)


def test_partitions_never_shrink(engine, tmp_path):
    count = tmp_path / "partitions"
    count.write_text("3")
    engine.pinot.add(table(counting(count="4", **{"partitions.file": str(count)})), SCHEMA)
    engine.run_batches("t_REALTIME", 2, until_idle=True)
    assert len(ids(engine)) == 12
    count.write_text("2")
    with pytest.raises(
        SparkpipesError, match=r"fewer than before .partition 2 has an offset.*never shrink"
    ):
        engine.run_batches("t_REALTIME", 1)


def test_fetch_timeout_is_honoured(engine):
    stream = counting(count="3", **{"hang.ms": "4000", "fetch.timeout.millis": "300"})
    engine.pinot.add(table(stream), SCHEMA)
    engine.alter_pipeline("t_REALTIME", max_retries=0)
    started = time.time()
    with pytest.raises(SparkpipesError, match=r"did not answer within \d+ ms"):
        engine.run_batches("t_REALTIME", 1)
    assert time.time() - started < 30

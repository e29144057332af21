"""Pinot stream configs that choose what is read, against real servers on 127.0.0.1:
``stream.kafka.partition.ids`` on the broker (only the listed partitions' records load; a
partition the topic lacks is an error naming the key), and ``"streamType": "kinesis"`` on
moto's Kinesis (Pinot's ``KinesisConfig`` keys, every shard from its start)."""

from __future__ import annotations

import copy
import json
import uuid

import pytest

from sparkpipes.errors import ConfigError
from tests.integration.test_pinot_tables import BASE_TABLE, produce, schema, table_config

SCHEMA = schema([{"name": "id", "dataType": "INT"}, {"name": "p", "dataType": "INT"}])


def _ids(engine) -> list[int]:
    return sorted(r["id"] for r in engine.table_arrow("t").to_pylist())


def test_partition_ids_load_only_the_listed_partitions(engine, broker, topic):
    for part in range(4):  # the topic has 4 partitions
        produce(
            broker,
            topic,
            [(None, {"id": part * 100 + i, "p": part, "ts": 1}, None) for i in range(5)],
            partition=part,
        )
    t = table_config(broker, topic, stream={"stream.kafka.partition.ids": "1,3"})
    engine.pinot.add(t, SCHEMA)
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert _ids(engine) == [*range(100, 105), *range(300, 305)]
    produce(broker, topic, [(None, {"id": 999, "p": 0, "ts": 1}, None)], partition=0)
    produce(broker, topic, [(None, {"id": 305, "p": 3, "ts": 1}, None)], partition=3)
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert _ids(engine) == [*range(100, 105), *range(300, 306)]


def test_partition_ids_the_topic_lacks_are_an_error_naming_the_key(engine, broker, topic):
    t = table_config(broker, topic, stream={"stream.kafka.partition.ids": "2-5"})
    engine.pinot.add(t, SCHEMA)
    with pytest.raises(ConfigError, match=r"has no partition 4, 5 \(option 'partitions'\)"):
        engine.run_batches("t_REALTIME", 1, until_idle=True)


def _kinesis_table(moto, stream: str, **extra) -> dict:
    t = copy.deepcopy(BASE_TABLE)
    del t["tableIndexConfig"]["streamConfigs"]
    t["ingestionConfig"] = {
        "streamIngestionConfig": {
            "streamConfigMaps": [
                {
                    "streamType": "kinesis",
                    "stream.kinesis.topic.name": stream,
                    "stream.kinesis.decoder.class.name": (
                        "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder"
                    ),
                    "stream.kinesis.consumer.factory.class.name": (
                        "org.apache.pinot.plugin.stream.kinesis.KinesisConsumerFactory"
                    ),
                    "region": moto.region,
                    "shardIteratorType": "TRIM_HORIZON",
                    "endpoint": moto.endpoint_url,
                    "accessKey": moto.access_key_id,
                    "secretKey": moto.secret_access_key,
                    "realtime.segment.flush.threshold.time": "12h",
                    **extra,
                }
            ]
        }
    }
    return t


def test_kinesis_table_loads_every_shard_exactly_once(engine, s3_server):
    stream = f"s-{uuid.uuid4().hex[:8]}"
    s3_server.create_stream(stream, 3)
    put = [(f"pk{i}", json.dumps({"id": i, "p": i % 3, "ts": 1}).encode()) for i in range(60)]
    s3_server.put_records(stream, put)
    t = _kinesis_table(s3_server, stream, maxRecordsToFetch="7")
    out = engine.pinot.add(t, SCHEMA)
    assert s3_server.secret_access_key not in json.dumps(out, default=str)
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert _ids(engine) == list(range(60))
    s3_server.put_records(
        stream, [(f"pk{i}", json.dumps({"id": i, "p": 0, "ts": 1}).encode()) for i in range(60, 75)]
    )
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert _ids(engine) == list(range(75))  # resumed after the committed sequence numbers
    shown = json.dumps(engine.pinot.config("t"), default=str)
    assert s3_server.secret_access_key not in shown and "<redacted>" in shown


def test_kinesis_refused_keys_are_an_error_before_anything_is_made(engine, s3_server):
    t = _kinesis_table(s3_server, "nope", secretKey="")
    with pytest.raises(ConfigError, match="give both accessKey and secretKey"):
        engine.pinot.add(t, SCHEMA)

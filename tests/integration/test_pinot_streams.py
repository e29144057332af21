"""Pinot stream configs that choose what is read, against real servers on 127.0.0.1:
``stream.kafka.partition.ids`` on the broker (only the listed partitions' records load; a
partition the topic lacks is an error naming the key), and ``"streamType": "kinesis"`` on
moto's Kinesis (Pinot's ``KinesisConfig`` keys, every shard from its start); and
``streamConfigMaps`` with two topics loading one table, each record once across a
restart, both streams shown and paused as Pinot's controller does."""

from __future__ import annotations

import argparse
import copy
import json
import uuid

import pytest
from fastapi.testclient import TestClient

from sparkpipes import Engine
from sparkpipes.cli.pinot import run as run_cli
from sparkpipes.errors import ConfigError
from sparkpipes.server import create_app
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


# -- several streams into one table (streamConfigMaps) ----------------------------------------
def _two_stream_table(broker, first: str, second: str) -> dict:
    """Pinot's multi-topic form (``MultiTopicRealtimeClusterIntegrationTest``): one stream
    config per topic under ``streamConfigMaps``, the same flush thresholds in each."""
    t = table_config(broker, first)
    stream = t["tableIndexConfig"].pop("streamConfigs")
    t["ingestionConfig"] = {
        "streamIngestionConfig": {
            "streamConfigMaps": [stream, {**stream, "stream.kafka.topic.name": second}]
        }
    }
    return t


def _second_topic(broker) -> str:
    name = f"t2_{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 2)
    return name


def _two_streams(engine, n: int = 10) -> None:
    for pipeline in ("t_REALTIME_0", "t_REALTIME_1"):
        engine.run_batches(pipeline, n, until_idle=True)


def test_two_topics_load_one_table_each_row_once_across_a_restart(tmp_path, broker, topic):
    """Two topics (4 and 2 partitions) into one table through two pipelines, each
    committing its own batches under its own app transaction: every record once, and
    after the engine is closed and opened again each stream goes on from its own
    committed offsets — nothing read twice, nothing skipped."""

    other = _second_topic(broker)
    for part in range(4):
        produce(
            broker,
            topic,
            [(None, {"id": part * 10 + i, "p": part, "ts": 1}, None) for i in range(3)],
            partition=part,
        )
    for part in range(2):
        produce(
            broker,
            other,
            [(None, {"id": 1000 + part * 10 + i, "p": part, "ts": 1}, None) for i in range(4)],
            partition=part,
        )
    first = [p * 10 + i for p in range(4) for i in range(3)]
    second = [1000 + p * 10 + i for p in range(2) for i in range(4)]
    with Engine(tmp_path / "wh") as engine:
        out = engine.pinot.add(_two_stream_table(broker, topic, other), SCHEMA)
        assert out["pipelines"] == ["t_REALTIME_0", "t_REALTIME_1"]
        assert out["status"] == "Table t_REALTIME successfully added"
        assert {p.name for p in engine.pipelines()} == {"t_REALTIME_0", "t_REALTIME_1"}
        # the first stream alone, then the engine goes away
        engine.run_batches("t_REALTIME_0", 10, until_idle=True)
        assert _ids(engine) == sorted(first)
    produce(broker, topic, [(None, {"id": 500, "p": 0, "ts": 1}, None)], partition=3)
    produce(broker, other, [(None, {"id": 1500, "p": 1, "ts": 1}, None)], partition=1)
    with Engine(tmp_path / "wh") as engine:
        _two_streams(engine)
        assert _ids(engine) == sorted([*first, 500, *second, 1500])  # each exactly once
        _two_streams(engine)  # nothing new: nothing loaded again
        assert _ids(engine) == sorted([*first, 500, *second, 1500])

        status = engine.pinot.status("t")
        assert [s["pipeline"] for s in status["streams"]] == ["t_REALTIME_0", "t_REALTIME_1"]
        assert [s["rowsLoaded"] for s in status["streams"]] == [13, 9]
        # Pinot's partition ids: stream index * 10000 + the stream's partition
        ids = [[p["partition"] for p in s["partitions"]] for s in status["streams"]]
        assert ids == [[0, 1, 2, 3], [10000, 10001]]
        offsets = {p["partition"]: p["offset"] for s in status["streams"] for p in s["partitions"]}
        assert offsets[3] == 4 and offsets[10001] == 5 and offsets[10000] == 4
        assert all(s["lag"] == 0 for s in status["streams"])

        # pausing one stream leaves the other loading; resuming both; deleting drops both
        assert engine.pinot.pause("t", [1]) == ["t_REALTIME_1"]
        states = {p.name: p.state for p in engine.pipelines()}
        assert states == {"t_REALTIME_0": "Running", "t_REALTIME_1": "Stopped"}
        engine.pinot.resume("t")
        assert {p.state for p in engine.pipelines()} == {"Running"}
        assert engine.pinot.delete("t_REALTIME") == "t_REALTIME"
        assert engine.pipelines() == [] and "t" not in engine.tables()


def test_two_streams_status_over_rest_and_cli(tmp_path, broker, topic, capsys):
    """Pinot's pause answers over ``sparkpipes serve`` name the stopped stream by its
    index; ``sparkpipes pinot table t`` shows both streams with their offsets."""
    other = _second_topic(broker)
    produce(broker, topic, [(None, {"id": 1, "p": 0, "ts": 1}, None)])
    produce(broker, other, [(None, {"id": 2, "p": 0, "ts": 1}, None)])
    engine = Engine(tmp_path / "wh")
    try:
        app = create_app(engine, run=False, local_token="t")
        with TestClient(app, base_url="http://127.0.0.1:8083") as c:
            c.headers["Authorization"] = "Bearer t"
            r = c.post("/schemas", json=SCHEMA)
            assert r.status_code == 200, r.text
            r = c.post("/tables", json=_two_stream_table(broker, topic, other))
            assert r.status_code == 200, r.text
            _two_streams(engine)
            assert _ids(engine) == [1, 2]
            r = c.post("/tables/t/pauseTopicConsumption", params={"topicIndices": "1"})
            assert r.json() == {
                "pauseFlag": False,
                "consumingSegments": [],
                "comment": "Table is unpaused.",
                "indexOfInactiveTopics": [1],
            }
            r = c.post("/tables/t_REALTIME/pauseConsumption")
            assert r.json()["pauseFlag"] is True
            assert c.get("/tables/t/pauseStatus").json()["pauseFlag"] is True
            r = c.post("/tables/t/resumeConsumption", params={"consumeFrom": "sideways"})
            assert r.status_code == 400 and "consumeFrom" in r.json()["error"]
            r = c.post("/tables/t/resumeConsumption", params={"consumeFrom": "lastConsumed"})
            assert r.json()["pauseFlag"] is False and "indexOfInactiveTopics" not in r.json()
            r = c.post("/tables/t/pauseTopicConsumption", params={"topicIndices": "2"})
            assert r.status_code == 400 and "not 2" in r.json()["error"]
        args = argparse.Namespace(action="table", target="t", schema=None)
        assert run_cli(engine, args) == 0
        shown = json.loads(capsys.readouterr().out)
        assert [s["pipeline"] for s in shown["streams"]] == ["t_REALTIME_0", "t_REALTIME_1"]
        assert [s["source"].split("/")[-1] for s in shown["streams"]] == [topic, other]
        assert [[p["partition"] for p in s["partitions"]] for s in shown["streams"]] == [
            [0, 1, 2, 3],
            [10000, 10001],
        ]
    finally:
        engine.close()


def test_dedup_across_two_streams_keeps_a_key_once(engine, broker, topic):
    """Pinot allows ``dedupConfig`` with several streams; here the first record of a key
    is kept across the whole table, whichever stream brings it."""
    other = _second_topic(broker)
    keyed = schema([{"name": "id", "dataType": "INT"}, {"name": "p", "dataType": "INT"}], pk=["id"])
    produce(broker, topic, [(None, {"id": i, "p": 0, "ts": 1}, None) for i in range(5)])
    produce(broker, other, [(None, {"id": i, "p": 1, "ts": 1}, None) for i in range(3, 8)])
    t = _two_stream_table(broker, topic, other)
    t["dedupConfig"] = {"dedupEnabled": True}
    engine.pinot.add(t, keyed)
    _two_streams(engine)
    got = {r["id"]: r["p"] for r in engine.table_arrow("t").to_pylist()}
    assert got == {0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 1, 6: 1, 7: 1}

"""Confluent's Kinesis source class (io.confluent.connect.kinesis.KinesisSourceConnector)
through LOAD DATA KAFKACONNECT against moto in server mode on 127.0.0.1: the corpus
configs as written (the endpoint given as ``kinesis.base.url``, the keys moto's), rows
loaded exactly once, ``kinesis.position``, ``kinesis.shard.id``, and keys never shown
(the proxy and IAM-role corpus configs are validated in tests/unit/frontends/connect)."""

from __future__ import annotations

import json
import pathlib
import uuid

from sparkpipes.engine import Engine
from sparkpipes.frontends.singlestore.executor import SqlSession

GATE = 'SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"'
CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect" / "kinesis-source"


def _stream(moto, shards: int) -> str:
    name = f"c-{uuid.uuid4().hex[:8]}"
    moto.create_stream(name, shards)
    return name


def _put(moto, stream: str, start: int, end: int) -> None:
    moto.put_records(stream, [(f"pk{i}", json.dumps({"n": i}).encode()) for i in range(start, end)])


def _config(moto, stream: str, item: str = "playground-kinesis.json", **extra) -> dict:
    cfg = json.loads((CORPUS / item).read_text())
    cfg.update(
        {
            "kinesis.stream": stream,
            "kinesis.region": moto.region,
            "kinesis.base.url": moto.endpoint_url,
            "aws.access.key.id": moto.access_key_id,
            "aws.secret.key.id": moto.secret_access_key,
            **extra,
        }
    )
    return cfg


def _create(sess: SqlSession, cfg: dict, name: str = "ck") -> None:
    sess.execute(
        f"CREATE INFERRED PIPELINE {name} AS LOAD DATA KAFKACONNECT 'kinesis' "
        f"CONFIG '{json.dumps(cfg)}' FORMAT AVRO"
    )


def _ns(sess: SqlSession, table: str = "ck") -> list[int]:
    rows = sess.execute(f"SELECT JSON_EXTRACT_BIGINT(FROM_BASE64(record::$data), 'n') FROM {table}")
    return sorted(r[0] for r in rows[0].rows)


def _session(engine) -> SqlSession:
    s = SqlSession(engine)
    s.execute(GATE)
    return s


def test_the_playground_config_loads_exactly_once_across_a_restart(s3_server, tmp_path):
    stream = _stream(s3_server, 2)
    _put(s3_server, stream, 0, 300)
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    _create(sess, _config(s3_server, stream, **{"kinesis.record.limit": "50"}))
    sess.execute("START PIPELINE ck FOREGROUND")
    _put(s3_server, stream, 300, 400)
    eng.close()
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    sess.execute("START PIPELINE ck FOREGROUND")
    assert _ns(sess) == list(range(400))
    topics = sess.execute("SELECT DISTINCT topic FROM ck")[0].rows
    assert [tuple(r) for r in topics] == [("kinesis-topic",)]
    shown = json.dumps(sess.execute("SHOW CREATE PIPELINE ck")[0].rows, default=str)
    assert s3_server.secret_access_key not in shown
    assert s3_server.endpoint_url in shown
    eng.close()


def test_position_latest_and_a_shard_pattern(s3_server, engine):
    stream = _stream(s3_server, 2)
    _put(s3_server, stream, 0, 100)
    sess = _session(engine)
    _create(sess, _config(s3_server, stream, **{"kinesis.shard.id": r".*-000000000001"}), "c1")
    sess.execute("START PIPELINE c1 FOREGROUND")
    shards = sess.execute("SELECT DISTINCT record::$shardId FROM c1")[0].rows
    assert [tuple(r) for r in shards] == [("shardId-000000000001",)]
    at = "2000-01-01T00:00:00Z"
    at_cfg = {"kinesis.position": "AT_TIMESTAMP", "kinesis.shard.timestamp": at}
    _create(sess, _config(s3_server, stream, **at_cfg), "c2")
    sess.execute("START PIPELINE c2 FOREGROUND")
    assert _ns(sess, "c2") == list(range(100))

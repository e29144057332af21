"""The connector SPI without servers: resolving connector.class, CONFIG checks, the
task assignment, and a third-party connector found by its Python path."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pytest

from sparkpipes.config import Secret
from sparkpipes.engine.batch import planning
from sparkpipes.errors import ConfigError
from sparkpipes.sources import build_source
from sparkpipes.sources.connect import (
    PartitionReader,
    Polled,
    SourceConnector,
    SourceRecord,
    compact,
    known,
    resolve,
)
from sparkpipes.sources.connect.kinesis import KinesisConnector
from sparkpipes.util.registry import PLUGIN_MODULES_ENV

KINESIS = "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector"


class Counter(SourceConnector):
    """A third-party connector: ``count.partitions`` partitions of numbers."""

    config_keys = frozenset({"count.partitions", "count.upto"})

    def partitions(self) -> list[dict[str, Any]]:
        return [{"n": i} for i in range(self.config.integer("count.partitions", 3, 1))]

    def reader(self) -> PartitionReader:
        return CounterReader(self.config.integer("count.upto", 5, 0))


class CounterReader(PartitionReader):
    def __init__(self, upto: int) -> None:
        self.upto = upto

    def open(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        self.partition = dict(partition)
        self.next = offset.get("i", -1) + 1

    def poll(self, max_records: int, timeout_s: float) -> Polled:
        recs = [
            SourceRecord(self.partition, {"i": i}, {"value": i}, "numbers")
            for i in range(self.next, min(self.upto, self.next + max_records))
        ]
        self.next += len(recs)
        return Polled(recs, {"i": self.next - 1} if self.next else {}, self.next >= self.upto)


def kc(config: dict[str, Any], credentials: dict[str, Any] | None = None):
    creds = {k: Secret(v) for k, v in (credentials or {}).items()}
    return build_source("kafkaconnect", "c", config, creds)


def test_java_names_resolve_to_built_ins_and_unknown_ones_list_them(monkeypatch):
    assert resolve(KINESIS) is KinesisConnector
    assert {KINESIS, "io.confluent.connect.jdbc.JdbcSourceConnector"} <= set(known())
    with pytest.raises(ConfigError) as e:
        resolve("io.debezium.connector.mysql.MySqlConnector")
    assert KINESIS in str(e.value) and "package.module:Class" in str(e.value)
    monkeypatch.setenv(PLUGIN_MODULES_ENV, "builtins")
    with pytest.raises(ConfigError, match="not a sparkpipes SourceConnector"):
        resolve("builtins:dict")


def test_a_python_path_the_operator_did_not_allow_imports_nothing(monkeypatch):
    import sys

    monkeypatch.delenv(PLUGIN_MODULES_ENV, raising=False)
    sys.modules.pop("this", None)
    for name in ("this:X", "this.X", "sqlglot.__main__:X", f"{__name__}:Counter"):
        with pytest.raises(ConfigError) as e:
            resolve(name)
        assert PLUGIN_MODULES_ENV in str(e.value) and "sparkpipes.connectors" in str(e.value)
    assert "this" not in sys.modules and "sqlglot.__main__" not in sys.modules
    # an allowed prefix allows its submodules, not a module that merely starts alike
    monkeypatch.setenv(PLUGIN_MODULES_ENV, "thi, tests.nothere")
    with pytest.raises(ConfigError, match="not one the server's operator allowed"):
        resolve("this:X")
    assert "this" not in sys.modules


def test_an_allowed_module_that_exits_on_import_is_a_config_error(monkeypatch, tmp_path):
    import sys

    (tmp_path / "sp_exits_on_import.py").write_text("raise SystemExit(2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGIN_MODULES_ENV, "sp_exits_on_import")
    with pytest.raises(ConfigError, match=r"importing Python module .* failed \(SystemExit\)"):
        resolve("sp_exits_on_import:X")
    sys.modules.pop("sp_exits_on_import", None)


def test_a_connector_by_python_path_reads_through_the_source_spi(monkeypatch):
    monkeypatch.setenv(PLUGIN_MODULES_ENV, __name__)
    for path in (f"{__name__}:Counter", f"{__name__}.Counter"):
        src = kc({"connector.class": path, "tasks.max": 2, "count.upto": 3})
        meta = src.metadata()
        parts = meta.partitions()
        assert parts == ['{"n":0}', '{"n":1}', '{"n":2}']
        assert src.assignment(parts) == {'{"n":0}': 0, '{"n":1}': 1, '{"n":2}': 0}
    consumer = pickle.loads(pickle.dumps(src.consumer(parts[1])))  # goes to executors
    consumer.open(src.start_offset(meta, parts[1], "earliest"))
    got = consumer.fetch(2, 0.1)
    assert got.table.column_names == ["topic", "id", "record"]
    assert got.table.to_pylist()[0] == {
        "topic": "numbers",
        "id": '{"i":0,"n":1}',
        "record": '{"value":0}',
    }
    assert got.positions.to_pylist() == ['{"i":0}', '{"i":1}']
    assert consumer.position() == {"i": 1} and not got.at_end
    rest = consumer.fetch(10, 0.1)
    assert len(rest) == 1 and rest.at_end and consumer.position() == {"i": 2}


def test_config_is_checked_before_anything_connects():
    with pytest.raises(ConfigError, match=r"needs 'connector\.class'"):
        kc({"kinesis.stream": "s"})
    for bad in (0, -1, "four", True, 1.5):
        with pytest.raises(ConfigError, match=r"'tasks\.max' must be a positive integer"):
            kc({"connector.class": KINESIS, "kinesis.stream": "s", "tasks.max": bad})
    with pytest.raises(ConfigError, match=r"needs CONFIG key 'kinesis\.stream'"):
        kc({"connector.class": KINESIS})
    with pytest.raises(ConfigError, match=r"did you mean 'kinesis\.region'"):
        kc({"connector.class": KINESIS, "kinesis.stream": "s", "kinesis.regoin": "x"})
    with pytest.raises(ConfigError, match="CREDENTIALS key"):
        kc({"connector.class": KINESIS, "kinesis.stream": "s"}, {"password": "x"})
    src = kc({"connector.class": KINESIS, "kinesis.stream": "s"})
    assert src.connector.config.tasks_max == 4  # seed 000's default


def test_aws_keys_in_config_are_secrets():
    src = kc(
        {
            "connector.class": KINESIS,
            "kinesis.stream": "s",
            "aws.access.key.id": "AKIA-canary",
            "aws.secret.key.id": "canary-secret",
        }
    )
    assert src.secret_config_keys() == {"aws.access.key.id", "aws.secret.key.id"}
    shown = repr(src.describe()) + repr(src.connector.config)
    assert "canary" not in shown
    assert src.connector.client.keys["aws_secret_access_key"] == "canary-secret"


def test_a_child_shard_waits_for_its_parents_and_ended_shards_are_not_read():
    src = kc({"connector.class": KINESIS, "kinesis.stream": "s"})
    conn = src.connector
    conn._parents = {"p": [], "a": ["p"], "b": ["p"], "m": ["a", "b"]}
    ids = [compact({"shardId": s}) for s in ("a", "b", "m", "p")]
    offsets = {compact({"shardId": "p"}): {"sequenceNumber": "9"}}
    assert src.ready(ids, offsets) == [compact({"shardId": "p"})]
    offsets[compact({"shardId": "p"})] = {"sequenceNumber": "9", "ended": True}
    assert src.ready(ids, offsets) == [compact({"shardId": s}) for s in ("a", "b")]
    offsets[compact({"shardId": "a"})] = {"ended": True}
    offsets[compact({"shardId": "b"})] = {"sequenceNumber": "3", "ended": True}
    assert src.ready(ids, offsets) == [compact({"shardId": "m"})]


def test_tasks_group_partitions_into_spark_tasks():
    items = [planning.Pending(p, {}, None, None) for p in "abcd"]
    groups = {"a": 0, "b": 1, "c": 0, "d": 1}
    tasks = planning.stream_tasks(items, None, 1, groups)
    assert [[p.partition for p in t] for t in tasks] == [["a", "c"], ["b", "d"]]
    assert len(planning.stream_tasks(items, 1, 1, groups)) == 1
    assert pa.types.is_string(kc({"connector.class": KINESIS, "kinesis.stream": "s"}).position_type)


def test_confluent_kinesis_keys_are_read_and_refused_by_name():
    base = {
        "connector.class": "io.confluent.connect.kinesis.KinesisSourceConnector",
        "kinesis.stream": "s",
        "kafka.topic": "t",
        "kinesis.region": "EU_WEST_1",
        "kinesis.shard.id": "shardId-00000000000[12]",
        "kinesis.position": "AT_TIMESTAMP",
        "kinesis.shard.timestamp": "2026-01-31T12:00:00Z",
        "aws.access.key.id": "AKIA-1",
        "aws.secret.key.id": "s3cret",
    }
    src = build_source("kafkaconnect", "k", base, {})
    conn = src.connector
    assert conn.client.region == "eu-west-1" and conn.record_limit == 500
    assert conn.wanted("shardId-000000000002") and not conn.wanted("shardId-000000000003")
    assert conn.start_offset({"shardId": "x"}, "earliest") == {"timestamp": 1769860800000}
    assert "s3cret" not in str(src.describe())
    with pytest.raises(ConfigError) as e:
        build_source(
            "kafkaconnect",
            "k",
            {
                **base,
                "kafka.topic": "",
                "kinesis.proxy.url": "http://u:pr0xy-pw@127.0.0.1:8888",
                "kinesis.position": "SOMEWHERE",
            },
            {},
        )
    text = str(e.value)
    assert "kafka.topic" in text and "kinesis.position" in text and "proxy" in text
    assert "pr0xy-pw" not in text and "s3cret" not in text


def test_confluent_kinesis_latest_starts_a_resharded_child_at_its_beginning():
    """``kinesis.position=LATEST`` is where the stream's shards start when first seen; a
    shard split from one still listed starts at its beginning, or what was written to it
    between the split and its first read would be skipped."""
    src = build_source(
        "kafkaconnect",
        "k",
        {
            "connector.class": "io.confluent.connect.kinesis.KinesisSourceConnector",
            "kinesis.stream": "s",
            "kafka.topic": "t",
            "kinesis.position": "LATEST",
        },
        {},
    )
    conn = src.connector
    conn._parents = {"shardId-1": ["shardId-0-expired"], "shardId-2": ["shardId-1"]}
    assert "timestamp" in conn.start_offset({"shardId": "shardId-1"}, "earliest")
    assert conn.start_offset({"shardId": "shardId-2"}, "earliest") == {}

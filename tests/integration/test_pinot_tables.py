"""Pinot realtime tables on the real broker: upsert (FULL with a comparison column,
PARTIAL per-column strategies), dedup, ``metadata.populate``, transforms and filters,
``defaultNullValue`` — each checked by the rows a query of the table returns."""

from __future__ import annotations

import copy
import json

import pytest
from confluent_kafka import Producer

BASE_TABLE = {
    "tableName": "t",
    "tableType": "REALTIME",
    "segmentsConfig": {"timeColumnName": "ts", "schemaName": "s", "replicasPerPartition": "1"},
    "tenants": {},
    "tableIndexConfig": {"loadMode": "MMAP", "streamConfigs": {}},
    "metadata": {"customConfigs": {}},
}


def table_config(broker, topic, **extra):
    t = copy.deepcopy(BASE_TABLE)
    t["tableIndexConfig"]["streamConfigs"] = {
        "streamType": "kafka",
        "stream.kafka.consumer.type": "lowlevel",
        "stream.kafka.topic.name": topic,
        "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        "stream.kafka.consumer.factory.class.name": "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory",
        "stream.kafka.broker.list": broker.bootstrap,
        "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
        **extra.pop("stream", {}),
    }
    t.update(extra)
    return t


def schema(dims, metrics=(), pk=(), time_type="LONG"):
    doc = {
        "schemaName": "s",
        "dimensionFieldSpecs": list(dims),
        "metricFieldSpecs": list(metrics),
        "dateTimeFieldSpecs": [
            {"name": "ts", "dataType": time_type, "format": "1:MILLISECONDS:EPOCH", "granularity": "1:MILLISECONDS"}
        ],
    }
    if pk:
        doc["primaryKeyColumns"] = list(pk)
    return doc


def produce(broker, topic, records, partition=0):
    """Records as (key, value dict, headers) in order, into one partition."""
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for key, value, headers in records:
        p.produce(topic, json.dumps(value).encode(), key=key, headers=headers, partition=partition)
    assert p.flush(30) == 0


def load(engine, table_doc, schema_doc):
    engine.pinot.add(table_doc, schema_doc)
    engine.run_batches("t_REALTIME", 10, until_idle=True)


def rows(engine, key="id"):
    return {r[key]: r for r in engine.table_arrow("t").to_pylist()}


def test_full_upsert_keeps_the_newest_by_the_time_column(engine, broker, topic):
    s = schema([{"name": "id", "dataType": "INT"}, {"name": "v", "dataType": "STRING"}], pk=["id"])
    t = table_config(broker, topic, upsertConfig={"mode": "FULL"})
    produce(broker, topic, [(None, {"id": 1, "v": "a", "ts": 10}, None), (None, {"id": 1, "v": "b", "ts": 30}, None), (None, {"id": 1, "v": "late", "ts": 20}, None), (None, {"id": 2, "v": "x", "ts": 5}, None)])
    load(engine, t, s)
    assert {k: (r["v"], r["ts"]) for k, r in rows(engine).items()} == {1: ("b", 30), 2: ("x", 5)}
    # a later batch: an older record loses to the stored row, a newer one wins, ties go to the later
    produce(broker, topic, [(None, {"id": 1, "v": "older", "ts": 25}, None), (None, {"id": 2, "v": "y", "ts": 5}, None), (None, {"id": 3, "v": "new", "ts": 1}, None)])
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert {k: (r["v"], r["ts"]) for k, r in rows(engine).items()} == {1: ("b", 30), 2: ("y", 5), 3: ("new", 1)}


def test_partial_upsert_merges_column_by_column(engine, broker, topic):
    s = schema(
        [{"name": "id", "dataType": "INT"}, {"name": "name", "dataType": "STRING"}, {"name": "first", "dataType": "STRING"}, {"name": "tags", "dataType": "STRING", "singleValueField": False}],
        metrics=[{"name": "clicks", "dataType": "LONG"}, {"name": "best", "dataType": "DOUBLE"}],
        pk=["id"],
    )
    t = table_config(
        broker,
        topic,
        upsertConfig={
            "mode": "PARTIAL",
            "partialUpsertStrategies": {"clicks": "INCREMENT", "best": "MAX", "tags": "UNION", "first": "IGNORE"},
            "defaultPartialUpsertStrategy": "OVERWRITE",
        },
    )
    produce(broker, topic, [
        (None, {"id": 1, "name": "ann", "first": "f1", "tags": ["a"], "clicks": 2, "best": 1.5, "ts": 1}, None),
        (None, {"id": 1, "name": None, "first": "f2", "tags": ["b", "a"], "clicks": 3, "best": 0.5, "ts": 2}, None),
    ])
    load(engine, t, s)
    r = rows(engine)[1]
    assert (r["name"], r["first"], sorted(r["tags"]), r["clicks"], r["best"], r["ts"]) == ("ann", "f1", ["a", "b"], 5, 1.5, 2)
    produce(broker, topic, [(None, {"id": 1, "name": "bob", "first": "f3", "tags": ["c"], "clicks": 10, "best": 9.0, "ts": 3}, None)])
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    r = rows(engine)[1]
    assert (r["name"], r["first"], sorted(r["tags"]), r["clicks"], r["best"]) == ("bob", "f1", ["a", "b", "c"], 15, 9.0)


def test_dedup_keeps_the_first_record_of_a_key(engine, broker, topic):
    s = schema([{"name": "id", "dataType": "INT"}, {"name": "v", "dataType": "STRING"}], pk=["id"])
    t = table_config(broker, topic, dedupConfig={"dedupEnabled": True, "hashFunction": "NONE"})
    produce(broker, topic, [(None, {"id": i % 3, "v": f"v{i}", "ts": i}, None) for i in range(9)])
    load(engine, t, s)
    produce(broker, topic, [(None, {"id": 0, "v": "again", "ts": 99}, None)])
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert {k: r["v"] for k, r in rows(engine).items()} == {0: "v0", 1: "v1", 2: "v2"}


def test_metadata_populate_fills_key_headers_offset_partition_timestamp(engine, broker, topic):
    dims = [{"name": "id", "dataType": "INT"}] + [
        {"name": n, "dataType": "STRING"}
        for n in ("__key", "__header$source", "__metadata$offset", "__metadata$partition", "__metadata$recordTimestamp")
    ]
    t = table_config(broker, topic, stream={"metadata.populate": "true"})
    produce(broker, topic, [(f"k{i}".encode(), {"id": i, "ts": i}, [("source", f"app{i}".encode())] if i else None) for i in range(3)], partition=2)
    load(engine, t, schema(dims))
    got = rows(engine)
    assert [got[i]["__key"] for i in range(3)] == ["k0", "k1", "k2"]
    assert [got[i]["__header$source"] for i in range(3)] == [None, "app1", "app2"]
    assert [got[i]["__metadata$offset"] for i in range(3)] == ["0", "1", "2"]
    assert {got[i]["__metadata$partition"] for i in range(3)} == {"2"}
    assert all(int(got[i]["__metadata$recordTimestamp"]) > 1_700_000_000_000 for i in range(3))


def test_metadata_columns_need_metadata_populate(engine, broker, topic):
    from sparkpipes.errors import ConfigError

    dims = [{"name": "id", "dataType": "INT"}, {"name": "__key", "dataType": "STRING"}]
    with pytest.raises(ConfigError, match=r"metadata.populate"):
        engine.pinot.add(table_config(broker, topic), schema(dims))
    assert "t" not in engine.tables()

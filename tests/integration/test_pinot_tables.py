"""Pinot realtime tables on the real broker: upsert (FULL with a comparison column,
PARTIAL per-column strategies), dedup, ``metadata.populate``, transforms and filters,
``defaultNullValue`` — each checked by the rows a query of the table returns."""

from __future__ import annotations

import copy
import json
import os

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
            {
                "name": "ts",
                "dataType": time_type,
                "format": "1:MILLISECONDS:EPOCH",
                "granularity": "1:MILLISECONDS",
            }
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
    produce(
        broker,
        topic,
        [
            (None, {"id": 1, "v": "a", "ts": 10}, None),
            (None, {"id": 1, "v": "b", "ts": 30}, None),
            (None, {"id": 1, "v": "late", "ts": 20}, None),
            (None, {"id": 2, "v": "x", "ts": 5}, None),
        ],
    )
    load(engine, t, s)
    assert {k: (r["v"], r["ts"]) for k, r in rows(engine).items()} == {1: ("b", 30), 2: ("x", 5)}
    # a later batch: an older record loses to the stored row, a newer one wins, ties go to the later
    produce(
        broker,
        topic,
        [
            (None, {"id": 1, "v": "older", "ts": 25}, None),
            (None, {"id": 2, "v": "y", "ts": 5}, None),
            (None, {"id": 3, "v": "new", "ts": 1}, None),
        ],
    )
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    assert {k: (r["v"], r["ts"]) for k, r in rows(engine).items()} == {
        1: ("b", 30),
        2: ("y", 5),
        3: ("new", 1),
    }


def test_partial_upsert_merges_column_by_column(engine, broker, topic):
    s = schema(
        [
            {"name": "id", "dataType": "INT"},
            {"name": "name", "dataType": "STRING"},
            {"name": "first", "dataType": "STRING"},
            {"name": "tags", "dataType": "STRING", "singleValueField": False},
        ],
        metrics=[{"name": "clicks", "dataType": "LONG"}, {"name": "best", "dataType": "DOUBLE"}],
        pk=["id"],
    )
    t = table_config(
        broker,
        topic,
        upsertConfig={
            "mode": "PARTIAL",
            "partialUpsertStrategies": {
                "clicks": "INCREMENT",
                "best": "MAX",
                "tags": "UNION",
                "first": "IGNORE",
            },
            "defaultPartialUpsertStrategy": "OVERWRITE",
        },
    )
    t["tableIndexConfig"]["nullHandlingEnabled"] = True  # Pinot requires it for PARTIAL
    produce(
        broker,
        topic,
        [
            (
                None,
                {
                    "id": 1,
                    "name": "ann",
                    "first": "f1",
                    "tags": ["a"],
                    "clicks": 2,
                    "best": 1.5,
                    "ts": 1,
                },
                None,
            ),
            (
                None,
                {
                    "id": 1,
                    "name": None,
                    "first": "f2",
                    "tags": ["b", "a"],
                    "clicks": 3,
                    "best": 0.5,
                    "ts": 2,
                },
                None,
            ),
        ],
    )
    load(engine, t, s)
    r = rows(engine)[1]
    assert (r["name"], r["first"], sorted(r["tags"]), r["clicks"], r["best"], r["ts"]) == (
        "ann",
        "f1",
        ["a", "b"],
        5,
        1.5,
        2,
    )
    produce(
        broker,
        topic,
        [
            (
                None,
                {
                    "id": 1,
                    "name": "bob",
                    "first": "f3",
                    "tags": ["c"],
                    "clicks": 10,
                    "best": 9.0,
                    "ts": 3,
                },
                None,
            )
        ],
    )
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    r = rows(engine)[1]
    assert (r["name"], r["first"], sorted(r["tags"]), r["clicks"], r["best"]) == (
        "bob",
        "f1",
        ["a", "b", "c"],
        15,
        9.0,
    )


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
        for n in (
            "__key",
            "__header$source",
            "__metadata$offset",
            "__metadata$partition",
            "__metadata$recordTimestamp",
        )
    ]
    t = table_config(broker, topic, stream={"metadata.populate": "true"})
    produce(
        broker,
        topic,
        [
            (f"k{i}".encode(), {"id": i, "ts": i}, [("source", f"app{i}".encode())] if i else None)
            for i in range(3)
        ],
        partition=2,
    )
    load(engine, t, schema(dims))
    got = rows(engine)
    assert [got[i]["__key"] for i in range(3)] == ["k0", "k1", "k2"]
    # no such header: the STRING default null value, as Pinot's NullValueTransformer stores
    assert [got[i]["__header$source"] for i in range(3)] == ["null", "app1", "app2"]
    assert [got[i]["__metadata$offset"] for i in range(3)] == ["0", "1", "2"]
    assert {got[i]["__metadata$partition"] for i in range(3)} == {"2"}
    assert all(int(got[i]["__metadata$recordTimestamp"]) > 1_700_000_000_000 for i in range(3))


def test_a_table_never_takes_over_or_drops_a_pipeline_of_its_name(engine, broker, topic):
    """A pipeline named like a Pinot table's (``t_REALTIME``) is someone else's: adding the
    table is refused before anything is made, and the pipeline stays as it was (held-out
    review: a user with CREATE and CREATE PIPELINE only could drop it this way)."""
    from sparkpipes.errors import AlreadyExistsError

    engine.create_table("other", "id INT")
    engine.create_pipeline(
        "t_REALTIME", source="kafka", location=f"{broker.bootstrap}/{topic}", table="other"
    )
    dims = [{"name": "id", "dataType": "INT"}]
    with pytest.raises(AlreadyExistsError, match=r"pipeline 't_REALTIME' already exists"):
        engine.pinot.add(table_config(broker, topic), schema(dims))
    assert engine.catalog.pipelines.get("t_REALTIME").table == "other"
    assert "t" not in engine.tables() and "t" not in engine.pinot.names()


def test_retention_deletes_rows_older_than_the_retention(engine, broker, topic):
    now = 1_790_000_000_000
    day = 86_400_000
    s = schema([{"name": "id", "dataType": "INT"}])
    t = table_config(broker, topic)
    t["segmentsConfig"].update(retentionTimeUnit="DAYS", retentionTimeValue="3")
    produce(broker, topic, [(None, {"id": i, "ts": now - i * day}, None) for i in range(6)])
    load(engine, t, s)
    done = engine.pinot.maintain("t", now_ms=now + 1)
    assert done["t"]["expired"] == 3  # 3, 4 and 5 days old
    assert sorted(rows(engine)) == [0, 1, 2]


def test_retention_by_timestamp_and_date_pattern_columns(engine, broker, topic):
    from sparkpipes.frontends.pinot.service import retention_predicate

    ts = {
        "ms": 86_400_000,
        "column": "ts",
        "type": "TIMESTAMP",
        "format": {"kind": "EPOCH", "unit": "MILLISECONDS", "size": 1, "pattern": None},
    }
    assert retention_predicate(ts, 1_790_000_000_000) == "`ts` < '2026-09-20T14:13:20.000000Z'"
    day = {
        "ms": 86_400_000,
        "column": "d",
        "type": "STRING",
        "format": {
            "kind": "SIMPLE_DATE_FORMAT",
            "unit": "DAYS",
            "size": 1,
            "pattern": "yyyy-MM-dd",
        },
    }
    assert retention_predicate(day, 1_790_000_000_000) == "`d` < '2026-09-20'"
    hours = {
        "ms": 7_200_000,
        "column": "h",
        "type": "LONG",
        "format": {"kind": "EPOCH", "unit": "HOURS", "size": 1, "pattern": None},
    }
    assert retention_predicate(hours, 36_000_000) == "`h` < 8"
    s = schema([{"name": "id", "dataType": "INT"}], time_type="TIMESTAMP")
    t = table_config(broker, topic)
    t["segmentsConfig"].update(retentionTimeUnit="HOURS", retentionTimeValue="1")
    produce(
        broker,
        topic,
        [(None, {"id": i, "ts": 1_790_000_000_000 - i * 1_000_000}, None) for i in range(8)],
    )
    load(engine, t, s)
    engine.pinot.maintain(now_ms=1_790_000_000_000)
    assert sorted(rows(engine)) == [0, 1, 2, 3]  # 3,600 s: 0 to 3,000 s old stay


def test_compaction_bounds_the_files_of_many_small_batches(engine, broker, topic):
    """Small batches, each its own commit and files; the flush threshold (rows) compacts
    them while a reader counts: every snapshot holds each row once, none goes missing,
    and the file count stays bounded."""
    import threading
    import time

    from deltalake import DeltaTable

    batches, per_batch = int(os.environ.get("SP_PINOT_BATCHES", "400")), 8
    total = batches * per_batch
    s = schema([{"name": "id", "dataType": "INT"}])
    t = table_config(broker, topic, stream={"realtime.segment.flush.threshold.rows": "200"})
    broker.produce(topic, [json.dumps({"id": i, "ts": i}) for i in range(total)], partitions=4)
    engine.pinot.add(t, s)
    engine.alter_pipeline("t_REALTIME", max_offsets_per_batch_partition=per_batch // 4)
    location = engine.catalog.tables.get("t").location
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            ids = DeltaTable(location).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
            seen.append((len(ids), len(set(ids)), max(ids, default=-1)))
            time.sleep(0.05)

    r = threading.Thread(target=reader)
    r.start()
    most_files = 0
    started = time.time()
    try:
        for _ in range(batches // 25):
            engine.run_batches("t_REALTIME", 25)
            most_files = max(most_files, len(DeltaTable(location).file_uris()))
            engine.pinot.maintain("t")
    finally:
        stop.set()
        r.join()
    elapsed = time.time() - started
    ids = engine.table_arrow("t").column("id").to_pylist()
    assert len(ids) == total and len(set(ids)) == total
    assert all(n == distinct for n, distinct, _ in seen)  # no snapshot holds a row twice
    assert [n for n, _, _ in seen] == sorted(n for n, _, _ in seen)  # none loses rows
    # 4 files (one per partition) of 2 rows a batch; compacted at 200 rows: at most 100
    # small files before, 25 batches' (100) until maintenance runs, one per 200 rows after
    # (uncompacted, 400 batches would leave 1,600 files: seven times the bound)
    bound = 100 + 100 + total // 200 + 10
    assert most_files <= bound, most_files
    assert len(DeltaTable(location).file_uris()) <= bound
    print(f"{batches} batches in {elapsed:.0f}s, at most {most_files} files")


def test_transforms_filters_and_default_null_values(engine, broker, topic):
    """ingestionConfig.transformConfigs over fields the schema does not have, a field's own
    transformFunction, a filterConfig (a record the filter is true for is dropped) and
    defaultNullValue, as a Pinot user writes them."""
    s = schema(
        [
            {"name": "id", "dataType": "INT"},
            {"name": "city", "dataType": "STRING", "defaultNullValue": "unknown"},
            {"name": "day", "dataType": "STRING"},
            {"name": "secs", "dataType": "LONG"},
            {"name": "seen", "dataType": "TIMESTAMP"},
            {"name": "upper_name", "dataType": "STRING", "transformFunction": "upper(name)"},
        ]
    )
    t = table_config(
        broker,
        topic,
        ingestionConfig={
            "transformConfigs": [
                {
                    "columnName": "city",
                    "transformFunction": "jsonPathString(payload, '$.address.city')",
                },
                {"columnName": "day", "transformFunction": "toDateTime(ts, 'yyyy-MM-dd')"},
                {"columnName": "secs", "transformFunction": "toEpochSeconds(ts)"},
                {
                    "columnName": "seen",
                    "transformFunction": "fromDateTime(seenAt, 'yyyy-MM-dd HH:mm:ss')",
                },
            ],
            "filterConfig": {"filterFunction": "strcmp(kind, 'test') = 0 OR id > 100"},
        },
    )
    produce(
        broker,
        topic,
        [
            (
                None,
                {
                    "id": 1,
                    "name": "ann",
                    "kind": "real",
                    "ts": 1_790_000_000_123,
                    "seenAt": "2026-09-21 14:13:20",
                    "payload": {"address": {"city": "Oslo"}},
                },
                None,
            ),
            (
                None,
                {"id": 2, "name": "bob", "kind": "test", "ts": 1_790_000_000_000, "payload": {}},
                None,
            ),
            (
                None,
                {
                    "id": 3,
                    "name": "cy",
                    "kind": "real",
                    "ts": 86_400_000,
                    "payload": {"address": {}},
                },
                None,
            ),
            (None, {"id": 101, "name": "big", "kind": "real", "ts": 0, "payload": {}}, None),
        ],
    )
    load(engine, t, s)
    got = rows(engine)
    assert sorted(got) == [1, 3]  # 2 is a test record, 101 has id > 100
    one = got[1]
    assert (one["city"], one["day"], one["secs"], one["upper_name"]) == (
        "Oslo",
        "2026-09-21",
        1_790_000_000,
        "ANN",
    )
    assert one["seen"].isoformat() == "2026-09-21T14:13:20+00:00"
    assert (got[3]["city"], got[3]["day"]) == ("unknown", "1970-01-02")
    # no seenAt: a TIMESTAMP dimension's default null value, 0 (null handling is off)
    assert got[3]["seen"].isoformat() == "1970-01-01T00:00:00+00:00"


def test_an_unsupported_transform_function_is_named(engine, broker, topic):
    from sparkpipes.errors import ConfigError

    s = schema([{"name": "id", "dataType": "INT"}, {"name": "x", "dataType": "STRING"}])
    t = table_config(
        broker,
        topic,
        ingestionConfig={
            "transformConfigs": [{"columnName": "x", "transformFunction": "toEpochSecond(ts)"}]
        },
    )
    with pytest.raises(
        ConfigError,
        match=r"transform of column 'x'.*unknown transform function 'toEpochSecond'.*did you mean 'toEpochSeconds'",
    ):
        engine.pinot.add(t, s)
    t["ingestionConfig"]["transformConfigs"][0]["transformFunction"] = "Groovy({ts / 1000}, ts)"
    with pytest.raises(ConfigError, match="Groovy"):
        engine.pinot.add(t, s)
    assert "t" not in engine.tables()


def test_sasl_settings_reach_the_kafka_client_and_the_password_never_shows(engine, broker, topic):
    """seed 002's SASL keys: the user and password come out of sasl.jaas.config and go to
    the client, which offers them to the broker. The embedded broker (Tansu) has no SASL
    (README, Security), so it refuses the handshake: the batch fails saying so, naming no
    password, and SHOW CREATE PIPELINE / information_schema / the stored config redact it."""
    from sparkpipes.errors import SparkpipesError
    from sparkpipes.frontends.singlestore.executor import SqlSession

    secret = "kafka-pw-91c2"
    stream = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="{secret}";',
    }
    engine.pinot.add(
        table_config(broker, topic, stream=stream), schema([{"name": "id", "dataType": "INT"}])
    )
    spec = engine.spec("t_REALTIME")
    assert spec.source.config["sasl.mechanism"] == "SCRAM-SHA-256"
    assert spec.source.credentials["sasl.password"].reveal() == secret
    engine.alter_pipeline("t_REALTIME", max_retries=0)
    with pytest.raises(SparkpipesError) as e:
        engine.run_batches("t_REALTIME", 1)
    assert "SASL" in e.value.message and secret not in e.value.message
    sess = SqlSession(engine)
    shown = str(sess.execute("SHOW CREATE PIPELINE t_REALTIME")[0].rows)
    shown += str(sess.execute("SELECT * FROM information_schema.PIPELINES")[0].rows)
    shown += json.dumps(engine.pinot.config("t"))
    assert secret not in shown and "Pinot realtime table t" in shown


def test_offset_criteria_by_time_start_at_the_first_record_after_it(engine, broker, topic):
    """auto.offset.reset as a time: each partition starts at its first record whose Kafka
    timestamp is at or after it (the metadata provider's offset for a timestamp)."""
    p = Producer({"bootstrap.servers": broker.bootstrap})
    base = 1_790_000_000_000
    for i in range(20):
        p.produce(
            topic,
            json.dumps({"id": i, "ts": i}).encode(),
            partition=i % 4,
            timestamp=base + i * 1000,
        )
    assert p.flush(30) == 0
    t = table_config(
        broker,
        topic,
        stream={"stream.kafka.consumer.prop.auto.offset.reset": "2026-09-21T14:13:30Z"},
    )
    load(engine, t, schema([{"name": "id", "dataType": "INT"}]))
    assert sorted(rows(engine)) == list(range(10, 20))  # base + 10 s on

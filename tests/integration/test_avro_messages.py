"""FORMAT AVRO for Kafka messages: Confluent's wire format through a schema registry
(the stand-in of sparkpipes.testing.registry over HTTP, with confluent-kafka's real
client) and a fixed schema, converted as SingleStore documents
(https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/extracting-and-converting-avro-values):
two schema versions in one topic, nested records by path, a union by its branch
(``name::string``), logical types as their underlying values, and records that cannot
decode skipped with partition and offset."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.testing.registry import bare, encode

V1 = {
    "type": "record",
    "name": "order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "addr",
                "fields": [{"name": "city", "type": "string"}],
            },
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": "string", "default": ""}]}
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def order(i: int, **extra) -> dict:
    return {
        "id": i,
        "name": None if i % 10 == 0 else f"n{i}",
        "amount": Decimal(f"{i}.25"),
        "ts": EPOCH + dt.timedelta(milliseconds=i),
        "address": {"city": f"c{i % 3}"},
        "tags": [f"t{i % 2}"],
        **extra,
    }


def test_registry_avro_messages_of_two_schema_versions(broker, topic, registry, engine):
    v1, v2 = registry.register(V1), registry.register(V2)
    records = [encode(v1, V1, order(i)) for i in range(100)]
    records += [encode(v2, V2, order(i, note="second")) for i in range(100, 150)]
    records.insert(50, b"\x00\x00\x00\x03\xe7garbage")  # schema id 999: not in the registry
    broker.produce(topic, records, partition=0)
    sess = SqlSession(engine)
    sess.execute(
        "CREATE TABLE orders (id BIGINT, name TEXT, amount BLOB, ts BIGINT, "
        "city TEXT, tags TEXT, whole_name TEXT)"
    )
    sess.execute(
        f"CREATE PIPELINE av AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "SKIP PARSER ERRORS INTO TABLE orders "
        f"FORMAT AVRO SCHEMA REGISTRY '{registry.url}' "
        "(id <- id, name <- name::string, amount <- amount, ts <- ts, city <- address::city, "
        "tags <- tags, whole_name <- name)"
    )
    shown = sess.execute("SHOW CREATE PIPELINE av")[0].rows[0][1]
    assert f"FORMAT AVRO SCHEMA REGISTRY '{registry.url}'" in shown
    sess.execute("START PIPELINE av FOREGROUND")
    rows = sess.execute(
        "SELECT id, name, amount, ts, city, tags, whole_name FROM orders ORDER BY id"
    )[0].rows
    assert [r[0] for r in rows] == list(range(150))
    r7 = rows[7]
    assert (r7[1], r7[4], json.loads(r7[5])) == ("n7", "c1", ["t1"])
    # a decimal's unscaled bytes and a timestamp-millis's milliseconds (logical types are
    # not applied); the union taken whole is its JSON encoding
    assert int.from_bytes(r7[2], "big", signed=True) == int(Decimal("7.25") * 100)
    assert r7[3] == int(EPOCH.timestamp() * 1000) + 7
    assert json.loads(r7[6]) == {"string": "n7"}
    assert rows[10][1] is None and rows[10][6] is None
    errors = engine.information_schema("PIPELINES_ERRORS").to_pylist()
    assert len(errors) == 1
    assert errors[0]["BATCH_SOURCE_PARTITION_ID"] == "0"
    assert "schema id 999 is not in the schema registry" in errors[0]["ERROR_MESSAGE"]


def test_a_fixed_schema_and_mistakes_named(broker, topic, engine):
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "int"}]}
    broker.produce(topic, [bare(schema, {"id": i}) for i in range(20)], partition=0)
    sess = SqlSession(engine)
    sess.execute("CREATE TABLE ids (id INT)")
    sess.execute(
        f"CREATE PIPELINE fx AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE ids "
        f"FORMAT AVRO SCHEMA '{json.dumps(schema)}'"
    )
    sess.execute("START PIPELINE fx FOREGROUND")
    assert sorted(r[0] for r in sess.execute("SELECT id FROM ids")[0].rows) == list(range(20))
    with pytest.raises(SparkpipesError, match=r"FORMAT AVRO SCHEMA REGISTRY 'url'"):
        sess.execute(
            f"CREATE PIPELINE nope AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            "INTO TABLE ids FORMAT AVRO"
        )
    with pytest.raises(SparkpipesError, match=r"Avro schema does not parse"):
        sess.execute(
            f"CREATE PIPELINE nope AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            'INTO TABLE ids FORMAT AVRO SCHEMA \'{"type": "recrd"}\''
        )
    with pytest.raises(SparkpipesError, match=r"FORMAT JSON takes no SCHEMA"):
        sess.execute(
            f"CREATE PIPELINE nope AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            "INTO TABLE ids FORMAT JSON SCHEMA 'x'"
        )

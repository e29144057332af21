"""Single Message Transforms of a sink connector, end to end: Debezium-shaped change
events (the JsonConverter's envelope, with keys and tombstones) on the Tansu broker,
through ExtractNewRecordState, RegexRouter, ReplaceField and InsertField, into Delta
tables the connector creates from the first transformed record — deletes dropped or
rewritten and tombstones dropped or skipped into the errors as configured; and Avro
records through the registry, transformed into a PostgreSQL table the connector
creates."""

from __future__ import annotations

import json
import uuid

from confluent_kafka import Producer

from sparkpipes import Engine
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.testing.registry import encode
from tests.integration.databases import ScratchDb

ROW = {
    "type": "struct",
    "optional": True,
    "name": "dbserver1.inventory.customers.Value",
    "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "first_name", "type": "string", "optional": False},
        {"field": "email", "type": "string", "optional": False},
    ],
}
SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "dbserver1.inventory.customers.Envelope",
    "fields": [
        {**ROW, "field": "before"},
        {**ROW, "field": "after"},
        {
            "type": "struct",
            "optional": False,
            "field": "source",
            "fields": [
                {"field": "db", "type": "string", "optional": False},
                {"field": "table", "type": "string", "optional": True},
            ],
        },
        {"field": "op", "type": "string", "optional": False},
        {"field": "ts_ms", "type": "int64", "optional": True},
    ],
}
KEY = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int32"}]}
P = "org.apache.kafka.connect.transforms."


def row(i: int, name: str) -> dict:
    return {"id": i, "first_name": name, "email": f"{name.lower()}@x.org"}


def change(op: str, before: dict | None, after: dict | None) -> bytes:
    payload = {
        "before": before,
        "after": after,
        "source": {"db": "inventory", "table": "customers"},
        "op": op,
        "ts_ms": 1_700_000_000_000,
    }
    return json.dumps({"schema": SCHEMA, "payload": payload}).encode()


def key(i: int) -> bytes:
    return json.dumps({"schema": KEY, "payload": {"id": i}}).encode()


#: what Debezium writes for: 4 inserts, an update of 2, a delete of 3 and its tombstone
EVENTS = [
    *[(key(i), change("c", None, row(i, n))) for i, n in enumerate(["Ann", "Bo", "Cy", "Di"], 1)],
    (key(2), change("u", row(2, "Bo"), row(2, "Bob"))),
    (key(3), change("d", row(3, "Cy"), None)),
    (key(3), None),
]


def produce(broker, topic: str) -> None:
    broker.create_topic(topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for k, v in EVENTS:
        p.produce(topic, v, key=k, partition=0)
    p.flush(10)


def connector(broker, name: str, topic: str, **extra: str) -> dict:
    return {
        "name": name,
        "config": {
            "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
            "topics": topic,
            "bootstrap.servers": broker.bootstrap,
            "transforms": "unwrap,route,drop,insert",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.add.fields": "op,table",
            "transforms.route.type": P + "RegexRouter",
            "transforms.route.regex": r"dbserver1\.inventory\.(.*)",
            "transforms.route.replacement": "$1",
            "transforms.drop.type": P + "ReplaceField$Value",
            "transforms.drop.exclude": "email",
            "transforms.insert.type": P + "InsertField$Value",
            "transforms.insert.topic.field": "routed_to",
            "transforms.insert.offset.field": "kafka_offset",
            **extra,
        },
    }


def drain(engine: Engine, name: str) -> None:
    for p in engine.connectors.get(name)["pipelines"]:
        engine.run_batches(p, 20, until_idle=True)


def rows(engine: Engine, table: str) -> list[tuple]:
    return sorted(
        tuple(r)
        for r in engine.sql(
            f"SELECT kafka_offset, id, first_name, __op, __table, routed_to FROM {table}"
        ).collect()
    )


def test_debezium_events_unwrapped_routed_and_loaded_with_deletes_dropped(broker, engine):
    suffix = uuid.uuid4().hex[:6]
    topic = f"dbserver1.inventory.customers{suffix}"
    table = f"customers{suffix}"
    produce(broker, topic)
    engine.connectors.create(connector(broker, "cdc", topic, **{"tableKey.PRIMARY": "id"}))
    drain(engine, "cdc")
    # the table is the routed topic's, created from the first transformed record: no
    # email (excluded), the inserted and Debezium's added fields, the key from tableKey
    columns = [f.name for f in engine.catalog.tables.get(table).schema]
    assert columns == ["id", "first_name", "__op", "__table", "routed_to", "kafka_offset"]
    assert rows(engine, table) == [
        (0, 1, "Ann", "c", "customers", table),
        (1, 2, "Bo", "c", "customers", table),
        (2, 3, "Cy", "c", "customers", table),
        (3, 4, "Di", "c", "customers", table),
        (4, 2, "Bob", "u", "customers", table),
    ]  # the delete (offset 5) and its tombstone (6) are dropped, as Debezium's default
    errors = engine.information_schema("PIPELINES_ERRORS").to_pylist()
    assert not [e for e in errors if e["PIPELINE_NAME"] == "cdc"]
    status = engine.connectors.status("cdc")
    assert status["connector"]["state"] == "RUNNING"
    shown = SqlSession(engine).execute("SHOW CREATE PIPELINE cdc")[0].rows[0][1]
    assert shown.startswith(f"-- decodes topic {topic} as a Kafka Connect sink task does")
    assert engine.connectors.config("cdc")["transforms"] == "unwrap,route,drop,insert"


def test_deletes_rewritten_and_tombstones_kept_go_to_the_errors(broker, engine):
    suffix = uuid.uuid4().hex[:6]
    topic = f"dbserver1.inventory.people{suffix}"
    table = f"people{suffix}"
    produce(broker, topic)
    cfg = connector(
        broker,
        "cdc-rewrite",
        topic,
        **{
            "transforms.unwrap.delete.handling.mode": "rewrite",
            "transforms.unwrap.drop.tombstones": "false",
            "errors.tolerance": "all",
        },
    )
    engine.connectors.create(cfg)
    drain(engine, "cdc-rewrite")
    got = engine.sql(f"SELECT kafka_offset, id, __deleted FROM {table}").collect()
    assert sorted(tuple(r) for r in got) == [
        (0, 1, "false"),
        (1, 2, "false"),
        (2, 3, "false"),
        (3, 4, "false"),
        (4, 2, "false"),
        (5, 3, "true"),  # the delete, as its before state
    ]
    errors = engine.information_schema("PIPELINES_ERRORS").to_pylist()
    mine = [e for e in errors if e["PIPELINE_NAME"] == "cdc_rewrite"]
    assert len(mine) == 1 and "tombstone" in str(mine[0])


def test_avro_records_transformed_into_a_created_postgresql_table(broker, registry, engine):
    schema = {
        "type": "record",
        "name": "order",
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "card", "type": "string"},
            {"name": "amount", "type": ["null", "double"], "default": None},
        ],
    }
    sid = registry.register(schema)
    suffix = uuid.uuid4().hex[:6]
    topic = f"orders{suffix}"
    broker.create_topic(topic, 2)
    broker.produce(
        topic,
        [encode(sid, schema, {"id": i, "card": f"4111-{i}", "amount": i / 2}) for i in range(20)],
        partitions=2,
    )
    db = ScratchDb("postgresql")
    try:
        cfg = {
            "name": "avro-smt",
            "config": {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics": topic,
                "bootstrap.servers": broker.bootstrap,
                "connection.url": f"jdbc:postgresql://{db.hostport}/{db.database}"
                f"?currentSchema={db.schema}",
                "connection.user": db.user,
                "connection.password": db.password,
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": registry.url,
                "tableKey.PRIMARY": "id",
                "transforms": "drop,part,cast",
                "transforms.drop.type": P + "ReplaceField$Value",
                "transforms.drop.exclude": "card",
                "transforms.part.type": P + "InsertField$Value",
                "transforms.part.partition.field": "kafka_partition",
                "transforms.cast.type": P + "Cast$Value",
                "transforms.cast.spec": "amount:string",
            },
        }
        engine.connectors.create(cfg)
        drain(engine, "avro-smt")
        t = db.name(topic)
        columns = db.rows(
            "SELECT column_name, data_type FROM information_schema.columns WHERE "
            f"table_schema = '{db.schema}' AND table_name = '{topic}' ORDER BY ordinal_position"
        )
        # card excluded; id the schema's int; amount a Cast to text; the partition added
        assert columns == [
            ("id", "integer"),
            ("amount", "text"),
            ("kafka_partition", "integer"),
        ]
        got = db.rows(f"SELECT id, amount, kafka_partition FROM {t} ORDER BY id")
        assert [(r[0], r[1]) for r in got] == [(i, str(i / 2)) for i in range(20)]
        assert {r[2] for r in got} == {0, 1}
    finally:
        db.drop()

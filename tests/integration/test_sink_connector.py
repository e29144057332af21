"""Sink connectors (seed 001) from topics of the Tansu broker into the real PostgreSQL and
MariaDB servers and into Delta: tables created from the record schema with the tableKey
keys, insert-only and upsert, envelope and plain JSON, several topics, the metadata
table's rows matching what was loaded, and a restart that loads nothing twice."""

from __future__ import annotations

import json

import pytest

from sparkpipes import Engine
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from tests.integration.databases import ScratchDb

SCHEMA = {
    "type": "struct",
    "name": "order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "email", "type": "string", "optional": False},
        {"field": "amount", "type": "float64", "optional": True},
        {"field": "tags", "type": "array", "items": {"type": "string"}, "optional": True},
    ],
}


def envelope(i: int, amount: float | None = None) -> str:
    payload = {"id": i, "email": f"u{i}@x.org", "amount": amount or i / 4, "tags": [f"t{i % 3}"]}
    return json.dumps({"schema": SCHEMA, "payload": payload})


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request):
    d = ScratchDb(request.param)
    yield d
    d.drop()


def destination(db: ScratchDb) -> dict[str, str]:
    if db.kind == "postgresql":
        return {
            "connection.url": f"jdbc:postgresql://{db.hostport}/{db.database}"
            f"?currentSchema={db.schema}",
            "connection.user": db.user,
            "connection.password": db.password,
        }
    return {
        "connection.ddlEndpoint": db.hostport,
        "connection.database": db.database,
        "connection.user": db.user,
        "connection.password": db.password,
    }


def config(broker, name: str, topics: str, **extra) -> dict:
    return {
        "name": name,
        "config": {
            "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
            "tasks.max": "2",
            "topics": topics,
            "bootstrap.servers": broker.bootstrap,
            **extra,
        },
    }


def drain(engine: Engine, connector: str) -> None:
    for p in engine.connectors.get(connector)["pipelines"]:
        engine.run_batches(p, 20, until_idle=True)


def test_an_envelope_topic_creates_the_table_with_its_keys_and_loads_exactly_once(
    broker, topic, db, tmp_path
):
    broker.produce(topic, [envelope(i) for i in range(300)], partitions=4)
    cfg = config(
        broker,
        "orders-sink",
        topic,
        **destination(db),
        **{
            "tableKey.PRIMARY": "id",
            "tableKey.UNIQUE.unique_email": "email",
            "tableKey.KEY.by_amount": "amount",
            "tableKey.SHARD": "id",
        },
    )
    eng = Engine(tmp_path / "wh")
    info = eng.connectors.create(cfg)
    assert info["name"] == "orders-sink" and info["type"] == "sink"
    assert "connection.password" not in info["config"]
    drain(eng, "orders-sink")
    t = db.name(topic)
    assert db.rows(f"SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM {t}") == [
        (300, 300, 0, 299)
    ]
    email, tags = db.rows(f"SELECT email, tags FROM {t} WHERE id = 7")[0]
    assert email == "u7@x.org"
    assert (tags if isinstance(tags, list) else json.loads(tags)) == ["t1"]
    if db.kind == "postgresql":
        keys = db.rows(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = "
            f"'{db.schema}' AND tablename = '{topic}' ORDER BY indexname"
        )
        text = " ".join(k[0] for k in keys)
    else:
        text = db.rows(f"SHOW CREATE TABLE {t}")[0][1]
    assert "unique_email" in text and "by_amount" in text
    assert ("PRIMARY KEY" in text) or ("_pkey" in text)

    broker.produce(topic, [envelope(i) for i in range(300, 400)], partitions=4)
    eng.close()
    eng = Engine(tmp_path / "wh")  # a restart resumes from the metadata table
    drain(eng, "orders-sink")
    assert db.rows(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {t}") == [(400, 400)]
    meta = db.rows(
        f"SELECT id, count, partition_key FROM {db.name('kafka_connect_transaction_metadata')}"
    )
    assert sum(m[1] for m in meta) == 400
    assert {m[2] for m in meta} == {"0", "1", "2", "3"}
    assert all(m[0].startswith(f"{topic}-{m[2]}-") for m in meta)
    from sparkpipes.frontends.singlestore.executor import SqlSession

    shown = SqlSession(eng).execute("SHOW CREATE PIPELINE orders_sink")[0].rows[0][1]
    assert shown.startswith(f"-- loads table {topic} of the ") and "password" not in shown
    listed = [p[0] for p in SqlSession(eng).execute("SHOW PIPELINES")[0].rows]
    assert "orders_sink" in listed
    status = eng.connectors.status("orders-sink")
    assert status["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
    eng.close()


def test_plain_json_into_an_existing_table_and_upsert_by_its_key(broker, topic, db, engine):
    t = db.name("accounts")
    db.run(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, balance DOUBLE PRECISION, note TEXT)")
    rows = [{"id": i % 50, "balance": float(i), "note": f"n{i}"} for i in range(200)]
    broker.produce(topic, [json.dumps(r) for r in rows], partition=0)
    cfg = config(
        broker,
        "accounts",
        topic,
        **destination(db),
        **{
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            f"singlestore.tableName.{topic}": "accounts",
            "singlestore.upsert": "true",
        },
    )
    engine.connectors.create(cfg)
    drain(engine, "accounts")
    got = dict(db.rows(f"SELECT id, balance FROM {t}"))
    assert got == {i: float(150 + i) for i in range(50)}  # the last record of each id


def test_records_without_a_schema_need_the_table(broker, topic, db, engine):
    broker.produce(topic, [json.dumps({"id": 1})])
    cfg = config(
        broker, "nope", topic, **destination(db), **{"value.converter.schemas.enable": "false"}
    )
    with pytest.raises(SparkpipesError, match=r"does not exist .* carry no schema"):
        engine.connectors.create(cfg)
    assert "nope" not in engine.connectors.names()


def test_several_topics_into_delta_tables(broker, engine):
    topics = []
    for n in range(2):
        name = f"multi{n}_{id(engine) % 10000}"
        broker.create_topic(name, 2)
        broker.produce(name, [envelope(i) for i in range(n * 100, n * 100 + 50)], partitions=2)
        topics.append(name)
    cfg = config(broker, "lake", ",".join(topics), **{"tableKey.PRIMARY": "id"})
    engine.connectors.create(cfg)
    names = engine.connectors.get("lake")["pipelines"]
    assert names == [f"lake__{t}" for t in topics]
    drain(engine, "lake")
    for n, t in enumerate(topics):
        ids = sorted(r[0] for r in engine.sql(f"SELECT id FROM {t}").collect())
        assert ids == list(range(n * 100, n * 100 + 50))
    engine.connectors.pause("lake")
    assert engine.connectors.status("lake")["connector"]["state"] == "PAUSED"
    engine.connectors.resume("lake")
    assert engine.connectors.status("lake")["connector"]["state"] == "RUNNING"
    engine.connectors.delete("lake")
    assert engine.connectors.names() == []
    assert not [p for p in engine.pipelines() if p.name.startswith("lake")]


@pytest.fixture
def pg():
    d = ScratchDb("postgresql")
    yield d
    d.drop()


def test_bad_records_fail_the_connector_or_go_to_the_dead_letter_table(broker, topic, pg, engine):
    good = [envelope(i) for i in range(20)]
    broker.produce(topic, [*good[:10], "{not json", *good[10:]], partition=0)
    strict = config(broker, "strict", topic, **destination(pg), **{"max.retries": "0"})
    engine.connectors.create(strict)
    with pytest.raises(SparkpipesError, match=r"partition 0.* offset 10|offset 10.*partition 0"):
        drain(engine, "strict")
    status = engine.connectors.status("strict")
    assert status["connector"]["state"] == "FAILED"
    assert "offset 10" in status["tasks"][0]["trace"]
    assert pg.rows(f"SELECT COUNT(*) FROM {pg.name(topic)}") == [(0,)]  # nothing half-loaded
    engine.connectors.delete("strict")

    tolerant = config(
        broker,
        "tolerant",
        topic,
        **destination(pg),
        **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.table.name": "dead_letters",
            f"singlestore.tableName.{topic}": "kept",
        },
    )
    pg.run(f"CREATE TABLE {pg.name('kept')} AS SELECT * FROM {pg.name(topic)} WITH NO DATA")
    engine.connectors.create(tolerant)
    drain(engine, "tolerant")
    assert pg.rows(f"SELECT COUNT(*) FROM {pg.name('kept')}") == [(20,)]
    errors = engine.information_schema("PIPELINES_ERRORS").to_pylist()
    mine = [e for e in errors if e["PIPELINE_NAME"] == "tolerant"]
    assert len(mine) == 1 and mine[0]["BATCH_SOURCE_PARTITION_ID"] == "0"
    dead = pg.rows(
        f"SELECT topic, partition_key, record_offset, excerpt FROM {pg.name('dead_letters')}"
    )
    assert dead == [(topic, "0", "10", "{not json")]  # committed with the batch


def test_a_destination_gone_fails_the_connector_and_resume_continues(broker, topic, pg, engine):
    broker.produce(topic, [envelope(i) for i in range(40)], partitions=4)
    engine.connectors.create(
        config(broker, "gone", topic, **destination(pg), **{"max.retries": "1"})
    )
    drain(engine, "gone")
    broker.produce(topic, [envelope(i) for i in range(40, 90)], partitions=4)
    pg.run(f"ALTER TABLE {pg.name(topic)} RENAME TO away")
    with pytest.raises(SparkpipesError, match=r"does not exist|has no table"):
        drain(engine, "gone")
    status = engine.connectors.status("gone")
    assert status["connector"]["state"] == "FAILED"
    assert topic in status["tasks"][0]["trace"]
    pg.run(f'ALTER TABLE {pg.name("away")} RENAME TO "{topic}"')
    engine.connectors.resume("gone")
    drain(engine, "gone")
    assert pg.rows(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {pg.name(topic)}") == [(90, 90)]
    assert engine.connectors.status("gone")["connector"]["state"] == "RUNNING"


def test_a_topics_regex_connector_picks_up_topics_that_come_to_match(broker, engine):
    prefix = f"rx{id(engine) % 100000}"
    broker.create_topic(f"{prefix}_a", 1)
    broker.create_topic(f"other{prefix}", 1)
    broker.produce(f"{prefix}_a", [envelope(i) for i in range(5)])
    cfg = config(broker, "rx", "", **{"topics.regex": f"{prefix}_.*"})
    cfg["config"].pop("topics")
    engine.connectors.create(cfg)
    assert engine.connectors.get("rx")["topics"] == [f"{prefix}_a"]
    assert engine.connectors.refresh() == []
    broker.create_topic(f"{prefix}_b", 1)
    broker.produce(f"{prefix}_b", [envelope(i) for i in range(5, 8)])
    assert engine.connectors.refresh() == [f"rx__{prefix}_b"]
    drain(engine, "rx")
    assert engine.sql(f"SELECT count(*) FROM {prefix}_b").collect()[0][0] == 3
    assert [t["state"] for t in engine.connectors.status("rx")["tasks"]] == ["RUNNING"] * 2


def test_avro_records_through_the_schema_registry(broker, topic, pg, registry, engine):
    from sparkpipes.testing.registry import encode

    schema = {
        "type": "record",
        "name": "event",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"], "default": None},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {
                "name": "where",
                "type": {
                    "type": "record",
                    "name": "w",
                    "fields": [{"name": "city", "type": "string"}],
                },
            },
        ],
    }
    sid = registry.register(schema)
    import datetime as dt

    at = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    broker.produce(
        topic,
        [
            encode(
                sid,
                schema,
                {
                    "id": i,
                    "name": None if i % 5 == 0 else f"n{i}",
                    "at": at + dt.timedelta(seconds=i),
                    "where": {"city": "x"},
                },
            )
            for i in range(60)
        ],
        partitions=4,
    )
    cfg = config(
        broker,
        "avro-sink",
        topic,
        **destination(pg),
        **{
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry.url,
            "tableKey.PRIMARY": "id",
        },
    )
    engine.connectors.create(cfg)
    drain(engine, "avro-sink")
    t = pg.name(topic)
    assert pg.rows(f"SELECT COUNT(*), COUNT(DISTINCT id), COUNT(name) FROM {t}") == [(60, 60, 48)]
    when, where = pg.rows(f'SELECT at, "where" FROM {t} WHERE id = 7')[0]
    assert when == dt.datetime(2026, 3, 1, 0, 0, 7)
    assert where == {"city": "x"}


def test_a_connector_never_takes_over_a_pipeline_that_is_not_its_own(broker, engine):
    """Pipeline names are made from the connector's name (``a-b`` → ``a_b``): a connector
    whose name collides with a pipeline made by SQL (or another connector's) is refused,
    created or reconfigured, and that pipeline is left as it was (review R12)."""
    SqlSession(engine).execute(
        "CREATE TABLE kept (id INT); CREATE PIPELINE a_b AS LOAD DATA KAFKA "
        f"'{broker.bootstrap}/elsewhere' SKIP SOURCE CHECK INTO TABLE kept FORMAT JSON"
    )
    for t in ("c1", "c2"):
        broker.create_topic(t, 1)
        broker.produce(t, [envelope(1)])
    with pytest.raises(SparkpipesError, match="a_b, which already exist"):
        engine.connectors.create(config(broker, "a-b", "c1", **{"tableKey.PRIMARY": "id"}))
    engine.connectors.create(config(broker, "a-b", "c1,c2", **{"tableKey.PRIMARY": "id"}))
    assert engine.connectors.get("a-b")["pipelines"] == ["a_b__c1", "a_b__c2"]
    with pytest.raises(SparkpipesError, match="a_b, which already exist"):
        engine.connectors.create(
            config(broker, "a-b", "c1", **{"tableKey.PRIMARY": "id"}), replace=True
        )
    assert engine.spec("a_b").sink.table == "kept"
    assert engine.connectors.get("a-b")["pipelines"] == ["a_b__c1", "a_b__c2"]

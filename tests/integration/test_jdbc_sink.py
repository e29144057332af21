"""Confluent's JDBC sink connector (``io.confluent.connect.jdbc.JdbcSinkConnector``) from
topics of the Tansu broker into the real PostgreSQL and MariaDB servers and a SQLite
file, with Confluent's semantics (confluentinc/kafka-connect-jdbc: ``BufferedRecords``,
``FieldsMetadata``, ``DbStructure``, ``RecordValidator``): upserts by value fields, the
Debezium unwrap + tombstone deletes by record key, an insert of a duplicate key failing
the batch (or going to the errors with ``errors.tolerance=all``), update-only writes,
``auto.create=false`` on a missing table, ``table.name.format``, ``auto.evolve``, and
exactly once across a restart."""

from __future__ import annotations

import json
import pathlib
import sqlite3
import uuid

import pytest
from confluent_kafka import Producer

from sparkpipes import Engine
from sparkpipes.errors import SparkpipesError
from sparkpipes.testing.registry import encode
from tests.integration.databases import ScratchDb

SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect"


def struct(name: str, *fields: tuple[str, str, bool]) -> dict:
    return {
        "type": "struct",
        "name": name,
        "optional": False,
        "fields": [{"field": f, "type": t, "optional": o} for f, t, o in fields],
    }


ORDER = struct("order", ("id", "int64", False), ("item", "string", False), ("qty", "int32", True))
KEY = struct("key", ("id", "int64", False))


def order(i: int, item: str, qty: int | None = None, schema: dict = ORDER, **more) -> bytes:
    payload = {"id": i, "item": item, "qty": qty, **more}
    return json.dumps({"schema": schema, "payload": payload}).encode()


def key(i: int) -> bytes:
    return json.dumps({"schema": KEY, "payload": {"id": i}}).encode()


def produce(broker, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for k, v in records:
        p.produce(topic, v, key=k, partition=0)
    p.flush(10)


@pytest.fixture
def topic(broker):
    """A fresh topic of one partition (records of a key share one, as keyed producers
    make them)."""
    name = f"jdbc_{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 1)
    return name


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request):
    d = ScratchDb(request.param)
    yield d
    d.drop()


def url(db: ScratchDb) -> str:
    """A JDBC URL of the scratch space, the login inside it as Confluent's docs write it."""
    login = f"user={db.user}&password={db.password}"
    if db.kind == "postgresql":
        return f"jdbc:postgresql://{db.hostport}/{db.database}?currentSchema={db.schema}&{login}"
    return f"jdbc:mariadb://{db.hostport}/{db.database}?{login}"


def connector(broker, name: str, topic: str, db_url: str, **extra: str) -> dict:
    return {
        "name": name,
        "config": {
            "connector.class": SINK,
            "tasks.max": "1",
            "topics": topic,
            "connection.url": db_url,
            "bootstrap.servers": broker.bootstrap,
            **extra,
        },
    }


def drain(engine: Engine, name: str) -> None:
    for p in engine.connectors.get(name)["pipelines"]:
        engine.run_batches(p, 20, until_idle=True)


def test_upsert_by_value_fields_creates_the_table_and_is_exactly_once_across_a_restart(
    broker, topic, db, tmp_path
):
    produce(broker, topic, [(None, order(i % 3, f"v{i}", i)) for i in range(7)])
    cfg = connector(
        broker,
        "orders",
        topic,
        url(db),
        **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"},
        **{"auto.create": "true"},
    )
    eng = Engine(tmp_path / "wh")
    info = eng.connectors.create(cfg)
    assert "password=<redacted>" in info["config"]["connection.url"]
    drain(eng, "orders")
    t = db.name(topic)
    assert sorted(db.rows(f"SELECT id, item, qty FROM {t}")) == [
        (0, "v6", 6),
        (1, "v4", 4),
        (2, "v5", 5),
    ]  # the last record of each id
    produce(broker, topic, [(None, order(i, f"w{i}", None)) for i in (2, 3)])
    eng.close()
    eng = Engine(tmp_path / "wh")  # a restart resumes from the metadata table
    drain(eng, "orders")
    assert sorted(db.rows(f"SELECT id, item, qty FROM {t}")) == [
        (0, "v6", 6),
        (1, "v4", 4),
        (2, "w2", None),
        (3, "w3", None),
    ]
    meta = db.rows(f"SELECT count FROM {db.name('kafka_connect_transaction_metadata')}")
    assert sum(m[0] for m in meta) == 9  # each record once
    eng.close()


ROW = struct(
    "dbserver1.inventory.customers.Value",
    ("id", "int32", False),
    ("first_name", "string", False),
    ("email", "string", False),
)
ENVELOPE = {
    "type": "struct",
    "optional": False,
    "name": "dbserver1.inventory.customers.Envelope",
    "fields": [
        {**ROW, "optional": True, "field": "before"},
        {**ROW, "optional": True, "field": "after"},
        {"field": "op", "type": "string", "optional": False},
    ],
}
CUSTOMER_KEY = struct("dbserver1.inventory.customers.Key", ("id", "int32", False))


def change(op: str, i: int, name: str | None) -> tuple[bytes, bytes]:
    row = {"id": i, "first_name": name, "email": f"{name}@x.org"} if name else None
    before, after = (row, None) if op == "d" else (None, row)
    value = {"schema": ENVELOPE, "payload": {"before": before, "after": after, "op": op}}
    k = {"schema": CUSTOMER_KEY, "payload": {"id": i}}
    return json.dumps(k).encode(), json.dumps(value).encode()


def test_debezium_unwrap_with_tombstones_deletes_by_record_key(broker, topic, db, engine):
    """debezium/debezium-examples unwrap-smt/jdbc-sink.json as written (the corpus item),
    pointed at the scratch database: Debezium's deletes are dropped by the unwrap, their
    tombstones delete the key; a key deleted then created again in one batch exists."""
    tombstone = (change("d", 3, "Cy")[0], None)
    produce(
        broker,
        topic,
        [
            *(change("c", i, n) for i, n in enumerate(["Ann", "Bo", "Cy", "Di"], 1)),
            change("u", 2, "Bob"),
            change("d", 3, "Cy"),
            tombstone,
            change("d", 4, "Di"),
            (change("d", 4, "Di")[0], None),
            change("c", 4, "Dee"),
        ],
    )
    item = json.loads((CORPUS / "jdbc-sink" / "debezium-examples-unwrap-smt.json").read_text())
    cfg = item["config"] | {
        "topics": topic,
        "connection.url": url(db),
        "bootstrap.servers": broker.bootstrap,
    }
    engine.connectors.create({"name": "customers", "config": cfg})
    drain(engine, "customers")
    t = db.name(topic)
    assert sorted(db.rows(f"SELECT id, first_name, email FROM {t}")) == [
        (1, "Ann", "Ann@x.org"),
        (2, "Bob", "Bob@x.org"),
        (4, "Dee", "Dee@x.org"),
    ]
    keys = (
        db.rows(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            f"AND a.attnum = ANY(i.indkey) WHERE i.indrelid = '{t}'::regclass AND i.indisprimary"
        )
        if db.kind == "postgresql"
        else [(r[4],) for r in db.rows(f"SHOW KEYS FROM {t} WHERE Key_name = 'PRIMARY'")]
    )
    assert keys == [("id",)]  # pk.mode=record_key, pk.fields=id


def test_an_insert_of_a_key_already_there_fails_the_batch_or_goes_to_the_errors(
    broker, topic, db, engine
):
    t = db.name("items")
    db.run(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, item VARCHAR(20), qty INT)")
    produce(broker, topic, [(None, order(i, f"v{i}")) for i in (1, 2, 1, 3)])
    keyed = {"pk.mode": "record_value", "pk.fields": "id", "table.name.format": "items"}
    engine.connectors.create(connector(broker, "strict", topic, url(db), **keyed))
    with pytest.raises(SparkpipesError, match=r"(?i)duplicate"):
        drain(engine, "strict")
    assert db.rows(f"SELECT COUNT(*) FROM {t}") == [(0,)]  # one transaction: nothing
    assert engine.connectors.status("strict")["connector"]["state"] == "FAILED"
    engine.connectors.delete("strict")

    tolerant = {**keyed, "errors.tolerance": "all"}
    engine.connectors.create(connector(broker, "tolerant", topic, url(db), **tolerant))
    drain(engine, "tolerant")
    assert sorted(db.rows(f"SELECT id, item FROM {t}")) == [(1, "v1"), (2, "v2"), (3, "v3")]
    errors = engine.information_schema("PIPELINES_ERRORS").to_pylist()
    mine = [e for e in errors if e["PIPELINE_NAME"] == "tolerant"]
    assert len(mine) == 1 and "uplicate" in str(mine[0])
    assert engine.connectors.status("tolerant")["connector"]["state"] == "RUNNING"


def test_update_mode_changes_only_rows_that_are_there(broker, topic, db, engine):
    t = db.name("stock")
    db.run(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, item VARCHAR(20), qty INT)")
    db.run(f"INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2)")
    produce(broker, topic, [(None, order(2, "b2", 20)), (None, order(3, "c", 30))])
    cfg = connector(
        broker,
        "stock",
        topic,
        url(db),
        **{"insert.mode": "update", "pk.mode": "record_value", "pk.fields": "id"},
        **{"table.name.format": "stock"},
    )
    engine.connectors.create(cfg)
    drain(engine, "stock")
    assert sorted(db.rows(f"SELECT id, item, qty FROM {t}")) == [(1, "a", 1), (2, "b2", 20)]


def test_a_missing_table_without_auto_create_and_table_name_format(broker, topic, db, engine):
    produce(broker, topic, [(None, order(1, "x", 1))])
    with pytest.raises(SparkpipesError, match="is missing and auto-creation is disabled"):
        engine.connectors.create(connector(broker, "nope", topic, url(db)))
    assert "nope" not in engine.connectors.names()
    cfg = connector(
        broker,
        "named",
        topic,
        url(db),
        **{"table.name.format": "kafka_${topic}", "auto.create": "true"},
    )
    engine.connectors.create(cfg)
    drain(engine, "named")
    assert db.rows(f"SELECT id, item, qty FROM {db.name('kafka_' + topic)}") == [(1, "x", 1)]


NOTED = struct(
    "order",
    ("id", "int64", False),
    ("item", "string", False),
    ("qty", "int32", True),
    ("note", "string", True),
)


def test_auto_evolve_adds_optional_fields_and_a_new_field_is_never_dropped(
    broker, topic, db, engine
):
    t = db.name("evolving")
    db.run(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, item VARCHAR(20))")
    produce(broker, topic, [(None, order(1, "a", 10))])
    cfg = connector(
        broker,
        "evolving",
        topic,
        url(db),
        **{"pk.mode": "record_value", "pk.fields": "id", "insert.mode": "upsert"},
        **{"auto.evolve": "true", "table.name.format": "evolving"},
    )
    engine.connectors.create(cfg)  # qty (optional) is added when the connector is made
    drain(engine, "evolving")
    assert db.rows(f"SELECT id, item, qty FROM {t}") == [(1, "a", 10)]
    produce(broker, topic, [(None, order(2, "b", 20, NOTED, note="new"))])
    with pytest.raises(SparkpipesError, match=r"missing fields \(note\)"):
        drain(engine, "evolving")  # a field the table lacks fails its record, never dropped
    assert engine.connectors.status("evolving")["connector"]["state"] == "FAILED"
    engine.connectors.restart("evolving", include_tasks=True, only_failed=True)
    drain(engine, "evolving")  # the restart added the column
    assert sorted(db.rows(f"SELECT id, item, qty, note FROM {t}")) == [
        (1, "a", 10, None),
        (2, "b", 20, "new"),
    ]


def test_without_auto_evolve_a_record_with_a_field_the_table_lacks_is_refused(
    broker, topic, db, engine
):
    t = db.name("fixed")
    db.run(f"CREATE TABLE {t} (id BIGINT, item VARCHAR(20))")
    produce(broker, topic, [(None, order(1, "a")), (None, order(2, "b", 5))])
    cfg = connector(
        broker,
        "fixed",
        topic,
        url(db),
        **{"table.name.format": "fixed", "errors.tolerance": "all"},
    )
    engine.connectors.create(cfg)
    drain(engine, "fixed")
    assert db.rows(f"SELECT id, item FROM {t}") == [(1, "a")]  # qty is null in the first
    errors = [
        e
        for e in engine.information_schema("PIPELINES_ERRORS").to_pylist()
        if e["PIPELINE_NAME"] == "fixed"
    ]
    assert len(errors) == 1
    assert "is missing fields (qty) and auto-evolution is disabled" in str(errors[0])


def test_kafka_coordinates_and_a_string_key_into_sqlite(broker, topic, tmp_path, engine):
    """Confluent's own quickstart destination: a SQLite file (``jdbc:sqlite:test.db``)."""
    path = tmp_path / "test.db"
    produce(broker, topic, [(b"k1", order(1, "a")), (b"k2", order(2, "b")), (b"k1", order(3, "c"))])
    base = {
        "connection.url": f"jdbc:sqlite:{path}",
        "auto.create": "true",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    coords = connector(broker, "coords", topic, "", **base, **{"pk.mode": "kafka"})
    engine.connectors.create(coords)
    drain(engine, "coords")
    with sqlite3.connect(path) as c:
        got = c.execute(
            f'SELECT "__connect_topic", "__connect_partition", "__connect_offset", id, item '
            f'FROM "{topic}" ORDER BY 3'
        ).fetchall()
    assert got == [(topic, 0, 0, 1, "a"), (topic, 0, 1, 2, "b"), (topic, 0, 2, 3, "c")]
    keyed = connector(
        broker,
        "keyed",
        topic,
        "",
        **base,
        **{
            "pk.mode": "record_key",
            "pk.fields": "k",
            "insert.mode": "upsert",
            "table.name.format": "by_key",
        },
    )
    engine.connectors.create(keyed)
    drain(engine, "keyed")
    with sqlite3.connect(path) as c:
        got = c.execute('SELECT k, id, item FROM "by_key" ORDER BY k').fetchall()
    assert got == [("k1", 3, "c"), ("k2", 2, "b")]


def test_confluents_sqlite_quickstart_as_written(broker, topic, tmp_path, engine):
    """config/sink-quickstart-sqlite.properties of confluentinc/kafka-connect-jdbc (the
    corpus item), its ``test.db`` put in a scratch directory and its topic ours."""
    text = (CORPUS / "jdbc-sink" / "jdbc-quickstart-sqlite.properties").read_text()
    path = tmp_path / "test.db"
    text = text.replace("jdbc:sqlite:test.db", f"jdbc:sqlite:{path}")
    text = text.replace("topics=orders", f"topics={topic}")
    produce(broker, topic, [(None, order(i, f"item{i}", i)) for i in range(3)])
    engine.connectors.create(text + f"\nbootstrap.servers={broker.bootstrap}\n")
    drain(engine, "test-sink")
    with sqlite3.connect(path) as c:
        got = c.execute(f'SELECT id, item, qty FROM "{topic}" ORDER BY id').fetchall()
    assert got == [(0, "item0", 0), (1, "item1", 1), (2, "item2", 2)]


def test_avro_keys_and_values_through_the_registry(broker, topic, registry, engine):
    """debezium/debezium-examples end-to-end-demo/jdbc-sink.json's converters: Avro keys
    and values of one schema registry, pk.mode=record_key, deletes by tombstone."""
    value_schema = {
        "type": "record",
        "name": "hike",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "trail", "type": ["null", "string"], "default": None},
        ],
    }
    key_schema = {"type": "record", "name": "hike_key", "fields": [{"name": "id", "type": "long"}]}
    vid, kid = registry.register(value_schema), registry.register(key_schema)

    def avro_key(i: int) -> bytes:
        return encode(kid, key_schema, {"id": i})

    produce(
        broker,
        topic,
        [
            *(
                (avro_key(i), encode(vid, value_schema, {"id": i, "trail": f"t{i}"}))
                for i in range(3)
            ),
            (avro_key(1), None),
        ],
    )
    item = json.loads((CORPUS / "jdbc-sink" / "debezium-examples-end-to-end-avro.json").read_text())
    db = ScratchDb("postgresql")
    try:
        cfg = {
            k: v
            for k, v in item["config"].items()
            if not k.startswith("transforms")  # the records here are not Debezium's
        } | {
            "topics": topic,
            "connection.url": url(db),
            "bootstrap.servers": broker.bootstrap,
            "key.converter.schema.registry.url": registry.url,
            "value.converter.schema.registry.url": registry.url,
        }
        engine.connectors.create({"name": "hikes", "config": cfg})
        drain(engine, "hikes")
        assert sorted(db.rows(f"SELECT id, trail FROM {db.name(topic)}")) == [(0, "t0"), (2, "t2")]
    finally:
        db.drop()

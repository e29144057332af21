"""Kafka Connect Single Message Transforms of JDBC source connectors, through the real
pipeline path (CREATE INFERRED PIPELINE … KAFKACONNECT, batches in Spark tasks) against
the PostgreSQL and MariaDB servers on 127.0.0.1: the transforms of real configs of the
corpus (``tests/corpus/connect``) load rows as Connect would have produced them, a
``Filter`` drops records without errors, and a record a transform cannot process fails
the batch or, with ``errors.tolerance=all``, is in PIPELINES_ERRORS with its offset."""

from __future__ import annotations

import json
import pathlib

import pytest

from sparkpipes.engine import Engine
from sparkpipes.errors import SparkpipesError
from tests.integration.test_jdbc_source import Db, _session

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect" / "jdbc-source"


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request):
    d = Db(request.param)
    yield d
    d.drop()


def _transforms(item: str) -> dict[str, str]:
    """The ``transforms*`` keys of a corpus config, as its authors wrote them."""
    obj = json.loads((CORPUS / f"{item}.json").read_text())
    cfg = obj.get("config", obj)
    return {k: str(v) for k, v in cfg.items() if k.startswith(("transforms", "predicates"))}


def _rows(sess, table: str = "jp") -> list[tuple]:
    rows = sess.execute(f"SELECT topic, id, record FROM {table}")[0].rows
    return sorted(((t, json.loads(i), json.loads(r)) for t, i, r in rows), key=lambda x: str(x[1]))


def test_value_to_key_and_extract_field_key_make_the_id_the_key(db, tmp_path):
    # demo-scene's smt-day2 config: ValueToKey(fields=id) then ExtractField$Key(field=id)
    # -> the record key is the id value itself (ValueToKey.java, ExtractField.java)
    t = db.table("customers")
    db.insert(t, range(1, 6))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **_transforms("demo-scene-smt-day2-mysql-02"))
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = _rows(sess)
    assert [r[1] for r in rows] == [1, 2, 3, 4, 5]
    assert {r[0] for r in rows} == {"db-customers"}
    assert rows[0][2]["name"] == "n1" and rows[0][2]["id"] == 1
    eng.close()


def test_cast_key_after_extract_field_and_set_schema_metadata(db, tmp_path):
    # examples' microservices-customers: ValueToKey, ExtractField$Key, Cast$Key int64,
    # SetSchemaMetadata$Value (no effect on rows)
    t = db.table("customers")
    db.insert(t, range(1, 4))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **_transforms("examples-microservices-customers"))
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = _rows(sess)
    assert [r[1] for r in rows] == [1, 2, 3]
    assert set(rows[0][2]) == {"id", "name", "amount", "updated"}
    eng.close()


def test_replace_field_renames_and_the_key_is_a_string_field(db, tmp_path):
    # demo-scene's workshop account: ValueToKey(number), ExtractField$Key(number),
    # ReplaceField$Value renames (ReplaceField.java: old:new pairs, order kept)
    q = db.name("account")
    db.run(
        f"CREATE TABLE {q} (id BIGINT NOT NULL PRIMARY KEY, number VARCHAR(10), first_name VARCHAR(20), city_address VARCHAR(20))"
    )
    db.run(
        f"INSERT INTO {q} (id, number, first_name, city_address) VALUES (:i, :n, :f, :c)",
        [{"i": i, "n": f"AC{i}", "f": f"f{i}", "c": None if i == 2 else "Paris"} for i in (1, 2)],
    )
    cfg = _transforms("demo-scene-workshop-account")
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = _rows(sess)
    assert [r[1] for r in rows] == ["AC1", "AC2"]
    assert list(rows[0][2]) == ["id", "number", "firstName", "cityAddress"]
    assert rows[1][2]["cityAddress"] is None
    eng.close()


def test_insert_field_timestamp_converter_filter_and_a_router(db, tmp_path):
    t = db.table("orders")
    db.insert(t, range(1, 7))
    cfg = {
        "transforms": "onlyEven,ins,ts,route,keep",
        # Filter with a negated predicate: records of topics other than db-orders go
        "transforms.keep.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.keep.predicate": "isOrders",
        "transforms.keep.negate": "true",
        "predicates": "isOrders,isOdd",
        "predicates.isOrders.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.isOrders.pattern": "orders-.*",
        # a Filter on a tombstone predicate: nothing here is a tombstone
        "transforms.onlyEven.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.onlyEven.predicate": "isOdd",
        "predicates.isOdd.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
        "transforms.ins.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.ins.topic.field": "src_topic",
        "transforms.ins.static.field": "origin",
        "transforms.ins.static.value": "jdbc",
        "transforms.ins.timestamp.field": "kafka_ts",
        "transforms.ts.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
        "transforms.ts.field": "updated",
        "transforms.ts.target.type": "string",
        "transforms.ts.format": "yyyy/MM/dd HH:mm",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "db-(.*)",
        "transforms.route.replacement": "$1-v2",
    }
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = _rows(sess)
    assert len(rows) == 6  # the topic is orders-v2: the negated Filter keeps them all
    topic, _, rec = rows[0]
    assert topic == "orders-v2"
    assert rec["src_topic"] == "db-orders" and rec["origin"] == "jdbc"
    assert rec["kafka_ts"] is None  # Confluent's JDBC source sets no record timestamp
    assert rec["updated"] == "2026/01/01 12:00"
    eng.close()


def test_a_record_a_transform_cannot_process_fails_or_is_skipped(db, tmp_path):
    t = db.table("orders")
    db.insert(t, range(1, 4))
    bad = {
        "transforms": "pick",
        "transforms.pick.type": "org.apache.kafka.connect.transforms.ValueToKey",
        "transforms.pick.fields": "no_such_column",
    }
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **bad)
    with pytest.raises(SparkpipesError) as caught:
        sess.execute("START PIPELINE jp FOREGROUND")
    assert "transform 'pick'" in str(caught.value)
    assert "Field does not exist: no_such_column" in str(caught.value)
    assert db.password not in str(caught.value)

    db.create(sess, name="jq", **bad, **{"errors.tolerance": "all"})
    sess.execute("START PIPELINE jq FOREGROUND")
    assert _rows(sess, "jq") == []
    errors = [
        e
        for e in eng.information_schema("PIPELINES_ERRORS").to_pylist()
        if e["PIPELINE_NAME"] == "jq"
    ]
    assert len(errors) == 3
    assert all("Field does not exist" in str(e) for e in errors)
    eng.close()


def test_records_a_filter_drops_are_read_not_errors(db, tmp_path):
    # Filter.java: the records its predicate selects are dropped (null from apply)
    t = db.table("orders")
    db.insert(t, range(1, 21))
    cfg = {
        "transforms": "drop",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.drop.predicate": "all",
        "predicates": "all",
        "predicates.all.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.all.pattern": "db-.*",
        "batch.max.rows": "5",
    }
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    assert _rows(sess) == []
    assert not [
        e
        for e in eng.information_schema("PIPELINES_ERRORS").to_pylist()
        if e["PIPELINE_NAME"] == "jp"
    ]
    ((value,),) = sess.execute(
        "SELECT VALUE FROM information_schema.PIPELINES_SOURCE_OFFSETS WHERE PIPELINE_NAME = 'jp'"
    )[0].rows
    assert json.loads(value) == {"incrementing": 20}
    eng.close()

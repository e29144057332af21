"""demo-scene's "Twelve Days of Single Message Transforms" JDBC sink configs (the corpus
items, as written: only the database and the topic made this test's) from the Tansu
broker into the real MariaDB, with the transforms' own semantics:

- day 8: ``TimestampConverter$Value`` reads ``java.util.Date``'s text (``EEE MMM dd
  HH:mm:ss zzz yyyy``) into a DATETIME, ``RegexRouter`` names the table ``…_withTS``;
- day 11: Confluent's ``Filter$Value`` keeps the records its JsonPath condition selects
  (``$[?(@.product =~ /.*Stout/)]``);
- day 12: jcustenborder's ``ChangeTopicCase`` names the table ``LOWER_HYPHEN`` →
  ``UPPER_CAMEL`` (Guava's ``CaseFormat``)."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import uuid

import pytest

from tests.integration.databases import ScratchDb
from tests.integration.test_jdbc_sink import drain, produce, struct

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect" / "jdbc-sink"
TXN = struct(
    "io.mdrogalis.Gen0",
    ("txn_date", "string", True),
    ("product", "string", True),
    ("units", "string", True),
)


@pytest.fixture
def db():
    d = ScratchDb("mariadb")
    yield d
    d.drop()


def _topic(broker, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    broker.create_topic(name, 1)
    return name


def _txn(date: str, product: str, units: str = "1") -> tuple[None, bytes]:
    payload = {"txn_date": date, "product": product, "units": units}
    return None, json.dumps({"schema": TXN, "payload": payload}).encode()


def _demo(item: str, db: ScratchDb, broker, topic: str) -> dict:
    """A corpus config with this database and topic (everything else as written)."""
    cfg = json.loads((CORPUS / f"{item}.json").read_text())["config"]
    return cfg | {
        "connection.url": f"jdbc:mysql://{db.hostport}/{db.database}",
        "connection.user": db.user,
        "connection.password": db.password,
        "topics": topic,
        "bootstrap.servers": broker.bootstrap,
    }


def test_day8_timestamp_converter_reads_java_date_text_into_a_datetime(broker, db, engine):
    topic = _topic(broker, "day8")
    produce(
        broker,
        topic,
        [
            _txn("Thu Dec 10 17:06:59 GMT 2020", "Stone IPA"),
            _txn("Sat Dec 05 16:39:40 GMT 2020", "Yeti Imperial Stout"),
        ],
    )
    cfg = _demo("demo-scene-smt-day8-timestampconverter", db, broker, topic)
    engine.connectors.create({"name": "day8", "config": cfg})
    drain(engine, "day8")
    table = f"`{topic}_withTS`"
    assert sorted(db.rows(f"SELECT txn_date, product FROM {table}")) == [
        (dt.datetime(2020, 12, 5, 16, 39, 40), "Yeti Imperial Stout"),
        (dt.datetime(2020, 12, 10, 17, 6, 59), "Stone IPA"),
    ]
    kind = db.rows(
        "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        f"'{db.database}' AND TABLE_NAME = '{topic}_withTS' AND COLUMN_NAME = 'txn_date'"
    )
    assert kind == [("datetime",)]


def test_day11_confluent_filter_keeps_what_its_json_path_selects(broker, db, engine):
    topic = _topic(broker, "day11")
    beers = ["Stone IPA", "Yeti Imperial Stout", "Storm King Stout", "Stout Lager"]
    produce(broker, topic, [_txn("Sun Dec 13 02:18:44 GMT 2020", b) for b in beers])
    cfg = _demo("demo-scene-smt-day11-confluent-filter", db, broker, topic)
    engine.connectors.create({"name": "day11", "config": cfg})
    drain(engine, "day11")
    got = sorted(r[0] for r in db.rows(f"SELECT product FROM `{topic}`"))
    assert got == ["Storm King Stout", "Yeti Imperial Stout"]  # =~ matches the whole text


def test_day12_change_topic_case_names_the_table_in_upper_camel(broker, db, engine):
    topic = _topic(broker, "day12-sys01")
    produce(broker, topic, [_txn("Sun Dec 13 02:18:44 GMT 2020", "Stone IPA")])
    cfg = _demo("demo-scene-smt-day12-change-topic-case", db, broker, topic)
    engine.connectors.create({"name": "day12", "config": cfg})
    drain(engine, "day12")
    table = "Day12Sys01" + topic.rsplit("-", 1)[1].capitalize()
    assert db.rows(f"SELECT product FROM `{table}`") == [("Stone IPA",)]

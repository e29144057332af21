"""Pinot's ``complexTypeConfig`` through the real pipeline: meetup RSVPs (the shape of
Pinot's meetupRsvpComplexType quickstart, whose schema and table config are the corpus'
own files, moved to the loopback broker) loaded from Kafka with ``group.group_topics``
unnested, as Pinot's ComplexTypeTransformer makes its rows (apache/pinot@210c2951,
pinot-segment-local/.../recordtransformer/ComplexTypeTransformer.java); the dotted columns
queried by name with SQL and with Pinot's own client, ``pinotdb``, through the broker
endpoint of the server's app; a record that cannot be flattened in the errors view with
its partition and offset. And a schema's metadata columns without ``metadata.populate``."""

from __future__ import annotations

import copy
import json
import pathlib
import socket
import threading
import time

import pytest
import uvicorn
from pinotdb import connect

from sparkpipes.server import create_app
from tests.integration.test_pinot_tables import produce, schema, table_config

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "pinot"
MEETUP = "apache-pinot/stream-meetupRsvpComplexType-meetupRsvpComplexType-realtime-table-config"
T0 = 1_700_000_000_000
PASSWORD = "Ana-complex-pw-5120"


def _meetup(broker, topic, **ingestion):
    table = json.loads((CORPUS / f"{MEETUP}.table.json").read_text())
    doc = json.loads((CORPUS / f"{MEETUP}.schema.json").read_text())
    [streams] = table["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"]
    streams["stream.kafka.topic.name"] = topic
    streams["stream.kafka.broker.list"] = broker.bootstrap
    streams["stream.kafka.consumer.prop.auto.offset.reset"] = "smallest"
    table["ingestionConfig"].update(ingestion)
    return table, doc


def _rsvp(rsvp_id, city, topics, **extra):
    group = {
        "group_city": city,
        "group_country": "no",
        "group_id": 100 + rsvp_id,
        "group_name": f"{city} meetup",
        "group_lon": 10.75,
        "group_urlname": city.lower(),
        "group_lat": 59.91,
    }
    if topics is not None:
        group["group_topics"] = [{"urlkey": k, "topic_name": k.title()} for k in topics]
    return {
        "rsvp_id": rsvp_id,
        "guests": rsvp_id % 3,
        "mtime": T0 + rsvp_id,
        "group": group,
        **extra,
    }


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_meetup_rsvps_unnest_their_topics_and_pinotdb_reads_the_dotted_columns(
    engine, broker, topic
):
    table, doc = _meetup(broker, topic, continueOnError=True)
    records = [
        _rsvp(1, "Oslo", ["python", "kafka"]),
        _rsvp(2, "Lima", []),  # an empty array keeps the record, its topic columns empty
        _rsvp(3, "Pune", None),  # no array at all: the same
        {**_rsvp(4, "Nuuk", ["x"]), "group": "not a record"},  # cannot be flattened
        _rsvp(5, "Oslo", ["spark", "delta", "arrow"]),
    ]
    produce(broker, topic, [(None, r, None) for r in records], partition=1)
    engine.pinot.add(table, doc)
    engine.run_batches("meetupRsvpComplexType_REALTIME", 10, until_idle=True)

    rows = engine.table_arrow("meetupRsvpComplexType").to_pylist()
    got = sorted(
        (r["rsvp_id"], r["group.group_topics.urlkey"], r["group.group_topics.topic_name"])
        for r in rows
    )
    # one row per topic; no topic: the STRING default null value, as Pinot stores it
    assert got == [
        (1, "kafka", "Kafka"),
        (1, "python", "Python"),
        (2, "null", "null"),
        (3, "null", "null"),
        (5, "arrow", "Arrow"),
        (5, "delta", "Delta"),
        (5, "spark", "Spark"),
    ]
    by_id = {r["rsvp_id"]: r for r in rows}
    assert by_id[1]["group.group_city"] == "Oslo" and by_id[1]["group.group_id"] == 101
    assert by_id[5]["group.group_lat"] == pytest.approx(59.91) and by_id[5]["mtime"] == T0 + 5
    [error] = engine.errors("meetupRsvpComplexType_REALTIME")
    assert (error["partition"], error["offset"]) == ("1", 3)

    # SQL by the dotted name (quoted with backticks, as any name Spark would read as a path)
    counted = engine.sql(
        "SELECT `group.group_city` AS city, count(*) AS n FROM meetupRsvpComplexType "
        "GROUP BY `group.group_city` ORDER BY city"
    ).collect()
    assert [(r.city, r.n) for r in counted] == [("Lima", 1), ("Oslo", 5), ("Pune", 1)]

    # Pinot's client through the broker endpoint of the server's app
    engine.catalog.users.create("ana", PASSWORD)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(engine, run=False), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        conn = connect(
            host="127.0.0.1",
            port=port,
            path="/query/sql",
            scheme="http",
            username="ana",
            password=PASSWORD,
        )
        cur = conn.cursor()
        cur.execute(
            "SELECT `group.group_topics.urlkey`, `group.group_city` FROM meetupRsvpComplexType "
            "WHERE rsvp_id = 5 ORDER BY `group.group_topics.urlkey`"
        )
        assert [d[0] for d in cur.description] == [
            "group.group_topics.urlkey",
            "group.group_city",
        ]
        assert cur.fetchall() == [["arrow", "Oslo"], ["delta", "Oslo"], ["spark", "Oslo"]]
    finally:
        server.should_exit = True
        thread.join(30)


def test_prefixes_to_rename_and_arrays_kept_as_json(engine, broker, topic):
    # prefixesToRename strips "payload." from the flattened names; an array of records not
    # unnested is its JSON text (collectionNotUnnestedToJson NON_PRIMITIVE, the default),
    # an array of primitives a multi-value column; a transform reads a dotted name (after
    # the flattening, as Pinot's ExpressionTransformer runs after its ComplexTypeTransformer)
    dims = [
        {"name": "id", "dataType": "INT"},
        {"name": "city", "dataType": "STRING"},
        {"name": "items", "dataType": "JSON"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
        {"name": "meta.zone", "dataType": "STRING"},
        {"name": "zone_upper", "dataType": "STRING"},
    ]
    t = table_config(
        broker,
        topic,
        ingestionConfig={
            "complexTypeConfig": {"prefixesToRename": {"payload.": ""}},
            "transformConfigs": [
                {"columnName": "zone_upper", "transformFunction": 'upper("meta.zone")'}
            ],
        },
    )
    value = {
        "id": 1,
        "ts": T0,
        "payload": {"city": "Oslo", "items": [{"sku": "a", "n": 2}], "tags": ["x", "y"]},
        "meta": {"zone": "eu"},
    }
    produce(broker, topic, [(None, value, None)])
    engine.pinot.add(t, schema(dims))
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    [row] = engine.table_arrow("t").to_pylist()
    assert row["city"] == "Oslo" and row["tags"] == ["x", "y"]
    assert json.loads(row["items"]) == [{"sku": "a", "n": 2}]
    assert (row["meta.zone"], row["zone_upper"]) == ("eu", "EU")


def test_metadata_columns_without_populate_store_what_pinot_stores(engine, broker, topic):
    # Pinot's KafkaPartitionLevelConsumer hands over __metadata$… values and headers only
    # with metadata.populate; StreamDataDecoderImpl puts the record's key in __key either way
    dims = [
        {"name": "id", "dataType": "INT"},
        {"name": "__key", "dataType": "STRING"},
        {"name": "__metadata$offset", "dataType": "STRING"},
        {"name": "__header$source", "dataType": "STRING"},
    ]
    produce(broker, topic, [(b"k0", {"id": 0, "ts": T0}, [("source", b"app")])], partition=3)
    out = engine.pinot.plan(table_config(broker, topic), schema(dims))
    assert any("metadata.populate" in n and "__key" not in n for n in out["notes"])
    engine.pinot.add(copy.deepcopy(table_config(broker, topic)), schema(dims))
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    [row] = engine.table_arrow("t").to_pylist()
    assert row["__key"] == "k0"
    # not filled: the STRING default null value, as any field no record carries
    assert row["__metadata$offset"] == "null" and row["__header$source"] == "null"

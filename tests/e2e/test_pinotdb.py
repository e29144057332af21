"""Pinot's own Python client, ``pinotdb`` (DB-API and its SQLAlchemy dialect), against
``sparkpipes serve`` as a Pinot user points it at a broker and a controller: a user and
password (the server requires them), a Pinot schema and REALTIME table config posted to
the controller endpoints, rows loaded from Kafka, then ``SELECT count(*)``, a ``GROUP BY``
with counts, a ``WHERE``, ``cursor.description`` with the types as pinotdb maps Pinot's
column data types, Pinot's default LIMIT, errors as pinotdb raises them, and SQLAlchemy's
reflection (``/tables``, ``/tables/{name}/schema``) and queries. No password ever shows in
an answer or the server's output."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import requests
import sqlalchemy as sa
from pinotdb import connect
from pinotdb import exceptions as pinot_errors
from pinotdb.db import Type

from tests.e2e.serving import serve, sparkpipes, wait

PASSWORD = "Ana-pinot-pw-3318"
T0 = 1_700_000_000_000
SCHEMA = {
    "schemaName": "clicks",
    "dimensionFieldSpecs": [
        {"name": "city", "dataType": "STRING"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
        {"name": "ok", "dataType": "BOOLEAN"},
    ],
    "metricFieldSpecs": [
        {"name": "n", "dataType": "INT"},
        {"name": "views", "dataType": "LONG"},
        {"name": "ratio", "dataType": "FLOAT"},
        {"name": "score", "dataType": "DOUBLE"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "TIMESTAMP",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}
CITIES = ("paris", "oslo", "lima")


def table_config(broker: str, topic: str) -> dict:
    return {
        "tableName": "clicks",
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "clicks"},
        "tenants": {},
        "tableIndexConfig": {
            "streamConfigs": {
                "streamType": "kafka",
                "stream.kafka.consumer.type": "lowlevel",
                "stream.kafka.topic.name": topic,
                "stream.kafka.broker.list": broker,
                "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
                "stream.kafka.consumer.factory.class.name": "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory",
                "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            }
        },
        "metadata": {"customConfigs": {}},
    }


def record(i: int) -> str:
    return json.dumps(
        {
            "city": CITIES[i % 3],
            "tags": [f"t{i % 3}", "all"],
            "ok": i % 2 == 0,
            "n": i,
            "views": i * 1_000_000_000,
            "ratio": i / 4,
            "score": i / 8,
            "ts": T0 + i * 1000,
        }
    )


def test_pinotdb_queries_a_pinot_table_on_sparkpipes_serve(broker, topic, tmp_path):
    wh = tmp_path / "wh"
    added = sparkpipes(wh, "user", "add", "ana", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    broker.produce(topic, [record(i) for i in range(30)], partitions=4)
    with serve(wh, "/openapi.json") as server:
        url, port = server.url, server.port
        ana = requests.Session()
        ana.auth = ("ana", PASSWORD)
        r = ana.post(f"{url}/schemas", json=SCHEMA, timeout=30)
        assert r.status_code == 200 and r.json()["status"] == "clicks successfully added"
        r = ana.post(f"{url}/tables", json=table_config(broker.bootstrap, topic), timeout=60)
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "Table clicks_REALTIME successfully added"

        conn = connect(
            host="127.0.0.1",
            port=port,
            path="/query/sql",
            scheme="http",
            username="ana",
            password=PASSWORD,
        )
        cur = conn.cursor()

        def loaded() -> bool:
            cur.execute("SELECT count(*) FROM clicks")
            return cur.fetchone() == [30]

        wait(loaded, 180, "30 rows in clicks")
        assert [d[0] for d in cur.description] == ["count(*)"]
        assert cur.description[0][1] == Type.NUMBER
        assert cur.schema == [{"name": "count(*)", "type": "LONG"}]
        stats = cur.query_stats
        assert stats["numServersQueried"] == stats["numServersResponded"] == 1
        assert stats["totalDocs"] == 30 and stats["numRowsResultSet"] == 1
        assert isinstance(cur.timeUsedMs, int) and cur.timeUsedMs >= 0

        cur.execute("SELECT city, count(*) FROM clicks GROUP BY city ORDER BY city")
        assert cur.fetchall() == [["lima", 10], ["oslo", 10], ["paris", 10]]
        assert [(d[0], d[1]) for d in cur.description] == [
            ("city", Type.STRING),
            ("count(*)", Type.NUMBER),
        ]

        cur.execute(
            "SELECT n, city, tags, ok, views, ratio, score, ts FROM clicks "
            "WHERE n >= %(low)s AND city <> %(city)s ORDER BY n",
            {"low": 25, "city": "lima"},
        )
        rows = cur.fetchall()
        assert [r[0] for r in rows] == [25, 27, 28]
        first = rows[0]
        assert first[1:7] == ["oslo", ["t1", "all"], False, 25_000_000_000, 6.25, 3.125]
        assert first[7] == dt.datetime(2023, 11, 14, 22, 13, 45)  # pinotdb parsed Pinot's text
        assert [(d[0], d[1]) for d in cur.description] == [
            ("n", Type.NUMBER),
            ("city", Type.STRING),
            ("tags", Type.STRING),
            ("ok", Type.BOOLEAN),
            ("views", Type.NUMBER),
            ("ratio", Type.NUMBER),
            ("score", Type.NUMBER),
            ("ts", Type.TIMESTAMP),
        ]
        assert [c["type"] for c in cur.schema] == [
            *("INT", "STRING", "STRING_ARRAY", "BOOLEAN", "LONG", "FLOAT", "DOUBLE"),
            "TIMESTAMP",
        ]
        assert cur.raw_query_response["response"]["resultTable"]["rows"][0][7] == (
            "2023-11-14 22:13:45.0"
        )

        # Pinot's default LIMIT 10; none with the multi-stage engine
        cur.execute("SELECT n FROM clicks")
        assert len(cur.fetchall()) == 10
        cur.execute("SELECT n FROM clicks LIMIT 20")
        assert len(cur.fetchall()) == 20
        multi = connect(
            host="127.0.0.1",
            port=port,
            path="/query/sql",
            username="ana",
            password=PASSWORD,
            use_multistage_engine=True,
        ).cursor()
        multi.execute("SELECT n FROM clicks")
        assert len(multi.fetchall()) == 30

        native = cur.execute_native("SELECT count(*) FROM clicks")
        assert native.metadata.completeness == "complete" and native.rows == [[30]]

        # errors, as pinotdb raises them
        with pytest.raises(pinot_errors.DatabaseError) as e:
            cur.execute("SELECT nope FROM clicks")
        assert "710" in str(e.value) and "nope" in str(e.value)
        with pytest.raises(pinot_errors.DatabaseError) as e:
            cur.execute("SELEC 1")
        assert "SQLParsingError" in str(e.value) and "Traceback" not in str(e.value)
        with pytest.raises(pinot_errors.DatabaseError) as e:
            cur.execute("SELECT count(*) FROM missing")
        assert "missing" in str(e.value)
        wrong = connect(
            host="127.0.0.1", port=port, path="/query/sql", username="ana", password="wrong"
        ).cursor()
        with pytest.raises(pinot_errors.ProgrammingError) as e:
            wrong.execute("SELECT count(*) FROM clicks")
        assert "401" in str(e.value) and "AccessDenied" in str(e.value)

        # Pinot's headers: the error code, and HTTP statuses for errors when asked
        ok = ana.post(f"{url}/query/sql", json={"sql": "SELECT count(*) FROM clicks"})
        assert ok.headers["X-Pinot-Error-Code"] == "-1"
        bad = ana.post(f"{url}/query/sql", json={"sql": "SELEC 1"})
        assert bad.status_code == 200 and bad.headers["X-Pinot-Error-Code"] == "150"
        bad = ana.post(
            f"{url}/query/sql",
            json={"sql": "SELEC 1"},
            headers={"Pinot-Use-Http-Status-For-Errors": "true"},
        )
        assert bad.status_code == 400 and bad.json()["exceptions"][0]["errorCode"] == 150

        # pinotdb's SQLAlchemy dialect: the broker for queries, the controller for tables
        engine = sa.create_engine(
            f"pinot://ana:{PASSWORD}@127.0.0.1:{port}/query/sql?controller=http://127.0.0.1:{port}/"
        )
        inspector = sa.inspect(engine)
        assert inspector.get_table_names() == ["clicks"]
        columns = {c["name"]: c["type"] for c in inspector.get_columns("clicks")}
        assert list(columns) == ["city", "tags", "ok", "n", "views", "ratio", "score", "ts"]
        assert isinstance(columns["n"], sa.BigInteger) and isinstance(columns["ts"], sa.TIMESTAMP)
        clicks = sa.Table("clicks", sa.MetaData(), autoload_with=engine)
        query = (
            sa.select(clicks.c.city, sa.func.count().label("hits"))
            .where(clicks.c.n < 12)
            .group_by(clicks.c.city)
            .order_by(clicks.c.city)
        )
        with engine.connect() as c:
            assert [tuple(r) for r in c.execute(query)] == [
                ("lima", 4),
                ("oslo", 4),
                ("paris", 4),
            ]
            total = c.execute(sa.text("SELECT count(*) FROM clicks WHERE city = 'oslo'"))
            assert total.scalar() == 10
        engine.dispose()
        every = str(cur.raw_query_response) + r.text + str(e.value)
        assert PASSWORD not in every
    assert PASSWORD not in server.output and "Traceback" not in server.output

"""Confluent's JDBC sink connector through Kafka Connect's REST API on ``sparkpipes
serve``: the class listed by ``GET /connector-plugins``, its config checked by ``PUT
/connector-plugins/{class}/config/validate`` (every problem under its key, Confluent's
words, no password echoed), then created with ``POST /connectors`` from a config as
Confluent's docs write it (the login inside ``connection.url``), rows upserted and
deleted in PostgreSQL, the URL shown ``<redacted>``."""

from __future__ import annotations

import json

from confluent_kafka import Producer

from tests.e2e.serving import serve, wait
from tests.integration.databases import ScratchDb

SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
VALUE = {
    "type": "struct",
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "v", "type": "string", "optional": True},
    ],
}
KEY = {"type": "struct", "fields": [{"field": "id", "type": "int64", "optional": False}]}


def test_the_jdbc_sink_is_listed_validated_and_runs(broker, topic, tmp_path):
    db = ScratchDb("postgresql")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        value = {"schema": VALUE, "payload": {"id": i % 10, "v": f"v{i}"}}
        key = {"schema": KEY, "payload": {"id": i % 10}}
        producer.produce(topic, json.dumps(value), key=json.dumps(key), partition=0)
    producer.produce(
        topic, None, key=json.dumps({"schema": KEY, "payload": {"id": 3}}), partition=0
    )
    producer.flush(10)
    login = f"user={db.user}&password=Jdbc-Secret-9"  # the server trusts loopback
    config = {
        "connector.class": SINK,
        "tasks.max": "4",
        "topics": topic,
        "bootstrap.servers": broker.bootstrap,
        "connection.url": f"jdbc:postgresql://{db.hostport}/{db.database}"
        f"?currentSchema={db.schema}&{login}",
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "delete.enabled": "true",
        "auto.create": "true",
        "batch.size": "500",
        "batch.interval.ms": "200",
    }
    try:
        with serve(tmp_path / "wh", "/connectors") as server:
            url, http = server.url, server.http
            assert {"class": SINK, "type": "sink", "version": "sparkpipes"} in http.get(
                f"{url}/connector-plugins"
            ).json()
            checked = http.put(
                f"{url}/connector-plugins/{SINK}/config/validate",
                json={**config, "pk.mode": "record_value", "insert.mode": "merge"},
            ).json()
            errors = {c["value"]["name"]: c["value"]["errors"] for c in checked["configs"]}
            assert errors["delete.enabled"] == ["Deletes are only supported for pk.mode record_key"]
            assert errors["insert.mode"] and checked["error_count"] == 3
            assert "batch.size" in checked["not_applicable"]
            assert "Jdbc-Secret-9" not in json.dumps(checked)

            made = http.post(f"{url}/connectors", json={"name": "jdbc", "config": config})
            assert made.status_code == 201, made.text
            t = db.name(topic)
            wait(lambda: db.rows(f"SELECT COUNT(*) FROM {t}") == [(9,)], 180, "rows")
            assert sorted(db.rows(f"SELECT id, v FROM {t}")) == [
                (i, f"v{i + 10}") for i in range(10) if i != 3
            ]  # the last value of each key; key 3's tombstone deleted it
            shown = http.get(f"{url}/connectors/jdbc/config").json()
            assert shown["connection.url"].endswith("password=<redacted>")
    finally:
        db.drop()
    assert "Jdbc-Secret-9" not in server.output and "Traceback" not in server.output

"""Kafka Connect's REST API on ``sparkpipes serve``, driven by a real HTTP client (requests)
as Kafka Connect users drive it: create from a seed-001-style config into PostgreSQL,
watch rows arrive, status, pause/resume, config update, delete; bad JSON, unknown keys,
a duplicate and an unknown name answered with Kafka Connect's error shape; a config sent
back with its password ``<redacted>`` keeps it for the same database only."""

from __future__ import annotations

import json
import uuid

from tests.e2e.serving import serve, wait
from tests.integration.attacker import Listener
from tests.integration.databases import ScratchDb

#: the JSON converter's envelope schema of the records the tests send
SCHEMA = {"type": "struct", "fields": [{"field": "id", "type": "int64", "optional": False}]}


def test_the_rest_api_manages_a_connector_into_postgresql(broker, topic, tmp_path):
    db = ScratchDb("postgresql")
    try:
        with serve(tmp_path / "wh", "/connectors") as server:
            url, http = server.url, server.http
            plugins = http.get(f"{url}/connector-plugins").json()
            assert {
                "class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "type": "sink",
                "version": "sparkpipes",
            } in plugins

            schema = {
                "type": "struct",
                "fields": [
                    {"field": "id", "type": "int64", "optional": False},
                    {"field": "v", "type": "string", "optional": True},
                ],
            }
            broker.produce(
                topic,
                [
                    json.dumps({"schema": schema, "payload": {"id": i, "v": f"v{i}"}})
                    for i in range(100)
                ],
                partitions=4,
            )
            config = {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "tasks.max": "2",
                "topics": topic,
                "bootstrap.servers": broker.bootstrap,
                "connection.url": f"jdbc:postgresql://{db.hostport}/{db.database}?currentSchema={db.schema}",
                "connection.user": db.user,
                "connection.password": "pg-Secret-123",
                "tableKey.PRIMARY": "id",
                "batch.interval.ms": "200",
            }
            made = http.post(f"{url}/connectors", json={"name": "pg-sink", "config": config})
            assert made.status_code == 201, made.text
            assert made.json()["name"] == "pg-sink" and made.json()["type"] == "sink"
            wait(lambda: db.rows(f"SELECT COUNT(*) FROM {db.name(topic)}") == [(100,)], 180, "rows")

            status = http.get(f"{url}/connectors/pg-sink/status").json()
            assert status["connector"]["state"] == "RUNNING"
            assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
            assert http.put(f"{url}/connectors/pg-sink/pause").status_code == 202
            assert (
                http.get(f"{url}/connectors/pg-sink/status").json()["connector"]["state"]
                == "PAUSED"
            )
            assert http.put(f"{url}/connectors/pg-sink/resume").status_code == 202
            assert (
                http.get(f"{url}/connectors/pg-sink/status").json()["connector"]["state"]
                == "RUNNING"
            )

            updated = http.put(
                f"{url}/connectors/pg-sink/config", json={**config, "tasks.max": "4"}
            )
            assert updated.status_code == 200, updated.text
            shown = http.get(f"{url}/connectors/pg-sink/config").json()
            assert shown["tasks.max"] == "4" and "connection.password" not in shown
            broker.produce(
                topic,
                [
                    json.dumps({"schema": schema, "payload": {"id": i, "v": f"v{i}"}})
                    for i in range(100, 150)
                ],
                partitions=4,
            )
            wait(
                lambda: (
                    db.rows(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {db.name(topic)}")
                    == [(150, 150)]
                ),
                180,
                "more rows",
            )

            bad = http.post(
                f"{url}/connectors", data="{not json", headers={"Content-Type": "application/json"}
            )
            assert bad.status_code == 400 and bad.json()["error_code"] == 400
            assert "not valid JSON" in bad.json()["message"]
            unknown = http.post(
                f"{url}/connectors", json={"name": "x", "config": {**config, "topic": "t"}}
            )
            assert unknown.status_code == 400
            assert "did you mean 'topics'" in unknown.json()["message"]
            dup = http.post(f"{url}/connectors", json={"name": "pg-sink", "config": config})
            assert dup.status_code == 409
            missing = http.get(f"{url}/connectors/nope/status")
            assert missing.status_code == 404 and "does not exist" in missing.json()["message"]

            assert http.get(f"{url}/connectors").json() == ["pg-sink"]
            assert http.delete(f"{url}/connectors/pg-sink").status_code == 204
            assert http.get(f"{url}/connectors").json() == []
    finally:
        db.drop()
    assert "pg-Secret-123" not in server.output and "Traceback" not in server.output


def test_a_config_sent_back_keeps_its_password_for_the_same_database_only(broker, topic, tmp_path):
    """``GET …/config`` shows the login inside ``connection.url`` as ``<redacted>``; sent
    back with ``PUT`` and only ``tasks.max`` and ``batch.interval.ms`` changed, the sealed
    password is kept and rows keep arriving. Sent back with the database moved (another
    host, port or database, ``connection.password: <redacted>`` with another URL, another
    user) it is refused with 400 naming the key, before anything connects: the listener
    standing in for the new host hears nothing, and the connector runs on as it was."""
    db = ScratchDb("postgresql")
    user = f"sp_keep_{uuid.uuid4().hex[:6]}"
    password = "Kept-Pw-51c"
    db.run(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'")
    db.run(f"GRANT USAGE, CREATE ON SCHEMA {db.schema} TO {user}")
    wh = tmp_path / "wh"
    try:
        with serve(wh, "/connectors") as server, Listener() as evil:
            url, http = server.url, server.http
            broker.produce(
                topic,
                [json.dumps({"schema": SCHEMA, "payload": {"id": i}}) for i in range(20)],
                partitions=4,
            )
            login = f"jdbc:postgresql://{user}:{password}@{db.hostport}/{db.database}"
            config = {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics": topic,
                "bootstrap.servers": broker.bootstrap,
                "connection.url": f"{login}?currentSchema={db.schema}",
                "tableKey.PRIMARY": "id",
                "batch.interval.ms": "200",
            }
            made = http.post(f"{url}/connectors", json={"name": "kept", "config": config})
            assert made.status_code == 201, made.text
            table = db.name(topic)
            wait(lambda: db.rows(f"SELECT COUNT(*) FROM {table}") == [(20,)], 180, "rows")

            shown = http.get(f"{url}/connectors/kept/config").json()
            redacted = shown["connection.url"]
            assert redacted.startswith(f"jdbc:postgresql://{user}:<redacted>@{db.hostport}/")
            updated = http.put(
                f"{url}/connectors/kept/config",
                json={**shown, "tasks.max": "3", "batch.interval.ms": "300"},
            )
            assert updated.status_code == 200, updated.text
            assert http.get(f"{url}/connectors/kept/config").json()["tasks.max"] == "3"
            broker.produce(
                topic,
                [json.dumps({"schema": SCHEMA, "payload": {"id": i}}) for i in range(20, 30)],
                partitions=4,
            )
            wait(lambda: db.rows(f"SELECT COUNT(*) FROM {table}") == [(30,)], 180, "more rows")

            elsewhere = redacted.replace(db.hostport, evil.hostport)
            refusals = []
            for changes, key in (
                ({"connection.url": elsewhere}, "connection.url"),
                (
                    {"connection.url": redacted.replace(f"/{db.database}?", "/other?")},
                    "connection.url",
                ),
                (
                    {
                        "connection.url": elsewhere.replace(f"{user}:<redacted>@", ""),
                        "connection.user": user,
                        "connection.password": "<redacted>",
                    },
                    "connection.url, connection.user",
                ),
                ({"connection.user": "postgres"}, "connection.user"),
            ):
                r = http.put(f"{url}/connectors/kept/config", json={**shown, **changes})
                assert r.status_code == 400, r.text
                message = r.json()["message"]
                assert f"but {key} differ" in message and "give the value again" in message
                refusals.append(r.text)
            assert evil.connections == 0 and evil.received == b""
            assert http.get(f"{url}/connectors/kept/config").json()["connection.url"] == redacted
            status = http.get(f"{url}/connectors/kept/status").json()
            assert status["connector"]["state"] == "RUNNING", status
            # a new connector cannot take a password given as <redacted> either
            r = http.post(
                f"{url}/connectors", json={"name": "new", "config": {**shown, "name": "new"}}
            )
            assert r.status_code == 400 and "no stored value to keep" in r.json()["message"]
            assert evil.connections == 0
    finally:
        db.run(f"DROP OWNED BY {user}")
        db.run(f"DROP ROLE IF EXISTS {user}")
        db.drop()
    from sparkpipes.catalog import Catalog

    catalog = Catalog(f"sqlite:///{wh / 'catalog.db'}")
    try:  # the password the connector was made with, kept sealed through the PUT
        assert catalog.pipelines.credentials("kept")["sink.password"] == password
    finally:
        catalog.close()
    for text in [*refusals, server.output]:
        assert password not in text
    assert "Traceback" not in server.output

"""Kafka Connect's REST API on ``sparkpipes serve``, driven by a real HTTP client (requests)
as Kafka Connect users drive it: create from a seed-001-style config into PostgreSQL,
watch rows arrive, status, pause/resume, config update, delete; bad JSON, unknown keys,
a duplicate and an unknown name answered with Kafka Connect's error shape."""

from __future__ import annotations

import json

from tests.e2e.serving import serve, wait
from tests.integration.databases import ScratchDb


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

"""Kafka Connect's REST API on ``sparkpipes serve``, driven by a real HTTP client (requests)
as Kafka Connect users drive it: create from a seed-001-style config into PostgreSQL,
watch rows arrive, status, pause/resume, config update, delete; bad JSON, unknown keys,
a duplicate and an unknown name answered with Kafka Connect's error shape."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import requests

from tests.integration.databases import ScratchDb


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(check, timeout_s=120.0, what="condition"):
    deadline = time.time() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _up(url):
    try:
        return requests.get(f"{url}/connectors", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def test_the_rest_api_manages_a_connector_into_postgresql(broker, topic, tmp_path):
    db = ScratchDb("postgresql")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparkpipes",
            "--warehouse",
            str(tmp_path / "wh"),
            "serve",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )
    try:
        _wait(lambda: _up(url), 120, "the server")
        plugins = requests.get(f"{url}/connector-plugins").json()
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
        made = requests.post(f"{url}/connectors", json={"name": "pg-sink", "config": config})
        assert made.status_code == 201, made.text
        assert made.json()["name"] == "pg-sink" and made.json()["type"] == "sink"
        _wait(lambda: db.rows(f"SELECT COUNT(*) FROM {db.name(topic)}") == [(100,)], 180, "rows")

        status = requests.get(f"{url}/connectors/pg-sink/status").json()
        assert status["connector"]["state"] == "RUNNING"
        assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
        assert requests.put(f"{url}/connectors/pg-sink/pause").status_code == 202
        assert (
            requests.get(f"{url}/connectors/pg-sink/status").json()["connector"]["state"]
            == "PAUSED"
        )
        assert requests.put(f"{url}/connectors/pg-sink/resume").status_code == 202
        assert (
            requests.get(f"{url}/connectors/pg-sink/status").json()["connector"]["state"]
            == "RUNNING"
        )

        updated = requests.put(
            f"{url}/connectors/pg-sink/config", json={**config, "tasks.max": "4"}
        )
        assert updated.status_code == 200, updated.text
        shown = requests.get(f"{url}/connectors/pg-sink/config").json()
        assert shown["tasks.max"] == "4" and "connection.password" not in shown
        broker.produce(
            topic,
            [
                json.dumps({"schema": schema, "payload": {"id": i, "v": f"v{i}"}})
                for i in range(100, 150)
            ],
            partitions=4,
        )
        _wait(
            lambda: (
                db.rows(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {db.name(topic)}")
                == [(150, 150)]
            ),
            180,
            "more rows",
        )

        bad = requests.post(
            f"{url}/connectors", data="{not json", headers={"Content-Type": "application/json"}
        )
        assert bad.status_code == 400 and bad.json()["error_code"] == 400
        assert "not valid JSON" in bad.json()["message"]
        unknown = requests.post(
            f"{url}/connectors", json={"name": "x", "config": {**config, "topic": "t"}}
        )
        assert unknown.status_code == 400
        assert "did you mean 'topics'" in unknown.json()["message"]
        dup = requests.post(f"{url}/connectors", json={"name": "pg-sink", "config": config})
        assert dup.status_code == 409
        missing = requests.get(f"{url}/connectors/nope/status")
        assert missing.status_code == 404 and "does not exist" in missing.json()["message"]

        assert requests.get(f"{url}/connectors").json() == ["pg-sink"]
        assert requests.delete(f"{url}/connectors/pg-sink").status_code == 204
        assert requests.get(f"{url}/connectors").json() == []
    finally:
        server.send_signal(signal.SIGTERM)
        out = server.communicate(timeout=120)[0]
        db.drop()
    assert "pg-Secret-123" not in out and "Traceback" not in out

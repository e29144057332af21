"""A sink connector's whole life driven by a public Kafka Connect REST client,
``kafka-connect-py`` (PyPI), against ``sparkpipes serve``, signed in as a user with Basic
auth as the client sends it: the cluster's version document at ``/``, create, list with
``expand``, status, stop (KIP-875's STOPPED: no tasks), offsets read, reset and altered
back while stopped (refused while running, with Kafka Connect's error shape), resume,
active topics and their reset, restart with tasks, delete. The client has no offsets
calls: those go through ``requests`` with the same credentials. The rows land exactly
once through all of it."""

from __future__ import annotations

import json

import pytest
import requests

from tests.e2e.serving import serve, wait

kafka_connect = pytest.importorskip("kafka_connect")

USER, PASSWORD = "kc", "Kc-pw-4417"
SCHEMA = {"type": "struct", "fields": [{"field": "id", "type": "int64", "optional": False}]}


def records(ids: range) -> list[str]:
    return [json.dumps({"schema": SCHEMA, "payload": {"id": i}}) for i in ids]


def test_kafka_connect_py_drives_a_sink_connector_through_its_life(broker, topic, tmp_path):
    with serve(tmp_path / "wh", "/connectors") as server:
        url = server.url

        def sql(statement: str) -> list:
            r = server.http.post(f"{url}/api/query", json={"sql": statement}, timeout=60)
            assert r.status_code == 200, r.text
            return r.json().get("rows") or []

        sql(f"CREATE USER {USER} IDENTIFIED BY '{PASSWORD}'")
        sql(
            "GRANT SHOW PIPELINE, START PIPELINE, ALTER PIPELINE, CREATE PIPELINE, "
            f"DROP PIPELINE, CREATE, INSERT, SELECT ON * TO {USER}"
        )
        client = kafka_connect.KafkaConnect(url=url, auth=f"{USER}:{PASSWORD}")
        auth = (USER, PASSWORD)

        def call(method: str, path: str, **kw) -> requests.Response:
            return requests.request(method, f"{url}{path}", auth=auth, timeout=60, **kw)

        def rows() -> tuple:
            (row,) = sql(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {topic}") or [(None, None)]
            return tuple(row)

        # / is the cluster's version document for clients; a browser goes to the console
        info = client.get_cluster_info()
        assert set(info) == {"version", "commit", "kafka_cluster_id"}
        assert call("GET", "/").json() == info
        page = call("GET", "/", headers={"Accept": "text/html"}, allow_redirects=False)
        assert page.status_code == 302 and page.headers["location"] == "/console"

        broker.produce(topic, records(range(100)), partitions=4)
        config = {
            "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
            "tasks.max": "2",
            "topics": topic,
            "bootstrap.servers": broker.bootstrap,
            "batch.interval.ms": "200",
        }
        made = client.create_connector({"name": "kc-sink", "config": config})
        assert made["name"] == "kc-sink" and made["type"] == "sink"
        wait(lambda: rows() == (100, 100), 180, "the first rows")

        listed = client.list_connectors(expand="status")
        assert listed["kc-sink"]["status"]["connector"]["state"] == "RUNNING"
        both = call("GET", "/connectors", params=[("expand", "status"), ("expand", "info")])
        assert set(both.json()["kc-sink"]) == {"status", "info"}
        assert both.json()["kc-sink"]["info"]["config"]["topics"] == topic
        assert client.list_connectors() == ["kc-sink"]
        status = client.get_connector_status("kc-sink")
        assert status["connector"]["state"] == "RUNNING" and len(status["tasks"]) == 1
        # one task's status and restart, as the client calls them
        assert client.get_connector_task_status("kc-sink", 0) == status["tasks"][0]
        none = call("GET", "/connectors/kc-sink/tasks/7/status")
        assert none.status_code == 404 and "kc-sink-7" in none.json()["message"]
        assert client.restart_connector_task("kc-sink", 0) is None
        assert call("POST", "/connectors/kc-sink/tasks/7/restart").status_code == 404
        assert client.get_connector_task_status("kc-sink", 0)["state"] == "RUNNING"
        configs = call("GET", "/connectors/kc-sink/tasks-config").json()
        assert list(configs) == ["kc-sink-0"] and configs["kc-sink-0"]["topics"] == topic
        plugins = client.list_connector_plugins()
        assert {p["type"] for p in plugins} == {"sink", "source"}
        every = call("GET", "/connector-plugins", params={"connectorsOnly": "false"}).json()
        assert {"transformation", "predicate", "converter"} <= {p["type"] for p in every}
        keys = call("GET", f"/connector-plugins/{config['connector.class']}/config").json()
        assert {"topics", "connection.password"} <= {k["name"] for k in keys}
        assert call("GET", "/connector-plugins/no.Such/config").status_code == 404
        assert call("GET", "/health").json()["status"] == "healthy"

        assert client.list_connector_topics("kc-sink") == {"kc-sink": {"topics": [topic]}}
        client.reset_connector_topics("kc-sink")
        assert client.list_connector_topics("kc-sink") == {"kc-sink": {"topics": []}}

        # offsets change only while stopped, as Kafka Connect refuses it otherwise
        refused = call("DELETE", "/connectors/kc-sink/offsets")
        assert refused.status_code == 400 and refused.json()["error_code"] == 400
        assert "STOPPED" in refused.json()["message"]

        client.stop_connector("kc-sink")
        stopped = client.get_connector_status("kc-sink")
        assert stopped["connector"]["state"] == "STOPPED" and stopped["tasks"] == []
        assert client.list_connector_tasks("kc-sink") == []
        assert client.get_connector("kc-sink")["tasks"] == []

        shown = call("GET", "/connectors/kc-sink/offsets").json()["offsets"]
        assert {o["partition"]["kafka_partition"] for o in shown} == {0, 1, 2, 3}
        assert {o["partition"]["kafka_topic"] for o in shown} == {topic}
        assert sum(o["offset"]["kafka_offset"] for o in shown) == 100

        reset = call("DELETE", "/connectors/kc-sink/offsets")
        assert reset.status_code == 200 and "reset" in reset.json()["message"]
        after = call("GET", "/connectors/kc-sink/offsets").json()["offsets"]
        assert sum(o["offset"]["kafka_offset"] for o in after) == 0  # back to earliest

        bad = call(
            "PATCH",
            "/connectors/kc-sink/offsets",
            json={
                "offsets": [
                    {"partition": {"kafka_topic": "nope", "kafka_partition": 0}, "offset": None},
                    {"partition": {"kafka_topic": topic, "kafka_partition": -1}, "offset": {}},
                ]
            },
        )
        assert bad.status_code == 400 and bad.json()["error_code"] == 400
        message = bad.json()["message"]
        assert "offsets[0].partition.kafka_topic" in message
        assert "offsets[1].partition.kafka_partition" in message and "offsets[1].offset" in message

        altered = call("PATCH", "/connectors/kc-sink/offsets", json={"offsets": shown})
        assert altered.status_code == 200, altered.text
        assert "altered" in altered.json()["message"]
        assert call("GET", "/connectors/kc-sink/offsets").json()["offsets"] == shown

        # resumed where it was put: the new records once, the old ones not again
        broker.produce(topic, records(range(100, 150)), partitions=4)
        assert rows() == (100, 100)
        client.resume_connector("kc-sink")
        assert client.get_connector_status("kc-sink")["connector"]["state"] == "RUNNING"
        wait(lambda: rows() == (150, 150), 180, "the rows after resume")
        wait(
            lambda: client.list_connector_topics("kc-sink")["kc-sink"]["topics"] == [topic],
            60,
            "the topic active again",
        )

        restarted = client.restart_connector("kc-sink", include_tasks=True)
        assert restarted["name"] == "kc-sink"
        assert [t["state"] for t in restarted["tasks"]] == ["RESTARTING"]
        assert call("POST", "/connectors/kc-sink/restart").status_code == 204
        assert client.get_connector_status("kc-sink")["connector"]["state"] == "RUNNING"

        broker.produce(topic, records(range(150, 160)), partitions=4)
        wait(lambda: rows() == (160, 160), 180, "the rows after restart")

        client.delete_connector("kc-sink")
        assert client.list_connectors() == []
        assert rows() == (160, 160)  # the table and its rows stay
    assert "Traceback" not in server.output and PASSWORD not in server.output

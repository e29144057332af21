"""``GET /`` as Kafka Connect's clients and browsers ask it: Connect's version document
(``{"version", "commit", "kafka_cluster_id"}``) for JSON or anything not HTML (curl,
kafka-connect-py), a redirect to the console for a browser asking for HTML."""

from __future__ import annotations

from types import SimpleNamespace

from fastapi import FastAPI
from fastapi.testclient import TestClient

from sparkpipes.server import connect


def client(warehouse: str = "/srv/wh") -> TestClient:
    app = FastAPI()
    app.include_router(
        connect.router(SimpleNamespace(connectors=None, warehouse=warehouse), run=False)
    )
    return TestClient(app)


def test_root_is_kafka_connects_version_document_for_clients():
    for accept in (None, "*/*", "application/json"):
        headers = {"Accept": accept} if accept else {}
        r = client().get("/", headers=headers, follow_redirects=False)
        assert r.status_code == 200, accept
        body = r.json()
        assert set(body) == {"version", "commit", "kafka_cluster_id"}
        assert body["version"] == connect.CONNECT_VERSION
        assert len(body["kafka_cluster_id"]) == 22 and "/srv" not in body["kafka_cluster_id"]


def test_the_cluster_id_is_stable_for_a_warehouse_and_differs_between_them():
    ids = [client(w).get("/").json()["kafka_cluster_id"] for w in ("/a", "/a", "/b")]
    assert ids[0] == ids[1] != ids[2]


def test_a_browser_asking_root_for_html_goes_to_the_console():
    accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    r = client().get("/", headers={"Accept": accept}, follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == "/console"

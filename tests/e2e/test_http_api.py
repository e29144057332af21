"""The HTTP API of ``sparkpipes serve`` as a client uses it (real server, real HTTP): a
table and a Kafka pipeline created from SQL, started, watched (rows, lag, batches),
queried (``/api/query`` and Pinot's ``/query/sql``), stopped; errors located in the SQL;
a canary credential never in an answer. Then schemathesis checks the whole /api and
/query surface against the OpenAPI document the server serves."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.e2e.serving import serve, wait

CANARY = "canary-Secret-5e1d"
OWNER_TOKEN = "owner-token-for-schemathesis"


def test_pipelines_tables_and_sql_over_http(broker, topic, tmp_path):
    broker.produce(
        topic, [json.dumps({"id": i, "name": f"n{i}"}) for i in range(300)], partitions=4
    )
    with serve(tmp_path / "wh", "/api/status") as server:
        url, http = server.url, server.http
        r = http.post(
            f"{url}/api/query", json={"sql": "CREATE TABLE people (id BIGINT, name TEXT)"}
        )
        assert r.status_code == 200, r.text
        create = (
            f"CREATE PIPELINE people_p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f'CREDENTIALS \'{{"sasl.password": "{CANARY}"}}\' INTO TABLE people FORMAT JSON'
        )
        r = http.post(f"{url}/api/pipelines", json={"sql": create})
        assert r.status_code == 201 and r.json()["created"] == ["people_p"], r.text
        assert http.post(f"{url}/api/pipelines/people_p/start").json()["state"] == "Running"
        wait(lambda: http.get(f"{url}/api/tables/people").json()["rows"] == 300, 120, "rows")

        listed = http.get(f"{url}/api/pipelines").json()
        (p,) = listed
        assert p["name"] == "people_p" and p["rows_loaded"] == 300 and p["lag"] == 0
        detail = http.get(f"{url}/api/pipelines/people_p").json()
        assert sorted(o["partition"] for o in detail["offsets"]) == ["0", "1", "2", "3"]
        assert sum(o["committed"] for o in detail["offsets"]) == 300
        assert detail["definition"]["source"]["credentials"] == {"sasl.password": "<redacted>"}
        batches = http.get(f"{url}/api/pipelines/people_p/batches?limit=5").json()
        assert batches and all(b["state"] for b in batches)
        assert http.get(f"{url}/api/pipelines/people_p/errors").json() == []
        tables = http.get(f"{url}/api/tables").json()
        assert {"name": "id", "type": "int64"} in tables[0]["columns"]
        assert tables[0]["files"] >= 1 and tables[0]["version"] >= 1  # table upkeep
        assert tables[0]["last_vacuum"] is None or "T" in tables[0]["last_vacuum"]

        q = http.post(
            f"{url}/api/query",
            json={"sql": "SELECT id, name FROM people ORDER BY id", "max_rows": 10},
        ).json()
        assert q["columns"] == ["id", "name"] and q["rows"][0] == [0, "n0"] and q["truncated"]
        assert q["types"] == ["LONG", "STRING"]
        streamed = http.post(
            f"{url}/api/query/stream",
            json={"sql": "SELECT id FROM people ORDER BY id"},
            stream=True,
        )
        assert streamed.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in streamed.iter_lines()]
        assert lines[0] == {"columns": ["id"]} and lines[-1]["rows"] == 300
        assert [r[0] for r in lines[1:-1]] == list(range(300))
        bad_stream = http.post(f"{url}/api/query/stream", json={"sql": "SELECT nope FROM people"})
        assert bad_stream.status_code == 400 and "nope" in bad_stream.json()["error"]["message"]
        pinot = http.post(f"{url}/query/sql", json={"sql": "SELECT count(*) FROM people"}).json()
        assert pinot["resultTable"]["rows"] == [[300]] and pinot["exceptions"] == []
        bad = http.post(f"{url}/api/query", json={"sql": "SELECT 1;\nSELEC id FROM people"})
        assert bad.status_code == 400
        err = bad.json()["error"]
        assert (err["code"], err["line"], err["column"]) == ("SP700", 2, 1), err
        unknown = http.post(f"{url}/api/query", json={"sql": "SELECT nope FROM people"})
        assert unknown.status_code == 400 and "nope" in unknown.json()["error"]["message"]
        assert "Traceback" not in bad.text + unknown.text
        broken = http.post(f"{url}/query/sql", json={"sql": "SELEC 1"}).json()
        assert broken["exceptions"] and "resultTable" not in broken
        missing = http.get(f"{url}/api/pipelines/nope")
        assert missing.status_code == 404 and "does not exist" in missing.json()["error"]["message"]

        assert http.post(f"{url}/api/pipelines/people_p/stop").json()["state"] == "Stopped"
        moved = http.put(f"{url}/api/pipelines/people_p/offsets", json={"offsets": "earliest"})
        assert moved.status_code == 200, moved.text
        every = "".join(
            http.get(f"{url}{path}").text
            for path in (
                "/api/pipelines",
                "/api/pipelines/people_p",
                "/api/tables",
                "/api/variables",
                "/openapi.json",
            )
        )
        every += http.post(f"{url}/api/query", json={"sql": "SHOW CREATE PIPELINE people_p"}).text
        every += http.post(
            f"{url}/api/query", json={"sql": "SELECT * FROM information_schema.PIPELINES"}
        ).text
        assert CANARY not in every
    assert CANARY not in server.output and "Traceback" not in server.output


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    from sparkpipes import Engine
    from sparkpipes.server import create_app
    from sparkpipes.server.security import Hosts

    eng = Engine(tmp_path_factory.mktemp("api") / "wh")
    eng.create_table("t", "id BIGINT, v STRING")
    # the owner's token; schemathesis calls the app in process as host "testserver"
    hosts = Hosts.of("127.0.0.1", ["testserver"])
    app = create_app(eng, run=False, local_token=OWNER_TOKEN, hosts=hosts)
    yield schemathesis.openapi.from_asgi("/openapi.json", app).include(path_regex="^/(api|query)")
    eng.close()


def test_the_api_keeps_its_openapi_contract(api_schema):
    """No 5xx, status codes and bodies as documented, for requests generated from the
    OpenAPI document, operation by operation (schemathesis' own pytest plugin does not
    work with this pytest, so its strategies run under hypothesis directly)."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 12
    for op in operations:

        @given(case=op.as_strategy())
        @settings(
            max_examples=12,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            # an SQL text can be schema-valid and still not SQL (a 400 naming where):
            # every check but "valid data is accepted"
            case.call_and_validate(
                headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
                excluded_checks=[positive_data_acceptance],
            )

        check()

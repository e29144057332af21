"""The query sandbox and privileges on every surface of a real ``sparkpipes serve``: the
JSON API (``/api/query``, ``/api/query/stream``, ``/api/sql``, ``POST /api/pipelines``),
Pinot's ``/query/sql``, the console, Kafka Connect's and Pinot's REST APIs and the MySQL
endpoint (PyMySQL). A file of the server's disk, a Java method or a Spark setting is
refused to everyone, the owner included; a signed-in user sees, reads and changes only
what they were granted; over MySQL one may kill only one's own connections."""

from __future__ import annotations

import pymysql
import pytest
import requests

from tests.e2e.serving import free_port, serve

ANA, BO = ("ana", "Ana-pw-4410"), ("bo", "Bo-pw-8172")


def attacks(warehouse) -> list[str]:
    key = f"{warehouse}/secret.key"
    return [
        f"SELECT * FROM text.`{key}`",
        f"SELECT * FROM binaryFile.`{warehouse}`",
        "SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
        "SELECT java_method('java.lang.System', 'getenv', 'HOME')",
        f"WITH c AS (SELECT 1) INSERT OVERWRITE DIRECTORY '{warehouse}/out' SELECT * FROM c",
        "SET spark.sql.ansi.enabled = false",
        f"ADD JAR '{warehouse}/x.jar'",
    ]


def secret_key(warehouse) -> str:
    return (warehouse / "secret.key").read_text().strip()


def test_the_sandbox_holds_on_every_surface_for_everyone(tmp_path):
    wh = tmp_path / "wh"
    mysql_port = free_port()
    with serve(wh, "/api/status", "--mysql-port", str(mysql_port)) as server:
        url, http = server.url, server.http  # the owner
        assert http.post(f"{url}/api/query", json={"sql": "CREATE TABLE t (a INT)"}).ok
        key = secret_key(wh)
        db = pymysql.connect(
            host="127.0.0.1",
            port=mysql_port,
            user="me",
            password=server.token,
            database="sparkpipes",
        )
        for text in attacks(wh):
            for path in ("/api/query", "/api/query/stream", "/api/sql", "/api/pipelines"):
                r = http.post(url + path, json={"sql": text})
                body = r.text
                if path == "/api/sql" and r.status_code == 200:  # errors end the stream
                    assert '"error"' in body, (path, text, body)
                else:
                    assert r.status_code in (400, 403), (path, text, r.status_code, body)
                assert key not in body and "Traceback" not in body
            pinot = http.post(f"{url}/query/sql", json={"sql": text}).json()
            assert "resultTable" not in pinot and pinot["exceptions"], text
            assert key not in str(pinot)
            with pytest.raises(pymysql.MySQLError) as e, db.cursor() as cur:
                cur.execute(text)
            assert key not in str(e.value)
        db.close()
        assert not (wh / "out").exists()
        # ingest-time SQL on a running server: refused when the pipeline is created
        (tmp_path / "in.json").write_text('{"a": 1}\n')
        create = (
            f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE t "
            "FORMAT JSON (@x <- a) SET a = length(reflect('java.lang.System', 'lineSeparator'))"
        )
        http.post(f"{url}/api/query", json={"sql": "SELECT count(*) FROM t"})  # Spark runs
        r = http.post(f"{url}/api/pipelines", json={"sql": create})
        assert r.status_code == 403 and "reflect" in r.json()["error"]["message"], r.text
    assert key not in server.output and "Traceback" not in server.output


def test_privileges_hold_on_every_surface(tmp_path):
    wh = tmp_path / "wh"
    (tmp_path / "in.json").write_text('{"a": 1}\n')
    mysql_port = free_port()
    with serve(wh, "/api/status", "--mysql-port", str(mysql_port)) as server:
        url, owner = server.url, server.http
        setup = (
            "CREATE TABLE t (a INT); CREATE TABLE secret (s TEXT); INSERT INTO t VALUES (1);"
            "INSERT INTO secret VALUES ('classified');"
            f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE t FORMAT JSON;"
            f"CREATE USER ana IDENTIFIED BY '{ANA[1]}'; CREATE USER bo IDENTIFIED BY '{BO[1]}'"
        )
        assert owner.post(f"{url}/api/query", json={"sql": setup}).ok
        bo = requests.Session()
        bo.auth = BO
        ana = requests.Session()
        ana.auth = ANA

        # bo holds nothing: lists are empty, everything else is refused
        assert bo.get(f"{url}/api/pipelines").json() == []
        assert bo.get(f"{url}/api/tables").json() == []
        for method, path in (
            ("GET", "/api/pipelines/p"),
            ("POST", "/api/pipelines/p/start"),
            ("PUT", "/api/pipelines/p/offsets"),
            ("GET", "/api/pipelines/p/batches"),
            ("GET", "/api/tables/secret"),
            ("GET", "/connectors"),
            ("GET", "/tables"),
            ("GET", "/schemas"),
        ):
            kwargs = {"json": {"offsets": "earliest"}} if method == "PUT" else {}
            r = bo.request(method, url + path, **kwargs)
            assert r.status_code == 403, (method, path, r.status_code, r.text)
        r = bo.post(f"{url}/api/query", json={"sql": "SELECT * FROM secret"})
        assert r.status_code == 403 and "SELECT command denied" in r.text
        pinot = bo.post(f"{url}/query/sql", json={"sql": "SELECT * FROM secret"}).json()
        assert "SELECT command denied" in pinot["exceptions"][0]["message"]
        assert "classified" not in str(pinot)

        # ana, the first user, is the admin; she grants bo a little
        grant = "GRANT SELECT ON t TO bo; GRANT SHOW PIPELINE, START PIPELINE ON p TO bo"
        assert ana.post(f"{url}/api/query", json={"sql": grant}).ok
        assert [p["name"] for p in bo.get(f"{url}/api/pipelines").json()] == ["p"]
        assert [t["name"] for t in bo.get(f"{url}/api/tables").json()] == ["t"]
        assert bo.get(f"{url}/api/pipelines/p").status_code == 200
        assert bo.post(f"{url}/api/pipelines/p/start").json()["state"] == "Running"
        assert bo.post(f"{url}/api/pipelines/p/stop").json()["state"] == "Stopped"
        r = bo.put(f"{url}/api/pipelines/p/offsets", json={"offsets": "earliest"})
        assert r.status_code == 403 and "ALTER PIPELINE" in r.text
        r = bo.post(f"{url}/api/query", json={"sql": "SELECT a FROM t"})
        # the pipeline bo started may have loaded its one record (a = 1) before the stop
        assert r.json()["rows"] in ([[1]], [[1], [1]])

        # a Connect sink that upserts replaces stored rows: DELETE too, as MySQL's REPLACE
        # (decided on the config as loaded: any spelling of true, any shape of body)
        grant = "GRANT CREATE PIPELINE, ALTER PIPELINE, CREATE, INSERT ON * TO bo"
        assert ana.post(f"{url}/api/query", json={"sql": grant}).ok
        for spelled in ("true", " true", "TRUE"):
            upsert = {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics": "t",
                "singlestore.upsert": spelled,
            }
            r = bo.post(f"{url}/connectors", json={"name": "up", "config": upsert})
            assert r.status_code == 403 and "DELETE" in r.text, r.text
            r = bo.put(f"{url}/connectors/up/config", json={"config": upsert})
            assert r.status_code == 403 and "DELETE" in r.text, r.text
        revoke = "REVOKE CREATE PIPELINE, ALTER PIPELINE, CREATE, INSERT ON * FROM bo"
        assert ana.post(f"{url}/api/query", json={"sql": revoke}).ok

        # the console, signed in as bo: only what bo may see
        console = requests.Session()
        login = console.post(f"{url}/api/login", json={"user": BO[0], "password": BO[1]})
        assert login.status_code == 200
        page = console.get(f"{url}/console/tables").text
        assert ">t<" in page and "secret" not in page
        assert console.get(f"{url}/console/pipelines/p").status_code == 200

        # MySQL: bo's session has bo's privileges; KILL only one's own connection
        def connect(user, password):
            return pymysql.connect(
                host="127.0.0.1",
                port=mysql_port,
                user=user,
                password=password,
                database="sparkpipes",
            )

        bo_db, ana_db = connect(*BO), connect(*ANA)
        with bo_db.cursor() as cur:
            cur.execute("SELECT a FROM t")
            assert cur.fetchall() in (((1,),), ((1,), (1,)))  # as above: the started pipeline's
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute("SELECT * FROM secret")
            assert e.value.args[0] == 1142 and "classified" not in str(e.value)
            cur.execute("SHOW TABLES")
            assert cur.fetchall() == (("t",),)
            cur.execute(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sparkpipes'"
            )
            assert cur.fetchall() == (("t",),)
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute(f"KILL {ana_db.thread_id()}")
            assert e.value.args[0] == 1095
        with ana_db.cursor() as cur:
            cur.execute("SELECT 1")  # ana's connection lives
            cur.execute(f"KILL {bo_db.thread_id()}")  # the admin may
        with pytest.raises(pymysql.MySQLError), bo_db.cursor() as cur:
            cur.execute("SELECT 1")
        ana_db.close()
    assert "classified" not in server.output and "Traceback" not in server.output


def _sql_lines(session, url, text):
    """``POST /api/sql``'s NDJSON lines."""
    import json

    r = session.post(f"{url}/api/sql", json={"sql": text})
    assert r.status_code == 200, r.text
    return [json.loads(ln) for ln in r.text.splitlines() if ln.strip()]


def test_what_sqlglot_hid_stays_shut_on_every_surface(tmp_path):
    """The second review's findings, as a user of a running server tries them: another
    user's information_schema rows behind a raw string Spark reads and sqlglot does not, or
    behind a JSON key's subquery; Spark's own SHOW VIEWS / SHOW TABLES; a procedure whose
    batch would read a table by its parameter's name; current_user() naming the server's
    OS account."""
    wh = tmp_path / "wh"
    (tmp_path / "in.json").write_text('{"a": 1}\n')
    mysql_port = free_port()
    with serve(wh, "/api/status", "--mysql-port", str(mysql_port)) as server:
        url, owner = server.url, server.http
        setup = (
            "CREATE TABLE t (a INT); CREATE TABLE secret (s TEXT);"
            "INSERT INTO secret VALUES ('classified');"
            f"CREATE PIPELINE hidden_pipe AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE t "
            f"FORMAT JSON; CREATE USER ana IDENTIFIED BY '{ANA[1]}';"
            f"CREATE USER bo IDENTIFIED BY '{BO[1]}'"
        )
        assert owner.post(f"{url}/api/query", json={"sql": setup}).ok
        bo = requests.Session()
        bo.auth = BO
        ana = requests.Session()
        ana.auth = ANA
        views = "SELECT count(*) FROM information_schema.PIPELINES"
        assert ana.post(f"{url}/api/query", json={"sql": views}).json()["rows"] == [[1]]

        leak = (
            "SELECT r'\\', (SELECT max(PIPELINE_NAME) FROM __information_schema_PIPELINES) "
            "AS leak --'"
        )
        for path in ("/api/query", "/api/query/stream", "/api/sql"):
            r = bo.post(url + path, json={"sql": leak})
            assert "hidden_pipe" not in r.text and "does not exist" in r.text, (path, r.text)
        key = (
            'SELECT JSON_EXTRACT_STRING(\'{"k": "yes"}\', (SELECT CASE WHEN count(*) > 0 '
            "THEN 'k' END FROM information_schema.PIPELINES WHERE PIPELINE_NAME = 'hidden_pipe'))"
        )
        assert bo.post(f"{url}/api/query", json={"sql": key}).json()["rows"] == [[None]]
        assert ana.post(f"{url}/api/query", json={"sql": key}).json()["rows"] == [["yes"]]

        # listings: Spark's are refused; the dialect's SHOW TABLES shows what bo holds
        for text in ("SHOW VIEWS", "SHOW TABLES IN default"):
            r = bo.post(f"{url}/api/query", json={"sql": text})
            assert r.status_code == 403 and "secret" not in r.text, r.text
        assert _sql_lines(bo, url, "SHOW TABLES")[0]["rows"] == []
        grant = "GRANT SELECT ON t TO bo; GRANT CREATE ROUTINE, EXECUTE ON bo_proc TO bo"
        assert ana.post(f"{url}/api/query", json={"sql": grant}).ok
        assert _sql_lines(bo, url, "SHOW TABLES")[0]["rows"] == [["t"]]
        who = "SELECT current_user(), session_user()"
        assert bo.post(f"{url}/api/query", json={"sql": who}).json()["rows"] == [["bo@%"] * 2]
        streamed = _sql_lines(bo, url, who)
        assert streamed[1]["rows"] == [["bo@%"] * 2]

        # a body that names a protected table outside its parameter's scope, behind the
        # raw string: refused; named as the parameter it is the batch, and admitted
        make = "CREATE TABLE bo_t (a BIGINT, s TEXT); GRANT INSERT, SELECT ON bo_t TO bo"
        assert ana.post(f"{url}/api/query", json={"sql": make}).ok
        proc = (
            "CREATE PROCEDURE bo_proc(b QUERY(a BIGINT))\nAS\nBEGIN\n  INSERT INTO bo_t "
            "(a, s) SELECT 1, x.s FROM (SELECT r'\\' AS z) JOIN secret x --'\n  ;\nEND"
        )
        r = bo.post(f"{url}/api/query", json={"sql": proc})
        assert r.status_code == 403 and "SELECT command denied" in r.text, r.text
        as_param = proc.replace("bo_proc(b QUERY", "bo_proc(secret QUERY")
        assert bo.post(f"{url}/api/query", json={"sql": as_param}).ok

        db = pymysql.connect(
            host="127.0.0.1", port=mysql_port, user=BO[0], password=BO[1], database="sparkpipes"
        )
        with db.cursor() as cur:
            cur.execute("SHOW TABLES")
            assert cur.fetchall() == (("bo_t",), ("t",))
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute("SHOW VIEWS")
            assert "secret" not in str(e.value)
            cur.execute("SELECT SESSION_USER()")
            assert cur.fetchall() == (("bo@%",),)
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute(leak)
            assert "hidden_pipe" not in str(e.value)
        db.close()
    assert "classified" not in server.output and "Traceback" not in server.output

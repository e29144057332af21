"""The MySQL-protocol endpoint (``sparkpipes serve --mysql-port``) as MySQL users reach it:
the real ``mariadb`` command-line client in batch mode and PyMySQL, signed in as the server's
owner (no users yet: any user name, the local token as the password), run the quickstart's
statements (a table, a Kafka pipeline, START, SHOW PIPELINES, SELECT) and the metadata
queries clients send on connect; a statement that fails answers a MySQL error code with
the sparkpipes message; 20 connections query at once while the pipeline loads."""

from __future__ import annotations

import json
import threading

import pymysql
import pytest

from tests.e2e.serving import free_port, mariadb, serve, wait

CANARY = "canary-Mysql-77aa"


def test_mysql_clients_run_sparkpipes_statements(broker, topic, tmp_path):
    broker.produce(
        topic, [json.dumps({"id": i, "name": f"n{i}"}) for i in range(500)], partitions=4
    )
    port = free_port()
    with serve(tmp_path / "wh", "/api/status", "--mysql-port", str(port)) as server:
        token = server.token
        out = mariadb(
            port,
            "SELECT @@version_comment LIMIT 1; CREATE TABLE people (id BIGINT, name TEXT);",
            password=token,
        )
        assert out.returncode == 0, out.stderr
        create = (
            f"CREATE PIPELINE people_p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f'CREDENTIALS \'{{\\"sasl.password\\": \\"{CANARY}\\"}}\' INTO TABLE people FORMAT JSON; START PIPELINE people_p;'
        )
        out = mariadb(port, create, password=token)
        assert out.returncode == 0, out.stderr
        out = mariadb(port, "SHOW PIPELINES", password=token)
        assert out.stdout.splitlines()[0].split("\t") == ["Pipelines_in_sparkpipes", "State"]
        assert "people_p\tRunning" in out.stdout

        conn = pymysql.connect(
            host="127.0.0.1", port=port, user="anyone", password=token, database="sparkpipes"
        )
        with conn.cursor() as cur:
            wait(
                lambda: cur.execute("SELECT count(*) FROM people") and cur.fetchone()[0] == 500,
                120,
                "rows",
            )
            cur.execute("SELECT id, name FROM people WHERE id < 3 ORDER BY id")
            assert cur.fetchall() == ((0, "n0"), (1, "n1"), (2, "n2"))
            assert [d[0] for d in cur.description] == ["id", "name"]
            cur.execute("SELECT DATABASE()")
            assert cur.fetchone() == ("sparkpipes",)
            cur.execute("SHOW DATABASES")
            assert ("sparkpipes",) in cur.fetchall()
            cur.execute("SHOW TABLES")
            assert ("people",) in cur.fetchall()
            cur.execute("SHOW COLUMNS FROM people")
            assert [r[0] for r in cur.fetchall()] == ["id", "name"]
            cur.execute(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sparkpipes'"
            )
            assert ("people",) in cur.fetchall()
            cur.execute("SELECT PIPELINE_NAME, STATE FROM information_schema.PIPELINES")
            assert cur.fetchall() == (("people_p", "Running"),)
            # seed 000's monitoring queries, as its docs write them
            cur.execute(
                "SELECT * FROM information_schema.PIPELINES_SOURCE_OFFSETS "
                "WHERE PIPELINE_NAME = 'people_p'"
            )
            assert len(cur.fetchall()) == 4  # a row per partition
            cur.execute(
                "SELECT PIPELINE_NAME, STATE, CONFIG_JSON FROM information_schema.PIPELINES "
                "WHERE PIPELINE_NAME = 'people_p'"
            )
            ((name, state, config),) = cur.fetchall()
            assert (name, state) == ("people_p", "Running") and CANARY not in str(config)
            # table maintenance, as MySQL clients send it
            cur.execute("OPTIMIZE TABLE people")
            ((table, op, kind, text),) = cur.fetchall()
            assert (table, op, kind) == ("people", "optimize", "status") and "OK:" in text
            cur.execute("SHOW TABLE STATUS LIKE 'people'")
            status = dict(zip([d[0] for d in cur.description], cur.fetchone()))
            assert status["Name"] == "people" and status["Rows"] == 500
            assert status["Engine"] == "Delta" and status["Files"] >= 1
            cur.execute("SHOW CREATE PIPELINE people_p")
            shown = str(cur.fetchall())
            assert CANARY not in shown and "<redacted>" in shown
            with pytest.raises(pymysql.err.ProgrammingError) as e:
                cur.execute("SELEC 1")
            assert e.value.args[0] == 1064 and "syntax error" in e.value.args[1]
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute("START PIPELINE nope")
            assert e.value.args[0] == 1146 and "pipeline 'nope' does not exist" in e.value.args[1]
        conn.close()

        counts, failures = [], []

        def client():
            try:
                c = pymysql.connect(
                    host="127.0.0.1",
                    port=port,
                    user="anyone",
                    password=token,
                    database="sparkpipes",
                )
                with c.cursor() as cur:
                    for _ in range(3):
                        cur.execute("SELECT count(*), count(DISTINCT id) FROM people")
                        counts.append(cur.fetchone())
                c.close()
            except Exception as e:  # any failure of any connection fails the test
                failures.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not failures, failures[:3]
        assert len(counts) == 60 and all(c == (500, 500) for c in counts)

"""A statement's Spark work stops when it is told to, as a MySQL user expects: ``KILL
QUERY`` of a connection (by its user, or an admin) and ``max_execution_time`` end the
query with MySQL's errors (3169 or 1317, 3024), the Spark jobs are cancelled (a query that would
run for hours ends within the client's read timeout), and the connection, the server and
other users' queries go on."""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

from tests.e2e.serving import mysql_connect, serve_mysql

ANA, BO = ("ana", "Ana-pw-5521"), ("bo", "Bo-pw-7730")
#: hours of work on two cores: it ends only if its jobs are cancelled
FOREVER = "SELECT count(DISTINCT id % 1000003) AS n FROM range(0, 100000000000, 1, 2)"


def test_kill_query_and_the_time_limit_stop_spark_jobs(tmp_path):
    setup = (
        f"CREATE USER adm IDENTIFIED BY 'Adm-pw-1100'; CREATE USER ana IDENTIFIED BY '{ANA[1]}';"
        f"CREATE USER bo IDENTIFIED BY '{BO[1]}'; CREATE TABLE t (a BIGINT);"
        "INSERT INTO t VALUES (1); GRANT SELECT ON t TO ana; GRANT SELECT ON t TO bo"
    )
    with serve_mysql(tmp_path / "wh", setup) as server:
        ana = mysql_connect(server, ANA, read_timeout=120)
        bo = mysql_connect(server, BO, read_timeout=120)
        failed: list[BaseException] = []

        def run() -> None:
            try:
                with ana.cursor() as cur:
                    cur.execute(FOREVER)
            except BaseException as e:
                failed.append(e)

        # KILL QUERY by another user: refused (1095); by the connection's own user: stops it
        runner = threading.Thread(target=run)
        runner.start()
        time.sleep(3)  # Spark is running the query's tasks
        with bo.cursor() as cur, pytest.raises(pymysql.MySQLError) as e:
            cur.execute(f"KILL QUERY {ana.thread_id()}")
        assert e.value.args[0] == 1095
        killer = mysql_connect(server, ANA)
        with killer.cursor() as cur:
            cur.execute(f"KILL QUERY {ana.thread_id()}")
        runner.join(90)
        assert not runner.is_alive(), "the killed query kept running"
        # mysql-mimic answers ER_QUERY_INTERRUPTED's successor, "Query was killed"
        assert failed and failed[0].args[0] in (1317, 3169), failed
        with ana.cursor() as cur:  # KILL QUERY leaves the connection usable
            cur.execute("SELECT a FROM t")
            assert cur.fetchall() == ((1,),)
        with bo.cursor() as cur:  # its Spark jobs are gone: the next job is not queued behind
            cur.execute("SELECT count(*) FROM range(1000)")
            assert cur.fetchall() == ((1000,),)

        # max_execution_time (ms): set by an admin, it stops a SELECT with error 3024
        assert server.http.post(
            f"{server.url}/api/query", json={"sql": "SET GLOBAL max_execution_time = 3000"}
        ).ok
        with bo.cursor() as cur:
            with pytest.raises(pymysql.MySQLError) as e:
                cur.execute(FOREVER)
            assert e.value.args[0] == 3024
            assert "maximum statement execution time exceeded" in e.value.args[1]
            cur.execute("SELECT a FROM t")  # a quick query is well inside it
            assert cur.fetchall() == ((1,),)
        r = server.http.post(f"{server.url}/api/query", json={"sql": FOREVER})
        assert r.status_code >= 400 and "maximum statement execution time" in r.text, r.text
        for conn in (ana, bo, killer):
            conn.close()

        # SIGTERM while a query would run for hours: serve stops its jobs and ends (the
        # fixture fails if it is still up after 120 s)
        assert server.http.post(
            f"{server.url}/api/query", json={"sql": "SET GLOBAL max_execution_time = 0"}
        ).ok
        failed.clear()
        ana = mysql_connect(server, ANA, read_timeout=300)
        runner = threading.Thread(target=run)
        runner.start()
        time.sleep(3)
    runner.join(60)
    assert not runner.is_alive() and failed, "the query outlived the server"
    assert "Traceback" not in server.output

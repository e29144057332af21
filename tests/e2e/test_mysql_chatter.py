"""Over the MySQL protocol, the connection and catalog chatter mysql-mimic answers itself
(``SELECT @@version_comment``, ``DATABASE()``, ``SHOW TABLES``, ``information_schema.TABLES``)
is evaluated by sqlglot's Python executor: a user's expression there must never become code
run in the server (a held-out review ran ``id`` as root through a JSON path key). Real
clients' chatter keeps working (PyMySQL, the mariadb CLI)."""

from __future__ import annotations

import pymysql
import pytest

from tests.e2e.serving import mariadb, mysql_connect, serve_mysql

ANA, ZED = ("ana", "Ana-pw-3307"), ("zed", "Zed-pw-5521")


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def payloads(mark) -> list[str]:
    """Statements whose pieces sqlglot's Python generator pastes into source unquoted."""
    code = f"open({str(mark)!r}, 'w').write('pwned')"
    key = _quoted(f"x']) if 0 else {code} if 1 else (['")
    unit = _quoted(f"day') if 0 else {code} if 1 else ('")
    return [
        f"SELECT @@version_comment AS v, JSON_EXTRACT('{{\"a\":1}}', '$[\"{key}\"]') AS r",
        f"SELECT DATABASE(), JSON_EXTRACT('{{\"a\":1}}', '$.\"{key}\"')",
        "SELECT TABLE_NAME FROM information_schema.TABLES "
        f"WHERE JSON_EXTRACT('{{\"a\":1}}', '$[\"{key}\"]') IS NULL",
        f"SHOW TABLES WHERE JSON_EXTRACT('{{\"a\":1}}', '$[\"{key}\"]') IS NULL",
        f"SELECT @@version_comment, EXTRACT(`{unit}` FROM '2020-01-01')",
        f"SELECT @@version_comment, CAST('1' AS SIGNED) + INTERVAL 1 `{unit}`",
        "SELECT @@version_comment, (SELECT 1)",
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    setup = (
        f"CREATE TABLE t (a INT); CREATE USER ana IDENTIFIED BY '{ANA[1]}';"
        f"CREATE USER zed IDENTIFIED BY '{ZED[1]}'"
    )
    with serve_mysql(tmp_path_factory.mktemp("chatter") / "wh", setup) as served:
        yield served


def connect(server, user=ZED):
    return mysql_connect(server, user)


def test_expressions_in_chatter_are_refused_not_evaluated(server, tmp_path):
    mark = tmp_path / "pwned"
    db = connect(server)
    for text in payloads(mark):
        with pytest.raises(pymysql.MySQLError) as e, db.cursor() as cur:
            cur.execute(text)
        assert not mark.exists(), text
        assert "Traceback" not in str(e.value)
    # a session variable holding quotes does not carry them into the executor's source
    with db.cursor() as cur:
        cur.execute("SET @@session.time_zone = '+00:00'")
        cur.execute("SELECT @@session.time_zone")
        assert cur.fetchall() == (("+00:00",),)
        cur.execute(f"SET @@session.sql_mode = '{_quoted(chr(39) + ' + str(1) + ' + chr(39))}'")
        with pytest.raises(pymysql.MySQLError):
            cur.execute("SELECT @@session.sql_mode")
    db.close()
    assert not mark.exists()
    assert "Traceback" not in server.text()


def test_clients_chatter_still_answers(server):
    db = connect(server)
    with db.cursor() as cur:
        cur.execute("SELECT @@version_comment LIMIT 1")
        assert len(cur.fetchall()) == 1
        cur.execute("SELECT DATABASE(), USER()")
        assert cur.fetchall()[0][0] == "sparkpipes"
        cur.execute(
            "SELECT @@session.auto_increment_increment AS auto_increment_increment, "
            "@@character_set_client AS character_set_client, @@max_allowed_packet"
        )
        assert len(cur.fetchall()[0]) == 3
        cur.execute("SHOW VARIABLES LIKE 'max_allowed_packet'")
        assert cur.fetchall()
    db.close()
    db = connect(server, ANA)  # the first user: the admin
    with db.cursor() as cur:
        cur.execute(
            "SELECT TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = 'sparkpipes' AND TABLE_NAME LIKE 't%' ORDER BY TABLE_NAME"
        )
        assert cur.fetchall() == (("t",),)
        cur.execute("SHOW TABLES")
        assert ("t",) in cur.fetchall()
        cur.execute("SHOW DATABASES")
        assert ("sparkpipes",) in cur.fetchall()
        cur.execute("SHOW COLUMNS FROM t")
        assert cur.fetchall()[0][0] == "a"
    db.close()
    cli = mariadb(server.mysql_port, "SELECT @@version_comment; SELECT 1 AS one", *ANA)
    assert cli.returncode == 0 and "one\n1" in cli.stdout, cli.stderr


def test_a_script_s_database_is_the_one_clients_see(tmp_path):
    """``CREATE DATABASE demo; USE demo`` as SingleStore's scripts begin: clients then see
    the database as ``demo`` (DATABASE(), SHOW DATABASES, information_schema), connect to
    it by either name, and get MySQL's 1049 for any other."""
    setup = f"CREATE USER ana IDENTIFIED BY '{ANA[1]}'"
    with serve_mysql(tmp_path / "wh", setup) as served:
        cli = mariadb(
            served.mysql_port,
            "CREATE DATABASE IF NOT EXISTS demo; USE demo; CREATE TABLE demo.t (a INT);"
            "SELECT DATABASE()",
            *ANA,
        )
        assert cli.returncode == 0 and cli.stdout.splitlines()[-1] == "demo", cli.stderr
        for name in ("demo", "sparkpipes"):
            db = pymysql.connect(
                host="127.0.0.1",
                port=served.mysql_port,
                user=ANA[0],
                password=ANA[1],
                database=name,
            )
            with db.cursor() as cur:
                cur.execute("SELECT DATABASE()")
                assert cur.fetchall() == (("demo",),)
                cur.execute("SHOW DATABASES")
                assert ("demo",) in cur.fetchall()
                cur.execute("SHOW TABLES")
                assert ("t",) in cur.fetchall()
                cur.execute(
                    "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'demo'"
                )
                assert cur.fetchall() == (("t",),)
                with pytest.raises(pymysql.MySQLError) as e:
                    cur.execute("USE nope")
                assert e.value.args[0] == 1049
                cur.execute("USE sparkpipes")
            db.close()

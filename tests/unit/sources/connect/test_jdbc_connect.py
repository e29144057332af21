"""How the JDBC source connects, without a server: the time-outs a URL sets (pgjdbc in
seconds, the MySQL drivers in milliseconds, 0 for none), the defaults where the Java
drivers would wait forever, Confluent's ``connection.attempts`` / ``connection.backoff.ms``
(``JdbcSourceConnectorConfig``: at least 1, default 3 and 10000), and SQLite opened
read-only. Stalled servers are in tests/integration/test_jdbc_timeouts.py."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
import sqlalchemy as sa

from sparkpipes.errors import ConfigError, SourceError
from sparkpipes.sources import build_source
from sparkpipes.sources.connect.jdbc_dialects import parse_url

JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"


def _connector(url: str, **extra):
    cfg = {
        "connector.class": JDBC,
        "connection.url": url,
        "mode": "incrementing",
        "incrementing.column.name": "id",
        **extra,
    }
    return build_source("kafkaconnect", "jdbc", cfg, {}).connector


@pytest.mark.parametrize(
    ("url", "connect_s", "read_s", "statement_s"),
    [
        ("jdbc:postgresql://h/db", 10.0, 300.0, None),
        ("jdbc:postgresql://h/db?connectTimeout=5&socketTimeout=60", 5.0, 60.0, 60.0),
        ("jdbc:postgresql://h/db?connectTimeout=5&loginTimeout=3", 3.0, 300.0, None),
        ("jdbc:postgresql://h/db?connectTimeout=0&socketTimeout=0", None, None, None),
        ("jdbc:mysql://h/db?connectTimeout=2500&socketTimeout=30000", 2.5, 30.0, None),
        ("jdbc:mariadb://h/db?CONNECTTIMEOUT=2000&sockettimeout=0", 2.0, None, None),
    ],
)
def test_time_outs_in_the_drivers_units(url, connect_s, read_s, statement_s):
    limits = parse_url(url, None, None, None).limits
    assert (limits.connect_s, limits.read_s, limits.statement_s) == (connect_s, read_s, statement_s)


def test_connection_attempts_and_backoff_as_confluent_defines_them():
    limits = _connector("jdbc:mysql://h/db").settings.db.limits
    assert (limits.attempts, limits.backoff_ms) == (3, 10_000)
    src = _connector(
        "jdbc:mysql://h/db", **{"connection.attempts": "5", "connection.backoff.ms": "250"}
    )
    assert (src.settings.db.limits.attempts, src.settings.db.limits.backoff_ms) == (5, 250)
    with pytest.raises(ConfigError) as e:
        _connector(
            "jdbc:mysql://h/db", **{"connection.attempts": "0", "connection.backoff.ms": "-1"}
        )
    assert "'connection.attempts' must be an integer of at least 1" in str(e.value)
    assert "'connection.backoff.ms' must be an integer of at least 0" in str(e.value)
    assert (
        "connection.attempts"
        not in build_source(
            "kafkaconnect",
            "jdbc",
            {"connector.class": JDBC, "connection.url": "jdbc:mysql://h/db", "mode": "bulk"},
            {},
        ).not_applicable
    )


@pytest.mark.parametrize(
    ("url", "args"),
    [
        (
            "jdbc:postgresql://h/db?connectTimeout=3",
            {
                "connect_timeout": 3,
                "keepalives": 1,
                "keepalives_idle": 30,
                "keepalives_interval": 10,
                "keepalives_count": 3,
                "tcp_user_timeout": 60_000,
            },
        ),
        ("jdbc:mysql://h/db", {"charset": "utf8mb4"}),  # the rest per connection (do_connect)
        ("jdbc:oracle:thin:@h:1521/svc", {"tcp_connect_timeout": 10.0}),
        ("jdbc:sqlserver://h:1433;databaseName=d", {"login_timeout": 10, "timeout": 300}),
    ],
)
def test_each_driver_is_given_its_limits(monkeypatch, url, args):
    seen, real = {}, sa.create_engine

    def create_engine(url, **kw):
        seen.update(kw)
        return real("sqlite://")

    monkeypatch.setattr(sa, "create_engine", create_engine)
    db = parse_url(url, "u", None, None)
    db.dialect.engine(db)  # the driver need not be installed to see what it would get
    assert seen["connect_args"] == args
    assert seen["poolclass"].__name__ == "NullPool"


def test_sqlite_is_opened_read_only_and_a_missing_file_is_never_made(tmp_path):
    path = tmp_path / "my shop#1 100%.db"  # quoted into the URI: still this file
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    connector = _connector(f"jdbc:sqlite:{path}")
    assert connector.partitions() == [{"table": "main.orders"}]
    reader = connector.reader()
    reader.open({"table": "main.orders"}, {})
    polled = reader.poll(100, 1.0)
    assert [json.loads(r)["name"] for r in polled.columns.record.to_pylist()] == ["a", "b"]
    db = connector.settings.db
    with db.connect(db.engine(), "testing") as conn, pytest.raises(sa.exc.OperationalError) as e:
        conn.execute(sa.text("INSERT INTO orders VALUES (3, 'c')"))
    assert "readonly database" in str(e.value)
    reader.close()
    connector.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no journal left
    missing = tmp_path / "typo.db"
    with pytest.raises(SourceError, match=r"typo\.db' while listing its tables: unable to open"):
        _connector(f"jdbc:sqlite:{missing}").partitions()
    assert not missing.exists()

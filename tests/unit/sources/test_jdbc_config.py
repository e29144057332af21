"""The JDBC source connector's CONFIG checks, URL parsing and offset encoding, without a
server (the reads themselves are in tests/integration/test_jdbc_source.py)."""

from __future__ import annotations

import datetime as dt
import pickle
import time
from decimal import Decimal

import pytest

from sparkpipes.config import Secret
from sparkpipes.errors import ConfigError
from sparkpipes.sources import build_source
from sparkpipes.sources.connect.jdbc_dialects import parse_url
from sparkpipes.sources.connect.jdbc_read import jsonable as _jsonable
from sparkpipes.sources.connect.jdbc_read import ts_offset as _ts_offset
from sparkpipes.sources.connect.jdbc_read import ts_value as _ts_value

JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"


def source(creds=None, **cfg):
    base = {
        "connector.class": JDBC,
        "connection.url": "jdbc:postgresql://db.example:5433/shop",
        "connection.user": "loader",
        "mode": "incrementing",
        "incrementing.column.name": "id",
    }
    config = {k.replace("_", "."): v for k, v in {**base, **cfg}.items()}
    return build_source("kafkaconnect", "jdbc", config, creds or {})


def test_a_valid_config_builds_without_the_network_and_keeps_the_password_secret():
    src = source(creds={"connection.password": Secret("pw-123")})
    settings = src.connector.settings
    assert settings.db.where() == "PostgreSQL database 'shop' at db.example:5433"
    assert settings.db.default_schema() == "public"
    assert settings.db.password.reveal() == "pw-123"
    back = pickle.loads(pickle.dumps(src))  # into tasks, which need the password
    assert back.connector.settings.db.password.reveal() == "pw-123"
    assert "pw-123" not in repr(settings)
    assert "pw-123" not in str(src.describe())


@pytest.mark.parametrize(
    ("url", "kind", "port", "database"),
    [
        ("jdbc:postgresql://h/db", "PostgreSQL", 5432, "db"),
        ("jdbc:mysql://h:3307/db", "MySQL", 3307, "db"),
        ("jdbc:mariadb://h/shop?user=me", "MariaDB", 3306, "shop"),
        ("postgresql://h/db?currentSchema=sales", "PostgreSQL", 5432, "db"),
    ],
)
def test_jdbc_urls_of_the_three_servers(url, kind, port, database):
    db = parse_url(url, None, None, None)
    assert (db.kind, db.port, db.database) == (kind, port, database)
    if "user=me" in url:
        assert db.user == "me"
    if "currentSchema" in url:
        assert db.default_schema() == "sales"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("jdbc:db9://h/x", "not a JDBC URL sparkpipes can read"),
        ("jdbc:oracle:thin:scott/s3cret@h:1521/x", "holds a password"),
        ("jdbc:sqlserver://h;databaseName=d;password=s3cret", "holds a password"),
        ("jdbc:redshift://h:5439/dev?password=s3cret", "pip install sqlalchemy-redshift"),
        ("jdbc:mysql://h/", "names no database"),
        ("jdbc:postgresql://h:x/db?password=s3cret", "'jdbc:postgresql://h:x/db.*invalid port"),
        ("jdbc:mysql://u:s3cret@h/db?password=other", "holds two different passwords"),
        ("jdbc:mysql://h/db?foo=1", "parameter 'foo' is not understood"),
        ("jdbc:mysql://h/db?useSSL=maybe&password=s3cret", "'useSSL' must be true, false"),
        ("jdbc:mysql://h/db?sslMode=verify-full", "'sslMode' must be one of DISABLED"),
        (
            "jdbc:mysql://h/db?connectTimeout=5s",
            "'connectTimeout' must be a whole number of milliseconds",
        ),
    ],
)
def test_bad_urls_are_named(url, message):
    with pytest.raises(ConfigError, match=message) as e:
        source(connection_url=url)
    assert "s3cret" not in str(e.value)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"mode": "sometimes"}, r"'mode' must be one of bulk, incrementing, timestamp"),
        ({"mode": None}, r"'mode' must be one of bulk, incrementing, timestamp"),
        ({"incrementing_column_name": None}, r"needs CONFIG key 'incrementing.column.name'"),
        ({"mode": "timestamp+incrementing"}, r"needs CONFIG key 'timestamp.column.name'"),
        ({"query": "SELECT * FROM t", "table_whitelist": "t"}, r"give query or table.whitelist"),
        ({"db_timezone": "Europe/Paris"}, r"db.timezone 'Europe/Paris' is not supported"),
        ({"quote_sql_identifiers": "never"}, r"quote.sql.identifiers 'never' is not supported"),
        ({"poll_interval_ms": "often"}, r"'poll.interval.ms' must be an integer"),
        ({"table_whitelist": "a", "table_blacklist": "b"}, r"whitelist or table.blacklist"),
        ({"batch_max_rows": 0}, r"'batch.max.rows' must be an integer of at least 1"),
        ({"validate_non_null": "maybe"}, r"'validate.non.null' must be true or false"),
        ({"connection_url": None}, r"needs CONFIG key 'connection.url'"),
        (
            {"poll_interval": 5},
            r"unknown CONFIG key .*'poll.interval'.*did you mean 'poll.interval.ms'",
        ),
    ],
)
def test_config_mistakes_are_named(cfg, message):
    cfg = {k: v for k, v in cfg.items()}
    with pytest.raises(ConfigError, match=message):
        source(**cfg)


def test_include_list_spelling_and_timestamp_columns():
    src = source(
        mode="timestamp",
        timestamp_column_name="modified, created",
        table_include_list="orders, sales.items",
    )
    assert src.connector.whitelist == ("orders", "sales.items")
    assert src.connector.settings.timestamps == ("modified", "created")
    assert src.connector.settings.incrementing is None


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2026, 1, 1, 12, 0, 0, 123456),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        dt.datetime(2026, 6, 1, 0, 0, 0),
    ],
)
def test_timestamp_offsets_keep_microseconds(value):
    off = _ts_offset(value)
    assert _ts_value(off, aware=False) == value
    aware = value.replace(tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert _ts_value(_ts_offset(aware), aware=True) == aware


def test_a_timestamp_offset_is_epoch_milliseconds_and_nanos_of_the_second():
    assert _ts_offset(dt.datetime(1970, 1, 1, 0, 0, 1, 500)) == {
        "timestamp": 1000,
        "timestamp_nanos": 500_000,
    }
    assert _ts_value({"timestamp": 1500}, aware=False) == dt.datetime(1970, 1, 1, 0, 0, 1, 500000)


def test_column_values_as_json():
    assert _jsonable(Decimal("12.50")) == 12.5
    assert _jsonable(Decimal("7")) == 7
    assert _jsonable(dt.date(2026, 1, 2)) == "2026-01-02"
    assert _jsonable(b"\x00\xff") == "AP8="


@pytest.mark.parametrize(
    ("url", "kind", "where", "schema"),
    [
        ("jdbc:sqlite:/data/retail.db", "SQLite", "SQLite database '/data/retail.db'", "main"),
        ("jdbc:sqlite:test.db", "SQLite", "SQLite database 'test.db'", "main"),
        (
            "jdbc:oracle:thin:@127.0.0.1:1521/ORCLPDB1",
            "Oracle",
            "Oracle database 'ORCLPDB1' at 127.0.0.1:1521",
            "CONNECT_USER",
        ),
        (
            "jdbc:oracle:thin:@//db:1522:ORCL",
            "Oracle",
            "Oracle database 'ORCL' at db:1522",
            "CONNECT_USER",
        ),
        (
            "jdbc:sqlserver://127.0.0.1:1433;databaseName=demo",
            "SQL Server",
            "SQL Server database 'demo' at 127.0.0.1:1433",
            "dbo",
        ),
    ],
)
def test_sqlite_oracle_and_sql_server_urls(url, kind, where, schema):
    db = parse_url(url, "connect_user", None, None)
    assert (db.kind, db.where(), db.default_schema()) == (kind, where, schema)


def test_three_part_names_are_in_the_connected_database():
    db = parse_url("jdbc:sqlserver://h;databaseName=demo", "u", None, None)
    assert db.qualified("demo..num_test") == "dbo.num_test"
    assert db.qualified("sales.orders") == "sales.orders"
    with pytest.raises(ConfigError, match="in database 'other'"):
        db.qualified("other.dbo.t")


@pytest.mark.parametrize(
    ("url", "package"),
    [
        ("jdbc:oracle:thin:@127.0.0.1:1521/ORCLPDB1", "pip install oracledb"),
        ("jdbc:sqlserver://127.0.0.1:1433;databaseName=demo", "pip install pymssql"),
    ],
)
def test_a_dialect_without_its_driver_validates_and_fails_to_read_naming_the_package(url, package):
    src = source(connection_url=url, mode="bulk", table_whitelist="NUM_TEST")
    with pytest.raises(ConfigError, match=f"driver not installed: .*{package}"):
        src.connector.partitions()


def test_bulk_mode_honours_poll_interval_and_reports_the_rest():
    src = source(mode="bulk", poll_interval_ms="60000", numeric_mapping="best_fit")
    assert src.connector.settings.poll_interval_ms == 60000
    assert "poll.interval.ms" not in src.not_applicable
    assert "numeric.mapping" in src.not_applicable
    incremental = source(poll_interval_ms="60000")
    assert "poll.interval.ms" in incremental.not_applicable
    tables = [{"table": "public.a"}, {"table": "public.b"}]
    now = int(time.time() * 1000)
    offsets = {
        '{"table":"public.a"}': {"snapshot": 3, "timestamp": now - 1000},
        '{"table":"public.b"}': {"snapshot": 3, "timestamp": now - 61_000},
    }
    assert src.connector.ready(tables, offsets) == [{"table": "public.b"}]
    assert src.connector.ready(tables, {}) == tables


def test_query_mode_reads_one_partition_named_as_confluent_names_it():
    src = source(query="SELECT id, name FROM orders JOIN x USING (id)", topic_prefix="orders-q")
    assert src.connector.partitions() == [{"query": "query"}]
    assert src.connector.settings.query.startswith("SELECT id")


def test_both_spellings_of_a_table_list_and_schema_wildcards_are_named():
    with pytest.raises(ConfigError) as e:
        source(
            table_whitelist="a",
            table_include_list="b",
            schema_pattern="sales%",
            mode="bulk",
            db_timezone="America/New_York",
        )
    text = str(e.value)
    assert "3 problems" in text
    assert "table.include.list name different tables" in text and "schema.pattern" in text


def test_table_types_and_timestamp_initial():
    src = source(mode="timestamp", timestamp_column_name="at", timestamp_initial="1500")
    assert src.connector.start_offset({"table": "public.t"}, "earliest") == {
        "timestamp": 1500,
        "timestamp_nanos": 500_000_000,
    }
    assert source(table_types="table, VIEW").connector.table_types == ("TABLE", "VIEW")
    with pytest.raises(ConfigError) as e:
        source(table_types="SYSTEM TABLE", timestamp_initial="-1")
    assert "table.types 'SYSTEM TABLE'" in str(e.value) and "start the pipeline at latest" in str(
        e.value
    )

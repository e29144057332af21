"""The JDBC source connector's CONFIG checks, URL parsing and offset encoding, without a
server (the reads themselves are in tests/integration/test_jdbc_source.py)."""

from __future__ import annotations

import datetime as dt
import pickle
from decimal import Decimal

import pytest

from sparkpipes.config import Secret
from sparkpipes.errors import ConfigError
from sparkpipes.sources import build_source
from sparkpipes.sources.connect.jdbc import _jsonable, _ts_offset, _ts_value, parse_url

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
        ("jdbc:oracle:thin:@h:1521:x", "not a JDBC URL sparkpipes can read"),
        ("jdbc:mysql://h/", "names no database"),
        ("jdbc:postgresql://h:x/db?password=s3cret", "'jdbc:postgresql://h:x/db.*invalid port"),
        ("jdbc:mysql://u:s3cret@h/db?password=other", "holds two different passwords"),
        ("jdbc:mysql://h/db?foo=1", "parameter 'foo' is not understood"),
        ("jdbc:mysql://h/db?useSSL=true", "asks for TLS to MySQL/MariaDB"),
    ],
)
def test_bad_urls_are_named(url, message):
    with pytest.raises(ConfigError, match=message) as e:
        source(connection_url=url)
    assert "s3cret" not in str(e.value)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"mode": "bulk"}, r"must be one of .*bulk mode reloads whole tables"),
        ({"mode": None}, r"'mode' must be one of incrementing, timestamp"),
        ({"incrementing_column_name": None}, r"needs CONFIG key 'incrementing.column.name'"),
        ({"mode": "timestamp+incrementing"}, r"needs CONFIG key 'timestamp.column.name'"),
        ({"query": "SELECT * FROM t"}, r"'query' .* is not supported"),
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

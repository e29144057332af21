"""The JDBC source's bulk and query modes against the real PostgreSQL and MariaDB servers
on 127.0.0.1, and SQLite as a dialect on a real file, through the real pipeline: each
bulk snapshot tagged and loaded exactly once, ``poll.interval.ms`` between snapshots, a
custom query with an incrementing column, and the corpus configs that name SQLite."""

from __future__ import annotations

import json
import pathlib
import sqlite3

import pytest

from sparkpipes.engine import Engine
from sparkpipes.frontends.connect.model import parse_properties
from sparkpipes.frontends.singlestore.executor import SqlSession
from tests.integration.test_jdbc_source import GATE, Db

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect" / "jdbc-source"


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request):
    d = Db(request.param)
    yield d
    d.drop()


def _session(engine) -> SqlSession:
    s = SqlSession(engine)
    s.execute(GATE)
    return s


def _create(sess: SqlSession, cfg: dict, name: str = "jp", creds: dict | None = None) -> None:
    sess.execute(
        f"CREATE INFERRED PIPELINE {name} AS LOAD DATA KAFKACONNECT 'jdbc' "
        f"CONFIG '{json.dumps(cfg)}' CREDENTIALS '{json.dumps(creds or {})}' FORMAT AVRO"
    )


def _snapshots(sess: SqlSession, table: str = "jp") -> dict[int, list[int]]:
    """snapshot number → the ids of its rows."""
    rows = sess.execute(f"SELECT id, record FROM {table}")[0].rows
    out: dict[int, list[int]] = {}
    for ident, record in rows:
        out.setdefault(json.loads(ident)["snapshot"], []).append(json.loads(record)["id"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def _offset(sess: SqlSession, table: str = "jp") -> dict:
    value = sess.execute(
        "SELECT VALUE FROM information_schema.PIPELINES_SOURCE_OFFSETS "
        f"WHERE PIPELINE_NAME = '{table}'"
    )[0].rows[0][0]
    return json.loads(value)


def test_bulk_snapshots_are_tagged_and_each_loaded_once(db, tmp_path):
    t = db.table("num_test")
    db.insert(t, range(1, 6))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    _create(
        sess,
        json.loads(db.config(mode="bulk", **{"poll.interval.ms": 0, "batch.max.rows": 2})),
        creds={"connection.password": db.password},
    )
    sess.execute("START PIPELINE jp FOREGROUND LIMIT 1 BATCHES")
    assert _snapshots(sess) == {1: [1, 2, 3, 4, 5]}
    db.run(f"DELETE FROM {t} WHERE id = 2")
    db.insert(t, [6])
    sess.execute("START PIPELINE jp FOREGROUND LIMIT 1 BATCHES")
    assert _snapshots(sess) == {1: [1, 2, 3, 4, 5], 2: [1, 3, 4, 5, 6]}
    assert _offset(sess)["snapshot"] == 2
    topic, ident = sess.execute("SELECT topic, id FROM jp LIMIT 1")[0].rows[0]
    assert topic == "db-num_test"
    assert set(json.loads(ident)) == {"table", "snapshot", "timestamp", "row"}
    eng.close()

    eng = Engine(tmp_path / "wh")  # a restart goes on with snapshot 3, never repeats one
    sess = _session(eng)
    sess.execute("START PIPELINE jp FOREGROUND LIMIT 1 BATCHES")
    assert list(_snapshots(sess)) == [1, 2, 3]
    assert _snapshots(sess)[3] == [1, 3, 4, 5, 6]
    eng.close()


def test_bulk_waits_poll_interval_between_snapshots(db, engine):
    """The corpus config as written (its poll.interval.ms is an hour), its login
    pointed at the scratch database."""
    cfg = json.loads((CORPUS / "demo-scene-connect-jdbc-postgres-bulk.json").read_text())["config"]
    if db.kind == "mariadb":
        cfg = json.loads((CORPUS / "demo-scene-connect-jdbc-mysql-bulk.json").read_text())["config"]
    t = db.table("num_test")
    db.insert(t, range(1, 4))
    cfg.update(json.loads(db.config()) | {"mode": "bulk", "topic.prefix": cfg["topic.prefix"]})
    cfg.pop("incrementing.column.name")
    cfg["connection.password"] = db.password
    sess = _session(engine)
    _create(sess, cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    db.insert(t, [4])
    sess.execute("START PIPELINE jp FOREGROUND")  # within the hour: no new snapshot
    assert _snapshots(sess) == {1: [1, 2, 3]}
    assert set(_offset(sess)) == {"snapshot", "timestamp"}


def test_query_mode_appends_its_condition_to_the_users_select(db, engine):
    t = db.table("orders")
    db.insert(t, range(1, 21))
    cfg = json.loads(db.config())
    cfg.pop("schema.pattern", None)
    cfg.update(
        {
            "query": f"SELECT id, name, amount FROM {t} WHERE amount > 5",
            "topic.prefix": "big-orders",
            "batch.max.rows": 4,
            "connection.password": db.password,
        }
    )
    sess = _session(engine)
    _create(sess, cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    db.insert(t, range(21, 25))
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = sess.execute("SELECT topic, id, record FROM jp")[0].rows
    assert sorted(json.loads(r[2])["id"] for r in rows) == list(range(5, 25))
    assert {r[0] for r in rows} == {"big-orders"}
    assert json.loads(rows[0][1])["query"] == "query"
    assert _offset(sess) == {"incrementing": 24}


def _sqlite_db(path: pathlib.Path, ids) -> None:
    with sqlite3.connect(path) as c:
        c.execute(
            "CREATE TABLE IF NOT EXISTS locations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "sale REAL, created TIMESTAMP)"
        )
        c.executemany(
            "INSERT INTO locations VALUES (?, ?, ?, ?)",
            [(i, f"store {i}", i * 1.5, f"2026-01-01 12:00:{i % 60:02d}") for i in ids],
        )


@pytest.mark.parametrize(
    "item", ["examples-jdbcavroksql.json", "examples-jdbcgenericavro.json", "quickstart"]
)
def test_sqlite_corpus_configs_load_rows_exactly_once(item, tmp_path):
    path = tmp_path / "retail.db"
    _sqlite_db(path, range(1, 51))
    if item == "quickstart":
        cfg = parse_properties((CORPUS / "jdbc-quickstart-sqlite.properties").read_text())
        assert cfg["connection.url"] == "jdbc:sqlite:test.db"
    else:
        cfg = json.loads((CORPUS / item).read_text())["config"]
    cfg["connection.url"] = f"jdbc:sqlite:{path}"
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    _create(sess, cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    _sqlite_db(path, range(51, 81))
    sess.execute("START PIPELINE jp FOREGROUND")
    eng.close()
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    _sqlite_db(path, range(81, 91))
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = sess.execute("SELECT topic, id, record FROM jp")[0].rows
    assert sorted(json.loads(r[2])["id"] for r in rows) == list(range(1, 91))
    assert {r[0] for r in rows} == {cfg["topic.prefix"] + "locations"}
    assert json.loads(rows[0][1])["table"] == "main.locations"
    assert json.loads(rows[0][2])["created"].startswith("2026-01-01")
    eng.close()


def test_sqlite_bulk_and_timestamp_modes(tmp_path, engine):
    path = tmp_path / "shop.db"
    _sqlite_db(path, range(1, 4))
    sess = _session(engine)
    base = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": f"jdbc:sqlite:{path}",
        "topic.prefix": "s-",
    }
    _create(sess, base | {"mode": "bulk", "poll.interval.ms": 0}, name="sb")
    _create(
        sess,
        base
        | {
            "mode": "timestamp+incrementing",
            "timestamp.column.name": "created",
            "incrementing.column.name": "id",
            "validate.non.null": "false",
        },
        name="st",
    )
    sess.execute("START PIPELINE sb FOREGROUND LIMIT 1 BATCHES")
    sess.execute("START PIPELINE st FOREGROUND")
    _sqlite_db(path, [4])
    sess.execute("START PIPELINE sb FOREGROUND LIMIT 1 BATCHES")
    sess.execute("START PIPELINE st FOREGROUND")
    assert _snapshots(sess, "sb") == {1: [1, 2, 3], 2: [1, 2, 3, 4]}
    ids = sorted(json.loads(r[0])["id"] for r in sess.execute("SELECT record FROM st")[0].rows)
    assert ids == [1, 2, 3, 4]


def test_sqlite_timestamps_written_in_several_formats_are_read_once(tmp_path, engine):
    """SQLite keeps timestamps as the writer wrote them: with and without a fraction of a
    second, rows of one instant split over queries of two rows."""
    path = tmp_path / "t.db"
    stamps = ["2026-01-01 12:00:00", "2026-01-01 12:00:00.000000", "2026-01-01T12:00:00"]
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE ev (id INTEGER PRIMARY KEY, at TIMESTAMP NOT NULL)")
        c.executemany("INSERT INTO ev VALUES (?, ?)", [(i, stamps[i % 3]) for i in range(1, 8)])
        c.execute("INSERT INTO ev VALUES (8, '2026-01-01 12:00:01.5')")
    sess = _session(engine)
    cfg = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": f"jdbc:sqlite:{path}",
        "mode": "timestamp+incrementing",
        "timestamp.column.name": "at",
        "incrementing.column.name": "id",
        "batch.max.rows": 2,
    }
    _create(sess, cfg)
    sess.execute("START PIPELINE jp FOREGROUND")
    with sqlite3.connect(path) as c:
        c.execute("INSERT INTO ev VALUES (9, '2026-01-01 12:00:01.500')")
    sess.execute("START PIPELINE jp FOREGROUND")
    ids = sorted(json.loads(r[0])["id"] for r in sess.execute("SELECT record FROM jp")[0].rows)
    assert ids == list(range(1, 10))


def test_sqlite_views_and_an_initial_timestamp(tmp_path, engine):
    path = tmp_path / "v.db"
    _sqlite_db(path, range(1, 11))  # created 12:00:01 … 12:00:10
    with sqlite3.connect(path) as c:
        c.execute("CREATE VIEW cheap AS SELECT * FROM locations WHERE sale < 9")
    sess = _session(engine)
    base = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": f"jdbc:sqlite:{path}",
        "validate.non.null": "false",
    }
    _create(sess, base | {"mode": "bulk", "table.types": "VIEW"}, name="vb")
    _create(
        sess,
        base
        | {
            "mode": "timestamp",
            "timestamp.column.name": "created",
            "table.whitelist": "locations",
            "timestamp.initial": "1767268805000",  # 2026-01-01 12:00:05 UTC
        },
        name="vt",
    )
    sess.execute("START PIPELINE vb FOREGROUND")
    sess.execute("START PIPELINE vt FOREGROUND")
    assert _snapshots(sess, "vb") == {1: [1, 2, 3, 4, 5]}
    ids = sorted(json.loads(r[0])["id"] for r in sess.execute("SELECT record FROM vt")[0].rows)
    assert ids == [6, 7, 8, 9, 10]

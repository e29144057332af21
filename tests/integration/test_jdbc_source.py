"""The JDBC source connector (io.confluent.connect.jdbc.JdbcSourceConnector) against the
real PostgreSQL and MariaDB servers on 127.0.0.1: the three modes, rows inserted while
the pipeline runs, a restart that neither loses nor repeats a row, tables spread over
tasks, and the errors a user can act on."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time

import pytest

from sparkpipes.engine import Engine
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from tests.integration.databases import ScratchDb

GATE = 'SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"'


class Db(ScratchDb):
    """A scratch space with the JDBC source's test tables and pipelines."""

    def table(self, name: str, ts: bool = False) -> str:
        """A table ``(id, name, amount, updated)``; its qualified name."""
        q = self.name(name)
        stamp = "DATETIME(6)" if self.kind == "mariadb" else "TIMESTAMP"
        self.run(
            f"CREATE TABLE {q} (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR(40), "
            f"amount DECIMAL(10, 2), updated {stamp}{' NOT NULL' if ts else ' NULL'})"
        )
        return q

    def insert(self, table: str, ids, updated: dt.datetime | None = None) -> None:
        base = dt.datetime(2026, 1, 1, 12, 0, 0)
        self.run(
            f"INSERT INTO {table} (id, name, amount, updated) VALUES (:id, :name, :amount, :u)",
            [
                {
                    "id": i,
                    "name": f"n{i}",
                    "amount": f"{i}.25",
                    "u": updated or base + dt.timedelta(microseconds=i),
                }
                for i in ids
            ],
        )

    def config(self, **extra) -> str:
        cfg = {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": self.url,
            "connection.user": self.user,
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "topic.prefix": "db-",
            **({"schema.pattern": self.schema} if self.kind == "postgresql" else {}),
            **extra,
        }
        return json.dumps(cfg)

    def create(self, sess: SqlSession, name: str = "jp", password: str | None = None, **extra):
        creds = json.dumps({"connection.password": password or self.password})
        sess.execute(
            f"CREATE INFERRED PIPELINE {name} AS LOAD DATA KAFKACONNECT 'jdbc' "
            f"CONFIG '{self.config(**extra)}' CREDENTIALS '{creds}' FORMAT AVRO"
        )


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request):
    d = Db(request.param)
    yield d
    d.drop()


def _session(engine) -> SqlSession:
    s = SqlSession(engine)
    s.execute(GATE)
    return s


def _ids(sess: SqlSession, table: str = "jp") -> list[int]:
    rows = sess.execute(f"SELECT record::%id FROM {table}")[0].rows
    return sorted(int(r[0]) for r in rows)


def test_incrementing_rows_load_exactly_once_across_batches_and_a_restart(db, tmp_path):
    t = db.table("orders")
    db.insert(t, range(1, 301))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **{"batch.max.rows": 64})
    sess.execute("START PIPELINE jp FOREGROUND")
    assert _ids(sess) == list(range(1, 301))
    db.insert(t, range(301, 401))
    sess.execute("START PIPELINE jp FOREGROUND")  # at once: a connector is polled every batch
    assert _ids(sess) == list(range(1, 401))
    eng.close()

    eng = Engine(tmp_path / "wh")  # a restart resumes after the committed id
    sess = _session(eng)
    db.insert(t, range(401, 451))
    sess.execute("START PIPELINE jp FOREGROUND")
    assert _ids(sess) == list(range(1, 451))

    topic, ident, record = sess.execute("SELECT topic, id, record FROM jp WHERE record::%id = 7")[
        0
    ].rows[0]
    assert topic == "db-orders"
    assert json.loads(ident) == {"table": f"{db.schema}.orders", "incrementing": 7}
    rec = json.loads(record)
    assert rec["name"] == "n7" and rec["amount"] == 7.25
    assert rec["updated"].startswith("2026-01-01T12:00:00")
    (task, key, value), *_ = sess.execute(
        "SELECT TASK_ID, KEY, VALUE FROM information_schema.PIPELINES_SOURCE_OFFSETS "
        "WHERE PIPELINE_NAME = 'jp'"
    )[0].rows
    assert (task, json.loads(key), json.loads(value)) == (
        0,
        {"table": f"{db.schema}.orders"},
        {"incrementing": 450},
    )
    eng.close()


def test_rows_inserted_while_the_pipeline_runs_all_arrive_once(db, tmp_path):
    t = db.table("events")
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess)
    sess.execute("ALTER PIPELINE jp SET BATCH_INTERVAL 100")
    eng.start("jp")

    def writer():
        for start in range(1, 1001, 50):
            db.insert(t, range(start, start + 50))
            time.sleep(0.05)

    th = threading.Thread(target=writer)
    th.start()
    th.join()
    deadline = time.time() + 120
    while len(_ids(sess)) < 1000:
        assert time.time() < deadline, f"only {len(_ids(sess))} rows arrived"
        time.sleep(0.5)
    eng.stop("jp")
    assert _ids(sess) == list(range(1, 1001))
    assert len(eng.batches("jp")) > 1
    eng.close()


def test_timestamp_incrementing_mode_reads_updated_rows_again(db, tmp_path):
    t = db.table("accounts", ts=True)
    db.insert(t, range(1, 101))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(
        sess,
        mode="timestamp+incrementing",
        **{"timestamp.column.name": "updated", "batch.max.rows": 30},
    )
    sess.execute("START PIPELINE jp FOREGROUND")
    assert _ids(sess) == list(range(1, 101))
    db.run(
        f"UPDATE {t} SET name = 'changed', updated = :u WHERE id IN (5, 6)",
        [{"u": dt.datetime(2026, 2, 1)}],
    )
    sess.execute("START PIPELINE jp FOREGROUND")
    assert _ids(sess) == sorted([*range(1, 101), 5, 6])
    changed = sess.execute("SELECT record::$name FROM jp WHERE record::$name = 'changed'")
    assert len(changed[0].rows) == 2
    value = sess.execute(
        "SELECT VALUE FROM information_schema.PIPELINES_SOURCE_OFFSETS WHERE PIPELINE_NAME = 'jp'"
    )[0].rows[0][0]
    stamp = dt.datetime(2026, 2, 1, tzinfo=dt.UTC).timestamp()
    assert json.loads(value) == {
        "incrementing": 6,
        "timestamp": int(stamp * 1000),
        "timestamp_nanos": 0,
    }
    eng.close()


def test_timestamp_mode_never_splits_rows_of_one_timestamp(db, tmp_path):
    t = db.table("ticks", ts=True)
    same = dt.datetime(2026, 3, 1, 8, 30, 0, 123456)
    db.insert(t, range(1, 41), updated=same)  # 40 rows, one timestamp, 16 rows a query
    db.insert(t, range(41, 61))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, mode="timestamp", **{"timestamp.column.name": "updated", "batch.max.rows": 16})
    sess.execute("START PIPELINE jp FOREGROUND")
    db.insert(t, range(61, 71), updated=same + dt.timedelta(seconds=1))
    sess.execute("START PIPELINE jp FOREGROUND")
    assert _ids(sess) == list(range(1, 71))
    eng.close()


def test_tables_are_spread_over_tasks(db, tmp_path):
    a, b = db.table("a"), db.table("b")
    db.insert(a, range(1, 11))
    db.insert(b, range(100, 120))
    eng = Engine(tmp_path / "wh")
    sess = _session(eng)
    db.create(sess, **{"table.whitelist": "a, b", "tasks.max": 2})
    sess.execute("START PIPELINE jp FOREGROUND")
    rows = sess.execute(
        "SELECT TASK_ID, COUNT(*) FROM information_schema.PIPELINES_SOURCE_OFFSETS "
        "WHERE PIPELINE_NAME = 'jp' GROUP BY TASK_ID ORDER BY TASK_ID"
    )[0].rows
    assert [tuple(r) for r in rows] == [(0, 1), (1, 1)]
    topics = sess.execute("SELECT topic, COUNT(*) FROM jp GROUP BY topic ORDER BY topic")[0].rows
    assert [tuple(r) for r in topics] == [("db-a", 10), ("db-b", 20)]
    eng.close()


def test_refused_credentials_are_named_without_the_password(db, engine):
    """MariaDB checks the password; this machine's PostgreSQL trusts 127.0.0.1, so there
    the refused credentials are a user it does not have (refused under any method)."""
    db.table("orders")
    sess = _session(engine)
    if db.kind == "postgresql":
        db.user = "nobody_here"
    with pytest.raises(SparkpipesError) as e:
        db.create(sess, password="not-the-password-x9")
    text = str(e.value)
    assert db.user in text and "not-the-password-x9" not in text
    assert e.value.kind == "auth"
    assert "jp" not in [r[0] for r in sess.execute("SHOW PIPELINES")[0].rows]


def test_a_missing_table_or_column_is_named(db, engine):
    db.table("orders")
    sess = _session(engine)
    with pytest.raises(SparkpipesError, match=r"has no table .*nosuch"):
        db.create(sess, **{"table.whitelist": "nosuch"})
    db.create(sess, name="jc", **{"incrementing.column.name": "seq"})
    with pytest.raises(SparkpipesError, match=r"table .*orders.* has no column seq"):
        sess.execute("START PIPELINE jc FOREGROUND")


def test_a_nullable_offset_column_is_refused_unless_told(db, engine):
    t = db.table("orders")  # `updated` may be NULL
    db.insert(t, range(1, 4))
    sess = _session(engine)
    db.create(sess, mode="timestamp", **{"timestamp.column.name": "updated"})
    with pytest.raises(SparkpipesError, match=r"column updated .* can be NULL"):
        sess.execute("START PIPELINE jp FOREGROUND")
    db.create(
        sess,
        name="jq",
        mode="timestamp",
        **{"timestamp.column.name": "updated", "validate.non.null": "false"},
    )
    sess.execute("START PIPELINE jq FOREGROUND")
    assert _ids(sess, "jq") == [1, 2, 3]


def test_an_unreachable_server_is_named(engine):
    sess = _session(engine)
    cfg = json.dumps(
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": "jdbc:postgresql://127.0.0.1:1/nowhere",
            "connection.user": "u",
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "connection.attempts": "2",
            "connection.backoff.ms": "500",
        }
    )
    started = time.monotonic()
    with pytest.raises(
        SparkpipesError, match=r"cannot reach PostgreSQL database 'nowhere' at"
    ) as e:
        sess.execute(
            f"CREATE INFERRED PIPELINE jp AS LOAD DATA KAFKACONNECT 'j' CONFIG '{cfg}' FORMAT AVRO"
        )
    assert 0.5 <= time.monotonic() - started < 60  # tried twice, as Confluent's connector
    assert "(2 attempts: connection.attempts)" in str(e.value) and e.value.transient

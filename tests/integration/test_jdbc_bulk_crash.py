"""Crash test for the JDBC source's bulk mode (a real SQLite file): a child process taking
snapshots SIGKILLs itself at every step of the commit protocol in turn; after each kill,
and after a last clean run, every snapshot in the table is whole and there once, and the
snapshots are numbered 1, 2, … without a gap."""

from __future__ import annotations

import json
import signal
import sqlite3
import textwrap
from collections import Counter

import pytest
from deltalake import DeltaTable

from sparkpipes.engine.faults import POINTS
from tests.integration.children import finish, spawn

pytestmark = [pytest.mark.timeout(900)]

ROWS = 7
CHILD = textwrap.dedent(
    """
    import sys
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession
    warehouse, config = sys.argv[1:]
    eng = Engine(warehouse, spark_master="local[2]")
    sess = SqlSession(eng)
    if "jb" not in eng.tables():
        sess.execute('SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"')
        sess.execute(
            f"CREATE INFERRED PIPELINE jb AS LOAD DATA KAFKACONNECT 'jdbc' CONFIG '{config}' "
            "FORMAT AVRO"
        )
    for _ in range(2):
        eng.run_batch("jb")
    eng.close()
    """
)


def _snapshots(warehouse) -> Counter:
    path = warehouse / "tables" / "jb"
    if not (path / "_delta_log").exists():
        return Counter()
    ids = DeltaTable(str(path)).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
    return Counter((json.loads(i)["snapshot"], json.loads(i)["row"]) for i in ids)


def test_bulk_snapshots_survive_kills_at_every_step(tmp_path):
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        c.executemany("INSERT INTO items VALUES (?, ?)", [(i, f"n{i}") for i in range(ROWS)])
    config = json.dumps(
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": f"jdbc:sqlite:{db}",
            "mode": "bulk",
            "poll.interval.ms": 0,
        }
    )
    warehouse = tmp_path / "wh"

    def check(after: str) -> None:
        seen = _snapshots(warehouse)
        assert max(seen.values(), default=1) == 1, f"after a kill {after}: a row twice"
        numbers = Counter(n for n, _ in seen)
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), (after, numbers)
        assert set(numbers.values()) <= {ROWS}, f"after a kill {after}: a partial snapshot"

    for point in POINTS:
        code = finish(spawn(CHILD, warehouse, config, crash_at=f"{point}:1"))
        assert code == -signal.SIGKILL, f"the child did not crash at {point}"
        check(f"at {point}")
    finish(spawn(CHILD, warehouse, config))
    check("none")
    assert len({n for n, _ in _snapshots(warehouse)}) >= 2

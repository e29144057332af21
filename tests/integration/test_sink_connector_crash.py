"""Crash test of a sink connector into each database destination (PostgreSQL and MariaDB on
127.0.0.1): one child engine loading a 4-partition topic into both is SIGKILLed inside each
database's open transaction and 12 times at random moments of its batches, each database
server is restarted once under it, and records keep arriving throughout. After every kill
no record is in the table twice; at the end every record is there exactly once and the
metadata table's offset ranges are contiguous per partition and add up to the rows.

Each child is started ahead, while the one before it runs, and waits with its Spark session
warm (``children.spawn_standby``); it opens the warehouse and the databases only at its go,
after the one before it was killed."""

from __future__ import annotations

import itertools
import json
import random
import signal
import textwrap
import time
from collections import defaultdict

import pytest

from tests.integration.children import finish, go, spawn_standby
from tests.integration.databases import ScratchDb, restart_server

pytestmark = [pytest.mark.timeout(1500), pytest.mark.slow]

KILLS = 12
PER_ROUND = 150
SCHEMA = {
    "type": "struct",
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "body", "type": "string", "optional": True},
    ],
}
CHILD = textwrap.dedent(
    """
    import json, os, sys
    from sparkpipes import Engine
    warehouse, configs = sys.argv[1:]
    eng = Engine(warehouse, spark_master="local[2]")
    for config in json.loads(configs):
        if config["name"] not in eng.connectors.names():
            eng.connectors.create(config)
    eng.warm_up()  # so that the kills land in batches, not in Spark's start
    open(os.path.join(warehouse, "ready"), "w").close()
    names = [c["name"] for c in json.loads(configs)]
    while True:
        finishing = os.path.exists(os.path.join(warehouse, "done"))
        states = [eng.run_batches(n, 1)[0].state for n in names]
        if finishing and all(s == "NoData" for s in states):
            break
    eng.close()
    """
)


def _record(i: int) -> str:
    return json.dumps({"schema": SCHEMA, "payload": {"id": i, "body": "x" * (i % 50)}})


def _config(db: ScratchDb, broker, topic: str) -> dict:
    if db.kind == "postgresql":
        dest = {
            "connection.url": f"jdbc:postgresql://{db.hostport}/{db.database}"
            f"?currentSchema={db.schema}"
        }
    else:
        dest = {"connection.ddlEndpoint": db.hostport, "connection.database": db.database}
    return {
        "name": f"crash_{db.kind}",
        "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
        "topics": topic,
        "tasks.max": "4",
        "bootstrap.servers": broker.bootstrap,
        "connection.user": db.user,
        "connection.password": db.password,
        "tableKey.PRIMARY": "id",
        "max.retries": "12",
        "batch.interval.ms": "0",
        **dest,
    }


def test_sink_connectors_survive_kills_and_server_restarts(broker, topic, tmp_path):
    """One child engine runs a connector into each database, so every kill hits both."""
    dbs = [ScratchDb("postgresql"), ScratchDb("mariadb")]
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    configs = json.dumps([_config(db, broker, topic) for db in dbs])
    sent = 0

    def produce() -> None:
        nonlocal sent
        broker.produce(topic, [_record(i) for i in range(sent, sent + PER_ROUND)], partitions=4)
        sent += PER_ROUND

    def check(after: str) -> None:
        for db in dbs:
            try:
                twice = db.rows(f"SELECT id FROM {db.name(topic)} GROUP BY id HAVING COUNT(*) > 1")
            except Exception:  # the table is made by the first child; it may not be there yet
                continue
            assert not twice, f"{db.kind}, after {after}: ids twice, e.g. {twice[:5]}"

    def ready(proc, timeout_s: float = 180) -> None:
        marker = warehouse / "ready"
        deadline = time.time() + timeout_s
        while not marker.exists():
            assert proc.poll() is None or proc.returncode == 0, "the child died early"
            assert time.time() < deadline, "the child never got ready"
            time.sleep(0.1)
        marker.unlink()

    # every run's crash point, in order (None: killed by the test, or the last run)
    plan = [f"in_database_transaction:{hit}" for hit in (1, 2)] + [None] * (KILLS + 1)
    started = []  # every child so far; the last one waits in standby

    def launch() -> None:
        if len(started) < len(plan):
            crash_at = plan[len(started)]
            started.append(spawn_standby(CHILD, warehouse, configs, crash_at=crash_at))

    def start_next():
        """Let the child in standby go; the next run's child starts its Spark meanwhile."""
        if not started:
            launch()
        proc = started[-1]
        launch()
        return go(proc)

    try:
        produce()  # the first record's schema makes the tables
        for hit in (1, 2):  # a kill inside each database's open transaction
            proc = start_next()
            assert finish(proc) == -signal.SIGKILL, "the child did not crash in a transaction"
            check(f"a kill in an open transaction ({hit})")
            (warehouse / "ready").unlink(missing_ok=True)
            produce()
        rng = random.Random(11)
        restarts = {KILLS // 3: "postgresql", 2 * KILLS // 3: "mariadb"}
        for n in range(KILLS):
            produce()
            proc = start_next()
            ready(proc)
            if n in restarts:
                time.sleep(rng.uniform(0.3, 1.0))
                restart_server(restarts[n])  # the child retries through it
            finish(proc, kill_after=rng.uniform(0.2, 2.5))
            check(f"kill {n + 1}")
        produce()
        (warehouse / "done").touch()
        assert finish(start_next(), timeout=600) == 0
        for db in dbs:
            _exactly_once(db, topic, sent)
    finally:
        for proc in started:  # a child left running or in standby if a check failed
            if proc.poll() is None:
                finish(proc, kill_after=0)
        for db in dbs:
            db.drop()


def _exactly_once(db: ScratchDb, topic: str, sent: int) -> None:
    ids = db.rows(f"SELECT id, COUNT(*) FROM {db.name(topic)} GROUP BY id")
    assert sorted(i for i, _ in ids) == list(range(sent)), db.kind
    assert max(c for _, c in ids) == 1, db.kind
    meta = db.rows(
        "SELECT id, count, batch_id, partition_key, end_offset FROM "
        f"{db.name('kafka_connect_transaction_metadata')}"
    )
    assert sum(m[1] for m in meta) == sent, db.kind
    ranges = defaultdict(list)
    for ident, _, batch, part, end in meta:
        start, stop = ident.rsplit("-", 2)[1:]
        assert stop == end
        ranges[part].append((batch, int(start), int(stop)))
    assert sorted(ranges) == ["0", "1", "2", "3"], db.kind
    for part, rs in ranges.items():
        rs.sort()
        assert rs[0][1] == 0, f"{db.kind} partition {part} does not start at offset 0"
        for (_, _, stop), (_, start, _) in itertools.pairwise(rs):
            assert start == stop, f"{db.kind} partition {part}: a gap or overlap at {stop}"

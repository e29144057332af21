"""Crash test of a sink connector into each database destination (PostgreSQL and MariaDB on
127.0.0.1): a child engine loading a 4-partition topic is SIGKILLed once while its
database transaction is open and 20 times at random moments of its batches, the database
server is restarted once under it, and records keep arriving throughout. After every kill
no record is in the table twice; at the end every record is there exactly once and the
metadata table's offset ranges are contiguous per partition and add up to the rows."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import textwrap
import time
from collections import defaultdict

import pytest

from tests.integration.children import finish, spawn
from tests.integration.databases import ScratchDb, restart_server

pytestmark = [pytest.mark.timeout(1500), pytest.mark.slow]

KILLS = 20
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
    warehouse, config = sys.argv[1:]
    eng = Engine(warehouse, spark_master="local[2]")
    if "crash" not in eng.connectors.names():
        eng.connectors.create(json.loads(config))
    eng.warm_up()  # so that the kills land in batches, not in Spark's start
    open(os.path.join(warehouse, "ready"), "w").close()
    while True:
        finishing = os.path.exists(os.path.join(warehouse, "done"))
        (r,) = eng.run_batches("crash", 1)
        if finishing and r.state == "NoData":
            break
    eng.close()
    """
)


def _record(i: int) -> str:
    return json.dumps({"schema": SCHEMA, "payload": {"id": i, "body": "x" * (i % 50)}})


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_a_sink_connector_survives_kills_and_a_server_restart(kind, broker, topic, tmp_path):
    db = ScratchDb(kind)
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    if kind == "postgresql":
        dest = {
            "connection.url": f"jdbc:postgresql://{db.hostport}/{db.database}"
            f"?currentSchema={db.schema}"
        }
    else:
        dest = {"connection.ddlEndpoint": db.hostport, "connection.database": db.database}
    config = {
        "name": "crash",
        "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
        "topics": topic,
        "tasks.max": "4",
        "bootstrap.servers": broker.bootstrap,
        "connection.user": db.user,
        "connection.password": db.password,
        "tableKey.PRIMARY": "id",
        "max.retries": "12",
        "batch.interval.ms": "0",
    }
    config.update(dest)
    sent = 0

    def produce() -> None:
        nonlocal sent
        broker.produce(topic, [_record(i) for i in range(sent, sent + PER_ROUND)], partitions=4)
        sent += PER_ROUND

    table = db.name(topic)

    def check(after: str) -> None:
        try:
            twice = db.rows(f"SELECT id FROM {table} GROUP BY id HAVING COUNT(*) > 1")
        except Exception:  # the table is made by the first child; it may not be there yet
            return
        assert not twice, f"after {after}: {len(twice)} ids twice, e.g. {twice[:5]}"

    def ready(proc, timeout_s: float = 180) -> None:
        marker = warehouse / "ready"
        deadline = time.time() + timeout_s
        while not marker.exists():
            assert proc.poll() is None or proc.returncode == 0, "the child died early"
            assert time.time() < deadline, "the child never got ready"
            time.sleep(0.1)
        marker.unlink()

    try:
        produce()  # the first record's schema makes the table
        proc = spawn(CHILD, warehouse, json.dumps(config), crash_at="in_database_transaction:1")
        assert finish(proc) == -signal.SIGKILL, "the child did not crash in its transaction"
        check("a kill in the open transaction")
        rng = random.Random(11)
        for n in range(KILLS):
            produce()
            proc = spawn(CHILD, warehouse, json.dumps(config))
            ready(proc)
            if n == KILLS // 2:
                time.sleep(rng.uniform(0.5, 1.5))
                restart_server(kind)  # the child retries through it
            finish(proc, kill_after=rng.uniform(0.2, 2.5))
            check(f"kill {n + 1}")
        produce()
        (warehouse / "done").touch()
        assert finish(spawn(CHILD, warehouse, json.dumps(config)), timeout=600) == 0
        ids = db.rows(f"SELECT id, COUNT(*) FROM {table} GROUP BY id")
        assert sorted(i for i, _ in ids) == list(range(sent))
        assert max(c for _, c in ids) == 1

        meta = db.rows(
            "SELECT id, count, batch_id, partition_key, end_offset FROM "
            f"{db.name('kafka_connect_transaction_metadata')}"
        )
        assert sum(m[1] for m in meta) == sent
        ranges = defaultdict(list)
        for ident, _, batch, part, end in meta:
            start, stop = ident.rsplit("-", 2)[1:]
            assert stop == end
            ranges[part].append((batch, int(start), int(stop)))
        assert sorted(ranges) == ["0", "1", "2", "3"]
        for part, rs in ranges.items():
            rs.sort()
            assert rs[0][1] == 0, f"partition {part} does not start at offset 0"
            for (_, _, stop), (_, start, _) in itertools.pairwise(rs):
                assert start == stop, f"partition {part}: a gap or overlap at offset {stop}"
    finally:
        os.environ.pop("SPARKPIPES_CRASH_AT", None)
        db.drop()

"""Crash test for a Kinesis pipeline (moto on 127.0.0.1, 4 shards): a child process loading
the inferred table SIGKILLs itself at every step of the commit protocol in turn, and is
then killed at random moments, while records keep arriving; after each kill no record is
in the table twice, and after a last clean run every record is there exactly once."""

from __future__ import annotations

import json
import random
import signal
import textwrap
import time
from collections import Counter

import pytest

from sparkpipes.engine.faults import POINTS
from tests.integration.children import finish, spawn

pytestmark = [pytest.mark.timeout(900)]

PER_ROUND = 500
CHILD = textwrap.dedent(
    """
    import json, sys
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession
    warehouse, config = sys.argv[1:]
    eng = Engine(warehouse, spark_master="local[2]")
    sess = SqlSession(eng)
    if "kp" not in eng.tables():
        sess.execute('SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"')
        sess.execute(
            "CREATE INFERRED PIPELINE kp AS LOAD DATA KAFKACONNECT 'kafka-connector' "
            f"CONFIG '{config}' CREDENTIALS '{{}}' MAX_OFFSETS_PER_BATCH_PARTITION 150 "
            "FORMAT AVRO"
        )
    while eng.run_batch("kp").state != "NoData":
        pass
    eng.close()
    """
)


def _ns(warehouse) -> Counter:
    import base64

    from deltalake import DeltaTable

    path = warehouse / "tables" / "kp"
    if not (path / "_delta_log").exists():
        return Counter()
    records = DeltaTable(str(path)).to_pyarrow_table(columns=["record"]).column("record")
    return Counter(
        json.loads(base64.b64decode(json.loads(r)["data"]))["n"] for r in records.to_pylist()
    )


def test_kinesis_records_survive_kills_at_every_step_and_at_random(tmp_path, s3_server):
    stream = "crash-stream"
    s3_server.create_stream(stream, 4)
    config = json.dumps(s3_server.kinesis_config(stream, **{"tasks.max": 4}))
    warehouse = tmp_path / "wh"
    sent = 0

    def put() -> None:
        nonlocal sent
        s3_server.put_records(
            stream,
            [(f"k{i}", json.dumps({"n": i}).encode()) for i in range(sent, sent + PER_ROUND)],
        )
        sent += PER_ROUND

    def check(after: str) -> None:
        twice = [n for n, c in _ns(warehouse).items() if c > 1]
        assert not twice, f"after a kill {after}: {len(twice)} records twice, e.g. {twice[:5]}"

    put()
    for point in POINTS:
        code = finish(spawn(CHILD, warehouse, config, crash_at=f"{point}:1"))
        assert code == -signal.SIGKILL, f"the child did not crash at {point}"
        check(f"at {point}")
        put()  # records arrive while the pipeline is down
    rng = random.Random(10)
    for _ in range(2):
        proc = spawn(CHILD, warehouse, config)
        time.sleep(1)
        put()  # and while it runs
        finish(proc, kill_after=rng.uniform(4, 12))
        check("at random")
    finish(spawn(CHILD, warehouse, config))
    seen = _ns(warehouse)
    assert set(seen) == set(range(sent)) and max(seen.values()) == 1

"""Cluster mode as a user runs it: ``sparkpipes cluster start`` (a Spark standalone master
and 2 workers of 1 core on 127.0.0.1, from the pyspark wheel), an engine with ``--master
spark://…``, its warehouse on S3 (moto, with delta-rs' conditional put) and its catalog on
PostgreSQL; a Kafka pipeline and an S3 object pipeline load into it.

The executors import the sparkpipes the engine shipped them (a zip), not one installed on
the workers. While a batch's Spark job runs, one worker is SIGKILLed (its process group:
the worker, its executor and Python workers): Spark runs the lost tasks again on the other
worker and the batch commits once. Every record is in its table exactly once and no batch
id was committed twice."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid

import pytest

from sparkpipes.engine.spark import cluster
from tests.e2e.serving import free_port
from tests.integration.databases import pg_database

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

KAFKA_RECORDS = 800_000  # two batches of 400k: tasks long enough to be seen
FILES, PER_FILE = 6, 500

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession

    warehouse, url, master, setup, victim = sys.argv[1:]
    eng = Engine(warehouse, catalog_url=url, spark_master=master)
    SqlSession(eng).execute(setup)
    sc = eng.spark.sparkContext
    where = sc.parallelize(range(16), 16).map(
        lambda _: __import__("sparkpipes").__file__).distinct().collect()
    eng.warm_up()
    killed = {}

    def kill_mid_job():  # as soon as a batch's tasks are seen running
        tracker = sc.statusTracker()
        while not killed:
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            running = [s for s in stages if s is not None and s.numActiveTasks > 0]
            if running:  # a Kafka batch's tasks last a few tenths of a second
                os.killpg(int(victim), signal.SIGKILL)
                killed["at"] = time.time()
                killed["active_tasks"] = sum(s.numActiveTasks for s in running)
            time.sleep(0.005)

    threading.Thread(target=kill_mid_job, daemon=True).start()
    batches = {}
    for name in ("k", "f"):
        results = eng.run_batches(name, 1000, until_idle=True)
        batches[name] = [r.state for r in results]
    print(json.dumps({"where": where, "killed": killed, "batches": batches}))
    eng.close()
    """
)


def test_pipelines_on_a_standalone_cluster_into_s3_survive_a_lost_worker(
    broker, topic, s3_server, tmp_path, monkeypatch
):
    s3_environment(monkeypatch, s3_server)  # the cluster's workers inherit it
    monkeypatch.setenv("SPARKPIPES_SECRET_KEY", "cluster test passphrase")
    bucket, inbox = f"wh{uuid.uuid4().hex[:8]}", f"in{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    s3_server.create_bucket(inbox)
    broker.produce(topic, [json.dumps({"id": i}) for i in range(KAFKA_RECORDS)], partitions=4)
    for f in range(FILES):
        ids = range(f * PER_FILE, (f + 1) * PER_FILE)
        s3_server.put(
            inbox, f"in/{f}.json", "".join(json.dumps({"id": i}) + "\n" for i in ids).encode()
        )
    s3 = json.dumps({"endpoint_url": s3_server.endpoint_url, "region": "us-east-1"})
    creds = json.dumps({"aws_access_key_id": "testing", "aws_secret_access_key": "testing"})
    setup = (
        "CREATE TABLE tk (id BIGINT); CREATE TABLE tf (id BIGINT);"
        f"CREATE PIPELINE k AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "MAX_OFFSETS_PER_BATCH_PARTITION 100000 INTO TABLE tk FORMAT JSON;"
        f"CREATE PIPELINE f AS LOAD DATA S3 '{inbox}/in/' CONFIG '{s3}' CREDENTIALS '{creds}' "
        "INTO TABLE tf FORMAT JSON"
    )
    state = tmp_path / "cluster"
    master = cluster.start(state, workers=2, cores=1, memory="1g", port=free_port())
    try:
        victim = cluster.status(state)["pids"]["worker-0"]
        with pg_database() as url:
            warehouse = f"s3://{bucket}/warehouse"
            out = subprocess.run(
                [sys.executable, "-c", CHILD, warehouse, url, master, setup, str(victim)],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert out.returncode == 0, out.stderr[-3000:]
            report = json.loads(out.stdout.strip().splitlines()[-1])
            from deltalake import DeltaTable

            tables = {t: DeltaTable(f"{warehouse}/tables/{t}") for t in ("tk", "tf")}
            history = {t: dt.history() for t, dt in tables.items()}
            ids = {
                t: sorted(dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist())
                for t, dt in tables.items()
            }
    finally:
        cluster.stop(state)
    print("cluster report:", json.dumps(report))
    assert report["where"] and all(".zip" in w for w in report["where"]), report["where"]
    assert report["killed"].get("active_tasks", 0) > 0, "no worker was killed mid-batch"
    assert ids["tk"] == list(range(KAFKA_RECORDS)), "a Kafka record missing or twice"
    assert ids["tf"] == list(range(FILES * PER_FILE)), "an S3 record missing or twice"
    for t, commits in history.items():
        batch_ids = [c["sparkpipes.batch"] for c in commits if "sparkpipes.batch" in c]
        assert batch_ids and len(batch_ids) == len(set(batch_ids)), (t, batch_ids)
    assert report["batches"]["k"][-1] == "NoData" and "Succeeded" in report["batches"]["f"]


def s3_environment(monkeypatch, s3_server) -> None:
    """The standard AWS environment that delta-rs and pyarrow read, for the moto server."""
    for key, value in {
        "AWS_ENDPOINT_URL": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(key, value)


def test_a_stale_writer_never_overwrites_a_delta_commit_on_s3(s3_server, monkeypatch):
    """What two engines committing to one table on S3 rely on: delta-rs creates each log
    entry with a conditional PUT (If-None-Match), so a writer whose snapshot is stale finds
    the version taken and commits the next one instead of overwriting it. (Deterministic:
    two handles loaded at the same version commit one after the other. A threaded race
    would prove no more here, since moto's server checks If-None-Match and writes in two
    steps without a lock; real S3 does both at once.)"""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    s3_environment(monkeypatch, s3_server)
    bucket = f"race{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    uri = f"s3://{bucket}/t"
    DeltaTable.create(uri, schema=pa.schema([("id", pa.int64())]))
    first, stale = DeltaTable(uri), DeltaTable(uri)  # both at version 0
    write_deltalake(first, pa.table({"id": [1]}), mode="append")
    write_deltalake(stale, pa.table({"id": [2]}), mode="append")
    table = DeltaTable(uri)
    assert table.version() == 2, "a commit overwrote another"
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2]

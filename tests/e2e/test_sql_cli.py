"""`sparkpipes sql / run / status` as a user types them, against the real broker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

SECRET = "pa55-Very-Secret"


def cli(*args, wh, stdin=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=timeout,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )


@pytest.fixture
def wh(tmp_path):
    return tmp_path / "wh"


def test_seed_style_session_from_a_script(wh, tmp_path, broker, topic):
    broker.produce(
        topic,
        [
            json.dumps({"customer_id": f"c{i}", "status": "active" if i % 3 else "closed"})
            for i in range(30)
        ],
        partitions=4,
    )
    script = tmp_path / "seed.sql"
    script.write_text(
        f"""
        -- adapted from the seeds: a JSON record table, its pipeline, the helpers on it
        SET GLOBAL experimental_features_config = "kafka_connect_enabled=true";
        SHOW VARIABLES LIKE 'experimental_features_config';
        CREATE TABLE kinesis_like (topic TEXT NOT NULL, record JSON NOT NULL, SHARD KEY ());
        CREATE PIPELINE kpipe AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}'
          CREDENTIALS '{{"sasl.username": "svc", "sasl.password": "{SECRET}"}}'
          BATCH_INTERVAL 2500
          INTO TABLE kinesis_like FORMAT JSON (record <- %) SET topic = '{topic}';
        ALTER TABLE kinesis_like ADD COLUMN status AS (JSON_EXTRACT_STRING(record, 'status')) PERSISTED STRING;
        CREATE INDEX idx_status ON kinesis_like(status);
        START PIPELINE kpipe FOREGROUND;
        SELECT topic, JSON_EXTRACT_STRING(record, 'customer_id') AS customer_id
          FROM kinesis_like WHERE JSON_EXTRACT_STRING(record, 'status') = 'active' ORDER BY customer_id LIMIT 2;
        SELECT count(*) AS active FROM kinesis_like WHERE status = 'active';
        SELECT PIPELINE_NAME, STATE, CONFIG_JSON FROM information_schema.PIPELINES WHERE PIPELINE_NAME = 'kpipe';
        SELECT TASK_ID, COUNT(*) as offset_count FROM information_schema.PIPELINES_SOURCE_OFFSETS
          WHERE PIPELINE_NAME = 'kpipe' GROUP BY TASK_ID ORDER BY TASK_ID;
        SHOW CREATE PIPELINE kpipe;
        """
    )
    p = cli("sql", "-f", str(script), wh=wh)
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout
    assert "| experimental_features_config | kafka_connect_enabled=true |" in out
    assert "Query OK, 30 rows loaded" in out
    assert f"| {topic} | c1          |" in out
    assert "| active |\n+--------+\n| 20     |" in out
    assert out.count("| 1            |") == 4  # one offset row per task
    assert SECRET not in out + p.stderr
    assert '"sasl.password": "<redacted>"' in out
    assert "Setting default log level" not in p.stderr  # Spark's shell banner stays quiet

    # status at a glance, and the same warehouse from a second invocation
    s = cli("status", wh=wh)
    assert s.returncode == 0, s.stderr[-2000:]
    assert "| kpipe    | Stopped | kinesis_like | 30" in s.stdout
    assert SECRET not in s.stdout + s.stderr


def test_errors_exit_non_zero_with_a_caret_and_no_traceback(wh):
    p = cli("sql", "-e", "SELECT 1;\nCREATE PIPELINE p AS\n  LOAD DATA KAFKA INTO TABLE t;", wh=wh)
    assert p.returncode == 1
    assert "| 1 |" in p.stdout  # statements before the error ran
    assert "line 3, column 19" in p.stderr and "^" in p.stderr
    assert "Traceback" not in p.stderr
    p = cli("sql", "-e", "START PIPELINE nope", wh=wh)
    assert p.returncode == 1 and "pipeline 'nope' does not exist" in p.stderr
    p = cli("sql", stdin="SHOW TABLES;\nDROP TABLE nope;\n", wh=wh)
    assert (
        p.returncode == 1 and "Empty set" in p.stdout and "table 'nope' does not exist" in p.stderr
    )
    p = cli("sql", "-e", "SELECT * FROM nosuch", wh=wh)
    assert p.returncode == 1 and "[SP702] [TABLE_OR_VIEW_NOT_FOUND]" in p.stderr
    assert "QueryContextLogger" not in p.stderr and "stacktrace" not in p.stderr  # no JSON dump
    assert "incubator modules" not in p.stderr  # the JVM's start-up warning is filtered out
    assert len(p.stderr) < 1000, p.stderr
    for cmd in ("sql", "run", "status", "quickstart"):
        h = cli(cmd, "--help", wh=wh)
        assert h.returncode == 0 and "--warehouse" in h.stdout


def test_run_loads_running_pipelines_and_stops_cleanly_on_sigterm(wh, broker, topic):
    broker.produce(topic, [json.dumps({"a": i}) for i in range(200)], partitions=4)
    setup = cli(
        "sql",
        "-e",
        f"CREATE TABLE t (a INT); CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "BATCH_INTERVAL 200 MAX_OFFSETS_PER_BATCH_PARTITION 10 INTO TABLE t FORMAT JSON; "
        "START PIPELINE p;",
        wh=wh,
    )
    assert setup.returncode == 0, setup.stderr[-2000:]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )
    lines: list[str] = []
    first_batch = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "batch 1:" in line:
                first_batch.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert first_batch.wait(120), "".join(lines)[-2000:]  # JVM start, then batches
        broker.produce(topic, [json.dumps({"a": 1000 + i}) for i in range(20)], partitions=4)
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(lines)
    assert proc.returncode == 0, err[-2000:]
    assert "SIGTERM: finishing the batch in flight" in err and "stopped" in err
    # progress, one line a batch (every partition's 10, in as many tasks as the cluster has
    # cores: 40 records under local[2])
    assert "pipeline p batch 1: Succeeded, 40 rows" in err
    q = cli("sql", "-e", "SELECT count(*), count(DISTINCT a) FROM t", wh=wh)
    n, distinct = (int(x) for x in q.stdout.splitlines()[3].strip("| ").split("|"))
    assert n == distinct  # never twice, whatever the moment of the signal
    assert n > 0
    rest = cli(
        "sql", "-e", "STOP PIPELINE p; START PIPELINE p FOREGROUND; SELECT count(*) FROM t", wh=wh
    )
    assert rest.returncode == 0, rest.stderr[-2000:]
    assert "| 220      |" in rest.stdout


def test_no_spark_warehouse_is_left_in_the_working_directory(wh, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), "sql", "-e", "SELECT 1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[1]"},
    )
    assert r.returncode == 0, r.stderr
    assert list(cwd.iterdir()) == []

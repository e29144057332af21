#!/usr/bin/env python
"""A pipeline's 10,000th batch costs what its 100th did: commits, restarts, queries.

    .venv/bin/python bench/bench_commits.py                    # 10,000 batches
    .venv/bin/python bench/bench_commits.py --batches 1000 --early 100   # shorter
    .venv/bin/python bench/bench_commits.py --no-maintenance   # the same without upkeep

One topic partition on the embedded broker holds ``batches x per-batch`` small JSON events;
a pipeline (``MAX_OFFSETS_PER_BATCH_PARTITION per-batch``, ``BATCH_INTERVAL 0``) loads them
one small batch (one data file, one commit) after another in a child process that runs the
engine's housekeeper beside its batches, as ``sparkpipes run`` does, with the default
maintenance variables (``--no-maintenance`` sets ``table_compaction_min_files`` 0 and
``table_vacuum_interval_ms`` 0 and keeps the catalog's whole history: the peer).

At batch ``early`` (100) and at batch ``batches`` (10,000) the loader is SIGKILLed and a
probe process measures, each time:

* commit latency: the driver's Delta commit of each batch (``DeltaSink.commit``), median
  over the ``window`` batches before the kill, and over ``probe-batches`` batches the
  probe runs after its restart (both marks' probes then run under like conditions);
* restart: a new process opens the engine and its Spark session, warms up as ``sparkpipes
  run`` does, and runs the first batch after the kill: seconds from the session being
  ready to that batch's commit (the JVM start, ~5 s and constant, is reported apart);
* ``SELECT count(*)`` over the table through SQL: median of 5 after one warm-up query.

Then the loader goes on. The figures at the end must stay within 1.5x of those at the
start. Exactly once is checked at the end (rows == distinct ids == batches x per-batch).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOPIC = "events"


def time_commits() -> dict[int, float]:
    """Seconds of each batch's Delta commit in the driver (``DeltaSink.commit``), by batch
    id, from now on in this process."""
    from sparkpipes.sinks.delta.sink import DeltaSink

    timings: dict[int, float] = {}
    commit = DeltaSink.commit

    def timed(self, staged, batch):
        t = time.perf_counter()
        try:
            return commit(self, staged, batch)
        finally:
            timings[batch.batch_id] = time.perf_counter() - t

    DeltaSink.commit = timed
    return timings


def child_load(a: argparse.Namespace) -> None:
    """Load batches until killed, one JSON line per batch to ``a.log``."""
    import threading

    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession

    timings = time_commits()
    eng = Engine(a.warehouse)
    sql = SqlSession(eng)
    if "ev" not in eng.tables():
        if a.no_maintenance:
            for var in ("table_compaction_min_files", "table_vacuum_interval_ms"):
                eng.set_variable(var, 0)
            eng.set_variable("pipelines_batches_metadata_to_keep", 10**9)
        sql.execute("CREATE TABLE ev (id BIGINT)")
        sql.execute(
            f"CREATE PIPELINE p AS LOAD DATA KAFKA '{a.bootstrap}/{TOPIC}' BATCH_INTERVAL 0 "
            f"MAX_OFFSETS_PER_BATCH_PARTITION {a.per_batch} INTO TABLE ev FORMAT JSON (id <- id)"
        )
    eng.warm_up()
    halt = threading.Event()
    threading.Thread(target=eng.housekeeper.run, args=(halt,), daemon=True).start()
    with open(a.log, "a") as log:
        while True:
            for r in eng.run_batches("p", 50):
                if r.rows:
                    log.write(
                        json.dumps(
                            {"batch": r.batch_id, "s": r.seconds, "commit": timings.get(r.batch_id)}
                        )
                        + "\n"
                    )
            log.flush()


def child_probe(a: argparse.Namespace) -> None:
    """Restart after a kill: session, warm-up, the first batch; then count(*) queries."""
    started = time.perf_counter()
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession

    timings = time_commits()
    eng = Engine(a.warehouse)
    eng.spark  # noqa: B018
    eng.warm_up()
    ready = time.perf_counter()
    first = eng.run_batches("p", 1)[0]
    resumed = time.perf_counter()
    eng.run_batches("p", a.probe_batches)
    sql = SqlSession(eng)
    sql.execute("SELECT count(*) FROM ev")
    counts = []
    for _ in range(5):
        t = time.perf_counter()
        n = sql.execute("SELECT count(*) FROM ev")[-1].rows[0][0]
        counts.append(time.perf_counter() - t)
    n, distinct, top = sql.execute("SELECT count(*), count(DISTINCT id), max(id) FROM ev")[-1].rows[
        0
    ]
    status = dict(zip(*(lambda r: (r.columns, r.rows[0]))(sql.execute("SHOW TABLE STATUS")[-1])))
    out = {
        "probe_commit_ms": 1000 * statistics.median(list(timings.values())[1:]),
        "session_s": ready - started,
        "restart_s": resumed - ready,
        "first_batch_rows": first.rows,
        "count_s": statistics.median(counts),
        "rows": n,
        "exactly_once": n == distinct == top + 1,
        "files": status["Files"],
        "version": status["Version"],
        "checkpoint": status["Checkpoint"],
        "log_files": len(
            os.listdir(os.path.join(eng.catalog.tables.get("ev").location, "_delta_log"))
        ),
        "catalog_batches": len(eng.catalog.batches.list(eng.catalog.pipelines.get("p").id)),
    }
    print("PROBE " + json.dumps(out), flush=True)
    eng.close()


def loaded(log: str) -> list[dict]:
    try:
        with open(log) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def run_to(a: argparse.Namespace, until: int, log: str, env: dict) -> list[dict]:
    """Run the loader until ``until`` batches are in the log, then SIGKILL it."""
    cmd = [sys.executable, __file__, "--child", "load", "--log", log, *a.child_args]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        time.sleep(0.5)
        rows = loaded(log)
        if rows and rows[-1]["batch"] >= until:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            return rows
        if p.poll() is not None:
            raise SystemExit(f"the loader exited with {p.returncode} at batch {len(rows)}")


def probe(a: argparse.Namespace, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--child", "probe", *a.child_args]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(next(x for x in out.splitlines() if x.startswith("PROBE "))[6:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=10_000)
    ap.add_argument("--early", type=int, default=100)
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--per-batch", type=int, default=5)
    ap.add_argument("--probe-batches", type=int, default=30)
    ap.add_argument("--no-maintenance", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--warehouse")
    ap.add_argument("--bootstrap")
    ap.add_argument("--log")
    a = ap.parse_args()
    if a.child:
        {"load": child_load, "probe": child_probe}[a.child](a)
        return

    from sparkpipes.testing import EmbeddedBroker

    work = tempfile.mkdtemp(prefix="bench-commits-")
    env = {
        **os.environ,
        "SPARKPIPES_SPARK_MASTER": os.environ.get("SPARKPIPES_SPARK_MASTER", "local[2]"),
    }
    started = time.time()
    with EmbeddedBroker() as broker:
        broker.create_topic(TOPIC, 1)
        total = (a.batches + 4 * a.probe_batches) * a.per_batch  # probes load too
        for lo in range(0, total, 100_000):
            hi = min(total, lo + 100_000)
            broker.produce(TOPIC, [json.dumps({"id": i}) for i in range(lo, hi)], partitions=1)
        a.child_args = [
            "--warehouse", os.path.join(work, "wh"), "--bootstrap", broker.bootstrap,
            "--per-batch", str(a.per_batch), "--probe-batches", str(a.probe_batches),
        ] + (["--no-maintenance"] if a.no_maintenance else [])  # fmt: skip
        log = os.path.join(work, "batches.jsonl")
        marks = {}
        for until in (a.early, a.batches):
            rows = run_to(a, until, log, env)
            window = [r["commit"] for r in rows if until - a.window < r["batch"] <= until]
            batch_s = [r["s"] for r in rows if until - a.window < r["batch"] <= until]
            marks[until] = {
                "commit_ms": 1000 * statistics.median(x for x in window if x is not None),
                "batch_ms": 1000 * statistics.median(batch_s),
                **probe(a, env),
            }
            print(f"batch {until}: {json.dumps(marks[until])}", flush=True)
        rows = loaded(log)
    e, l_ = marks[a.early], marks[a.batches]
    print()
    print(f"{'':<26}{'batch ' + str(a.early):>14}{'batch ' + str(a.batches):>14}{'ratio':>8}")
    for key, label in (
        ("commit_ms", "commit, loader (ms)"),
        ("probe_commit_ms", "commit, probe (ms)"),
        ("batch_ms", "batch (median ms)"),
        ("restart_s", "restart to 1st commit s"),
        ("count_s", "count(*) s"),
        ("session_s", "JVM + session + warm s"),
        ("files", "data files"),
        ("log_files", "_delta_log entries"),
        ("catalog_batches", "catalog batch rows"),
    ):
        ratio = l_[key] / e[key] if e[key] else float("nan")
        print(f"{label:<26}{e[key]:>14.3f}{l_[key]:>14.3f}{ratio:>7.2f}x")
    print(f"checkpoint at batch {a.batches}: version {l_['checkpoint']} of {l_['version']}")
    once = e["exactly_once"] and l_["exactly_once"]
    print(f"rows {l_['rows']}: every id once, none missing: {once}")
    print(f"wall {time.time() - started:.0f}s, {len(rows)} batches logged")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    name = "commits-nomaint.json" if a.no_maintenance else "commits.json"
    with open(os.path.join(HERE, "results", name), "w") as f:
        json.dump({"args": vars(a) | {"child_args": None}, "marks": marks}, f, indent=1)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    if not once:
        raise SystemExit("exactly once violated")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Many pipelines on one engine (issue 36): what K idle pipelines cost, and how fast a burst
spread over them is committed.

    .venv/bin/python bench/bench_many_pipelines.py                       # K = 1, 50, 200, 500
    .venv/bin/python bench/bench_many_pipelines.py --counts 200 --idle-seconds 10

For each K, on the embedded Tansu broker, as a new user would do it:

1. K topics of 2 partitions; in a fresh warehouse, by SQL with defaults but
   ``BATCH_INTERVAL 1000``: ``CREATE TABLE t<i>``, ``CREATE PIPELINE p<i> AS LOAD DATA KAFKA
   '…/topic<i>' BATCH_INTERVAL 1000 INTO TABLE t<i> FORMAT JSON``, ``START PIPELINE p<i>``.
2. ``sparkpipes run --master local[2]`` in a child process; ready once every pipeline has a
   batch on record (its first, NoData) and ``--settle-seconds`` more have passed.
3. **Idle**: the engine tree's CPU over ``--idle-seconds`` (user+sys, children included), split
   by process kind (driver, JVM, Python workers) and, with ``--profile``, a py-spy sample of
   the driver's threads.
4. **Burst**: ``--rows`` JSON records (20,000 for K = 1, as issue 36's table) spread evenly over
   the K topics, produced at once; the time from the first produce to every row committed (the
   catalog's committed batches, polled every 0.2 s), and the tree's CPU meanwhile.
5. Exactly once: every table holds its rows, each id once (read back with delta-rs).

Prints a table and writes ``bench/results/many_pipelines.json``. Targets (issue 36): 200 idle
pipelines ≤ 0.1 core; 100k rows over 200 pipelines committed within 15 s; 500 run without
errors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kafka_delta import machine, tree, tree_cpu, tree_cpu_by_kind

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PARTITIONS = 2
TARGETS = {"idle_cores_200": 0.1, "burst_s_200": 15.0}


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _topics(admin, names: list[str]) -> None:
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names])
    for f in futures.values():
        f.result(60)


def _setup(wh: str, bootstrap: str, prefix: str, k: int, interval_ms: int) -> None:
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession

    eng = Engine(wh)
    try:
        session = SqlSession(eng)
        for i in range(k):
            session.execute(
                f"CREATE TABLE t{i} (id BIGINT, ts BIGINT, v TEXT);\n"
                f"CREATE PIPELINE p{i} AS LOAD DATA KAFKA '{bootstrap}/{prefix}{i}' "
                f"BATCH_INTERVAL {interval_ms} INTO TABLE t{i} FORMAT JSON;\n"
                f"START PIPELINE p{i}"
            )
    finally:
        eng.close()


def _committed(db: str) -> tuple[int, int, int]:
    """(rows committed, pipelines with a batch on record, failed batches) from the catalog."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        rows = con.execute(
            "SELECT COALESCE(SUM(rows), 0) FROM sp_batches WHERE state = 'Succeeded'"
        ).fetchone()[0]
        seen = con.execute("SELECT COUNT(DISTINCT pipeline_name) FROM sp_batches").fetchone()[0]
        failed = con.execute("SELECT COUNT(*) FROM sp_batches WHERE state = 'Failed'").fetchone()[0]
        return int(rows), int(seen), int(failed)
    except sqlite3.OperationalError:
        return 0, 0, 0
    finally:
        con.close()


def _batches_since(db: str, since: str) -> dict:
    """The batches that loaded rows since ``since`` (UTC, the catalog's format): how many,
    rows per batch, and their durations (p50/max ms), to tell a slow burst's cause."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        got = con.execute(
            "SELECT rows, duration_ms FROM sp_batches WHERE state = 'Succeeded' AND rows > 0 "
            "AND started_at >= ? ORDER BY duration_ms",
            (since,),
        ).fetchall()
    finally:
        con.close()
    if not got:
        return {"batches": 0}
    ms = [d or 0 for _, d in got]
    return {
        "batches": len(got),
        "rows_per_batch": round(sum(r for r, _ in got) / len(got)),
        "p50_ms": ms[len(ms) // 2],
        "max_ms": ms[-1],
    }


def _errors(db: str) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return [
            f"{n}: {e}"
            for n, e in con.execute(
                "SELECT name, last_error FROM sp_pipelines WHERE last_error IS NOT NULL "
                "OR state = 'Error'"
            )
        ]
    finally:
        con.close()


def _produce(bootstrap: str, prefix: str, k: int, rows: int) -> None:
    from confluent_kafka import Producer

    prod = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    now = int(time.time() * 1000)
    for n in range(rows):
        i = n % k
        value = json.dumps({"id": n, "ts": now, "v": f"row-{n}"}).encode()
        while True:
            try:
                prod.produce(f"{prefix}{i}", value, partition=(n // k) % PARTITIONS)
                break
            except BufferError:
                prod.poll(0.05)
    prod.flush(60)


def _verify(wh: str, k: int, rows: int) -> str | None:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    total = 0
    for i in range(k):
        ids = DeltaTable(os.path.join(wh, "tables", f"t{i}")).to_pyarrow_table(columns=["id"])["id"]
        want = len(range(i, rows, k))
        if len(ids) != want or len(pc.unique(ids)) != want:
            return f"t{i}: {len(ids)} rows, {len(pc.unique(ids))} distinct ids, want {want}"
        total += len(ids)
    return None if total == rows else f"{total} rows in all, want {rows}"


def _profile(pid: int, seconds: float, out: str) -> dict[str, int]:
    """py-spy samples of the driver's threads during ``seconds``: samples per thread name."""
    spy = _spy(pid, out, seconds)
    if spy is None:
        return {}
    spy.wait()
    by_thread: dict[str, int] = {}
    try:
        with open(out) as f:
            for line in f:
                stack, _, count = line.rpartition(" ")
                thread = stack.split(";", 1)[0]
                name = thread.split('"')[1] if '"' in thread else thread
                key = name.split("-p", 1)[0] if name.startswith("sparkpipes-p") else name
                by_thread[key] = by_thread.get(key, 0) + int(count)
    except OSError:
        pass
    return dict(sorted(by_thread.items(), key=lambda x: -x[1]))


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of the driver's threads, by thread name (numbers folded)."""
    import re

    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = re.sub(r"\d+", "#", f.read().strip())
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def _thread_delta(a: dict[str, float], b: dict[str, float], seconds: float) -> dict[str, float]:
    d = {k: round((v - a.get(k, 0.0)) / seconds, 4) for k, v in b.items()}
    return dict(sorted(((k, v) for k, v in d.items() if v > 0.001), key=lambda x: -x[1]))


def _spy(pid: int, out: str, seconds: float = 600) -> subprocess.Popen | None:
    """py-spy recording the driver for ``seconds`` or until interrupted (raw stacks)."""
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(spy):
        return None
    argv = [spy, "record", "-p", str(pid), "-d", str(int(seconds)), "-r", "50", "-f", "raw"]
    return subprocess.Popen(
        [*argv, "-o", out, "--threads", "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def run_one(args: argparse.Namespace, bootstrap: str, admin, k: int) -> dict:
    work = tempfile.mkdtemp(prefix=f"sp-many-{k}-")
    wh = os.path.join(work, "warehouse")
    prefix = f"mp{k}_{int(time.time())}_"
    rows = args.rows if k > 1 else min(args.rows, 20_000)
    _log(f"K={k}: topics and pipelines")
    _topics(admin, [f"{prefix}{i}" for i in range(k)])
    t0 = time.perf_counter()
    _setup(wh, bootstrap, prefix, k, args.interval_ms)
    setup_s = time.perf_counter() - t0
    db = os.path.join(wh, "catalog.db")
    log = open(os.path.join(work, "run.log"), "wb")  # noqa: SIM115
    child = subprocess.Popen(
        [
            os.path.join(os.path.dirname(sys.executable), "sparkpipes"),
            "run",
            "--warehouse",
            wh,
            "--master",
            "local[2]",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=work,
    )
    proc = psutil.Process(child.pid)
    out: dict = {"pipelines": k, "rows": rows, "setup_s": round(setup_s, 1)}
    try:
        t0 = time.perf_counter()
        while _committed(db)[1] < k:
            if child.poll() is not None or time.perf_counter() - t0 > args.timeout:
                raise RuntimeError(f"K={k}: engine not ready; see {work}/run.log")
            time.sleep(0.5)
        out["ready_s"] = round(time.perf_counter() - t0, 1)
        time.sleep(args.settle_seconds)
        _log(f"K={k}: idle for {args.idle_seconds}s")
        t0 = _thread_cpu(child.pid)
        by0, c0, w0 = tree_cpu_by_kind(proc), tree_cpu(proc), time.perf_counter()
        threads0 = proc.num_threads()
        if args.profile:
            out["idle_samples_by_thread"] = _profile(
                child.pid, args.idle_seconds, os.path.join(work, f"idle-{k}.txt")
            )
            remaining = args.idle_seconds - (time.perf_counter() - w0)
            if remaining > 0:
                time.sleep(remaining)
        else:
            time.sleep(args.idle_seconds)
        idle_s = time.perf_counter() - w0
        out["idle_cores_by_thread"] = _thread_delta(t0, _thread_cpu(child.pid), idle_s)
        by1 = tree_cpu_by_kind(proc)
        out["idle_cores"] = round((tree_cpu(proc) - c0) / idle_s, 3)
        out["idle_cores_by_kind"] = {
            kd: round((by1.get(kd, 0.0) - by0.get(kd, 0.0)) / idle_s, 3) for kd in by1
        }
        out["idle_cores_per_pipeline"] = round(out["idle_cores"] / k, 5)
        out["driver_threads"] = threads0
        out["rss_gib"] = round(
            sum(p.memory_info().rss for p in tree(proc) if p.is_running()) / 2**30, 2
        )
        _log(f"K={k}: burst of {rows} rows")
        before, _, _ = _committed(db)
        spy = _spy(child.pid, os.path.join(work, f"burst-{k}.txt")) if args.profile else None
        c0, w0 = tree_cpu(proc), time.perf_counter()
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        _produce(bootstrap, prefix, k, rows)
        out["produce_s"] = round(time.perf_counter() - w0, 2)
        while True:
            done, _, failed = _committed(db)
            if done - before >= rows:
                break
            if child.poll() is not None or time.perf_counter() - w0 > args.timeout:
                raise RuntimeError(f"K={k}: {done - before}/{rows} rows after {args.timeout}s")
            time.sleep(0.2)
        out["burst_s"] = round(time.perf_counter() - w0, 2)
        out["burst_cpu_s"] = round(tree_cpu(proc) - c0, 1)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        out["burst_batches"] = _batches_since(db, since)
        out["failed_batches"] = failed
        out["errors"] = _errors(db)[:5]
    finally:
        child.terminate()
        try:
            child.wait(120)
        except subprocess.TimeoutExpired:
            child.kill()
        log.close()
    out["exactly_once"] = _verify(wh, k, rows) or "ok"
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        out["workdir"] = work
    _log(f"K={k}: {json.dumps(out)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="1,50,200,500")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--settle-seconds", type=float, default=5.0)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--profile", action="store_true", help="py-spy the driver while idle")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--output", default=os.path.join(HERE, "results", "many_pipelines.json"))
    args = ap.parse_args()
    from confluent_kafka.admin import AdminClient

    from sparkpipes.testing import EmbeddedBroker

    broker = EmbeddedBroker().start()
    results = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        for k in (int(x) for x in args.counts.split(",")):
            results.append(run_one(args, broker.bootstrap, admin, k))
    finally:
        broker.stop()
    print()
    print(
        "| pipelines | idle cores | per pipeline | burst rows | burst s | burst CPU-s | RSS GiB "
        "| exactly once |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['pipelines']} | {r['idle_cores']} | {r['idle_cores_per_pipeline']} | "
            f"{r['rows']} | {r['burst_s']} | {r['burst_cpu_s']} | {r['rss_gib']} | "
            f"{r['exactly_once']} |"
        )
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump({"machine": machine(), "targets": TARGETS, "runs": results}, f, indent=2)
    return 0 if all(r["exactly_once"] == "ok" and not r["errors"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Soak: an hour at a steady rate with the engine SIGKILLed every ten minutes.

    .venv/bin/python bench/bench_soak.py                       # 60 min, 5,000 events/s
    .venv/bin/python bench/bench_soak.py --minutes 6 --kill-every 120   # smoke run

A producer thread sends ``{"id": n, "ts": <ms>}`` to a 4-partition topic of the embedded
broker at ``--rate`` events/s (paced every 20 ms, sent in record batches of 1 s).
``sparkpipes run`` (the CLI, default options: ``BATCH_INTERVAL`` 2500, the housekeeper's
default maintenance) loads them into a Delta table; every ``--kill-every`` seconds its
whole process group (driver, Spark JVM, Python workers) is SIGKILLed and a new one is
started at once. Every 5 s the RSS of each process kind is sampled: the engine's driver,
JVM and Python workers, and the broker (and the driver's thread count: delta-rs's tokio
blocking pool lives there).

At the end the producer stops, the last engine drains, and the table is checked: lost =
sent - distinct ids, duplicated = rows - distinct ids (both must be 0). Memory is "flat"
when, within each engine life after ``--warmup`` seconds (and for the broker over the whole
run after the first life's warm-up), the least-squares slope of RSS stays small: the
figures are printed in MiB per 10 minutes, with the first and last sample of each life,
and per 10 minutes of the run the median, least and most of each kind: a leak lifts the
least (what memory falls back to) as well as the median. Each kind's anonymous memory
(RSS less file-backed pages) is printed apart: code pages of a library (delta-rs's is
130 MB) are mapped in the first time the code runs, which lifts RSS without a leak.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_kafka_delta import kind, tree  # noqa: E402

TOPIC = "events"
MIB = 1024**2
CLI = [sys.executable, "-m", "sparkpipes"]


def cli(warehouse: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "--warehouse", warehouse, *args], env=env, capture_output=True, text=True
    )


def start_engine(warehouse: str, env: dict, log: str) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115 - the child owns it
    p = subprocess.Popen(
        [*CLI, "--warehouse", warehouse, "run"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out.close()
    return p


def kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def slope_mib_per_10min(points: list[tuple[float, int]]) -> float:
    if len(points) < 3:
        return float("nan")
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    sxy = sum((t - mx) * (v - my) for t, v in points)
    return (sxy / sxx) * 600 / MIB if sxx else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--kill-every", type=float, default=600)
    ap.add_argument("--warmup", type=float, default=180)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    from confluent_kafka import Producer
    from deltalake import DeltaTable

    from sparkpipes.testing import EmbeddedBroker

    work = tempfile.mkdtemp(prefix="bench-soak-")
    warehouse = os.path.join(work, "wh")
    env = {**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"}
    samples: list[dict] = []
    with EmbeddedBroker() as broker:
        broker.create_topic(TOPIC, 4)
        setup = (
            "CREATE TABLE events (id BIGINT, ts BIGINT);"
            f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{TOPIC}' "
            "INTO TABLE events FORMAT JSON; START PIPELINE p"
        )
        out = cli(warehouse, "sql", "-e", setup, env=env)
        if out.returncode:
            raise SystemExit(out.stderr)
        engine_log = os.path.join(work, "engine.log")
        engine = start_engine(warehouse, env, engine_log)
        lives = [{"started": time.time(), "pid": engine.pid}]
        sent = 0
        stop = threading.Event()

        def produce() -> None:
            nonlocal sent
            # record batches of 1 s (1,250 records): Tansu's in-memory log answers
            # ListOffsets and Fetch by walking its batches (~1.4 us each), so an hour of
            # 5 ms batches made every request of the engine cost tens of ms and, at ~50
            # min, more CPU than the machine has
            p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1000})
            step, t0 = 0.02, time.time()
            while not stop.is_set():
                due = int((time.time() - t0) * a.rate)
                ts = int(time.time() * 1000)
                for i in range(sent, due):
                    value = json.dumps({"id": i, "ts": ts}).encode()
                    p.produce(TOPIC, value, partition=i % 4, timestamp=ts)
                sent = max(sent, due)
                p.poll(0)
                stop.wait(step)
            p.flush(60)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        broker_proc = psutil.Process(broker._proc.pid)
        started = time.time()
        end = started + a.minutes * 60
        next_kill = started + a.kill_every
        while time.time() < end:
            now = time.time()
            sample = {"t": now - started, "life": len(lives) - 1}
            for proc in tree(psutil.Process(engine.pid)):
                try:
                    k, mem = kind(proc), proc.memory_info()
                    if k == "driver":
                        sample["driver_threads"] = proc.num_threads()
                except psutil.Error:
                    continue
                sample[k] = sample.get(k, 0) + mem.rss
                sample[f"{k}-anon"] = sample.get(f"{k}-anon", 0) + mem.rss - mem.shared
            sample["broker"] = broker_proc.memory_info().rss
            samples.append(sample)
            if now >= next_kill and now + 60 < end:
                kill(engine)
                engine = start_engine(warehouse, env, engine_log)
                lives.append({"started": time.time(), "pid": engine.pid})
                next_kill = time.time() + a.kill_every
                print(
                    f"{now - started:6.0f}s killed; life {len(lives) - 1} started; "
                    f"{sent} sent; broker {broker_proc.cpu_times().user:.0f} CPU-s, "
                    f"{broker_proc.memory_info().rss / MIB:.0f} MiB",
                    flush=True,
                )
            time.sleep(5)
        stop.set()
        producer.join()
        location = os.path.join(warehouse, "tables", "events")
        deadline = time.time() + 600
        rows = distinct = 0
        while time.time() < deadline:
            ids = DeltaTable(location).to_pyarrow_table(columns=["id"]).column("id")
            rows, distinct = len(ids), len(set(ids.to_pylist()))
            if rows >= sent:
                break
            time.sleep(5)
        kill(engine)
        status = cli(warehouse, "sql", "-e", "SHOW TABLE STATUS", env=env).stdout

    print()
    print(f"sent {sent} events in {a.minutes:.0f} min ({sent / (a.minutes * 60):.0f}/s), "
          f"{len(lives) - 1} kills")  # fmt: skip
    print(f"rows {rows}, distinct {distinct}: lost {sent - distinct}, duplicated {rows - distinct}")
    print()
    print(f"{'life':<6}{'kind':<20}{'first MiB':>10}{'last MiB':>10}{'MiB/10min':>11}")
    kinds = ("driver", "jvm", "python-worker")
    anon = tuple(f"{k}-anon" for k in kinds)
    result = {"sent": sent, "rows": rows, "distinct": distinct, "lives": []}
    for life in range(len(lives)):
        pts = [s for s in samples if s["life"] == life]
        if not pts:
            continue
        t0 = pts[0]["t"]
        warm = [s for s in pts if s["t"] - t0 >= a.warmup]
        for k in (*kinds, *anon):
            series = [(s["t"], s.get(k, 0)) for s in warm]
            if not series:
                continue
            slope = slope_mib_per_10min(series)
            first, last = series[0][1] / MIB, series[-1][1] / MIB
            print(f"{life:<6}{k:<20}{first:>10.0f}{last:>10.0f}{slope:>11.1f}")
            result["lives"].append({"life": life, "kind": k, "first": first, "last": last,
                                    "slope_mib_10min": slope})  # fmt: skip
    print()
    print(
        "per 10 minutes of the run, MiB: median (min..max) of RSS, then of its anonymous part "
        "(RSS less mapped files: the libraries' code pages come in as they are first run); "
        "the driver's threads at the end"
    )
    for start in range(0, int(a.minutes), 10):
        window = [s for s in samples if start * 60 <= s["t"] < (start + 10) * 60]
        cells = []
        for k in (*kinds, *anon):
            v = sorted(s[k] / MIB for s in window if s.get(k))
            if v:
                cells.append(f"{k} {v[len(v) // 2]:.0f} ({v[0]:.0f}..{v[-1]:.0f})")
        threads = [s["driver_threads"] for s in window if "driver_threads" in s]
        if threads:
            cells.append(f"threads {threads[-1]}")
        print(f"  {start:>2}-{start + 10:<3} " + ", ".join(cells))
    b = [(s["t"], s["broker"]) for s in samples if s["t"] >= a.warmup]
    if b:
        print(f"{'all':<6}{'broker':<20}{b[0][1] / MIB:>10.0f}{b[-1][1] / MIB:>10.0f}"
              f"{slope_mib_per_10min(b):>11.1f}")  # fmt: skip
    print()
    print(status)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "soak.json"), "w") as f:
        json.dump({**result, "samples": samples, "args": vars(a)}, f)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    if sent != distinct or rows != distinct:
        raise SystemExit("exactly once violated")


if __name__ == "__main__":
    main()

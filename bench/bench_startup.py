"""Start-up and small statements: ``sparkpipes sql -e …`` as a user types it, wall time of
the whole command, cold and against a running ``sparkpipes serve``, next to a minimal
standalone PySpark script doing the same count.

One run: a scratch warehouse with table ``t`` of ``--rows`` rows (loaded once by
``INSERT … SELECT … FROM range(n)``). Then, each ``--runs`` times (median reported):

- ``sql -e "SHOW PIPELINES"`` and ``sql -e "SELECT count(*) FROM t"`` with no server: a
  cold CLI (new process; a JVM when the statement needs Spark);
- the same two while ``sparkpipes serve`` runs on the warehouse (the CLI finds it by its
  discovery file and sends the statements there); the server's first query (it starts its
  own Spark) is run once untimed and shown apart;
- the peer: ``python -c`` building a local SparkSession and counting the table's Parquet
  files (``spark.read.parquet(dir).count()``), cold each time.

    .venv/bin/python bench/bench_startup.py                 # 100,000 rows, 5 runs
    .venv/bin/python bench/bench_startup.py --runs 9 --no-bytecode

Python modules are compiled once into a scratch bytecode cache first (as an installed
package has them); ``--no-bytecode`` keeps this environment's PYTHONDONTWRITEBYTECODE,
so every process compiles sparkpipes' modules again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import requests

BIN = os.path.join(os.path.dirname(sys.executable), "sparkpipes")
SHOW = "SHOW PIPELINES"
COUNT = "SELECT count(*) FROM t"
PEER = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[*]").appName("peer").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print(spark.read.parquet(sys.argv[1]).count())
spark.stop()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmd: list[str], env: dict[str, str], expect: str) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    took = time.perf_counter() - t0
    if out.returncode != 0 or expect not in out.stdout:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return took


def sql(wh: str, statement: str) -> list[str]:
    return [BIN, "--warehouse", wh, "sql", "-e", statement]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="bench-startup-")
    runtime = os.path.join(scratch, "run")
    os.mkdir(runtime, 0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": runtime}
    env.pop("SPARKPIPES_NO_SERVER", None)
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(scratch, "pyc")
    wh = os.path.join(scratch, "wh")
    load = (
        "CREATE TABLE t (id BIGINT, name TEXT, amount DOUBLE); "
        f"INSERT INTO t SELECT id, concat('n', id), id * 0.5 FROM range({args.rows})"
    )
    timed(sql(wh, load), env, f"{args.rows} rows affected")
    subprocess.run([sys.executable, "-c", "import pyspark.sql"], env=env, check=True)
    timed(sql(wh, SHOW), env, "Empty set")  # the grammar cache and bytecode, once
    expect = f"| {args.rows}"
    results: dict[str, list[float]] = {}

    def measure(name: str, cmd: list[str], want: str) -> None:
        results[name] = [timed(cmd, env, want) for _ in range(args.runs)]
        print(f"  {name}: {' '.join(f'{t:.2f}' for t in results[name])}", flush=True)

    print(f"warehouse {wh}: {args.rows:,} rows; {args.runs} runs each", flush=True)
    measure("cold: sql -e SHOW PIPELINES", sql(wh, SHOW), "Empty set")
    measure("cold: sql -e SELECT count(*)", sql(wh, COUNT), expect)
    table_dir = os.path.join(wh, "tables", "t")
    measure(
        "peer: python -c PySpark count", [sys.executable, "-c", PEER, table_dir], str(args.rows)
    )

    port = free_port()
    server = subprocess.Popen(
        [BIN, "--warehouse", wh, "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.time() + 120
        servers = os.path.join(runtime, "sparkpipes", "servers")
        while not (os.path.isdir(servers) and os.listdir(servers)):  # its discovery file
            if time.time() > deadline or server.poll() is not None:
                sys.exit("sparkpipes serve did not start")
            time.sleep(0.1)
        first = timed(sql(wh, COUNT), env, expect)
        print(f"  server's first SELECT (its Spark starts): {first:.2f}", flush=True)
        measure("server: sql -e SHOW PIPELINES", sql(wh, SHOW), "Empty set")
        measure("server: sql -e SELECT count(*)", sql(wh, COUNT), expect)
        with open(os.path.join(servers, os.listdir(servers)[0])) as f:
            owner = {"Authorization": f"Bearer {json.load(f)['token']}"}  # the local token
        status = requests.get(
            f"http://127.0.0.1:{port}/api/status", headers=owner, timeout=10
        ).json()
        served = status["sql_statements"]
        if served < 2 * args.runs + 1:
            sys.exit(f"the server ran only {served} statements: the CLI did not use it")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in results.items()}
    print()
    print("| command | median wall | min | max |")
    print("|---|---:|---:|---:|")
    for k, v in results.items():
        print(f"| {k} | {med[k]:.2f} s | {min(v):.2f} s | {max(v):.2f} s |")
    print()
    ratios = [
        (
            "cold SHOW PIPELINES / server SHOW PIPELINES",
            "cold: sql -e SHOW PIPELINES",
            "server: sql -e SHOW PIPELINES",
        ),
        (
            "cold SELECT count(*) / server SELECT count(*)",
            "cold: sql -e SELECT count(*)",
            "server: sql -e SELECT count(*)",
        ),
        (
            "cold SELECT count(*) / peer PySpark",
            "cold: sql -e SELECT count(*)",
            "peer: python -c PySpark count",
        ),
        (
            "peer PySpark / server SELECT count(*)",
            "peer: python -c PySpark count",
            "server: sql -e SELECT count(*)",
        ),
    ]
    for label, a, b in ratios:
        print(f"{label}: {med[a] / med[b]:.2f}x")
    print(json.dumps({k: round(v, 3) for k, v in med.items()}))


if __name__ == "__main__":
    main()

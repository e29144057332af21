"""The HTTP API under load while a pipeline drains at full speed: wrk on ``GET /api/status``
(or another path) against ``sparkpipes serve``, and what it costs the pipeline.

One run: the embedded broker with N events in 4 partitions, ``sparkpipes serve`` on
127.0.0.1 with a Kafka → Delta pipeline (JSON, the quickstart's table) started through
the API. Once the first batch has landed, three phases: quiet (``--quiet-s``), wrk
(``--phase-s``, 30 s), quiet. Rows/s of a phase come from the batches that finished in it
(the API's batch history): whole batches only, so batches are kept small
(``MAX_OFFSETS_PER_BATCH_PARTITION``, default 25,000: 100,000 rows) and a phase holds
many. The loss is 1 - (rows/s under wrk / mean rows/s of the two quiet phases). wrk
reports requests/s and the latency distribution (p50, p90, p99).

    .venv/bin/python bench/bench_http_status.py                   # 30 s phases
    .venv/bin/python bench/bench_http_status.py --phase-s 10 --events 1500000

Needs Debian's ``wrk`` (scripts/bootstrap.sh --services installs it). The backlog must
outlast the three phases; the script says so when it did not (rows/s would then be low).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kafka_delta import make_events

from sparkpipes.cli.remote import local_token

TOPIC, PARTITIONS = "events", 4
#: the owner's client: every request carries the server's local token
HTTP = requests.Session()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rows(url: str) -> int:
    return int(HTTP.get(f"{url}/api/tables/events", timeout=30).json()["rows"] or 0)


def phase(seconds: float, load: list[str] | None) -> dict:
    """Wait ``seconds`` (or run ``load``); the window, and wrk's figures."""
    t0 = time.time()
    out = None
    if load:
        out = subprocess.run(load, capture_output=True, text=True, check=True).stdout
    else:
        time.sleep(seconds)
    result: dict = {"window": (t0, time.time())}
    if out is not None:
        result["wrk"] = parse_wrk(out)
    return result


def rate(batches: list[dict], window: tuple[float, float]) -> dict:
    """Rows/s of the batches that finished inside ``window``: the rows of all but the
    first over the time from the first's end to the last's (whole batches only)."""
    done = sorted(
        (dt.datetime.fromisoformat(b["finished_at"]).replace(tzinfo=dt.UTC).timestamp(), b["rows"])
        for b in batches
        if b["state"] == "Succeeded" and b.get("finished_at") and b["rows"]
    )
    inside = [(t, n) for t, n in done if window[0] <= t <= window[1]]
    if len(inside) < 3:
        return {"batches": len(inside), "rows_per_s": float("nan")}
    span = inside[-1][0] - inside[0][0]
    moved = sum(n for _, n in inside[1:])
    return {
        "batches": len(inside),
        "rows": moved,
        "seconds": round(span, 2),
        "rows_per_s": moved / span,
    }


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    assert m, text
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_wrk(out: str) -> dict:
    pct = dict(re.findall(r"^\s+(\d+)%\s+(\S+)$", out, re.M))
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    return {
        "requests": int(total.group(1)) if total else None,
        "requests_per_s": float(rps.group(1)) if rps else None,
        "p50_ms": _ms(pct["50"]),
        "p90_ms": _ms(pct["90"]),
        "p99_ms": _ms(pct["99"]),
        "non_2xx": int(errors.group(1)) if errors else 0,
        "socket_errors": socket_errors.group(1) if socket_errors else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=12_000_000)
    ap.add_argument("--phase-s", type=float, default=30.0, help="seconds under wrk (30)")
    ap.add_argument("--quiet-s", type=float, default=15.0, help="each quiet phase (15)")
    ap.add_argument("--path", default="/api/status")
    ap.add_argument("--threads", type=int, default=1, help="wrk threads (1: one core left)")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument(
        "--max-offsets",
        type=int,
        default=25_000,
        help="MAX_OFFSETS_PER_BATCH_PARTITION: batches small enough to count per phase",
    )
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is missing: apt-get install wrk (or bash scripts/bootstrap.sh --services)")

    from sparkpipes.testing import EmbeddedBroker

    workdir = tempfile.mkdtemp(prefix="sparkpipes-bench-http-")
    events = make_events(args.events)
    with EmbeddedBroker() as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        t = time.perf_counter()
        broker.produce(TOPIC, events, partitions=PARTITIONS)
        print(f"produced {len(events):,} events in {time.perf_counter() - t:.1f} s", flush=True)
        del events
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        wh = os.path.join(workdir, "wh")
        server = subprocess.Popen(
            [sys.executable, "-m", "sparkpipes", "--warehouse", wh, "serve", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
        )
        try:
            deadline = time.time() + 120
            while True:
                token = local_token(wh, None)
                if token:
                    HTTP.headers["Authorization"] = f"Bearer {token}"
                try:
                    if token and HTTP.get(f"{url}/api/status", timeout=2).ok:
                        break
                except requests.RequestException:
                    pass
                assert time.time() < deadline, "serve did not come up"
                time.sleep(0.5)
            sql = (
                "CREATE TABLE events (ts BIGINT, uuid VARCHAR(32), count INT);"
                f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{TOPIC}' "
                f"MAX_OFFSETS_PER_BATCH_PARTITION {args.max_offsets} "
                "INTO TABLE events FORMAT JSON; START PIPELINE p"
            )
            r = HTTP.post(f"{url}/api/query", json={"sql": sql}, timeout=300)
            assert r.ok, r.text
            while rows(url) == 0:
                time.sleep(0.5)
            # the token goes to wrk in a script of its own (0600), never on a command line
            script = os.path.join(workdir, "token.lua")
            fd = os.open(script, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f'wrk.headers["Authorization"] = "{HTTP.headers["Authorization"]}"\n')
            load = ["wrk", f"-t{args.threads}", f"-c{args.connections}", "-s", script]
            load += [f"-d{int(args.phase_s)}s", "--latency", url + args.path]
            phases = [phase(args.quiet_s, None), phase(args.phase_s, load)]
            phases.append(phase(args.quiet_s, None))
            total = rows(url)
            batches = HTTP.get(f"{url}/api/pipelines/p/batches?limit=10000", timeout=60).json()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(120)
    shutil.rmtree(workdir, ignore_errors=True)
    quiet1, under, quiet2 = (rate(batches, p["window"]) for p in phases)
    quiet = (quiet1["rows_per_s"] + quiet2["rows_per_s"]) / 2
    loss = 1 - under["rows_per_s"] / quiet
    w = phases[1]["wrk"]
    print(
        f"pipeline rows/s: quiet {quiet1['rows_per_s']:,.0f} / {quiet2['rows_per_s']:,.0f}, "
        f"under wrk {under['rows_per_s']:,.0f}: loss {loss:.1%} "
        f"(batches per phase: {quiet1['batches']}, {under['batches']}, {quiet2['batches']})"
    )
    print(
        f"wrk {args.path}: {w['requests_per_s']:,.0f} req/s, p50 {w['p50_ms']:.2f} ms, "
        f"p90 {w['p90_ms']:.2f} ms, p99 {w['p99_ms']:.2f} ms, non-2xx {w['non_2xx']}"
    )
    if total >= args.events:
        print("warning: the backlog ran out during the phases; give more --events")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    result = {
        "quiet": [quiet1, quiet2],
        "under_wrk": under,
        "wrk": w,
        "loss": loss,
        "events": args.events,
        "max_offsets_per_batch_partition": args.max_offsets,
    }
    with open(os.path.join(os.path.dirname(__file__), "results", "http_status.json"), "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()

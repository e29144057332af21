#!/usr/bin/env python
"""Freshness: Kafka → Delta end-to-end latency at a steady rate, sparkpipes vs a hand-written
loop, and what an idle sparkpipes pipeline costs.

    .venv/bin/python bench/bench_freshness.py                     # 5 pairs, 60 s at 10,000/s
    .venv/bin/python bench/bench_freshness.py --repeat 1 --seconds 15 --idle-seconds 10

Each run of either engine, in its own child processes on the embedded Tansu broker:

1. A fresh topic with 4 partitions. The engine child starts and settles: **sparkpipes**
   is an ``Engine`` with a pipeline made by SQL with every default (``CREATE PIPELINE p AS
   LOAD DATA KAFKA … INTO TABLE events FORMAT JSON``: BATCH_INTERVAL 2500 ms …),
   ``START PIPELINE``, then ``warm_up()`` and ``run_forever()`` as ``sparkpipes run`` does;
   it is ready once its first batch committed and it has idled ``--settle-seconds``.
   The **baseline** is one process: confluent-kafka (sparkpipes' partition-consumer
   defaults) ``consume(10_000, timeout=0.05)`` in a loop; whenever it holds records and
   its last commit started ``--commit-every-ms`` (1000) ago or more: ``pyarrow.json`` →
   ``write_deltalake(mode="append")`` with an app transaction and the next offsets in the
   commit metadata.
2. A reader child plays "a query of the table": every ``--poll-ms`` (50) it refreshes a
   delta-rs ``DeltaTable`` (``update_incremental``), reads the commit files of the versions
   it has not seen and, of the files they add (``dataChange``), only ``id`` and ``ts``.
   Latency of a row = wall time when its read returned - its ``ts`` (same machine, clock).
3. A producer child sends ``{"id": n, "ts": <ms>, "uuid": …, "n": …}`` at ``--rate``
   (10,000/s) for ``--seconds`` (60), paced in 10 ms slices on an absolute schedule, each
   record's Kafka timestamp (CreateTime) the same ms as its ``ts``, round-robin over the
   partitions, ``linger.ms`` 5.
4. Once the reader has every id, the idle window (``--idle-seconds``, 30) starts: no new
   data. Counted: Delta commits in it (versions before and after), the engine tree's
   CPU-s, and for sparkpipes the scheduler's turns (counted by a wrapper on
   ``Scheduler._turn``; a turn plans and, once the drained-partition hint has expired,
   runs a batch that finds nothing).

The bench wraps a few engine methods in the sparkpipes child (plan, the Spark job, the
lease fence, the Delta commit, the catalog record, each scheduler turn) to time each batch;
it changes nothing they do. CPU is the user+sys time of a process tree (reaped children
included). "Other CPU" is the machine's busy time minus the engine tree, the broker, the
reader, the producer and this process: above 10% of one core a window is DISTURBED.

Results: a table per run, the medians (undisturbed runs first) and paired ratios, and
``bench/results/freshness.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kafka_delta import (  # the sibling bench's measurement helpers
    DISTURBED_SHARE,
    emit,
    machine,
    tree,
    tree_cpu,
    tree_cpu_by_kind,
    tree_cpu_by_pid,
    window_cpu,
)

HERE = os.path.dirname(os.path.abspath(__file__))
PARTITIONS = 4
PIPELINE = "p"
TABLE = "events"
TABLE_SQL = "id BIGINT, ts BIGINT, uuid TEXT, n INT"
HIST_EDGES = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, float("inf"))
TARGETS = {"p50_s": 1.0, "p99_s": 3.0, "idle_cpu_s_per_batch": 0.05, "idle_commits": 0}


# ---------------------------------------------------------------------------------------
# parent ↔ child plumbing
# ---------------------------------------------------------------------------------------
class Child:
    """A child process of this script: commands on its stdin, ``@@kind json`` lines back
    on its stdout (``emit``), anything else kept for the failure report."""

    def __init__(self, role: str, argv: list[str], log_path: str, verbose: bool) -> None:
        self.role = role
        self.verbose = verbose
        self._log = open(log_path, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", role, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        self.ps = psutil.Process(self.proc.pid)
        self.lines: list[str] = []
        self._q: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("@@"):
                kind, _, payload = line[2:].partition(" ")
                self._q.put((kind, json.loads(payload)))
            else:
                self.lines.append(line.rstrip("\n"))
                if self.verbose:
                    print(f"  [{self.role}] {line}", end="")
        self._q.put(("eof", None))

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def wait(self, kind: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                got, payload = self._q.get(timeout=max(0.01, left))
            except queue.Empty:
                got = "timeout"
            if got == kind:
                return payload
            if got in ("eof", "timeout"):
                self.kill()
                tail = "\n".join(self.lines[-20:])
                raise SystemExit(
                    f"{self.role} child: no '{kind}' ({got}); log {self._log.name}\n{tail}"
                )

    def cpu(self) -> float:
        try:
            return tree_cpu(self.ps)
        except psutil.Error:
            return 0.0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self, timeout: float = 60.0) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._log.close()


def _commands(handlers: dict[str, Any]) -> None:
    """Serve the parent's commands (one per stdin line) on a daemon thread."""

    def serve() -> None:
        for line in sys.stdin:
            if line.strip():
                word, *rest = line.split()
                handlers[word](*rest)

    threading.Thread(target=serve, name="bench-commands", daemon=True).start()


def _kv(items: list[str]) -> dict[str, str]:
    return dict(kv.partition("=")[::2] for kv in items)


# ---------------------------------------------------------------------------------------
# children
# ---------------------------------------------------------------------------------------
MASK128 = (1 << 128) - 1


def child_producer(args: argparse.Namespace) -> None:
    """Send ``rate * seconds`` events, paced in slices on an absolute schedule."""
    from confluent_kafka import Producer

    failed = [0]

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed[0] += 1

    prod = Producer(
        {"bootstrap.servers": args.bootstrap, "linger.ms": 5, "log_level": 3},
    )
    total = int(args.rate * args.seconds)
    slice_s = args.slice_ms / 1000
    topic = args.topic
    sent = k = 0
    late_max = late_sum = 0.0
    emit("started", {"t": time.time(), "cpu": time.process_time()})
    t0 = time.perf_counter()
    while sent < total:
        due_at = t0 + k * slice_s
        now = time.perf_counter()
        if now < due_at:
            time.sleep(due_at - now)
        else:
            late_max = max(late_max, now - due_at)
            late_sum += now - due_at
        due = min(total, int(args.rate * (k + 1) * slice_s))
        ms = int(time.time() * 1000)
        while sent < due:
            value = b'{"id":%d,"ts":%d,"uuid":"%032x","n":%d}' % (
                sent,
                ms,
                (sent * 0x9E3779B97F4A7C15F39CC0605CEDC835) & MASK128,
                sent % 1000,
            )
            try:
                prod.produce(
                    topic, value, partition=sent % PARTITIONS, timestamp=ms, on_delivery=delivered
                )
            except BufferError:
                prod.poll(0.005)
                continue
            sent += 1
        prod.poll(0)
        k += 1
    wall = time.perf_counter() - t0
    left = prod.flush(30)
    emit(
        "done",
        {
            "t": time.time(),
            "cpu": time.process_time(),
            "sent": sent,
            "failed": failed[0] + left,
            "seconds": round(wall, 3),
            "rate": round(sent / wall, 1),
            "slices": k,
            "slice_late_max_ms": round(late_max * 1000, 1),
            "slice_late_mean_ms": round(late_sum / max(k, 1) * 1000, 2),
        },
    )


def _commit_log(path: str, version: int) -> tuple[list[str], int | None]:
    """Data files one commit adds (``dataChange``), and its commit timestamp (ms)."""
    from urllib.parse import unquote

    adds, at = [], None
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        for line in f:
            action = json.loads(line)
            if "add" in action and action["add"].get("dataChange", True):
                adds.append(os.path.join(path, unquote(action["add"]["path"])))
            elif "commitInfo" in action:
                at = action["commitInfo"].get("timestamp")
    return adds, at


def child_reader(args: argparse.Namespace) -> None:
    """Poll the table; per row, when a read of it returned. Ends once every id of the
    producer's run was seen (``expect`` from the parent), at its timeout, or on ``stop``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    path = args.table
    stop = threading.Event()
    expect: dict[str, float] = {}

    def on_expect(n: str, start_ms: str) -> None:
        expect.update(n=int(n), start_ms=int(start_ms), at=time.monotonic())

    _commands({"expect": on_expect, "stop": lambda: stop.set()})
    ids: list[Any] = []
    lats: list[Any] = []
    tss: list[Any] = []
    versions: list[dict] = []
    polls = reads = 0
    read_s = 0.0
    last = -1
    table = None
    total = 0
    cpu0 = time.process_time()
    emit("ready", {})
    period = args.poll_ms / 1000
    outcome = "stopped"
    while not stop.is_set():
        t = time.time()
        polls += 1
        try:
            if table is None:
                table = DeltaTable(path)
            else:
                table.update_incremental()
        except TableNotFoundError:
            table = None
        if table is not None and table.version() > last:
            new = []
            for v in range(last + 1, table.version() + 1):
                files, at = _commit_log(path, v)
                parts = [pq.read_table(f, columns=["id", "ts"]) for f in files]
                new.append((v, at, pa.concat_tables(parts) if parts else None))
            seen = time.time()
            reads += 1
            read_s += seen - t
            for v, at, got in new:
                rec: dict[str, Any] = {"version": v, "commit_ms": at, "seen": seen, "rows": 0}
                if got is not None and got.num_rows:
                    i = got.column("id").to_numpy()
                    ts = got.column("ts").to_numpy()
                    ids.append(i)
                    tss.append(ts)
                    lats.append(seen - ts / 1000.0)
                    total += len(i)
                    rec.update(rows=len(i), min_ts=int(ts.min()), max_ts=int(ts.max()))
                versions.append(rec)
            last = table.version()
        if "n" in expect:
            if total >= expect["n"] and _unique(ids, int(expect["n"])) == expect["n"]:
                outcome = "complete"
                break
            if time.monotonic() - expect["at"] > args.catchup_timeout:
                outcome = "timeout"
                break
        stop.wait(max(0.0, period - (time.time() - t)))

    n = int(expect.get("n", 0))
    all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    all_lat = np.concatenate(lats) if lats else np.zeros(0)
    all_ts = np.concatenate(tss) if tss else np.zeros(0, np.int64)
    counts = np.bincount(all_ids[(all_ids >= 0) & (all_ids < n)], minlength=n)
    start_ms = int(expect.get("start_ms", all_ts.min() if len(all_ts) else 0))
    steady = all_lat[all_ts >= start_ms + args.steady_after_s * 1000]
    emit(
        "result",
        {
            "outcome": outcome,
            "expected": n,
            "rows": len(all_ids),
            "distinct": int((counts > 0).sum()),
            "lost": int((counts == 0).sum()),
            "duplicated": int((counts > 1).sum()),
            "foreign_ids": int(((all_ids < 0) | (all_ids >= n)).sum()),
            "latency": _stats(all_lat),
            "latency_steady": _stats(steady),
            "steady_after_s": args.steady_after_s,
            "histogram": _histogram(all_lat),
            "timeline": _timeline(all_ts, all_lat, start_ms),
            "versions": versions,
            "polls": polls,
            "reads": reads,
            "read_s": round(read_s, 3),
            "cpu_s": round(time.process_time() - cpu0, 3),
        },
    )


def _unique(ids: list[Any], n: int) -> int:
    import numpy as np

    if not ids:
        return 0
    a = np.concatenate(ids)
    return int((np.bincount(a[(a >= 0) & (a < n)], minlength=n) > 0).sum())


def _stats(lat: Any) -> dict[str, float]:
    import numpy as np

    if not len(lat):
        return {"rows": 0}
    q = np.percentile(lat, [50, 90, 99, 99.9])
    return {
        "rows": len(lat),
        "min_s": round(float(lat.min()), 3),
        "mean_s": round(float(lat.mean()), 3),
        "p50_s": round(float(q[0]), 3),
        "p90_s": round(float(q[1]), 3),
        "p99_s": round(float(q[2]), 3),
        "p999_s": round(float(q[3]), 3),
        "max_s": round(float(lat.max()), 3),
    }


def _histogram(lat: Any) -> list[dict]:
    import numpy as np

    counts, _ = np.histogram(lat, bins=np.array(HIST_EDGES))
    n = max(1, len(lat))
    return [
        {"from_s": lo, "to_s": hi, "rows": int(c), "share": round(int(c) / n, 4)}
        for lo, hi, c in zip(HIST_EDGES, HIST_EDGES[1:], counts)
    ]


def _timeline(ts: Any, lat: Any, start_ms: int) -> list[list[float]]:
    """Per second of production: [second, rows, p50, max] of the rows produced in it."""
    import numpy as np

    if not len(ts):
        return []
    sec = (ts - start_ms) // 1000
    out = []
    for s in np.unique(sec):
        x = lat[sec == s]
        out.append([int(s), len(x), round(float(np.median(x)), 3), round(float(x.max()), 3)])
    return out


class Trace:
    """Times of each scheduler turn of the sparkpipes child and of the steps inside it, by
    wrapping the engine's methods (bench-only; they behave exactly as before)."""

    def __init__(self, me: psutil.Process) -> None:
        self.me = me  # the CPU of the engine's tree is read at each turn's start and end
        self._tree: list[psutil.Process] = []
        self._tree_at = 0.0
        self.turns: list[dict[str, Any]] = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def cpu(self) -> float:
        """The engine tree's CPU seconds; its processes are listed again every 2 s only
        (listing them scans /proc, which costs more than the turn being measured)."""
        now = time.monotonic()
        if now - self._tree_at > 2.0:
            self._tree, self._tree_at = tree(self.me), now
        total = 0.0
        for p in self._tree:
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            total += t.user + t.system + t.children_user + t.children_system
        return total

    def install(self) -> None:
        from sparkpipes.catalog.batches import Batches
        from sparkpipes.engine.batch.protocol import BatchRunner
        from sparkpipes.engine.scheduler.leasing import Keeper
        from sparkpipes.engine.scheduler.scheduling import Scheduler
        from sparkpipes.sinks.delta.sink import DeltaSink

        self._wrap_turn(Scheduler)
        self._wrap_run_batch(Scheduler)
        for cls, attr, key in (
            (BatchRunner, "plan", "plan"),
            (BatchRunner, "committed", "committed"),
            (BatchRunner, "_execute", "spark_job"),
            (Keeper, "fence", "fence"),
            (DeltaSink, "commit", "delta_commit"),
            (Batches, "record", "record"),
        ):
            self._wrap(cls, attr, key)

    def _current(self) -> dict[str, Any] | None:
        return getattr(self._local, "turn", None)

    def _wrap(self, cls: type, attr: str, key: str) -> None:
        original = getattr(cls, attr)
        trace = self

        def timed(*a: Any, **kw: Any) -> Any:
            t = time.time()
            try:
                return original(*a, **kw)
            finally:
                rec = trace._current()
                if rec is not None:
                    end = time.time()
                    rec[key] = rec.get(key, 0.0) + end - t
                    rec[f"{key}_end"] = end

        setattr(cls, attr, timed)

    def _wrap_turn(self, cls: type) -> None:
        original = cls._turn
        trace = self

        def turn(sched: Any, *a: Any, **kw: Any) -> Any:
            rec: dict[str, Any] = {"cpu0": trace.cpu(), "t0": time.time()}
            trace._local.turn = rec
            try:
                loaded = original(sched, *a, **kw)
                rec["loaded"] = bool(loaded)
                return loaded
            finally:
                rec["t1"] = time.time()
                rec["cpu1"] = trace.cpu()
                trace._local.turn = None
                with trace._lock:
                    trace.turns.append(rec)

        cls._turn = turn

    def _wrap_run_batch(self, cls: type) -> None:
        original = cls.run_batch
        trace = self

        def run_batch(sched: Any, *a: Any, **kw: Any) -> Any:
            result = original(sched, *a, **kw)
            rec = trace._current()
            if rec is not None:
                rec.update(batch_id=result.batch_id, state=str(result.state), rows=result.rows)
            return result

        cls.run_batch = run_batch

    def counters(self) -> dict[str, int]:
        with self._lock:
            turns = list(self.turns)
        return {
            "turns": len(turns),
            "loaded": sum(1 for t in turns if t.get("loaded")),
            "batches": sum(1 for t in turns if "batch_id" in t),
            "nodata_batches": sum(1 for t in turns if t.get("state") == "NoData"),
            "empty_plans": sum(1 for t in turns if "batch_id" not in t),
        }


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def child_sparkpipes(args: argparse.Namespace) -> None:
    """The engine as ``sparkpipes run`` runs it, with one SQL-defined pipeline."""
    import logging

    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("sparkpipes").setLevel(logging.INFO)  # as `sparkpipes run`
    me = psutil.Process()
    t0 = time.perf_counter()
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession

    trace = Trace(me)
    trace.install()
    wh = os.path.join(args.workdir, "warehouse")
    eng = Engine(wh, spark_master=f"local[{args.cores}]")
    statements = [f"SET GLOBAL {k} = {v}" for k, v in _kv(args.variable).items()]
    statements += [
        f"CREATE TABLE {TABLE} ({TABLE_SQL})",
        f"CREATE PIPELINE {PIPELINE} AS LOAD DATA KAFKA "
        f"{_sql_literal(args.bootstrap + '/' + args.topic)} {args.pipeline_clause} "
        f"INTO TABLE {TABLE} FORMAT JSON",
        f"START PIPELINE {PIPELINE}",
    ]
    SqlSession(eng).execute(";\n".join(statements))
    eng.warm_up()  # what `sparkpipes run` does before it serves
    startup_s = time.perf_counter() - t0
    halt = threading.Event()

    def mark() -> None:
        emit(
            "mark",
            {
                "t": time.time(),
                "cpu": tree_cpu(me),
                "cpu_by_process": tree_cpu_by_kind(me),
                "cpu_by_pid": tree_cpu_by_pid(me),
                **trace.counters(),
            },
        )

    _commands({"mark": mark, "stop": lambda: halt.set()})

    def ready() -> None:
        deadline = time.monotonic() + 300
        while not any(t.get("batch_id") == 1 for t in trace.turns):
            if time.monotonic() > deadline or halt.wait(0.1):
                return
        halt.wait(args.settle_seconds)
        emit(
            "ready",
            {
                "startup_s": round(startup_s, 3),
                "table": os.path.join(wh, "tables", TABLE),
                **trace.counters(),
            },
        )

    threading.Thread(target=ready, daemon=True).start()
    eng.run_forever(halt)
    spec = eng.spec(PIPELINE)
    batches = eng.batches(PIPELINE)
    emit(
        "result",
        {
            "engine": "sparkpipes",
            "cores": args.cores,
            "startup_s": round(startup_s, 3),
            "batch": {
                "interval_ms": spec.batch.interval_ms,
                "fetch_timeout_ms": spec.batch.fetch_timeout_ms,
                "max_offsets_per_partition": spec.batch.max_offsets_per_partition,
            },
            "variables": _kv(args.variable),
            "pipeline_clause": args.pipeline_clause,
            "turns": trace.turns,
            "catalog_batches": [
                {
                    "batch_id": b["batch_id"],
                    "state": b["state"],
                    "rows": b["rows"],
                    "duration_ms": b["duration_ms"],
                    "tasks": [
                        {
                            k: p.get(k)
                            for k in (
                                "partition",
                                "rows",
                                "seconds",
                                "cpu_seconds",
                                "fetch_seconds",
                                "decode_seconds",
                                "write_seconds",
                            )
                        }
                        for p in b["partitions"]
                    ],
                }
                for b in batches
            ],
        },
    )
    eng.close()


def child_baseline(args: argparse.Namespace) -> None:
    """One process: consume with a short timeout; commit whenever records are held and
    the last commit started ``commit_every_ms`` ago or more."""
    me = psutil.Process()
    t0 = time.perf_counter()
    import pyarrow as pa
    import pyarrow.json as pj
    from confluent_kafka import Consumer, TopicPartition
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    from sparkpipes.sources.kafka_client import PARTITION_CONSUMER_DEFAULTS

    schema = pa.schema(
        [("id", pa.int64()), ("ts", pa.int64()), ("uuid", pa.string()), ("n", pa.int32())]
    )
    path = os.path.join(args.workdir, "baseline-table")
    DeltaTable.create(path, schema=schema, name=TABLE, mode="error")
    parse_opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": "baseline",
            "enable.auto.commit": "false",
            "enable.partition.eof": "false",
            "auto.offset.reset": "error",
            "socket.nagle.disable": "true",
            "log_level": "3",
            **PARTITION_CONSUMER_DEFAULTS,
        }
    )
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(PARTITIONS)])
    startup_s = time.perf_counter() - t0
    halt = threading.Event()
    state = {"loops": 0, "commits": 0}

    def mark() -> None:
        emit("mark", {"t": time.time(), "cpu": tree_cpu(me), **state})

    _commands({"mark": mark, "stop": lambda: halt.set()})
    threading.Thread(
        target=lambda: halt.wait(args.settle_seconds) or emit("ready", {"table": path}),
        daemon=True,
    ).start()

    values: list[bytes] = []
    nxt: dict[int, int] = {}
    commits: list[dict[str, Any]] = []
    every = args.commit_every_ms / 1000
    last_commit = 0.0
    while not halt.is_set():
        msgs = consumer.consume(10_000, timeout=args.consume_timeout_ms / 1000)
        state["loops"] += 1
        for m in msgs:
            if m.error() is not None:
                raise RuntimeError(f"consume error: {m.error()}")
            values.append(m.value())
            nxt[m.partition()] = m.offset() + 1
        if values and time.monotonic() - last_commit >= every:
            last_commit = time.monotonic()
            t1 = time.time()
            buf = b"\n".join(values)
            table = pj.read_json(
                pa.BufferReader(buf),
                read_options=pj.ReadOptions(block_size=max(len(buf) + 1, 1 << 20)),
                parse_options=parse_opts,
            )
            t2 = time.time()
            state["commits"] += 1
            write_deltalake(
                path,
                table,
                mode="append",
                commit_properties=CommitProperties(
                    app_transactions=[Transaction("baseline", state["commits"])],
                    custom_metadata={"offsets": json.dumps(nxt, sort_keys=True)},
                ),
            )
            t3 = time.time()
            commits.append(
                {"t0": t1, "parse_s": t2 - t1, "write_s": t3 - t2, "rows": table.num_rows}
            )
            values = []
    consumer.close()
    emit(
        "result",
        {
            "engine": "baseline",
            "startup_s": round(startup_s, 3),
            "commit_every_ms": args.commit_every_ms,
            "consume_timeout_ms": args.consume_timeout_ms,
            "kafka_conf": PARTITION_CONSUMER_DEFAULTS,
            "commits": commits,
            "loops": state["loops"],
        },
    )


# ---------------------------------------------------------------------------------------
# parent
# ---------------------------------------------------------------------------------------
def _machine_busy() -> float:
    st = psutil.cpu_times()
    return sum(st) - st.idle - getattr(st, "iowait", 0.0)


def _delta_version(path: str) -> int:
    from deltalake import DeltaTable

    return DeltaTable(path).version()


def _commits(path: str, v0: int, v1: int) -> list[dict[str, Any]]:
    """What each commit after ``v0`` up to ``v1`` was: a pipeline's (it carries an app
    transaction, or adds data) or table maintenance (compaction: files without
    ``dataChange``)."""
    out = []
    for v in range(v0 + 1, v1 + 1):
        info: dict[str, Any] = {}
        txn = False
        data = files = 0
        with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
            for line in f:
                action = json.loads(line)
                if "commitInfo" in action:
                    info = action["commitInfo"]
                elif "txn" in action:
                    txn = True
                elif "add" in action:
                    files += 1
                    data += bool(action["add"].get("dataChange", True))
        out.append(
            {
                "version": v,
                "operation": info.get("operation"),
                "app_transaction": txn,
                "data_files": data,
                "files": files,
                "pipeline": txn or data > 0,
            }
        )
    return out


class Snapshot:
    """CPU counters of everything on the machine that matters, at one moment."""

    def __init__(self, engine: Child, broker: psutil.Process, extra: dict[str, float]) -> None:
        engine.send("mark")
        self.engine = engine.wait("mark", 30)
        self.broker = tree_cpu(broker)
        self.extra = dict(extra)
        self.me = sum(os.times()[:2])
        self.busy = _machine_busy()
        self.t = time.time()


def _window(a: Snapshot, b: Snapshot) -> dict[str, Any]:
    eng = b.engine["cpu"] - a.engine["cpu"]
    broker = b.broker - a.broker
    extra = {k: b.extra.get(k, 0.0) - a.extra.get(k, 0.0) for k in a.extra}
    busy = b.busy - a.busy
    other = busy - eng - broker - sum(extra.values()) - (b.me - a.me)
    seconds = b.t - a.t
    counters = {
        k: b.engine[k] - a.engine[k]
        for k in ("turns", "loaded", "batches", "nodata_batches", "empty_plans", "loops", "commits")
        if k in a.engine
    }
    by_process = {
        k: round(v - a.engine.get("cpu_by_process", {}).get(k, 0.0), 3)
        for k, v in b.engine.get("cpu_by_process", {}).items()
    }
    if "cpu_by_pid" in a.engine:  # sparkpipes: robust to processes leaving the tree
        by_process = {
            k: round(v, 3)
            for k, v in window_cpu(a.engine["cpu_by_pid"], b.engine["cpu_by_pid"]).items()
        }
        eng = sum(by_process.values())
    return {
        "seconds": round(seconds, 3),
        "engine_cpu_s": round(eng, 3),
        "engine_cpu_by_process": by_process,
        "broker_cpu_s": round(broker, 3),
        **{f"{k}_cpu_s": round(v, 3) for k, v in extra.items()},
        "other_cpu_s": round(other, 3),
        "disturbed": other > DISTURBED_SHARE * seconds,
        **counters,
    }


def run_side(
    role: str, args: argparse.Namespace, broker: Any, run_no: int, rdir: str
) -> dict[str, Any]:
    """One run of one engine: settle, produce, read, idle; everything measured."""
    topic = f"fresh-{role}-{run_no}"
    broker.create_topic(topic, PARTITIONS)
    bproc = psutil.Process(broker._proc.pid)
    common = ["--bootstrap", broker.bootstrap, "--topic", topic, "--workdir", rdir]
    common += ["--settle-seconds", str(args.settle_seconds), "--cores", str(args.cores)]
    if role == "sparkpipes":
        common += ["--pipeline-clause", args.pipeline_clause]
        common += [x for kv in args.variable for x in ("--variable", kv)]
    else:
        common += ["--commit-every-ms", str(args.commit_every_ms)]
        common += ["--consume-timeout-ms", str(args.consume_timeout_ms)]
    engine = Child(role, common, os.path.join(rdir, f"{role}.log"), args.verbose)
    ready = engine.wait("ready", 600)
    table = ready["table"]
    reader = Child(
        "reader",
        [
            "--table",
            table,
            "--poll-ms",
            str(args.poll_ms),
            "--catchup-timeout",
            str(args.catchup_timeout),
            "--steady-after-s",
            str(args.steady_after_s),
        ],
        os.path.join(rdir, f"{role}-reader.log"),
        args.verbose,
    )
    reader.wait("ready", 120)
    producer = Child(
        "producer",
        [
            "--bootstrap",
            broker.bootstrap,
            "--topic",
            topic,
            "--rate",
            str(args.rate),
            "--seconds",
            str(args.seconds),
            "--slice-ms",
            str(args.slice_ms),
        ],
        os.path.join(rdir, f"{role}-producer.log"),
        args.verbose,
    )
    started = producer.wait("started", 120)
    s0 = Snapshot(engine, bproc, {"reader": reader.cpu(), "producer": 0.0})
    done = producer.wait("done", args.seconds * 3 + 60)
    s1 = Snapshot(engine, bproc, {"reader": reader.cpu(), "producer": done["cpu"] - started["cpu"]})
    producer.close()
    production = _window(s0, s1)
    reader.send(f"expect {done['sent']} {int(started['t'] * 1000)}")
    seen = reader.wait("result", args.catchup_timeout + 120)
    reader.close()
    caught_up_at = time.time()

    v0 = _delta_version(table)
    i0 = Snapshot(engine, bproc, {})
    time.sleep(args.idle_seconds)
    i1 = Snapshot(engine, bproc, {})
    v1 = _delta_version(table)
    idle = _window(i0, i1)
    idle["commits_in_delta"] = v1 - v0
    idle["commit_log"] = _commits(table, v0, v1)
    idle["pipeline_commits"] = sum(c["pipeline"] for c in idle["commit_log"])
    if role == "sparkpipes":
        idle["cpu_s_per_turn"] = round(idle["engine_cpu_s"] / max(1, idle["turns"]), 4)
    idle["cpu_s_per_s"] = round(idle["engine_cpu_s"] / idle["seconds"], 4)

    engine.send("stop")
    res = engine.wait("result", 300)
    engine.close()
    res.update(
        ready=ready,
        producer=done,
        production=production,
        reader=seen,
        caught_up_after_producer_s=round(caught_up_at - done["t"], 3),
        idle=idle,
        latency=seen["latency"],
        latency_steady=seen["latency_steady"],
        exactly_once=seen["lost"] == 0 and seen["duplicated"] == 0 and seen["foreign_ids"] == 0,
    )
    res["disturbed"] = production["disturbed"]
    res["production"]["engine_cpu_s_per_s"] = round(
        production["engine_cpu_s"] / production["seconds"], 3
    )
    if role == "sparkpipes":
        res["analysis"] = analyse_sparkpipes(res, started["t"], done["t"])
        idle.update(idle_split(res["turns"], i0.t, i1.t, idle["engine_cpu_s"]))
    else:
        res["analysis"] = analyse_baseline(res, started["t"], done["t"])
    return res


def _med(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 3) if xs else None


def _versions_analysis(versions: list[dict], t0: float, t1: float) -> dict[str, Any]:
    """From the reader's view of each commit: how old its newest and oldest row were when
    it was committed, and how long the reader took to return it."""
    vs = [v for v in versions if v["rows"] and v.get("commit_ms") and t0 <= v["seen"] <= t1 + 5]
    if not vs:
        return {}
    gaps = [b["commit_ms"] - a["commit_ms"] for a, b in itertools.pairwise(vs)]
    return {
        "commits_with_rows": len(vs),
        "rows_per_commit": _med([v["rows"] for v in vs]),
        "commit_gap_ms": _med(gaps),
        "commit_gap_ms_max": max(gaps) if gaps else None,
        "newest_row_age_at_commit_ms": _med([v["commit_ms"] - v["max_ts"] for v in vs]),
        "oldest_row_age_at_commit_ms": _med([v["commit_ms"] - v["min_ts"] for v in vs]),
        "commit_to_read_ms": _med([v["seen"] * 1000 - v["commit_ms"] for v in vs]),
    }


def analyse_sparkpipes(res: dict[str, Any], t0: float, t1: float) -> dict[str, Any]:
    """Where a batch's time goes, over the batches of the production window."""
    turns = [t for t in res["turns"] if t.get("rows") and t0 <= t["t0"] <= t1]
    tasks = {b["batch_id"]: b["tasks"] for b in res["catalog_batches"]}
    out: dict[str, Any] = {"batches": len(turns)}
    if not turns:
        return out
    out["rows_per_batch"] = _med([t["rows"] for t in turns])
    out["partitions_per_batch"] = _med([len(tasks.get(t["batch_id"], [])) for t in turns])
    out["turn_s"] = _med([t["t1"] - t["t0"] for t in turns])
    out["turn_s_max"] = round(max(t["t1"] - t["t0"] for t in turns), 3)
    for key in ("plan", "committed", "spark_job", "fence", "delta_commit", "record"):
        out[f"{key}_s"] = _med([t.get(key, 0.0) for t in turns])
    out["other_s"] = _med(
        [
            (t["t1"] - t["t0"])
            - sum(t.get(k, 0.0) for k in ("plan", "spark_job", "fence", "delta_commit", "record"))
            for t in turns
        ]
    )
    slowest = [
        max((p["seconds"] or 0) for p in tasks.get(t["batch_id"], [{"seconds": 0}])) for t in turns
    ]
    out["slowest_task_s"] = _med(slowest)
    out["spark_overhead_s"] = _med([t.get("spark_job", 0.0) - s for t, s in zip(turns, slowest)])
    out["task_fetch_s"] = _med(
        [
            statistics.mean(p["fetch_seconds"] or 0 for p in tasks[t["batch_id"]])
            for t in turns
            if tasks.get(t["batch_id"])
        ]
    )
    starts = [t["t0"] for t in turns]
    out["batch_start_gap_s"] = _med([b - a for a, b in itertools.pairwise(starts)])
    out.update(_versions_analysis(res["reader"]["versions"], t0, t1))
    return out


def idle_split(turns: list[dict], t0: float, t1: float, total: float) -> dict[str, Any]:
    """The idle window's CPU inside the scheduler's turns (by kind of turn) and between
    them (the dispatcher's polling, lease renewals, the JVM's own threads)."""
    inside = [t for t in turns if t0 <= t["t0"] and t["t1"] <= t1 and "cpu1" in t]
    nodata = [t["cpu1"] - t["cpu0"] for t in inside if t.get("state") == "NoData"]
    empty = [t["cpu1"] - t["cpu0"] for t in inside if "batch_id" not in t]
    in_turns = sum(t["cpu1"] - t["cpu0"] for t in inside)
    return {
        "cpu_s_in_turns": round(in_turns, 3),
        "cpu_s_between_turns": round(total - in_turns, 3),
        "cpu_s_per_nodata_batch": _med(nodata),
        "cpu_s_per_empty_plan": _med(empty),
        "nodata_batch_wall_s": _med(
            [t["t1"] - t["t0"] for t in inside if t.get("state") == "NoData"]
        ),
    }


def analyse_baseline(res: dict[str, Any], t0: float, t1: float) -> dict[str, Any]:
    cs = [c for c in res["commits"] if t0 <= c["t0"] <= t1]
    out: dict[str, Any] = {"commits": len(cs)}
    if cs:
        out["rows_per_commit"] = _med([c["rows"] for c in cs])
        out["parse_s"] = _med([c["parse_s"] for c in cs])
        out["write_s"] = _med([c["write_s"] for c in cs])
    out.update(_versions_analysis(res["reader"]["versions"], t0, t1))
    return out


def slim(res: dict[str, Any]) -> dict[str, Any]:
    """The run without its bulky per-turn and per-version lists (kept in ``--full``)."""
    out = dict(res)
    for key in ("turns", "catalog_batches", "commits"):
        out.pop(key, None)
    out["reader"] = {k: v for k, v in res["reader"].items() if k not in ("versions",)}
    return out


def print_run(role: str, r: dict[str, Any]) -> None:
    lat, st, p, idle = r["latency"], r["latency_steady"], r["production"], r["idle"]
    mark = "  DISTURBED" if r["disturbed"] else ""
    print(
        f"  {role:10} p50 {lat['p50_s']:.3f}  p90 {lat['p90_s']:.3f}  p99 {lat['p99_s']:.3f}  "
        f"max {lat['max_s']:.3f} s  (steady p50 {st.get('p50_s', float('nan')):.3f} "
        f"p99 {st.get('p99_s', float('nan')):.3f})  rows {r['reader']['rows']:,}  "
        f"lost {r['reader']['lost']} dup {r['reader']['duplicated']}{mark}"
    )
    print(
        f"  {'':10} producing: engine {p['engine_cpu_s_per_s']:.2f} cores, broker "
        f"{p['broker_cpu_s']:.1f} CPU-s, other {p['other_cpu_s']:.1f} CPU-s over "
        f"{p['seconds']:.0f} s; producer {r['producer']['rate']:,.0f}/s "
        f"(slices late ≤ {r['producer']['slice_late_max_ms']} ms)"
    )
    extra = (
        f"{idle['turns']} turns ({idle['nodata_batches']} NoData batches, "
        f"{idle['empty_plans']} empty plans), {idle['cpu_s_per_turn']:.3f} CPU-s per turn, "
        if role == "sparkpipes"
        else f"{idle['loops']} consume loops, "
    )
    print(
        f"  {'':10} idle {idle['seconds']:.0f} s: {idle['commits_in_delta']} commits "
        f"({idle['pipeline_commits']} by the pipeline{_others(idle['commit_log'])}), {extra}"
        f"{idle['cpu_s_per_s']:.3f} CPU-s/s, other {idle['other_cpu_s']:.1f} CPU-s"
        f"{'  DISTURBED' if idle['disturbed'] else ''}"
    )
    if idle.get("cpu_s_per_nodata_batch") is not None:
        print(
            f"  {'':10} idle CPU-s: {idle['cpu_s_in_turns']:.2f} in turns (NoData batch "
            f"{idle['cpu_s_per_nodata_batch']:.3f} each, {idle['nodata_batch_wall_s']:.3f} s "
            f"wall; empty plan {idle['cpu_s_per_empty_plan'] or 0:.3f}), "
            f"{idle['cpu_s_between_turns']:.2f} between turns"
        )
    a = r["analysis"]
    if role == "sparkpipes" and a.get("batches"):
        print(
            f"  {'':10} {a['batches']} batches of {a['rows_per_batch']:,.0f} rows from "
            f"{a['partitions_per_batch']:g} of {PARTITIONS} partitions; per batch "
            f"(median): turn {a['turn_s']:.3f} s = plan {a['plan_s']:.3f} + Spark job "
            f"{a['spark_job_s']:.3f} (slowest task {a['slowest_task_s']:.3f}) + fence "
            f"{a['fence_s']:.3f} + Delta commit {a['delta_commit_s']:.3f} + record "
            f"{a['record_s']:.3f} + other {a['other_s']:.3f}"
        )
    elif a.get("commits"):
        print(
            f"  {'':10} {a['commits']} commits of {a['rows_per_commit']:,.0f} rows; parse "
            f"{a['parse_s']:.3f} s, write_deltalake {a['write_s']:.3f} s (medians)"
        )
    if a.get("commits_with_rows"):
        print(
            f"  {'':10} commits {a['commit_gap_ms']:.0f} ms apart (max "
            f"{a['commit_gap_ms_max']} ms); at commit the newest row is "
            f"{a['newest_row_age_at_commit_ms']:.0f} ms old, the oldest "
            f"{a['oldest_row_age_at_commit_ms']:.0f} ms; commit → read "
            f"{a['commit_to_read_ms']:.0f} ms"
        )


def _others(commits: list[dict[str, Any]]) -> str:
    ops = [c["operation"] for c in commits if not c["pipeline"]]
    return f"; others: {', '.join(map(str, ops))}" if ops else ""


def headline(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Medians over the undisturbed runs (all runs if every one was disturbed)."""
    if not runs:
        return None
    calm = [r for r in runs if not r["disturbed"]] or runs
    out: dict[str, Any] = {"runs": len(runs), "undisturbed": sum(not r["disturbed"] for r in runs)}
    for key in ("p50_s", "p90_s", "p99_s", "max_s"):
        out[key] = _med([r["latency"][key] for r in calm])
        out[f"steady_{key}"] = _med([r["latency_steady"].get(key) for r in calm])
    out["engine_cores_producing"] = _med([r["production"]["engine_cpu_s_per_s"] for r in calm])
    out["idle_commits_max"] = max(r["idle"]["commits_in_delta"] for r in runs)
    out["idle_pipeline_commits_max"] = max(r["idle"]["pipeline_commits"] for r in runs)
    out["idle_cpu_s_per_s"] = _med([r["idle"]["cpu_s_per_s"] for r in calm])
    if "cpu_s_per_turn" in runs[0]["idle"]:
        idle_calm = [r for r in runs if not r["idle"]["disturbed"]] or runs
        out["idle_cpu_s_per_turn"] = _med([r["idle"]["cpu_s_per_turn"] for r in idle_calm])
        out["idle_cpu_s_per_nodata_batch"] = _med(
            [r["idle"].get("cpu_s_per_nodata_batch") for r in idle_calm]
        )
    out["exactly_once"] = all(r["exactly_once"] for r in runs)
    return out


def print_histogram(name: str, r: dict[str, Any]) -> None:
    cells = "  ".join(
        f"<{h['to_s']:g}s {h['share'] * 100:.1f}%"
        if h["to_s"] != float("inf")
        else f"≥{h['from_s']:g}s {h['share'] * 100:.1f}%"
        for h in r["reader"]["histogram"]
    )
    print(f"  {name:10} {cells}")


def _git() -> dict[str, Any]:
    """The commit the bench ran at and how many files under src/ differed from it (others
    edit the same checkout while benches run)."""

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", *a], cwd=HERE, capture_output=True, text=True, check=False
        ).stdout.strip()

    dirty = git("status", "--porcelain", "--", "../src").splitlines()
    return {"commit": git("rev-parse", "--short", "HEAD"), "src_files_changed": len(dirty)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="production time")
    ap.add_argument("--rate", type=int, default=10_000, help="events per second")
    ap.add_argument("--repeat", type=int, default=5, help="pairs of runs (sparkpipes, baseline)")
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--settle-seconds", type=float, default=5.0, help="idle before producing")
    ap.add_argument("--only", choices=["sparkpipes", "baseline"], default=None)
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N] for sparkpipes")
    ap.add_argument("--poll-ms", type=int, default=50, help="reader: query period")
    ap.add_argument("--slice-ms", type=int, default=10, help="producer: pacing slice")
    ap.add_argument(
        "--steady-after-s", type=float, default=5.0, help="steady-state figures skip this much"
    )
    ap.add_argument("--catchup-timeout", type=float, default=120.0)
    ap.add_argument("--commit-every-ms", type=int, default=1000, help="baseline: commit period")
    ap.add_argument("--consume-timeout-ms", type=int, default=50, help="baseline: consume timeout")
    ap.add_argument(
        "--pipeline-clause",
        default="",
        help="sparkpipes: text put before INTO TABLE (e.g. 'BATCH_INTERVAL 500'); a variant",
    )
    ap.add_argument(
        "--variable",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="sparkpipes: SET GLOBAL before CREATE PIPELINE; a variant",
    )
    ap.add_argument(
        "--output",
        default=None,
        help="default bench/results/freshness.json (freshness-variant.json for a variant)",
    )
    ap.add_argument("--full", action="store_true", help="keep every turn and commit in the JSON")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("-v", "--verbose", action="store_true")
    hidden = argparse.SUPPRESS
    ap.add_argument(
        "--child", choices=["sparkpipes", "baseline", "reader", "producer"], help=hidden
    )
    ap.add_argument("--bootstrap", help=hidden)
    ap.add_argument("--topic", help=hidden)
    ap.add_argument("--workdir", help=hidden)
    ap.add_argument("--table", help=hidden)
    args = ap.parse_args()

    children = {
        "sparkpipes": child_sparkpipes,
        "baseline": child_baseline,
        "reader": child_reader,
        "producer": child_producer,
    }
    if args.child:
        return children[args.child](args)

    from sparkpipes.testing import EmbeddedBroker

    workdir = tempfile.mkdtemp(prefix="sparkpipes-fresh-")
    print(f"work dir {workdir}")
    variant = bool(args.pipeline_clause or args.variable)
    sp_runs: list[dict] = []
    bl_runs: list[dict] = []
    with EmbeddedBroker() as broker:
        for i in range(1, args.repeat + 1):
            for role, runs in (("sparkpipes", sp_runs), ("baseline", bl_runs)):
                if args.only not in (None, role):
                    continue
                rdir = os.path.join(workdir, f"run{i}-{role}")
                os.makedirs(rdir)
                print(f"run {i}/{args.repeat}: {role} …", flush=True)
                r = run_side(role, args, broker, i, rdir)
                runs.append(r)
                print_run(role, r)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)

    sp, bl = headline(sp_runs), headline(bl_runs)
    paired = {
        key: [round(a["latency"][key] / b["latency"][key], 3) for a, b in zip(sp_runs, bl_runs)]
        for key in ("p50_s", "p99_s")
    }
    print(f"\n{args.rate:,} events/s for {args.seconds:g} s, {args.repeat} run(s) of each")
    print("latency histograms (median run by p50):")
    for name, runs in (("sparkpipes", sp_runs), ("baseline", bl_runs)):
        if runs:
            print_histogram(
                name, sorted(runs, key=lambda r: r["latency"]["p50_s"])[(len(runs) - 1) // 2]
            )
    rows = [
        ("p50 s", "p50_s"),
        ("p90 s", "p90_s"),
        ("p99 s", "p99_s"),
        ("max s", "max_s"),
        ("steady p50 s", "steady_p50_s"),
        ("steady p99 s", "steady_p99_s"),
        ("cores while producing", "engine_cores_producing"),
        ("idle CPU-s per s", "idle_cpu_s_per_s"),
        ("idle CPU-s per turn", "idle_cpu_s_per_turn"),
        ("  in a NoData batch", "idle_cpu_s_per_nodata_batch"),
        ("idle commits (max)", "idle_commits_max"),
        ("  of them the pipeline's", "idle_pipeline_commits_max"),
        ("exactly once", "exactly_once"),
        ("undisturbed runs", "undisturbed"),
    ]
    print(f"\n{'median of runs':24}{'sparkpipes':>14}{'baseline':>14}")
    for label, key in rows:
        cells = "".join(
            f"{(h.get(key) if h and h.get(key) is not None else '-')!s:>14}" for h in (sp, bl)
        )
        print(f"{label:24}{cells}")
    if paired["p50_s"]:
        for key, xs in paired.items():
            print(
                f"paired ratio sparkpipes/baseline {key[:3]}: "
                f"{', '.join(f'{x:.2f}x' for x in xs)}; median {statistics.median(xs):.2f}x"
            )
    met = None
    if sp:
        met = {
            "p50": sp["p50_s"] <= TARGETS["p50_s"],
            "p99": sp["p99_s"] <= TARGETS["p99_s"],
            "idle_cpu_per_batch": (sp.get("idle_cpu_s_per_turn") or 0)
            <= TARGETS["idle_cpu_s_per_batch"],
            "idle_no_commit": sp["idle_pipeline_commits_max"] == 0,
        }
        print(f"targets (sparkpipes): {met}")
    out = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rate": args.rate,
        "seconds": args.seconds,
        "repeat": args.repeat,
        "idle_seconds": args.idle_seconds,
        "settle_seconds": args.settle_seconds,
        "poll_ms": args.poll_ms,
        "baseline_commit_every_ms": args.commit_every_ms,
        "pipeline_clause": args.pipeline_clause,
        "variables": _kv(args.variable),
        "machine": machine(),
        "git": _git(),
        "headline": "medians over the runs whose production window was not disturbed",
        "sparkpipes": sp,
        "baseline": bl,
        "paired_ratios": paired,
        "paired_ratio_medians": {k: statistics.median(v) if v else None for k, v in paired.items()},
        "targets": TARGETS,
        "targets_met": met,
        "runs": {
            "sparkpipes": sp_runs if args.full else [slim(r) for r in sp_runs],
            "baseline": bl_runs if args.full else [slim(r) for r in bl_runs],
        },
    }
    if args.output is None:
        name = "freshness-variant.json" if variant else "freshness.json"
        args.output = os.path.join(HERE, "results", name)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwrote {args.output}")
    if not all(r["exactly_once"] for r in sp_runs + bl_runs):
        raise SystemExit("exactly-once check FAILED (ids lost or duplicated)")


if __name__ == "__main__":
    main()

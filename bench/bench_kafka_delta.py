#!/usr/bin/env python
"""Kafka → Delta throughput: sparkpipes vs. a hand-written single-process baseline.

    .venv/bin/python bench/bench_kafka_delta.py [--events 1000000]

1. Starts the embedded Tansu broker, creates topic ``events`` (4 partitions) and produces
   N JSON events shaped like Pinot's datagen, ``{"ts": <epoch ms>, "uuid": <uuid4 hex>,
   "count": <0..1000>}`` (payloads pre-built; production is timed on its own and is not
   part of either measurement).
2. **sparkpipes**, in a child process: builds the Engine and its SparkSession, creates
   the table and the pipeline, runs ``Engine.warm_up()`` as ``sparkpipes run`` does at
   start (session and warm-up are reported together as start-up, not counted), then times
   ``run_batches(..., until_idle=True)`` until the backlog is drained and verifies exactly
   once (rows == N and distinct uuid == N).
3. **baseline**, in a second child process pinned to one core: confluent-kafka consumer
   assigned to the 4 partitions from offset 0 → ``b"\\n".join`` → ``pyarrow.json.read_json``
   with the explicit schema → ``deltalake.write_deltalake(mode="append")`` every ~250k
   rows, each with its own app transaction version. The client gets sparkpipes'
   ``PARTITION_CONSUMER_DEFAULTS``, so the comparison is engine vs engine. Stops on an
   empty consume after all N records were read (record count, never the watermark:
   Tansu's high watermark is the last batch's base offset + 1).

Measured for each child, over its whole process tree (Python driver, Spark JVM, Python
workers; for the baseline the single process):

* rows/s = N / wall seconds of the drain phase;
* CPU-seconds per million rows = user+sys CPU of the tree during the drain phase
  (live processes' own time plus their reaped children's), snapshotted by the child at
  the start and at the end of the phase, times 1e6 / N;
* peak memory = the highest sum of RSS over the tree, sampled by this (parent) process
  every ~100 ms from the child's start through the drain (session start-up included,
  the verification read-back after it excluded and reported apart), plus the peak over
  the drain alone and a PSS sum sampled every ~1 s (RSS double-counts shared pages).

Results go to stdout (a table) and to ``bench/results/latest.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
TOPIC = "events"
PARTITIONS = 4
SCHEMA_DDL = "ts BIGINT, uuid STRING, count INT"
GIB = 1024**3
MIB = 1024**2


# ---------------------------------------------------------------------------------------
# measurement helpers
# ---------------------------------------------------------------------------------------
def tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_cpu(proc: psutil.Process) -> float:
    """user+sys seconds of ``proc`` and all its descendants, including reaped children."""
    total = 0.0
    for p in tree(proc):
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def tree_cpu_by_pid(proc: psutil.Process) -> dict[str, list]:
    """Each process of the tree as ``"pid:start"`` → ``[kind, own user+sys seconds]``
    (without reaped children), for :func:`window_cpu`."""
    out: dict[str, list] = {}
    for p in tree(proc):
        try:
            t = p.cpu_times()
            out[f"{p.pid}:{p.create_time()}"] = [kind(p), t.user + t.system]
        except psutil.Error:
            continue
    return out


def window_cpu(a: dict[str, list], b: dict[str, list]) -> dict[str, float]:
    """CPU-s by kind spent between two :func:`tree_cpu_by_pid` readings: each process's
    own time since ``a`` (all of it for one started since). A process gone by ``b`` counts
    nothing (its last seconds are unknown); a tree summed at each end instead loses its
    whole life (Spark's idle Python workers exit unreaped by the tree: negative windows)."""
    out: dict[str, float] = {}
    for key, (k, cpu) in b.items():
        out[k] = out.get(k, 0.0) + cpu - (a[key][1] if key in a else 0.0)
    return out


def tree_cpu_by_kind(proc: psutil.Process) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in tree(proc):
        try:
            t = p.cpu_times()
            k = kind(p)
        except psutil.Error:
            continue
        out[k] = out.get(k, 0.0) + t.user + t.system + t.children_user + t.children_system
    return out


def kind(p: psutil.Process) -> str:
    try:
        cmd = " ".join(p.cmdline())
    except psutil.Error:
        return "?"
    if "java" in p.name() or "org.apache.spark" in cmd:
        return "jvm"
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
        return "python-worker"
    return "driver"


def emit(kind_: str, payload: object = None) -> None:
    """Child → parent message on stdout (one line)."""
    sys.stdout.write(f"@@{kind_} {json.dumps(payload)}\n")
    sys.stdout.flush()


class Monitor:
    """Samples a child's process tree (RSS every ~100 ms, PSS every ~1 s) by phase."""

    def __init__(self, pid: int, interval: float = 0.1, pss_every: int = 10) -> None:
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.pss_every = pss_every
        self.phase = "startup"
        self.peak_rss: dict[str, int] = {}
        self.peak_pss: dict[str, int] = {}
        self.peak_breakdown: dict[str, dict[str, int]] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            phase = self.phase
            rss, by_kind, pss = 0, {}, 0
            want_pss = i % self.pss_every == 0
            for p in tree(self.proc):
                try:
                    if want_pss:
                        mi = p.memory_full_info()
                        pss += mi.pss
                        r = mi.rss
                    else:
                        r = p.memory_info().rss
                    k = kind(p)
                except psutil.Error:
                    continue
                rss += r
                by_kind[k] = by_kind.get(k, 0) + r
            if rss:
                self.samples += 1
                # "ingest" = start-up + drain: what the engine needs to ingest; the
                # verification read-back afterwards is reported on its own.
                keys = [phase, "all"] + (["ingest"] if phase in ("startup", "drain") else [])
                for key in keys:
                    if rss > self.peak_rss.get(key, 0):
                        self.peak_rss[key] = rss
                        self.peak_breakdown[key] = {"phase": phase, **by_kind}
                    if want_pss and pss > self.peak_pss.get(key, 0):
                        self.peak_pss[key] = pss
            i += 1
            self._stop.wait(self.interval)


def run_child(
    role: str, args: argparse.Namespace, bootstrap: str, workdir: str, broker_pid: int | None
) -> dict:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        role,
        "--bootstrap",
        bootstrap,
        "--workdir",
        workdir,
        "--events",
        str(args.events),
        "--cores",
        str(args.cores),
        "--chunk",
        str(args.chunk),
        "--write-rows",
        str(args.write_rows),
    ]
    if getattr(args, "master", None):
        cmd += ["--master", args.master]
    for kv in args.spark_conf:
        cmd += ["--spark-conf", kv]
    for kv in args.kafka_conf:
        cmd += ["--kafka-conf", kv]
    for kv in args.baseline_kafka_conf:
        cmd += ["--baseline-kafka-conf", kv]
    for kv in args.pipeline_opt:
        cmd += ["--pipeline-opt", kv]
    for kv in args.variable:
        cmd += ["--variable", kv]
    broker = psutil.Process(broker_pid) if broker_pid else None
    broker_cpu: dict[str, float] = {}
    machine_busy: dict[str, float] = {}
    t_launch = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    mon = Monitor(proc.pid).start()
    result: dict = {}
    log: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("@@phase "):
            phase = json.loads(line[8:])
            if broker is not None:
                broker_cpu[phase] = sum(broker.cpu_times()[:2])
            st = psutil.cpu_times()
            machine_busy[phase] = sum(st) - st.idle - getattr(st, "iowait", 0.0)
            mon.phase = phase
        elif line.startswith("@@result "):
            result = json.loads(line[9:])
        else:
            log.append(line.rstrip("\n"))
            if args.verbose:
                print(f"  [{role}] {line}", end="")
    rc = proc.wait()
    mon.stop()
    if rc != 0 or not result:
        tail = "\n".join(log[-30:])
        raise SystemExit(f"{role} child failed (exit {rc}):\n{tail}")
    result["process_wall_s"] = round(time.perf_counter() - t_launch, 3)
    result["peak_rss_bytes"] = mon.peak_rss.get("ingest", 0)
    result["peak_rss_drain_bytes"] = mon.peak_rss.get("drain", 0)
    result["peak_rss_verify_bytes"] = mon.peak_rss.get("verify", 0)
    result["peak_pss_bytes"] = mon.peak_pss.get("ingest", 0)
    result["peak_rss_breakdown_bytes"] = mon.peak_breakdown.get("ingest", {})
    result["memory_samples"] = mon.samples
    if "drain" in broker_cpu and "verify" in broker_cpu:
        result["broker_cpu_s_during_drain"] = round(broker_cpu["verify"] - broker_cpu["drain"], 3)
    if "drain" in machine_busy and "verify" in machine_busy:
        busy = machine_busy["verify"] - machine_busy["drain"]
        result["machine_cpu_s_during_drain"] = round(busy, 3)
        # CPU used during the drain by anything but the measured tree and the broker
        result["other_cpu_s_during_drain"] = round(
            busy - result["drain_cpu_s"] - result.get("broker_cpu_s_during_drain", 0.0), 3
        )
    return result


# ---------------------------------------------------------------------------------------
# children
# ---------------------------------------------------------------------------------------
def _kv(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in items:
        k, _, v = kv.partition("=")
        try:
            out[k] = int(v)
        except ValueError:
            out[k] = v
    return out


def verify(table, n: int) -> dict:
    import pyarrow.compute as pc

    rows = table.num_rows
    distinct = pc.count_distinct(table.column("uuid")).as_py()
    return {"rows": rows, "distinct_uuid": distinct, "exactly_once": rows == n == distinct}


def child_sparkpipes(args: argparse.Namespace) -> None:
    me = psutil.Process()
    wh = os.path.join(args.workdir, "sparkpipes-warehouse")
    spark_conf = {
        "spark.driver.memory": "1g",
        **{k: str(v) for k, v in _kv(args.spark_conf).items()},
    }

    emit("phase", "startup")
    t0 = time.perf_counter()
    from sparkpipes import Engine
    from sparkpipes.sources.kafka_client import PARTITION_CONSUMER_DEFAULTS

    eng = Engine(wh, spark_master=args.master or f"local[{args.cores}]", spark_conf=spark_conf)
    eng.spark  # noqa: B018 - the SparkSession
    session_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    eng.create_table("events", SCHEMA_DDL)
    for name, value in _kv(args.variable).items():
        eng.set_variable(name, value)
    options = {
        "max_offsets_per_batch_partition": 1_000_000,
        "batch_interval_ms": 0,
        **_kv(args.pipeline_opt),
    }
    kafka_conf = _kv(args.kafka_conf)
    if kafka_conf:
        options["config"] = kafka_conf
    eng.create_pipeline(
        "p",
        source="kafka",
        location=f"{args.bootstrap}/{TOPIC}",
        table="events",
        format="json",
        **options,
    )
    setup_s = time.perf_counter() - t1
    t1 = time.perf_counter()
    # what a long-running engine does once at start (`sparkpipes run`), after the DDL so
    # that the JVM compiles the batch path rather than the DDL parser during the drain
    eng.warm_up()
    startup_s = session_s + time.perf_counter() - t1

    emit("phase", "drain")
    cpu0, by0 = tree_cpu(me), tree_cpu_by_kind(me)
    t1 = time.perf_counter()
    results = eng.run_batches("p", 100, until_idle=True)
    drain_s = time.perf_counter() - t1
    cpu1, by1 = tree_cpu(me), tree_cpu_by_kind(me)
    emit("phase", "verify")

    check = verify(eng.table_arrow("events"), args.events)
    from deltalake import DeltaTable

    dtab = DeltaTable(os.path.join(wh, "tables", "events"))
    batches = [
        {
            "batch_id": r.batch_id,
            "state": r.state,
            "rows": r.rows,
            "seconds": round(r.seconds, 3),
            "partitions": r.partitions,
        }
        for r in results
    ]
    emit(
        "result",
        {
            "engine": "sparkpipes",
            "cores": args.cores,
            "spark_conf": spark_conf,
            "pipeline_options": options,
            "kafka_conf": {**PARTITION_CONSUMER_DEFAULTS, **kafka_conf},
            "session_startup_s": round(startup_s, 3),
            "table_pipeline_setup_s": round(setup_s, 3),
            "drain_s": round(drain_s, 3),
            "drain_to_last_commit_s": round(
                sum(r.seconds for r in results if r.state != "NoData"), 3
            ),
            "drain_cpu_s": round(cpu1 - cpu0, 3),
            "drain_cpu_s_by_process": {k: round(by1.get(k, 0) - by0.get(k, 0), 3) for k in by1},
            "rows_read": sum(r.rows for r in results),
            "batches": batches,
            "delta_version": dtab.version(),
            "delta_files": len(dtab.file_uris()),
            **check,
        },
    )
    eng.close()
    eng.spark.stop()


def child_baseline(args: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {0})  # one core, set before any client thread exists
    me = psutil.Process()
    emit("phase", "startup")
    t0 = time.perf_counter()
    import pyarrow as pa
    import pyarrow.json as pj
    from confluent_kafka import Consumer, TopicPartition
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    from sparkpipes.sources.kafka_client import PARTITION_CONSUMER_DEFAULTS

    schema = pa.schema([("ts", pa.int64()), ("uuid", pa.string()), ("count", pa.int32())])
    path = os.path.join(args.workdir, "baseline-table")
    DeltaTable.create(path, schema=schema, name="events", mode="error")
    startup_s = time.perf_counter() - t0
    parse_opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    kafka_conf = {**PARTITION_CONSUMER_DEFAULTS, **_kv(args.baseline_kafka_conf)}
    n = args.events

    emit("phase", "drain")
    cpu0 = tree_cpu(me)
    t1 = time.perf_counter()
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": "baseline",
            "enable.auto.commit": "false",
            "enable.partition.eof": "false",
            "auto.offset.reset": "error",
            "socket.nagle.disable": "true",
            "log_level": "3",
            **{k: str(v) for k, v in kafka_conf.items()},
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])

    read = 0
    values: list[bytes] = []
    pending: list[pa.Table] = []
    pending_rows = 0
    version = 0
    parse_s = write_s = 0.0

    def parse() -> None:
        nonlocal values, pending_rows, parse_s
        ts = time.perf_counter()
        buf = b"\n".join(values)
        table = pj.read_json(
            pa.BufferReader(buf),
            read_options=pj.ReadOptions(block_size=max(len(buf) + 1, 1 << 20)),
            parse_options=parse_opts,
        )
        if table.num_rows != len(values):
            raise RuntimeError(f"parsed {table.num_rows} rows from {len(values)} records")
        pending.append(table)
        pending_rows += table.num_rows
        values = []
        parse_s += time.perf_counter() - ts

    def write() -> None:
        nonlocal pending, pending_rows, version, write_s
        ts = time.perf_counter()
        version += 1
        table = pa.concat_tables(pending)
        write_deltalake(
            path,
            table,
            mode="append",
            commit_properties=CommitProperties(app_transactions=[Transaction("baseline", version)]),
        )
        pending, pending_rows = [], 0
        write_s += time.perf_counter() - ts

    give_up = time.time() + 120
    consume_s = 0.0
    consume_calls = 0
    while True:
        tc = time.perf_counter()
        msgs = consumer.consume(10_000, timeout=0.2)
        consume_s += time.perf_counter() - tc
        consume_calls += 1
        if not msgs:
            if read >= n:
                break
            if time.time() > give_up:
                raise RuntimeError(f"only {read} of {n} records arrived")
            continue
        for m in msgs:
            if m.error() is not None:
                raise RuntimeError(f"consume error: {m.error()}")
            values.append(m.value())
        read += len(msgs)
        if len(values) >= args.chunk:
            parse()
        if pending_rows >= args.write_rows:
            write()
    if values:
        parse()
    if pending:
        write()
    consumer.close()
    drain_s = time.perf_counter() - t1
    cpu1 = tree_cpu(me)
    emit("phase", "verify")

    dtab = DeltaTable(path)
    check = verify(dtab.to_pyarrow_table(), n)
    emit(
        "result",
        {
            "engine": "baseline",
            "cores": 1,
            "affinity": sorted(os.sched_getaffinity(0)),
            "kafka_conf": kafka_conf,
            "session_startup_s": round(startup_s, 3),
            "drain_s": round(drain_s, 3),
            "drain_cpu_s": round(cpu1 - cpu0, 3),
            "consume_s": round(consume_s, 3),
            "consume_calls": consume_calls,
            "parse_s": round(parse_s, 3),
            "write_s": round(write_s, 3),
            "rows_read": read,
            "delta_version": dtab.version(),
            "delta_files": len(dtab.file_uris()),
            "app_transaction_version": dtab.transaction_version("baseline"),
            **check,
        },
    )


# ---------------------------------------------------------------------------------------
# parent
# ---------------------------------------------------------------------------------------
def make_events(n: int, seed: int = 42) -> list[bytes]:
    rng = random.Random(seed)
    base = int(time.time() * 1000)
    randint = rng.randint
    return [
        b'{"ts":%d,"uuid":"%s","count":%d}'
        % (base + i, uuid.UUID(int=rng.getrandbits(128), version=4).hex.encode(), randint(0, 1000))
        for i in range(n)
    ]


DISTURBED_SHARE = 0.10  # other processes used > 10 % of one core during the drain


def disturbed(r: dict) -> bool:
    """Whether something else on the machine competed noticeably with this run's drain."""
    return r.get("other_cpu_s_during_drain", 0.0) > DISTURBED_SHARE * r["drain_s"]


def median_run(runs: list[dict]) -> dict | None:
    """The run with the median rows/s (the lower middle one for an even count), among the
    undisturbed runs if there are any."""
    if not runs:
        return None
    calm = [r for r in runs if not disturbed(r)] or runs
    return sorted(calm, key=lambda r: r["rows_per_s"])[(len(calm) - 1) // 2]


def other_load(r: dict) -> str:
    return f"other load {r.get('other_cpu_s_during_drain')} CPU-s"


def derive(r: dict, n: int) -> dict:
    r["rows_per_s"] = round(n / r["drain_s"], 1)
    r["cpu_s_per_million_rows"] = round(r["drain_cpu_s"] * 1e6 / n, 3)
    r["disturbed"] = disturbed(r)
    return r


def machine() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import confluent_kafka
    import deltalake
    import pyarrow
    import pyspark

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / GIB, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "deltalake": deltalake.__version__,
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
    }


def print_table(n: int, sp: dict | None, bl: dict | None, produce: dict) -> None:
    print()
    print(
        f"events: {n:,}  (produced in {produce['seconds']:.1f} s, "
        f"{produce['bytes'] / MIB:.1f} MiB of JSON)"
    )
    cols = [("sparkpipes", sp), ("baseline", bl)]
    rows = [
        ("cores", lambda r: f"{r['cores']}"),
        ("session start-up s", lambda r: f"{r['session_startup_s']:.2f}"),
        ("drain wall s", lambda r: f"{r['drain_s']:.2f}"),
        ("rows/s", lambda r: f"{r['rows_per_s']:,.0f}"),
        ("CPU-s per 1M rows", lambda r: f"{r['cpu_s_per_million_rows']:.2f}"),
        ("peak RSS MiB", lambda r: f"{r['peak_rss_bytes'] / MIB:,.0f}"),
        ("peak RSS in drain MiB", lambda r: f"{r['peak_rss_drain_bytes'] / MIB:,.0f}"),
        ("peak PSS (~1 s) MiB", lambda r: f"{r['peak_pss_bytes'] / MIB:,.0f}"),
        ("verify read-back MiB", lambda r: f"{r['peak_rss_verify_bytes'] / MIB:,.0f}"),
        (
            "broker CPU-s (drain)",
            lambda r: f"{r.get('broker_cpu_s_during_drain', float('nan')):.2f}",
        ),
        ("other CPU-s (drain)", lambda r: f"{r.get('other_cpu_s_during_drain', float('nan')):.2f}"),
        ("disturbed by others", lambda r: "yes" if r["disturbed"] else "no"),
        ("rows / distinct uuid", lambda r: f"{r['rows']:,} / {r['distinct_uuid']:,}"),
        ("exactly once", lambda r: "yes" if r["exactly_once"] else "NO"),
    ]
    print(f"{'':24}" + "".join(f"{name:>22}" for name, _ in cols))
    for label, fmt in rows:
        print(f"{label:24}" + "".join(f"{(fmt(r) if r else '-'):>22}" for _, r in cols))
    if sp and bl:
        print(f"\nratio sparkpipes/baseline rows/s: {sp['rows_per_s'] / bl['rows_per_s']:.2f}x")
    if sp:
        for b in sp["batches"]:
            parts = ", ".join(
                f"p{p['partition']}: {p['rows']:,} rows {p['seconds']:.2f}s "
                f"(CPU {p.get('cpu_seconds', 0):.2f}s)"
                for p in b["partitions"]
            )
            print(
                f"  sparkpipes batch {b['batch_id']} {b['state']}: {b['rows']:,} rows "
                f"in {b['seconds']:.2f}s  [{parts}]"
            )
        print(f"  sparkpipes drain CPU-s by process: {sp['drain_cpu_s_by_process']}")
        peak = {
            k: (f"{v / MIB:,.0f} MiB" if isinstance(v, int) else v)
            for k, v in sp["peak_rss_breakdown_bytes"].items()
        }
        print(f"  sparkpipes peak RSS by process: {peak}")
    if bl:
        print(
            f"  baseline: consume {bl['consume_s']:.2f}s ({bl['consume_calls']} calls), "
            f"parse {bl['parse_s']:.2f}s, write {bl['write_s']:.2f}s, "
            f"{bl['delta_files']} files, app txn version {bl['app_transaction_version']}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N] for sparkpipes")
    ap.add_argument("--master", default=None, help="sparkpipes on this Spark master instead")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each engine this many times (alternating); report the median",
    )
    ap.add_argument("--only", choices=["sparkpipes", "baseline"], default=None)
    ap.add_argument("--chunk", type=int, default=50_000, help="baseline: records per parse")
    ap.add_argument(
        "--write-rows", type=int, default=250_000, help="baseline: rows per write_deltalake commit"
    )
    ap.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--kafka-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="sparkpipes pipeline config={...} (Kafka client options)",
    )
    ap.add_argument(
        "--baseline-kafka-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="baseline consumer options on top of sparkpipes' PARTITION_CONSUMER_DEFAULTS",
    )
    ap.add_argument("--pipeline-opt", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--variable", action="append", default=[], metavar="NAME=VALUE", help="SET GLOBAL"
    )
    ap.add_argument(
        "--output",
        default=None,
        help="default bench/results/latest.json; latest-variant.json when any of "
        "--spark-conf, --kafka-conf, --baseline-kafka-conf, --pipeline-opt, --variable is given",
    )
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--child", choices=["sparkpipes", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child == "sparkpipes":
        return child_sparkpipes(args)
    if args.child == "baseline":
        return child_baseline(args)

    from sparkpipes.testing import EmbeddedBroker

    n = args.events
    workdir = tempfile.mkdtemp(prefix="sparkpipes-bench-")
    print(f"work dir {workdir}")
    t = time.perf_counter()
    events = make_events(n)
    build_s = time.perf_counter() - t
    nbytes = sum(len(e) for e in events)
    with EmbeddedBroker() as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        t = time.perf_counter()
        produced = broker.produce(TOPIC, events, partitions=PARTITIONS)
        produce = {
            "events": produced,
            "bytes": nbytes,
            "seconds": round(time.perf_counter() - t, 3),
            "build_payloads_s": round(build_s, 3),
        }
        del events
        print(
            f"produced {produced:,} events ({nbytes / MIB:.1f} MiB) in {produce['seconds']:.1f} s"
        )
        bpid = broker._proc.pid if broker._proc else None
        sp_runs: list[dict] = []
        bl_runs: list[dict] = []
        for i in range(args.repeat):
            rdir = os.path.join(workdir, f"run{i + 1}")
            os.makedirs(rdir)
            tag = f" (run {i + 1}/{args.repeat})" if args.repeat > 1 else ""
            if args.only in (None, "sparkpipes"):
                print(f"running sparkpipes{tag} …", flush=True)
                r = derive(run_child("sparkpipes", args, broker.bootstrap, rdir, bpid), n)
                sp_runs.append(r)
                print(f"  {r['rows_per_s']:,.0f} rows/s, {other_load(r)}")
            if args.only in (None, "baseline"):
                print(f"running baseline{tag} …", flush=True)
                r = derive(run_child("baseline", args, broker.bootstrap, rdir, bpid), n)
                bl_runs.append(r)
                print(f"  {r['rows_per_s']:,.0f} rows/s, {other_load(r)}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)

    sp, bl = median_run(sp_runs), median_run(bl_runs)
    # run i of each engine ran back to back, so their ratio is the least affected by the
    # machine's speed drifting over minutes
    paired = [round(a["rows_per_s"] / b["rows_per_s"], 3) for a, b in zip(sp_runs, bl_runs)]
    print_table(n, sp, bl, produce)
    if args.repeat > 1:
        print(
            "\nall runs (rows/s | CPU-s per 1M | peak RSS MiB | other CPU-s during drain); "
            "the headline is the median of the undisturbed ones:"
        )
        for name, runs in (("sparkpipes", sp_runs), ("baseline", bl_runs)):
            for i, r in enumerate(runs, 1):
                mark = "  DISTURBED" if r["disturbed"] else ""
                head = "  <- headline" if r is sp or r is bl else ""
                print(
                    f"  {name:10} run {i}: {r['rows_per_s']:>10,.0f} | "
                    f"{r['cpu_s_per_million_rows']:6.2f} | {r['peak_rss_bytes'] / MIB:6,.0f} | "
                    f"{r.get('other_cpu_s_during_drain')}{mark}{head}"
                )
        if paired:
            print(
                f"  ratio of each pair (run i of both): {', '.join(f'{x:.2f}x' for x in paired)}"
                f"; median {statistics.median(paired):.2f}x"
            )
    out = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "events": n,
        "repeat": args.repeat,
        "headline": "median run by rows/s among runs not disturbed by other load"
        if args.repeat > 1
        else "single run",
        "machine": machine(),
        "produce": produce,
        "sparkpipes": sp,
        "baseline": bl,
        "ratio_rows_per_s": round(sp["rows_per_s"] / bl["rows_per_s"], 3) if sp and bl else None,
        "paired_ratios": paired,
        "paired_ratio_median": statistics.median(paired) if paired else None,
        "targets": {
            "ratio_at_least": 1.0,
            "peak_memory_below_bytes": 2 * GIB,
            "ratio_met": bool(sp and bl and sp["rows_per_s"] >= bl["rows_per_s"]),
            "memory_met": bool(sp and max(r["peak_rss_bytes"] for r in sp_runs) < 2 * GIB),
        },
        "runs": {"sparkpipes": sp_runs, "baseline": bl_runs},
    }
    if args.output is None:
        variant = (
            args.spark_conf
            or args.kafka_conf
            or args.baseline_kafka_conf
            or args.pipeline_opt
            or args.variable
        )
        name = "latest-variant.json" if variant else "latest.json"
        args.output = os.path.join(HERE, "results", name)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwrote {args.output}")
    ok = all(r["exactly_once"] for r in sp_runs + bl_runs)
    if not ok:
        raise SystemExit("exactly-once check FAILED")


if __name__ == "__main__":
    main()

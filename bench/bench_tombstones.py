#!/usr/bin/env python
"""What a week of tombstones costs a table: its commits, checkpoints, loads and vacuum.

    .venv/bin/python bench/bench_tombstones.py                       # 700,000 tombstones
    .venv/bin/python bench/bench_tombstones.py --tombstones 100000   # shorter

Compaction replaces small files, and every replaced file stays a ``remove`` action (a
tombstone) in each checkpoint for the table's ``delta.deletedFileRetentionDuration`` (a
week by default, as long as vacuum's default retention, ``table_vacuum_retain_hours``,
which judges a replaced file's age by its tombstone). At the soak's rate (5,000 events/s:
about a commit a second, about one replaced file per commit) a week is ~700,000
tombstones: the steady state of a table after its first week, rewritten into every
checkpoint.

Three tables with the same live files and the same trimmed log, through the Delta sink as
a pipeline drives it:

* ``week``: N tombstones inside the retention (the steady state);
* ``expired``: N tombstones older than the retention (what a checkpoint may drop);
* ``none``: no tombstones (the peer).

Measured on each: ``commits`` pipeline batch commits (one small file each, the sink's own
commit with its app transaction, which checkpoints when ``sinks.checkpoints`` says so: the
mean carries the checkpoints' share, the max is a checkpointing commit); writing a
checkpoint alone; opening the table (``DeltaSink.committed`` from a new sink: what a
restarted pipeline asks first; its time, and in a new process the RSS the open table
holds); the housekeeper's vacuum listing (dry run). Tombstones are written straight into
the log as one commit of ``remove`` actions (as compaction's commits would have left them,
without a week of compactions), checkpointed, and the commits up to it deleted (as the log
trim would have); they name files that no longer exist, as after vacuum.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from sparkpipes.sinks.base import BatchCommit
from sparkpipes.sinks.delta.sink import DeltaSink, last_checkpoint

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])
HOUR_MS = 3600 * 1000
WEEK_MS = 168 * HOUR_MS


def write_tombstones(sink: DeltaSink, n: int, age_ms: int) -> int:
    """Append one commit of ``n`` remove actions, each ``age_ms`` old, to the log; its
    version."""
    from deltalake import DeltaTable

    version = DeltaTable(sink.uri).version() + 1
    deleted = int(time.time() * 1000) - age_ms
    path = os.path.join(sink.uri, "_delta_log", f"{version:020d}.json")
    with open(path + ".tmp", "w") as out:
        info = {"timestamp": deleted, "operation": "OPTIMIZE", "operationParameters": {}}
        out.write(json.dumps({"commitInfo": info}) + "\n")
        for i in range(n):
            remove = {
                "path": f"part-c{i:08d}-0c1e2f3a4b5c6d7e8f90a1b2c3d4e5f6.snappy.parquet",
                "deletionTimestamp": deleted,
                "dataChange": False,
                "extendedFileMetadata": True,
                "partitionValues": {},
                "size": 14_000,
            }
            out.write(json.dumps({"remove": remove}, separators=(",", ":")) + "\n")
    os.rename(path + ".tmp", path)
    return version


def trim(uri: str, upto: int) -> None:
    """Checkpoint the table and delete its commits up to ``upto``, as the housekeeper's
    log trim leaves a week-old table: the removes in the checkpoint, only recent small
    commits after it."""
    from deltalake import DeltaTable

    DeltaTable(uri).create_checkpoint()
    for v in range(upto + 1):
        os.remove(os.path.join(uri, "_delta_log", f"{v:020d}.json"))


def batch_file(sink: DeltaSink, batch: int, rows: int):
    start = batch * rows
    table = pa.table(
        {"id": pa.array(range(start, start + rows), pa.int64()), "payload": ["x" * 40] * rows},
        schema=SCHEMA,
    )
    return sink.write_file(table, f"part-b{batch:08d}")


def opened_rss(uri: str, kind: str, app: str) -> float:
    """MiB a new process's RSS grows by when it opens the table and holds it, as a
    restarted pipeline's driver does."""
    code = (
        "import gc, sys, psutil\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "from bench_tombstones import SCHEMA, DeltaSink\n"
        "import deltalake\n"
        "me = psutil.Process(); before = me.memory_info().rss\n"
        f"s = DeltaSink({uri!r}, SCHEMA, {kind!r}); s.committed({app!r}); gc.collect()\n"
        "print((me.memory_info().rss - before) / 2**20)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def measure(root: str, kind: str, n: int, commits: int, rows: int) -> dict:
    uri = os.path.join(root, kind)
    sink = DeltaSink(uri, SCHEMA, kind)
    sink.create({"delta.checkpointInterval": "100"})
    app = f"bench-{kind}"
    batch = 0

    def commit() -> float:
        nonlocal batch
        batch += 1
        staged = [batch_file(sink, batch, rows)]
        t = time.perf_counter()
        sink.commit(staged, BatchCommit(app, "p", batch, {"0": batch * rows}))
        return time.perf_counter() - t

    for _ in range(10):
        commit()
    if kind != "none":
        v = write_tombstones(sink, n, HOUR_MS if kind == "week" else WEEK_MS + 24 * HOUR_MS)
    else:
        v = write_tombstones(sink, 0, HOUR_MS)  # same history length, nothing in it
    sink = DeltaSink(uri, SCHEMA, kind)
    commit()
    trim(uri, v)
    sink = DeltaSink(uri, SCHEMA, kind)
    logs = os.path.join(uri, "_delta_log")
    before = {n for n in os.listdir(logs) if n.endswith(".checkpoint.parquet")}
    timings = [commit() for _ in range(commits)]
    written = {n for n in os.listdir(logs) if n.endswith(".checkpoint.parquet")} - before

    from deltalake import DeltaTable

    dt = DeltaTable(uri)
    checkpoints = []
    for _ in range(3):
        t = time.perf_counter()
        dt.create_checkpoint()
        checkpoints.append(time.perf_counter() - t)
    cp = os.path.join(logs, f"{last_checkpoint(uri):020d}.checkpoint.parquet")
    cp_rows = pq.read_metadata(cp).num_rows

    opens = []
    for _ in range(5):
        t = time.perf_counter()
        DeltaSink(uri, SCHEMA, kind).committed(app)
        opens.append(time.perf_counter() - t)
    open_rss = opened_rss(uri, kind, app)

    vacuums = []
    for _ in range(3):
        t = time.perf_counter()
        DeltaTable(uri).vacuum(
            retention_hours=168, dry_run=True, enforce_retention_duration=False, full=True
        )
        vacuums.append(time.perf_counter() - t)

    return {
        "kind": kind,
        "commit_median_s": statistics.median(timings),
        "commit_mean_s": statistics.fmean(timings),
        "checkpointing_commit_s": max(timings),
        "checkpoints_written": len(written),
        "checkpoint_s": statistics.median(checkpoints),
        "checkpoint_rows": cp_rows,
        "checkpoint_mb": os.path.getsize(cp) / 1e6,
        "open_s": statistics.median(opens),
        "open_rss_mib": open_rss,
        "vacuum_dry_run_s": statistics.median(vacuums),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tombstones", type=int, default=700_000)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    root = tempfile.mkdtemp(prefix="bench-tombstones-")
    try:
        results = [
            measure(root, k, a.tombstones, a.commits, a.rows) for k in ("none", "week", "expired")
        ]
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)

    cols = [
        ("commit_median_s", "commit p50 ms", 1000),
        ("commit_mean_s", "commit mean ms", 1000),
        ("checkpointing_commit_s", "commit max ms", 1000),
        ("checkpoints_written", "checkpoints", 1),
        ("checkpoint_s", "checkpoint ms", 1000),
        ("checkpoint_rows", "ckpt rows", 1),
        ("checkpoint_mb", "ckpt MB", 1),
        ("open_s", "open ms", 1000),
        ("open_rss_mib", "open +RSS MiB", 1),
        ("vacuum_dry_run_s", "vacuum ms", 1000),
    ]
    print(f"{a.tombstones:,} tombstones, {a.commits} commits of {a.rows} rows after them")
    print(f"{'':<16}" + "".join(f"{k:>10}" for k in ("none", "week", "expired", "week/none")))
    by = {r["kind"]: r for r in results}
    for key, label, scale in cols:
        vals = [by[k][key] * scale for k in ("none", "week", "expired")]
        ratio = vals[1] / vals[0] if vals[0] else float("nan")
        print(f"{label:<16}" + "".join(f"{v:>10.1f}" for v in vals) + f"{ratio:>9.1f}x")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "tombstones.json"), "w") as f:
        json.dump({"tombstones": a.tombstones, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Object-store pipelines → Delta: sparkpipes vs. Spark's native file path, and the skewed
case of seed 004 with and without splitting.

    .venv/bin/python bench/bench_objects.py [--mb 500] [--objects 200] [--skip-s3]

1. Writes ``--mb`` MB of NDJSON events in ``--objects`` objects to a local directory
   (``{"id", "ts", "user", "amount", "payload"}``, about 200 bytes a line).
2. **sparkpipes, FS**: ``LOAD DATA FS '<dir>/*.json' INTO TABLE`` and batches until idle,
   exactly once (each object's offsets committed with its rows). Spark is started and
   warmed up first; start-up is not timed.
3. **Spark native, same session, same files**:
   ``spark.read.schema(s).json(dir).write.parquet(out)`` — same schema, no exactly-once
   bookkeeping, no Delta log. Ratio = native seconds / sparkpipes seconds (≥ 1.0 means
   sparkpipes is at least as fast).
4. **sparkpipes, S3**: the same objects uploaded to a moto S3 server on 127.0.0.1
   (in-process HTTP, so this measures the S3 client path, not a network); MB/s.
5. **Skewed** (seed 004's case): one 100 MB object among 100 small ones (10 KB), loaded
   with packing (ranges + LPT) and with ``"packing": false`` (one object per task, as
   SingleStore does). Idle = 1 - (sum of task seconds) / (task slots x batch seconds),
   over all batches with data.

Results: a table on stdout and ``bench/results/objects-latest.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

SCHEMA = "id BIGINT, ts BIGINT, user STRING, amount DOUBLE, payload STRING"


def write_objects(d: Path, mb: int, objects: int, first_id: int = 0) -> tuple[int, int]:
    """``objects`` NDJSON files of about ``mb / objects`` MB each: (rows, bytes)."""
    d.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    per = (mb << 20) // objects
    rows = nbytes = 0
    i = first_id
    pad = "p" * 120
    for k in range(objects):
        lines = []
        size = 0
        while size < per:
            line = (
                f'{{"id": {i}, "ts": {1_700_000_000_000 + i}, "user": "u{rng.randrange(10_000)}",'
                f' "amount": {rng.random() * 100:.3f}, "payload": "{pad}"}}\n'
            )
            lines.append(line)
            size += len(line)
            i += 1
        data = "".join(lines).encode()
        (d / f"obj-{k:05d}.json").write_bytes(data)
        rows += len(lines)
        nbytes += len(data)
    return rows, nbytes


def run_pipeline(eng, name: str, table: str, sql_source: str) -> tuple[float, list[dict]]:
    from sparkpipes.frontends.singlestore.executor import SqlSession

    sql = SqlSession(eng)
    sql.execute(f"CREATE TABLE {table} ({SCHEMA})")
    sql.execute(f"CREATE PIPELINE {name} AS {sql_source} INTO TABLE {table} FORMAT JSON")
    t = time.perf_counter()
    eng.run_batches(name, 100_000, until_idle=True)
    secs = time.perf_counter() - t
    return secs, [b for b in eng.batches(name) if b["rows"]]


def idle_fraction(batches: list[dict]) -> float:
    busy = slots = 0.0
    for b in batches:
        tasks: dict[int, float] = {}
        for p in b["partitions"]:
            tasks[p.get("task", 0)] = p.get("seconds") or 0.0
        wall = max(tasks.values(), default=0.0)
        busy += sum(tasks.values())
        slots += wall * len(tasks)
    return 1 - busy / slots if slots else 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--skip-s3", action="store_true")
    args = ap.parse_args()

    from sparkpipes import Engine

    work = Path(tempfile.mkdtemp(prefix="sp-bench-objects-"))
    out: dict = {"mb": args.mb, "objects": args.objects}
    try:
        rows, nbytes = write_objects(work / "data", args.mb, args.objects)
        mb = nbytes / 1e6
        eng = Engine(str(work / "wh"), spark_master="local[2]")
        eng.warm_up()

        secs, _ = run_pipeline(eng, "fs", "t_fs", f"LOAD DATA FS '{work / 'data'}/*.json'")
        n = eng.table_arrow("t_fs").num_rows
        assert n == rows, (n, rows)
        out["sparkpipes_fs_s"] = secs

        spark = eng.spark
        t = time.perf_counter()
        spark.read.schema(SCHEMA).json(str(work / "data")).write.parquet(str(work / "native"))
        out["spark_native_s"] = time.perf_counter() - t
        out["ratio_vs_native"] = out["spark_native_s"] / secs

        if not args.skip_s3:
            from sparkpipes.testing import MotoServer

            with MotoServer() as s3:
                s3.create_bucket("bench")
                for f in sorted((work / "data").iterdir()):
                    s3.put("bench", f"in/{f.name}", f.read_bytes())
                config = json.dumps({"endpoint_url": s3.endpoint_url, "region": "us-east-1"})
                creds = json.dumps(
                    {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
                )
                secs3, _ = run_pipeline(
                    eng,
                    "s3p",
                    "t_s3",
                    f"LOAD DATA S3 'bench/in/' CONFIG '{config}' CREDENTIALS '{creds}'",
                )
                assert eng.table_arrow("t_s3").num_rows == rows
                out["sparkpipes_s3_s"] = secs3
                out["s3_mb_per_s"] = mb / secs3

        skew = work / "skew"
        big_rows, _ = write_objects(skew / "big", 100, 1, first_id=10**9)
        small_rows, _ = write_objects(skew / "small", 1, 100, first_id=2 * 10**9)
        for f in (skew / "small").iterdir():
            f.rename(skew / "big" / f"s-{f.name}")
        for packing in (True, False):
            name = "skew_packed" if packing else "skew_seed004"
            cfg = "" if packing else " CONFIG '{\"packing\": false}'"
            secs_k, batches = run_pipeline(
                eng, name, f"t_{name}", f"LOAD DATA FS '{skew / 'big'}/*.json'{cfg}"
            )
            assert eng.table_arrow(f"t_{name}").num_rows == big_rows + small_rows
            out[f"{name}_s"] = secs_k
            out[f"{name}_idle"] = idle_fraction(batches)
            out[f"{name}_batches"] = len(batches)
        eng.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"{'':28}{'seconds':>10}{'MB/s':>10}")
    print(
        f"{'sparkpipes FS':28}{out['sparkpipes_fs_s']:>10.1f}{mb / out['sparkpipes_fs_s']:>10.1f}"
    )
    print(
        f"{'Spark native FS->Parquet':28}{out['spark_native_s']:>10.1f}"
        f"{mb / out['spark_native_s']:>10.1f}"
    )
    print(f"ratio (native s / sparkpipes s): {out['ratio_vs_native']:.2f}x")
    if "sparkpipes_s3_s" in out:
        print(
            f"{'sparkpipes S3 (moto)':28}{out['sparkpipes_s3_s']:>10.1f}{out['s3_mb_per_s']:>10.1f}"
        )
    for name in ("skew_packed", "skew_seed004"):
        print(
            f"skewed, {'ranges+packing' if name == 'skew_packed' else 'one object per task'}: "
            f"{out[name + '_s']:.1f} s, {out[name + '_batches']} batches, "
            f"idle {out[name + '_idle']:.0%}"
        )
    results = Path(__file__).with_name("results")
    results.mkdir(exist_ok=True)
    (results / "objects-latest.json").write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

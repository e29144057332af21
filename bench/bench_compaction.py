#!/usr/bin/env python
"""Background compaction of a steady stream of batch files: tiers vs packing to the target.

    .venv/bin/python bench/bench_compaction.py                  # 1,200 batches
    .venv/bin/python bench/bench_compaction.py --batches 300    # shorter

One Delta table per policy gets the same ``--batches`` batches of ``--files`` files each
(``--rows`` rows of two random int64 columns per file, ~14 KiB: what the soak's pipeline
commits about once a second at 5,000 events/s from 4 partitions), one commit per batch,
and a housekeeper round every ``--round-every`` batches (its 10 s at that rate;
``maintenance.compact`` with the housekeeper's policy: 16 small files, a 128 MiB target).
The peer packs every small file to the target whenever 16 small files piled up (what the
housekeeper did before tiers); sparkpipes packs by size tier (``CompactionPolicy``).

Printed per policy: bytes compaction wrote per byte loaded (each rewritten copy stays on
disk until vacuum's retention, a week by default), seconds spent compacting, the
compactions, and the files at the end; then the peer/sparkpipes ratios. Rows are checked
(each id once) in both tables.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time

import pyarrow as pa
from deltalake import DeltaTable

from sparkpipes.sinks import DeltaSink
from sparkpipes.sinks.delta import maintenance
from sparkpipes.sinks.delta.maintenance import CompactionPolicy, compact

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def run(root: str, a: argparse.Namespace, tiered: bool) -> dict[str, float]:
    crowded = maintenance._crowded_tier
    if not tiered:  # the peer: every small file packed to the target
        maintenance._crowded_tier = lambda small, target, files: (
            target if len(small) >= files else None
        )
    try:
        sink = DeltaSink(root, SCHEMA, "t")
        sink.create()
        policy = CompactionPolicy(target_bytes=128 << 20, files=16)
        rng = random.Random(7)
        loaded = written = compactions = 0
        spent = 0.0
        for b in range(a.batches):
            files = []
            for p in range(a.files):
                first = (b * a.files + p) * a.rows
                ids = range(first, first + a.rows)
                data = pa.table({"id": ids, "v": [rng.getrandbits(62) for _ in ids]}, schema=SCHEMA)
                files.append(sink.write_file(data, f"part-b{b:06d}-p{p}"))
            sink.commit_files(files)
            loaded += sum(f.size for f in files)
            if b % a.round_every != a.round_every - 1:
                continue
            started = time.perf_counter()
            metrics = compact(root, "t", policy)
            spent += time.perf_counter() - started
            if metrics:
                compactions += 1
                written += json.loads(metrics["filesAdded"])["totalSize"]
        dt = DeltaTable(root)
        got = dt.to_pyarrow_table(columns=["id"]).column("id")
        assert len(got) == len(set(got.to_pylist())) == a.batches * a.files * a.rows, "rows lost"
        return {
            "amplification": written / loaded,
            "seconds": spent,
            "compactions": compactions,
            "files": len(dt.file_uris()),
            "loaded_mib": loaded / (1 << 20),
        }
    finally:
        maintenance._crowded_tier = crowded


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=1200)
    ap.add_argument("--files", type=int, default=4, help="files per batch")
    ap.add_argument("--rows", type=int, default=1000, help="rows per file")
    ap.add_argument("--round-every", type=int, default=12, help="batches between rounds")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-compaction-")
    try:
        out = {}
        for name, tiered in (("peer (pack to target)", False), ("sparkpipes (tiers)", True)):
            r = run(os.path.join(work, name.split()[0]), a, tiered)
            out[name] = r
            print(
                f"{name:<24} loaded {r['loaded_mib']:.0f} MiB; compaction wrote "
                f"{r['amplification']:.1f}x that in {r['compactions']} commits, "
                f"{r['seconds']:.1f} s; {r['files']} files at the end",
                flush=True,
            )
        peer, ours = out.values()
        more = peer["amplification"] / ours["amplification"]
        slower = peer["seconds"] / ours["seconds"]
        print(f"ratio peer/sparkpipes: bytes written {more:.1f}x, compaction time {slower:.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

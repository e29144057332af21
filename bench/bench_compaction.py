#!/usr/bin/env python
"""Background compaction of a steady stream of batch files: tiers vs packing to the target.

    .venv/bin/python bench/bench_compaction.py                  # 1,000 batches of ~80 KiB
    .venv/bin/python bench/bench_compaction.py --batches 300    # shorter

One Delta table per policy gets the same ``--batches`` batch files (``--rows`` rows of two
random int64 columns each, ~80 KiB, what the soak's pipeline commits about once a second
at 5,000 events/s), one commit each, and a housekeeper round after each commit
(``maintenance.compact`` with the housekeeper's policy: 16 small files, a 128 MiB target).
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

from sparkpipes.engine import maintenance
from sparkpipes.engine.maintenance import CompactionPolicy, compact
from sparkpipes.sinks import DeltaSink

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def run(root: str, batches: int, rows: int, tiered: bool) -> dict[str, float]:
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
        for b in range(batches):
            ids = range(b * rows, (b + 1) * rows)
            data = pa.table({"id": ids, "v": [rng.getrandbits(62) for _ in ids]}, schema=SCHEMA)
            f = sink.write_file(data, f"part-b{b:06d}")
            sink.commit_files([f])
            loaded += f.size
            started = time.perf_counter()
            metrics = compact(root, "t", policy)
            spent += time.perf_counter() - started
            if metrics:
                compactions += 1
                written += json.loads(metrics["filesAdded"])["totalSize"]
        dt = DeltaTable(root)
        got = dt.to_pyarrow_table(columns=["id"]).column("id")
        assert len(got) == len(set(got.to_pylist())) == batches * rows, "rows lost or doubled"
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
    ap.add_argument("--batches", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=5000)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-compaction-")
    try:
        out = {}
        for name, tiered in (("peer (pack to target)", False), ("sparkpipes (tiers)", True)):
            r = run(os.path.join(work, name.split()[0]), a.batches, a.rows, tiered)
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

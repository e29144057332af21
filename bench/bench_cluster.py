"""The cluster path's cost: the 1M-event Kafka → Delta drain of ``bench_kafka_delta.py`` on
a Spark standalone cluster on this machine (``sparkpipes cluster``: 2 workers x 1 core)
against ``local[2]``, alternating in the same run, each in its own engine process.

Both read the same topic (4 partitions) from the embedded broker into a fresh local
warehouse, with the same pipeline options (one batch per drain where it fits, no batch
interval), after the engine's warm-up. Reported: drain seconds, rows/s, the median of
each, and the cluster's overhead (its drain time over local[2]'s, minus one). CPU is not
compared: a cluster's executors are not children of the engine process.

    .venv/bin/python bench/bench_cluster.py --repeat 3
    .venv/bin/python bench/bench_cluster.py --events 200000      # smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_kafka_delta as kd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    from sparkpipes.engine.spark import cluster
    from sparkpipes.testing import EmbeddedBroker

    workdir = tempfile.mkdtemp(prefix="sparkpipes-bench-cluster-")
    events = kd.make_events(args.events)
    runs: dict[str, list[dict]] = {"local[2]": [], "cluster": []}
    with EmbeddedBroker() as broker:
        broker.create_topic(kd.TOPIC, kd.PARTITIONS)
        broker.produce(kd.TOPIC, events, partitions=kd.PARTITIONS)
        del events
        master = cluster.start(os.path.join(workdir, "cluster"), workers=args.workers, memory="2g")
        try:
            for i in range(args.repeat):
                for mode, url in (("local[2]", None), ("cluster", master)):
                    child = argparse.Namespace(
                        events=args.events,
                        cores=2,
                        master=url,
                        chunk=50_000,
                        write_rows=250_000,
                        spark_conf=["spark.executor.memory=1g"] if url else [],
                        kafka_conf=[],
                        baseline_kafka_conf=[],
                        pipeline_opt=[],
                        verbose=False,
                    )
                    rdir = os.path.join(workdir, f"{mode}-{i}")
                    os.makedirs(rdir)
                    bpid = broker._proc.pid if broker._proc else None
                    r = kd.run_child("sparkpipes", child, broker.bootstrap, rdir, bpid)
                    assert r["exactly_once"], f"{mode}: not exactly once"
                    runs[mode].append(r)
                    print(
                        f"run {i + 1} {mode:>8}: drain {r['drain_s']:.2f} s, "
                        f"{args.events / r['drain_s']:,.0f} rows/s, start-up "
                        f"{r['session_startup_s']:.1f} s",
                        flush=True,
                    )
        finally:
            cluster.stop(os.path.join(workdir, "cluster"))
    shutil.rmtree(workdir, ignore_errors=True)
    med = {m: statistics.median(r["drain_s"] for r in rs) for m, rs in runs.items()}
    overhead = med["cluster"] / med["local[2]"] - 1
    print(
        f"median drain: local[2] {med['local[2]']:.2f} s ({args.events / med['local[2]']:,.0f}"
        f" rows/s), cluster {med['cluster']:.2f} s ({args.events / med['cluster']:,.0f} rows/s)"
        f": cluster overhead {overhead:+.0%}"
    )
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "cluster.json"), "w") as f:
        json.dump({"median_drain_s": med, "overhead": overhead, "events": args.events}, f)


if __name__ == "__main__":
    main()

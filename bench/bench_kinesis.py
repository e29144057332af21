#!/usr/bin/env python
"""Kinesis → Delta: sparkpipes' Kinesis connector vs. a hand-written boto3 loop, in one run.

    .venv/bin/python bench/bench_kinesis.py [--records 40000] [--shards 4] [--repeat 3]

1. A moto server (Kinesis in server mode on 127.0.0.1) holds a stream of ``--shards``
   shards with ``--records`` JSON events (about 150 bytes each).
2. **sparkpipes**: ``CREATE INFERRED PIPELINE … LOAD DATA KAFKACONNECT`` with seed 000's
   Kinesis CONFIG (``tasks.max`` = shards) and batches until idle: every record lands in
   the static ``(topic, id, record)`` table exactly once, its shard offsets committed
   with it. Spark is started and warmed up first; start-up is not timed.
3. **Baseline**: per shard, ``get_shard_iterator(TRIM_HORIZON)`` and ``get_records`` until
   the tip, the same three columns built in Python, one ``write_deltalake`` append (no
   offsets, no exactly-once bookkeeping), one shard after another as such a loop is
   usually written.

Ratio = sparkpipes records/s ÷ baseline records/s (target ≥ 1.0). Both read from the
same moto process, which is single-threaded Python on the same two cores, so it bounds
both figures. Paired medians over ``--repeat`` runs, each on a fresh stream; results on
stdout and in ``bench/results/kinesis-latest.json``.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def fill(moto, stream: str, shards: int, records: int) -> None:
    moto.create_stream(stream, shards)
    pad = "x" * 80
    moto.put_records(
        stream,
        [
            (f"user-{i % 997}", json.dumps({"n": i, "status": "active", "pad": pad}).encode())
            for i in range(records)
        ],
    )


def run_sparkpipes(moto, stream: str, shards: int, wh: Path) -> tuple[float, int]:
    from sparkpipes.engine import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession

    eng = Engine(wh)
    try:
        eng.warm_up()
        sess = SqlSession(eng)
        sess.execute('SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"')
        cfg = json.dumps(moto.kinesis_config(stream, **{"tasks.max": shards}))
        sess.execute(
            f"CREATE INFERRED PIPELINE kb AS LOAD DATA KAFKACONNECT 'kafka-connector' "
            f"CONFIG '{cfg}' CREDENTIALS '{{}}' SKIP SOURCE CHECK FORMAT AVRO"
        )
        t = time.perf_counter()
        eng.run_batches("kb", 1000, until_idle=True)
        seconds = time.perf_counter() - t
        rows = eng.table_arrow("kb").num_rows
        return seconds, rows
    finally:
        eng.close()


def run_baseline(moto, stream: str, out: Path) -> tuple[float, int]:
    import pyarrow as pa
    from deltalake import write_deltalake

    t = time.perf_counter()
    k = moto.kinesis()
    topics, ids, recs = [], [], []
    for shard in k.list_shards(StreamName=stream)["Shards"]:
        sid = shard["ShardId"]
        it = k.get_shard_iterator(StreamName=stream, ShardId=sid, ShardIteratorType="TRIM_HORIZON")[
            "ShardIterator"
        ]
        while it:
            resp = k.get_records(ShardIterator=it, Limit=10_000)
            it = resp.get("NextShardIterator")
            for r in resp["Records"]:
                seq = r["SequenceNumber"]
                topics.append("kinesis-topic")
                ids.append(json.dumps({"sequenceNumber": seq, "shardId": sid}))
                recs.append(
                    json.dumps(
                        {
                            "partitionKey": r["PartitionKey"],
                            "sequenceNumber": seq,
                            "shardId": sid,
                            "data": base64.b64encode(r["Data"]).decode(),
                        }
                    )
                )
            if not resp["Records"] and resp.get("MillisBehindLatest", 0) == 0:
                break
    table = pa.table({"topic": topics, "id": ids, "record": recs})
    write_deltalake(str(out), table, mode="append")
    return time.perf_counter() - t, table.num_rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=40_000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from sparkpipes.testing import MotoServer

    pairs = []
    with MotoServer() as moto:
        for i in range(args.repeat):
            tmp = Path(tempfile.mkdtemp(prefix="bench-kinesis-"))
            try:
                stream = f"bench-{i}"
                fill(moto, stream, args.shards, args.records)
                sp_s, sp_rows = run_sparkpipes(moto, stream, args.shards, tmp / "wh")
                base_s, base_rows = run_baseline(moto, stream, tmp / "baseline")
                assert sp_rows == base_rows == args.records, (sp_rows, base_rows)
                pairs.append((args.records / sp_s, args.records / base_s))
                print(
                    f"run {i + 1}: sparkpipes {sp_s:.2f} s ({args.records / sp_s:,.0f} rec/s), "
                    f"boto3 loop {base_s:.2f} s ({args.records / base_s:,.0f} rec/s), "
                    f"ratio {base_s / sp_s:.2f}x",
                    flush=True,
                )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    sp = statistics.median(p[0] for p in pairs)
    base = statistics.median(p[1] for p in pairs)
    ratios = sorted(a / b for a, b in pairs)
    result = {
        "records": args.records,
        "shards": args.shards,
        "sparkpipes_records_per_s": round(sp),
        "baseline_records_per_s": round(base),
        "ratio_median": round(statistics.median(ratios), 2),
        "ratios": [round(r, 2) for r in ratios],
    }
    print(json.dumps(result, indent=2))
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "kinesis-latest.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

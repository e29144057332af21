#!/usr/bin/env python
"""Kafka → PostgreSQL, exactly once: a sparkpipes sink connector vs a hand-written loop.

    .venv/bin/python bench/bench_kafka_postgres.py [--events 1000000] [--repeat 3]

1. Starts the embedded Tansu broker, creates a 4-partition topic and produces N JSON
   events ``{"ts": <epoch ms>, "uuid": <hex>, "count": <0..1000>}`` (not timed).
2. **sparkpipes** (child process): a sink connector (seed 001's config, plain JSON, the
   metadata table on) into an existing table of the local PostgreSQL; Spark started and
   warmed up first (start-up, not counted); then the drain is timed until the backlog is
   loaded, and exactly once is checked (rows == distinct uuid == N).
3. **baseline** (child process, one core): confluent-kafka consumer on the 4 partitions
   from offset 0 → ``pyarrow.json`` → CSV → psycopg2 ``COPY`` every ~200k rows, each COPY
   in one transaction with an upsert of its offsets into its own offsets table (the same
   exactly-once contract).

Each pair runs ``--repeat`` times on fresh tables; printed: rows/s of each, the ratio
(sparkpipes / baseline) per pair and the median, and CPU-seconds per million rows of each
child's process tree over its drain.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

import psutil
from bench_kafka_delta import tree_cpu  # this folder is on sys.path when run as a script

PG = "postgresql+psycopg2://postgres:postgres@127.0.0.1:5432/postgres"
DDL = "CREATE TABLE {t} (ts BIGINT, uuid TEXT, count INT)"


def emit(result: dict) -> None:
    print("@@result " + json.dumps(result), flush=True)


def pg():
    import sqlalchemy as sa

    return sa.create_engine(PG, isolation_level="AUTOCOMMIT")


def child_sparkpipes(args) -> None:
    from sparkpipes import Engine

    eng = Engine(args.workdir, spark_master="local[2]")
    eng.warm_up()
    eng.connectors.create(
        {
            "name": "bench",
            "config": {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics": args.topic,
                "tasks.max": "4",
                "bootstrap.servers": args.bootstrap,
                "connection.url": f"jdbc:postgresql://127.0.0.1:5432/postgres"
                f"?currentSchema={args.schema}",
                "connection.user": "postgres",
                "connection.password": "postgres",
                "value.converter.schemas.enable": "false",
                f"singlestore.tableName.{args.topic}": "events",
                "batch.interval.ms": "0",
            },
        }
    )
    pipeline = eng.connectors.get("bench")["pipelines"][0]
    me = psutil.Process()
    cpu0, t0 = tree_cpu(me), time.perf_counter()
    loaded = 0
    while loaded < args.events:
        (r,) = eng.run_batches(pipeline, 1)
        loaded += r.rows
    wall, cpu = time.perf_counter() - t0, tree_cpu(me) - cpu0
    eng.close()
    emit({"wall_s": wall, "cpu_s": cpu, **verify(args, "events")})


def child_baseline(args) -> None:
    import io

    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pj
    from confluent_kafka import Consumer, TopicPartition

    os.sched_setaffinity(0, {0})
    schema = pa.schema([("ts", pa.int64()), ("uuid", pa.string()), ("count", pa.int32())])
    raw = pg().raw_connection()
    with raw.cursor() as cur:
        cur.execute(f"CREATE TABLE {args.schema}.offsets (p INT PRIMARY KEY, next_offset BIGINT)")
    raw.commit()
    consumer = Consumer(
        {"bootstrap.servers": args.bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(4)])
    me = psutil.Process()
    cpu0, t0 = tree_cpu(me), time.perf_counter()
    seen, pending, ends = 0, [], {}

    def flush() -> None:
        table = pj.read_json(
            io.BytesIO(b"\n".join(pending)),
            parse_options=pj.ParseOptions(explicit_schema=schema),
        )
        buf = io.BytesIO()
        pcsv.write_csv(table, buf, pcsv.WriteOptions(include_header=False))
        buf.seek(0)
        with raw.cursor() as cur:
            cur.copy_expert(
                f"COPY {args.schema}.events_base (ts, uuid, count) FROM STDIN WITH (FORMAT csv)",
                buf,
            )
            cur.executemany(
                f"INSERT INTO {args.schema}.offsets VALUES (%s, %s) "
                "ON CONFLICT (p) DO UPDATE SET next_offset = EXCLUDED.next_offset",
                sorted(ends.items()),
            )
        raw.commit()
        pending.clear()

    while seen < args.events:
        for m in consumer.consume(10_000, 1.0):
            if m.error():
                continue
            pending.append(m.value())
            ends[m.partition()] = m.offset() + 1
            seen += 1
        if len(pending) >= 200_000 or (seen >= args.events and pending):
            flush()
    wall, cpu = time.perf_counter() - t0, tree_cpu(me) - cpu0
    consumer.close()
    raw.close()
    emit({"wall_s": wall, "cpu_s": cpu, **verify(args, "events_base")})


def verify(args, table: str) -> dict:
    import sqlalchemy as sa

    with pg().connect() as c:
        rows, distinct = c.execute(
            sa.text(f"SELECT COUNT(*), COUNT(DISTINCT uuid) FROM {args.schema}.{table}")
        ).one()
    return {"rows": rows, "exactly_once": rows == distinct == args.events}


def run(role: str, args, schema: str, workdir: str) -> dict:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        role,
        "--bootstrap",
        args.bootstrap,
        "--topic",
        args.topic,
        "--events",
        str(args.events),
        "--schema",
        schema,
        "--workdir",
        workdir,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("@@result "):
            return json.loads(line[9:])
    raise SystemExit(f"{role} failed:\n{out.stderr[-3000:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child")
    ap.add_argument("--bootstrap")
    ap.add_argument("--topic")
    ap.add_argument("--schema")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if args.child:
        (child_sparkpipes if args.child == "sparkpipes" else child_baseline)(args)
        return

    import random
    import tempfile

    import sqlalchemy as sa

    from sparkpipes.testing import EmbeddedBroker

    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        args.bootstrap, args.topic = broker.bootstrap, "events"
        broker.create_topic(args.topic, 4)
        rng = random.Random(1)
        t = time.perf_counter()
        broker.produce(
            args.topic,
            (
                json.dumps(
                    {
                        "ts": 1_700_000_000_000 + i,
                        "uuid": uuid.uuid4().hex,
                        "count": rng.randint(0, 1000),
                    }
                )
                for i in range(args.events)
            ),
            partitions=4,
        )
        print(f"produced {args.events:,} events in {time.perf_counter() - t:.1f}s")
        ratios, results = [], []
        for n in range(args.repeat):
            schema = f"bench_{uuid.uuid4().hex[:8]}"
            with pg().connect() as c:
                c.execute(sa.text(f"CREATE SCHEMA {schema}"))
                c.execute(sa.text(DDL.format(t=f"{schema}.events")))
                c.execute(sa.text(DDL.format(t=f"{schema}.events_base")))
            try:
                sp = run("sparkpipes", args, schema, os.path.join(tmp, f"wh{n}"))
                base = run("baseline", args, schema, tmp)
            finally:
                with pg().connect() as c:
                    c.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
            assert sp["exactly_once"] and base["exactly_once"], (sp, base)
            ratio = base["wall_s"] / sp["wall_s"]
            ratios.append(ratio)
            results.append((sp, base))
            print(
                f"pair {n + 1}: sparkpipes {args.events / sp['wall_s']:,.0f} rows/s "
                f"({sp['cpu_s'] * 1e6 / args.events:.1f} CPU-s/M rows), baseline "
                f"{args.events / base['wall_s']:,.0f} rows/s "
                f"({base['cpu_s'] * 1e6 / args.events:.1f} CPU-s/M rows): {ratio:.2f}x"
            )
        print(f"median ratio (sparkpipes / baseline rows/s): {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Avro (schema registry) Kafka → Delta, exactly once: a Pinot realtime table in sparkpipes
vs a hand-written confluent-kafka + fastavro + ``write_deltalake`` loop.

    .venv/bin/python bench/bench_kafka_avro.py [--events 1000000] [--repeat 3]

1. Starts the embedded Tansu broker and the stand-in schema registry
   (``sparkpipes.testing.registry``), creates a 4-partition topic and produces N events in
   Confluent's wire format, ``{"ts": long, "uuid": string, "count": int}`` (not timed).
2. **sparkpipes** (child process): seed 002's table config with
   ``KafkaConfluentSchemaRegistryAvroMessageDecoder`` added through ``engine.pinot.add``;
   Spark started and warmed up first (start-up, not counted); the drain is timed until N
   rows are loaded; exactly once is checked (rows == distinct uuid == N).
3. **baseline** (child process, one core): one consumer on the 4 partitions, each message's
   schema id looked up once in the registry (confluent-kafka's client), decoded with
   ``fastavro.schemaless_reader``, rows appended every ~250k to the Delta table with
   ``write_deltalake`` and an app transaction (the same exactly-once contract).

Printed: rows/s of each, the ratio (sparkpipes / baseline) per pair and their median, and
CPU-seconds per million rows of each child's process tree over its drain.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

import psutil
from bench_kafka_delta import tree_cpu  # this folder is on sys.path when run as a script

AVRO = {
    "type": "record",
    "name": "event",
    "fields": [
        {"name": "ts", "type": "long"},
        {"name": "uuid", "type": "string"},
        {"name": "count", "type": "int"},
    ],
}
SCHEMA = {
    "schemaName": "events",
    "dimensionFieldSpecs": [{"name": "uuid", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "count", "dataType": "INT"}],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}


def emit(result: dict) -> None:
    print("@@result " + json.dumps(result), flush=True)


def table_config(args) -> dict:
    decoder = (
        "org.apache.pinot.plugin.inputformat.avro.confluent."
        "KafkaConfluentSchemaRegistryAvroMessageDecoder"
    )
    return {
        "tableName": "events",
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "events"},
        "tableIndexConfig": {
            "streamConfigs": {
                "streamType": "kafka",
                "stream.kafka.consumer.type": "lowlevel",
                "stream.kafka.topic.name": args.topic,
                "stream.kafka.decoder.class.name": decoder,
                "stream.kafka.schema.registry.url": args.registry,
                "stream.kafka.broker.list": args.bootstrap,
                "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            }
        },
    }


def child_sparkpipes(args) -> None:
    from sparkpipes import Engine

    eng = Engine(args.workdir, spark_master="local[2]")
    eng.warm_up()
    eng.pinot.add(table_config(args), SCHEMA)
    eng.alter_pipeline("events_REALTIME", batch_interval_ms=0)
    me = psutil.Process()
    cpu0, t0 = tree_cpu(me), time.perf_counter()
    loaded = 0
    while loaded < args.events:
        (r,) = eng.run_batches("events_REALTIME", 1)
        loaded += r.rows
    wall, cpu = time.perf_counter() - t0, tree_cpu(me) - cpu0
    t = eng.table_arrow("events")
    eng.close()
    rows, distinct = t.num_rows, len(set(t.column("uuid").to_pylist()))
    emit({"wall_s": wall, "cpu_s": cpu, "exactly_once": rows == distinct == args.events})


def child_baseline(args) -> None:
    import fastavro
    import pyarrow as pa
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    os.sched_setaffinity(0, {0})
    schema = pa.schema([("uuid", pa.string()), ("count", pa.int32()), ("ts", pa.int64())])
    path = os.path.join(args.workdir, "events")
    DeltaTable.create(path, schema=schema)
    registry = SchemaRegistryClient({"url": args.registry})
    consumer = Consumer(
        {"bootstrap.servers": args.bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(4)])
    me = psutil.Process()
    cpu0, t0 = tree_cpu(me), time.perf_counter()
    writers: dict[int, object] = {}
    cols: dict[str, list] = {"uuid": [], "count": [], "ts": []}
    seen, version = 0, 0

    def flush() -> None:
        nonlocal version
        version += 1
        props = CommitProperties(app_transactions=[Transaction("bench", version)])
        write_deltalake(path, pa.table(cols, schema=schema), mode="append", commit_properties=props)
        for v in cols.values():
            v.clear()

    while seen < args.events:
        for m in consumer.consume(10_000, 1.0):
            if m.error():
                continue
            raw = m.value()
            sid = int.from_bytes(raw[1:5], "big")
            writer = writers.get(sid)
            if writer is None:
                text = registry.get_schema(sid).schema_str
                writer = writers[sid] = fastavro.parse_schema(json.loads(text))
            rec = fastavro.schemaless_reader(io.BytesIO(raw[5:]), writer, None)
            for k, v in cols.items():
                v.append(rec[k])
            seen += 1
        if len(cols["uuid"]) >= 250_000 or (seen >= args.events and cols["uuid"]):
            flush()
    wall, cpu = time.perf_counter() - t0, tree_cpu(me) - cpu0
    consumer.close()
    t = DeltaTable(path).to_pyarrow_table()
    rows, distinct = t.num_rows, len(set(t.column("uuid").to_pylist()))
    emit({"wall_s": wall, "cpu_s": cpu, "exactly_once": rows == distinct == args.events})


def run(role: str, args, workdir: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", role]
    for key in ("bootstrap", "topic", "events", "registry"):
        cmd += [f"--{key}", str(getattr(args, key))]
    cmd += ["--workdir", workdir]
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
    ap.add_argument("--registry")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if args.child:
        (child_sparkpipes if args.child == "sparkpipes" else child_baseline)(args)
        return

    import random
    import tempfile

    from sparkpipes.testing import EmbeddedBroker
    from sparkpipes.testing.registry import Registry, encode

    with EmbeddedBroker() as broker, Registry() as reg, tempfile.TemporaryDirectory() as tmp:
        args.bootstrap, args.topic, args.registry = broker.bootstrap, "events", reg.url
        broker.create_topic(args.topic, 4)
        sid = reg.register(AVRO)
        rng = random.Random(1)
        t = time.perf_counter()
        broker.produce(
            args.topic,
            (
                encode(
                    sid,
                    AVRO,
                    {
                        "ts": 1_700_000_000_000 + i,
                        "uuid": uuid.uuid4().hex,
                        "count": rng.randint(0, 1000),
                    },
                )
                for i in range(args.events)
            ),
            partitions=4,
        )
        print(f"produced {args.events:,} events in {time.perf_counter() - t:.1f}s")
        ratios = []
        for n in range(args.repeat):
            sp = run("sparkpipes", args, os.path.join(tmp, f"wh{n}"))
            os.makedirs(os.path.join(tmp, f"base{n}"))
            base = run("baseline", args, os.path.join(tmp, f"base{n}"))
            assert sp["exactly_once"] and base["exactly_once"], (sp, base)
            ratio = base["wall_s"] / sp["wall_s"]
            ratios.append(ratio)
            print(
                f"pair {n + 1}: sparkpipes {args.events / sp['wall_s']:,.0f} rows/s "
                f"({sp['cpu_s'] * 1e6 / args.events:.1f} CPU-s/M rows), baseline "
                f"{args.events / base['wall_s']:,.0f} rows/s "
                f"({base['cpu_s'] * 1e6 / args.events:.1f} CPU-s/M rows): {ratio:.2f}x"
            )
        print(f"median ratio (sparkpipes / baseline rows/s): {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()

"""The quickstart: from a Kafka topic to a queryable Delta table, driven by SQL.

1. starts the embedded broker (Tansu) on 127.0.0.1 and creates topic ``events``;
2. a generator thread produces ``{"ts", "uuid", "count"}`` events (Pinot's ``datagen.py``)
   at ``--rate`` per second until ``--events`` are written;
3. the table and the pipeline are created with SQL and the pipeline is started;
4. a live line shows rows ingested, lag and rows/s until every event is in;
5. a sample query runs, and the warehouse is left behind for ``sparkpipes sql``.

The broker keeps topics in memory, so each run recreates the table and pipeline.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
import uuid

from sparkpipes.catalog.states import BatchState, PipelineState
from sparkpipes.util import display

SETUP = """
DROP PIPELINE IF EXISTS events_pipeline;
DROP TABLE IF EXISTS events;
CREATE TABLE events (ts BIGINT, uuid VARCHAR(32), count INT, SHARD KEY (uuid), SORT KEY (ts));
CREATE PIPELINE events_pipeline AS
  LOAD DATA KAFKA '{bootstrap}/events'
  BATCH_INTERVAL 500
  INTO TABLE events
  FORMAT JSON (ts <- ts, uuid <- uuid, count <- count);
START PIPELINE events_pipeline;
"""
SAMPLE = (
    "SELECT count(*) AS events, count(DISTINCT uuid) AS distinct_uuids, "
    "round(avg(count), 1) AS avg_count, max(ts) - min(ts) AS span_ms FROM events"
)


def datagen(n: int, seed: int = 7):
    """Events as Pinot's datagen.py makes them, but reproducible."""
    rnd = random.Random(seed)
    for _ in range(n):
        yield json.dumps(
            {
                "ts": int(time.time() * 1000),
                "uuid": uuid.UUID(int=rnd.getrandbits(128)).hex,
                "count": rnd.randint(0, 1000),
            }
        )


def _produce(broker, n: int, rate: int, done: threading.Event, sent: list[int]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    start = time.time()
    for i, value in enumerate(datagen(n), 1):
        while True:
            try:
                p.produce("events", value.encode(), partition=i % 4)
                break
            except BufferError:
                p.poll(0.05)
        if i % 5000 == 0:
            p.poll(0)
            sent[0] = i
            ahead = i / rate - (time.time() - start)
            if ahead > 0:
                time.sleep(ahead)
    p.flush(30)
    sent[0] = n
    done.set()


def run(args) -> int:
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession
    from sparkpipes.testing import EmbeddedBroker

    out = sys.stdout
    eng = Engine(args.warehouse, catalog_url=args.catalog_url, spark_master=args.master)
    print("1. Starting the embedded Kafka broker (Tansu) on 127.0.0.1 …", file=out, flush=True)
    with EmbeddedBroker() as broker, eng:
        broker.create_topic("events", 4)
        print(f"   broker at {broker.bootstrap}, topic 'events' with 4 partitions", file=out)
        print("2. Starting Spark …", file=out, flush=True)
        eng.warm_up()  # start the session and its workers before the clock runs
        session = SqlSession(eng, background=True)
        print("3. Creating the table and the pipeline:", file=out)
        script = SETUP.format(bootstrap=broker.bootstrap)
        for line in script.strip().splitlines():
            print(f"   {line}", file=out)
        sent = [0]
        done = threading.Event()
        gen = threading.Thread(
            target=_produce, args=(broker, args.events, args.rate, done, sent), daemon=True
        )
        gen.start()
        session.execute(script)
        print(
            f"4. Generating {args.events} events at {args.rate}/s while the pipeline loads them:",
            file=out,
        )
        t0 = time.time()
        loaded = 0
        while True:
            time.sleep(0.5)
            loaded = sum(
                b["rows"]
                for b in eng.batches("events_pipeline")
                if b["state"] == BatchState.SUCCEEDED
            )
            rec = eng.pipeline("events_pipeline")
            secs = time.time() - t0
            line = (
                f"\r   produced {sent[0]:>9,}  ingested {loaded:>9,}  lag {sent[0] - loaded:>8,}  "
                f"{loaded / secs:>9,.0f} rows/s  [{rec.state}]"
            )
            print(line, end="", file=out, flush=True)
            if rec.state == PipelineState.ERROR:
                print(f"\nerror: {rec.last_error}", file=sys.stderr)
                return 1
            if done.is_set() and loaded >= args.events:
                break
            if secs > 600:
                print("\nerror: the pipeline did not catch up within 10 minutes", file=sys.stderr)
                return 1
        session.execute("STOP PIPELINE events_pipeline")
        print(f"\n   all {loaded:,} events loaded in {time.time() - t0:.1f}s", file=out)
        print(f"5. {SAMPLE};", file=out)
        t = time.time()
        (res,) = session.execute(SAMPLE)
        print(display.result(res, time.time() - t), file=out)
        cmd = os.path.join(os.path.dirname(sys.executable), "sparkpipes")
        print(
            f"\nThe warehouse is in {eng.warehouse}. Explore it with:\n"
            f"   {cmd} --warehouse {eng.warehouse} sql -e "
            '"SELECT * FROM information_schema.PIPELINES_BATCHES_SUMMARY"',
            file=out,
        )
        return 0 if res.rows[0][0] == args.events else 1

"""The quickstart: the whole path from a Kafka topic to a queryable Delta table.

Starts the embedded broker, produces ``{"ts", "uuid", "count"}`` events (as Pinot's
``datagen.py``) to topic ``events`` over 4 partitions, creates the table and pipeline,
runs batches until the backlog is drained and prints what landed. The warehouse is left
behind. The broker keeps topics in memory, so each run starts the table afresh.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid


def datagen(n: int, seed: int = 7):
    rnd = random.Random(seed)
    now = int(time.time() * 1000)
    for i in range(n):
        yield json.dumps(
            {
                "ts": now + i,
                "uuid": uuid.UUID(int=rnd.getrandbits(128)).hex,
                "count": rnd.randint(0, 1000),
            }
        )


def run(warehouse: str, catalog_url: str | None, events: int) -> int:
    from sparkpipes import Engine
    from sparkpipes.testing import EmbeddedBroker

    out = sys.stdout
    eng = Engine(warehouse, catalog_url=catalog_url)
    print("Starting the embedded Kafka broker (Tansu) on 127.0.0.1 ...", file=out, flush=True)
    with eng, EmbeddedBroker() as broker:
        broker.create_topic("events", 4)
        t = time.time()
        n = broker.produce("events", datagen(events), partitions=4)
        print(f"Produced {n} events to topic 'events' in {time.time() - t:.1f}s", file=out)
        print("Starting Spark ...", file=out, flush=True)
        eng.spark  # noqa: B018 - start the session before timing the pipeline
        eng.drop_pipeline("events_pipeline", if_exists=True)
        eng.drop_table("events", if_exists=True)
        eng.create_table("events", "ts BIGINT, uuid STRING, count INT")
        eng.create_pipeline(
            "events_pipeline",
            source="kafka",
            location=f"{broker.bootstrap}/events",
            table="events",
            format="json",
            max_offsets_per_batch_partition=max(1, events // 8),
        )
        total = 0
        t = time.time()
        for r in eng.run_batches("events_pipeline", 1000, until_idle=True):
            total += r.rows
            if r.state != "NoData":
                print(
                    f"  batch {r.batch_id}: {r.rows} rows in {r.seconds:.2f}s (total {total})",
                    file=out,
                    flush=True,
                )
        secs = time.time() - t
        df = eng.table("events")
        count = df.count()
        print(f"\nTable 'events' has {count} rows ({count / max(secs, 1e-9):,.0f} rows/s).")
        print("Committed offsets:", json.dumps(eng.offsets("events_pipeline"), sort_keys=True))
        print("A few rows:")
        df.orderBy("ts").show(5, truncate=False)
        print(f"Warehouse: {eng.warehouse}")
    return 0 if count == n else 1

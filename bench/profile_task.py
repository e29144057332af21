#!/usr/bin/env python
"""Profile one sparkpipes Kafka→Delta task in-process (no Spark), to see where its time goes.

    .venv/bin/python bench/profile_task.py [--events 250000] [--top 25]

Produces N datagen-shaped JSON events into a 1-partition topic on the embedded broker,
builds the same TaskSpec the BatchRunner would for partition 0 and runs
``sparkpipes.engine.batch.task.run_task`` under cProfile, then prints the hottest functions by
cumulative and by own time. The first ``pa.array`` in the process imports pandas (~0.25 s),
as in each Spark worker's first task.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_kafka_delta import make_events


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=250_000)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--chunk", type=int, default=50_000)
    ap.add_argument("--no-profile", action="store_true", help="time without cProfile")
    ap.add_argument("--warm", action="store_true", help="run the task once before measuring")
    args = ap.parse_args()

    import pyarrow as pa

    from sparkpipes.config import PipelineSpec
    from sparkpipes.engine.batch.assembly import build_source_of
    from sparkpipes.engine.batch.contract import Piece, TaskSpec
    from sparkpipes.engine.batch.task import run_task
    from sparkpipes.formats import build_decoder
    from sparkpipes.sinks import DeltaSink
    from sparkpipes.testing import EmbeddedBroker

    schema = pa.schema([("ts", pa.int64()), ("uuid", pa.string()), ("count", pa.int32())])
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        broker.create_topic("events", 1)
        broker.produce("events", make_events(args.events), partition=0)
        spec = PipelineSpec.build(
            name="p",
            source="kafka",
            location=f"{broker.bootstrap}/events",
            table="events",
            format="json",
        )
        source = build_source_of(spec)
        decoder = build_decoder("json", schema, spec.format.mapping, spec.format.csv)
        sink = DeltaSink(os.path.join(tmp, "events"), schema, "events")
        sink.create()
        task = TaskSpec(
            pipeline="p",
            pipeline_id="x",
            batch_id=1,
            pieces=(Piece("0", 0, None, args.events),),
            source=source,
            decoder=decoder,
            writer=sink.writer(),
            max_records=1_000_000,
            fetch_timeout_s=spec.batch.fetch_timeout_ms / 1000,
            skip_parser_errors=False,
            out_of_range="fail",
            provenance=False,
            chunk_records=args.chunk,
        )
        if args.warm:
            run_task(task)  # imports, pandas via pyarrow, librdkafka and the page cache
        prof = cProfile.Profile()
        t0, c0 = time.perf_counter(), time.process_time()
        if not args.no_profile:
            prof.enable()
        out = run_task(task)
        prof.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert out.failure is None, out.failure
        print(
            f"task: {out.rows:,} rows, wall {wall:.2f}s, process CPU {cpu:.2f}s "
            f"({cpu / out.rows * 1e6:.2f} µs/row"
            + ("; profiler overhead included)" if not args.no_profile else ")")
        )
        if args.no_profile:
            return
        st = pstats.Stats(prof)
        st.sort_stats("cumulative").print_stats(args.top)
        st.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

"""Child process of the crash test (``test_crash.py``): runs pipeline ``p`` until told to stop.

    python tests/integration/crash_child.py WAREHOUSE BOOTSTRAP TOPIC

Opens the engine on WAREHOUSE, creates table ``events`` and pipeline ``p`` (Kafka topic
TOPIC at BOOTSTRAP, provenance columns on) unless they exist, then runs one batch after
another, printing one JSON line per batch to stdout. It exits 0 after a ``NoData`` batch
that started when the marker file ``WAREHOUSE/done`` already existed (the test creates it
once every record has been produced), printing a last ``finished`` line with the committed
offsets. Otherwise it runs until it is killed: by the test (SIGKILL to its process group)
or by itself at a crash point (``SPARKPIPES_CRASH_AT``, see ``sparkpipes.engine.faults``).

With ``CRASH_CHILD_STANDBY=1`` it first starts its SparkSession and warms it up (what
``sparkpipes run`` does at start), without touching WAREHOUSE, prints a ``standby`` line
and waits for a ``go`` line on stdin; only then does it open the engine. The test starts
the next child that way while the current one runs, so that a restart after a kill does
not wait for a JVM to start; the new engine still opens the warehouse only after the kill.
"""

from __future__ import annotations

import json
import os
import sys
import time

TABLE = "events"
PIPELINE = "p"
SCHEMA = "id BIGINT, payload STRING, __source_partition STRING, __source_offset BIGINT"
MAX_OFFSETS = int(os.environ.get("CRASH_CHILD_MAX_OFFSETS", "3000"))


def emit(**fields: object) -> None:
    fields.setdefault("pid", os.getpid())
    fields.setdefault("time", round(time.time(), 3))
    print(json.dumps(fields, sort_keys=True), flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    warehouse, bootstrap, topic = argv
    from sparkpipes import Engine

    if os.environ.get("CRASH_CHILD_STANDBY") == "1":
        from sparkpipes.engine.spark.session import build_session, warm_up

        warm_up(build_session("local[2]"))  # the session Engine(spark_master=...) then gets
        emit(event="standby")
        if sys.stdin.readline().strip() != "go":
            return 0  # the test gave up on this run
    done_marker = os.path.join(warehouse, "done")
    eng = Engine(warehouse, spark_master="local[2]")
    if TABLE not in eng.tables():
        eng.create_table(TABLE, SCHEMA)
    if PIPELINE not in {p.name for p in eng.pipelines()}:
        eng.create_pipeline(
            PIPELINE,
            source="kafka",
            location=f"{bootstrap}/{topic}",
            table=TABLE,
            format="json",
            provenance=True,
            max_offsets_per_batch_partition=MAX_OFFSETS,
            batch_interval_ms=0,
        )
    emit(event="started", offsets=eng.offsets(PIPELINE))
    while True:
        # Looked at before the batch: a NoData batch planned after the marker appeared has
        # seen every record the producer wrote.
        finishing = os.path.exists(done_marker)
        (r,) = eng.run_batches(PIPELINE, 1)
        emit(
            event="batch",
            batch_id=r.batch_id,
            state=r.state,
            rows=r.rows,
            offsets=r.offsets,
            partitions=[
                {k: p[k] for k in ("partition", "start", "end", "rows")} for p in r.partitions
            ],
        )
        if r.state == "NoData":
            if finishing:
                break
            time.sleep(0.1)  # nothing new: do not spin
    emit(event="finished", offsets=eng.offsets(PIPELINE))
    eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

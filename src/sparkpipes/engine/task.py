"""What one Spark task does for one source partition (step 2 of the commit protocol).

The task consumes its partition from the batch's start offset until it has read
``max_records``, the source reports the partition's end or a fetch comes back empty — but
not while it is short of the offset the source reported when the batch was planned —,
decodes to Arrow, writes Parquet files into the table directory and returns — never
commits — the add-actions, the counts, the records it could not decode, its timings and
**the end offset it actually reached**. Everything it needs travels in a
:class:`TaskSpec`; nothing it builds does I/O before ``run_task``.

Errors do not escape as Python exceptions (which Spark would turn into a traceback):
a ``SparkpipesError`` comes back as ``result["failed"]`` and the driver re-raises it.
"""

from __future__ import annotations

import gc
import time
import traceback
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.errors import DecodeError, EngineError, SparkpipesError
from sparkpipes.formats import Decoder
from sparkpipes.sinks import DeltaSink
from sparkpipes.sources import Fetched, Source

PARTITION_COLUMN = "__source_partition"
OFFSET_COLUMN = "__source_offset"
EXCERPT_BYTES = 256
#: a task's timings (seconds): wall, process CPU, and wall in each phase
TIMINGS = ("seconds", "cpu_seconds", "fetch_seconds", "decode_seconds", "write_seconds")


@dataclass(frozen=True)
class TaskSpec:
    pipeline: str
    pipeline_id: str
    batch_id: int
    partition: str
    start: Any
    source: Source
    source_label: str
    decoder: Decoder
    sink: DeltaSink
    max_records: int
    fetch_timeout_s: float
    skip_parser_errors: bool
    out_of_range: str
    provenance: bool
    output_schema: pa.Schema | None = None  # decoded columns are conformed to it
    watermark: Any = None  # the source's latest offset when the batch was planned
    catch_up_s: float = 10.0
    skip_lines: int = 0
    chunk_records: int = 20_000
    file_rows: int = 1_000_000


def excerpt(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    text = raw[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    return text + ("…" if len(raw) > EXCERPT_BYTES else "")


def run_task(spec: TaskSpec) -> dict[str, Any]:
    """Run one partition's share of a batch. Returns a plain dict (pickled back).

    Python's cyclic garbage collector is paused while it runs: the Kafka client hands
    over one object per record, and collections triggered by those allocations would
    traverse the whole worker heap again and again (measured at about 15% of the
    machine's CPU during a drain). The task makes no reference cycles worth collecting.
    """
    started = time.time()
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(spec, started)
    except SparkpipesError as e:
        e.with_context(pipeline=spec.pipeline, partition=spec.partition, batch=spec.batch_id)
        return {"partition": spec.partition, "failed": e.to_dict()}
    except Exception as e:  # a bug or a library failure: keep the cause, not a traceback
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        err = EngineError(
            f"task failed: {detail}",
            pipeline=spec.pipeline,
            partition=spec.partition,
            batch=spec.batch_id,
        )
        return {
            "partition": spec.partition,
            "failed": err.to_dict(),
            "trace": traceback.format_exc(),
        }
    finally:
        if collecting:
            gc.enable()


def _run(spec: TaskSpec, started: float) -> dict[str, Any]:
    consumer = spec.source.consumer(
        spec.partition, out_of_range=spec.out_of_range, pipeline=spec.pipeline
    )
    gap = consumer.open(spec.start)
    errors: list[dict[str, Any]] = []
    if gap is not None:
        errors.append(
            {
                "partition": spec.partition,
                "offset": gap.requested,
                "code": "SP202",
                "kind": "offset_out_of_range",
                "reason": gap.reason,
                "excerpt": None,
            }
        )
    files, pending, pending_rows = [], [], 0
    rows = read = nbytes = 0
    drained = False
    remaining = spec.max_records
    first = True
    cpu0 = time.process_time()
    spent = {"fetch": 0.0, "decode": 0.0, "write": 0.0}
    try:
        while remaining > 0:
            timeout = spec.fetch_timeout_s * (4 if first else 1)
            first = False
            t = time.perf_counter()
            fetched = consumer.fetch(min(spec.chunk_records, remaining), timeout)
            spent["fetch"] += time.perf_counter() - t
            n = len(fetched)
            if n:
                remaining -= n
                read += n
                nbytes += fetched.values.nbytes
                t = time.perf_counter()
                table = _decode(spec, fetched, errors)
                spent["decode"] += time.perf_counter() - t
                if table.num_rows:
                    pending.append(table)
                    pending_rows += table.num_rows
                    rows += table.num_rows
                if pending_rows >= spec.file_rows:
                    files.append(_flush(spec, pending, len(files), spent))
                    pending, pending_rows = [], 0
                if not fetched.at_end:
                    continue
            if spec.watermark is None or spec.source.reached(consumer.position(), spec.watermark):
                drained = True
                break
            if n == 0 and time.time() - started > spec.catch_up_s:
                break  # records are there but slow to come: the next batch goes on
        if pending:
            files.append(_flush(spec, pending, len(files), spent))
        end = consumer.position()
    finally:
        consumer.close()
    return {
        "partition": spec.partition,
        "start": spec.start,
        "end": end,
        "read": read,
        "rows": rows,
        "bytes": nbytes,
        "files": [f.to_dict() for f in files],
        "errors": errors,
        "drained": drained,
        "seconds": round(time.time() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu0, 3),
        **{f"{k}_seconds": round(v, 3) for k, v in spent.items()},
    }


def _decode(spec: TaskSpec, fetched: Fetched, errors: list[dict[str, Any]]) -> pa.Table:
    """The fetched records as rows of the output; the ones that do not decode fail the
    batch or, with ``skip_parser_errors``, are added to ``errors``."""
    if spec.skip_lines:
        keep = pc.greater_equal(fetched.positions, spec.skip_lines)
        fetched = Fetched(fetched.values.filter(keep), fetched.positions.filter(keep))
    decoded = spec.decoder.decode(fetched.values)
    for err in decoded.errors:
        offset = fetched.positions[err.index].as_py()
        raw = fetched.values[err.index].as_py()
        if not spec.skip_parser_errors:
            raise DecodeError(
                f"cannot decode the record at {spec.source_label} partition "
                f"{spec.partition} offset {offset}: {err.reason}; value starts "
                f"{excerpt(raw)!r}",
                offset=offset,
            )
        errors.append(
            {
                "partition": spec.partition,
                "offset": offset,
                "code": "SP300",
                "kind": "parse",
                "reason": err.reason,
                "excerpt": excerpt(raw),
            }
        )
    table = decoded.table
    if spec.output_schema is not None and table.schema != spec.output_schema:
        table = conform(table, spec.output_schema)
    if spec.provenance:
        table = table.append_column(
            PARTITION_COLUMN, pa.array([spec.partition] * table.num_rows, pa.string())
        ).append_column(OFFSET_COLUMN, fetched.positions.take(decoded.kept))
    return table


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Columns of ``schema`` in its order; the ones the decoder did not load are NULL."""
    cols = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def _flush(spec: TaskSpec, tables: list[pa.Table], seq: int, spent: dict[str, float]):
    t = time.perf_counter()
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    safe = "".join(c if c.isalnum() else "_" for c in spec.partition)[-40:]
    prefix = f"part-b{spec.batch_id:08d}-p{safe}-{seq:03d}"
    added = spec.sink.write_file(table, prefix)
    spent["write"] += time.perf_counter() - t
    return added

"""What one Spark task does for one source partition (step 2 of the commit protocol).

The task consumes its partition from the batch's start offset until it has read
``max_records``, the source reports the partition's end or a fetch comes back empty — but
not while it is short of the offset the source reported when the batch was planned —,
decodes to Arrow, writes Parquet files into the table directory and returns — never
commits — the add-actions, the counts, the records it could not decode, its timings and
**the end offset it actually reached**. Everything it needs travels in a
:class:`TaskSpec`; nothing it builds does I/O before ``run_task``.

Errors do not escape as Python exceptions (which Spark would turn into a traceback):
a ``SparkpipesError`` comes back as ``TaskResult.failure`` and the driver re-raises it;
any other exception is a bug, reported as a terminal ``InternalError`` with its trace.
The contract types live in ``engine.contract``.
"""

from __future__ import annotations

import gc
import time
import traceback

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.engine.contract import (
    OFFSET_COLUMN,
    PARTITION_COLUMN,
    ErrorRecord,
    TaskResult,
    TaskSpec,
    TaskTimings,
)
from sparkpipes.errors import DecodeError, InternalError, OffsetOutOfRangeError, SparkpipesError
from sparkpipes.sinks import Staged
from sparkpipes.sources import Fetched

__all__ = ["OFFSET_COLUMN", "PARTITION_COLUMN", "TaskResult", "TaskSpec", "run_task"]


def run_task(spec: TaskSpec) -> TaskResult:
    """Run one partition's share of a batch.

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
        return TaskResult.failed(spec.partition, e)
    except Exception as e:  # a bug, here or in a library: terminal, with its trace
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        err = InternalError(
            f"task failed: {detail}",
            pipeline=spec.pipeline,
            partition=spec.partition,
            batch=spec.batch_id,
        )
        return TaskResult.failed(spec.partition, err, traceback.format_exc())
    finally:
        if collecting:
            gc.enable()


def _run(spec: TaskSpec, started: float) -> TaskResult:
    consumer = spec.source.consumer(
        spec.partition, out_of_range=spec.out_of_range, pipeline=spec.pipeline
    )
    gap = consumer.open(spec.start)
    errors: list[ErrorRecord] = []
    if gap is not None:
        lost = OffsetOutOfRangeError(gap.reason, partition=spec.partition, offset=gap.requested)
        errors.append(ErrorRecord.of(lost))
    staged: list[Staged] = []
    pending: list[pa.Table] = []
    pending_rows = rows = read = nbytes = 0
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
                    staged.append(_flush(spec, pending, len(staged), spent))
                    pending, pending_rows = [], 0
                if not fetched.at_end:
                    continue
            if spec.watermark is None or spec.source.reached(consumer.position(), spec.watermark):
                drained = True
                break
            if n == 0 and time.time() - started > spec.catch_up_s:
                break  # records are there but slow to come: the next batch goes on
        if pending:
            staged.append(_flush(spec, pending, len(staged), spent))
        end = consumer.position()
    finally:
        consumer.close()
    return TaskResult(
        partition=spec.partition,
        start=spec.start,
        end=end,
        read=read,
        rows=rows,
        bytes=nbytes,
        staged=tuple(staged),
        errors=tuple(errors),
        drained=drained,
        timings=TaskTimings(
            seconds=time.time() - started,
            cpu_seconds=time.process_time() - cpu0,
            fetch_seconds=spent["fetch"],
            decode_seconds=spent["decode"],
            write_seconds=spent["write"],
        ),
    )


def _decode(spec: TaskSpec, fetched: Fetched, errors: list[ErrorRecord]) -> pa.Table:
    """The fetched records as rows of the output; the ones that do not decode (or leave a
    NOT NULL column empty) fail the batch or, with ``skip_parser_errors``, are added to
    ``errors``."""
    if spec.skip_lines:
        keep = pc.greater_equal(fetched.positions, spec.skip_lines)
        fetched = Fetched(fetched.values.filter(keep), fetched.positions.filter(keep))
    decoded = spec.decoder.decode(fetched.values)
    for bad in decoded.errors:
        _reject(spec, fetched, bad.index, bad.reason, errors)
    table, kept = decoded.table, decoded.kept
    want = spec.output_schema
    if want is not None and spec.provenance:  # those two are appended below
        want = pa.schema([f for f in want if f.name not in (PARTITION_COLUMN, OFFSET_COLUMN)])
    if want is not None and table.schema != want:
        table = conform(table, want)
    if spec.not_null:
        table, kept = _not_null(spec, fetched, table, kept, errors)
    if spec.provenance:
        table = table.append_column(
            PARTITION_COLUMN, pa.array([spec.partition] * table.num_rows, pa.string())
        ).append_column(OFFSET_COLUMN, fetched.positions.take(kept))
    return table


def _reject(
    spec: TaskSpec, fetched: Fetched, index: int, reason: str, errors: list[ErrorRecord]
) -> None:
    """Record ``fetched[index]`` as skipped, or fail the batch with it."""
    offset = fetched.positions[index].as_py()
    raw = fetched.values[index].as_py()
    err = DecodeError(
        f"cannot decode the record at {spec.source.label()} partition "
        f"{spec.partition} offset {offset}: {reason}",
        partition=spec.partition,
        offset=offset,
    )
    if not spec.skip_parser_errors:
        rec = ErrorRecord.of(err, raw=raw)
        err.message += f"; value starts {rec.excerpt!r}"
        raise err
    errors.append(ErrorRecord.of(err, reason=reason, raw=raw))


def _not_null(
    spec: TaskSpec,
    fetched: Fetched,
    table: pa.Table,
    kept: pa.Array,
    errors: list[ErrorRecord],
) -> tuple[pa.Table, pa.Array]:
    """Rows with no value in a NOT NULL column are rejected like undecodable records."""
    masks = {c: pc.is_null(table.column(c)) for c in spec.not_null if c in table.column_names}
    if not masks:
        return table, kept
    mask = None
    for m in masks.values():
        mask = m if mask is None else pc.or_(mask, m)
    if not pc.any(mask).as_py():
        return table, kept
    for row in pc.indices_nonzero(mask).to_pylist():
        column = next(c for c, m in masks.items() if m[row].as_py())
        reason = f"column '{column}' is NOT NULL but the record gives it no value"
        _reject(spec, fetched, kept[row].as_py(), reason, errors)
    good = pc.invert(mask)
    return table.filter(good), kept.filter(good)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Columns of ``schema`` in its order; the ones the decoder did not load are NULL."""
    cols = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def _flush(spec: TaskSpec, tables: list[pa.Table], seq: int, spent: dict[str, float]) -> Staged:
    t = time.perf_counter()
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    safe = "".join(c if c.isalnum() else "_" for c in spec.partition)[-40:]
    staged = spec.writer.write(table, f"part-b{spec.batch_id:08d}-p{safe}-{seq:03d}")
    spent["write"] += time.perf_counter() - t
    return staged

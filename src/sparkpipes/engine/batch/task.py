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
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from sparkpipes.engine.batch.contract import (
    OFFSET_COLUMN,
    PARTITION_COLUMN,
    ErrorRecord,
    Piece,
    PieceResult,
    TaskResult,
    TaskSpec,
    TaskTimings,
)
from sparkpipes.errors import (
    CorruptObjectError,
    DecodeError,
    InternalError,
    OffsetOutOfRangeError,
    SparkpipesError,
    TransformError,
)
from sparkpipes.formats.conform import not_null, to_columns, with_metadata
from sparkpipes.formats.rules import apply_rules
from sparkpipes.sinks import Staged
from sparkpipes.sources import Fetched, Gap

__all__ = ["OFFSET_COLUMN", "PARTITION_COLUMN", "TaskResult", "TaskSpec", "run_task"]

#: small fetches are decoded together once they hold this many records (or bytes): a
#: decoder's fixed cost per call (~0.35 ms for JSON) would otherwise dominate a steady
#: stream's fetches of a few dozen records each
DECODE_RECORDS = 2048
DECODE_BYTES = 8 << 20


def run_task(spec: TaskSpec, *, in_driver: bool = False) -> TaskResult:
    """Run one partition's share of a batch.

    In a Spark worker, Python's cyclic garbage collector is paused while it runs: the
    Kafka client hands over one object per record, and collections triggered by those
    allocations would traverse the whole worker heap again and again (measured at about
    15% of the machine's CPU during a drain). The task makes no reference cycles worth
    collecting. ``in_driver`` (a small batch run by the engine itself): the collector is
    left alone, as it serves the whole server and other tasks run beside this one.
    """
    started = time.time()
    collecting = gc.isenabled() and not in_driver
    if collecting:
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
    task = _Task(spec, started)
    pieces = tuple(task.piece(p) for p in spec.pieces)
    task.flush()
    return TaskResult(
        partition=spec.partition,
        pieces=pieces,
        bytes=task.nbytes,
        staged=tuple(task.staged),
        errors=tuple(task.errors),
        timings=TaskTimings(
            seconds=time.time() - started,
            cpu_seconds=time.process_time() - task.cpu0,
            fetch_seconds=task.spent["fetch"],
            decode_seconds=task.spent["decode"],
            write_seconds=task.spent["write"],
        ),
        task=spec.task,
    )


class _Task:
    """One task's reading of its pieces in turn; decoded rows of all pieces are written
    together, every ``file_rows`` rows, so packed small objects make few files."""

    def __init__(self, spec: TaskSpec, started: float) -> None:
        self.spec = spec
        self.started = started
        self.staged: list[Staged] = []
        self.errors: list[ErrorRecord] = []
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.nbytes = 0
        self.cpu0 = time.process_time()
        self.spent = {"fetch": 0.0, "decode": 0.0, "write": 0.0}

    def piece(self, piece: Piece) -> PieceResult:
        """Read one piece: to the end of its range or object (``whole``), else until
        ``max_records``, the source's end report or an empty fetch — but not while short
        of the piece's watermark, and no further once it is reached: a steady stream
        never gives an empty fetch, and what came after the plan is the next batch's
        (the scheduler spaces a caught-up pipeline's batches, ``pipelines_batch_gap_ms``;
        following the stream here cost a fetch per few records, for every partition)."""
        spec = self.spec
        consumer = spec.source.consumer(
            piece.partition, out_of_range=spec.out_of_range, pipeline=spec.pipeline
        )
        self._gap(piece, consumer.open(piece.start, piece.stop))
        read = rows = 0
        held = _Held(lambda f: self._take(piece, f))
        drained = False
        end = None
        remaining = float("inf") if spec.whole else spec.max_records
        first = True
        try:
            while remaining > 0:
                timeout = spec.fetch_timeout_s * (4 if first else 1)
                first = False
                t = time.perf_counter()
                try:
                    fetched = consumer.fetch(int(min(spec.chunk_records, remaining)), timeout)
                except CorruptObjectError as e:
                    if not spec.skip_parser_errors:
                        raise
                    self.errors.append(ErrorRecord.of(e))
                    end, drained = e.resume, True
                    break
                finally:
                    self.spent["fetch"] += time.perf_counter() - t
                # records the source refused or dropped were read too
                n = len(fetched) + len(fetched.rejected) + len(fetched.unreadable) + fetched.dropped
                if n:
                    remaining -= n
                    read += n
                    rows += held.add(fetched)
                    if not fetched.at_end:
                        if spec.whole or piece.watermark is None:
                            continue
                        if not spec.source.reached(consumer.position(), piece.watermark):
                            continue
                        break  # a steady stream: what came after the plan is the next batch's
                if spec.whole:
                    drained = True
                    break
                if piece.watermark is None or spec.source.reached(
                    consumer.position(), piece.watermark
                ):
                    drained = True
                    break
                if n == 0 and time.time() - self.started > spec.catch_up_s:
                    break  # records are there but slow to come: the next batch goes on
            rows += held.take()
            if end is None:
                end = consumer.position()
        finally:
            consumer.close()
        return PieceResult(piece.partition, piece.start, end, read, rows, drained)

    def _gap(self, piece: Piece, gap: Gap | None) -> None:
        """Records that were gone when the piece was read (out of retention): an error."""
        if gap is not None:
            lost = OffsetOutOfRangeError(
                gap.reason, partition=piece.partition, offset=gap.requested
            )
            self.errors.append(ErrorRecord.of(lost))

    def _take(self, piece: Piece, fetched: Fetched) -> int:
        """Decode ``fetched``; keep its rows for the next file. Returns the rows kept."""
        self.nbytes += fetched.table.nbytes if fetched.table is not None else fetched.values.nbytes
        t = time.perf_counter()
        for position, reason, raw in fetched.unreadable:  # lines too long to hold
            _reject(self.spec, piece.partition, position, raw, reason, self.errors)
        table = _decode(self.spec, piece.partition, fetched, self.errors)
        for position, reason, raw in fetched.rejected:  # the source's own refusals
            err = TransformError(
                f"cannot transform the record at "
                f"{self.spec.source.locate(piece.partition, position)}: {reason}",
                partition=piece.partition,
                offset=position,
            )
            self.errors.append(ErrorRecord.of(err, reason=reason, raw=raw))
        self.spent["decode"] += time.perf_counter() - t
        if table.num_rows:
            self.pending.append(table)
            self.pending_rows += table.num_rows
        if self.pending_rows >= self.spec.file_rows:
            self.flush()
        return table.num_rows

    def flush(self) -> None:
        if not self.pending:
            return
        spec = self.spec
        t = time.perf_counter()
        tables = self.pending
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        safe = "".join(c if c.isalnum() else "_" for c in spec.partition)[-40:]
        name = f"part-b{spec.batch_id:08d}-t{spec.task:04d}-p{safe}-{len(self.staged):03d}"
        self.staged.append(spec.writer.write(table, name))
        self.pending, self.pending_rows = [], 0
        self.spent["write"] += time.perf_counter() - t


class _Held:
    """Fetches of one piece held back until there are ``DECODE_RECORDS`` records (or
    ``DECODE_BYTES``) to decode in one call; ``take`` decodes what is held."""

    def __init__(self, take: Callable[[Fetched], int]) -> None:
        self._decode = take
        self.parts: list[Fetched] = []
        self.records = self.nbytes = 0

    def add(self, fetched: Fetched) -> int:
        """Hold ``fetched``; the rows decoded now (0 while holding)."""
        rows = 0
        if self.parts and not self.parts[-1].joins(fetched):
            rows = self.take()
        self.parts.append(fetched)
        self.records += len(fetched)
        self.nbytes += fetched.values.nbytes
        full = self.records >= DECODE_RECORDS or self.nbytes >= DECODE_BYTES
        if full or fetched.table is not None:
            rows += self.take()
        return rows

    def take(self) -> int:
        if not self.parts:
            return 0
        parts, self.parts, self.records, self.nbytes = self.parts, [], 0, 0
        return self._decode(Fetched.joined(parts))


def _decode(
    spec: TaskSpec, partition: str, fetched: Fetched, errors: list[ErrorRecord]
) -> pa.Table:
    """The fetched records as rows of the output (decoded, then shaped by
    ``formats.conform``); the ones that do not decode fail the batch or, with
    ``skip_parser_errors``, are added to ``errors``; so do the ones that leave a NOT NULL
    column empty, with ``skip_constraint_errors``."""
    decoded = spec.decoder.decode_fetched(fetched, partition)
    for bad in decoded.errors:
        offset, raw = fetched.positions[bad.index].as_py(), fetched.raw(bad.index)
        _reject(spec, partition, offset, raw, bad.reason, errors)
    table, kept = decoded.table, decoded.kept
    want = spec.output_schema
    if want is not None and spec.provenance:  # those two are appended below
        want = pa.schema([f for f in want if f.name not in (PARTITION_COLUMN, OFFSET_COLUMN)])
    if want is not None and table.schema != want:
        table = to_columns(table, want, dict(spec.defaults))
    if spec.metadata_columns:
        table = with_metadata(table, spec.metadata_columns, partition, fetched, kept)
    constraints = [
        *([lambda t, k: apply_rules(t, k, spec.rules)] if spec.rules else []),
        *([lambda t, k: not_null(t, k, spec.not_null)] if spec.not_null else []),
    ]
    for constraint in constraints:  # a row the table refuses: a constraint error
        checked = constraint(table, kept)
        for bad in checked.errors:
            offset, raw = fetched.positions[bad.index].as_py(), fetched.raw(bad.index)
            _reject(spec, partition, offset, raw, bad.reason, errors, spec.skip_constraint_errors)
        table, kept = checked.table, checked.kept
    if spec.provenance:
        table = table.append_column(
            PARTITION_COLUMN, pa.array([partition] * table.num_rows, pa.string())
        ).append_column(OFFSET_COLUMN, fetched.positions.take(kept))
    return table


def _reject(
    spec: TaskSpec,
    partition: str,
    offset: Any,
    raw: bytes | None,
    reason: str,
    errors: list[ErrorRecord],
    skip: bool | None = None,
) -> None:
    """Record the record at ``offset`` as skipped (``skip``; by default SKIP PARSER
    ERRORS), or fail the batch with it."""
    skip = spec.skip_parser_errors if skip is None else skip
    err = DecodeError(
        f"cannot decode the record at {spec.source.locate(partition, offset)}: {reason}",
        partition=partition,
        offset=offset,
    )
    if not skip:
        rec = ErrorRecord.of(err, raw=raw)
        err.message += f"; value starts {rec.excerpt!r}"
        raise err
    errors.append(ErrorRecord.of(err, reason=reason, raw=raw))

"""The typed contract between the driver and a Spark task (step 2 of the commit protocol).

The driver sends a :class:`TaskSpec` per source partition; the task sends back a
:class:`TaskResult`. Both are frozen dataclasses pickled across the process boundary;
nothing else crosses it. A failure travels as ``TaskResult.failure`` (an error's
``to_dict``) and is raised on the driver by :meth:`TaskResult.raise_failure`, so its
class, code, ``transient`` flag and context survive. Records that were skipped (or a gap
in the source) travel as :class:`ErrorRecord`, built only by :meth:`ErrorRecord.of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from sparkpipes.config.tables import ColumnDefault, ValueRules
from sparkpipes.errors import SparkpipesError
from sparkpipes.formats import Decoder
from sparkpipes.sinks import SinkWriter, Staged
from sparkpipes.sources import Source

PARTITION_COLUMN = "__source_partition"
OFFSET_COLUMN = "__source_offset"
EXCERPT_BYTES = 256


def excerpt(raw: bytes | None) -> str | None:
    """The start of a record's payload, for an error report."""
    if raw is None:
        return None
    text = raw[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    return text + ("…" if len(raw) > EXCERPT_BYTES else "")


@dataclass(frozen=True)
class ErrorRecord:
    """One row of the errors store (information_schema.PIPELINES_ERRORS)."""

    partition: str
    offset: Any
    code: str
    kind: str
    reason: str
    excerpt: str | None = None

    @classmethod
    def of(
        cls, err: SparkpipesError, *, reason: str | None = None, raw: bytes | None = None
    ) -> ErrorRecord:
        """The record of ``err``: its code, kind, partition and offset; ``reason`` if the
        stored text should be shorter than the message, ``raw`` for an excerpt."""
        return cls(
            partition=err.partition or "",
            offset=err.offset,
            code=err.code,
            kind=err.kind,
            reason=reason if reason is not None else err.message,
            excerpt=excerpt(raw),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TaskTimings:
    """Seconds a task spent: wall, process CPU, and wall in each phase."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0
    fetch_seconds: float = 0.0
    decode_seconds: float = 0.0
    write_seconds: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Piece:
    """One partition's share of a task: from ``start`` up to ``stop`` (a range the
    source split off; None: as far as the batch goes). ``watermark`` is the source's
    latest offset when the batch was planned."""

    partition: str
    start: Any
    stop: Any = None
    watermark: Any = None


@dataclass(frozen=True)
class PieceResult:
    """Where a task got in one piece: its end offset and whether it read it all."""

    partition: str
    start: Any
    end: Any
    read: int = 0
    rows: int = 0
    drained: bool = False


@dataclass(frozen=True)
class TaskSpec:
    """Everything one task needs for its pieces (one Kafka partition; several objects, or
    a range of one). Its parts do no I/O until run."""

    pipeline: str
    pipeline_id: str
    batch_id: int
    pieces: tuple[Piece, ...]
    source: Source
    decoder: Decoder
    writer: SinkWriter
    max_records: int
    fetch_timeout_s: float
    skip_parser_errors: bool
    skip_constraint_errors: bool
    out_of_range: str
    provenance: bool
    output_schema: pa.Schema | None = None  # decoded columns are conformed to it
    whole: bool = False  # read every piece to its end (objects), ignoring max_records
    task: int = 0  # the task's number within the batch
    catch_up_s: float = 10.0
    skip_lines: int = 0
    not_null: tuple[str, ...] = ()  # columns of the task's rows that must have a value
    defaults: tuple[tuple[str, ColumnDefault], ...] = ()  # what a column not loaded holds
    #: ENUM / SET members, GEOGRAPHY shapes, VECTOR sizes of the task's columns
    rules: ValueRules = field(default_factory=ValueRules)
    chunk_records: int = 20_000
    file_rows: int = 1_000_000
    #: columns filled from each record's key, headers, offset, partition and timestamp
    #: (``__key``, ``__header$<name>``, ``__metadata$…``) instead of its payload
    metadata_columns: tuple[str, ...] = ()

    @property
    def partition(self) -> str:
        """How the task is named in errors: its first piece's partition."""
        return self.pieces[0].partition if self.pieces else ""


@dataclass(frozen=True)
class TaskResult:
    """What a task reports: staged data, counts, skipped records, and per piece the end
    offset it reached and whether it was drained; or a failure."""

    partition: str
    pieces: tuple[PieceResult, ...] = ()
    bytes: int = 0
    staged: tuple[Staged, ...] = ()
    errors: tuple[ErrorRecord, ...] = ()
    timings: TaskTimings = TaskTimings()
    task: int = 0
    failure: Mapping[str, Any] | None = None
    trace: str | None = field(default=None, repr=False)

    @classmethod
    def failed(cls, partition: str, err: SparkpipesError, trace: str | None = None) -> TaskResult:
        return cls(partition, failure=err.to_dict(), trace=trace)

    def error(self) -> SparkpipesError | None:
        """The failure as the error the task raised (its class, code and context)."""
        return None if self.failure is None else SparkpipesError.from_dict(self.failure)

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.pieces)

    def report(self) -> list[dict[str, Any]]:
        """The pieces' lines of the batch record (PIPELINES_BATCHES), each with its
        task's number and timings."""
        timings = self.timings.to_dict()
        return [
            {
                "partition": p.partition,
                "start": p.start,
                "end": p.end,
                "rows": p.rows,
                "read": p.read,
                "task": self.task,
                **timings,
            }
            for p in self.pieces
        ]

"""The sink SPI: where a batch's rows go, committed atomically with its offsets.

A sink is assembled per pipeline, with its **write strategy** (append, or an upsert by
primary key) chosen then, and plays three parts in the commit protocol
(``sparkpipes.engine.batch.protocol``):

Executor side — :class:`SinkWriter`
    Pickled into every Spark task (no I/O in its constructor). ``write(table, name)``
    stages Arrow rows somewhere readers cannot see yet (a Parquet file not in the Delta
    log, a staging table) and returns a :class:`Staged` handle: small, picklable, typed.

Driver side — :meth:`Sink.commit`
    ``commit(staged, batch)`` publishes every staged handle of the batch **and** the
    batch's end offsets in one atomic step (one Delta commit; one database transaction
    with the offset row, seed 001). It returns False when the destination already holds
    batch ``batch.batch_id`` of that pipeline (a replay after a crash): nothing is
    published twice. Staged data that is never committed is never visible.

Source of truth — :meth:`Sink.committed`
    Which batch of a pipeline the destination holds, and its end offsets. A restart
    resumes from here, never from the catalog, which is reconciled from it.

Between the tasks and the commit, :meth:`Sink.finish` may run driver-side work on the
staged data (the ingest-time SQL of ``SET``/``WHERE``/computed columns, a dedupe by key)
so that nothing a strategy needs leaks into the batch runner.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa


class Staged(abc.ABC):
    """A handle to rows a writer staged; what the driver's commit publishes."""

    num_records: int


@dataclass(frozen=True)
class Committed:
    """What a destination holds of one pipeline: its last batch and the end offsets."""

    batch_id: int
    offsets: dict[str, Any]


@dataclass(frozen=True)
class BatchCommit:
    """The batch a commit publishes: whose (``app_id``, one per pipeline), which, and the
    end offset of every partition the pipeline knows (not only those this batch read);
    for the partitions it read, where it started (``starts``) and the rows it decoded
    from each (``rows``), which a database sink's metadata rows record; and the records
    it skipped (``errors``, rows of PIPELINES_ERRORS), for a dead-letter table.

    ``report``, where the engine gives it, lists the records the commit itself skips
    (rows of PIPELINES_ERRORS, with ``errors``) for the batch, replacing what an earlier
    attempt of it listed: a sink that can calls it before the commit is final, so that a
    failure between the commit and the engine's record of it loses none, and a retry
    lists its own once. :meth:`Sink.rejected` still returns them after the commit. A
    sink that says so (:attr:`Sink.reports_in_commit`) calls it in every commit it
    makes, and only once it knows the batch is not there already: the engine then writes
    ``errors`` nowhere else, so that an attempt that finds the batch committed by
    another leaves the winner's list as it is."""

    app_id: str
    pipeline: str
    batch_id: int
    offsets: Mapping[str, Any]
    extra: Mapping[str, str] = field(default_factory=dict)
    starts: Mapping[str, Any] = field(default_factory=dict)
    rows: Mapping[str, int] = field(default_factory=dict)
    errors: Sequence[Mapping[str, Any]] = ()
    report: Callable[[Sequence[Mapping[str, Any]]], None] | None = None


class SinkWriter(abc.ABC):
    """Executor side: stages rows. Pickled to executors, so no I/O before ``write``."""

    #: the columns ``write`` accepts, in order
    schema: pa.Schema

    @abc.abstractmethod
    def write(self, table: pa.Table, name: str) -> Staged:
        """Stage ``table`` (conformed to ``schema``) under a name unique to the batch and
        partition (``name`` is a prefix; the writer adds uniqueness). Not visible yet."""


@dataclass(frozen=True)
class SinkContext:
    """What the engine hands a sink plugin when it assembles a pipeline: the destination
    table, the write strategy (``append``/``replace``/``ignore`` with the primary key),
    what the tasks decode, the ingest-time SQL and where to stage."""

    table: str
    location: str
    schema: pa.Schema
    write: str = "append"
    primary_key: tuple[str, ...] = ()
    staged_schema: pa.Schema | None = None
    refine: Any = None  # (DataFrame, extra columns) -> DataFrame, or None
    scratch: str | None = None
    spark: Any = None  # () -> SparkSession, called only when the sink needs Spark
    procedure: Any = None  # the engine's ProcedureBody, for INTO PROCEDURE
    sink_config: Mapping[str, Any] = field(default_factory=dict)  # SinkSpec.config
    sink_credentials: Mapping[str, Any] = field(default_factory=dict)  # SinkSpec.credentials
    #: ``update`` writes: each column's Spark SQL over the stored row ``s`` and the new ``r``
    update: tuple[tuple[str, str], ...] = ()
    #: SKIP DUPLICATE KEY ERRORS: the staged rows' (partition, offset) columns, by which
    #: the rows an ``ignore`` write leaves out are reported (:meth:`Sink.rejected`)
    skipped_duplicates: tuple[str, str] | None = None


class Sink(abc.ABC):
    """Driver side of a destination, with the write strategy of one pipeline."""

    kind: ClassVar[str]

    @classmethod
    @abc.abstractmethod
    def for_pipeline(cls, ctx: SinkContext) -> Sink:
        """The sink of one pipeline, its strategy chosen from ``ctx``; no I/O."""

    @abc.abstractmethod
    def writer(self) -> SinkWriter:
        """Where the extract tasks of a batch write what they decoded."""

    def finish(self, staged: Sequence[Staged], batch_id: int) -> list[Staged]:
        """Driver-side work between the tasks and the commit; the handles to commit.
        Nothing it produces is visible before :meth:`commit`."""
        return list(staged)

    @abc.abstractmethod
    def commit(self, staged: Sequence[Staged], batch: BatchCommit) -> bool:
        """Publish ``staged`` and ``batch.offsets`` atomically; False if the destination
        already holds this batch (or a later one) of ``batch.app_id``."""

    @abc.abstractmethod
    def committed(self, app_id: str, hint: Committed | None = None) -> Committed | None:
        """The last batch of ``app_id`` the destination holds. ``hint`` (the catalog's
        record) may be used only where the destination confirms it."""

    @property
    def reports_in_commit(self) -> bool:
        """Whether every :meth:`commit` that makes the batch calls ``BatchCommit.report``
        (with ``errors`` and what it skips), after finding the batch not committed yet; if
        not, the engine stores ``errors`` before the commit."""
        return False

    def rejected(self) -> list[dict[str, Any]]:
        """Records the last :meth:`commit` skipped because the destination refused them
        (a database's refusal under ``errors.tolerance=all``), as rows of the errors
        store: ``partition``, ``offset``, ``code``, ``kind``, ``reason``, ``excerpt``.
        Each is reported once."""
        return []

    def discard(self) -> None:  # noqa: B027 - optional hook
        """Remove what attempts that never committed left in a scratch area."""

    def abort(self, staged: Sequence[Staged]) -> None:  # noqa: B027 - optional hook
        """Remove the data behind ``staged``, handles of an attempt that will never be
        committed (its batch failed before the commit, or the commit failed and the
        destination does not hold the batch), so that failed attempts do not pile up
        where space may be what made them fail. Called only with handles this sink's
        writers or :meth:`finish` returned; failures to remove are the caller's to log."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

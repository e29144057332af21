"""The source SPI, after Pinot's stream plugin: a metadata provider apart from the consumers.

Offsets
    An offset is a JSON value (int, str, list or object) meaning **the next record to read**
    in one partition. Offsets are compared only within one partition and only by the source
    that made them. The engine never does arithmetic on them; it stores the offset a
    consumer reports and hands it back to ``open`` on the next batch. A partition's state is
    derived from that resume offset alone (bytewax): nothing else survives a restart.

Metadata provider (driver side)
    Lists partitions (including partitions that appear while a pipeline runs), and answers
    earliest / latest offsets and the offset for a timestamp. May do I/O.

Partition consumer (executor side)
    Built on the driver, pickled into a Spark task, so its constructor does no I/O.
    ``open(start)`` connects and positions; ``fetch(max_records, timeout)`` returns the next
    records (an empty result means "nothing more right now"); ``close()`` releases.
    ``position()`` is the offset after the last record returned, i.e. the end offset a
    batch reports.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

Offset = Any  # a JSON value; see the module docstring
#: :attr:`Framing.max_record` unless a source's options say otherwise: MySQL's default
#: ``max_allowed_packet`` (64 MiB), the most one row may take on its wire, and ours
MAX_RECORD = 64 << 20
#: the Arrow type of ``Fetched.headers``: per record, its headers in order
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


@dataclass(frozen=True)
class Fetched:
    """Records from one fetch, column-wise.

    ``values`` holds the raw record payloads; ``positions`` each record's own position
    (Kafka offset, line number …) in ``position_type``, used for error reports and the
    provenance column; ``keys``/``timestamps`` (epoch milliseconds) and ``headers`` (a
    list of ``{key, value}`` per record) may be None when the source has none or was not
    asked for them.
    ``at_end`` is the source's own word that the partition had nothing after these
    records when they were read, so the batch need not wait for an empty fetch; a
    consumer sets it only where it can be trusted (never for a premature end report).
    ``table`` holds records that arrive already in columns (Parquet, Avro objects);
    ``values`` is then empty and the decoder maps the table's columns instead.
    """

    values: pa.Array
    positions: pa.Array
    keys: pa.Array | None = None
    timestamps: pa.Array | None = None
    at_end: bool = False
    table: pa.Table | None = None
    headers: pa.Array | None = None
    #: records read but refused by the source itself (a connector's transform could not
    #: process them and its errors.tolerance is all): ``(position, reason, raw value)``
    #: each, in none of the columns above; the task records them as skipped
    rejected: tuple[tuple[Any, str, bytes | None], ...] = ()
    #: how many records were read and dropped by the source itself (a connector's
    #: ``Filter``): not errors, but read, so a fetch of only those is not an empty one
    dropped: int = 0
    #: records the source found but cannot hand over (a line longer than the framing's
    #: ``max_record`` bytes): ``(position, reason, first bytes)`` each; they are parse
    #: errors, failing the batch unless it skips them (SKIP PARSER ERRORS) as records
    #: that do not decode
    unreadable: tuple[tuple[Any, str, bytes | None], ...] = ()

    def __len__(self) -> int:
        return len(self.positions)

    def joins(self, other: Fetched) -> bool:
        """Whether ``other`` can be decoded together with this fetch (``joined``): both
        carry payloads, not a table, and the same per-record columns."""
        return (
            self.table is None
            and other.table is None
            and (self.keys is None) == (other.keys is None)
            and (self.timestamps is None) == (other.timestamps is None)
            and (self.headers is None) == (other.headers is None)
        )

    @staticmethod
    def joined(parts: Sequence[Fetched]) -> Fetched:
        """Consecutive fetches of one partition as one (each pair ``joins``): a decoder's
        fixed cost per call is paid once for many small fetches of a steady stream."""
        if len(parts) == 1:
            return parts[0]

        def cat(arrays: list[pa.Array | None]) -> pa.Array | None:
            return None if arrays[0] is None else pa.concat_arrays(arrays)

        return Fetched(
            values=pa.concat_arrays([p.values for p in parts]),
            positions=pa.concat_arrays([p.positions for p in parts]),
            keys=cat([p.keys for p in parts]),
            timestamps=cat([p.timestamps for p in parts]),
            at_end=parts[-1].at_end,
            headers=cat([p.headers for p in parts]),
            rejected=tuple(r for p in parts for r in p.rejected),
            dropped=sum(p.dropped for p in parts),
            unreadable=tuple(u for p in parts for u in p.unreadable),
        )

    def raw(self, index: int) -> bytes | None:
        """Record ``index`` as bytes, for an error's excerpt."""
        if self.table is not None:
            import json

            row = self.table.slice(index, 1).to_pylist()[0]
            return json.dumps(row, default=str).encode()
        return self.values[index].as_py()


@dataclass(frozen=True)
class Gap:
    """Records that can no longer be read (fell out of retention); recorded as an error."""

    partition: str
    requested: Offset
    resumed_at: Offset
    reason: str


class MetadataProvider(abc.ABC):
    """Driver-side view of a source's partitions and their offset ranges."""

    #: for a source that shares its answers among pipelines: :meth:`partitions` and
    #: :meth:`watermark` may answer from a reading asked for at or after this
    #: ``time.monotonic()`` (None: asked for now); the scheduler sets it past the reading
    #: its previous look used, so many pipelines share one reading and none misses news
    since: float | None = None
    #: when the shared reading last answered was asked for (``time.monotonic()``), or
    #: None when the answers are this provider's own (asked for when called)
    read_at: float | None = None

    @abc.abstractmethod
    def partitions(self) -> list[str]:
        """All partition ids now, sorted. Called every batch, so new partitions appear."""

    @abc.abstractmethod
    def earliest(self, partition: str) -> Offset:
        """Offset of the oldest record still available."""

    @abc.abstractmethod
    def latest(self, partition: str) -> Offset:
        """Offset after the newest record the source admits to (may lag the true end)."""

    def offset_for_timestamp(self, partition: str, ts_ms: int) -> Offset:
        """Offset of the first record at or after ``ts_ms``; sources without time say so."""
        raise NotImplementedError(f"{type(self).__name__} has no offsets by time")

    def watermark(self, partition: str) -> Offset:
        """A cheap ``latest``, asked for every partition of every batch: it tells whether
        a partition moved since it was drained, and how far a task must read."""
        return self.latest(partition)

    def end(self, partition: str) -> Offset:
        """The exact offset after the last record; ``latest`` unless the source knows better."""
        return self.latest(partition)

    def lag(self, partition: str, committed: Offset, end: Offset = None) -> int | None:
        """Records between ``committed`` and the end (``end``, if the caller already asked
        for it), if the source can count them; None when it cannot."""
        return None

    def size(self, partition: str) -> int | None:
        """Bytes in the partition, for sources of files."""
        return None

    def unchanged(self, offsets: Mapping[str, Offset], since: float) -> bool:
        """Whether, for sure and cheaply, no partition holds anything past ``offsets``
        (each partition's next offset to read, as committed) and none was added, as of
        a reading asked for at or after ``since``: the scheduler then skips an idle turn
        without planning a batch. False when the source cannot tell so cheaply (the
        default: every turn plans)."""
        return False

    def rest(self) -> None:  # noqa: B027 - optional hook
        """Let go of what a pipeline between batches need not hold (a client and its
        threads); the next call opens it again. Called after each plan."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class PartitionConsumer(abc.ABC):
    """Reads one partition from a start offset. Pickled to executors: no I/O in __init__."""

    position_type: ClassVar[pa.DataType] = pa.int64()

    @abc.abstractmethod
    def open(self, start: Offset, stop: Offset = None) -> Gap | None:
        """Connect and position at ``start``; read no further than ``stop`` (a range the
        source's own :meth:`Source.split` made; None: the partition's end).

        Raises OffsetOutOfRangeError if ``start`` no longer exists, unless the pipeline
        allows a restart from earliest, in which case it positions there and returns the
        Gap it skipped.
        """

    @abc.abstractmethod
    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        """Wait up to ``timeout_s`` for the first record, then return what is ready (at
        most ``max_records``). Empty means nothing arrived in time: the batch ends there.
        So does ``at_end``, without the wait."""

    @abc.abstractmethod
    def position(self) -> Offset:
        """Offset after the last record returned (== start before any fetch)."""

    @abc.abstractmethod
    def close(self) -> None: ...


class Source(abc.ABC):
    """A configured source: a factory for its metadata provider and partition consumers.

    Built from (location, config, credentials) at the boundary; validation of options
    happens here, before any connection is made.
    """

    name: ClassVar[str]
    #: Arrow type of ``Fetched.positions`` (the provenance offset column).
    position_type: ClassVar[pa.DataType] = pa.int64()
    #: records are lines of files, numbered from 0 (``IGNORE n LINES`` applies)
    line_oriented: ClassVar[bool] = False
    #: partitions are files (``information_schema.PIPELINES_FILES`` lists them)
    lists_files: ClassVar[bool] = False
    #: a small batch (its offsets count its records) may run its tasks in the engine's
    #: own process instead of a Spark job: only sources whose reading is the engine's
    #: own code and bounded (not a plugin's), Kafka
    runs_in_driver: ClassVar[bool] = False
    #: records arrive already in columns (``Fetched.table``), as from a connector
    structured: ClassVar[bool] = False
    #: the ``experimental_features_config`` flag that must be on to create a pipeline
    feature: ClassVar[str | None] = None

    @classmethod
    def signs_in_as_server(cls, config: Mapping[str, Any], credentials: Mapping[str, Any]) -> bool:
        """Whether a source of these options would sign in with the server's own login
        (an AWS default chain: its environment, profile or instance role) because they
        give none: such a pipeline reads what the server may read, so whoever makes it
        needs the privilege to read the server's files. No I/O."""
        return False

    @abc.abstractmethod
    def metadata(self, timeout_s: float | None = None) -> MetadataProvider:
        """A provider whose source calls give up after ``timeout_s`` (None: the source's
        own connect timeout)."""

    def check(self) -> str:
        """Ask the source whether a batch could read it (``CREATE PIPELINE`` does, unless
        ``SKIP SOURCE CHECK``): what it found, in words, or the error a batch would get
        (unreachable, refused credentials, no such topic)."""
        meta = self.metadata()
        try:
            n = len(meta.partitions())
        finally:
            meta.close()
        return f"{self.label()} answered with {n} partition{'' if n == 1 else 's'}"

    @abc.abstractmethod
    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> PartitionConsumer: ...

    @abc.abstractmethod
    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> Offset:
        """Where a partition that has no committed offset begins (``earliest``/``latest``)."""

    def describe(self) -> Mapping[str, Any]:
        """Non-secret summary for views and logs."""
        return {"source": self.name}

    def label(self) -> str:
        """How errors name the source: ``topic 'clicks'``, ``files '/data/*.json'``."""
        return f"source {self.name}"

    def locate(self, partition: str, position: Any) -> str:
        """Where a record is, for an error message."""
        return f"{self.label()} partition {partition} offset {position}"

    def reached(self, offset: Offset, latest: Offset) -> bool:
        """Whether a consumer at ``offset`` has read everything ``latest`` promised.

        A ``latest`` may under-report the end but never over-report it, so while this is
        False there are certainly records left. No I/O."""
        return offset == latest

    def secret_config_keys(self) -> frozenset[str]:
        """CONFIG keys given that hold secrets: the engine stores them as credentials
        (sealed at rest, redacted when shown)."""
        return frozenset()

    def inferred_table(self, name: str) -> str | None:
        """The ``CREATE TABLE`` of the table ``CREATE INFERRED PIPELINE`` makes for this
        source, or None where the source has no static schema."""
        return None

    def ready(self, partitions: list[str], offsets: Mapping[str, Any]) -> list[str]:
        """The partitions a batch may read, given every known partition's offset: all,
        unless the source orders them (a child shard after its parents) or knows some
        can never yield another record."""
        return partitions

    def assignment(self, partitions: list[str]) -> dict[str, int] | None:
        """Which task reads each partition, where the source groups partitions into
        tasks (a connector's ``tasks.max``); None: one task per partition."""
        return None

    def partition_of(self, key: str) -> str:
        """The partition a user named in ``ALTER PIPELINE … SET OFFSETS``: its id, or
        for sources that show partitions as JSON, that JSON (KEY of
        ``PIPELINES_SOURCE_OFFSETS``) in any spacing or key order."""
        return key

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        """The partition as a JSON object (the KEY of PIPELINES_SOURCE_OFFSETS)."""
        return {"partition": partition}

    def framed(self, framing: Framing) -> Source:
        """This source cutting objects into records with a format's framing (sources of
        objects only; set once, at assembly)."""
        raise NotImplementedError(f"{type(self).__name__} does not read objects")

    def split(
        self, partition: str, start: Offset, watermark: Offset, size: int | None, target: int
    ) -> list[tuple[Offset, Offset]]:
        """The ``(start, stop)`` ranges of a partition that tasks of one batch may read in
        parallel, each about ``target`` bytes (``stop`` None: to the end). Most sources
        cannot split: one range."""
        return [(start, None)]

    def merge(self, partition: str, ends: list[Offset]) -> Offset:
        """The partition's end offset after a batch whose tasks read the ranges that ended
        at ``ends`` (in range order), all of which completed."""
        return ends[-1]

    def pending(self, offset: Offset, watermark: Offset) -> int | None:
        """Bytes between ``offset`` and ``watermark``, for sources that can tell (files:
        the planner balances tasks by them); None otherwise."""
        return None


def start_at(source: Source, meta: MetadataProvider, partition: str, policy: str) -> Offset:
    """Where a partition the pipeline has no offset for begins: the source's own answer
    for ``earliest`` / ``latest``; for ``at:<epoch ms>`` the offset of its first record
    at or after that time (the metadata provider's ``offset_for_timestamp``)."""
    if policy.startswith("at:"):
        return meta.offset_for_timestamp(partition, int(policy[3:]))
    return source.start_offset(meta, partition, policy)


@dataclass(frozen=True)
class Frame:
    """Records cut from an object: ``values`` (payloads, for a record decoder) or ``table``
    (records already in columns); ``positions`` each record's place in the object (a byte
    offset for lines, a row number otherwise); ``end`` the byte the object can be
    resumed from after these records (meaningful only where the framing is resumable)."""

    positions: pa.Array
    end: int
    values: pa.Array | None = None
    table: pa.Table | None = None
    #: records cut out but not handed over (:attr:`Fetched.unreadable`)
    unreadable: tuple[tuple[int, str, bytes | None], ...] = ()


class Framing(abc.ABC):
    """How the bytes of one object become records: lines, Parquet row groups, Avro
    blocks. A format supplies it; object sources drive it. Pickled to executors with the
    source: no I/O in __init__.

    ``frames(f, start, stop, final, align)`` reads the object ``f`` (seekable unless the
    object is compressed) from byte ``start`` and yields records that *begin* before
    ``stop`` (None: to the end), in bounded memory: one block, row group or chunk of
    records at a time. ``align`` says ``start`` is an arbitrary byte of a split, not a
    record boundary. ``final`` says the object is complete: a last line without its
    newline is a record, not a line still being written."""

    #: what a position counts, for error reports ("byte 120", "row 7")
    position_name: ClassVar[str] = "byte"
    #: ranges of an uncompressed object can be read by different tasks
    splittable: ClassVar[bool] = False
    #: records can be resumed from a byte (an object that grows is read on from there)
    resumable: ClassVar[bool] = False
    #: reads a stream front to back, so a compressed object can be decompressed on the fly
    streams: ClassVar[bool] = True
    #: the most bytes one record may take (a line, an Avro value): a longer one is not
    #: held in memory but reported (:attr:`Frame.unreadable`) or, where the framing cannot
    #: find where the next record begins, fails the object naming its byte
    max_record: int = MAX_RECORD

    def limited(self, max_record: int) -> Framing:
        """This framing with records of at most ``max_record`` bytes (a copy)."""
        other = copy.copy(self)
        other.max_record = max_record
        return other

    @abc.abstractmethod
    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]: ...

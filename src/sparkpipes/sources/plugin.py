"""Pinot-style stream plugins (seed 003) on the source SPI.

A plugin for a stream type ``foo`` is a consumer factory (:class:`StreamConsumerFactory`)
that makes a metadata provider (:class:`StreamMetadataProvider`: partition count, offsets
smallest / largest / by time) and partition-level consumers
(:class:`PartitionLevelConsumer`: messages from an offset), and optionally a message
decoder (:class:`StreamMessageDecoder`, in ``sparkpipes.formats.stream``). It is named by
``streamType`` and configured by ``stream.foo.*`` keys, every value a string, as in a
Pinot table config; the factory is found by streamType among the built-in types
(:data:`STREAM_TYPES`: ``redis``), the ``sparkpipes.streams`` entry points, or by
``stream.foo.consumer.factory.class.name`` as a Python path.

What the adapter (:class:`PluginSource`) promises the engine, whatever the plugin does:

* offsets are integers, ``next offset to read``; a fetch's messages have strictly
  increasing offsets, none below the offset asked for, and the batch's next offset lies
  beyond its last message — a plugin that goes backwards is an error naming the
  partition and the offsets, never a silent duplicate;
* the number of partitions never shrinks: a partition the pipeline has an offset for
  that the plugin no longer lists is an error;
* a new pipeline starts at ``smallest`` or ``largest`` (``auto.offset.reset``), a
  restarted one at its checkpoint; a resume offset below ``smallest`` (records aged out)
  is a gap, handled by the pipeline's out-of-range policy;
* ``stream.foo.connection.timeout.millis`` (default 30,000) bounds every metadata call
  and ``stream.foo.fetch.timeout.millis`` (default 5,000) every fetch: a plugin call
  that does not return in time is a transient error, retried by the batch;
* an exception from the plugin is transient (the batch is retried), unless it is a
  sparkpipes error, whose kind decides.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from sparkpipes.config import Secret, urls
from sparkpipes.errors import (
    ConfigError,
    OffsetOutOfRangeError,
    SourceError,
    SourceUnavailableError,
    SparkpipesError,
)
from sparkpipes.sources.base import (
    HEADERS_TYPE,
    Fetched,
    Gap,
    MetadataProvider,
    PartitionConsumer,
    Source,
)
from sparkpipes.util.registry import resolve_class

#: built-in stream types → their consumer factory
STREAM_TYPES = {"redis": "sparkpipes.sources.redis:RedisConsumerFactory"}
ENTRY_POINT_GROUP = "sparkpipes.streams"
CONNECTION_TIMEOUT_MS = 30_000
FETCH_TIMEOUT_MS = 5_000
_T = TypeVar("_T")


# -- the plugin SPI --------------------------------------------------------------------
@dataclass(frozen=True)
class StreamConfig:
    """A stream's configuration as its plugin sees it: ``props`` holds every
    ``stream.<type>.*`` key without that prefix (``topic.name``, ``some.buffer.size`` …),
    secrets included (revealed), all strings."""

    stream_type: str
    topic: str
    props: Mapping[str, str] = field(default_factory=dict, repr=False)
    connection_timeout_ms: int = CONNECTION_TIMEOUT_MS
    fetch_timeout_ms: int = FETCH_TIMEOUT_MS

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)


@dataclass(frozen=True)
class StreamMessage:
    """One message: its payload, offset (an integer of at most 64 bits), and optionally
    key, timestamp (epoch milliseconds) and headers."""

    value: bytes | None
    offset: int
    key: bytes | None = None
    timestamp_ms: int | None = None
    headers: Mapping[str, bytes] | None = None


@dataclass(frozen=True)
class MessageBatch:
    """What a fetch returns: messages in offset order and the offset to fetch from next
    (after the last message; the offset asked for when there are none)."""

    messages: Sequence[StreamMessage]
    next_offset: int


class StreamMetadataProvider(abc.ABC):
    """Partition count and offsets of a stream (driver side)."""

    @abc.abstractmethod
    def fetch_partition_count(self, timeout_ms: int) -> int: ...

    @abc.abstractmethod
    def fetch_offset(self, criteria: str, partition: int, timeout_ms: int) -> int:
        """The offset of the oldest message still there (``smallest``) or the one after
        the newest (``largest``)."""

    def fetch_offset_for_time(self, partition: int, timestamp_ms: int, timeout_ms: int) -> int:
        """The offset of the first message at or after ``timestamp_ms`` (optional)."""
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class PartitionLevelConsumer(abc.ABC):
    """Reads one partition (executor side)."""

    @abc.abstractmethod
    def fetch_messages(self, start_offset: int, timeout_ms: int, max_messages: int) -> MessageBatch:
        """Up to ``max_messages`` messages from ``start_offset`` on, waiting at most
        ``timeout_ms`` for the first one."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class StreamConsumerFactory(abc.ABC):
    """Made from the stream config; pickled to executors, so no I/O in ``__init__``."""

    def __init__(self, config: StreamConfig) -> None:
        self.config = config

    @abc.abstractmethod
    def create_metadata_provider(self, client_id: str) -> StreamMetadataProvider: ...

    @abc.abstractmethod
    def create_partition_consumer(
        self, client_id: str, partition: int
    ) -> PartitionLevelConsumer: ...


class StreamMessageDecoder(abc.ABC):
    """Turns one message payload into a row (field name → value); pickled to executors,
    so no I/O in ``__init__``. ``init`` gets the ``stream.<type>.decoder.prop.*`` props,
    the table's columns and the topic before the first ``decode``."""

    def init(self, props: Mapping[str, str], fields: set[str], topic: str) -> None:  # noqa: B027
        pass

    @abc.abstractmethod
    def decode(self, payload: bytes) -> Mapping[str, Any] | None:
        """The row, or None when the payload is not a record (a bad record)."""


def resolve_decoder(class_name: str) -> type[StreamMessageDecoder]:
    return resolve_class(
        class_name,
        builtin={},
        group="sparkpipes.stream_decoders",
        base=StreamMessageDecoder,
        what="decoder.class.name",
        hint="a sparkpipes StreamMessageDecoder subclass",
    )


def resolve_factory(stream_type: str, class_name: str | None) -> type[StreamConsumerFactory]:
    """The factory of ``stream_type``: a built-in or entry-point type, or ``class_name``
    (``stream.<type>.consumer.factory.class.name``) as a Python path."""
    return resolve_class(
        class_name or stream_type,
        builtin=dict(STREAM_TYPES),
        group=ENTRY_POINT_GROUP,
        base=StreamConsumerFactory,
        what=f"stream.{stream_type}.consumer.factory.class.name" if class_name else "streamType",
        hint="a sparkpipes StreamConsumerFactory subclass",
    )


# -- the adapter onto the source SPI ---------------------------------------------------
def _within(timeout_ms: int, what: str, call: Callable[[], _T], **where: Any) -> _T:
    """``call()``, or a transient error if it does not return within ``timeout_ms`` (plus
    a second for the plugin's own timeout to fire first). Plugin exceptions are transient
    unless they are sparkpipes errors."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="sparkpipes-stream-plugin", daemon=True)
    t.start()
    t.join(timeout_ms / 1000 + 1.0)
    if t.is_alive():
        raise SourceUnavailableError(f"{what} did not answer within {timeout_ms} ms", **where)
    e = box.get("error")
    if e is None:
        return box["value"]
    if isinstance(e, SparkpipesError):
        raise e
    if isinstance(e, NotImplementedError):
        raise ConfigError(f"{what} is not supported by the stream plugin", **where) from None
    raise SourceUnavailableError(f"{what} failed: {type(e).__name__}: {e}", **where) from None


class PluginSource(Source):
    """A Pinot-style stream plugin as a source. ``location`` is ``<type>/<topic>``;
    ``config`` the stream config's ``streamType`` and ``stream.<type>.*`` keys, and
    ``credentials`` its secret ones, with the password of any URL among them
    (``url:<key>``), which the plugin gets back inside its URL, as the user wrote it."""

    name = "stream"
    position_type = pa.int64()

    def __init__(
        self, location: str, config: Mapping[str, Any], credentials: Mapping[str, Secret]
    ) -> None:
        stype = str(config.get("streamType") or location.partition("/")[0])
        if not stype:
            raise ConfigError("a stream plugin source needs streamType")
        prefix = f"stream.{stype}."
        props: dict[str, str] = {}
        secrets = {k: v for k, v in credentials.items() if urls.option_of(k) is None}
        given = urls.revealed(config, credentials)  # URLs as the user wrote them
        for key, value in {**given, **{k: v.reveal() for k, v in secrets.items()}}.items():
            if key == "streamType":
                continue
            if not key.startswith(prefix):
                raise ConfigError(
                    f"stream config key '{key}' does not belong to streamType {stype} "
                    f"(keys start with '{prefix}')"
                )
            props[key[len(prefix) :]] = str(value)
        topic = props.get("topic.name") or location.partition("/")[2]
        if not topic:
            raise ConfigError(f"stream type {stype} needs {prefix}topic.name")
        self.secret_keys = frozenset(k[len(prefix) :] for k in secrets)
        self.stream = StreamConfig(
            stype,
            topic,
            props,
            _millis(props, "connection.timeout.millis", CONNECTION_TIMEOUT_MS, prefix),
            _millis(props, "fetch.timeout.millis", FETCH_TIMEOUT_MS, prefix),
        )
        factory = resolve_factory(stype, props.get("consumer.factory.class.name"))
        self.factory = factory(self.stream)
        #: keys, headers and timestamps come with every message
        self.record_metadata = True

    @property
    def label_name(self) -> str:
        return f"{self.stream.stream_type} stream '{self.stream.topic}'"

    def metadata(self, timeout_s: float | None = None) -> PluginMetadata:
        return PluginMetadata(self)

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> PluginPartitionConsumer:
        return PluginPartitionConsumer(self, int(partition), out_of_range, pipeline)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> int:
        return meta.earliest(partition) if policy == "earliest" else meta.latest(partition)

    def describe(self) -> Mapping[str, Any]:
        return {"source": self.stream.stream_type, "topic": self.stream.topic}

    def label(self) -> str:
        return self.label_name

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"topic": self.stream.topic, "partition": int(partition)}

    def reached(self, offset: Any, latest: Any) -> bool:
        return offset >= latest

    def ready(self, partitions: list[str], offsets: Mapping[str, Any]) -> list[str]:
        gone = sorted((p for p in offsets if p not in partitions), key=int)
        if gone:
            raise SourceError(
                f"{self.label_name} lists {len(partitions)} partitions, fewer than before "
                f"(partition {gone[0]} has an offset): the number of partitions of a "
                "stream must never shrink"
            )
        return partitions


def _millis(props: Mapping[str, str], key: str, default: int, prefix: str) -> int:
    text = props.get(key)
    if text is None:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"{prefix}{key} must be a positive number of milliseconds")
    return int(text)


class PluginMetadata(MetadataProvider):
    def __init__(self, source: PluginSource) -> None:
        self.source = source
        self.timeout = source.stream.connection_timeout_ms
        self._provider: StreamMetadataProvider | None = None

    def _ask(self, what: str, call: Callable[[StreamMetadataProvider], _T], **where: Any) -> _T:
        def run() -> _T:
            if self._provider is None:
                self._provider = self.source.factory.create_metadata_provider("sparkpipes")
            return call(self._provider)

        return _within(self.timeout, f"{self.source.label_name}: {what}", run, **where)

    def partitions(self) -> list[str]:
        n = self._ask("partition count", lambda p: p.fetch_partition_count(self.timeout))
        if not isinstance(n, int) or n < 0:
            raise SourceError(f"{self.source.label_name}: the plugin gave partition count {n!r}")
        return [str(i) for i in range(n)]

    def _offset(self, criteria: str, partition: str) -> int:
        return self._ask(
            f"{criteria} offset of partition {partition}",
            lambda p: p.fetch_offset(criteria, int(partition), self.timeout),
            partition=partition,
        )

    def earliest(self, partition: str) -> int:
        return self._offset("smallest", partition)

    def latest(self, partition: str) -> int:
        return self._offset("largest", partition)

    def end(self, partition: str) -> int:
        return self.latest(partition)

    def offset_for_timestamp(self, partition: str, ts_ms: int) -> int:
        return self._ask(
            f"offset at time {ts_ms} of partition {partition}",
            lambda p: p.fetch_offset_for_time(int(partition), ts_ms, self.timeout),
            partition=partition,
        )

    def lag(self, partition: str, committed: Any, end: Any = None) -> int | None:
        end = self.end(partition) if end is None else end
        return None if committed is None else max(0, end - committed)

    def close(self) -> None:
        if self._provider is not None:
            self._provider.close()
            self._provider = None


class PluginPartitionConsumer(PartitionConsumer):
    position_type = pa.int64()

    def __init__(
        self, source: PluginSource, partition: int, out_of_range: str, pipeline: str | None
    ) -> None:
        self.source = source
        self.partition = partition
        self.out_of_range = out_of_range
        self.pipeline = pipeline
        self._consumer: PartitionLevelConsumer | None = None
        self._next: int | None = None

    def _where(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "partition": str(self.partition)}

    def open(self, start: int, stop: int | None = None) -> Gap | None:
        meta = PluginMetadata(self.source)
        try:
            low = meta.earliest(str(self.partition))
        finally:
            meta.close()
        gap = None
        if start < low:
            what = (
                f"offset {start} of {self.source.label_name} partition {self.partition} is "
                f"out of range: its oldest message is at offset {low} (aged out of the stream)"
            )
            if self.out_of_range != "earliest":
                raise OffsetOutOfRangeError(what, offset=start, **self._where())
            gap = Gap(str(self.partition), start, low, what + f"; resumed at offset {low}")
            start = low
        self._consumer = _within(
            self.source.stream.connection_timeout_ms,
            f"{self.source.label_name}: opening partition {self.partition}",
            lambda: self.source.factory.create_partition_consumer("sparkpipes", self.partition),
            **self._where(),
        )
        self._next = start
        return gap

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        start = self._next
        timeout_ms = max(1, min(int(timeout_s * 1000), self.source.stream.fetch_timeout_ms))
        batch = _within(
            timeout_ms,
            f"{self.source.label_name}: fetching partition {self.partition}",
            lambda: self._consumer.fetch_messages(start, timeout_ms, max_records),
            **self._where(),
        )
        msgs = list(batch.messages)[:max_records]
        last = start - 1
        for m in msgs:
            if m.offset <= last:
                raise SourceError(
                    f"{self.source.label_name} partition {self.partition} went backwards: "
                    f"offset {m.offset} came after offset {last} (a fetch from offset "
                    f"{start}); offsets must increase",
                    offset=m.offset,
                    **self._where(),
                )
            last = m.offset
        nxt = batch.next_offset if len(msgs) == len(batch.messages) else last + 1
        if nxt <= last or nxt < start:
            raise SourceError(
                f"{self.source.label_name} partition {self.partition}: the next offset "
                f"{nxt} is not after the last message's {last} (a fetch from offset {start})",
                **self._where(),
            )
        self._next = nxt
        positions = pa.array([m.offset for m in msgs], pa.int64())
        if not msgs:
            return Fetched(pa.array([], pa.binary()), positions)
        headers = [[{"key": k, "value": v} for k, v in (m.headers or {}).items()] for m in msgs]
        return Fetched(
            values=pa.array([m.value for m in msgs], pa.binary()),
            positions=positions,
            keys=pa.array([m.key for m in msgs], pa.binary()),
            timestamps=pa.array([m.timestamp_ms for m in msgs], pa.int64()),
            headers=pa.array(headers, HEADERS_TYPE),
        )

    def position(self) -> int:
        return self._next

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

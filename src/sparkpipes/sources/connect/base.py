"""The connector SPI: Kafka Connect's source-connector model, in Python.

A Kafka Connect source connector validates its configuration, splits its work into task
configurations for ``tasks.max``, and each task polls records that carry a **source
partition** (a JSON object, ``{"shardId": "shardId-000000000001"}``) and a **source
offset** (a JSON object, ``{"sequenceNumber": "4960…"}``). sparkpipes maps that model onto
its own source SPI (``sparkpipes.sources.base``) in ``sources.connect.source``:

* a source partition is a partition (its id is the partition's compact JSON);
* a source offset is that partition's offset. As in Kafka Connect it is the offset *of
  the last record read*, and a task handed it resumes after that record; a partition
  nothing was read from has the connector's start offset (``{}`` means "from the
  beginning", anything else the connector defines);
* a connector task is a Spark task: the partitions :meth:`SourceConnector.assign` gives
  one task are read by one Spark task of each batch, and ``PIPELINES_SOURCE_OFFSETS``
  shows that assignment as TASK_ID.

Offsets are committed in the same Delta commit as the rows they produced, so a restart
resumes exactly after the last committed record, as for Kafka.

A connector is built on the driver from a :class:`ConnectorConfig` and does no I/O in
its constructor; :meth:`SourceConnector.reader` returns the executor side, a
:class:`PartitionReader` that is pickled into Spark tasks (again no I/O before
:meth:`PartitionReader.open`).
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa

from sparkpipes.config import Secret, urls
from sparkpipes.errors import ConfigError

#: every connector's keys; the rest belong to the connector
COMMON_KEYS = frozenset({"connector.class", "tasks.max"})
DEFAULT_TASKS_MAX = 4


def compact(value: Any) -> str:
    """The canonical JSON text of a partition or offset (sorted keys, no spaces), as the
    KEY and VALUE columns of ``PIPELINES_SOURCE_OFFSETS`` show it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class ConnectorConfig:
    """A connector's CONFIG, checked for the keys every connector shares. ``values`` holds
    the non-secret keys, ``secrets`` the keys the connector declares secret (lifted out of
    CONFIG at the boundary, so that they are stored and shown as credentials are) and the
    password of each URL option that held one (``url:<key>``, see :meth:`url`)."""

    connector_class: str
    tasks_max: int
    values: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, Secret] = field(default_factory=dict)
    pipeline: str | None = None

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.secrets:
            return self.secrets[key].reveal()
        return self.values.get(key, default)

    def url(self, key: str) -> str | None:
        """A URL option as the user wrote it, its password (sealed as ``url:<key>``) put
        back: for a client that takes the URL whole. :meth:`get` gives it redacted, as
        it is shown."""
        text = self.text(key)
        return urls.restore(text, self.secrets.get(urls.secret_key(key))) if text else text

    def require(self, key: str) -> Any:
        value = self.get(key)
        if value is None or value == "":
            raise ConfigError(
                f"connector {self.connector_class} needs CONFIG key '{key}'",
                pipeline=self.pipeline,
            )
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key, default)
        if value is not None and not isinstance(value, str):
            raise ConfigError(
                f"CONFIG key '{key}' must be a string, got {json.dumps(value)}",
                pipeline=self.pipeline,
            )
        return value

    def integer(self, key: str, default: int, low: int = 0) -> int:
        value = self.get(key, default)
        try:
            out = int(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            out = None
        if out is None or out < low or str(out) != str(value).strip():
            raise ConfigError(
                f"CONFIG key '{key}' must be an integer of at least {low}, got {json.dumps(value)}",
                pipeline=self.pipeline,
            )
        return out


@dataclass(frozen=True)
class SourceRecord:
    """One record a connector read: ``partition``/``offset`` as above; ``value`` the
    record (the ``record`` column, any JSON value); ``key`` what identifies it (the
    ``id`` column; the connector's choice, by default partition and offset together);
    ``topic`` the name it is filed under (the ``topic`` column)."""

    partition: Mapping[str, Any]
    offset: Mapping[str, Any]
    value: Any
    topic: str
    key: Any = None
    timestamp_ms: int | None = None

    def id(self) -> Any:
        return self.key if self.key is not None else {**self.partition, **self.offset}


@dataclass(frozen=True)
class RecordColumns:
    """Records as Arrow columns of JSON text (``id``, ``record``, ``offsets``) and
    strings (``topic``), the form the engine loads. A reader that can build them
    without a :class:`SourceRecord` per record hands them over directly."""

    topic: pa.Array
    id: pa.Array
    record: pa.Array
    offsets: pa.Array
    timestamps: pa.Array | None = None

    @classmethod
    def of(cls, records: Sequence[SourceRecord]) -> RecordColumns:
        ts = [r.timestamp_ms for r in records]
        return cls(
            pa.array([r.topic for r in records], pa.string()),
            pa.array([compact(r.id()) for r in records], pa.string()),
            pa.array([compact(r.value) for r in records], pa.string()),
            pa.array([compact(r.offset) for r in records], pa.string()),
            pa.array(ts, pa.int64()) if any(t is not None for t in ts) else None,
        )


@dataclass(frozen=True)
class Polled:
    """A poll's records (as :class:`SourceRecord` objects, or already as ``columns``),
    the offset after them (the last record's, or where the reader already was), and
    ``at_end``: the reader's word that the partition has nothing more right now."""

    records: Sequence[SourceRecord]
    offset: Mapping[str, Any]
    at_end: bool = False
    columns: RecordColumns | None = None

    def as_columns(self) -> RecordColumns:
        return self.columns if self.columns is not None else RecordColumns.of(self.records)


class PartitionReader(abc.ABC):
    """Executor side: reads one source partition from an offset. Pickled into Spark
    tasks, so no I/O before :meth:`open`."""

    @abc.abstractmethod
    def open(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        """Connect and position just after ``offset`` (``{}``: the beginning)."""

    @abc.abstractmethod
    def poll(self, max_records: int, timeout_s: float) -> Polled:
        """Up to ``max_records`` records, waiting at most ``timeout_s`` for the first."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class SourceConnector(abc.ABC):
    """Driver side of a connector: validates its CONFIG (in the constructor, no I/O),
    lists source partitions, says where a partition starts and which task reads it.

    Subclasses declare the Java class names users write for them (``class_names``), the
    CONFIG keys they accept and which of those are secrets.
    """

    #: the fully qualified Java class names this connector answers to
    class_names: ClassVar[tuple[str, ...]] = ()
    #: CONFIG keys besides ``connector.class`` and ``tasks.max``
    config_keys: ClassVar[frozenset[str]] = frozenset()
    #: CONFIG (or CREDENTIALS) keys that hold secrets
    secret_keys: ClassVar[frozenset[str]] = frozenset()
    #: what one partition is called in messages ("shard", "table")
    partition_noun: ClassVar[str] = "partition"
    #: whether its records carry a timestamp of their own (Connect's
    #: ``SourceRecord.timestamp()``), which ``InsertField``'s ``timestamp.field`` and
    #: ``TimestampRouter`` read; a connector that gives none (Confluent's JDBC source)
    #: says False, and those see null, as in Connect
    record_timestamps: ClassVar[bool] = True
    #: the connector's own keys that change nothing here → why (accepted, kept, reported;
    #: Connect's worker keys are in ``sources.connect.framework``)
    not_applicable_keys: ClassVar[Mapping[str, str]] = {}

    def __init__(self, config: ConnectorConfig) -> None:
        self.config = config

    @classmethod
    def inapplicable(cls, config: Mapping[str, Any]) -> dict[str, str]:
        """The keys of ``config`` (as given) that change nothing here, and why: those of
        :attr:`not_applicable_keys` given, unless the connector honours one in the mode
        ``config`` asks for."""
        return {k: why for k, why in cls.not_applicable_keys.items() if k in config}

    @classmethod
    def signs_in_as_server(cls, config: Mapping[str, Any], credentials: Mapping[str, Any]) -> bool:
        """As :meth:`sparkpipes.sources.base.Source.signs_in_as_server`, for this
        connector's CONFIG and CREDENTIALS as given."""
        return False

    @abc.abstractmethod
    def partitions(self) -> list[dict[str, Any]]:
        """The source partitions now (I/O; called every batch, so new ones appear)."""

    @abc.abstractmethod
    def reader(self) -> PartitionReader:
        """The executor side."""

    def start_offset(self, partition: Mapping[str, Any], policy: str) -> dict[str, Any]:
        """Where a partition without a committed offset starts: ``earliest`` (``{}``) or
        ``latest`` (the connector's own marker)."""
        return {}

    def ready(
        self, partitions: Sequence[Mapping[str, Any]], offsets: Mapping[str, Any]
    ) -> list[Mapping[str, Any]]:
        """The partitions a batch may read now, given every partition's offset (by
        :func:`compact` id): all, unless the source orders them (a Kinesis child shard
        waits until its parents are read to their end)."""
        return list(partitions)

    def finished(self, offset: Any) -> bool:
        """Whether a partition at ``offset`` can never yield another record."""
        return False

    def assign(self, partitions: Sequence[Mapping[str, Any]]) -> list[int]:
        """The task (0 … ``tasks.max``-1) of each of ``partitions`` (sorted by id), as
        Kafka Connect's ``taskConfigs`` spreads them: round robin, so that
        ``tasks.max`` equal to the partition count gives one partition per task."""
        return [i % self.config.tasks_max for i in range(len(partitions))]

    def describe(self) -> dict[str, Any]:
        """Non-secret CONFIG, for views and logs."""
        return {"connector.class": self.config.connector_class, **self.config.values}

    def label(self) -> str:
        return f"connector {self.config.connector_class}"

    def check(self) -> str:
        """What a batch would find (CREATE PIPELINE's source check)."""
        n = len(self.partitions())
        return f"{self.label()} found {n} {self.partition_noun}{'' if n == 1 else 's'}"

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

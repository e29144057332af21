"""Kafka source on confluent-kafka (librdkafka).

Location is ``'host:port[,host:port…]/topic'`` as in ``LOAD DATA KAFKA``. Client options
are an allow-list: anything else, and options that would run code or commands on the
executors (``sasl.jaas.config``, ``plugin.library.paths``, ``sasl.kerberos.kinit.cmd``,
``ssl.engine.location``), is refused by name. Secrets (``sasl.password``,
``ssl.key.password``, ``ssl.keystore.password``) belong in CREDENTIALS, never in CONFIG.

Offsets are Kafka offsets (ints), "next offset to read". A batch reads a partition until
it has ``max_records``, librdkafka reports the partition's end (``enable.partition.eof``)
or a fetch comes back empty, and reports ``last offset read + 1``. The high watermark is
never taken as "everything is read": some brokers (Tansu) report the last batch's base
offset + 1 from ListOffsets, which can lie below the true end. librdkafka's end report
comes from a fetch response (whose watermark Tansu gets right) that found nothing more; a
broker whose fetch responses under-reported it would make librdkafka report the end at
the watermark and skip what follows once, so an end report at the offset the consumer
opened at is not trusted (the empty fetch decides there) and a batch cannot stall on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import methodcaller
from typing import Any

import numpy as np
import pyarrow as pa

from sparkpipes.config import Secret
from sparkpipes.errors import (
    ConfigError,
    OffsetOutOfRangeError,
    SourceError,
    SourceUnavailableError,
)
from sparkpipes.sources.base import Fetched, Gap, MetadataProvider, PartitionConsumer, Source

ALLOWED_CONFIG = {
    "bootstrap.servers",
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "isolation.level",
    "client.id",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "fetch.wait.max.ms",
    "fetch.message.max.bytes",
    "max.partition.fetch.bytes",
    "receive.message.max.bytes",
    "queued.min.messages",
    "queued.max.messages.kbytes",
    "fetch.queue.backoff.ms",
    "socket.timeout.ms",
    "socket.keepalive.enable",
    "metadata.max.age.ms",
    "check.crcs",
}
ALLOWED_SSL_PREFIX = "ssl."
SECRET_KEYS = {"sasl.password", "ssl.key.password", "ssl.keystore.password", "sasl.username"}
FORBIDDEN = {
    "sasl.jaas.config": "Java JAAS configuration is not supported; give sasl.mechanism in "
    "CONFIG and sasl.username / sasl.password in CREDENTIALS",
    "plugin.library.paths": "loading client plugins would run code on every executor",
    "sasl.kerberos.kinit.cmd": "it runs a shell command on every executor",
    "ssl.engine.location": "loading an OpenSSL engine would run code on every executor",
    "ssl.engine.id": "OpenSSL engines are not supported",
    "enable.auto.commit": "sparkpipes commits offsets with the data, never to Kafka",
    "group.id": "sparkpipes assigns partitions itself and does not use consumer groups",
    "auto.offset.reset": "use the pipeline's offsets / on_offset_out_of_range settings",
}
ISOLATION_LEVELS = {"read_committed", "read_uncommitted"}

_ERROR, _VALUE = methodcaller("error"), methodcaller("value")

# librdkafka error codes handled by name (see rdkafka.h)
_ERR_PARTITION_EOF = -191
_ERR_AUTO_OFFSET_RESET = -140
_ERR_OFFSET_OUT_OF_RANGE = 1
_TRANSPORT_ERRORS = {-195, -185, -187, -192}  # _TRANSPORT, _TIMED_OUT, _ALL_BROKERS_DOWN, _RESOLVE


def parse_location(location: str) -> tuple[str, str]:
    servers, sep, topic = location.rpartition("/")
    if not sep or not servers or not topic:
        raise ConfigError(f"Kafka location must look like 'host:port/topic', got '{location}'")
    return servers, topic


def _str_config(config: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in config.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        out[k] = str(v)
    return out


class KafkaSource(Source):
    name = "kafka"
    position_type = pa.int64()

    def __init__(
        self, location: str, config: Mapping[str, Any], credentials: Mapping[str, Secret]
    ) -> None:
        self.servers, self.topic = parse_location(location)
        for key in config:
            if key in FORBIDDEN:
                raise ConfigError(f"Kafka option '{key}' is not allowed: {FORBIDDEN[key]}")
            if key in SECRET_KEYS - {"sasl.username"}:
                raise ConfigError(
                    f"Kafka option '{key}' is a secret: give it in CREDENTIALS, not CONFIG"
                )
            if key.startswith(ALLOWED_SSL_PREFIX) or key in ALLOWED_CONFIG:
                continue
            raise ConfigError(
                f"unknown or unsupported Kafka option '{key}' (allowed: "
                f"{', '.join(sorted(ALLOWED_CONFIG))}, ssl.*)"
            )
        for key in credentials:
            if key not in SECRET_KEYS:
                raise ConfigError(
                    f"unknown Kafka credential '{key}' (allowed: {', '.join(sorted(SECRET_KEYS))})"
                )
        level = config.get("isolation.level")
        if level is not None and level not in ISOLATION_LEVELS:
            raise ConfigError(
                f"isolation.level must be read_committed or read_uncommitted, got '{level}'"
            )
        self.config = _str_config(config)
        self.credentials = dict(credentials)
        if "bootstrap.servers" in self.config:
            self.servers = self.config.pop("bootstrap.servers")

    def client_config(self) -> dict[str, str]:
        conf = {
            "bootstrap.servers": self.servers,
            "socket.timeout.ms": "10000",
            "topic.metadata.refresh.interval.ms": "-1",
            "log_level": "3",
        }
        conf.update(self.config)
        conf.update({k: v.reveal() for k, v in self.credentials.items()})
        return conf

    def metadata(self, timeout_s: float = 10.0) -> KafkaMetadata:
        return KafkaMetadata(self, timeout_s)

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> KafkaPartitionConsumer:
        return KafkaPartitionConsumer(self, int(partition), out_of_range, pipeline)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> int:
        if policy == "earliest":
            return meta.earliest(partition)
        return meta.end(partition)

    def describe(self) -> Mapping[str, Any]:
        return {"source": "kafka", "servers": self.servers, "topic": self.topic}

    def label(self) -> str:
        return f"topic '{self.topic}'"

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"topic": self.topic, "partition": int(partition)}

    def reached(self, offset: Any, latest: Any) -> bool:
        return offset >= latest


# Throughput defaults of a partition consumer; the user's CONFIG overrides them.
PARTITION_CONSUMER_DEFAULTS = {
    "fetch.wait.max.ms": "50",
    "queued.min.messages": "200000",
    "max.partition.fetch.bytes": "16777216",
    "fetch.max.bytes": "52428800",
    "fetch.queue.backoff.ms": "10",
}


def _new_consumer(
    source: KafkaSource, defaults: Mapping[str, str] | None = None, *, eof: bool = False
):
    from confluent_kafka import Consumer

    conf = dict(defaults or {})
    conf.update(source.client_config())
    conf.update(
        {
            "group.id": "sparkpipes",
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "enable.partition.eof": "true" if eof else "false",
            "auto.offset.reset": "error",
            "socket.nagle.disable": "true",
        }
    )
    try:
        return Consumer(conf)
    except Exception as e:  # librdkafka rejects a value (not the key: that was checked)
        msg = str(e)
        for secret in source.credentials.values():
            msg = msg.replace(secret.reveal(), "<redacted>")
        raise ConfigError(f"Kafka client rejected the configuration: {msg}") from None


class KafkaMetadata(MetadataProvider):
    """Partitions and watermarks of one topic, through a short-lived client."""

    def __init__(self, source: KafkaSource, timeout_s: float = 10.0) -> None:
        self.source = source
        self.timeout_s = timeout_s
        self._consumer = None

    def _client(self):
        if self._consumer is None:
            self._consumer = _new_consumer(self.source)
        return self._consumer

    def partitions(self) -> list[str]:
        from confluent_kafka import KafkaException

        try:
            md = self._client().list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            raise SourceUnavailableError(
                f"cannot reach Kafka at {self.source.servers}: {e.args[0].str()}"
            ) from None
        topic = md.topics.get(self.source.topic)
        if topic is None:
            raise SourceError(
                f"Kafka topic '{self.source.topic}' does not exist at {self.source.servers}"
            )
        if topic.error is not None:
            raise SourceError(f"Kafka topic '{self.source.topic}': {topic.error.str()}")
        return [str(p) for p in sorted(topic.partitions)]

    def _watermarks(self, partition: str) -> tuple[int, int]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            return self._client().get_watermark_offsets(
                TopicPartition(self.source.topic, int(partition)), timeout=self.timeout_s
            )
        except KafkaException as e:
            raise SourceUnavailableError(
                f"cannot read offsets of {self.source.topic}[{partition}] at "
                f"{self.source.servers}: {e.args[0].str()}",
                partition=partition,
            ) from None

    def earliest(self, partition: str) -> int:
        return self._watermarks(partition)[0]

    def latest(self, partition: str) -> int:
        return self._watermarks(partition)[1]

    def end(self, partition: str) -> int:
        """The true end: read from the high watermark's record to the last one, because
        a broker may report the last batch's base offset + 1 as its watermark."""
        from confluent_kafka import TopicPartition

        low, high = self._watermarks(partition)
        if high <= low:
            return high
        probe = _new_consumer(self.source)
        try:
            probe.assign([TopicPartition(self.source.topic, int(partition), high - 1)])
            end, wait = high, 2.0
            while msgs := probe.consume(1, timeout=wait) + probe.consume(10_000, timeout=0):
                end = max([end, *(m.offset() + 1 for m in msgs if m.error() is None)])
                wait = 0.2
            return end
        finally:
            probe.close()

    def offset_for_timestamp(self, partition: str, ts_ms: int) -> int:
        from confluent_kafka import TopicPartition

        (tp,) = self._client().offsets_for_times(
            [TopicPartition(self.source.topic, int(partition), ts_ms)], timeout=self.timeout_s
        )
        return tp.offset if tp.offset >= 0 else self.end(partition)

    def lag(self, partition: str, committed: Any, end: Any = None) -> int | None:
        if not isinstance(committed, int):
            return None
        return max(0, (self.end(partition) if end is None else end) - committed)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class KafkaPartitionConsumer(PartitionConsumer):
    position_type = pa.int64()

    def __init__(
        self, source: KafkaSource, partition: int, out_of_range: str, pipeline: str | None
    ) -> None:
        self.source = source
        self.partition = partition
        self.out_of_range = out_of_range
        self.pipeline = pipeline
        self._consumer = None
        self._next: int | None = None
        self._start: int | None = None

    def _err(self, kind, msg: str, offset: int | None = None):
        return kind(msg, pipeline=self.pipeline, partition=str(self.partition), offset=offset)

    def open(self, start: int) -> Gap | None:
        from confluent_kafka import KafkaException, TopicPartition

        self._consumer = _new_consumer(self.source, PARTITION_CONSUMER_DEFAULTS, eof=True)
        tp = TopicPartition(self.source.topic, self.partition)
        try:
            low, high = self._consumer.get_watermark_offsets(tp, timeout=10)
        except KafkaException as e:
            raise self._err(
                SourceUnavailableError,
                f"cannot reach Kafka at {self.source.servers}: {e.args[0].str()}",
            ) from None
        gap = None
        if start < low or (start > high and not self._exists(start - 1, low)):
            what = (
                f"offset {start} of topic '{self.source.topic}' partition {self.partition} is "
                f"out of range: the broker has offsets {low}..{high} (records fell out of "
                "retention, or the topic was recreated)"
            )
            if self.out_of_range != "earliest":
                raise self._err(OffsetOutOfRangeError, what, start)
            gap = Gap(str(self.partition), start, low, what + f"; resumed at earliest offset {low}")
            start = low
        self._consumer.assign([TopicPartition(self.source.topic, self.partition, start)])
        self._next = self._start = start
        return gap

    def _exists(self, offset: int, low: int) -> bool:
        """Whether ``offset`` can be read; the high watermark alone may under-report."""
        from confluent_kafka import TopicPartition

        if offset < low:
            return False
        probe = _new_consumer(self.source)
        try:
            probe.assign([TopicPartition(self.source.topic, self.partition, offset)])
            msgs = probe.consume(1, timeout=5.0)
            return any(m.error() is None and m.offset() >= offset for m in msgs)
        finally:
            probe.close()

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        # librdkafka's consume(n, t) waits for all n records; wait only for the first one
        msgs = self._consumer.consume(1, timeout=timeout_s)
        if msgs and max_records > 1:
            msgs += self._consumer.consume(max_records - 1, timeout=0)
        at_end = False
        # the hot loop: one C call per message where possible (the client gives no batches)
        if any(map(_ERROR, msgs)):
            for m in msgs:
                if m.error() is not None:
                    self._raise(m.error())  # returns only for an end-of-partition event
            last = msgs[-1]
            at_end = last.error() is not None and last.offset() != self._start
            msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            return Fetched(pa.array([], pa.binary()), pa.array([], pa.int64()), at_end=at_end)
        values = pa.array(list(map(_VALUE, msgs)), pa.binary())
        first, last = msgs[0].offset(), msgs[-1].offset()
        if last - first + 1 == len(msgs):  # no gaps (no compaction, no transaction markers)
            positions = pa.array(np.arange(first, last + 1, dtype=np.int64))
        else:
            positions = pa.array([m.offset() for m in msgs], pa.int64())
        self._next = last + 1
        return Fetched(values=values, positions=positions, at_end=at_end)

    def _raise(self, err) -> None:
        code = err.code()
        if code == _ERR_PARTITION_EOF:
            return
        if code in (_ERR_AUTO_OFFSET_RESET, _ERR_OFFSET_OUT_OF_RANGE):
            raise self._err(
                OffsetOutOfRangeError,
                f"offset {self._next} of topic '{self.source.topic}' partition "
                f"{self.partition} is out of range: {err.str()}",
            )
        if code in _TRANSPORT_ERRORS or err.retriable():
            raise self._err(SourceUnavailableError, f"Kafka at {self.source.servers}: {err.str()}")
        raise self._err(SourceError, f"Kafka topic '{self.source.topic}': {err.str()}")

    def position(self) -> int:
        return self._next

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

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

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from operator import methodcaller
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from sparkpipes.config import Secret
from sparkpipes.errors import (
    ConfigError,
    OffsetOutOfRangeError,
    SourceAuthError,
    SourceError,
    SourceUnavailableError,
)
from sparkpipes.sources import kafka_native
from sparkpipes.sources.base import (
    HEADERS_TYPE,
    Fetched,
    Gap,
    MetadataProvider,
    PartitionConsumer,
    Source,
)
from sparkpipes.sources.kafka_native import EMPTY_POSITIONS, EMPTY_VALUES, RawFetch

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
    "socket.connection.setup.timeout.ms",
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
#: the source's own option (no client key): hand over each record's key, headers and
#: timestamp with its payload (Pinot's ``metadata.populate``)
RECORD_METADATA = "record.metadata"

_ERROR, _VALUE = methodcaller("error"), methodcaller("value")

# librdkafka error codes handled by name (see rdkafka.h)
_ERR_PARTITION_EOF = -191
_ERR_AUTO_OFFSET_RESET = -140
_ERR_OFFSET_OUT_OF_RANGE = 1
_TRANSPORT_ERRORS = {-195, -185, -187, -192}  # _TRANSPORT, _TIMED_OUT, _ALL_BROKERS_DOWN, _RESOLVE
_ERR_ALL_BROKERS_DOWN = -187
_ERR_AUTHENTICATION = -169
_ERR_SSL = -181

#: how long a client tries to reach the brokers before the batch fails (CONFIG
#: ``socket.connection.setup.timeout.ms`` changes it, as it does librdkafka's own)
CONNECT_TIMEOUT_MS = 10_000
_STEP_S = 0.5


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
        config = dict(config)
        metadata = config.pop(RECORD_METADATA, False)
        if not isinstance(metadata, bool):
            raise ConfigError(f"Kafka option '{RECORD_METADATA}' must be true or false")
        #: keys, headers and timestamps are fetched with the payloads
        self.record_metadata = metadata
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
        connect = self.config.setdefault(
            "socket.connection.setup.timeout.ms", str(CONNECT_TIMEOUT_MS)
        )
        if not connect.isdigit() or not 1000 <= int(connect) <= 2_147_483_647:
            raise ConfigError(
                "socket.connection.setup.timeout.ms must be a whole number of milliseconds "
                f">= 1000, got '{connect}'"
            )
        #: how long a client tries to reach the brokers before its call fails
        self.connect_timeout_s = int(connect) / 1000

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

    def user(self) -> str | None:
        secret = self.credentials.get("sasl.username")
        return secret.reveal() if secret is not None else self.config.get("sasl.username")

    def mechanism(self) -> str:
        return self.config.get("sasl.mechanism") or self.config.get("sasl.mechanisms") or "GSSAPI"

    def redact(self, text: str) -> str:
        """``text`` with every credential but the user name masked."""
        for key, secret in self.credentials.items():
            if key != "sasl.username" and secret.reveal():
                text = text.replace(secret.reveal(), "<redacted>")
        return text

    def metadata(self, timeout_s: float | None = None) -> KafkaMetadata:
        return KafkaMetadata(self, self.connect_timeout_s if timeout_s is None else timeout_s)

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

    def check(self) -> str:
        return f"{super().check()} at {self.servers}"

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


_log = logging.getLogger("sparkpipes.kafka")
_T = TypeVar("_T")


class ClientLog:
    """librdkafka's log lines, routed into Python logging (``sparkpipes.kafka``) instead
    of its own stderr printer. A client retrying a dead broker logs the same line
    many times a second; each distinct line (its numbers ignored) is let through once
    per ``every_s`` in a process, with how many were held back."""

    _lock = threading.Lock()
    _last: dict[str, list[float]] = {}  # line shape -> [time let through, held back]

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s

    @classmethod
    def forget(cls) -> None:
        """Let every line through again (a new test, a new run in the same process)."""
        with cls._lock:
            cls._last.clear()

    def log(self, level: int, fmt: str, *args: Any) -> None:
        text = _clean(str(fmt % args if args else fmt).rpartition("]: ")[2])
        key = re.sub(r"\d+", "#", text)
        now = time.monotonic()
        with self._lock:
            seen = self._last.get(key)
            if seen is not None and now - seen[0] < self.every_s:
                seen[1] += 1
                return
            held = int(seen[1]) if seen else 0
            self._last[key] = [now, 0]
        more = f" ({held} similar lines held back)" if held else ""
        _log.log(level, "Kafka client: %s%s", text, more)


def _clean(text: str) -> str:
    """A librdkafka message without its broker-handle prefix and state-machine suffix."""
    text = re.sub(r"^\S*/(?:bootstrap|\d+): ", "", text)
    return re.sub(
        r" \(after \d+ms in state \w+(?:, \d+ identical error\(s\) suppressed)?\)$", "", text
    )


class _Watch:
    """The client-wide errors librdkafka reports through ``error_cb`` (served by
    ``poll``/``consume``), kept so a caller can fail at once on a refused login or a
    broker nobody answers at, instead of waiting out its own timeout."""

    def __init__(self, source: KafkaSource) -> None:
        self.source = source
        self.auth: str | None = None
        self.tls: str | None = None
        self.down = False
        self.detail: str | None = None

    def __call__(self, err: Any) -> None:
        code, text = err.code(), _clean(err.str())
        if code == _ERR_AUTHENTICATION:
            self.auth = text
        elif code == _ERR_SSL:
            self.tls = text
        elif code == _ERR_ALL_BROKERS_DOWN:
            self.down = True
        elif code in _TRANSPORT_ERRORS or err.retriable():
            self.detail = text

    def check(self, **where: Any) -> None:
        """Raise what the client has seen that no retry inside this batch will cure."""
        src = self.source
        if self.auth is not None:
            raise SourceAuthError(
                f"Kafka at {src.servers} refused authentication of user "
                f"'{src.user() or '(none)'}' with SASL {src.mechanism()}: {src.redact(self.auth)}",
                **where,
            )
        if self.tls is not None:
            raise SourceError(
                f"TLS with Kafka at {src.servers} failed: {src.redact(self.tls)}", **where
            )
        if self.down:
            raise SourceUnavailableError(
                f"cannot reach Kafka at {src.servers}: "
                f"{src.redact(self.detail or 'all brokers are down')}",
                **where,
            )


def _await(
    source: KafkaSource,
    client: Any,
    watch: _Watch,
    call: Callable[[float], _T],
    timeout_s: float,
    **where: Any,
) -> _T:
    """``call(step_timeout)`` until it answers, the client reports a refusal or dead
    brokers (raised at once), or ``timeout_s`` passes (raised as unreachable). Only for
    a client with nothing assigned: ``poll`` would otherwise consume records."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call(max(0.05, min(_STEP_S, deadline - time.monotonic())))
        except (KafkaException, kafka_native.NativeError) as e:
            last = _clean(e.args[0].str())
        client.poll(0)
        watch.check(**where)
        if time.monotonic() >= deadline:
            raise SourceUnavailableError(
                f"cannot reach Kafka at {source.servers} within {timeout_s:g} s "
                f"(socket.connection.setup.timeout.ms): {source.redact(watch.detail or last)}",
                **where,
            )


def _consumer_config(
    source: KafkaSource, defaults: Mapping[str, str] | None = None, *, eof: bool = False
) -> dict[str, str]:
    """librdkafka's settings of a consumer that reads assigned partitions, never joins a
    group and never commits to Kafka."""
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
    return conf


def _rejected(source: KafkaSource, e: Exception) -> ConfigError:
    # librdkafka rejects a value (not the key: that was checked)
    return ConfigError(f"Kafka client rejected the configuration: {source.redact(str(e))}")


def _new_consumer(
    source: KafkaSource, defaults: Mapping[str, str] | None = None, *, eof: bool = False
) -> tuple[Any, _Watch]:
    from confluent_kafka import Consumer

    watch = _Watch(source)
    conf: dict[str, Any] = _consumer_config(source, defaults, eof=eof)
    conf.update({"error_cb": watch, "logger": ClientLog()})
    try:
        return Consumer(conf), watch
    except Exception as e:
        raise _rejected(source, e) from None


class KafkaMetadata(MetadataProvider):
    """Partitions and watermarks of one topic, through a short-lived client."""

    def __init__(self, source: KafkaSource, timeout_s: float) -> None:
        self.source = source
        self.timeout_s = timeout_s
        self._consumer = None
        self._watch: _Watch | None = None

    def _client(self):
        if self._consumer is None:
            self._consumer, self._watch = _new_consumer(self.source)
        return self._consumer

    def _ask(self, call: Callable[[Any, float], _T], **where: Any) -> _T:
        client = self._client()
        assert self._watch is not None
        return _await(
            self.source, client, self._watch, lambda t: call(client, t), self.timeout_s, **where
        )

    def partitions(self) -> list[str]:
        md = self._ask(lambda c, t: c.list_topics(timeout=t))
        topic = md.topics.get(self.source.topic)
        if topic is None:
            raise SourceError(
                f"Kafka topic '{self.source.topic}' does not exist at {self.source.servers}"
            )
        if topic.error is not None:
            raise SourceError(f"Kafka topic '{self.source.topic}': {topic.error.str()}")
        return [str(p) for p in sorted(topic.partitions)]

    def _watermarks(self, partition: str) -> tuple[int, int]:
        from confluent_kafka import TopicPartition

        tp = TopicPartition(self.source.topic, int(partition))
        return self._ask(lambda c, t: c.get_watermark_offsets(tp, timeout=t), partition=partition)

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
        probe, _ = _new_consumer(self.source)
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

        want = [TopicPartition(self.source.topic, int(partition), ts_ms)]
        (tp,) = self._ask(lambda c, t: c.offsets_for_times(want, timeout=t), partition=partition)
        if tp.offset < 0:
            return self.end(partition)
        return self._first_at_or_after(int(partition), tp.offset, ts_ms)

    def _first_at_or_after(self, partition: int, offset: int, ts_ms: int) -> int:
        """The offset of the first record at or after ``ts_ms`` from ``offset`` on. Kafka
        answers a time lookup with that record; some brokers (Tansu) with the start of a
        record batch before it, or with 0, so the records are read from there until one
        is late enough (for Kafka: the first one read)."""
        from confluent_kafka import TopicPartition

        consumer, _ = _new_consumer(self.source, eof=True)
        try:
            consumer.assign([TopicPartition(self.source.topic, partition, offset)])
            while True:
                msgs = consumer.consume(1, timeout=self.timeout_s)  # waits for the first only
                if not msgs:
                    return self.end(str(partition))
                msgs += consumer.consume(10_000, timeout=0)
                for m in msgs:
                    if m.error() is not None:
                        if m.error().code() == _ERR_PARTITION_EOF:
                            return self.end(str(partition))
                        continue
                    if m.timestamp()[1] >= ts_ms:
                        return m.offset()
        finally:
            consumer.close()

    def lag(self, partition: str, committed: Any, end: Any = None) -> int | None:
        if not isinstance(committed, int):
            return None
        return max(0, (self.end(partition) if end is None else end) - committed)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class _ConfluentReader:
    """confluent-kafka's ``Consumer`` behind the reader interface of
    :class:`~sparkpipes.sources.kafka_native.NativeReader`: used when the native reader
    is not available here, and for a source that wants each record's key, timestamp and
    headers."""

    def __init__(self, client: Any, topic: str, partition: int, metadata: bool) -> None:
        self.client, self.topic, self.partition, self.metadata = client, topic, partition, metadata

    def poll(self, timeout_s: float) -> None:
        self.client.poll(timeout_s)

    def watermarks(self, timeout_s: float) -> tuple[int, int]:
        from confluent_kafka import TopicPartition

        tp = TopicPartition(self.topic, self.partition)
        return self.client.get_watermark_offsets(tp, timeout=timeout_s)

    def assign(self, offset: int) -> None:
        from confluent_kafka import TopicPartition

        self.client.assign([TopicPartition(self.topic, self.partition, offset)])

    def fetch(self, max_records: int, timeout_s: float) -> RawFetch:
        # librdkafka's consume(n, t) waits for all n records; wait only for the first one
        msgs = self.client.consume(1, timeout=timeout_s)
        if msgs and max_records > 1:
            msgs += self.client.consume(max_records - 1, timeout=0)
        errors: list[tuple[int, str, int]] = []
        last_is_error = False
        # the hot loop: one C call per message where possible (the client gives no batches)
        if any(map(_ERROR, msgs)):
            errors = [(m.error().code(), m.error().str(), m.offset()) for m in msgs if m.error()]
            last_is_error = msgs[-1].error() is not None
            msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            return RawFetch(EMPTY_VALUES, EMPTY_POSITIONS, errors, last_is_error)
        values = pa.array(list(map(_VALUE, msgs)), pa.binary())
        first, last = msgs[0].offset(), msgs[-1].offset()
        if last - first + 1 == len(msgs):  # no gaps (no compaction, no transaction markers)
            positions = pa.array(np.arange(first, last + 1, dtype=np.int64))
        else:
            positions = pa.array([m.offset() for m in msgs], pa.int64())
        if not self.metadata:
            return RawFetch(values, positions, errors, last_is_error)
        return RawFetch(
            values,
            positions,
            errors,
            last_is_error,
            keys=pa.array([m.key() for m in msgs], pa.binary()),
            timestamps=pa.array([m.timestamp()[1] for m in msgs], pa.int64()),
            headers=pa.array([m.headers() or [] for m in msgs], HEADERS_TYPE),
        )

    def close(self) -> None:
        self.client.close()


class KafkaPartitionConsumer(PartitionConsumer):
    """Reads one partition from an offset. Records come from the native reader
    (``kafka_native``: librdkafka's messages copied straight into Arrow) where it is
    available and the source needs payloads only, else from confluent-kafka's
    ``Consumer``; both are librdkafka with the same settings, so offsets, end events
    and errors are the same."""

    position_type = pa.int64()

    def __init__(
        self, source: KafkaSource, partition: int, out_of_range: str, pipeline: str | None
    ) -> None:
        self.source = source
        self.partition = partition
        self.out_of_range = out_of_range
        self.pipeline = pipeline
        self._reader: Any = None
        self._watch: _Watch | None = None
        self._next: int | None = None
        self._start: int | None = None

    def _err(self, kind, msg: str, offset: int | None = None):
        return kind(msg, pipeline=self.pipeline, partition=str(self.partition), offset=offset)

    def _new_reader(self) -> Any:
        if not self.source.record_metadata and kafka_native.available():
            watch = _Watch(self.source)
            conf = _consumer_config(self.source, PARTITION_CONSUMER_DEFAULTS, eof=True)
            try:
                reader = kafka_native.NativeReader(
                    conf, watch, ClientLog().log, self.source.topic, self.partition
                )
            except ValueError as e:
                raise _rejected(self.source, e) from None
            self._watch = watch
            return reader
        client, self._watch = _new_consumer(self.source, PARTITION_CONSUMER_DEFAULTS, eof=True)
        src = self.source
        return _ConfluentReader(client, src.topic, self.partition, src.record_metadata)

    def open(self, start: int, stop: int | None = None) -> Gap | None:
        self._reader = self._new_reader()
        try:
            return self._open(self._reader, start)
        except BaseException:
            self.close()  # a client left open would keep its threads and sockets
            raise

    def _open(self, reader: Any, start: int) -> Gap | None:
        low, high = _await(
            self.source,
            reader,
            self._watch,
            reader.watermarks,
            self.source.connect_timeout_s,
            pipeline=self.pipeline,
            partition=str(self.partition),
        )
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
        reader.assign(start)
        self._next = self._start = start
        return gap

    def _exists(self, offset: int, low: int) -> bool:
        """Whether ``offset`` can be read; the high watermark alone may under-report."""
        from confluent_kafka import TopicPartition

        if offset < low:
            return False
        probe, _ = _new_consumer(self.source)
        try:
            probe.assign([TopicPartition(self.source.topic, self.partition, offset)])
            msgs = probe.consume(1, timeout=5.0)
            return any(m.error() is None and m.offset() >= offset for m in msgs)
        finally:
            probe.close()

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        raw = self._reader.fetch(max_records, timeout_s)
        for code, text, _offset in raw.errors:
            self._raise(code, text)  # returns only for an end-of-partition event
        at_end = raw.last_is_error and raw.errors[-1][2] != self._start
        if not len(raw):
            if self._watch is not None:  # an empty fetch is no end while the brokers are gone
                self._watch.check(pipeline=self.pipeline, partition=str(self.partition))
            return Fetched(EMPTY_VALUES, EMPTY_POSITIONS, at_end=at_end)
        if self._watch is not None:
            self._watch.down = False
        self._next = raw.positions[-1].as_py() + 1
        return Fetched(
            values=raw.values,
            positions=raw.positions,
            at_end=at_end,
            keys=raw.keys,
            timestamps=raw.timestamps,
            headers=raw.headers,
        )

    def _raise(self, code: int, text: str) -> None:
        if code == _ERR_PARTITION_EOF:
            return
        if code in (_ERR_AUTO_OFFSET_RESET, _ERR_OFFSET_OUT_OF_RANGE):
            raise self._err(
                OffsetOutOfRangeError,
                f"offset {self._next} of topic '{self.source.topic}' partition "
                f"{self.partition} is out of range: {text}",
            )
        if code in _TRANSPORT_ERRORS:
            raise self._err(SourceUnavailableError, f"Kafka at {self.source.servers}: {text}")
        raise self._err(SourceError, f"Kafka topic '{self.source.topic}': {text}")

    def position(self) -> int:
        return self._next

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

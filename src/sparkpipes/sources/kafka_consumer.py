"""Reading one Kafka partition from an offset (the source's partition consumer, on the
executors).

A batch reads a partition until it has ``max_records``, librdkafka reports the partition's
end (``enable.partition.eof``) or a fetch comes back empty, and reports ``last offset read
+ 1``. The high watermark is never taken as "everything is read": some brokers (Tansu)
report the last batch's base offset + 1 from ListOffsets, which can lie below the true end.
librdkafka's end report comes from a fetch response (whose watermark Tansu gets right) that
found nothing more; a broker whose fetch responses under-reported it would make librdkafka
report the end at the watermark and skip what follows once, so an end report at the offset
the consumer opened at is not trusted (the empty fetch decides there) and a batch cannot
stall on it.
"""

from __future__ import annotations

from operator import methodcaller
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sparkpipes.errors import OffsetOutOfRangeError, SourceError, SourceUnavailableError
from sparkpipes.sources import kafka_native
from sparkpipes.sources.base import HEADERS_TYPE, Fetched, Gap, PartitionConsumer
from sparkpipes.sources.kafka_client import (
    ERR_AUTO_OFFSET_RESET,
    ERR_OFFSET_OUT_OF_RANGE,
    ERR_PARTITION_EOF,
    PARTITION_CONSUMER_DEFAULTS,
    TRANSPORT_ERRORS,
    ClientLog,
    Watch,
    consumer_config,
    new_consumer,
    rejected,
    wait_for,
)
from sparkpipes.sources.kafka_native import EMPTY_POSITIONS, EMPTY_VALUES, RawFetch

if TYPE_CHECKING:
    from sparkpipes.sources.kafka import KafkaSource

_ERROR, _VALUE = methodcaller("error"), methodcaller("value")


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
        self._watch: Watch | None = None
        self._next: int | None = None
        self._start: int | None = None

    def _err(self, kind, msg: str, offset: int | None = None):
        return kind(msg, pipeline=self.pipeline, partition=str(self.partition), offset=offset)

    def _new_reader(self) -> Any:
        if not self.source.record_metadata and kafka_native.available():
            watch = Watch(self.source)
            conf = consumer_config(self.source, PARTITION_CONSUMER_DEFAULTS, eof=True)
            try:
                reader = kafka_native.NativeReader(
                    conf, watch, ClientLog().log, self.source.topic, self.partition
                )
            except ValueError as e:
                raise rejected(self.source, e) from None
            self._watch = watch
            return reader
        client, self._watch = new_consumer(self.source, PARTITION_CONSUMER_DEFAULTS, eof=True)
        src = self.source
        return _ConfluentReader(client, src.topic, self.partition, bool(src.record_metadata))

    def open(self, start: int, stop: int | None = None) -> Gap | None:
        self._reader = self._new_reader()
        try:
            return self._open(self._reader, start)
        except BaseException:
            self.close()  # a client left open would keep its threads and sockets
            raise

    def _open(self, reader: Any, start: int) -> Gap | None:
        low, high = wait_for(
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
        probe, _ = new_consumer(self.source)
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
        if code == ERR_PARTITION_EOF:
            return
        if code in (ERR_AUTO_OFFSET_RESET, ERR_OFFSET_OUT_OF_RANGE):
            raise self._err(
                OffsetOutOfRangeError,
                f"offset {self._next} of topic '{self.source.topic}' partition "
                f"{self.partition} is out of range: {text}",
            )
        if code in TRANSPORT_ERRORS:
            raise self._err(SourceUnavailableError, f"Kafka at {self.source.servers}: {text}")
        raise self._err(SourceError, f"Kafka topic '{self.source.topic}': {text}")

    def position(self) -> int:
        return self._next

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

"""Partitions, watermarks and time lookups of a Kafka topic (the source's metadata
provider, used on the driver to plan batches and by the offsets views)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.errors import ConfigError, SourceError
from sparkpipes.sources.base import MetadataProvider
from sparkpipes.sources.kafka_client import ERR_PARTITION_EOF, T, Watch, new_consumer, wait_for
from sparkpipes.sources.kafka_watch import ClusterWatch, watch_of

if TYPE_CHECKING:
    from sparkpipes.sources.kafka import KafkaSource


class KafkaMetadata(MetadataProvider):
    """Partitions and watermarks of one topic, through a short-lived client."""

    def __init__(self, source: KafkaSource, timeout_s: float) -> None:
        self.source = source
        self.timeout_s = timeout_s
        self._consumer = None
        self._watch: Watch | None = None
        self._shared_watch: ClusterWatch | None = None

    def _client(self):
        if self._consumer is None:
            self._consumer, self._watch = new_consumer(self.source)
        return self._consumer

    def _ask(self, call: Callable[[Any, float], T], **where: Any) -> T:
        client = self._client()
        assert self._watch is not None
        return wait_for(
            self.source, client, self._watch, lambda t: call(client, t), self.timeout_s, **where
        )

    def _shared(self) -> dict[int, int] | None:
        """The topic's latest offsets from the process's shared watch, at most
        read since ``since`` (None: ask this provider's own client)."""
        since = time.monotonic() if self.since is None else self.since
        got = self._cluster().reading(self.source.topic, since)
        if got is None:
            return None
        self.read_at = got[0]
        return got[1]

    def _cluster(self) -> ClusterWatch:
        if self._shared_watch is None:
            self._shared_watch = watch_of(self.source)
        return self._shared_watch

    def partitions(self) -> list[str]:
        latest = self._shared()
        only = self.source.only
        if latest is not None and (only is None or set(only) <= set(latest)):
            return [str(p) for p in sorted(latest) if only is None or p in only]
        md = self._ask(lambda c, t: c.list_topics(timeout=t))
        topic = md.topics.get(self.source.topic)
        if topic is None:
            raise SourceError(
                f"Kafka topic '{self.source.topic}' does not exist at {self.source.servers}"
            )
        if topic.error is not None:
            raise SourceError(f"Kafka topic '{self.source.topic}': {topic.error.str()}")
        only = self.source.only
        if only is None:
            return [str(p) for p in sorted(topic.partitions)]
        missing = [p for p in only if p not in topic.partitions]
        if missing:
            raise ConfigError(
                f"Kafka topic '{self.source.topic}' has no partition "
                f"{', '.join(map(str, missing))} (option 'partitions'); its partitions are "
                f"{', '.join(map(str, sorted(topic.partitions)))}"
            )
        return [str(p) for p in only]

    def _watermarks(self, partition: str) -> tuple[int, int]:
        from confluent_kafka import TopicPartition

        tp = TopicPartition(self.source.topic, int(partition))
        return self._ask(lambda c, t: c.get_watermark_offsets(tp, timeout=t), partition=partition)

    def watermark(self, partition: str) -> int:
        """The shared watch's latest offset (as fresh as an idle turn's), else this
        provider's own request."""
        latest = self._shared()
        if latest is not None and int(partition) in latest:
            return latest[int(partition)]
        return self.latest(partition)

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
        probe, _ = new_consumer(self.source)
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

        consumer, _ = new_consumer(self.source, eof=True)
        try:
            consumer.assign([TopicPartition(self.source.topic, partition, offset)])
            while True:
                msgs = consumer.consume(1, timeout=self.timeout_s)  # waits for the first only
                if not msgs:
                    return self.end(str(partition))
                msgs += consumer.consume(10_000, timeout=0)
                for m in msgs:
                    if m.error() is not None:
                        if m.error().code() == ERR_PARTITION_EOF:
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

    def unchanged(self, offsets: Mapping[str, Any], since: float) -> bool:
        """From the process's shared watch of the cluster (``kafka_watch``): every
        partition read is in ``offsets`` and its latest offset is not past the one there
        (below it: a broker that reports its last record batch's first offset + 1, as
        Tansu does; a topic made again is met by the plan every ``IDLE_RECHECK_S``)."""
        got = self._cluster().reading(self.source.topic, since)
        if got is None:
            return False
        self.read_at, latest = got
        only = self.source.only
        read = {str(p): o for p, o in latest.items() if only is None or p in only}
        if set(read) != set(offsets):
            return False
        return all(isinstance(offsets[p], int) and o <= offsets[p] for p, o in read.items())

    def rest(self) -> None:
        """A client per idle pipeline is threads waking for nothing: the shared watch
        answers between batches, and this client opens again when a plan needs it."""
        self.close()

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

"""One view of a Kafka cluster's latest offsets, shared by every pipeline of this process.

An idle pipeline asks every turn whether anything was added to its topic. Asked through
its own client, that is a metadata request and one request per partition per turn, and a
librdkafka client with its threads per pipeline: a cost that grows with the number of
pipelines, not with the data (issue 36). Here the pipelines reading one cluster with the
same client settings share one admin client; a refresh asks for the latest offset of every
partition of every topic asked about lately in one ListOffsets request per broker (the
partition lists in one metadata request, kept for :data:`PARTITIONS_TTL_S`), and a
pipeline's question is a lookup in the last refresh while that is recent enough.

Promises: an answer is a hint, never a resume point. It is read at the pipelines'
isolation level (one watch per level), so it is at least every offset a reader could have
read before the refresh started; a refresh's age is
counted from when it was asked for. Any failure answers None ("cannot tell"), and the
caller plans its batch as before, meeting the source's own errors there.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from sparkpipes.sources.kafka_client import FATAL_ERRORS, TRANSPORT_ERRORS, ClientLog

if TYPE_CHECKING:
    from sparkpipes.sources.kafka import KafkaSource

log = logging.getLogger("sparkpipes.kafka")

#: a topic no pipeline asked about for this long is no longer refreshed
FORGET_S = 120.0
#: how long a topic's partition list is reused (added partitions are seen within it)
PARTITIONS_TTL_S = 5.0
#: after the client reported the cluster down or a login refused, the watch answers
#: "cannot tell" at once for this long: each pipeline's own client then fails fast with
#: the precise error, instead of waiting out a request here first
TROUBLE_S = 5.0
#: a request waits in steps of this, looking at what the client reported between them
STEP_S = 0.5
#: the client settings of the shared admin client that are not the cluster's or the login's
_NOT_SHARED = (
    "isolation.level",
    "fetch.",
    "queued.",
    "max.partition.fetch.bytes",
    "check.crcs",
)


class ClusterWatch:
    """The latest offsets of the topics asked about, on one cluster."""

    def __init__(self, conf: dict[str, str], timeout_s: float, isolation: str) -> None:
        self._conf = conf
        #: the offsets the pipelines read up to: the last stable offset (read_committed,
        #: librdkafka's default), or the high watermark (read_uncommitted)
        self._isolation = isolation
        self._timeout_s = timeout_s
        self._admin: Any = None
        self._trouble_at = -1e9
        self._refreshing = threading.Lock()
        self._lock = threading.Lock()
        self._marks: dict[str, tuple[float, dict[int, int]]] = {}
        self._partitions: dict[str, tuple[float, tuple[int, ...]]] = {}
        self._asked: dict[str, float] = {}

    def latest(self, topic: str, since: float) -> dict[int, int] | None:
        """Partition → latest offset of ``topic``, from a refresh asked for at or after
        ``since`` (``time.monotonic()``; now: a refresh now); None when the cluster or the
        topic cannot be read now."""
        got = self.reading(topic, since)
        return None if got is None else got[1]

    def reading(self, topic: str, since: float) -> tuple[float, dict[int, int]] | None:
        """:meth:`latest` with when its refresh was asked for."""
        with self._lock:
            self._asked[topic] = time.monotonic()
            got = self._marks.get(topic)
        if got is not None and got[0] >= since:
            return got
        if self._in_trouble():
            return None
        with self._refreshing:
            got = self._marks.get(topic)
            if got is not None and got[0] >= since:
                return got  # another pipeline's refresh, while this one waited
            try:
                self._refresh()
            except Exception as e:  # a hint only: the batch's plan meets the real error
                log.debug("refreshing the latest offsets failed: %s", e)
                return None
            got = self._marks.get(topic)
        return got if got is not None and got[0] >= since else None

    def _client(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient(
                {**self._conf, "logger": ClientLog(), "error_cb": self._on_error}
            )
        return self._admin

    def _on_error(self, err: Any) -> None:
        if err.code() in FATAL_ERRORS or err.code() in TRANSPORT_ERRORS:
            self._trouble_at = time.monotonic()

    def _in_trouble(self) -> bool:
        return time.monotonic() - self._trouble_at < TROUBLE_S

    def _refresh(self) -> None:
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        started = time.monotonic()
        with self._lock:
            for t in [t for t, at in self._asked.items() if started - at > FORGET_S]:
                del self._asked[t]
                self._marks.pop(t, None)
                self._partitions.pop(t, None)
            topics = list(self._asked)
        parts = self._partition_lists(topics, started)
        wanted = {
            TopicPartition(t, p): OffsetSpec.latest() for t in topics for p in parts.get(t, ())
        }
        if not wanted:
            return
        level = (
            IsolationLevel.READ_UNCOMMITTED
            if self._isolation == "read_uncommitted"
            else IsolationLevel.READ_COMMITTED
        )
        futures = self._client().list_offsets(
            wanted, isolation_level=level, request_timeout=self._timeout_s
        )
        got: dict[str, dict[int, int]] = {}
        failed: set[str] = set()
        for tp, future in futures.items():
            try:
                got.setdefault(tp.topic, {})[tp.partition] = future.result().offset
            except Exception:
                failed.add(tp.topic)
        with self._lock:
            for t in topics:  # a topic gone from the cluster answers nothing any more
                if t in got and t not in failed:
                    self._marks[t] = (started, got[t])
                else:
                    self._marks.pop(t, None)

    def _metadata(self) -> Any:
        """The cluster's topics, asked in steps: a client that reports the cluster down
        or a login refused ends the wait at once."""
        from confluent_kafka import KafkaException

        client = self._client()
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                return client.list_topics(
                    timeout=max(0.05, min(STEP_S, deadline - time.monotonic()))
                )
            except KafkaException:
                client.poll(0)  # serves error_cb
                if self._in_trouble() or time.monotonic() >= deadline:
                    raise

    def _partition_lists(self, topics: list[str], now: float) -> dict[str, tuple[int, ...]]:
        fresh = {t for t, (at, _) in self._partitions.items() if now - at <= PARTITIONS_TTL_S}
        stale = [t for t in topics if t not in fresh]
        if stale:
            md = self._metadata()
            for t in stale:
                meta = md.topics.get(t)
                if meta is None or meta.error is not None:
                    self._partitions.pop(t, None)
                else:
                    self._partitions[t] = (now, tuple(sorted(meta.partitions)))
        return {t: self._partitions[t][1] for t in topics if t in self._partitions}


#: the watches by their client settings and isolation level (held in memory only; a
#: watch's settings, a login's included, are never shown)
_watches: dict[tuple[tuple[str, str], ...], ClusterWatch] = {}
_watches_lock = threading.Lock()


def watch_of(source: KafkaSource) -> ClusterWatch:
    """The process's watch of ``source``'s cluster, for its client settings (brokers,
    security, login): pipelines that reach the cluster alike share one."""
    conf = {k: v for k, v in source.client_config().items() if not k.startswith(_NOT_SHARED)}
    isolation = source.config.get("isolation.level", "read_committed")
    key = (*sorted(conf.items()), ("isolation.level", isolation))
    with _watches_lock:
        watch = _watches.get(key)
        if watch is None:
            watch = _watches[key] = ClusterWatch(conf, source.connect_timeout_s, isolation)
        return watch

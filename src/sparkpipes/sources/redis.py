"""Redis Streams as a Pinot-style stream plugin (``streamType: redis``), on redis-py.

Keys (after ``stream.redis.``): ``topic.name``, ``url`` (default
``redis://127.0.0.1:6379/0``; a password in it, ``redis://[user]:password@host``, is a
secret as in redis-py, which logs in with it), ``password`` (a secret), and the common
``consumer.type``, ``consumer.factory.class.name``, ``consumer.prop.auto.offset.reset``,
``decoder.class.name``, ``decoder.prop.*``, ``connection.timeout.millis``,
``fetch.timeout.millis``; another key is an error naming it.

Partitions are stream keys: ``<topic>:0``, ``<topic>:1`` … (as many as exist from 0 on),
or the single key ``<topic>`` when ``<topic>:0`` does not exist. An entry id
``<ms>-<seq>`` is the offset ``ms * 2**20 + seq``: monotonic, 64-bit, and its
millisecond part is the message's timestamp. Offsets are sparse, so "records were lost"
is known only from what Redis records: an entry deleted with XDEL before it was read
is a gap (the pipeline's out-of-range policy applies); entries trimmed (XTRIM, MAXLEN)
before they were read cannot be told apart from ones read and trimmed, and are not.

An entry with a single field ``value`` (or ``data``) is that field's bytes; otherwise its
fields as a JSON object. A field ``key`` is the message key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sparkpipes.config import urls
from sparkpipes.errors import ConfigError, SourceAuthError
from sparkpipes.sources.plugin import (
    MessageBatch,
    PartitionLevelConsumer,
    StreamConfig,
    StreamConsumerFactory,
    StreamMessage,
    StreamMetadataProvider,
)

SEQ_BITS = 20
KEYS = (
    "topic.name",
    "url",
    "password",
    "consumer.type",
    "consumer.factory.class.name",
    "consumer.prop.auto.offset.reset",
    "decoder.class.name",
    "connection.timeout.millis",
    "fetch.timeout.millis",
)
MAX_PARTITIONS = 1024


def offset_of(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, _, seq = text.partition("-")
    if int(seq or 0) >= 1 << SEQ_BITS:
        raise ValueError(f"entry id {text} has a sequence number beyond 2**{SEQ_BITS}")
    return (int(ms) << SEQ_BITS) + int(seq or 0)


def id_of(offset: int) -> str:
    return f"{offset >> SEQ_BITS}-{offset & ((1 << SEQ_BITS) - 1)}"


class RedisConsumerFactory(StreamConsumerFactory):
    def __init__(self, config: StreamConfig) -> None:
        super().__init__(config)
        for key in config.props:
            if key not in KEYS and not key.startswith("decoder.prop."):
                from difflib import get_close_matches

                near = get_close_matches(key, KEYS, n=1)
                hint = f"; did you mean 'stream.redis.{near[0]}'?" if near else ""
                raise ConfigError(f"unknown Redis stream key 'stream.redis.{key}'{hint}")
        self.url = config.get("url") or "redis://127.0.0.1:6379/0"
        if not self.url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(
                f"stream.redis.url must be a redis:// URL, got '{urls.redact(self.url)}'"
            )
        in_url = urls.login(self.url, None)[2]
        if in_url is not None and config.get("password") not in (None, in_url):
            raise ConfigError(
                "stream.redis.url and stream.redis.password give different passwords: give one"
            )

    def client(self, timeout_ms: int) -> Any:
        import redis

        return redis.Redis.from_url(
            self.url,
            password=self.config.get("password"),
            socket_connect_timeout=self.config.connection_timeout_ms / 1000,
            socket_timeout=timeout_ms / 1000 + 1,
        )

    def create_metadata_provider(self, client_id: str) -> RedisMetadata:
        return RedisMetadata(self)

    def create_partition_consumer(self, client_id: str, partition: int) -> RedisConsumer:
        return RedisConsumer(self, partition)


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A redis-py call; a refused password is a SourceAuthError (terminal)."""
    import redis

    try:
        return fn(*args, **kwargs)
    except redis.AuthenticationError as e:
        raise SourceAuthError(f"Redis refused the credentials: {e}") from None
    except redis.ResponseError as e:
        if "NOAUTH" in str(e) or "WRONGPASS" in str(e):
            raise SourceAuthError(f"Redis refused the credentials: {e}") from None
        raise


class RedisMetadata(StreamMetadataProvider):
    def __init__(self, factory: RedisConsumerFactory) -> None:
        self.factory = factory
        self.topic = factory.config.topic
        self._client: Any = None
        self._keys: list[str] | None = None

    def _redis(self, timeout_ms: int) -> Any:
        if self._client is None:
            self._client = self.factory.client(timeout_ms)
        return self._client

    def keys(self, timeout_ms: int) -> list[str]:
        r = self._redis(timeout_ms)
        names = [f"{self.topic}:{i}" for i in range(MAX_PARTITIONS)]
        found = _call(r.exists, names[0])
        if not found:
            return [self.topic] if _call(r.exists, self.topic) else []
        pipe = r.pipeline()
        for name in names:
            pipe.exists(name)
        exists = _call(pipe.execute)
        n = exists.index(0) if 0 in exists else len(exists)
        return names[:n]

    def fetch_partition_count(self, timeout_ms: int) -> int:
        self._keys = self.keys(timeout_ms)
        return len(self._keys)

    def _key(self, partition: int, timeout_ms: int) -> str:
        return key_of(self.topic, partition, self._keys or self.keys(timeout_ms))

    def fetch_offset(self, criteria: str, partition: int, timeout_ms: int) -> int:
        """``smallest``: the offset after the newest deleted entry (XDEL), so a resume
        offset below it lost a message; ``largest``: after the newest entry there."""
        import redis

        r = self._redis(timeout_ms)
        key = self._key(partition, timeout_ms)
        if criteria == "largest":
            last = _call(r.xrevrange, key, "+", "-", count=1)
            if last:
                return offset_of(last[0][0]) + 1
        try:
            deleted = offset_of(_call(r.xinfo_stream, key)["max-deleted-entry-id"])
        except redis.ResponseError:  # no such key: nothing added yet
            return 0
        return deleted + 1 if deleted else 0

    def fetch_offset_for_time(self, partition: int, timestamp_ms: int, timeout_ms: int) -> int:
        r = self._redis(timeout_ms)
        key = self._key(partition, timeout_ms)
        first = _call(r.xrange, key, f"{timestamp_ms}-0", "+", count=1)
        return offset_of(first[0][0]) if first else self.fetch_offset("largest", partition, 0)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def key_of(topic: str, partition: int, keys: list[str]) -> str:
    if partition >= len(keys):
        raise ConfigError(f"Redis stream '{topic}' has no partition {partition}")
    return keys[partition]


class RedisConsumer(PartitionLevelConsumer):
    def __init__(self, factory: RedisConsumerFactory, partition: int) -> None:
        self.factory = factory
        self.partition = partition
        self._client: Any = None
        self._key: str | None = None

    def fetch_messages(self, start_offset: int, timeout_ms: int, max_messages: int) -> MessageBatch:
        if self._client is None:
            self._client = self.factory.client(timeout_ms)
            meta = RedisMetadata(self.factory)
            meta._client = self._client
            self._key = key_of(self.factory.config.topic, self.partition, meta.keys(timeout_ms))
        r = self._client
        entries = _call(r.xrange, self._key, id_of(start_offset), "+", count=max_messages)
        if not entries and timeout_ms > 0:
            last = id_of(start_offset - 1) if start_offset > 0 else "0-0"
            got = _call(r.xread, {self._key: last}, count=max_messages, block=timeout_ms)
            entries = got[0][1] if got else []
        messages = [_message(eid, fields) for eid, fields in entries]
        nxt = messages[-1].offset + 1 if messages else start_offset
        return MessageBatch(messages, nxt)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _message(entry_id: bytes, fields: Mapping[bytes, bytes]) -> StreamMessage:
    offset = offset_of(entry_id)
    key = fields.get(b"key")
    body = {k: v for k, v in fields.items() if k != b"key"}
    if len(body) == 1 and next(iter(body)) in (b"value", b"data"):
        value = next(iter(body.values()))
    else:
        value = json.dumps(
            {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in body.items()}
        ).encode()
    return StreamMessage(value, offset, key=key, timestamp_ms=offset >> SEQ_BITS)

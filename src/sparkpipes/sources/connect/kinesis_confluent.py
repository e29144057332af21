"""Confluent's Amazon Kinesis source connector (``io.confluent.connect.kinesis.
KinesisSourceConnector``) with its own keys, on the same reader as SingleStore's class
(``sources.connect.kinesis``): shards as source partitions, sequence numbers as offsets,
committed with the rows, children read after their parents.

Records have the shape SingleStore's class gives them (``data`` in base64, with
``partitionKey``, ``sequenceNumber``, ``shardId``, ``approximateArrivalTimestamp``), so one
table and its SQL serve both classes; their topic is ``kafka.topic`` (required, as
Confluent requires it).

Keys, each honoured, accepted as not applicable, or refused by name:

* honoured: ``kinesis.stream``, ``kafka.topic``, ``kinesis.region`` (``us-east-1`` or
  Confluent's ``US_EAST_1``), ``kinesis.position`` (``TRIM_HORIZON``, the default;
  ``LATEST``; ``AT_TIMESTAMP`` with ``kinesis.shard.timestamp``, epoch ms or ISO-8601):
  where a shard with no committed offset starts; ``kinesis.shard.id`` (a regular
  expression: the shards read); ``kinesis.record.limit`` (records a GetRecords call asks
  for, 1 to 10,000, default 500); ``kinesis.base.url`` (a local or VPC endpoint);
  ``kinesis.proxy.url`` (an HTTP proxy); ``aws.access.key.id`` / ``aws.secret.key.id``
  (secrets, sealed with the credentials, never shown; without them the AWS default chain);
  ``kinesis.credentials.provider.class`` naming the default chain.
* not applicable: the back-off settings (``kinesis.empty.records.backoff.ms``,
  ``kinesis.throughput.exceeded.backoff.ms``) and ``kinesis.non.proxy.hosts``.
* refused: a proxy login (``kinesis.proxy.username`` / ``kinesis.proxy.password``), any
  other credentials provider class.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from typing import Any

from sparkpipes.config import urls
from sparkpipes.errors import ConfigError
from sparkpipes.sources.connect.framework import ConnectConfigError
from sparkpipes.sources.connect.kinesis import MAX_LIMIT, SECRET_KEYS, KinesisConnector
from sparkpipes.util.regex import compile_user

POSITIONS = ("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP")
#: Confluent's default ``kinesis.record.limit``
RECORD_LIMIT = 500
DEFAULT_CHAIN = (
    "DefaultAWSCredentialsProviderChain",
    "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
)


class ConfluentKinesisConnector(KinesisConnector):
    class_names = ("io.confluent.connect.kinesis.KinesisSourceConnector",)
    config_keys = frozenset(
        {
            "kinesis.stream",
            "kinesis.region",
            "kinesis.base.url",
            "kafka.topic",
            "kinesis.position",
            "kinesis.shard.timestamp",
            "kinesis.shard.id",
            "kinesis.record.limit",
            "kinesis.proxy.url",
            "kinesis.proxy.username",
            "kinesis.proxy.password",
            "kinesis.credentials.provider.class",
        }
    )
    secret_keys = SECRET_KEYS | {"kinesis.proxy.password"}
    endpoint_key = "kinesis.base.url"
    not_applicable_keys = {
        "kinesis.empty.records.backoff.ms": (
            "how long Confluent's task waits on an empty shard; a batch reads each shard "
            "until it finds nothing, and the batch interval paces the next"
        ),
        "kinesis.throughput.exceeded.backoff.ms": (
            "a throttled read is retried with back-off, then with the batch"
        ),
        "kinesis.non.proxy.hosts": "the only host contacted is the Kinesis endpoint",
    }

    def __init__(self, config: Any) -> None:
        problems: list[tuple[str | None, str]] = []
        for key in ("kinesis.stream", "kafka.topic"):
            if not config.get(key):
                problems.append((key, f"connector {config.connector_class} needs '{key}'"))
        for key in ("kinesis.proxy.username", "kinesis.proxy.password"):
            if config.get(key):
                problems.append((key, f"{key}: a proxy that asks for a login is not supported yet"))
        try:
            urls.refuse(
                config.secrets,
                {"kinesis.proxy.url": config.get("kinesis.proxy.url")},
                "a proxy that asks for a login is not supported yet",
            )
        except ConfigError as e:
            problems.append(("kinesis.proxy.url", e.message))
        provider = str(config.get("kinesis.credentials.provider.class") or DEFAULT_CHAIN[0])
        if provider.strip() not in DEFAULT_CHAIN:
            problems.append(
                (
                    "kinesis.credentials.provider.class",
                    f"kinesis.credentials.provider.class '{provider}' is not supported: give "
                    "aws.access.key.id and aws.secret.key.id, or leave it to the AWS default "
                    "chain (DefaultAWSCredentialsProviderChain)",
                )
            )
        position = str(config.get("kinesis.position") or "TRIM_HORIZON").strip().upper()
        self.position = position
        self.start_ms: int | None = None
        if position not in POSITIONS:
            problems.append(
                (
                    "kinesis.position",
                    f"kinesis.position must be one of {', '.join(POSITIONS)}, got '{position}'",
                )
            )
        elif position == "AT_TIMESTAMP":
            try:
                self.start_ms = _epoch_ms(config.get("kinesis.shard.timestamp"))
            except ConfigError as e:
                problems.append(("kinesis.shard.timestamp", e.message))
        try:
            self.shard_pattern = compile_user(str(config.get("kinesis.shard.id") or ".*"))
        except ValueError as e:
            problems.append(("kinesis.shard.id", f"kinesis.shard.id is not a pattern: {e}"))
        try:
            self.record_limit = config.integer("kinesis.record.limit", RECORD_LIMIT, low=1)
            if self.record_limit > MAX_LIMIT:
                raise ConfigError(f"kinesis.record.limit may be at most {MAX_LIMIT}")
        except ConfigError as e:
            problems.append(("kinesis.record.limit", e.message))
        if not problems:
            try:
                super().__init__(config)
            except ConfigError as e:
                problems.append((None, e.message))
        if problems:
            raise ConnectConfigError(problems, what=config.connector_class)

    def region(self) -> str:
        """``us-east-1``, or Confluent's ``US_EAST_1`` spelling of it."""
        text = str(self.config.get("kinesis.region") or "us-east-1").strip()
        return text.lower().replace("_", "-")

    def proxy(self) -> str | None:
        return self.config.text("kinesis.proxy.url") or None

    def wanted(self, shard_id: str) -> bool:
        return self.shard_pattern.fullmatch(shard_id) is not None

    def start_offset(self, partition: Mapping[str, Any], policy: str) -> dict[str, Any]:
        """Where a shard without a committed offset starts: ``kinesis.position`` (the
        pipeline's own ``latest`` start wins). A shard split or merged from others starts
        at its beginning whatever the position while a parent is still listed: its parents
        are read to their ends first, and what was written to it since the reshard must
        not be skipped (as the KCL does)."""
        parents = self._parents.get(str(partition.get("shardId")), [])
        if any(p in self._parents for p in parents):  # a parent still listed: resharded
            return {}
        if policy == "latest" or self.position == "LATEST":
            return {"timestamp": int(time.time() * 1000)}
        if self.position == "AT_TIMESTAMP" and self.start_ms is not None:
            return {"timestamp": self.start_ms}
        return {}


def _epoch_ms(value: Any) -> int:
    """``kinesis.shard.timestamp``: epoch milliseconds, or an ISO-8601 date or time (UTC
    when it names no zone)."""
    text = str(value or "").strip()
    if not text:
        raise ConfigError("kinesis.position AT_TIMESTAMP needs kinesis.shard.timestamp")
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"kinesis.shard.timestamp '{text}' is neither epoch milliseconds nor an "
            "ISO-8601 time (2026-01-31T12:00:00.000Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)

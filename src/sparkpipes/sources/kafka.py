"""Kafka source on confluent-kafka (librdkafka): the source and its options.

Location is ``'host:port[,host:port…]/topic'`` as in ``LOAD DATA KAFKA``. Client options
are an allow-list: anything else, and options that would run code or commands on the
executors (``sasl.jaas.config``, ``plugin.library.paths``, ``sasl.kerberos.kinit.cmd``,
``ssl.engine.location``), is refused by name. Secrets (``sasl.password``,
``ssl.key.password``, ``ssl.keystore.password``, an inline ``ssl.key.pem``) belong in
CREDENTIALS, never in CONFIG.
A user and password in the broker list (``user:pass@host:9092/topic``) are refused, saying
so: no Kafka client takes them there (librdkafka would look the whole text up as a host
name, and log it), and guessing SASL's protocol and mechanism could send the password
over a connection the user did not ask for.

Offsets are Kafka offsets (ints), "next offset to read". The source hands out a metadata
provider (``kafka_metadata``: partitions, watermarks, time lookups; the driver's) and
partition consumers (``kafka_consumer``: records; the executors'), both clients made by
``kafka_client``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparkpipes.config import Secret, urls
from sparkpipes.errors import ConfigError
from sparkpipes.sources.base import MetadataProvider, Source

if TYPE_CHECKING:
    from sparkpipes.sources.kafka_consumer import KafkaPartitionConsumer
    from sparkpipes.sources.kafka_metadata import KafkaMetadata

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
    "enable.ssl.certificate.verification",
}
#: librdkafka's TLS settings that take text or files of certificates, keys and lists
#: (``ssl.providers``, ``ssl.engine.*`` load code: refused)
ALLOWED_SSL = frozenset(
    f"ssl.{k}"
    for k in (
        "cipher.suites",
        "curves.list",
        "sigalgs.list",
        "key.location",
        "certificate.location",
        "certificate.pem",
        "ca.location",
        "ca.pem",
        "ca.certificate.stores",
        "crl.location",
        "keystore.location",
        "endpoint.identification.algorithm",
    )
)
#: a client's private key given inline (``ssl.key.pem``) is a secret like its password
SECRET_KEYS = {
    "sasl.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.key.pem",
    "sasl.username",
}
FORBIDDEN = {
    "sasl.jaas.config": "Java JAAS configuration is not supported; give sasl.mechanism in "
    "CONFIG and sasl.username / sasl.password in CREDENTIALS",
    "plugin.library.paths": "loading client plugins would run code on every executor",
    "sasl.kerberos.kinit.cmd": "it runs a shell command on every executor",
    "ssl.engine.location": "loading an OpenSSL engine would run code on every executor",
    "ssl.engine.id": "OpenSSL engines are not supported",
    "ssl.providers": "loading OpenSSL providers would load a library into the server and "
    "every executor",
    "enable.auto.commit": "sparkpipes commits offsets with the data, never to Kafka",
    "group.id": "sparkpipes assigns partitions itself and does not use consumer groups",
    "auto.offset.reset": "use the pipeline's offsets / on_offset_out_of_range settings",
}
ISOLATION_LEVELS = {"read_committed", "read_uncommitted"}
#: the source's own option (no client key): hand over each record's key, headers and
#: timestamp with its payload (Pinot's ``metadata.populate``); :data:`KEY_ONLY` hands them
#: over but only the ``__key`` column is filled from them (Pinot's consumer without
#: ``metadata.populate`` gives the record's key, no headers and no ``__metadata$…``)
RECORD_METADATA = "record.metadata"
KEY_ONLY = "key"
#: the source's own option (no client key): read only these partitions of the topic, a
#: list of partition ids (or their text, ``"0,2,5"``); Pinot's ``stream.kafka.partition.ids``
PARTITIONS = "partitions"

#: why a password in the broker list is refused, and what to write instead
NO_USERINFO = (
    "Kafka clients take no user or password in the broker list (neither librdkafka nor "
    "Kafka's bootstrap.servers): give them as CREDENTIALS "
    '\'{"sasl.username": "…", "sasl.password": "…"}\' with CONFIG security.protocol '
    "(SASL_SSL or SASL_PLAINTEXT) and sasl.mechanism"
)

#: how long a client tries to reach the brokers before the batch fails (CONFIG
#: ``socket.connection.setup.timeout.ms`` changes it, as it does librdkafka's own)
CONNECT_TIMEOUT_MS = 10_000


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


def _partition_ids(value: Any) -> tuple[int, ...] | None:
    """The ``partitions`` option: a list of partition ids, or their comma-separated text;
    None (every partition) when not given."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"Kafka option '{PARTITIONS}' must be a list of partition ids")
    ids = set()
    for item in items:
        text = str(item).strip() if not isinstance(item, bool) else ""
        if not text.isdigit():
            raise ConfigError(
                f"Kafka option '{PARTITIONS}' must be a list of partition ids (whole numbers "
                f"of at least 0), got {item!r}"
            )
        ids.add(int(text))
    if not ids:
        raise ConfigError(f"Kafka option '{PARTITIONS}' names no partition")
    return tuple(sorted(ids))


class KafkaSource(Source):
    name = "kafka"
    runs_in_driver = True
    position_type = pa.int64()

    def __init__(
        self, location: str, config: Mapping[str, Any], credentials: Mapping[str, Secret]
    ) -> None:
        urls.refuse(
            credentials,
            {urls.LOCATION: location, "bootstrap.servers": config.get("bootstrap.servers")},
            NO_USERINFO,
            bare=frozenset([urls.LOCATION]),
        )
        self.servers, self.topic = parse_location(location)
        config = dict(config)
        metadata = config.pop(RECORD_METADATA, False)
        if not isinstance(metadata, bool) and metadata != KEY_ONLY:
            raise ConfigError(
                f"Kafka option '{RECORD_METADATA}' must be true, false or '{KEY_ONLY}'"
            )
        #: keys, headers and timestamps are fetched with the payloads (``KEY_ONLY``: only
        #: the ``__key`` column is filled from them)
        self.record_metadata: bool | str = metadata
        #: the partitions read (sorted), or None: every partition of the topic
        self.only: tuple[int, ...] | None = _partition_ids(config.pop(PARTITIONS, None))
        for key in config:
            if key in FORBIDDEN:
                raise ConfigError(f"Kafka option '{key}' is not allowed: {FORBIDDEN[key]}")
            if key in SECRET_KEYS - {"sasl.username"}:
                raise ConfigError(
                    f"Kafka option '{key}' is a secret: give it in CREDENTIALS, not CONFIG"
                )
            if key in ALLOWED_SSL or key in ALLOWED_CONFIG:
                continue
            raise ConfigError(
                f"unknown or unsupported Kafka option '{key}' (allowed: "
                f"{', '.join(sorted(ALLOWED_CONFIG | ALLOWED_SSL))})"
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
        from sparkpipes.sources.kafka_metadata import KafkaMetadata

        return KafkaMetadata(self, self.connect_timeout_s if timeout_s is None else timeout_s)

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> KafkaPartitionConsumer:
        from sparkpipes.sources.kafka_consumer import KafkaPartitionConsumer

        return KafkaPartitionConsumer(self, int(partition), out_of_range, pipeline)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> int:
        if policy == "earliest":
            return meta.earliest(partition)
        return meta.end(partition)

    def describe(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"source": "kafka", "servers": self.servers, "topic": self.topic}
        if self.only is not None:
            out[PARTITIONS] = list(self.only)
        return out

    def label(self) -> str:
        return f"topic '{self.topic}'"

    def check(self) -> str:
        return f"{super().check()} at {self.servers}"

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"topic": self.topic, "partition": int(partition)}

    def reached(self, offset: Any, latest: Any) -> bool:
        return offset >= latest

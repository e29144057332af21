"""A sink connector's config once checked (:class:`SinkConnectorConfig`, which ``model``
builds), and which of its keys may change while a stored password is kept."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkpipes.config.core import Secret
from sparkpipes.frontends.connect.jdbc_sink import JdbcSink
from sparkpipes.frontends.connect.singlestore_sink import Key
from sparkpipes.sources.connect import smt

SECRET_KEYS = frozenset({"connection.password"})
#: Connect's dead-letter topic keys (``frontends.connect.deadletter`` publishes to it)
DEAD_LETTER_TOPIC_KEYS = (
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.context.headers.enable",
    "errors.deadletterqueue.topic.replication.factor",
)
#: the keys (and key prefixes) that may change while a password shown as ``<redacted>``
#: is kept (``PUT …/config`` of a config ``GET …/config`` showed): batches, retries,
#: topics, tables, keys, columns, bad records. None decides where a password is sent;
#: every other key (the destination's ``connection.*`` and ``params.*``, the converters
#: and the registry's URL, ``bootstrap.servers``, a key added later) must be as stored.
KEEPS_SECRETS = frozenset(
    {
        "name",
        "tasks.max",
        "batch.interval.ms",
        "max.retries",
        "retry.backoff.ms",
        "topics",
        "topics.regex",
        "fields.whitelist",
        "errors.tolerance",
        "errors.log.enable",
        "errors.log.include.messages",
        "errors.deadletterqueue.table.name",
        *DEAD_LETTER_TOPIC_KEYS,
        # the MemSQL connector's names of the same settings (``legacy``)
        "memsql.loadDataCompression",
        "memsql.loadDataFormat",
        "memsql.metadata.allow",
        "memsql.metadata.table",
        "singlestore.metadata.allow",
        "singlestore.metadata.table",
        "singlestore.upsert",
        "singlestore.loadDataCompression",
        "consumer.override.auto.offset.reset",
        "key.converter.schemas.enable",
        "value.converter.schemas.enable",
        # Confluent's JDBC sink's keys that say how rows are written, not where
        "insert.mode",
        "pk.mode",
        "pk.fields",
        "delete.enabled",
        "auto.create",
        "auto.evolve",
        "table.name.format",
        "batch.size",
        "db.timezone",
        "date.timezone",
        "quote.sql.identifiers",
    }
)
KEEPS_SECRETS_PREFIXES = ("tableKey.", "singlestore.tableName.", "transforms", "predicates")


@dataclass(frozen=True)
class SinkConnectorConfig:
    """One sink connector, checked. ``raw`` is the config as given (secrets removed, a
    password inside a URL ``<redacted>``), which ``GET /connectors/{name}/config`` shows
    back."""

    name: str
    connector_class: str
    topics: tuple[str, ...]
    topics_regex: str | None
    tasks_max: int
    value_converter: str
    schemas_enable: bool
    #: the registry's URL, its password (if any) ``<redacted>`` …
    schema_registry: str | None
    #: … and kept here, as ``FormatSpec.credentials`` take it
    registry_secrets: Mapping[str, Secret]
    destination: str  # delta, postgresql, mysql, sqlite
    host: str | None
    port: int | None
    database: str | None
    schema: str | None
    user: str | None
    password: Secret | None
    keys: tuple[Key, ...]
    metadata_table: str | None
    upsert: bool
    table_names: Mapping[str, str]
    fields: tuple[str, ...]
    tolerate_errors: bool
    dead_letter_table: str | None
    bootstrap_servers: str
    start: str
    max_retries: int | None
    batch_interval_ms: int | None
    connect_timeout_s: int | None
    raw: Mapping[str, str] = field(default_factory=dict)
    #: the Single Message Transforms' keys (``transforms``, ``predicates`` and theirs)
    #: as given, in order; the chain they make, checked (``sources.connect.smt``)
    transforms: tuple[tuple[str, str], ...] = ()
    chain: smt.Chain | None = field(default=None, compare=False, repr=False)
    #: ``errors.deadletterqueue.topic.name``: failed records go to this Kafka topic too
    dead_letter_topic: str | None = None
    #: ``errors.deadletterqueue.context.headers.enable``: with Connect's ``__connect.errors.*``
    dead_letter_headers: bool = False
    #: ``errors.deadletterqueue.topic.replication.factor`` of a topic created for it (-1:
    #: the broker's default)
    dead_letter_replication: int = 3
    #: Confluent's JDBC sink's own settings (None for the SingleStore sink)
    jdbc: JdbcSink | None = None

    def routed(self, topic: str) -> str:
        """The topic records of ``topic`` have once transformed: their routers' (Connect's
        sink writes a record to the table of its routed topic)."""
        return self.chain.route(topic) if self.chain is not None else topic

    def table_of(self, topic: str) -> str:
        routed = self.routed(topic)
        if self.jdbc is not None:  # table.name.format, without its schema part
            return self.jdbc.table_of(routed)[1]
        return self.table_names.get(routed, routed)

    def where(self) -> str:
        if self.destination == "delta":
            return "the warehouse"
        if self.jdbc is not None:
            return self.jdbc.database.where()
        kind = "PostgreSQL" if self.destination == "postgresql" else "MySQL"
        return f"{kind} database '{self.database}' at {self.host}:{self.port}"


def moved(stored: Mapping[str, str], given: Mapping[str, str]) -> list[str]:
    """The keys (sorted) outside :data:`KEEPS_SECRETS` whose value differs between the
    stored config and the one given (one absent from either counts): where a kept
    password would be sent from. Keys only, never their values."""
    return [
        k
        for k in sorted(set(stored) | set(given))
        if k not in KEEPS_SECRETS
        and not k.startswith(KEEPS_SECRETS_PREFIXES)
        and k not in SECRET_KEYS
        and stored.get(k) != given.get(k)
    ]

"""Kafka Connect sink-connector configs (seed 001), as users write them: a JSON object
(``{"name": …, "config": {…}}`` or the flat config) or a ``.properties`` file, checked once
into a frozen :class:`SinkConnectorConfig`.

The destination follows from the keys given: ``connection.ddlEndpoint`` (with
``connection.database``) is a MySQL-protocol database (SingleStore's own keys; MariaDB
and MySQL answer them), ``connection.url`` (``jdbc:postgresql://host:5432/db``) is
PostgreSQL, and neither is the warehouse (Delta tables). ``connection.password`` is a
secret wherever it is given, and so is a password inside ``connection.url`` (the login's,
as a JDBC driver takes it) or the schema registry's URL (its basic auth); the config
shown back has them ``<redacted>``. A password in ``bootstrap.servers`` or
``connection.ddlEndpoint`` is refused: neither takes one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from sparkpipes.config import urls
from sparkpipes.config.core import REDACTED, Secret
from sparkpipes.config.transforms import is_transform_key, parse_chain
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect import legacy
from sparkpipes.frontends.connect.shape import flat
from sparkpipes.frontends.connect.shape import parse_properties as parse_properties  # re-exported
from sparkpipes.sources.connect import framework, smt
from sparkpipes.sources.connect.framework import SINK
from sparkpipes.util.regex import compile_user

#: the connector classes users write for a sink into tables
CLASS_NAMES = (
    "com.singlestore.kafka.SingleStoreSinkConnector",
    "com.memsql.kafka.MemSQLSinkConnector",
    "sparkpipes.connect.SinkConnector",
)
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
AVRO_CONVERTERS = ("io.confluent.connect.avro.AvroConverter",)
KEY_KINDS = ("PRIMARY", "UNIQUE", "SHARD", "COLUMNSTORE", "KEY")
DEFAULT_METADATA_TABLE = "kafka_connect_transaction_metadata"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
#: Connect's dead-letter topic keys (``frontends.connect.deadletter`` publishes to it)
DEAD_LETTER_TOPIC_KEYS = (
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.context.headers.enable",
    "errors.deadletterqueue.topic.replication.factor",
)
#: a Kafka topic name (Kafka's own rule)
TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
#: keys read here (Connect's worker keys that change nothing here, such as key.converter
#: and errors.log.*, are accepted and reported by ``sources.connect.framework``)
KEYS = frozenset(
    {
        "name",
        "connector.class",
        "topics",
        "topics.regex",
        "tasks.max",
        "value.converter",
        "value.converter.schemas.enable",
        "value.converter.schema.registry.url",
        "connection.ddlEndpoint",
        "connection.dmlEndpoints",
        "connection.database",
        "connection.url",
        "connection.user",
        "connection.password",
        "singlestore.metadata.allow",
        "singlestore.metadata.table",
        "singlestore.upsert",
        "singlestore.loadDataCompression",
        "max.retries",
        "retry.backoff.ms",
        "fields.whitelist",
        "errors.tolerance",
        "errors.deadletterqueue.table.name",
        *DEAD_LETTER_TOPIC_KEYS,
        "bootstrap.servers",
        "consumer.override.auto.offset.reset",
        "batch.interval.ms",
    }
)
#: keys with a variable part: tableKey.<KIND>[.<name>], singlestore.tableName.<topic>,
#: params.<name>
PREFIXES = ("tableKey.", "singlestore.tableName.", "params.")
SECRET_KEYS = frozenset({"connection.password"})
#: the converter option naming a schema registry, as a FormatSpec takes it
REGISTRY_OPTION = "schema.registry.url"
#: keys whose value may not hold a password, and where the login goes instead
NO_PASSWORD = {
    "bootstrap.servers": (
        "Kafka clients take no user or password in the broker list (neither librdkafka nor "
        "Kafka's bootstrap.servers)"
    ),
    "connection.ddlEndpoint": (
        "it is host[:port]; give the login as connection.user and connection.password"
    ),
    "connection.clientEndpoint": (
        "it is host[:port]; give the login as connection.user and connection.password"
    ),
}
#: MySQL connection parameters understood (``params.<name>``)
PARAMS = ("connectTimeout", "ssl", "useSSL")
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
    }
)
KEEPS_SECRETS_PREFIXES = ("tableKey.", "singlestore.tableName.", "transforms", "predicates")


@dataclass(frozen=True)
class Key:
    """``tableKey.<KIND>[.<name>]=col,col``: a key of a table the connector creates."""

    kind: str
    columns: tuple[str, ...]
    name: str | None = None


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
    destination: str  # delta, postgresql, mysql
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

    def routed(self, topic: str) -> str:
        """The topic records of ``topic`` have once transformed: their routers' (Connect's
        sink writes a record to the table of its routed topic)."""
        return self.chain.route(topic) if self.chain is not None else topic

    def table_of(self, topic: str) -> str:
        routed = self.routed(topic)
        return self.table_names.get(routed, routed)

    def where(self) -> str:
        if self.destination == "delta":
            return "the warehouse"
        kind = "PostgreSQL" if self.destination == "postgresql" else "MySQL"
        return f"{kind} database '{self.database}' at {self.host}:{self.port}"


def load(text_or_obj: str | Mapping[str, Any], *, name: str | None = None) -> SinkConnectorConfig:
    """From a JSON object (Kafka Connect's ``{"name", "config"}`` or a flat config), JSON
    text, or ``.properties`` text; ``name`` for a config without one (``PUT …/config``)."""
    cfg = flat(text_or_obj, name=name)
    return build({k: _text(k, v) for k, v in cfg.items() if v is not None})


def _text(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, Secret):
        return value.reveal()
    kind = type(value).__name__  # never the value: it may be a password
    raise ConfigError(f"connector config key '{key}' must be a string, got a {kind}")


def build(given: Mapping[str, str]) -> SinkConnectorConfig:
    """Check a flat config (string values) into a :class:`SinkConnectorConfig`."""
    passwords: dict[str, Secret] = {}
    shown = urls.lift(given, passwords, what="connector config key")
    for key, why in NO_PASSWORD.items():
        if urls.secret_key(key) in passwords:
            raise ConfigError(f"{key} '{shown[key]}' holds a password: {why}")
    cfg = legacy.canonical(shown)  # other releases' names read as this one's
    chain = _check_keys(cfg)
    name = cfg.get("name", "").strip()
    if not name:
        raise ConfigError("a connector config needs 'name'")
    cls = cfg.get("connector.class", "").strip()
    if cls not in CLASS_NAMES:
        raise ConfigError(
            f"connector.class must be one of {', '.join(CLASS_NAMES)}, got '{cls}'"
            if cls
            else f"a connector config needs 'connector.class' ({CLASS_NAMES[0]})"
        )
    topics = tuple(t.strip() for t in cfg.get("topics", "").split(",") if t.strip())
    regex = cfg.get("topics.regex", "").strip() or None
    if bool(topics) == bool(regex):
        raise ConfigError("give 'topics' (a comma-separated list) or 'topics.regex', one of them")
    if regex:
        try:
            compile_user(regex)
        except ValueError as e:
            raise ConfigError(
                f"topics.regex '{regex}' is not a regular expression sparkpipes runs: {e}"
            ) from None
    dest, host, port, database, schema, url_user = _destination(cfg)
    value_conv = cfg.get("value.converter", JSON_CONVERTER).strip()
    registry = cfg.get("value.converter.schema.registry.url", "").strip() or None
    registry_password = passwords.get(urls.secret_key("value.converter.schema.registry.url"))
    if value_conv in AVRO_CONVERTERS and not registry:
        raise ConfigError(f"value.converter {value_conv} needs value.converter.schema.registry.url")
    if value_conv not in (JSON_CONVERTER, STRING_CONVERTER, *AVRO_CONVERTERS):
        raise ConfigError(
            f"value.converter must be {JSON_CONVERTER}, {AVRO_CONVERTERS[0]} or "
            f"{STRING_CONVERTER}, got '{value_conv}'"
        )
    keys = _keys(cfg)
    meta_allowed = _bool(cfg, "singlestore.metadata.allow", True)
    tolerance = cfg.get("errors.tolerance", "none").strip().lower()
    if tolerance not in ("none", "all"):
        raise ConfigError(f"errors.tolerance must be none or all, got '{tolerance}'")
    if cfg.get("errors.deadletterqueue.table.name"):
        if tolerance != "all":
            raise ConfigError(
                "errors.deadletterqueue.table.name needs errors.tolerance=all (without it a "
                "bad record fails the connector)"
            )
        if dest == "delta":
            raise ConfigError(
                "errors.deadletterqueue.table.name is for database destinations; in the "
                "warehouse skipped records are in information_schema.PIPELINES_ERRORS"
            )
    dlq_topic = cfg.get("errors.deadletterqueue.topic.name", "").strip() or None
    if dlq_topic is not None:
        if tolerance != "all":
            raise ConfigError(
                "errors.deadletterqueue.topic.name needs errors.tolerance=all: without it a "
                "bad record fails the connector's batch here and is not sent to the topic"
            )
        if not TOPIC_NAME.fullmatch(dlq_topic) or dlq_topic in (".", ".."):
            raise ConfigError(
                f"errors.deadletterqueue.topic.name '{dlq_topic}' is not a Kafka topic name "
                "(letters, digits, '.', '_', '-'; at most 249)"
            )
        # SinkConnectorConfig.validate: a failed record must not come back to the task
        if dlq_topic in topics or (regex and compile_user(regex).fullmatch(dlq_topic)):
            raise ConfigError(
                f"The DLQ topic '{dlq_topic}' may not be included in the list of topics "
                "('topics' or 'topics.regex') to consume"
            )
    start = cfg.get("consumer.override.auto.offset.reset", "earliest").strip().lower()
    if start not in ("earliest", "latest"):
        raise ConfigError(
            f"consumer.override.auto.offset.reset must be earliest or latest, got '{start}'"
        )
    compression = cfg.get("singlestore.loadDataCompression", "GZip")
    if compression.lower() not in ("gzip", "lz4", "skip"):
        raise ConfigError(
            f"singlestore.loadDataCompression must be GZip, LZ4 or Skip, got '{compression}'"
        )
    timeout = None
    for k in (k for k in cfg if k.startswith("params.")):
        param = k[len("params.") :]
        if param not in PARAMS:
            raise ConfigError(
                f"connector config key '{k}': parameter '{param}' is not understood "
                f"(params.{', params.'.join(PARAMS)})"
            )
        if param == "connectTimeout":
            timeout = max(1, _int(cfg, k, 1) // 1000)
    password = _password(cfg, passwords.get(urls.secret_key("connection.url")))
    return SinkConnectorConfig(
        name=name,
        connector_class=cls,
        topics=topics,
        topics_regex=regex,
        tasks_max=_int(cfg, "tasks.max", 1, default=1),
        value_converter=value_conv,
        schemas_enable=_bool(cfg, "value.converter.schemas.enable", True),
        schema_registry=registry,
        registry_secrets=(
            {urls.secret_key(REGISTRY_OPTION): registry_password} if registry_password else {}
        ),
        destination=dest,
        host=host,
        port=port,
        database=database,
        schema=schema,
        user=cfg.get("connection.user") or url_user or ("root" if dest == "mysql" else None),
        password=password,
        keys=keys,
        metadata_table=(
            cfg.get("singlestore.metadata.table", DEFAULT_METADATA_TABLE) if meta_allowed else None
        ),
        upsert=_bool(cfg, "singlestore.upsert", False),
        table_names={
            k[len("singlestore.tableName.") :]: v.strip()
            for k, v in cfg.items()
            if k.startswith("singlestore.tableName.")
        },
        fields=tuple(f.strip() for f in cfg.get("fields.whitelist", "").split(",") if f.strip()),
        tolerate_errors=tolerance == "all",
        dead_letter_table=cfg.get("errors.deadletterqueue.table.name") or None,
        dead_letter_topic=dlq_topic,
        dead_letter_headers=_bool(cfg, "errors.deadletterqueue.context.headers.enable", False),
        dead_letter_replication=(
            -1  # the broker's default (KIP-464), as Connect reads -1
            if cfg.get("errors.deadletterqueue.topic.replication.factor", "").strip() == "-1"
            else _int(cfg, "errors.deadletterqueue.topic.replication.factor", 1, default=3)
        ),
        bootstrap_servers=cfg.get("bootstrap.servers", DEFAULT_BOOTSTRAP).strip(),
        start=start,
        max_retries=_int(cfg, "max.retries", 0) if "max.retries" in cfg else None,
        batch_interval_ms=(
            _int(cfg, "batch.interval.ms", 0) if "batch.interval.ms" in cfg else None
        ),
        connect_timeout_s=timeout,
        raw={k: v for k, v in shown.items() if k not in SECRET_KEYS},
        transforms=tuple((k, v) for k, v in cfg.items() if is_transform_key(k)),
        chain=chain,
    )


def not_applicable(cfg: Mapping[str, str]) -> dict[str, str]:
    """The keys of ``cfg`` accepted as changing nothing here, and why (reported back)."""
    return {
        k: why
        for k in cfg
        if (why := legacy.not_applicable(k))
        or (k not in KEYS and (why := framework.not_applicable(k, SINK)))
    }


def _check_keys(cfg: Mapping[str, str]) -> smt.Chain | None:
    """Every key of ``cfg`` is honoured (:data:`KEYS`, :data:`PREFIXES`, the transform
    chain's), one of Connect's accepted as not applicable, or a problem naming it: all of
    them in one error. Returns the chain of its transforms (None without any)."""
    problems: list[tuple[str | None, str]] = []
    parsed, found = parse_chain({k: v for k, v in cfg.items() if is_transform_key(k)})
    problems += found
    chain = None
    if parsed:
        chain, more = smt.chain_of(parsed, SINK)
        problems += more
    for key in cfg:
        if key in KEYS or key.startswith(PREFIXES) or is_transform_key(key):
            continue
        why = framework.refusal(key, SINK) or legacy.refusal(key)
        if why is not None:
            problems.append((key, why))
        elif framework.not_applicable(key, SINK) is None and not legacy.not_applicable(key):
            near = difflib.get_close_matches(key, sorted(KEYS), n=1)
            problems.append(
                (
                    key,
                    f"unknown connector config key '{key}'"
                    + (f"; did you mean '{near[0]}'?" if near else "")
                    + (
                        " (a converter option that may change how values are decoded is "
                        "refused, not ignored)"
                        if key.startswith("value.converter.")
                        else ""
                    ),
                )
            )
    if problems:
        raise framework.ConnectConfigError(problems, what="sink connector")
    return chain


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


def _keys(cfg: Mapping[str, str]) -> tuple[Key, ...]:
    out = []
    for k, v in cfg.items():
        if not k.startswith("tableKey."):
            continue
        kind, _, name = k[len("tableKey.") :].partition(".")
        if kind.upper() not in KEY_KINDS:
            raise ConfigError(
                f"connector config key '{k}': the key kind must be one of {', '.join(KEY_KINDS)}"
            )
        cols = tuple(c.strip().strip("`").strip() for c in v.split(",") if c.strip())
        if not cols:
            raise ConfigError(f"connector config key '{k}' names no column")
        out.append(Key(kind.upper(), cols, name or None))
    return tuple(out)


def _password(cfg: Mapping[str, str], in_url: Secret | None) -> Secret | None:
    """The destination's password: ``connection.password``, or the one inside
    ``connection.url`` (as a JDBC driver takes it), not two different ones. A URL that
    shows it ``<redacted>`` (a config shown by ``GET …/config`` sent back) keeps the
    stored one (``PipelineSpec.keep_secrets``)."""
    given = cfg.get("connection.password")
    url = cfg.get("connection.url", "")
    raw = urls.password_of(in_url)
    if raw is not None:
        found = unquote_plus(raw) if urls.in_query(url) else unquote(raw)
        if given and given != found:
            raise ConfigError(
                "connection.url and connection.password give different passwords: give one"
            )
        return Secret(found)
    if given:
        return Secret(given)
    return Secret(REDACTED) if urls.is_redacted(url) else None


def _destination(
    cfg: Mapping[str, str],
) -> tuple[str, str | None, int | None, str | None, str | None, str | None]:
    """``(kind, host, port, database, schema, user named by the URL)``."""
    endpoint, url = cfg.get("connection.ddlEndpoint"), cfg.get("connection.url")
    if endpoint and url:
        raise ConfigError(
            "give connection.ddlEndpoint (MySQL protocol) or connection.url, not both"
        )
    if endpoint:
        host, _, port = endpoint.strip().partition(":")
        database = cfg.get("connection.database", "").strip()
        if not database:
            raise ConfigError("connection.ddlEndpoint needs connection.database")
        return "mysql", host, _port(port, 3306, "connection.ddlEndpoint"), database, None, None
    if url:
        parts = urlsplit(url.strip().removeprefix("jdbc:"))
        if parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
            raise ConfigError(
                f"connection.url must be jdbc:postgresql://host:5432/database, got '{url}'"
            )
        params = dict(parse_qsl(parts.query))
        unknown = [p for p in params if p not in ("currentSchema", "user", "password")]
        if unknown:
            raise ConfigError(
                f"connection.url parameter '{unknown[0]}' is not understood "
                "(currentSchema, user, password)"
            )
        database = parts.path.lstrip("/") or cfg.get("connection.database", "")
        if not database:
            raise ConfigError(f"connection.url '{url}' names no database")
        try:
            port = parts.port or 5432
        except ValueError:
            raise ConfigError(f"connection.url '{url}' has an invalid port") from None
        user = params.get("user") or (unquote(parts.username) if parts.username else None)
        return "postgresql", parts.hostname, port, database, params.get("currentSchema"), user
    if cfg.get("connection.database"):
        raise ConfigError(
            "connection.database needs connection.ddlEndpoint (a MySQL-protocol database); "
            "without either the connector loads Delta tables of the warehouse"
        )
    return "delta", None, None, None, None, None


def _port(text: str, default: int, key: str) -> int:
    if not text:
        return default
    if not text.isdigit():
        raise ConfigError(f"{key} has an invalid port '{text}'")
    return int(text)


def _bool(cfg: Mapping[str, str], key: str, default: bool) -> bool:
    value = cfg.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise ConfigError(f"connector config key '{key}' must be true or false, got '{value}'")
    return value.strip().lower() == "true"


def _int(cfg: Mapping[str, str], key: str, low: int, *, default: int | None = None) -> int:
    value = cfg.get(key)
    if value is None and default is not None:
        return default
    try:
        out = int(str(value).strip())
    except ValueError:
        out = low - 1
    if out < low:
        raise ConfigError(
            f"connector config key '{key}' must be an integer of at least {low}, got '{value}'"
        )
    return out

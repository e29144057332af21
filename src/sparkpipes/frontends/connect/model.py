"""Kafka Connect sink-connector configs (seed 001), as users write them: a JSON object
(``{"name": …, "config": {…}}`` or the flat config) or a ``.properties`` file, checked once
into a frozen :class:`SinkConnectorConfig`, every problem of a config reported at once.

The connector class decides the keys. The SingleStore (and MemSQL) sink's destination
follows from the keys given (``singlestore_sink``): ``connection.ddlEndpoint`` (with
``connection.database``) is a MySQL-protocol database (SingleStore's own keys; MariaDB
and MySQL answer them), ``connection.url`` (``jdbc:postgresql://host:5432/db``) is
PostgreSQL, and neither is the warehouse (Delta tables). Confluent's JDBC sink
(``io.confluent.connect.jdbc.JdbcSinkConnector``, ``jdbc_sink``) writes the database
of its ``connection.url``: PostgreSQL, MySQL, MariaDB or SQLite. ``connection.password``
is a secret wherever it is given, and so is a password inside ``connection.url`` (the
login's, as a JDBC driver takes it) or the schema registry's URL (its basic auth); the
config shown back has them ``<redacted>``. A password in ``bootstrap.servers`` or
``connection.ddlEndpoint`` is refused: neither takes one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import Secret
from sparkpipes.config.transforms import is_transform_key, parse_chain
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect import jdbc_sink, legacy, singlestore_sink
from sparkpipes.frontends.connect.shape import flat
from sparkpipes.frontends.connect.shape import parse_properties as parse_properties  # re-exported
from sparkpipes.frontends.connect.singlestore_sink import KEY_KINDS as KEY_KINDS  # re-exported
from sparkpipes.frontends.connect.singlestore_sink import PARAMS
from sparkpipes.frontends.connect.singlestore_sink import Key as Key  # re-exported
from sparkpipes.frontends.connect.sink_config import (  # re-exported
    DEAD_LETTER_TOPIC_KEYS as DEAD_LETTER_TOPIC_KEYS,
)
from sparkpipes.frontends.connect.sink_config import KEEPS_SECRETS as KEEPS_SECRETS
from sparkpipes.frontends.connect.sink_config import SECRET_KEYS, SinkConnectorConfig
from sparkpipes.frontends.connect.sink_config import moved as moved
from sparkpipes.sources.connect import framework, smt
from sparkpipes.sources.connect.framework import SINK
from sparkpipes.util.regex import compile_user

#: the connector classes users write for a sink into tables
CLASS_NAMES = (
    "com.singlestore.kafka.SingleStoreSinkConnector",
    "com.memsql.kafka.MemSQLSinkConnector",
    "sparkpipes.connect.SinkConnector",
    jdbc_sink.CLASS,
)
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
AVRO_CONVERTERS = ("io.confluent.connect.avro.AvroConverter",)
DEFAULT_METADATA_TABLE = "kafka_connect_transaction_metadata"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
#: a Kafka topic name (Kafka's own rule)
TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
#: keys every sink class here reads (Connect's worker keys that change nothing here,
#: such as errors.log.*, are accepted and reported by ``sources.connect.framework``)
COMMON_KEYS = frozenset(
    {
        "name",
        "connector.class",
        "topics",
        "topics.regex",
        "tasks.max",
        "value.converter",
        "value.converter.schemas.enable",
        "value.converter.schema.registry.url",
        "errors.tolerance",
        "errors.deadletterqueue.table.name",
        *DEAD_LETTER_TOPIC_KEYS,
        "bootstrap.servers",
        "consumer.override.auto.offset.reset",
        "batch.interval.ms",
    }
)
#: the SingleStore sink's keys
KEYS = COMMON_KEYS | frozenset(
    {
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
    }
)
#: Confluent's JDBC sink's keys
JDBC_KEYS = COMMON_KEYS | jdbc_sink.KEYS
#: the SingleStore sink's keys with a variable part: tableKey.<KIND>[.<name>],
#: singlestore.tableName.<topic>, params.<name>
PREFIXES = ("tableKey.", "singlestore.tableName.", "params.")
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


def keys_of(connector_class: str) -> frozenset[str]:
    """The keys a sink connector class reads."""
    return JDBC_KEYS if connector_class.strip() == jdbc_sink.CLASS else KEYS


class _Problems(list[tuple[str | None, str]]):
    """A config's problems, each under the key it names (``framework.key_of``)."""

    def __init__(self, cfg: Mapping[str, str]) -> None:
        super().__init__()
        self.keys = list(cfg)

    def add(self, e: ConfigError, key: str | None = None) -> None:
        self.append((key or framework.key_of(e.message, self.keys), e.message))


def build(given: Mapping[str, str]) -> SinkConnectorConfig:
    """Check a flat config (string values) into a :class:`SinkConnectorConfig`; a
    ConnectConfigError lists every problem found."""
    passwords: dict[str, Secret] = {}
    shown = urls.lift(given, passwords, what="connector config key")
    for key, why in NO_PASSWORD.items():
        if urls.secret_key(key) in passwords:
            raise ConfigError(f"{key} '{shown[key]}' holds a password: {why}")
    cls = shown.get("connector.class", "").strip()
    is_jdbc = cls == jdbc_sink.CLASS
    problems = _Problems(shown)
    cfg = dict(shown)
    if not is_jdbc:
        try:
            cfg = legacy.canonical(shown)  # other releases' names read as this one's
        except ConfigError as e:
            problems.add(e)
    chain = _check_keys(cfg, problems, is_jdbc)
    name = cfg.get("name", "").strip()
    if not name:
        problems.append(("name", "a connector config needs 'name'"))
    if cls not in CLASS_NAMES:
        problems.append(
            (
                "connector.class",
                f"connector.class must be one of {', '.join(CLASS_NAMES)}, got '{cls}'"
                if cls
                else f"a connector config needs 'connector.class' ({CLASS_NAMES[0]})",
            )
        )
    topics = tuple(t.strip() for t in cfg.get("topics", "").split(",") if t.strip())
    regex = cfg.get("topics.regex", "").strip() or None
    if bool(topics) == bool(regex):
        problems.append(
            ("topics", "give 'topics' (a comma-separated list) or 'topics.regex', one of them")
        )
    if regex:
        try:
            compile_user(regex)
        except ValueError as e:
            problems.append(
                (
                    "topics.regex",
                    f"topics.regex '{regex}' is not a regular expression sparkpipes runs: {e}",
                )
            )
            regex = None
    value_conv = cfg.get("value.converter", JSON_CONVERTER).strip()
    registry = cfg.get("value.converter.schema.registry.url", "").strip() or None
    registry_password = passwords.get(urls.secret_key("value.converter.schema.registry.url"))
    if value_conv in AVRO_CONVERTERS and not registry:
        problems.append(
            (
                "value.converter",
                f"value.converter {value_conv} needs value.converter.schema.registry.url",
            )
        )
    if value_conv not in (JSON_CONVERTER, STRING_CONVERTER, *AVRO_CONVERTERS):
        problems.append(
            (
                "value.converter",
                f"value.converter must be {JSON_CONVERTER}, "
                f"{AVRO_CONVERTERS[0]} or {STRING_CONVERTER}, got '{value_conv}'",
            )
        )
    schemas = _bool(cfg, "value.converter.schemas.enable", True, problems)
    tolerance = cfg.get("errors.tolerance", "none").strip().lower()
    if tolerance not in ("none", "all"):
        problems.append(
            ("errors.tolerance", f"errors.tolerance must be none or all, got '{tolerance}'")
        )
    dlq_topic = _dead_letters(cfg, tolerance, topics, regex, problems)
    start = cfg.get("consumer.override.auto.offset.reset", "earliest").strip().lower()
    if start not in ("earliest", "latest"):
        problems.append(
            (
                "consumer.override.auto.offset.reset",
                f"consumer.override.auto.offset.reset must be earliest or latest, got '{start}'",
            )
        )
    common = {
        "name": name,
        "connector_class": cls,
        "topics": topics,
        "topics_regex": regex,
        "tasks_max": _int(cfg, "tasks.max", 1, problems, default=1),
        "value_converter": value_conv,
        "schemas_enable": schemas,
        "schema_registry": registry,
        "registry_secrets": (
            {urls.secret_key(REGISTRY_OPTION): registry_password} if registry_password else {}
        ),
        "tolerate_errors": tolerance == "all",
        "dead_letter_table": cfg.get("errors.deadletterqueue.table.name") or None,
        "dead_letter_topic": dlq_topic,
        "dead_letter_headers": _bool(
            cfg, "errors.deadletterqueue.context.headers.enable", False, problems
        ),
        "dead_letter_replication": (
            -1  # the broker's default (KIP-464), as Connect reads -1
            if cfg.get("errors.deadletterqueue.topic.replication.factor", "").strip() == "-1"
            else _int(
                cfg, "errors.deadletterqueue.topic.replication.factor", 1, problems, default=3
            )
        ),
        "bootstrap_servers": cfg.get("bootstrap.servers", DEFAULT_BOOTSTRAP).strip(),
        "start": start,
        "batch_interval_ms": (
            _int(cfg, "batch.interval.ms", 0, problems) if "batch.interval.ms" in cfg else None
        ),
        "raw": {k: v for k, v in shown.items() if k not in SECRET_KEYS},
        "transforms": tuple((k, v) for k, v in cfg.items() if is_transform_key(k)),
        "chain": chain,
    }
    url_password = passwords.get(urls.secret_key("connection.url"))
    if is_jdbc:
        made = _jdbc(cfg, url_password, common, problems)
    else:
        made = _singlestore(cfg, url_password, common, problems)
    if problems or made is None:
        raise framework.ConnectConfigError(list(problems), what="sink connector")
    return made


def _dead_letters(
    cfg: Mapping[str, str],
    tolerance: str,
    topics: tuple[str, ...],
    regex: str | None,
    problems: _Problems,
) -> str | None:
    """``errors.deadletterqueue.*``: the dead-letter topic, checked as Connect checks it."""
    if cfg.get("errors.deadletterqueue.table.name") and tolerance != "all":
        problems.append(
            (
                "errors.deadletterqueue.table.name",
                "errors.deadletterqueue.table.name needs "
                "errors.tolerance=all (without it a bad record fails the connector)",
            )
        )
    dlq_topic = cfg.get("errors.deadletterqueue.topic.name", "").strip() or None
    if dlq_topic is None:
        return None
    key = "errors.deadletterqueue.topic.name"
    if tolerance != "all":
        problems.append(
            (
                key,
                f"{key} needs errors.tolerance=all: without it a bad record fails the "
                "connector's batch here and is not sent to the topic",
            )
        )
    if not TOPIC_NAME.fullmatch(dlq_topic) or dlq_topic in (".", ".."):
        problems.append(
            (
                key,
                f"{key} '{dlq_topic}' is not a Kafka topic name (letters, digits, '.', '_', "
                "'-'; at most 249)",
            )
        )
    # SinkConnectorConfig.validate: a failed record must not come back to the task
    if dlq_topic in topics or (regex and compile_user(regex).fullmatch(dlq_topic)):
        problems.append(
            (
                key,
                f"The DLQ topic '{dlq_topic}' may not be included in the list of topics "
                "('topics' or 'topics.regex') to consume",
            )
        )
    return dlq_topic


def _singlestore(
    cfg: Mapping[str, str],
    url_password: Secret | None,
    common: dict[str, Any],
    problems: _Problems,
) -> SinkConnectorConfig | None:
    """The SingleStore (MemSQL) sink's own keys (``singlestore_sink``)."""
    compression = cfg.get("singlestore.loadDataCompression", "GZip")
    if compression.lower() not in ("gzip", "lz4", "skip"):
        problems.append(
            (
                "singlestore.loadDataCompression",
                f"singlestore.loadDataCompression must be GZip, LZ4 or Skip, got '{compression}'",
            )
        )
    timeout = None
    for k in (k for k in cfg if k.startswith("params.")):
        param = k[len("params.") :]
        if param not in PARAMS:
            problems.append(
                (
                    k,
                    f"connector config key '{k}': parameter '{param}' is not understood "
                    f"(params.{', params.'.join(PARAMS)})",
                )
            )
        elif param == "connectTimeout":
            timeout = max(1, _int(cfg, k, 1, problems, default=1000) // 1000)
    meta_allowed = _bool(cfg, "singlestore.metadata.allow", True, problems)
    try:
        dest, host, port, database, schema, url_user = singlestore_sink.destination(cfg)
        keys = singlestore_sink.keys(cfg)
        password = singlestore_sink.password(cfg, url_password)
    except ConfigError as e:
        problems.add(e)
        return None
    if dest == "delta" and cfg.get("errors.deadletterqueue.table.name"):
        problems.append(
            (
                "errors.deadletterqueue.table.name",
                "errors.deadletterqueue.table.name is for "
                "database destinations; in the warehouse skipped records are in "
                "information_schema.PIPELINES_ERRORS",
            )
        )
    return SinkConnectorConfig(
        **common,
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
        upsert=_bool(cfg, "singlestore.upsert", False, problems),
        table_names={
            k[len("singlestore.tableName.") :]: v.strip()
            for k, v in cfg.items()
            if k.startswith("singlestore.tableName.")
        },
        fields=tuple(f.strip() for f in cfg.get("fields.whitelist", "").split(",") if f.strip()),
        max_retries=_int(cfg, "max.retries", 0, problems) if "max.retries" in cfg else None,
        connect_timeout_s=timeout,
    )


def _jdbc(
    cfg: Mapping[str, str],
    url_password: Secret | None,
    common: dict[str, Any],
    problems: _Problems,
) -> SinkConnectorConfig | None:
    """Confluent's JDBC sink's own keys (``jdbc_sink``); its metadata table keeps it
    exactly once."""
    settings, found = jdbc_sink.check(
        cfg,
        url_password,
        value_converter=common["value_converter"],
        value_schemas=common["schemas_enable"],
    )
    problems += found
    if settings is None:
        return None
    db = settings.database
    return SinkConnectorConfig(
        **common,
        destination=settings.dialect,
        host=db.host or None,
        port=db.port or None,
        database=db.database,
        schema=db.schema,
        user=db.user,
        password=db.password,
        keys=(),
        metadata_table=DEFAULT_METADATA_TABLE,
        upsert=False,
        table_names={},
        fields=settings.fields,
        max_retries=settings.max_retries,
        connect_timeout_s=None,
        jdbc=settings,
    )


def not_applicable(cfg: Mapping[str, str]) -> dict[str, str]:
    """The keys of ``cfg`` accepted as changing nothing here, and why (reported back)."""
    if str(cfg.get("connector.class", "")).strip() == jdbc_sink.CLASS:
        out = jdbc_sink.not_applicable(cfg)
        for k in cfg:
            if k not in JDBC_KEYS and not k.startswith("key.converter"):
                why = framework.not_applicable(k, SINK)
                if why:
                    out[k] = why
        return out
    return {
        k: why
        for k in cfg
        if (why := legacy.not_applicable(k))
        or (k not in KEYS and (why := framework.not_applicable(k, SINK)))
    }


def _check_keys(cfg: Mapping[str, str], problems: _Problems, is_jdbc: bool) -> smt.Chain | None:
    """Every key of ``cfg`` is honoured (the class's keys, the transform chain's), one of
    Connect's accepted as not applicable, or a problem naming it (added to
    ``problems``). Returns the chain of its transforms (None without any)."""
    known = JDBC_KEYS if is_jdbc else KEYS
    prefixes = () if is_jdbc else PREFIXES
    parsed, found = parse_chain({k: v for k, v in cfg.items() if is_transform_key(k)})
    problems += found
    chain = None
    if parsed:
        chain, more = smt.chain_of(parsed, SINK)
        problems += more
    for key in cfg:
        if key in known or (prefixes and key.startswith(prefixes)) or is_transform_key(key):
            continue
        why = framework.refusal(key, SINK) or (None if is_jdbc else legacy.refusal(key))
        if why is not None:
            problems.append((key, why))
            continue
        # a JDBC sink reads keys with key.converter: its other options are refused
        converter = key.startswith("value.converter.") or (
            is_jdbc and key.startswith("key.converter.")
        )
        if not converter and (
            framework.not_applicable(key, SINK) is not None
            or (not is_jdbc and legacy.not_applicable(key))
        ):
            continue
        near = difflib.get_close_matches(key, sorted(known), n=1)
        problems.append(
            (
                key,
                f"unknown connector config key '{key}'"
                + (f"; did you mean '{near[0]}'?" if near else "")
                + (
                    " (a converter option that may change how values are decoded is "
                    "refused, not ignored)"
                    if converter
                    else ""
                ),
            )
        )
    return chain


def _bool(cfg: Mapping[str, str], key: str, default: bool, problems: _Problems) -> bool:
    value = cfg.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        problems.append((key, f"connector config key '{key}' must be true or false, got '{value}'"))
        return default
    return value.strip().lower() == "true"


def _int(
    cfg: Mapping[str, str], key: str, low: int, problems: _Problems, *, default: int | None = None
) -> int:
    value = cfg.get(key)
    if value is None and default is not None:
        return default
    try:
        out = int(str(value).strip())
    except ValueError:
        out = low - 1
    if out < low:
        problems.append(
            (
                key,
                f"connector config key '{key}' must be an integer of at least {low}, got '{value}'",
            )
        )
        return default if default is not None else low
    return out

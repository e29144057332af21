"""Source connectors created through Kafka Connect's REST API (``POST /connectors``, ``PUT
…/config`` with a source class: Confluent's JDBC source, SingleStore's and Confluent's
Kinesis sources): the records land in **tables named as the topics the connector would
write** in Kafka Connect — JDBC ``topic.prefix`` + the table's name (``topic.prefix``
alone with ``query``), Kinesis ``kafka.topic`` (SingleStore's class: the stream's name
without it); a character a table name cannot hold is written ``_`` — each table in seed
000's shape (``topic``, ``id``, ``record``), as a
``CREATE INFERRED PIPELINE … LOAD DATA KAFKACONNECT`` loads it.

Each topic is one pipeline of the connector (named as a sink connector's are), running
the connector's config narrowed to that topic's records (a JDBC connector's
``table.whitelist`` set to that one table), so a topic's rows and its offsets are one
Delta commit and land exactly once, whatever the others do. What each class writes to
which topic is a registry (:data:`TOPICS`); any other class is refused by name, and a
transform that renames topics (``RegexRouter``, ``TimestampRouter``) is refused too: its
topics would not be the tables'.

The config is checked as a KAFKACONNECT pipeline's CONFIG is (``KafkaConnectSource``:
every problem at once, each naming its key). Secrets (``connection.password``, a password
inside ``connection.url``, AWS keys) are sealed with the pipelines' credentials by the
engine; the config stored and shown back has them ``<redacted>`` or left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.config import REDACTED, FieldMapping, PipelineSpec, Secret, urls
from sparkpipes.config.parts import BatchSpec, FormatSpec, SinkSpec, SourceSpec
from sparkpipes.config.tables import ColumnSpec, TableSpec
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError
from sparkpipes.frontends.connect.shape import pipeline_name
from sparkpipes.sources.connect import framework, known, resolve, smt
from sparkpipes.sources.connect.source import KafkaConnectSource

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"
SINGLESTORE_KINESIS = "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector"
CONFLUENT_KINESIS = "io.confluent.connect.kinesis.KinesisSourceConnector"
#: transforms that change a record's topic, and so which table it would belong to (the
#: registry's routers: RegexRouter, TimestampRouter, ChangeTopicCase; the refused
#: MessageTimestampRouter too)
ROUTERS = (
    *(name for name, entry in smt.TRANSFORMS.items() if entry.cls.routes),
    "TimestampRouter",
)
#: seed 000's static table of a connector's records
COLUMNS = (
    ColumnSpec("topic", "STRING", declared="TEXT", not_null=True),
    ColumnSpec("id", "STRING", declared="JSON", not_null=True),
    ColumnSpec("record", "STRING", declared="JSON", not_null=True),
)
_WHITELISTS = ("table.whitelist", "table.include.list")
_BLACKLISTS = ("table.blacklist", "table.exclude.list")


def _names(text: Any) -> list[str]:
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def _jdbc_topics(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Confluent's JDBC source: ``topic.prefix`` + each table's name (schema left out,
    as its connector names topics), or ``topic.prefix`` alone for a ``query``. The
    tables are ``table.whitelist`` (or ``table.include.list``) or, without one, every
    table the connector lists now (its own listing, blacklist applied)."""
    prefix = str(cfg.get("topic.prefix") or "")
    if str(cfg.get("query") or "").strip():
        if not prefix:
            raise ConfigError("topic.prefix: a JDBC query's topic (its table) is topic.prefix")
        return {prefix: dict(cfg)}
    tables = next((_names(cfg[k]) for k in _WHITELISTS if cfg.get(k)), None)
    if tables is None:
        listed = KafkaConnectSource("topics", cfg, {}).connector.partitions()
        tables = [str(p["table"]) for p in listed]
    rest = {k: v for k, v in cfg.items() if k not in _WHITELISTS and k not in _BLACKLISTS}
    return {prefix + t.rsplit(".", 1)[-1]: {**rest, "table.whitelist": t} for t in tables}


def _kinesis_topics(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A Kinesis source writes one topic: ``kafka.topic`` (SingleStore's class: the
    stream's name when it is not given; Confluent's requires it, and says so)."""
    topic = str(cfg.get("kafka.topic") or cfg.get("kinesis.stream") or "").strip()
    if not topic:
        raise ConfigError("kafka.topic: the topic the connector writes (its table) is needed")
    return {topic: dict(cfg)}


#: connector class → the topics it would write, each with the config that reads only it
TOPICS: dict[str, Callable[[Mapping[str, Any]], dict[str, dict[str, Any]]]] = {
    JDBC: _jdbc_topics,
    SINGLESTORE_KINESIS: _kinesis_topics,
    CONFLUENT_KINESIS: _kinesis_topics,
}


def table_of(topic: str) -> str:
    """The table of a topic: its name, each character that is not a letter, digit or
    underscore written ``_`` (table names here are identifiers: ``pg-orders`` →
    ``pg_orders``), as a sink connector's pipelines are named."""
    return re.sub(r"[^A-Za-z0-9_]", "_", topic)


def is_source(config: Mapping[str, Any]) -> bool:
    """Whether a flat config names a source connector class this engine has."""
    return str(config.get("connector.class") or "").strip() in known()


def _refuse(cls: str, cfg: Mapping[str, Any]) -> None:
    if cls not in TOPICS:
        raise ConfigError(
            f"connector.class {cls}: a source connector created through the REST API loads "
            f"tables named as its topics, which are known for {', '.join(TOPICS)}; create "
            "it as a KAFKACONNECT pipeline (CREATE PIPELINE … LOAD DATA KAFKACONNECT) instead"
        )
    routed = sorted(
        k for k, v in cfg.items() if k.endswith(".type") and str(v).strip().endswith(ROUTERS)
    )
    if routed:
        raise ConfigError(
            f"{routed[0]}: a transform that renames topics is not supported for a source "
            "connector created through the REST API (its tables are named as its topics); "
            "create it as a KAFKACONNECT pipeline, whose one table has a topic column"
        )


def _secret(cls: str, key: str) -> bool:
    return key in resolve(cls).secret_keys or framework.is_secret(key)


def shown(cls: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The config as ``GET …/config`` shows it: secrets ``<redacted>`` (they are sealed
    with the pipelines' credentials), a password inside a URL too. Sent back by ``PUT
    …/config``, a ``<redacted>`` keeps the sealed value while the connector reads from
    where it did (``PipelineSpec.keep_secrets``), else it is refused, naming it."""
    return {
        k: REDACTED if _secret(cls, k) else urls.redact(v) if isinstance(v, str) else v
        for k, v in cfg.items()
    }


class SourceConnectors:
    """The source-connector part of :class:`~sparkpipes.frontends.connect.service
    .Connectors` (which gives ``engine``)."""

    engine: Engine

    def create_source(
        self,
        config: Mapping[str, Any],
        *,
        replace: bool,
    ) -> dict[str, Any]:
        """Create (or, with ``replace``, reconfigure) a source connector from its flat
        config: one pipeline per topic into the table of the topic's name (made if
        missing), set running; its info as Kafka Connect gives it."""
        name = str(config.get("name") or "").strip()
        if not name:
            raise ConfigError("name: a connector config needs 'name'")
        cls = str(config.get("connector.class") or "").strip()
        catalog = self.engine.catalog
        exists = name in catalog.connectors.names()
        if exists and not replace:
            raise AlreadyExistsError(f"connector '{name}' already exists")
        cfg = {k: v for k, v in config.items() if k != "name" and v is not None}
        KafkaConnectSource(name, cfg, {})  # every problem of the config, each by its key
        _refuse(cls, cfg)
        topics = TOPICS[cls](cfg)
        if not topics:
            raise ConfigError(f"connector '{name}' would write no topic: it lists no table")
        tables: dict[str, str] = {}
        for topic in topics:
            other = tables.setdefault(table_of(topic), topic)
            if other != topic:
                raise ConfigError(
                    f"topics '{other}' and '{topic}' would both load table "
                    f"'{table_of(topic)}': rename one (topic.prefix, the table's name)"
                )
        many = len(topics) > 1
        specs = {
            t: self._source_spec(name, t, c, pipeline_name(name, t, many))
            for t, c in topics.items()
        }
        old = catalog.connectors.get(name) if exists else {}
        owned = set(old.get("pipelines", []))
        existing = {r.name for r in catalog.pipelines.all()}
        taken = sorted(s.name for s in specs.values() if s.name in existing - owned)
        if taken:
            raise AlreadyExistsError(
                f"connector '{name}' would load through pipeline(s) {', '.join(taken)}, "
                "which already exist and are not this connector's"
            )
        names = [s.name for s in specs.values()]
        for stale in [p for p in owned if p not in names]:
            self.engine.drop_pipeline(stale, if_exists=True)
        for topic, spec in specs.items():
            self._table(topic)
            self.engine.create_pipeline_spec(spec, replace=spec.name in owned)
        catalog.connectors.put(
            name,
            {
                "config": {"name": name, **shown(cls, cfg)},
                "topics": list(topics),
                "pipelines": names,
                "type": "source",
            },
            replace=exists,
        )
        for p in names:
            self.engine.start(p, run=False)
        return {
            "name": name,
            "config": {"name": name, **shown(cls, cfg)},
            "tasks": [{"connector": name, "task": i} for i in range(len(names))],
            "type": "source",
        }

    def _source_spec(
        self, connector: str, topic: str, cfg: Mapping[str, Any], name: str
    ) -> PipelineSpec:
        defaults = self.engine.pipeline_defaults()
        cls = str(cfg["connector.class"]).strip()
        secrets = {k: Secret(str(v)) for k, v in cfg.items() if _secret(cls, k)}
        return PipelineSpec(
            name=name,
            source=SourceSpec(
                kind="kafkaconnect",
                location=connector,
                config={k: v for k, v in cfg.items() if k not in secrets},
                credentials=secrets,
            ),
            sink=SinkSpec(table=table_of(topic), kind="delta", write="insert"),
            format=FormatSpec(
                kind="avro",
                mapping=tuple(FieldMapping(c.name, (c.name,)) for c in COLUMNS),
                text_values=True,
            ),
            batch=BatchSpec(interval_ms=defaults.get("batch_interval_ms") or BatchSpec.interval_ms),
        )

    def _table(self, topic: str) -> None:
        """The topic's table, created in seed 000's shape when missing; an existing one
        is loaded as it is (its columns must take ``topic``, ``id`` and ``record``)."""
        try:
            self.engine.catalog.tables.get(table_of(topic))
        except NotFoundError:
            self.engine.create_table_spec(TableSpec(table_of(topic), COLUMNS))

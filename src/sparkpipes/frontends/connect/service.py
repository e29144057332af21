"""Sink connectors (seed 001): a Kafka Connect sink config turned into pipelines, one per
topic, from a Kafka topic into a table of the warehouse (Delta) or of a database.

A connector is stored in the catalog (its config without secrets, its topics and
pipelines); its pipelines are ordinary pipelines, named after the connector (and the
topic, when it has several), so ``SHOW PIPELINES``, information_schema and ``sparkpipes
status`` show them. Its state is theirs, as Kafka Connect reports it (``lifecycle``): ``RUNNING``,
``PAUSED`` (stopped), ``STOPPED`` (``PUT …/stop``: no task shown, offsets changeable) or
``FAILED`` (a pipeline in Error, whose message is the task's ``trace``).

A topic's table is the topic's name unless ``singlestore.tableName.<topic>`` says
otherwise. A missing table is created from the first record's schema (the JSON
converter's ``{"schema", "payload"}`` envelope) with the ``tableKey.*`` keys; records
without a schema need the table to exist, as in seed 001.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.config import REDACTED, FieldMapping, PipelineSpec, Secret, urls
from sparkpipes.config.parts import BatchSpec, FormatSpec, SinkSpec, SourceSpec
from sparkpipes.config.tables import ColumnSpec, TableKey, TableSpec
from sparkpipes.engine.extensions import Extension
from sparkpipes.errors import (
    AlreadyExistsError,
    ConfigError,
    NotFoundError,
    SinkError,
    SourceUnavailableError,
)
from sparkpipes.frontends.connect.deadletter import DeadLetters
from sparkpipes.frontends.connect.lifecycle import Lifecycle
from sparkpipes.frontends.connect.model import (
    REGISTRY_OPTION,
    STRING_CONVERTER,
    Key,
    SinkConnectorConfig,
    load,
    moved,
)
from sparkpipes.frontends.connect.shape import pipeline_name
from sparkpipes.frontends.connect.sources import SourceConnectors
from sparkpipes.frontends.connect.transformed import (
    avro_hints,
    fields_after,
    format_of,
    json_hints,
)
from sparkpipes.util.regex import compile_user

if TYPE_CHECKING:
    pass

log = logging.getLogger("sparkpipes.connectors")

PEEK_TIMEOUT_S = 5.0
#: records read to find the first one a connector's transforms let through
PEEK_RECORDS = 500
#: Kafka Connect schema types → (SQLAlchemy type name, Spark DDL type)
_TYPES = {
    "int8": ("SmallInteger", "SMALLINT"),
    "int16": ("SmallInteger", "SMALLINT"),
    "int32": ("Integer", "INT"),
    "int64": ("BigInteger", "BIGINT"),
    "float32": ("REAL", "FLOAT"),
    "float64": ("Double", "DOUBLE"),
    "boolean": ("Boolean", "BOOLEAN"),
    "string": ("Text", "STRING"),
    "bytes": ("LargeBinary", "BINARY"),
    "struct": ("JSON", "STRING"),
    "map": ("JSON", "STRING"),
    "array": ("JSON", "STRING"),
}
_LOGICAL = {
    "org.apache.kafka.connect.data.Timestamp": ("DateTime", "TIMESTAMP"),
    "org.apache.kafka.connect.data.Date": ("Date", "DATE"),
}


class Connectors(Lifecycle, SourceConnectors, DeadLetters, Extension):
    """Create, list, reconfigure and delete sink connectors; their state, offsets and
    topics are :class:`~sparkpipes.frontends.connect.lifecycle.Lifecycle`'s, source
    connectors made through the REST API :class:`~sparkpipes.frontends.connect.sources
    .SourceConnectors`'."""

    # -- create -------------------------------------------------------------------------
    def create(
        self, config: str | Mapping[str, Any] | SinkConnectorConfig, *, replace: bool = False
    ) -> dict[str, Any]:
        """Create (or, with ``replace``, reconfigure, keeping each topic's pipeline and so
        its offsets) a connector and set it running; its info as Kafka Connect gives it."""
        cfg = config if isinstance(config, SinkConnectorConfig) else load(config)
        catalog = self.engine.catalog
        if not replace and cfg.name in catalog.connectors.names():
            raise AlreadyExistsError(f"connector '{cfg.name}' already exists")
        old = (
            catalog.connectors.get(cfg.name)
            if replace and cfg.name in catalog.connectors.names()
            else None
        )
        if old is not None:  # a config as GET …/config shows it: its passwords <redacted>
            cfg = self._with_stored(cfg, old)
        _refuse_unkept(cfg)
        topics = list(cfg.topics) or self._matching(cfg)
        if not topics:
            raise ConfigError(
                f"no topic at {cfg.bootstrap_servers} matches topics.regex '{cfg.topics_regex}'"
            )
        many = len(topics) > 1 or cfg.topics_regex is not None
        specs = [self._spec(cfg, t, pipeline_name(cfg.name, t, many)) for t in topics]
        names = [s.name for s in specs]
        owned = set((old or {}).get("pipelines", []))
        existing = {r.name for r in catalog.pipelines.all()}
        taken = sorted(n for n in names if n in existing and n not in owned)
        if taken:  # another connector's, or a pipeline made by SQL or Pinot: not this one's
            raise AlreadyExistsError(
                f"connector '{cfg.name}' would load through pipeline(s) {', '.join(taken)}, "
                "which already exist and are not this connector's"
            )
        for stale in [p for p in (old or {}).get("pipelines", []) if p not in names]:
            self.engine.drop_pipeline(stale, if_exists=True)
        for spec in specs:
            self.engine.create_pipeline_spec(spec, replace=replace)
        catalog.connectors.put(
            cfg.name,
            {"config": dict(cfg.raw), "topics": topics, "pipelines": names},
            replace=replace,
        )
        for name in names:
            self.engine.start(name, run=False)
        return self.info(cfg.name)

    def _matching(self, cfg: SinkConnectorConfig) -> list[str]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": cfg.bootstrap_servers, "log_level": "3"})
        try:
            listed = admin.list_topics(timeout=10)
        except Exception as e:
            raise SourceUnavailableError(
                f"cannot list the topics of Kafka at {cfg.bootstrap_servers}: {e}"
            ) from None
        pattern = compile_user(cfg.topics_regex or "")
        return sorted(t for t in listed.topics if pattern.fullmatch(t) and not t.startswith("__"))

    def _spec(self, cfg: SinkConnectorConfig, topic: str, name: str) -> PipelineSpec:
        table = cfg.table_of(topic)
        sink = self._sink(cfg, topic, table)
        columns = self._columns(cfg, topic, table, sink)
        wanted = [c for c in columns if not cfg.fields or c in cfg.fields]
        # errors.tolerance=all: a record that does not convert or that the table refuses
        # goes to the errors view (the JDBC sink reports one its database refuses)
        tolerate = dict.fromkeys(
            ("skip_parser_errors", "skip_constraint_errors"), cfg.tolerate_errors
        )
        if cfg.chain is not None:  # decoded as Connect's sink task does, transformed
            fmt = format_of(cfg, topic, wanted, tolerate)
        elif cfg.value_converter == STRING_CONVERTER:
            fmt = FormatSpec(kind="raw", **tolerate)
        elif cfg.schema_registry:
            fmt = FormatSpec(
                kind="avro",
                mapping=tuple(FieldMapping(c, (c,)) for c in wanted),
                **tolerate,
                options={"schema.registry.url": cfg.schema_registry},
                credentials=cfg.registry_secrets,
            )
        else:
            root = ("payload",) if cfg.schemas_enable else ()
            fmt = FormatSpec(
                kind="json",
                mapping=tuple(FieldMapping(c, (*root, c)) for c in wanted),
                **tolerate,
            )
        defaults = self.engine.pipeline_defaults()
        batch = BatchSpec(
            interval_ms=(
                cfg.batch_interval_ms
                if cfg.batch_interval_ms is not None
                else defaults.get("batch_interval_ms") or BatchSpec.interval_ms
            ),
            max_partitions=cfg.tasks_max,
            max_retries=cfg.max_retries if cfg.max_retries is not None else BatchSpec.max_retries,
        )
        return PipelineSpec(
            name=name,
            source=SourceSpec(
                kind="kafka",
                location=f"{cfg.bootstrap_servers}/{topic}",
                start=cfg.start,
                # transforms read each record's key, headers and timestamp too
                config={"record.metadata": True} if cfg.chain is not None else {},
            ),
            sink=sink,
            format=fmt,
            batch=batch,
        )

    def _sink(self, cfg: SinkConnectorConfig, topic: str, table: str) -> SinkSpec:
        write = "replace" if cfg.upsert else "append"
        if cfg.destination == "delta":
            return SinkSpec(table=table, kind="delta", write=write)
        config = {
            "dialect": cfg.destination,
            "host": cfg.host,
            "port": cfg.port,
            "database": cfg.database,
            "schema": cfg.schema,
            "user": cfg.user,
            "topic": topic,
            "metadata_table": cfg.metadata_table,
            "dead_letter_table": cfg.dead_letter_table,
        }
        creds = {"password": cfg.password} if cfg.password else {}
        return SinkSpec(table=table, kind="database", write=write, config=config, credentials=creds)

    # -- tables -------------------------------------------------------------------------
    def _columns(
        self, cfg: SinkConnectorConfig, topic: str, table: str, sink: SinkSpec
    ) -> list[str]:
        """The table's columns; the table is created first if it is missing."""
        existing = self._existing(table, sink)
        if existing is not None:
            return existing
        schema_given = cfg.value_converter == STRING_CONVERTER or cfg.schemas_enable
        if cfg.chain is not None and (schema_given or cfg.schema_registry):
            fields = self._transformed_fields(cfg, topic, table)
        elif cfg.value_converter == STRING_CONVERTER:
            fields = [("data", ("Text", "STRING"), True)]
        elif cfg.schema_registry:
            fields = _avro_fields(self._peek_avro(cfg, topic, table), topic)
        elif not cfg.schemas_enable:
            raise ConfigError(
                f"table '{table}' does not exist in {cfg.where()} and the records of topic "
                f"'{topic}' carry no schema (value.converter.schemas.enable=false): the "
                "connector creates a table from the record schema only; create the table, or "
                "send records with the JSON converter's schema envelope"
            )
        else:
            fields = _schema_fields(self._peek(cfg, topic, table), topic)
        self._create(cfg, table, fields, sink)
        return [f[0] for f in fields]

    def _existing(self, table: str, sink: SinkSpec) -> list[str] | None:
        if sink.kind == "delta":
            try:
                return list(self.engine.catalog.tables.get(table).schema.names)
            except NotFoundError:
                return None
        from sparkpipes.sinks.database import Destination, reflect

        try:
            schema, _, _ = reflect(Destination.of(sink.config, sink.credentials), table)
        except SinkError as e:
            if "has no table" in e.message:
                return None
            raise
        return list(schema.names)

    def _peek_avro(self, cfg: SinkConnectorConfig, topic: str, table: str) -> dict[str, Any]:
        """The registry's schema of the first record of ``topic``."""
        from sparkpipes.formats.avro import registry_client

        raw = self._first(cfg, topic, table)
        if len(raw) < 5 or raw[0] != 0:
            raise ConfigError(
                f"the first record of topic '{topic}' is not an Avro message of a schema "
                "registry (no magic byte and schema id)"
            )
        sid = int.from_bytes(raw[1:5], "big")
        try:
            secrets = {k: v.reveal() for k, v in cfg.registry_secrets.items()}
            text = registry_client(cfg.schema_registry or "", secrets).get_schema(sid).schema_str
        except Exception as e:
            raise SourceUnavailableError(
                f"cannot get schema id {sid} of topic '{topic}' from the schema registry at "
                f"{cfg.schema_registry}: {e}"
            ) from None
        return json.loads(text)

    def _peek(self, cfg: SinkConnectorConfig, topic: str, table: str) -> Any:
        """The first record's value of ``topic`` (any partition), as JSON."""
        raw = self._first(cfg, topic, table)
        try:
            return json.loads(raw)
        except ValueError:
            raise ConfigError(
                f"the first record of topic '{topic}' is not JSON, so table '{table}' "
                "cannot be created from its schema"
            ) from None

    def _transformed_fields(
        self, cfg: SinkConnectorConfig, topic: str, table: str
    ) -> list[tuple[str, tuple[str, str], bool]]:
        """The columns of the first record of ``topic`` the connector's transforms let
        through, typed by its record schema where they agree (``transformed``)."""
        if cfg.value_converter == STRING_CONVERTER:
            hints: dict[str, Any] = {}
        elif cfg.schema_registry:
            hints = avro_hints(self._peek_avro(cfg, topic, table), _AVRO, _AVRO_LOGICAL)
        else:
            peeked = self._peek(cfg, topic, table)
            schema = peeked.get("schema") if isinstance(peeked, dict) else None
            hints = json_hints(schema, _TYPES, _LOGICAL)
        head = self._head(cfg, topic, table, PEEK_RECORDS, metadata=True)
        return fields_after(cfg, topic, table, head, hints)

    def _first(self, cfg: SinkConnectorConfig, topic: str, table: str) -> bytes:
        """The first record's value of ``topic`` (any partition)."""
        return self._head(cfg, topic, table, 1).values[0].as_py()

    def _head(
        self, cfg: SinkConnectorConfig, topic: str, table: str, n: int, *, metadata: bool = False
    ) -> Any:
        """The first records of ``topic`` (up to ``n``, of its first partition that has
        any), a ``Fetched``; with ``metadata`` their keys, headers and timestamps too."""
        from sparkpipes.sources import build_source

        options = {"record.metadata": True} if metadata else {}
        src = build_source("kafka", f"{cfg.bootstrap_servers}/{topic}", options, {})
        meta = src.metadata()
        for p in meta.partitions():
            consumer = src.consumer(p)
            try:
                consumer.open(src.start_offset(meta, p, "earliest"))
                fetched = consumer.fetch(n, PEEK_TIMEOUT_S)
            finally:
                consumer.close()
            if len(fetched.values):
                return fetched
        raise ConfigError(
            f"table '{table}' does not exist in {cfg.where()} and topic '{topic}' has no "
            "record yet: the connector creates the table from the first record's schema; "
            "send a record first, or create the table"
        )

    def _create(
        self,
        cfg: SinkConnectorConfig,
        table: str,
        fields: list[tuple[str, tuple[str, str], bool]],
        sink: SinkSpec,
    ) -> None:
        names = {f[0] for f in fields}
        for key in cfg.keys:
            missing = [c for c in key.columns if c not in names]
            if missing:
                raise ConfigError(
                    f"tableKey.{key.kind}{'.' + key.name if key.name else ''} names column "
                    f"{missing[0]}, which the records of table '{table}' do not have "
                    f"(they have {', '.join(sorted(names))})"
                )
        if sink.kind == "delta":
            columns = tuple(ColumnSpec(n, t[1], not_null=not nullable) for n, t, nullable in fields)
            keys = tuple(TableKey(_delta_kind(k), tuple(k.columns), k.name) for k in cfg.keys)
            self.engine.create_table_spec(TableSpec(table, columns, keys))
            return
        from sparkpipes.sinks.database import Destination, create_table

        dest = Destination.of(sink.config, sink.credentials)
        ignored = create_table(dest, table, fields, cfg.keys)
        for key in ignored:
            log.warning(
                "connector %s: tableKey.%s on table %s is a SingleStore key %s does not have; "
                "recorded, not created",
                cfg.name,
                key.kind,
                table,
                cfg.where(),
            )

    def refresh(self) -> list[str]:
        """Publish the failed records of committed batches to dead-letter topics
        (:class:`~sparkpipes.frontends.connect.deadletter.DeadLetters`), and give every
        ``topics.regex`` connector a pipeline for each topic that matches now and has
        none yet, set running (as Kafka Connect picks up new matching topics); the
        pipelines made."""
        self.publish_dead_letters()
        made = []
        for name in self.names():
            d = self.get(name)
            if not d["config"].get("topics.regex"):
                continue
            cfg = load(d["config"] | {"connection.password": self._password(d)}, name=name)
            cfg = self._with_stored(cfg, d)
            new = [t for t in self._matching(cfg) if t not in d["topics"]]
            for topic in new:
                spec = self._spec(cfg, topic, pipeline_name(cfg.name, topic, True))
                self.engine.create_pipeline_spec(spec)
                if not d.get("stopped"):  # a stopped connector's tasks start on resume
                    self.engine.start(spec.name, run=False)
                d["topics"].append(topic)
                d["pipelines"].append(spec.name)
                made.append(spec.name)
            if new:
                self.engine.catalog.connectors.put(name, d, replace=True)
                log.info("connector %s: new topics %s", name, ", ".join(new))
        return made

    def _password(self, d: Mapping[str, Any]) -> str | None:
        """The destination password, from the sealed credentials of a pipeline of it."""
        for p in d["pipelines"]:
            secret = self.engine.spec(p).sink.credentials.get("password")
            if secret is not None:
                return secret.reveal()
        return None

    def _with_stored(self, cfg: SinkConnectorConfig, d: Mapping[str, Any]) -> SinkConnectorConfig:
        """``cfg`` with each password it shows as ``<redacted>`` (inside a URL, or
        ``connection.password``) taken from the sealed credentials of the connector's
        pipelines (``d``, as stored) — only while every key that could send it elsewhere
        is as stored (:func:`~sparkpipes.frontends.connect.model.moved`): else a
        ConfigError names the keys, before anything connects with it."""
        shown = []
        if cfg.password == Secret(REDACTED):
            shown.append(_password_named(cfg))
        if cfg.schema_registry and urls.is_redacted(cfg.schema_registry):
            shown.append("the password in value.converter.schema.registry.url")
        if not shown:
            return cfg
        changed = moved(d.get("config") or {}, cfg.raw)
        if changed:
            raise ConfigError(
                f"{' and '.join(shown)} {'is' if len(shown) == 1 else 'are'} '{REDACTED}' but "
                f"{', '.join(changed)} {'differs' if len(changed) == 1 else 'differ'} from "
                f"connector '{cfg.name}' as stored: a stored password is kept only while "
                "everything that decides where it is sent stays the same; give the value "
                "again to send it to the new place"
            )
        changes: dict[str, Any] = {}
        if cfg.password == Secret(REDACTED) and (password := self._password(d)) is not None:
            changes["password"] = Secret(password)
        if cfg.schema_registry and urls.is_redacted(cfg.schema_registry):
            for p in d["pipelines"]:
                found = dict(self.engine.spec(p).format.credentials)
                if found:
                    changes["registry_secrets"] = found
                    break
        return dataclasses.replace(cfg, **changes) if changes else cfg

    # -- the rest of the REST API -------------------------------------------------------
    def names(self) -> list[str]:
        return self.engine.catalog.connectors.names()

    def get(self, name: str) -> dict[str, Any]:
        try:
            return self.engine.catalog.connectors.get(name)
        except NotFoundError:
            raise NotFoundError(f"connector '{name}' does not exist") from None

    def config(self, name: str) -> dict[str, str]:
        """Its config as given, the password left out (it is kept sealed)."""
        return dict(self.get(name)["config"])

    def info(self, name: str) -> dict[str, Any]:
        d = self.get(name)
        tasks = [{"connector": name, "task": i} for i in range(len(self.task_pipelines(name)))]
        kind = d.get("type", "sink")
        return {"name": name, "config": dict(d["config"]), "tasks": tasks, "type": kind}

    def delete(self, name: str) -> None:
        """Remove the connector and its pipelines; the tables and their rows stay."""
        d = self.get(name)
        for p in d["pipelines"]:
            self.engine.drop_pipeline(p, if_exists=True)
        self.engine.catalog.connectors.drop(name)


def _refuse_unkept(cfg: SinkConnectorConfig) -> None:
    """A ConfigError for a password still ``<redacted>`` once the stored ones are kept (a
    new connector, or one with no such password stored), before anything connects."""
    unkept = []
    if cfg.password == Secret(REDACTED):
        unkept.append(_password_named(cfg))
    url, kept = cfg.schema_registry, urls.secret_key(REGISTRY_OPTION) in cfg.registry_secrets
    if url and urls.is_redacted(url) and not kept:
        unkept.append("the password in value.converter.schema.registry.url")
    if unkept:
        raise ConfigError(
            f"{' and '.join(unkept)} {'is' if len(unkept) == 1 else 'are'} '{REDACTED}', as "
            f"GET …/config shows passwords, and connector '{cfg.name}' has no stored value "
            "to keep: give the value"
        )


def _password_named(cfg: SinkConnectorConfig) -> str:
    """How an error names the destination's password given as ``<redacted>``."""
    if urls.is_redacted(cfg.raw.get("connection.url", "")):
        return "the password in connection.url"
    return "connection.password"


def _delta_kind(key: Key) -> str:
    return {"COLUMNSTORE": "SORT", "KEY": "KEY"}.get(key.kind, key.kind)


def _schema_fields(record: Any, topic: str) -> list[tuple[str, tuple[str, str], bool]]:
    """Columns from the JSON converter's envelope: (name, (SQLAlchemy type, Spark type),
    nullable)."""
    schema = record.get("schema") if isinstance(record, dict) else None
    if not isinstance(schema, dict) or "payload" not in record:
        raise ConfigError(
            f"the records of topic '{topic}' have no schema envelope "
            '({"schema": …, "payload": …}); with value.converter.schemas.enable=true every '
            "record carries one"
        )
    if schema.get("type") != "struct" or not isinstance(schema.get("fields"), list):
        return [("data", _type_of(schema, topic, "data"), bool(schema.get("optional", True)))]
    out = []
    for f in schema["fields"]:
        name = f.get("field")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a field of the schema of topic '{topic}' has no name")
        out.append((name, _type_of(f, topic, name), bool(f.get("optional", False))))
    return out


def _type_of(field: Mapping[str, Any], topic: str, name: str) -> tuple[str, str]:
    logical = field.get("name")
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    kind = field.get("type")
    if kind not in _TYPES or logical == "org.apache.kafka.connect.data.Decimal":
        raise ConfigError(
            f"field '{name}' of the schema of topic '{topic}' has type "
            f"{logical or kind}, which the connector cannot make a column of"
        )
    return _TYPES[kind]


#: Avro types → (SQLAlchemy type name, Spark DDL type)
_AVRO = {
    "int": ("Integer", "INT"),
    "long": ("BigInteger", "BIGINT"),
    "float": ("REAL", "FLOAT"),
    "double": ("Double", "DOUBLE"),
    "boolean": ("Boolean", "BOOLEAN"),
    "string": ("Text", "STRING"),
    "bytes": ("LargeBinary", "BINARY"),
    "enum": ("Text", "STRING"),
    "record": ("JSON", "STRING"),
    "map": ("JSON", "STRING"),
    "array": ("JSON", "STRING"),
}
_AVRO_LOGICAL = {
    "timestamp-millis": ("DateTime", "TIMESTAMP"),
    "timestamp-micros": ("DateTime", "TIMESTAMP"),
    "date": ("Date", "DATE"),
}


def _avro_fields(schema: Any, topic: str) -> list[tuple[str, tuple[str, str], bool]]:
    """Columns from an Avro record schema (a ``["null", T]`` union is a nullable T)."""
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ConfigError(f"the Avro schema of topic '{topic}' is not a record")
    out = []
    for f in schema.get("fields", []):
        t, nullable = f["type"], False
        if isinstance(t, list):
            rest = [x for x in t if x != "null"]
            nullable = len(rest) < len(t)
            t = rest[0] if len(rest) == 1 else "string"
        kind = t.get("type") if isinstance(t, dict) else t
        logical = t.get("logicalType") if isinstance(t, dict) else None
        if logical in _AVRO_LOGICAL:
            out.append((f["name"], _AVRO_LOGICAL[logical], nullable))
        elif kind in _AVRO and logical != "decimal":
            out.append((f["name"], _AVRO[kind], nullable))
        else:
            raise ConfigError(
                f"field '{f['name']}' of the Avro schema of topic '{topic}' has type "
                f"{logical or kind}, which the connector cannot make a column of; create the "
                "table first"
            )
    return out

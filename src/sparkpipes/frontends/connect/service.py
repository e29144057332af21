"""Sink connectors (seed 001): a Kafka Connect sink config turned into pipelines, one per
topic, from a Kafka topic into a table of the warehouse (Delta) or of a database.

A connector is stored in the catalog (its config without secrets, its topics and
pipelines); its pipelines are ordinary pipelines, named after the connector (and the
topic, when it has several), so ``SHOW PIPELINES``, information_schema and ``sparkpipes
status`` show them. Its state is theirs, as Kafka Connect reports it (``lifecycle``): ``RUNNING``,
``PAUSED`` (stopped), ``STOPPED`` (``PUT …/stop``: no task shown, offsets changeable) or
``FAILED`` (a pipeline in Error, whose message is the task's ``trace``).

A topic's table is the topic's name unless ``singlestore.tableName.<topic>`` says
otherwise; a missing one is created (``tables``). Confluent's JDBC sink's pipelines are
``jdbc_lowering``'s.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.config import REDACTED, FieldMapping, PipelineSpec, Secret, urls
from sparkpipes.config.parts import BatchSpec, FormatSpec, SinkSpec, SourceSpec
from sparkpipes.engine.extensions import Extension
from sparkpipes.errors import (
    AlreadyExistsError,
    ConfigError,
    NotFoundError,
    SourceUnavailableError,
)
from sparkpipes.frontends.connect.deadletter import DeadLetters
from sparkpipes.frontends.connect.jdbc_lowering import JdbcSinks
from sparkpipes.frontends.connect.lifecycle import Lifecycle
from sparkpipes.frontends.connect.model import (
    REGISTRY_OPTION,
    STRING_CONVERTER,
    SinkConnectorConfig,
    load,
    moved,
)
from sparkpipes.frontends.connect.shape import pipeline_name
from sparkpipes.frontends.connect.sources import SourceConnectors
from sparkpipes.frontends.connect.tables import Tables
from sparkpipes.frontends.connect.transformed import (
    format_of,
)
from sparkpipes.util.regex import compile_user

if TYPE_CHECKING:
    pass

log = logging.getLogger("sparkpipes.connectors")


class Connectors(JdbcSinks, Tables, Lifecycle, SourceConnectors, DeadLetters, Extension):
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
        self._refuse_own_files(cfg)
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

    def _refuse_own_files(self, cfg: SinkConnectorConfig) -> None:
        """A JDBC sink into an SQLite file may not write the engine's own files (its
        catalog, its tables): anything under the warehouse is refused."""
        if cfg.jdbc is None or cfg.jdbc.dialect != "sqlite":
            return
        path = os.path.realpath(os.path.expanduser(cfg.jdbc.database.database))
        home = os.path.realpath(str(self.engine.warehouse))
        if path == home or path.startswith(home + os.sep):
            raise ConfigError(
                "connection.url names an SQLite file inside the engine's warehouse (its "
                "catalog and tables): a JDBC sink may not write there"
            )

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
        if cfg.jdbc is not None:
            return self._jdbc_spec(cfg, topic, name, self._batch(cfg))
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
            batch=self._batch(cfg),
        )

    def _batch(self, cfg: SinkConnectorConfig) -> BatchSpec:
        """How the connector's pipelines cut batches: ``batch.interval.ms`` (or the
        engine's default), ``tasks.max`` partitions at once, ``max.retries``."""
        defaults = self.engine.pipeline_defaults()
        return BatchSpec(
            interval_ms=(
                cfg.batch_interval_ms
                if cfg.batch_interval_ms is not None
                else defaults.get("batch_interval_ms") or BatchSpec.interval_ms
            ),
            max_partitions=cfg.tasks_max,
            max_retries=cfg.max_retries if cfg.max_retries is not None else BatchSpec.max_retries,
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
        if cfg.jdbc is not None and cfg.jdbc.hides_tokens:
            shown.append("the key store passwords in connection.url")
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
        if cfg.jdbc is not None and cfg.jdbc.hides_tokens:
            for p in d["pipelines"]:
                kept = self.engine.spec(p).sink.credentials.get(urls.secret_key("url"))
                if kept is not None:
                    changes["jdbc"] = dataclasses.replace(cfg.jdbc, url_secret=kept)
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
    if cfg.jdbc is not None and cfg.jdbc.hides_tokens:
        unkept.append("the key store passwords in connection.url")
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

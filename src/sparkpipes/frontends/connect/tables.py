"""How a sink connector finds its tables (:class:`Tables`, a part of
:class:`~sparkpipes.frontends.connect.service.Connectors`): a table that exists is
reflected; a missing one is created from the first record's schema — the JSON
converter's ``{"schema", "payload"}`` envelope, the registry's Avro schema, or the first
record its transforms let through — with the ``tableKey.*`` keys; records without a
schema need the table to exist, as in seed 001. ``first``/``head`` read the first
records of a topic for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.config.parts import SinkSpec
from sparkpipes.config.tables import ColumnSpec, TableKey, TableSpec
from sparkpipes.errors import ConfigError, NotFoundError, SinkError, SourceUnavailableError
from sparkpipes.frontends.connect.model import STRING_CONVERTER, Key, SinkConnectorConfig
from sparkpipes.frontends.connect.transformed import avro_hints, fields_after, json_hints

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

log = logging.getLogger("sparkpipes.connectors")

PEEK_TIMEOUT_S = 5.0
#: records read to find the first one a connector's transforms let through
PEEK_RECORDS = 500
#: Kafka Connect schema types → (SQLAlchemy type name, Spark DDL type)
JSON_TYPES = {
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
JSON_LOGICAL = {
    "org.apache.kafka.connect.data.Timestamp": ("DateTime", "TIMESTAMP"),
    "org.apache.kafka.connect.data.Date": ("Date", "DATE"),
}


class Tables:
    """The tables part of :class:`~sparkpipes.frontends.connect.service.Connectors`."""

    engine: Engine

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
            hints = avro_hints(self._peek_avro(cfg, topic, table), AVRO_TYPES, AVRO_LOGICAL)
        else:
            peeked = self._peek(cfg, topic, table)
            schema = peeked.get("schema") if isinstance(peeked, dict) else None
            hints = json_hints(schema, JSON_TYPES, JSON_LOGICAL)
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
    if logical in JSON_LOGICAL:
        return JSON_LOGICAL[logical]
    kind = field.get("type")
    if kind not in JSON_TYPES or logical == "org.apache.kafka.connect.data.Decimal":
        raise ConfigError(
            f"field '{name}' of the schema of topic '{topic}' has type "
            f"{logical or kind}, which the connector cannot make a column of"
        )
    return JSON_TYPES[kind]


#: Avro types → (SQLAlchemy type name, Spark DDL type)
AVRO_TYPES = {
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
AVRO_LOGICAL = {
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
        if logical in AVRO_LOGICAL:
            out.append((f["name"], AVRO_LOGICAL[logical], nullable))
        elif kind in AVRO_TYPES and logical != "decimal":
            out.append((f["name"], AVRO_TYPES[kind], nullable))
        else:
            raise ConfigError(
                f"field '{f['name']}' of the Avro schema of topic '{topic}' has type "
                f"{logical or kind}, which the connector cannot make a column of; create the "
                "table first"
            )
    return out

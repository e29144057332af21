"""The pipelines of Confluent's JDBC sink connector (:class:`JdbcSinks`, a part of
:class:`~sparkpipes.frontends.connect.service.Connectors`): one per topic, from the
topic into the table ``table.name.format`` names in the database of ``connection.url``,
decoded as its sink task does (``formats.connect``: the converters, the transforms, the
key and Kafka coordinates as columns, tombstones as deletes: ``formats.connect_rows``)
and written by the database sink in the write mode ``insert.mode`` names, matched on
the ``pk.fields`` columns (``sinks.database_load``), exactly once through the metadata
table (Confluent's sink is at least once: it commits the database, then Kafka offsets).

When the pipeline is made — the connector created, its config put again, or it is
restarted with ``auto.evolve`` — the next records it will write are read (from its
committed offsets, or the topic's start), as Confluent's ``DbStructure`` reads each
record's schema:

- a missing table is created from the first of them with the primary key of
  ``pk.mode`` (Confluent's column order: the Kafka coordinates, the value's fields, the
  other key fields), or, without ``auto.create``, refused with Confluent's message;
- with ``auto.evolve`` a field the table lacks is added as a nullable column; a field
  that is not optional is refused with Confluent's message. A field that appears
  later, while the pipeline runs, rejects its record naming the field
  (``formats.connect_rows``): restarting the connector evolves the table then.
- ``pk.fields`` left empty takes the key's (``record_key``) or value's
  (``record_value``) fields from those records, or the table's primary key.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparkpipes.config import FieldMapping, PipelineSpec, urls
from sparkpipes.config.parts import BatchSpec, FormatSpec, SinkSpec, SourceSpec
from sparkpipes.config.transforms import ConnectRecords, RecordRows
from sparkpipes.errors import ConfigError, NotFoundError, SinkError, SourceUnavailableError
from sparkpipes.formats.connect import ConnectDecoder
from sparkpipes.frontends.connect import jdbc_sink
from sparkpipes.frontends.connect.jdbc_sink import DEFAULT_KAFKA_PK_NAMES, JdbcSink
from sparkpipes.frontends.connect.model import (
    AVRO_CONVERTERS,
    REGISTRY_OPTION,
    STRING_CONVERTER,
    SinkConnectorConfig,
    load,
)
from sparkpipes.frontends.connect.singlestore_sink import Key
from sparkpipes.frontends.connect.tables import (
    AVRO_LOGICAL,
    AVRO_TYPES,
    JSON_LOGICAL,
    JSON_TYPES,
    PEEK_RECORDS,
    PEEK_TIMEOUT_S,
)
from sparkpipes.frontends.connect.transformed import Field, arrow_type, avro_hints, json_hints
from sparkpipes.sinks.database_tables import Destination, add_columns, create_table, reflect

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine
    from sparkpipes.sources.base import Fetched

log = logging.getLogger("sparkpipes.connectors")

#: the staged column marking a tombstone (a delete of its key); a variable, never a column
DELETE_MARK = "@__connect_delete"
#: records read per partition to find the fields of the next records (with ``auto.evolve``
#: more: a field that comes later is added when the connector restarts), and per fetch
EVOLVE_RECORDS = 20_000
PEEK_CHUNK = 5_000
#: the types of ``pk.mode=kafka``'s columns
_KAFKA_TYPES = (("Text", "STRING"), ("Integer", "INT"), ("BigInteger", "BIGINT"))


@dataclass(frozen=True)
class _Seen:
    """What the next records of a topic show, transformed: their value's fields and their
    key's (a struct key's fields; a primitive key as one unnamed field), typed."""

    value: tuple[Field, ...]
    key: tuple[Field, ...]
    key_struct: bool


class JdbcSinks:
    """The JDBC sink part of :class:`~sparkpipes.frontends.connect.service.Connectors`."""

    engine: Engine

    def _jdbc_spec(
        self, cfg: SinkConnectorConfig, topic: str, name: str, batch: BatchSpec
    ) -> PipelineSpec:
        """The pipeline of ``topic`` (see the module docstring)."""
        jdbc = cfg.jdbc
        assert jdbc is not None
        schema, table = jdbc.table_of(cfg.routed(topic))
        creds = {"password": cfg.password} if cfg.password else {}
        if jdbc.url_secret is not None:  # the URL's TLS and time-outs are read again
            creds[urls.secret_key("url")] = jdbc.url_secret
        config: dict[str, Any] = {
            "dialect": jdbc.dialect,
            "host": cfg.host,
            "port": cfg.port,
            "database": cfg.database,
            "schema": schema,
            "user": cfg.user,
            "url": jdbc.url,
            "options": dict(jdbc.database.options),
            "topic": topic,
            "metadata_table": cfg.metadata_table,
            "dead_letter_table": cfg.dead_letter_table,
        }
        dest = Destination.of(config, creds)
        rows = _rows(cfg, table, ())
        existing = self._jdbc_table(dest, table, jdbc)
        seen = self._seen(cfg, topic, table, name, rows)
        keys = _pk_columns(jdbc, seen, existing, table, topic)
        if existing is None:
            if not jdbc.auto_create:
                raise ConfigError(
                    f"Table {_id(dest, table)} is missing and auto-creation is disabled "
                    f"(auto.create=false; {dest.where()})"
                )
            if seen is None:
                raise ConfigError(
                    f"table '{table}' does not exist in {dest.where()} and topic '{topic}' "
                    "has no record yet: the connector creates the table from a record's "
                    "schema; send a record first, or create the table"
                )
            columns = _create(dest, table, jdbc, seen, keys)
        else:
            columns = list(existing[0].names)
            if jdbc.auto_evolve and seen is not None:
                columns += _evolve(dest, table, jdbc, seen, keys, columns)
        db_keys = tuple(_column_of(k, columns) or jdbc.name(k) for k in keys)
        mapping = _mapping(jdbc, seen, columns, keys)
        if jdbc.deletes:
            mapping.append(FieldMapping(DELETE_MARK, (DELETE_MARK,)))
        config |= {
            "mode": jdbc.insert_mode,
            "keys": list(db_keys),
            "deletes": DELETE_MARK if jdbc.deletes else None,
            "timezone": jdbc.timezone,
            "date_timezone": "UTC" if jdbc.dates_in_utc else None,
            "tolerate": cfg.tolerate_errors,
        }
        write = "append" if not keys else "insert" if jdbc.insert_mode == "insert" else "replace"
        return PipelineSpec(
            name=name,
            source=SourceSpec(
                kind="kafka",
                location=f"{cfg.bootstrap_servers}/{topic}",
                start=cfg.start,
                config={"record.metadata": True},  # keys, coordinates, headers too
            ),
            sink=SinkSpec(
                table=table, kind="database", write=write, config=config, credentials=creds
            ),
            format=_format(cfg, topic, mapping, _rows(cfg, table, keys)),
            batch=batch,
        )

    def restarting(self, name: str, pipeline: str) -> None:
        """A restarted task of a JDBC sink with ``auto.evolve``: its pipeline made again
        (its offsets kept), so that the table gets the fields of the records it stopped
        at (see the module docstring)."""
        d = self.get(name)  # type: ignore[attr-defined]
        stored = d["config"]
        if stored.get("connector.class", "").strip() != jdbc_sink.CLASS:
            return
        if stored.get("auto.evolve", "").strip().lower() != "true":
            return
        password = self._password(d)  # type: ignore[attr-defined]
        cfg = load(stored | ({"connection.password": password} if password else {}), name=name)
        cfg = self._with_stored(cfg, d)  # type: ignore[attr-defined]
        topic = d["topics"][d["pipelines"].index(pipeline)]
        spec = self._spec(cfg, topic, pipeline)  # type: ignore[attr-defined]
        self.engine.create_pipeline_spec(spec, replace=True)

    def _jdbc_table(
        self, dest: Destination, table: str, jdbc: JdbcSink
    ) -> tuple[pa.Schema, tuple[str, ...]] | None:
        """The table's columns and primary key; None when it is not there (a view not
        in ``table.types`` is refused)."""
        try:
            schema, _, key = reflect(dest, table)
        except SinkError as e:
            if "has no table" in e.message:
                return None
            raise
        if "VIEW" not in jdbc.table_types and table in _views(dest):
            raise ConfigError(
                f"{_id(dest, table)} is a view, which table.types "
                f"({','.join(jdbc.table_types)}) does not include"
            )
        return schema, key

    def _seen(
        self, cfg: SinkConnectorConfig, topic: str, table: str, name: str, rows: RecordRows
    ) -> _Seen | None:
        """The fields of the next records the pipeline will write, of every schema among
        them (see the module docstring); None when the topic has none."""
        jdbc = cfg.jdbc
        assert jdbc is not None
        limit = EVOLVE_RECORDS if jdbc.auto_evolve else PEEK_RECORDS
        decoder = ConnectDecoder(pa.schema([]), (), _records(cfg, topic, rows), _options(cfg))
        values: dict[str, Field] = {}
        keys: dict[str, Field] = {}
        struct, why = False, None
        for head in self._next_records(cfg, topic, name, limit):
            done, refused = decoder.transformed(head, "0")
            if refused and not len(done):
                why = why or refused[0].reason
                continue
            value_hints, key_hints = self._hints(cfg, head)
            value = done.value.filter(done.value.is_valid())
            if len(value) and pa.types.is_struct(value.type):
                for f in value.type:
                    values.setdefault(f.name, _typed(f.name, f.type, value_hints))
            elif len(value):
                values.setdefault(
                    rows.string_column, (rows.string_column, ("Text", "STRING"), True)
                )
            key = done.key.filter(done.key.is_valid())
            if len(key) and pa.types.is_struct(key.type):
                struct = True
                for f in key.type:
                    keys.setdefault(f.name, _typed(f.name, f.type, key_hints))
            elif len(key) and not pa.types.is_null(key.type):
                own = key_hints.get("", (arrow_type(key.type), False))[0]
                keys.setdefault("", ("", own, False))
        if not values and not keys:
            if why is not None:
                raise ConfigError(
                    f"none of the next records of topic '{topic}' can be written to table "
                    f"'{table}': {why}"
                )
            return None
        return _Seen(tuple(values.values()), tuple(keys.values()), struct)

    def _next_records(
        self, cfg: SinkConnectorConfig, topic: str, name: str, limit: int
    ) -> Iterator[Fetched]:
        """About ``limit`` records of ``topic`` (shared by its partitions, at least
        PEEK_RECORDS each) from where pipeline ``name`` is (its committed offsets; a new
        one: the topic's start), in chunks; their keys and coordinates too."""
        from sparkpipes.sources import build_source

        try:
            committed = dict(self.engine.offsets(name))
        except (NotFoundError, SinkError):  # no such pipeline (or table) yet: the start
            committed = {}
        src = build_source(
            "kafka", f"{cfg.bootstrap_servers}/{topic}", {"record.metadata": True}, {}
        )
        meta = src.metadata()
        partitions = list(meta.partitions())
        limit = max(PEEK_RECORDS, limit // max(1, len(partitions)))
        for p in partitions:
            start = committed.get(p)
            if start is None:
                start = src.start_offset(meta, p, "earliest")
            consumer = src.consumer(p)
            try:
                consumer.open(start)
                read = 0
                while read < limit:
                    fetched = consumer.fetch(min(PEEK_CHUNK, limit - read), PEEK_TIMEOUT_S)
                    if not len(fetched.values):
                        break
                    read += len(fetched.values)
                    yield fetched
            finally:
                consumer.close()

    def _hints(self, cfg: SinkConnectorConfig, head: Fetched) -> tuple[dict, dict]:
        """The fields of the records' value and key schemas by name (nested ones too),
        of every schema among them (the first of a name wins): column types and
        nullability (``transformed``); a primitive key's under ``""``."""
        jdbc = cfg.jdbc
        assert jdbc is not None
        value_hints: dict = {}
        key_hints: dict = {}
        values = head.values.to_pylist()
        keys = head.keys.to_pylist() if head.keys is not None else []
        if cfg.value_converter in AVRO_CONVERTERS:
            for schema in self._avro_schemas(cfg, values):
                _merge(value_hints, avro_hints(schema, AVRO_TYPES, AVRO_LOGICAL))
        elif cfg.value_converter != STRING_CONVERTER and cfg.schemas_enable:
            for schema in _envelope_schemas(values):
                _merge(value_hints, json_hints(schema, JSON_TYPES, JSON_LOGICAL))
        if jdbc.key_converter == "avro":
            for schema in self._avro_schemas(cfg, keys):
                _merge(key_hints, avro_hints(schema, AVRO_TYPES, AVRO_LOGICAL))
                kind = schema.get("type") if isinstance(schema, dict) else schema
                if kind in AVRO_TYPES and kind != "record":
                    key_hints.setdefault("", (AVRO_TYPES[kind], False))
        elif jdbc.key_converter == "json" and jdbc.key_schemas:
            for schema in _envelope_schemas(keys):
                _merge(key_hints, json_hints(schema, JSON_TYPES, JSON_LOGICAL))
                if isinstance(schema, dict) and schema.get("type") in JSON_TYPES:
                    logical = JSON_LOGICAL.get(schema.get("name") or "")
                    key_hints.setdefault("", (logical or JSON_TYPES[schema["type"]], False))
        return value_hints, key_hints

    def _avro_schemas(self, cfg: SinkConnectorConfig, raws: list[bytes | None]) -> list[Any]:
        """The registry's schema of each schema id among ``raws`` (Avro messages)."""
        ids: dict[bytes, bytes] = {}
        for raw in raws:
            if raw is not None:
                ids.setdefault(raw[:5], raw)
        return [self._registry_schema(cfg, raw) for raw in ids.values()]

    def _registry_schema(self, cfg: SinkConnectorConfig, raw: bytes) -> Any:
        from sparkpipes.formats.avro import registry_client

        if len(raw) < 5 or raw[0] != 0:
            raise ConfigError(
                "a record is not an Avro message of a schema registry (no magic byte and schema id)"
            )
        sid = int.from_bytes(raw[1:5], "big")
        try:
            secrets = {k: v.reveal() for k, v in cfg.registry_secrets.items()}
            text = registry_client(_registry(cfg), secrets).get_schema(sid).schema_str
        except Exception as e:
            raise SourceUnavailableError(
                f"cannot get schema id {sid} from the schema registry at {_registry(cfg)}: {e}"
            ) from None
        return json.loads(text)


def _registry(cfg: SinkConnectorConfig) -> str:
    """The registry Avro values and keys are read with (one: ``jdbc_sink`` checks it)."""
    raw = dict(cfg.raw)
    return cfg.schema_registry or raw.get("key.converter.schema.registry.url", "")


def _options(cfg: SinkConnectorConfig) -> dict[str, str]:
    url = _registry(cfg)
    if not url:
        return {}
    return {REGISTRY_OPTION: url, **{k: v.reveal() for k, v in cfg.registry_secrets.items()}}


def _envelope_schemas(raws: list[bytes | None]) -> list[Any]:
    """The distinct ``schema`` of the JsonConverter envelopes among ``raws``."""
    out: dict[str, Any] = {}
    for raw in raws:
        if raw is None:
            continue
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if isinstance(schema, dict):
            out.setdefault(json.dumps(schema, sort_keys=True), schema)
    return list(out.values())


def _merge(into: dict, hints: dict) -> None:
    for name, hint in hints.items():
        into.setdefault(name, hint)


def _typed(name: str, kind: pa.DataType, hints: dict) -> Field:
    """A field's column type: its schema's where it agrees with the value's own family
    (``transformed``), else the value's; its schema's nullability (nullable without)."""
    own = arrow_type(kind)
    hinted, nullable = hints.get(name, (own, True))
    family = {"SMALLINT": "int", "INT": "int", "BIGINT": "int", "FLOAT": "f", "DOUBLE": "f"}
    same = family.get(hinted[1], hinted[1]) == family.get(own[1], own[1])
    return (name, hinted if same or pa.types.is_null(kind) else own, nullable)


def _rows(cfg: SinkConnectorConfig, table: str, keys: tuple[str, ...]) -> RecordRows:
    jdbc = cfg.jdbc
    assert jdbc is not None
    return RecordRows(
        connector=cfg.name,
        table=table,
        pk_mode=jdbc.pk_mode,
        pk_fields=keys if jdbc.pk_mode in ("kafka", "record_key") else jdbc.pk_fields,
        key_converter=jdbc.key_converter,
        key_schemas=jdbc.key_schemas,
        deletes=DELETE_MARK if jdbc.deletes else None,
        fields=jdbc.fields,
        string_column=jdbc.string_column,
        evolve=jdbc.auto_evolve,
    )


def _records(cfg: SinkConnectorConfig, topic: str, rows: RecordRows) -> ConnectRecords:
    if cfg.value_converter == STRING_CONVERTER:
        converter = "string"
    elif cfg.value_converter in AVRO_CONVERTERS:
        converter = "avro"
    else:
        converter = "json"
    return ConnectRecords(converter, topic, cfg.schemas_enable, cfg.transforms, rows)


def _format(
    cfg: SinkConnectorConfig, topic: str, mapping: list[FieldMapping], rows: RecordRows
) -> FormatSpec:
    records = _records(cfg, topic, rows)
    tolerate = dict.fromkeys(("skip_parser_errors", "skip_constraint_errors"), cfg.tolerate_errors)
    url = _registry(cfg)
    return FormatSpec(
        kind="avro" if url else "json",
        mapping=tuple(mapping),
        options={REGISTRY_OPTION: url} if url else {},
        credentials=cfg.registry_secrets if url else {},
        connect=records,
        **tolerate,
    )


def _pk_columns(
    jdbc: JdbcSink,
    seen: _Seen | None,
    existing: tuple[pa.Schema, tuple[str, ...]] | None,
    table: str,
    topic: str,
) -> tuple[str, ...]:
    """The primary-key fields (``FieldsMetadata``): ``pk.fields``, or the key's / value's
    fields as the records show them, or the table's primary key."""
    mode, given = jdbc.pk_mode, jdbc.pk_fields
    if mode == "none":
        return ()
    if mode == "kafka":
        return given or DEFAULT_KAFKA_PK_NAMES
    if given:
        return given
    if mode == "record_key" and seen is not None and seen.key_struct:
        return tuple(f[0] for f in seen.key)
    if mode == "record_key" and seen is not None and seen.key:
        raise ConfigError(
            "Need exactly one PK column defined since the key schema for records is a "
            "primitive type, defined columns are: []"
        )
    if mode == "record_value" and seen is not None and seen.value:
        return tuple(f[0] for f in seen.value)
    if existing is not None and existing[1]:
        return existing[1]
    raise ConfigError(
        f"pk.mode={mode} without pk.fields takes the {'key' if mode == 'record_key' else 'value'}"
        f"'s fields from the records of topic '{topic}', which has none yet, and table "
        f"'{table}' has no primary key to take instead: give pk.fields, or send a record first"
    )


def _fields(jdbc: JdbcSink, seen: _Seen, keys: tuple[str, ...]) -> list[Field]:
    """The table's columns as Confluent orders them: the Kafka coordinates, the value's
    fields (a key field in its place), the other key fields sorted; key columns NOT
    NULL (``FieldsMetadata.extract``)."""
    out: dict[str, Field] = {}
    if jdbc.pk_mode == "kafka":
        for name, kind in zip(keys, _KAFKA_TYPES, strict=True):
            out[name] = (name, kind, False)
    key_types = {f[0]: f for f in seen.key}
    for name, kind, nullable in seen.value:
        if name in keys:
            if jdbc.pk_mode == "record_key":
                kind = key_types.get(name, (name, kind, False))[1]
            out[name] = (name, kind, False)
        elif not jdbc.fields or name in jdbc.fields:
            out[name] = (name, kind, nullable)
    if jdbc.pk_mode == "record_key":
        for name in sorted(k for k in keys if k not in out):
            found = key_types.get(name) or (
                seen.key[0] if not seen.key_struct and seen.key else None
            )
            out[name] = (name, found[1] if found else ("Text", "STRING"), False)
    missing = [k for k in keys if k not in out]
    if missing:
        where = "value" if jdbc.pk_mode == "record_value" else "key"
        raise ConfigError(
            f"PK mode is {jdbc.pk_mode.upper()} with configured PK fields {list(keys)}, but "
            f"record {where} schema does not contain field: {missing[0]}"
        )
    return [(jdbc.name(n), t, nullable) for n, t, nullable in out.values()]


def _create(
    dest: Destination, table: str, jdbc: JdbcSink, seen: _Seen, keys: tuple[str, ...]
) -> list[str]:
    """``CREATE TABLE`` from the records' schema with the primary key (``auto.create``)."""
    fields = _fields(jdbc, seen, keys)
    pk = (Key("PRIMARY", tuple(jdbc.name(k) for k in keys)),) if keys else ()
    create_table(dest, table, fields, pk)
    log.info("created table %s in %s (auto.create)", table, dest.where())
    return [f[0] for f in fields]


def _evolve(
    dest: Destination,
    table: str,
    jdbc: JdbcSink,
    seen: _Seen,
    keys: tuple[str, ...],
    columns: list[str],
) -> list[str]:
    """``ALTER TABLE … ADD`` the records' fields the table lacks (``auto.evolve``,
    ``DbStructure.amendIfNecessary``: names matched ignoring case); the columns added."""
    missing = [f for f in _fields(jdbc, seen, keys) if _column_of(f[0], columns) is None]
    if not missing:
        return []
    strict = [f[0] for f in missing if not f[2]]
    if strict:
        raise ConfigError(
            f"Cannot ALTER TABLE {_id(dest, table)} to add missing field {strict[0]}, as the "
            "field is not optional and does not have a default value"
        )
    add_columns(dest, table, missing)
    log.info("added columns %s to table %s (auto.evolve)", [f[0] for f in missing], table)
    return [f[0] for f in missing]


def _column_of(field: str, columns: list[str]) -> str | None:
    """The table's column of a field: its name, else the one that differs only in case
    (``DbStructure.missingFields``)."""
    if field in columns:
        return field
    lower = {c.lower(): c for c in columns}
    return lower.get(field.lower())


def _mapping(
    jdbc: JdbcSink, seen: _Seen | None, columns: list[str], keys: tuple[str, ...]
) -> list[FieldMapping]:
    """Each column a record writes, from its field: the key columns, then the value's
    fields (``fields.whitelist``'s); without records seen, every column by its name."""
    out: dict[str, FieldMapping] = {}
    for k in keys:
        column = _column_of(k, columns) or jdbc.name(k)
        out[column] = FieldMapping(column, (k,))
    if seen is None:
        for c in columns:
            if c not in out and (not jdbc.fields or c in jdbc.fields):
                out[c] = FieldMapping(c, (c,))
        return list(out.values())
    for name, _, _ in seen.value:
        if jdbc.fields and name not in jdbc.fields and name not in keys:
            continue
        column = _column_of(name, columns)
        if column is not None and column not in out:
            out[column] = FieldMapping(column, (name,))
    return list(out.values())


def _views(dest: Destination) -> set[str]:
    import sqlalchemy as sa

    engine = dest.engine()
    try:
        with engine.connect() as conn:
            return set(sa.inspect(conn).get_view_names(schema=dest.schema))
    except Exception as e:
        raise dest.error(e, "listing the views") from None
    finally:
        engine.dispose()


def _id(dest: Destination, table: str) -> str:
    """A table as Confluent's messages name it (``"schema"."table"``)."""
    return f'"{dest.schema}"."{table}"' if dest.schema else f'"{table}"'

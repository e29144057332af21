"""A sink connector with Single Message Transforms (``transforms``): the format of its
pipelines and the columns of a table it creates, both through its chain.

- Its pipelines read each record's key, headers and timestamp with the value
  (``record.metadata``) and decode them with :class:`~sparkpipes.config.transforms.
  ConnectRecords` (``formats.connect``): the converter, then the chain, then the fields
  by name to the columns.
- A table it creates has the columns of the first record the chain lets through (Connect
  creates it from the schema of the first record the sink is handed, transformed): a
  field ``ReplaceField`` excludes is no column, one ``InsertField`` or Debezium's
  ``ExtractNewRecordState`` adds is. Each column's type is the record schema's for the
  field of that name where the transformed value's type agrees with it (an ``int32``
  stays INT), else the transformed value's own (a ``Cast`` wins); its nullability is the
  schema's, and a field the schema does not have is nullable.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from sparkpipes.config import FieldMapping, Secret
from sparkpipes.config.parts import FormatSpec
from sparkpipes.config.transforms import ConnectRecords
from sparkpipes.errors import ConfigError
from sparkpipes.formats.connect import ConnectDecoder
from sparkpipes.frontends.connect.model import (
    AVRO_CONVERTERS,
    REGISTRY_OPTION,
    STRING_CONVERTER,
    SinkConnectorConfig,
)
from sparkpipes.sources.base import Fetched

#: (SQLAlchemy type name, Spark DDL type) of a column
Type = tuple[str, str]
Field = tuple[str, Type, bool]
#: Arrow type families → column type, in order (the first that holds)
_ARROW: tuple[tuple[object, Type], ...] = (
    (pa.types.is_int8, ("SmallInteger", "SMALLINT")),
    (pa.types.is_int16, ("SmallInteger", "SMALLINT")),
    (pa.types.is_int32, ("Integer", "INT")),
    (pa.types.is_integer, ("BigInteger", "BIGINT")),
    (pa.types.is_float32, ("REAL", "FLOAT")),
    (pa.types.is_floating, ("Double", "DOUBLE")),
    (pa.types.is_boolean, ("Boolean", "BOOLEAN")),
    (pa.types.is_string, ("Text", "STRING")),
    (pa.types.is_binary, ("LargeBinary", "BINARY")),
    (pa.types.is_timestamp, ("DateTime", "TIMESTAMP")),
    (pa.types.is_date, ("Date", "DATE")),
    (pa.types.is_nested, ("JSON", "STRING")),
    (pa.types.is_null, ("Text", "STRING")),
)
#: column types of one family (the schema's wins over the transformed value's)
_FAMILY = {
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "int",
    "FLOAT": "float",
    "DOUBLE": "float",
}


def records_of(cfg: SinkConnectorConfig, topic: str) -> ConnectRecords:
    """How the pipeline of ``topic`` decodes its records (see the module docstring)."""
    if cfg.value_converter == STRING_CONVERTER:
        converter = "string"
    elif cfg.value_converter in AVRO_CONVERTERS:
        converter = "avro"
    else:
        converter = "json"
    return ConnectRecords(converter, topic, cfg.schemas_enable, cfg.transforms)


def format_of(
    cfg: SinkConnectorConfig, topic: str, columns: list[str], tolerate: Mapping[str, bool]
) -> FormatSpec:
    """The format of a pipeline of a connector with transforms: the transformed values'
    fields by name to ``columns``."""
    records = records_of(cfg, topic)
    mapping = tuple(FieldMapping(c, (c,)) for c in columns)
    if records.converter == "avro":
        return FormatSpec(
            kind="avro",
            mapping=mapping,
            options={REGISTRY_OPTION: cfg.schema_registry or ""},
            credentials=cfg.registry_secrets,
            connect=records,
            **tolerate,
        )
    return FormatSpec(kind="json", mapping=mapping, connect=records, **tolerate)


def decoder_of(cfg: SinkConnectorConfig, topic: str) -> ConnectDecoder:
    options: dict[str, str] = {}
    if cfg.schema_registry:
        options[REGISTRY_OPTION] = cfg.schema_registry
        options.update({k: _reveal(v) for k, v in cfg.registry_secrets.items()})
    return ConnectDecoder(pa.schema([]), (), records_of(cfg, topic), options)


def _reveal(value: Secret) -> str:
    return value.reveal()


def fields_after(
    cfg: SinkConnectorConfig,
    topic: str,
    table: str,
    fetched: Fetched,
    hints: Mapping[str, tuple[Type, bool]],
) -> list[Field]:
    """The columns of the table the connector creates from the first of ``fetched`` the
    chain lets through, typed by ``hints`` (the record schema's fields by name, nested
    ones too) where they agree."""
    done, errors = decoder_of(cfg, topic).transformed(fetched, "0")
    value = done.value.filter(done.value.is_valid()) if len(done) else done.value
    if not len(value):
        why = f": {errors[0].reason}" if errors else ""
        raise ConfigError(
            f"table '{table}' does not exist in {cfg.where()} and none of the first "
            f"{len(fetched)} records of topic '{topic}' comes through the connector's "
            f"transforms with a value{why}: the connector creates the table from the first "
            "record it is handed; create the table, or send such a record first"
        )
    if not pa.types.is_struct(value.type):
        return [("data", arrow_type(value.type), True)]
    out = []
    for f in value.type:
        own = arrow_type(f.type)
        hinted, nullable = hints.get(f.name, (own, True))
        same = _FAMILY.get(hinted[1], hinted[1]) == _FAMILY.get(own[1], own[1])
        out.append((f.name, hinted if same or pa.types.is_null(f.type) else own, nullable))
    return out


def arrow_type(kind: pa.DataType) -> Type:
    """The column type of values of Arrow type ``kind``."""
    return next(t for test, t in _ARROW if test(kind))  # type: ignore[operator]


def json_hints(schema: object, types: Mapping[str, Type], logical: Mapping[str, Type]) -> dict:
    """Every field of a JsonConverter schema by name, nested structs' too (the first of
    a name wins): its column type (by ``types`` / ``logical``) and nullability."""
    out: dict[str, tuple[Type, bool]] = {}

    def walk(node: object) -> None:
        if not isinstance(node, Mapping):
            return
        for f in node.get("fields") or ():
            if not isinstance(f, Mapping) or not isinstance(f.get("field"), str):
                continue
            kind = logical.get(f.get("name") or "") or types.get(str(f.get("type")))
            if kind is not None:
                out.setdefault(f["field"], (kind, bool(f.get("optional", False))))
            walk(f)

    walk(schema)
    return out


def avro_hints(schema: object, types: Mapping[str, Type], logical: Mapping[str, Type]) -> dict:
    """Every field of an Avro record schema by name, nested records' too (the first of a
    name wins): its column type and nullability (a ``["null", T]`` union is nullable)."""
    out: dict[str, tuple[Type, bool]] = {}

    def walk(node: object) -> None:
        if not isinstance(node, Mapping) or node.get("type") != "record":
            return
        for f in node.get("fields") or ():
            t, nullable = f.get("type"), False
            if isinstance(t, list):
                rest = [x for x in t if x != "null"]
                nullable, t = len(rest) < len(t), rest[0] if len(rest) == 1 else "string"
            kind = t.get("type") if isinstance(t, Mapping) else t
            found = logical.get(t.get("logicalType", "")) if isinstance(t, Mapping) else None
            found = found or types.get(str(kind))
            if found is not None:
                out.setdefault(f["name"], (found, nullable))
            walk(t)

    walk(schema)
    return out


__all__ = [
    "Field",
    "arrow_type",
    "avro_hints",
    "decoder_of",
    "fields_after",
    "format_of",
    "json_hints",
    "records_of",
]

"""Pinot realtime tables (seeds 002, 003), as users write them: a schema JSON and a table
config JSON, checked once into frozen :class:`PinotSchema` and :class:`PinotTableConfig`.

Every key of the two documents is known: a key sparkpipes does not know is an error naming
it and the nearest known one, at its place (``tableIndexConfig.streamConfigs``). Keys Pinot
uses only for its own servers (``loadMode``, ``replicasPerPartition``, ``tenants``,
``metadata``, ``stream.kafka.zk.broker.url`` …) are accepted and kept, and change nothing;
:attr:`PinotTableConfig.notes` says which. Empty strings (seed 002's SSL example leaves
most values empty) mean "not given".

Secrets — the password in ``sasl.jaas.config``, ``ssl.*.password``, the schema registry's
``basic.auth.user.info``, a password inside a URL (the registry's, ``stream.redis.url``) —
become :class:`Secret` values; :meth:`PinotTableConfig.shown` is the config with them
redacted, which is all the catalog keeps and all any surface shows. The JAAS string itself
is never handed to the Kafka client: its user name and password are taken out of it.

Types (Pinot → table column): INT → INT, LONG → BIGINT, FLOAT → FLOAT, DOUBLE → DOUBLE,
BIG_DECIMAL → DECIMAL(38,18), BOOLEAN → BOOLEAN, TIMESTAMP → TIMESTAMP, STRING → STRING,
JSON → STRING (declared JSON), BYTES → BINARY; a multi-value field
(``singleValueField: false``) is an ARRAY of its type. A record without a value for a
field stores NULL, or the field's ``defaultNullValue`` when the schema gives one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import REDACTED, parse_json_object, reject_unknown
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.stream import (
    StreamConfig,
    is_secret_key,
    load_stream,
    local_file_keys,
)
from sparkpipes.frontends.pinot.units import TIME_UNITS_MS
from sparkpipes.frontends.pinot.upsert import (
    UpsertConfig,
    dedup_enabled,
    retention_ms,
    upsert_config,
)

#: Pinot data type → Spark DDL type of the table column
TYPES = {
    "INT": "INT",
    "LONG": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BIG_DECIMAL": "DECIMAL(38,18)",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "STRING": "STRING",
    "JSON": "STRING",
    "BYTES": "BINARY",
}
ROLES = {
    "dimensionFieldSpecs": "dimension",
    "metricFieldSpecs": "metric",
    "dateTimeFieldSpecs": "dateTime",
}
METRIC_TYPES = ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "BYTES")
DATETIME_TYPES = ("INT", "LONG", "STRING", "TIMESTAMP")
SCHEMA_KEYS = (
    "schemaName",
    *ROLES,
    "primaryKeyColumns",
    "enableColumnBasedNullHandling",
    "description",
    "tags",
)
FIELD_KEYS = tuple(
    [
        "name",
        "dataType",
        "singleValueField",
        "defaultNullValue",
        "format",
        "granularity",
        "maxLength",
        "notNull",
        "transformFunction",
        "fieldType",
        "description",
    ]
)


# -- schema -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DateTimeFormat:
    """A dateTime field's ``format``: epoch in ``size`` ``unit``s, a date pattern
    (``SIMPLE_DATE_FORMAT``) or ``TIMESTAMP``."""

    kind: str  # EPOCH, SIMPLE_DATE_FORMAT, TIMESTAMP
    unit: str = "MILLISECONDS"
    size: int = 1
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str, where: str) -> DateTimeFormat:
        """``1:MILLISECONDS:EPOCH``, ``1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd`` (the colon
        form), ``EPOCH|MILLISECONDS|1``, ``SIMPLE_DATE_FORMAT|yyyy-MM-dd`` (the pipe form)
        or ``TIMESTAMP``."""
        bad = ConfigError(
            f"{where}: format '{text}' is not a Pinot dateTime format (e.g. "
            "'1:MILLISECONDS:EPOCH', '1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd', "
            "'EPOCH|SECONDS', 'TIMESTAMP')"
        )
        if text.strip().upper() == "TIMESTAMP":
            return cls("TIMESTAMP")
        if "|" in text:
            parts = text.split("|")
            kind = parts[0].upper()
            if kind == "EPOCH":
                unit = (parts[1] if len(parts) > 1 else "MILLISECONDS").upper()
                size = parts[2] if len(parts) > 2 else "1"
                return cls._epoch(unit, size, bad)
            if kind == "SIMPLE_DATE_FORMAT" and len(parts) >= 2:
                return cls("SIMPLE_DATE_FORMAT", pattern="|".join(parts[1:]))
            raise bad
        parts = text.split(":", 3)
        if len(parts) < 3:
            raise bad
        size, unit, kind = parts[0], parts[1].upper(), parts[2].upper()
        if kind == "EPOCH":
            return cls._epoch(unit, size, bad)
        if kind == "SIMPLE_DATE_FORMAT" and len(parts) == 4:
            return cls("SIMPLE_DATE_FORMAT", unit=unit, pattern=parts[3])
        if kind == "TIMESTAMP":
            return cls("TIMESTAMP")
        raise bad

    @classmethod
    def _epoch(cls, unit: str, size: str, bad: ConfigError) -> DateTimeFormat:
        if unit not in TIME_UNITS_MS or not size.isdigit() or int(size) < 1:
            raise bad
        return cls("EPOCH", unit=unit, size=int(size))


@dataclass(frozen=True)
class FieldSpec:
    """One column of a Pinot schema."""

    name: str
    data_type: str
    role: str  # dimension, metric, dateTime
    single_value: bool = True
    default_null: Any = None
    not_null: bool = False
    format: DateTimeFormat | None = None
    granularity: str | None = None
    transform: str | None = None  # a transformFunction in the schema (older Pinot configs)

    @property
    def ddl_type(self) -> str:
        base = TYPES[self.data_type]
        return base if self.single_value else f"ARRAY<{base}>"


@dataclass(frozen=True)
class PinotSchema:
    """A Pinot schema, checked; ``raw`` is the document as given."""

    name: str
    fields: tuple[FieldSpec, ...]
    primary_key: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise ConfigError(
            f"schema '{self.name}' has no column '{name}' (columns: "
            f"{', '.join(f.name for f in self.fields)})"
        )

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


def load_schema(doc: str | Mapping[str, Any]) -> PinotSchema:
    """A schema from its JSON text or object; ConfigError naming the first problem."""
    d = parse_json_object(doc, what="the Pinot schema")
    reject_unknown(d, SCHEMA_KEYS, what="schema key")
    name = d.get("schemaName")
    if not isinstance(name, str) or not name:
        raise ConfigError("the Pinot schema needs a schemaName")
    fields: list[FieldSpec] = []
    for key, role in ROLES.items():
        specs = d.get(key) or []
        if not isinstance(specs, list):
            raise ConfigError(f"schema '{name}': {key} must be a list of field specs")
        for i, spec in enumerate(specs):
            fields.append(_field(spec, role, f"schema '{name}' {key}[{i}]"))
    if not fields:
        raise ConfigError(f"schema '{name}' has no field specs")
    seen: set[str] = set()
    for f in fields:
        if f.name in seen:
            raise ConfigError(f"schema '{name}' lists column '{f.name}' twice")
        seen.add(f.name)
    pk = d.get("primaryKeyColumns") or []
    if not isinstance(pk, list) or not all(isinstance(c, str) for c in pk):
        raise ConfigError(f"schema '{name}': primaryKeyColumns must be a list of column names")
    for c in pk:
        if c not in seen:
            raise ConfigError(
                f"schema '{name}': primary key column '{c}' is not a field of the schema"
            )
    return PinotSchema(name, tuple(fields), tuple(pk), d)


def _field(spec: Any, role: str, where: str) -> FieldSpec:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be an object with name and dataType")
    reject_unknown(spec, FIELD_KEYS, what=f"field spec key in {where}")
    name, dtype = spec.get("name"), spec.get("dataType")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where} has no name")
    where = f"{where} ('{name}')"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name):
        raise ConfigError(
            f"{where}: column names are letters, digits, '_' and '$', starting with a letter or '_'"
        )
    if not isinstance(dtype, str) or dtype.upper() not in TYPES:
        raise ConfigError(
            f"{where}: dataType {dtype!r} is not a Pinot data type ({', '.join(TYPES)})"
        )
    dtype = dtype.upper()
    allowed = METRIC_TYPES if role == "metric" else DATETIME_TYPES if role == "dateTime" else None
    if allowed and dtype not in allowed:
        raise ConfigError(f"{where}: a {role} field cannot be {dtype} ({', '.join(allowed)})")
    single = spec.get("singleValueField", True)
    if not isinstance(single, bool):
        raise ConfigError(f"{where}: singleValueField must be true or false")
    if not single and role != "dimension":
        raise ConfigError(f"{where}: only dimension fields can be multi-value")
    fmt = None
    if role == "dateTime":
        if not isinstance(spec.get("format"), str):
            raise ConfigError(f"{where}: a dateTime field needs a format")
        fmt = DateTimeFormat.parse(spec["format"], where)
        if not isinstance(spec.get("granularity"), str):
            raise ConfigError(f"{where}: a dateTime field needs a granularity")
    transform = spec.get("transformFunction")
    if transform is not None and not isinstance(transform, str):
        raise ConfigError(f"{where}: transformFunction must be a string")
    return FieldSpec(
        name=name,
        data_type=dtype,
        role=role,
        single_value=single,
        default_null=spec.get("defaultNullValue"),
        not_null=bool(spec.get("notNull", False)),
        format=fmt,
        granularity=spec.get("granularity"),
        transform=transform,
    )


# -- table config -------------------------------------------------------------------------
TABLE_KEYS = tuple(
    [
        "tableName",
        "tableType",
        "segmentsConfig",
        "tenants",
        "tableIndexConfig",
        "ingestionConfig",
        "upsertConfig",
        "dedupConfig",
        "metadata",
        "routing",
        "query",
        "fieldConfigList",
        "quota",
        "task",
        "instanceAssignmentConfigMap",
        "isDimTable",
    ]
)
SEGMENTS_KEYS = tuple(
    [
        "timeColumnName",
        "timeType",
        "schemaName",
        "replicasPerPartition",
        "replication",
        "retentionTimeUnit",
        "retentionTimeValue",
        "segmentPushType",
        "segmentAssignmentStrategy",
        "minimizeDataMovement",
        "deletedSegmentsRetentionPeriod",
    ]
)
INDEX_KEYS = tuple(
    [
        "loadMode",
        "streamConfigs",
        "invertedIndexColumns",
        "rangeIndexColumns",
        "sortedColumn",
        "bloomFilterColumns",
        "noDictionaryColumns",
        "onHeapDictionaryColumns",
        "varLengthDictionaryColumns",
        "jsonIndexColumns",
        "createInvertedIndexDuringSegmentGeneration",
        "enableDefaultStarTree",
        "starTreeIndexConfigs",
        "aggregateMetrics",
        "nullHandlingEnabled",
        "segmentPartitionConfig",
        "optimizeDictionary",
    ]
)
INGESTION_KEYS = tuple(
    [
        "streamIngestionConfig",
        "transformConfigs",
        "filterConfig",
        "complexTypeConfig",
        "continueOnError",
        "rowTimeValueCheck",
        "segmentTimeValueCheck",
    ]
)


@dataclass(frozen=True)
class PinotTableConfig:
    """A REALTIME table config, checked; :meth:`shown` is what may be shown back."""

    name: str
    schema_name: str
    time_column: str | None
    stream: StreamConfig
    retention_ms: int | None = None
    transforms: tuple[tuple[str, str], ...] = ()
    filter: str | None = None
    upsert: UpsertConfig | None = None
    dedup: bool = False
    continue_on_error: bool = False
    #: the config as given, every secret value replaced by ``<redacted>``
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def notes(self) -> tuple[str, ...]:
        return self.stream.notes

    def shown(self) -> dict[str, Any]:
        """The table config as given, secrets redacted: all any surface shows or keeps."""
        return dict(self.raw)


def redacted(doc: Any, key: str = "") -> Any:
    """``doc`` with every secret value, and every password inside a URL (or a broker
    list), replaced by ``<redacted>``."""
    if isinstance(doc, Mapping):
        return {
            k: (REDACTED if is_secret_key(k) and v not in ("", None) else redacted(v, k))
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [redacted(v, key) for v in doc]
    return urls.redact_all(doc, key)


def _object(d: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConfigError(f"{where}.{key} must be an object")
    return v


def load_table(doc: str | Mapping[str, Any], schema: PinotSchema | None = None) -> PinotTableConfig:
    """A table config from its JSON text or object, checked against ``schema`` when
    given; ConfigError naming the first problem and where it is."""
    d = parse_json_object(doc, what="the Pinot table config")
    reject_unknown(d, TABLE_KEYS, what="table config key")
    name = d.get("tableName")
    if not isinstance(name, str) or not name:
        raise ConfigError("the table config needs a tableName")
    base = re.sub(r"_(REALTIME|OFFLINE)$", "", name)
    if not re.fullmatch(r"[A-Za-z0-9_]+", base):
        raise ConfigError(f"tableName '{name}' must be letters, digits and underscores")
    kind = str(d.get("tableType", "")).upper()
    if kind == "OFFLINE":
        raise ConfigError(
            f"table '{base}': tableType OFFLINE (batch segment push) is not supported; "
            "sparkpipes loads REALTIME tables from streams (for files, use CREATE PIPELINE "
            "… LOAD DATA FS/S3)"
        )
    if kind != "REALTIME":
        raise ConfigError(f"table '{base}': tableType must be REALTIME, got {d.get('tableType')!r}")
    seg = _object(d, "segmentsConfig", "table config")
    reject_unknown(seg, SEGMENTS_KEYS, what="segmentsConfig key")
    index = _object(d, "tableIndexConfig", "table config")
    reject_unknown(index, INDEX_KEYS, what="tableIndexConfig key")
    ingestion = _object(d, "ingestionConfig", "table config")
    reject_unknown(ingestion, INGESTION_KEYS, what="ingestionConfig key")
    stream = _stream(index, ingestion, base)
    schema_name = seg.get("schemaName") or base
    if schema is not None and schema.name != schema_name:
        raise ConfigError(
            f"table '{base}' names schema '{schema_name}' (segmentsConfig.schemaName) but "
            f"the schema given is '{schema.name}'"
        )
    time_column = seg.get("timeColumnName") or None
    if schema is not None and time_column is not None:
        f = schema.field(time_column)
        if f.role != "dateTime":
            raise ConfigError(
                f"table '{base}': timeColumnName '{time_column}' must be a dateTime field of "
                f"schema '{schema.name}'"
            )
    transforms = []
    for i, t in enumerate(ingestion.get("transformConfigs") or []):
        where = f"ingestionConfig.transformConfigs[{i}]"
        if not isinstance(t, dict):
            raise ConfigError(f"{where} must be an object with columnName and transformFunction")
        reject_unknown(t, ("columnName", "transformFunction"), what=f"key of {where}")
        col, fn = t.get("columnName"), t.get("transformFunction")
        if not isinstance(col, str) or not isinstance(fn, str) or not fn.strip():
            raise ConfigError(f"{where} needs columnName and transformFunction")
        if schema is not None:
            schema.field(col)
        transforms.append((col, fn))
    filt = ingestion.get("filterConfig") or {}
    reject_unknown(filt, ("filterFunction",), what="key of ingestionConfig.filterConfig")
    cont = ingestion.get("continueOnError", False)
    return PinotTableConfig(
        name=base,
        schema_name=schema_name,
        time_column=time_column,
        stream=stream,
        retention_ms=retention_ms(seg, base),
        transforms=tuple(transforms),
        filter=filt.get("filterFunction") or None,
        upsert=upsert_config(d, schema, time_column, base),
        dedup=dedup_enabled(d, schema, base),
        continue_on_error=bool(cont),
        raw=redacted(d),
    )


def local_files(doc: Any) -> list[str]:
    """The keys (``where: key``) of a table config's stream configs that name a file of the
    server's disk — what reading it needs ``FILE READ`` for; [] for a config that does not
    parse (its error comes from :func:`load_table`)."""
    try:
        d = parse_json_object(doc, what="the Pinot table config")
    except ConfigError:
        return []
    found: list[str] = []
    index = d.get("tableIndexConfig")
    if isinstance(index, Mapping) and isinstance(index.get("streamConfigs"), Mapping):
        found += [
            f"tableIndexConfig.streamConfigs.{k}" for k in local_file_keys(index["streamConfigs"])
        ]
    ingestion = d.get("ingestionConfig")
    sic = ingestion.get("streamIngestionConfig") if isinstance(ingestion, Mapping) else None
    maps = sic.get("streamConfigMaps") if isinstance(sic, Mapping) else None
    for i, m in enumerate(maps if isinstance(maps, list) else []):
        if isinstance(m, Mapping):
            found += [
                f"ingestionConfig.streamIngestionConfig.streamConfigMaps[{i}].{k}"
                for k in local_file_keys(m)
            ]
    return found


def _stream(index: Mapping[str, Any], ingestion: Mapping[str, Any], table: str) -> StreamConfig:
    sic = ingestion.get("streamIngestionConfig") or {}
    maps = sic.get("streamConfigMaps") if isinstance(sic, dict) else None
    reject_unknown(
        sic,
        ("streamConfigMaps", "columnMajorSegmentBuilderEnabled"),
        what="key of ingestionConfig.streamIngestionConfig",
    )
    legacy = index.get("streamConfigs")
    if maps and legacy:
        raise ConfigError(
            f"table '{table}' gives both tableIndexConfig.streamConfigs and "
            "ingestionConfig.streamIngestionConfig.streamConfigMaps: give one"
        )
    if maps:
        if not isinstance(maps, list) or len(maps) != 1 or not isinstance(maps[0], dict):
            raise ConfigError(
                f"table '{table}': streamConfigMaps must hold exactly one stream config"
            )
        return load_stream(
            maps[0], "ingestionConfig.streamIngestionConfig.streamConfigMaps[0]", table=table
        )
    if not isinstance(legacy, dict):
        raise ConfigError(
            f"table '{table}' has no stream: a REALTIME table needs "
            "tableIndexConfig.streamConfigs (or ingestionConfig.streamIngestionConfig."
            "streamConfigMaps)"
        )
    return load_stream(legacy, "tableIndexConfig.streamConfigs", table=table)


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False)

"""Pinot realtime tables (seeds 002, 003), as users write them: a schema JSON and a table
config JSON, checked once into frozen :class:`PinotSchema` and :class:`PinotTableConfig`.

Every key of the two documents is known: a key sparkpipes does not know is an error naming
it and the nearest known one, at its place (``tableIndexConfig.streamConfigs``). Keys Pinot
uses only for its own servers (``loadMode``, ``replicasPerPartition``, ``tenants``,
``metadata``, ``stream.kafka.zk.broker.url`` …) are accepted and kept, and change nothing;
:attr:`PinotTableConfig.notes` says which. Empty strings (seed 002's SSL example leaves
most values empty) mean "not given".

Secrets — the password in ``sasl.jaas.config``, ``ssl.*.password``, the schema registry's
``basic.auth.user.info`` — become :class:`Secret` values; :meth:`PinotTableConfig.shown`
is the config with them redacted, which is all the catalog keeps and all any surface
shows. The JAAS string itself is never handed to the Kafka client: its user name and
password are taken out of it.

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

from sparkpipes.config.core import REDACTED, Secret, parse_json_object, reject_unknown
from sparkpipes.errors import ConfigError

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
FIELD_KEYS = (
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
)
TIME_UNITS_MS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
#: column names ``metadata.populate`` fills from the record instead of its payload
METADATA_PREFIXES = ("__key", "__header$", "__metadata$")
METADATA_COLUMNS = (
    "__key",
    "__metadata$offset",
    "__metadata$partition",
    "__metadata$recordTimestamp",
)


def is_metadata_column(name: str) -> bool:
    return name in METADATA_COLUMNS or name.startswith("__header$")


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


# -- stream configs -----------------------------------------------------------------------
#: what ``stream.<type>.decoder.class.name`` may name (``shaded.`` and version variants
#: are the same class) and the decoder each is
DECODERS = {
    "KafkaJSONMessageDecoder": "json",
    "JSONMessageDecoder": "json",
    "SimpleAvroMessageDecoder": "avro",
    "KafkaAvroMessageDecoder": "avro-registry",
    "KafkaConfluentSchemaRegistryAvroMessageDecoder": "avro-registry",
}
_PINOT_CLASS = re.compile(
    r"(?:shaded\.)?org\.apache\.pinot\.(?:plugin\.[a-z.]+|core\.realtime\.impl\.[a-z0-9.]+)"
    r"\.(?P<name>[A-Za-z0-9]+)"
)
_KAFKA_FACTORY = re.compile(
    r"(?:shaded\.)?org\.apache\.pinot\.(?:plugin\.stream|core\.realtime\.impl)"
    r"\.kafka(?:\d\d?)?\.KafkaConsumerFactory"
)
#: Kafka client keys a streamConfigs may give at its top level (seed 002's SSL / SASL
#: examples) and what each becomes in the client
CLIENT_KEYS = {
    "security.protocol": "security.protocol",
    "sasl.mechanism": "sasl.mechanism",
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.keystore.location": "ssl.keystore.location",
    "ssl.ca.location": "ssl.ca.location",
    "ssl.certificate.location": "ssl.certificate.location",
    "ssl.key.location": "ssl.key.location",
    "ssl.endpoint.identification.algorithm": "ssl.endpoint.identification.algorithm",
}
#: secrets among them, and the client key each becomes
CLIENT_SECRETS = {
    "ssl.keystore.password": "ssl.keystore.password",
    "ssl.key.password": "ssl.key.password",
}
#: accepted, not used by the Kafka client (Java keystore formats, JVM TLS protocol)
CLIENT_IGNORED = (
    "ssl.truststore.password",
    "ssl.truststore.type",
    "ssl.keystore.type",
    "ssl.protocol",
    "ssl.enabled.protocols",
)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: keys after ``stream.<type>.`` (besides consumer.prop.* and decoder.prop.*)
STREAM_KEYS = (
    "consumer.type",
    "topic.name",
    "broker.list",
    "decoder.class.name",
    "consumer.factory.class.name",
    "schema.registry.url",
    "isolation.level",
    "zk.broker.url",
    "connection.timeout.millis",
    "fetch.timeout.millis",
    "metadata.populate",
)
TOP_KEYS = (
    "streamType",
    "schema.registry.url",
    "sasl.jaas.config",
    "metadata.populate",
    "realtime.segment.flush.threshold.rows",
    "realtime.segment.flush.threshold.time",
    "realtime.segment.flush.threshold.segment.size",
    "realtime.segment.flush.threshold.size",
    "realtime.segment.flush.autotune.initialRows",
    "realtime.segment.flush.desired.size",
    "realtime.segment.flush.threshold.segment.rows",
    *CLIENT_KEYS,
    *CLIENT_SECRETS,
    *CLIENT_IGNORED,
)
#: decoder props (after ``stream.<type>.decoder.prop.``)
DECODER_PROPS = (
    "schema",
    "schema.registry.rest.url",
    "basic.auth.credentials.source",
    "schema.registry.basic.auth.credentials.source",
    "schema.registry.basic.auth.user.info",
    "schema.registry.ssl.truststore.location",
    "schema.registry.ssl.keystore.location",
    "schema.registry.ssl.truststore.password",
    "schema.registry.ssl.keystore.password",
    "schema.registry.ssl.keystore.type",
    "schema.registry.ssl.truststore.type",
    "schema.registry.ssl.key.password",
    "schema.registry.ssl.protocol",
)
#: ``stream.<type>.consumer.prop.*`` keys and what each becomes in the client (offset
#: reset is the pipeline's start, not a client key)
CONSUMER_PROPS = {
    "auto.offset.reset": None,
    "isolation.level": "isolation.level",
    "fetch.min.bytes": "fetch.min.bytes",
    "fetch.max.bytes": "fetch.max.bytes",
    "max.partition.fetch.bytes": "max.partition.fetch.bytes",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "client.id": "client.id",
    "socket.timeout.ms": "socket.timeout.ms",
}
OFFSET_RESETS = {
    "smallest": "earliest",
    "earliest": "earliest",
    "largest": "latest",
    "latest": "latest",
}
_JAAS = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;]+))""")
_DURATION = re.compile(r"(?i)^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_SIZE = re.compile(r"(?i)^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*$")


@dataclass(frozen=True)
class FlushThresholds:
    """``realtime.segment.flush.threshold.*``: when a partition's small files are
    compacted into segment-sized ones. ``rows`` 0 (or absent) means size-driven."""

    rows: int = 0
    time_ms: int = 6 * 3_600_000
    segment_bytes: int = 200 * 1024 * 1024
    initial_rows: int = 100_000


@dataclass(frozen=True)
class StreamConfig:
    """One ``streamConfigs`` map, checked.

    ``client`` holds Kafka client keys (librdkafka spelling) and ``secrets`` the client's
    secret keys (``sasl.username``, ``sasl.password``, keystore passwords); ``registry``
    and ``registry_secrets`` the schema registry client's. ``start`` is where a new
    table's partitions begin (``earliest`` for ``smallest``)."""

    stream_type: str
    topic: str
    brokers: str | None
    decoder: str  # json, avro, avro-registry
    avro_schema: str | None = None
    registry_url: str | None = None
    registry: Mapping[str, str] = field(default_factory=dict)
    registry_secrets: Mapping[str, Secret] = field(default_factory=dict)
    start: str = "latest"
    client: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, Secret] = field(default_factory=dict)
    metadata_populate: bool = False
    connection_timeout_ms: int | None = None
    fetch_timeout_ms: int | None = None
    flush: FlushThresholds = FlushThresholds()
    notes: tuple[str, ...] = ()


def load_stream(d: Mapping[str, Any], where: str, *, table: str) -> StreamConfig:
    """One ``streamConfigs`` map (all values strings, as in Pinot)."""
    given = {k: _text(v, f"{where}.{k}") for k, v in d.items()}
    given = {k: v for k, v in given.items() if v != ""}
    stype = given.get("streamType")
    if not stype:
        raise ConfigError(f'{where} needs streamType (e.g. "streamType": "kafka")')
    if stype != "kafka":
        raise ConfigError(
            f"{where}: streamType '{stype}' has no stream plugin here (streamType kafka is "
            "built in)"
        )
    p = f"stream.{stype}."
    known = [
        *TOP_KEYS,
        *(p + k for k in STREAM_KEYS),
        *(p + "decoder.prop." + k for k in DECODER_PROPS),
        *(p + "consumer.prop." + k for k in CONSUMER_PROPS),
        "kafka.isolation.level",
    ]
    reject_unknown(given, known, what=f"key of {where}")
    notes: list[str] = []

    ctype = given.get(p + "consumer.type", "lowlevel")
    if ctype.lower() in ("highlevel", "high_level"):
        raise ConfigError(
            f"{where}: {p}consumer.type highlevel is not supported (nor by Pinot since "
            "0.10): use lowlevel, which reads each partition with its own offsets"
        )
    if ctype.lower() not in ("lowlevel", "low_level", "simple"):
        raise ConfigError(f"{where}: {p}consumer.type must be lowlevel, got '{ctype}'")
    topic = given.get(p + "topic.name")
    if not topic:
        raise ConfigError(f"{where} needs {p}topic.name")
    brokers = given.get(p + "broker.list")
    if not brokers:
        raise ConfigError(f"{where} needs {p}broker.list (host:port of the Kafka brokers)")
    factory = given.get(p + "consumer.factory.class.name")
    if factory and not _KAFKA_FACTORY.fullmatch(factory):
        raise ConfigError(
            f"{where}: {p}consumer.factory.class.name '{factory}' is not a Kafka consumer "
            "factory (e.g. org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory)"
        )
    if p + "zk.broker.url" in given:
        notes.append(f"{p}zk.broker.url is not used: brokers come from {p}broker.list")

    decoder, avro_schema = _decoder(given, p, where)
    registry_url = (
        given.get(p + "schema.registry.url")
        or given.get(p + "decoder.prop.schema.registry.rest.url")
        or given.get("schema.registry.url")
    )
    if decoder == "avro-registry" and not registry_url:
        raise ConfigError(
            f"{where}: the schema registry decoder needs {p}schema.registry.url (or "
            f"{p}decoder.prop.schema.registry.rest.url)"
        )
    registry, registry_secrets = _registry(given, p + "decoder.prop.", where)

    start = "latest"
    reset = given.get(p + "consumer.prop.auto.offset.reset")
    if reset is not None:
        if reset.lower() not in OFFSET_RESETS:
            raise ConfigError(
                f"{where}: {p}consumer.prop.auto.offset.reset must be smallest or largest, "
                f"got '{reset}'"
            )
        start = OFFSET_RESETS[reset.lower()]
    client: dict[str, str] = {}
    secrets: dict[str, Secret] = {}
    for k, v in given.items():
        if k.startswith(p + "consumer.prop."):
            target = CONSUMER_PROPS[k[len(p + "consumer.prop.") :]]
            if target:
                client[target] = v
    level = given.get(p + "isolation.level") or given.get("kafka.isolation.level")
    if level is not None:
        if level not in ("read_committed", "read_uncommitted"):
            raise ConfigError(
                f"{where}: {p}isolation.level must be read_committed or read_uncommitted, "
                f"got '{level}'"
            )
        client["isolation.level"] = level
    else:
        client.setdefault("isolation.level", "read_uncommitted")  # Pinot's default
    _security(given, where, client, secrets, notes)
    timeouts = {}
    for key in ("connection.timeout.millis", "fetch.timeout.millis"):
        if p + key in given:
            timeouts[key] = _millis(given[p + key], f"{where}: {p}{key}")
    if "connection.timeout.millis" in timeouts:
        client["socket.connection.setup.timeout.ms"] = str(
            max(1000, timeouts["connection.timeout.millis"])
        )
    populate = given.get("metadata.populate", given.get(p + "metadata.populate", "false"))
    if populate.lower() not in ("true", "false"):
        raise ConfigError(f"{where}: metadata.populate must be true or false, got '{populate}'")
    return StreamConfig(
        stream_type=stype,
        topic=topic,
        brokers=brokers,
        decoder=decoder,
        avro_schema=avro_schema,
        registry_url=registry_url if decoder == "avro-registry" else None,
        registry=registry,
        registry_secrets=registry_secrets,
        start=start,
        client=client,
        secrets=secrets,
        metadata_populate=populate.lower() == "true",
        connection_timeout_ms=timeouts.get("connection.timeout.millis"),
        fetch_timeout_ms=timeouts.get("fetch.timeout.millis"),
        flush=_flush(given, where),
        notes=tuple(notes),
    )


def _text(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise ConfigError(f"{where} must be a string (streamConfigs values are strings)")


def _decoder(given: Mapping[str, str], p: str, where: str) -> tuple[str, str | None]:
    name = given.get(p + "decoder.class.name")
    if not name:
        raise ConfigError(
            f"{where} needs {p}decoder.class.name (e.g. "
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder)"
        )
    m = _PINOT_CLASS.fullmatch(name)
    kind = DECODERS.get(m.group("name")) if m else None
    if kind is None:
        raise ConfigError(
            f"{where}: decoder '{name}' is not one sparkpipes has (JSON: "
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder; Avro: "
            "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder; Avro with a "
            "schema registry: org.apache.pinot.plugin.inputformat.avro.confluent."
            "KafkaConfluentSchemaRegistryAvroMessageDecoder)"
        )
    schema = given.get(p + "decoder.prop.schema")
    if kind == "avro":
        if not schema:
            raise ConfigError(
                f"{where}: The Avro schema must be provided: SimpleAvroMessageDecoder needs "
                f"{p}decoder.prop.schema (the schema JSON, or the path of an .avsc file)"
            )
        if not schema.lstrip().startswith("{"):
            try:
                with open(schema, encoding="utf-8") as f:
                    schema = f.read()
            except OSError as e:
                raise ConfigError(
                    f"{where}: cannot read the Avro schema file '{schema}' named by "
                    f"{p}decoder.prop.schema: {e.strerror}"
                ) from None
        from sparkpipes.formats.avro import parsed

        try:
            parsed(schema)
        except ConfigError as e:
            raise ConfigError(f"{where}: {p}decoder.prop.schema: {e.message}") from None
    return kind, schema if kind == "avro" else None


def _registry(
    given: Mapping[str, str], prefix: str, where: str
) -> tuple[dict[str, str], dict[str, Secret]]:
    """The registry client's options (``schema.registry.``-prefixed keys of
    ``formats.avro.registry_client``) from Pinot's decoder props."""
    opts: dict[str, str] = {}
    secrets: dict[str, Secret] = {}
    pr = prefix + "schema.registry."
    for kind in ("truststore", "keystore"):
        t = given.get(f"{pr}ssl.{kind}.type")
        if t and t.upper() != "PEM":
            raise ConfigError(
                f"{where}: {pr}ssl.{kind}.type {t} is a Java keystore format; the registry "
                "client here reads PEM files: give a PEM file and type PEM"
            )
    trust = given.get(pr + "ssl.truststore.location")
    if trust:
        opts["schema.registry.ssl.ca.location"] = _pem(trust, pr + "ssl.truststore.location", where)
    keystore = given.get(pr + "ssl.keystore.location")
    if keystore:
        path = _pem(keystore, pr + "ssl.keystore.location", where, need_key=True)
        opts["schema.registry.ssl.certificate.location"] = path
        opts["schema.registry.ssl.key.location"] = path
    source = given.get(prefix + "basic.auth.credentials.source") or given.get(
        pr + "basic.auth.credentials.source"
    )
    info = given.get(pr + "basic.auth.user.info")
    if source and source.upper() != "USER_INFO":
        raise ConfigError(
            f"{where}: basic.auth.credentials.source {source} is not supported; use USER_INFO "
            f"with {pr}basic.auth.user.info"
        )
    if info:
        if ":" not in info:
            raise ConfigError(f"{where}: {pr}basic.auth.user.info must be 'user:password'")
        secrets["schema.registry.basic.auth.user.info"] = Secret(info)
    return opts, secrets


def _pem(path: str, key: str, where: str, *, need_key: bool = False) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except OSError as e:
        raise ConfigError(f"{where}: cannot read {key} '{path}': {e.strerror}") from None
    if b"-----BEGIN" not in head:
        raise ConfigError(
            f"{where}: {key} '{path}' is not a PEM file (a Java keystore cannot be read here; "
            "convert it with keytool -exportcert -rfc / openssl pkcs12)"
        )
    if need_key and b"PRIVATE KEY-----" not in head:
        raise ConfigError(f"{where}: {key} '{path}' holds no private key")
    return path


def _security(
    given: Mapping[str, str],
    where: str,
    client: dict[str, str],
    secrets: dict[str, Secret],
    notes: list[str],
) -> None:
    proto = given.get("security.protocol")
    if proto is not None and proto.upper() not in SECURITY_PROTOCOLS:
        raise ConfigError(
            f"{where}: security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
            f"got '{proto}'"
        )
    for k, target in CLIENT_KEYS.items():
        if k in given:
            client[target] = given[k].upper() if k == "security.protocol" else given[k]
    for k, target in CLIENT_SECRETS.items():
        if k in given:
            secrets[target] = Secret(given[k])
    trust = given.get("ssl.truststore.location")
    if trust:
        _pem(trust, "ssl.truststore.location", where)
    keystore = given.get("ssl.keystore.location")
    if keystore and keystore.lower().endswith(".jks"):
        raise ConfigError(
            f"{where}: ssl.keystore.location '{keystore}' is a Java keystore; the Kafka "
            "client reads PKCS#12 (.p12) keystores or PEM files (ssl.certificate.location, "
            "ssl.key.location)"
        )
    ignored = [k for k in CLIENT_IGNORED if k in given]
    if ignored:
        notes.append(f"{', '.join(ignored)}: not used by the Kafka client (PEM and PKCS#12 files)")
    sasl = proto is not None and proto.upper().startswith("SASL")
    mech = given.get("sasl.mechanism")
    if mech is not None and mech.upper() not in SASL_MECHANISMS:
        raise ConfigError(
            f"{where}: sasl.mechanism must be one of {', '.join(SASL_MECHANISMS)}, got '{mech}'"
        )
    if mech is not None:
        client["sasl.mechanism"] = mech.upper()
    jaas = given.get("sasl.jaas.config")
    if jaas is not None:
        user, password = parse_jaas(jaas, where)
        secrets["sasl.username"], secrets["sasl.password"] = Secret(user), Secret(password)
    if sasl and jaas is None:
        raise ConfigError(
            f"{where}: security.protocol {proto} needs sasl.jaas.config with the user name "
            "and password"
        )
    if sasl and mech is None:
        client["sasl.mechanism"] = "PLAIN"  # Kafka's default


def parse_jaas(text: str, where: str) -> tuple[str, str]:
    """``<LoginModule> required username="u" password="p";`` → (user, password). The
    string is never echoed: it holds the password."""
    head = text.strip().split(None, 2)
    if len(head) < 2 or head[1] not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError(
            f"{where}: sasl.jaas.config must look like '<LoginModule> required "
            'username="…" password="…";\''
        )
    module = head[0].rsplit(".", 1)[-1]
    if module not in ("PlainLoginModule", "ScramLoginModule"):
        raise ConfigError(
            f"{where}: sasl.jaas.config login module {module} is not supported (PLAIN and "
            "SCRAM: PlainLoginModule, ScramLoginModule)"
        )
    values = {}
    for m in _JAAS.finditer(head[2] if len(head) > 2 else ""):
        values[m.group(1)] = next(g for g in m.groups()[1:] if g is not None)
    missing = [k for k in ("username", "password") if not values.get(k)]
    if missing:
        raise ConfigError(f"{where}: sasl.jaas.config has no {missing[0]}")
    return values["username"], values["password"]


def _millis(text: str, where: str) -> int:
    if not text.isdigit():
        raise ConfigError(f"{where} must be a whole number of milliseconds, got '{text}'")
    return int(text)


def parse_duration_ms(text: str, where: str) -> int:
    """``24h``, ``6h``, ``90m``, ``30s``, ``500ms``, ``2d`` (no unit: milliseconds)."""
    m = _DURATION.match(text)
    if not m:
        raise ConfigError(f"{where} must be a duration such as 6h, 30m or 24h, got '{text}'")
    unit = (m.group(2) or "ms").lower()
    scale = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[unit]
    return int(m.group(1)) * scale


def parse_size(text: str, where: str) -> int:
    """``50M``, ``500M``, ``1G``, ``200MB`` (no unit: bytes)."""
    m = _SIZE.match(text)
    if not m:
        raise ConfigError(f"{where} must be a size such as 50M or 1G, got '{text}'")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def _flush(given: Mapping[str, str], where: str) -> FlushThresholds:
    pre = "realtime.segment.flush."
    rows_text = given.get(pre + "threshold.rows") or given.get(pre + "threshold.segment.rows")
    rows = 0
    if rows_text is not None:
        if not rows_text.isdigit():
            raise ConfigError(f"{where}: {pre}threshold.rows must be a whole number of rows")
        rows = int(rows_text)
    f = FlushThresholds(rows=rows)
    if pre + "threshold.time" in given:
        f = _replace(
            f,
            time_ms=parse_duration_ms(
                given[pre + "threshold.time"], where + ": " + pre + "threshold.time"
            ),
        )
    size = (
        given.get(pre + "threshold.segment.size")
        or given.get(pre + "threshold.size")
        or given.get(pre + "desired.size")
    )
    if size is not None:
        f = _replace(
            f, segment_bytes=parse_size(size, where + ": " + pre + "threshold.segment.size")
        )
    initial = given.get(pre + "autotune.initialRows")
    if initial is not None:
        if not initial.isdigit():
            raise ConfigError(f"{where}: {pre}autotune.initialRows must be a whole number")
        f = _replace(f, initial_rows=int(initial))
    return f


def _replace(obj: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(obj, **changes)


# -- table config -------------------------------------------------------------------------
TABLE_KEYS = (
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
)
SEGMENTS_KEYS = (
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
)
INDEX_KEYS = (
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
)
INGESTION_KEYS = (
    "streamIngestionConfig",
    "transformConfigs",
    "filterConfig",
    "complexTypeConfig",
    "continueOnError",
    "rowTimeValueCheck",
    "segmentTimeValueCheck",
)
UPSERT_KEYS = (
    "mode",
    "comparisonColumn",
    "comparisonColumns",
    "partialUpsertStrategies",
    "defaultPartialUpsertStrategy",
    "hashFunction",
    "enableSnapshot",
    "enablePreload",
    "metadataTTL",
    "deleteRecordColumn",
)
PARTIAL_STRATEGIES = ("OVERWRITE", "IGNORE", "INCREMENT", "APPEND", "UNION", "MAX", "MIN")
RETENTION_UNITS = ("MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS")


@dataclass(frozen=True)
class UpsertConfig:
    """``upsertConfig``: FULL replaces the row with the same primary key, PARTIAL merges
    column by column. A record whose comparison value is smaller than the stored row's
    is ignored (ties: the later record wins); the time column is the default."""

    mode: str  # FULL, PARTIAL
    comparison: tuple[str, ...] = ()
    strategies: Mapping[str, str] = field(default_factory=dict)
    default_strategy: str = "OVERWRITE"
    delete_column: str | None = None


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


#: streamConfigs keys whose value is (or holds) a secret
def is_secret_key(key: str) -> bool:
    k = key.lower()
    return k.endswith("password") or k.endswith("user.info") or k == "sasl.jaas.config"


def redacted(doc: Any) -> Any:
    if isinstance(doc, Mapping):
        return {
            k: (REDACTED if is_secret_key(k) and v not in ("", None) else redacted(v))
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [redacted(v) for v in doc]
    return doc


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
        retention_ms=_retention(seg, base),
        transforms=tuple(transforms),
        filter=filt.get("filterFunction") or None,
        upsert=_upsert(d, schema, time_column, base),
        dedup=_dedup(d, schema, base),
        continue_on_error=bool(cont),
        raw=redacted(d),
    )


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


def _retention(seg: Mapping[str, Any], table: str) -> int | None:
    unit, value = seg.get("retentionTimeUnit"), seg.get("retentionTimeValue")
    if not unit and not value:
        return None
    if not unit or not value:
        raise ConfigError(
            f"table '{table}': retention needs both retentionTimeUnit and retentionTimeValue"
        )
    if str(unit).upper() not in RETENTION_UNITS:
        raise ConfigError(
            f"table '{table}': retentionTimeUnit must be one of {', '.join(RETENTION_UNITS)}"
        )
    text = str(value)
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"table '{table}': retentionTimeValue must be a positive whole number")
    return int(text) * int(TIME_UNITS_MS[str(unit).upper()])


def _upsert(
    d: Mapping[str, Any], schema: PinotSchema | None, time_column: str | None, table: str
) -> UpsertConfig | None:
    u = d.get("upsertConfig")
    if not u:
        return None
    if not isinstance(u, dict):
        raise ConfigError(f"table '{table}': upsertConfig must be an object")
    reject_unknown(u, UPSERT_KEYS, what="upsertConfig key")
    mode = str(u.get("mode", "FULL")).upper()
    if mode == "NONE":
        return None
    if mode not in ("FULL", "PARTIAL"):
        raise ConfigError(f"table '{table}': upsertConfig.mode must be FULL, PARTIAL or NONE")
    if schema is not None and not schema.primary_key:
        raise ConfigError(
            f"table '{table}': an upsert table needs primaryKeyColumns in schema '{schema.name}'"
        )
    comparison = u.get("comparisonColumns") or (
        [u["comparisonColumn"]] if u.get("comparisonColumn") else []
    )
    if not comparison and time_column:
        comparison = [time_column]
    strategies = {}
    for col, strat in (u.get("partialUpsertStrategies") or {}).items():
        if str(strat).upper() not in PARTIAL_STRATEGIES:
            raise ConfigError(
                f"table '{table}': partial upsert strategy {strat!r} of column '{col}' is not "
                f"one of {', '.join(PARTIAL_STRATEGIES)}"
            )
        strategies[col] = str(strat).upper()
    default = str(u.get("defaultPartialUpsertStrategy", "OVERWRITE")).upper()
    if default not in PARTIAL_STRATEGIES:
        raise ConfigError(
            f"table '{table}': defaultPartialUpsertStrategy must be one of "
            f"{', '.join(PARTIAL_STRATEGIES)}"
        )
    if schema is not None:
        for c in [*comparison, *strategies]:
            schema.field(c)
        if u.get("deleteRecordColumn"):
            schema.field(u["deleteRecordColumn"])
        for c in strategies:
            if c in schema.primary_key:
                raise ConfigError(
                    f"table '{table}': primary key column '{c}' cannot have a partial upsert "
                    "strategy"
                )
    return UpsertConfig(
        mode=mode,
        comparison=tuple(comparison),
        strategies=strategies,
        default_strategy=default,
        delete_column=u.get("deleteRecordColumn") or None,
    )


def _dedup(d: Mapping[str, Any], schema: PinotSchema | None, table: str) -> bool:
    c = d.get("dedupConfig")
    if not c:
        return False
    if not isinstance(c, dict):
        raise ConfigError(f"table '{table}': dedupConfig must be an object")
    reject_unknown(
        c,
        ("dedupEnabled", "hashFunction", "metadataTTL", "dedupTimeColumn"),
        what="dedupConfig key",
    )
    enabled = bool(c.get("dedupEnabled", False))
    if (
        enabled
        and d.get("upsertConfig")
        and str(d["upsertConfig"].get("mode", "FULL")).upper() != "NONE"
    ):
        raise ConfigError(f"table '{table}': a table is either upsert or dedup, not both")
    if enabled and schema is not None and not schema.primary_key:
        raise ConfigError(
            f"table '{table}': a dedup table needs primaryKeyColumns in schema '{schema.name}'"
        )
    return enabled


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False)

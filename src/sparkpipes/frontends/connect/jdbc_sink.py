"""Confluent's JDBC sink connector (``io.confluent.connect.jdbc.JdbcSinkConnector``) as
its users configure it: every key of its ``JdbcSinkConfig`` honoured, accepted as not
applicable (with why), or refused by name, checked all at once into a frozen
:class:`JdbcSink` (``model`` builds the connector around it; ``jdbc_lowering`` makes
its pipelines). Sources: ``JdbcSinkConfig``, ``JdbcSinkConnectorValidation``,
``FieldsMetadata``, ``RecordValidator`` and ``BufferedRecords`` of
confluentinc/kafka-connect-jdbc; messages are the connector's own where it has one.

Honoured: ``connection.url`` (PostgreSQL, MySQL, MariaDB, SQLite; a password in it is
sealed, the URL shown ``<redacted>``; its TLS and time-out parameters read as the JDBC
source reads them — ``jdbc_url``, ``jdbc_tls`` — and used by the database sink's
connections: ``sinks.database_tables``), ``connection.user`` / ``connection.password``,
``dialect.name`` (when it names the URL's dialect), ``insert.mode`` (``insert``,
``upsert``, ``update``), ``pk.mode`` / ``pk.fields``, ``delete.enabled``,
``fields.whitelist``, ``table.name.format`` (``${topic}``; ``schema.table``),
``auto.create``, ``auto.evolve``, ``quote.sql.identifiers`` (``never``: PostgreSQL
folds names to lower case), ``db.timezone`` / ``date.timezone``, ``table.types``,
``string.output.value.column.name``, ``max.retries`` (default 10), the key converter
(``key.converter``: it reads ``pk.mode=record_key``'s key) and ``date.calendar.system``
``PROLEPTIC_GREGORIAN``.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

from sparkpipes.config import REDACTED, Secret, urls
from sparkpipes.config.transforms import PK_MODES
from sparkpipes.errors import ConfigError
from sparkpipes.sources.connect.jdbc_dialects import Database, parse_url

CLASS = "io.confluent.connect.jdbc.JdbcSinkConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
AVRO_CONVERTER = "io.confluent.connect.avro.AvroConverter"
#: key converter class → how ``formats.connect`` reads a key (Kafka's primitive
#: converters too: a key is often a number or bytes)
_PRIMITIVES = "org.apache.kafka.connect.converters."
KEY_CONVERTERS = {
    JSON_CONVERTER: "json",
    STRING_CONVERTER: "string",
    AVRO_CONVERTER: "avro",
    f"{_PRIMITIVES}LongConverter": "long",
    f"{_PRIMITIVES}IntegerConverter": "integer",
    f"{_PRIMITIVES}ShortConverter": "short",
    f"{_PRIMITIVES}DoubleConverter": "double",
    f"{_PRIMITIVES}FloatConverter": "float",
    f"{_PRIMITIVES}ByteArrayConverter": "bytes",
}
INSERT_MODES = ("insert", "upsert", "update")
#: the URL's scheme → the database sink's dialect, and the name of Confluent's dialect
DIALECTS = {
    "postgresql": ("postgresql", "PostgreSqlDatabaseDialect"),
    "mysql": ("mysql", "MySqlDatabaseDialect"),
    "mariadb": ("mysql", "MySqlDatabaseDialect"),
    "sqlite": ("sqlite", "SqliteDatabaseDialect"),
}
TABLE_TYPES = ("TABLE", "PARTITIONED TABLE", "VIEW")
DEFAULT_PROVIDER = "io.confluent.connect.jdbc.util.DefaultJdbcCredentialsProvider"
#: Confluent's defaults
MAX_RETRIES = 10
DEFAULT_KAFKA_PK_NAMES = ("__connect_topic", "__connect_partition", "__connect_offset")

#: the keys read here (besides Connect's own, which ``model`` reads)
KEYS = frozenset(
    {
        "connection.url",
        "connection.user",
        "connection.password",
        "dialect.name",
        "insert.mode",
        "delete.enabled",
        "pk.mode",
        "pk.fields",
        "fields.whitelist",
        "table.name.format",
        "auto.create",
        "auto.evolve",
        "quote.sql.identifiers",
        "db.timezone",
        "date.timezone",
        "table.types",
        "string.output.value.column.name",
        "max.retries",
        "date.calendar.system",
        "timestamp.fields.list",
        "timestamp.precision.mode",
        "jdbc.credentials.provider.class",
        "key.converter",
        "key.converter.schemas.enable",
        "key.converter.schema.registry.url",
        *(
            "batch.size",
            "connection.attempts",
            "connection.backoff.ms",
            "retry.backoff.ms",
            "trim.sensitive.log",
            "mssql.use.merge.holdlock",
            "replace.null.with.default",
        ),
    }
)
SECRET_KEYS = frozenset({"connection.password"})
#: accepted, kept, shown back, and why each changes nothing here
NOT_APPLICABLE: dict[str, str] = {
    "batch.size": (
        "how many records Confluent's task binds into one JDBC statement batch; here a "
        "batch is one transaction of all its records, whatever this says"
    ),
    "connection.attempts": (
        "how often Confluent's task tries to connect; a batch that cannot reach the "
        "database is retried with the pipeline's backoff (max.retries)"
    ),
    "connection.backoff.ms": (
        "the wait between Confluent's connection attempts; a batch that cannot reach the "
        "database is retried with the pipeline's exponential backoff (0.25 s doubling, at "
        "most 10 s)"
    ),
    "retry.backoff.ms": (
        "a failed batch is retried with the pipeline's exponential backoff (0.25 s "
        "doubling, at most 10 s)"
    ),
    "trim.sensitive.log": "what Confluent's task writes to Connect's worker log",
    "mssql.use.merge.holdlock": "a SQL Server MERGE option; this connector writes no SQL Server",
    "replace.null.with.default": (
        "null fields are written as null: the record schemas read here carry no field "
        "defaults that would replace them (the JsonConverter's envelope and Avro unions "
        "with a null default)"
    ),
}
_CHOICES = {
    "insert.mode": INSERT_MODES,
    "pk.mode": PK_MODES,
    "date.timezone": ("DB_TIMEZONE", "UTC"),
    "quote.sql.identifiers": ("always", "never"),
    "timestamp.precision.mode": ("MICROSECONDS", "NANOSECONDS"),
    "date.calendar.system": ("LEGACY", "PROLEPTIC_GREGORIAN"),
}


@dataclass(frozen=True)
class JdbcSink:
    """The JDBC sink's own settings, checked (see the module docstring). ``database``
    is where ``connection.url`` points, its password sealed."""

    database: Database
    #: ``connection.url`` as shown (its secrets ``<redacted>``) and its sealed secrets (the
    #: password and any key store passwords, ``config.urls.split``'s form; None when the
    #: URL showed them ``<redacted>``: the stored ones are kept): the database sink reads
    #: its TLS and time-outs from them again, as this check did
    url: str = ""
    url_secret: Secret | None = None
    insert_mode: str = "insert"
    pk_mode: str = "none"
    pk_fields: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    deletes: bool = False
    auto_create: bool = False
    auto_evolve: bool = False
    table_format: str = "${topic}"
    quote: bool = True
    timezone: str = "UTC"
    dates_in_utc: bool = False
    key_converter: str = "json"
    key_schemas: bool = True
    string_column: str = "record_value"
    table_types: tuple[str, ...] = ("TABLE",)
    max_retries: int = MAX_RETRIES

    @property
    def hides_tokens(self) -> bool:
        """Whether the URL shows secrets other than the login's password (a key store's
        password) ``<redacted>`` without their sealed values."""
        return self.url_secret is None and REDACTED in urls.restore(self.url, "-")

    @property
    def dialect(self) -> str:
        """The database sink's dialect: ``postgresql``, ``mysql`` or ``sqlite``."""
        return DIALECTS[self.database.scheme][0]

    def name(self, text: str) -> str:
        """A table or column name as the database will hold it: unquoted names
        (``quote.sql.identifiers=never``) are folded to lower case by PostgreSQL."""
        return text.lower() if not self.quote and self.dialect == "postgresql" else text

    def table_of(self, topic: str) -> tuple[str | None, str]:
        """``(schema, table)`` of a topic's records, as Confluent's sink names it:
        ``table.name.format`` with ``${topic}``, then split on dots as its dialects
        parse a table identifier (``schema.table``; PostgreSQL's
        ``database.schema.table`` of this database)."""
        name = self.table_format.replace("${topic}", topic)
        if not name:
            raise ConfigError(
                f"Destination table name for topic '{topic}' is empty using the format "
                f"string '{self.table_format}'"
            )
        parts = [self.name(p.strip('"`')) for p in _identifier_parts(name)]
        if len(parts) == 3 and self.dialect == "postgresql" and parts[0] == self.database.database:
            parts = parts[1:]
        if len(parts) > 2 or (len(parts) == 2 and self.dialect == "sqlite"):
            raise ConfigError(
                f"table '{name}' of topic '{topic}' (table.name.format "
                f"'{self.table_format}') is read as {'.'.join(parts[:-1])} and table "
                f"'{parts[-1]}', as Confluent's connector splits a name on its dots, which "
                f"{self.database.kind} does not have here: route the topic to another name "
                "(RegexRouter) or change table.name.format"
            )
        if len(parts) == 2:
            return parts[0], parts[1]
        return self.database.schema, parts[0]


def _identifier_parts(name: str) -> list[str]:
    """A table identifier's dot-separated parts (dots inside quotes kept)."""
    return [p for p in re.findall(r'"[^"]*"|`[^`]*`|[^.]+', name)]


def _bool(cfg: Mapping[str, str], key: str, default: bool, problems: list) -> bool:
    value = cfg.get(key)
    if value is None:
        return default
    text = value.strip().lower()
    if text not in ("true", "false"):
        problems.append(
            (
                key,
                f"Invalid value {value} for configuration {key}: Expected value to be "
                "either true or false",
            )
        )
        return default
    return text == "true"


def _int(cfg: Mapping[str, str], key: str, default: int, low: int, problems: list) -> int:
    value = cfg.get(key)
    if value is None:
        return default
    try:
        out = int(value.strip())
    except ValueError:
        problems.append((key, f"Invalid value {value} for configuration {key}: Not a number"))
        return default
    if out < low:
        problems.append(
            (key, f"Invalid value {out} for configuration {key}: Value must be at least {low}")
        )
        return default
    return out


def _list(cfg: Mapping[str, str], key: str) -> tuple[str, ...]:
    """Connect's LIST: comma-separated, trimmed, empty items dropped."""
    return tuple(p.strip() for p in cfg.get(key, "").split(",") if p.strip())


def _choice(cfg: Mapping[str, str], key: str, default: str, problems: list) -> str:
    value = cfg.get(key)
    if value is None:
        return default
    allowed = _CHOICES[key]
    found = next((a for a in allowed if a.lower() == value.strip().lower()), None)
    if found is None:
        problems.append(
            (
                key,
                f"Invalid value {value} for configuration {key}: Invalid enumerator "
                f"(one of {', '.join(allowed)})",
            )
        )
        return default
    return found


def check(
    cfg: Mapping[str, str],
    url_password: Secret | None,
    *,
    value_converter: str,
    value_schemas: bool,
) -> tuple[JdbcSink | None, list[tuple[str | None, str]]]:
    """The JDBC sink's settings of ``cfg`` (URL passwords lifted out, ``url_password``
    the sealed one) and every problem, each naming its key (None when there is one)."""
    problems: list[tuple[str | None, str]] = []
    database, url_secret = _database(cfg, url_password, problems)
    insert_mode = _choice(cfg, "insert.mode", "insert", problems)
    pk_mode = _choice(cfg, "pk.mode", "none", problems)
    pk_fields = _list(cfg, "pk.fields")
    deletes = _bool(cfg, "delete.enabled", False, problems)
    if deletes and pk_mode != "record_key":  # JdbcSinkConnectorValidation
        why = "Deletes are only supported for pk.mode record_key"
        problems += [("pk.mode", why), ("delete.enabled", why)]
    if insert_mode in ("upsert", "update") and pk_mode == "none":
        problems.append(
            (
                "insert.mode",
                f"Write to table in {insert_mode.upper()} mode requires key field names to "
                "be known, check the primary key configuration (pk.mode is none)",
            )
        )
    if pk_mode == "kafka" and len(pk_fields) not in (0, 3):
        problems.append(
            (
                "pk.fields",
                "PK mode is KAFKA so there should either be no field names defined for "
                f"defaults {list(DEFAULT_KAFKA_PK_NAMES)} to be applicable, or exactly 3, "
                f"defined fields are: {list(pk_fields)}",
            )
        )
    key_class = cfg.get("key.converter", JSON_CONVERTER).strip()
    key_converter = KEY_CONVERTERS.get(key_class)
    if key_converter is None:
        problems.append(
            (
                "key.converter",
                f"key.converter must be one of {', '.join(KEY_CONVERTERS)}, got '{key_class}'",
            )
        )
    key_schemas = _bool(cfg, "key.converter.schemas.enable", True, problems)
    key_registry = cfg.get("key.converter.schema.registry.url", "").strip() or None
    value_registry = cfg.get("value.converter.schema.registry.url", "").strip() or None
    if key_converter == "avro" and not key_registry:
        problems.append(
            (
                "key.converter",
                f"key.converter {AVRO_CONVERTER} needs key.converter.schema.registry.url",
            )
        )
    if key_registry and value_registry and key_registry != value_registry:
        problems.append(
            (
                "key.converter.schema.registry.url",
                "a key schema registry other than the "
                "value's (value.converter.schema.registry.url) is not supported",
            )
        )
    if pk_mode == "record_key" or deletes:
        if key_converter == "json" and not key_schemas:
            problems.append(
                (
                    "key.converter.schemas.enable",
                    f"PK mode is {pk_mode.upper()}, but record key "
                    "schema is missing: the JsonConverter with schemas.enable=false reads keys "
                    "without a schema, which Confluent's connector refuses for every record",
                )
            )
        primitive = key_converter not in ("json", "avro")
        if primitive and pk_mode == "record_key" and len(pk_fields) != 1:
            problems.append(
                (
                    "pk.fields",
                    "Need exactly one PK column defined since the key schema for "
                    f"records is a primitive type, defined columns are: {list(pk_fields)}",
                )
            )
    string_value = value_converter == STRING_CONVERTER
    if value_converter == JSON_CONVERTER and not value_schemas:
        problems.append(
            (
                "value.converter.schemas.enable",
                "Confluent's JDBC sink requires records with a "
                "non-null Struct or String value and non-null Struct or String schema: the "
                "JsonConverter with schemas.enable=false gives none (send the converter's "
                '{"schema", "payload"} envelope, or use Avro)',
            )
        )
    if string_value and pk_mode == "record_value":
        problems.append(
            ("pk.mode", "pk.mode record_value is not supported with String value schemas")
        )
    fields = _list(cfg, "fields.whitelist")
    if string_value and fields:
        problems.append(
            (
                "fields.whitelist",
                "field-level options are not applicable to String values: "
                "fields.whitelist. Remove these options, or have the upstream producer emit "
                "Struct values instead.",
            )
        )
    table_format = cfg.get("table.name.format", "${topic}").strip()
    if not table_format:
        problems.append(
            (
                "table.name.format",
                "Invalid value  for configuration table.name.format: String must be non-empty",
            )
        )
    quote = _choice(cfg, "quote.sql.identifiers", "always", problems) == "always"
    zone = cfg.get("db.timezone", "UTC").strip()
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        problems.append(
            (
                "db.timezone",
                f"Invalid value {zone} for configuration db.timezone: Invalid time zone.",
            )
        )
        zone = "UTC"
    dates = _choice(cfg, "date.timezone", "DB_TIMEZONE", problems)
    types = tuple(t.upper() for t in _list(cfg, "table.types")) or ("TABLE",)
    for t in types:
        if t not in TABLE_TYPES:
            problems.append(
                ("table.types", f"table.types '{t}' is not one of {', '.join(TABLE_TYPES)}")
            )
    _choice(cfg, "timestamp.precision.mode", "MICROSECONDS", problems)
    if _list(cfg, "timestamp.fields.list"):
        problems.append(
            (
                "timestamp.fields.list",
                "timestamp.fields.list (long or string fields converted "
                "to timestamps) is not supported: convert them with a TimestampConverter "
                "transform",
            )
        )
    _choice(cfg, "date.calendar.system", "LEGACY", problems)
    provider = cfg.get("jdbc.credentials.provider.class", DEFAULT_PROVIDER).strip()
    if provider != DEFAULT_PROVIDER:
        problems.append(
            (
                "jdbc.credentials.provider.class",
                f"jdbc.credentials.provider.class '{provider}' "
                "is not supported: give connection.user and connection.password",
            )
        )
    dialect = cfg.get("dialect.name", "").strip()
    if dialect and database is not None and dialect != DIALECTS[database.scheme][1]:
        problems.append(
            (
                "dialect.name",
                f"dialect.name '{dialect}' is not the dialect of connection.url "
                f"({DIALECTS[database.scheme][1]}): another dialect's SQL is not supported",
            )
        )
    for key in ("batch.size", "retry.backoff.ms"):
        _int(cfg, key, 0, 0, problems)
    max_retries = _int(cfg, "max.retries", MAX_RETRIES, 0, problems)
    auto_create = _bool(cfg, "auto.create", False, problems)
    auto_evolve = _bool(cfg, "auto.evolve", False, problems)
    _int(cfg, "connection.attempts", 3, 1, problems)
    _int(cfg, "connection.backoff.ms", 0, -(2**63), problems)
    for key in ("trim.sensitive.log", "mssql.use.merge.holdlock", "replace.null.with.default"):
        _bool(cfg, key, True, problems)
    string_column = cfg.get("string.output.value.column.name", "record_value").strip()
    if not string_column:
        problems.append(
            (
                "string.output.value.column.name",
                "Invalid value  for configuration "
                "string.output.value.column.name: String must be non-empty",
            )
        )
    if database is None or problems:
        return None, problems
    return (
        JdbcSink(
            database=database,
            url=cfg.get("connection.url", "").strip(),
            url_secret=url_secret,
            insert_mode=insert_mode,
            pk_mode=pk_mode,
            pk_fields=pk_fields,
            fields=fields,
            deletes=deletes,
            auto_create=auto_create,
            auto_evolve=auto_evolve,
            table_format=table_format,
            quote=quote,
            timezone=zone,
            dates_in_utc=dates == "UTC",
            key_converter=key_converter or "json",
            key_schemas=key_schemas,
            string_column=string_column,
            table_types=types,
            max_retries=max_retries,
        ),
        problems,
    )


def _database(
    cfg: Mapping[str, str], url_password: Secret | None, problems: list
) -> tuple[Database | None, Secret | None]:
    """Where ``connection.url`` points (a database this sink writes), and the URL's
    sealed secrets."""
    url = cfg.get("connection.url", "").strip()
    if not url:
        problems.append(
            (
                "connection.url",
                'Missing required configuration "connection.url" which has no default value.',
            )
        )
        return None, None
    given = cfg.get("connection.password")
    own = url_password  # the URL's own secrets (None: none, or shown <redacted>)
    if url_password is None and urls.is_redacted(url):
        # GET …/config's form: the password given beside it, or the stored one (kept)
        url_password = Secret(given) if given else Secret(REDACTED)
    try:
        database = parse_url(
            url,
            cfg.get("connection.user") or None,
            Secret(given) if given else None,
            None,
            url_password,
        )
    except ConfigError as e:
        problems.append(("connection.url", e.message))
        return None, None
    if database.scheme not in DIALECTS:
        problems.append(
            (
                "connection.url",
                f"{database.kind} is not supported as a JDBC sink's database "
                "(PostgreSQL, MySQL, MariaDB and SQLite are)",
            )
        )
        return None, None
    return database, own


def not_applicable(cfg: Mapping[str, str]) -> dict[str, str]:
    """The JDBC sink's keys of ``cfg`` accepted as changing nothing here, and why."""
    out = {k: NOT_APPLICABLE[k] for k in cfg if k in NOT_APPLICABLE}
    if "timestamp.precision.mode" in cfg and not _list(cfg, "timestamp.fields.list"):
        out["timestamp.precision.mode"] = "it applies to timestamp.fields.list, which is empty"
    if cfg.get("date.calendar.system", "").strip() == "LEGACY":
        out["date.calendar.system"] = (
            "dates and timestamps are written in the proleptic Gregorian calendar; LEGACY's "
            "Julian dates differ only before 1582-10-15"
        )
    if cfg.get("jdbc.credentials.provider.class", "").strip() == DEFAULT_PROVIDER:
        out["jdbc.credentials.provider.class"] = (
            "the default provider: the login is connection.user and connection.password"
        )
    return out

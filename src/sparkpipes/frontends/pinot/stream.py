"""Pinot ``streamConfigs`` (seeds 002, 003), checked into a frozen :class:`StreamConfig`:
the stream, its decoder, the Kafka client's security keys (``config.pinot_security``) and
the flush thresholds.

Every key of the seeds is known; another is an error naming it and the nearest known key.
Values are strings, as in Pinot; an empty string means "not given".
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import Secret
from sparkpipes.errors import ConfigError
from sparkpipes.formats.avro import parsed
from sparkpipes.formats.avro_pinot import FRAMING, FRAMING_OPTION, repository_urls
from sparkpipes.frontends.pinot import highlevel
from sparkpipes.frontends.pinot.decoders import (
    OWN_DECODERS,
    OWN_KINDS,
    REGISTRY_DECODERS,
    REGISTRY_KINDS,
    check_json_props,
    check_props,
    own_props,
    refuse,
)
from sparkpipes.frontends.pinot.flush import KEYS as FLUSH_KEYS
from sparkpipes.frontends.pinot.flush import (
    FlushThresholds,
    flush_thresholds,
    parse_duration_ms,
    parse_size,  # noqa: F401  (public here since seed 002)
)
from sparkpipes.frontends.pinot.keys import near
from sparkpipes.frontends.pinot.onerror import STOP_ON_DECODE_ERROR, stop_on_decode_error
from sparkpipes.frontends.pinot.partitions import partition_ids
from sparkpipes.frontends.pinot.problems import Problems, collecting
from sparkpipes.frontends.pinot.security import (
    CLIENT_KEYS,
    CLIENT_SECRETS,
    registry_options,
    security,
)
from sparkpipes.util.localfiles import as_text
from sparkpipes.util.localfiles import local_file_keys as files_named

#: what ``stream.<type>.decoder.class.name`` may name (``shaded.`` and version variants
#: are the same class) and the decoder each is
DECODERS = {
    "KafkaJSONMessageDecoder": "json",
    "JSONMessageDecoder": "json",
    "SimpleAvroMessageDecoder": "avro",
    "KafkaConfluentSchemaRegistryAvroMessageDecoder": "avro-registry",
    # Pinot's own: LinkedIn's schema-repository framing (formats.avro_pinot)
    "KafkaAvroMessageDecoder": "avro-registry",
    # with decoder props (.decoders): CSVMessageDecoder, ProtoBufMessageDecoder
    **{name: d.kind for name, d in OWN_DECODERS.items()},
    # Confluent's wire format with Protobuf and JSON bodies (.decoders, formats.confluent)
    **REGISTRY_DECODERS,
}
_PINOT_CLASS = re.compile(
    r"(?:shaded\.)?org\.apache\.pinot\.(?:plugin\.[a-z.]+|core\.realtime\.impl\.[a-z0-9.]+)"
    r"\.(?P<name>[A-Za-z0-9]+)"
)
_KAFKA_FACTORY = re.compile(
    r"(?:shaded\.)?org\.apache\.pinot\.(?:plugin\.stream|core\.realtime\.impl)"
    r"\.kafka(?:\d\d?)?\.KafkaConsumerFactory"
)
#: keys after ``stream.<type>.`` (besides consumer.prop.* and decoder.prop.*)
STREAM_KEYS = tuple(
    [
        "consumer.type",
        "topic.name",
        "broker.list",
        "decoder.class.name",
        "consumer.factory.class.name",
        "schema.registry.url",
        "isolation.level",
        "connection.timeout.millis",
        "fetch.timeout.millis",
        "metadata.populate",
        "partition.ids",
    ]
)
TOP_KEYS = (
    "streamType",
    STOP_ON_DECODE_ERROR,
    "schema.registry.url",
    "sasl.jaas.config",
    "metadata.populate",
    *FLUSH_KEYS,
    *CLIENT_KEYS,
    *CLIENT_SECRETS,
)
#: decoder props (after ``stream.<type>.decoder.prop.``)
DECODER_PROPS = tuple(
    [
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
    ]
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
    decoder: str  # json, avro, stream, or a kind of .decoders (OWN_KINDS, REGISTRY_KINDS)
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
    flush: FlushThresholds = field(default_factory=FlushThresholds)
    notes: tuple[str, ...] = ()
    #: a plugin stream's ``stream.<type>.*`` keys as given (its secrets apart)
    plugin: Mapping[str, str] = field(default_factory=dict)
    plugin_secrets: Mapping[str, Secret] = field(default_factory=dict)
    #: a decoder of the plugin SPI (``decoder == "stream"``): its Python path and props
    decoder_class: str | None = None
    decoder_props: Mapping[str, str] = field(default_factory=dict)
    #: the partitions read (``stream.kafka.partition.ids``), sorted; None: all of them
    partition_ids: tuple[int, ...] | None = None
    #: ``consumer.type highlevel``: read as lowlevel, but the decoder gets only each
    #: record's value (no ``__key``, no metadata), as Pinot's (:mod:`.highlevel`)
    high_level: bool = False
    stop_on_decode_error: bool = False  # (.onerror)


def load_stream(
    d: Mapping[str, Any], where: str, *, table: str, found: Problems | None = None
) -> StreamConfig:
    """One ``streamConfigs`` map (all values strings, as in Pinot). Its problems are added
    to ``found`` (each check goes on with a stand-in value, so all are found at once) and
    its keys without effect recorded there; without ``found``, the first problem raises."""
    return collecting(_load_stream, d, where, found)


def _load_stream(d: Mapping[str, Any], where: str, found: Problems) -> StreamConfig:
    given: dict[str, str] = {}
    for k, v in d.items():
        with found.at(f"{where}.{k}"):
            if (text := _text(v, f"{where}.{k}")) != "":
                given[k] = text

    def attempt(check: Any, default: Any, *args: Any) -> Any:
        with found.at(where):
            return check(*args)
        return default

    stype = given.get("streamType")
    if not stype:
        found.add(where, f'{where} needs streamType (e.g. "streamType": "kafka")')
        stype = "kafka"
    if not re.fullmatch(r"[a-z][a-z0-9]*", stype):
        found.add(where, f"{where}: streamType must be a lower-case name, got '{stype}'")
        stype = "kafka"
    if stype != "kafka":
        return _plugin_stream(given, d, stype, where, found, attempt)
    p = f"stream.{stype}."
    high = attempt(highlevel.is_high_level, False, given, p, where)
    known = [
        *TOP_KEYS,
        *([p + highlevel.BOOTSTRAP] if high else []),
        *(p + k for k in STREAM_KEYS),
        *(p + "decoder.prop." + k for k in DECODER_PROPS),
        *(p + "decoder.prop." + k for k in own_props(_class_name(given, p))),
        *(p + "consumer.prop." + k for k in CONSUMER_PROPS),
        "kafka.isolation.level",
    ]
    own = given.get(p + "decoder.class.name", "").startswith(("org.apache.", "shaded."))
    skip = () if own else (p + "decoder.prop.",)
    found.sort({k: d[k] for k in given}, known, "streamConfigs", where, skip=skip)
    notes: list[str] = []

    topic = attempt(_topic, "?", given, p, where, high)
    brokers = attempt(highlevel.brokers, "?", given, p, where) if high else None
    brokers = brokers or given.get(p + "broker.list")
    if high:
        notes.append(highlevel.NOTE.format(p=p))
    if not brokers:
        found.add(
            where,
            f"{where} needs {p}broker.list (host:port of the Kafka brokers)"
            + near(p + "broker.list", given),
        )
    elif urls.split(brokers, bare=True, what=f"{p}broker.list")[1] is not None:
        found.add(
            where,
            f"{where}: {p}broker.list '{urls.redact(brokers, bare=True)}' holds a password; "
            "Kafka clients take no user or password there: give them in sasl.jaas.config "
            "with security.protocol and sasl.mechanism",
        )
    factory = given.get(p + "consumer.factory.class.name")
    if factory and not _KAFKA_FACTORY.fullmatch(factory):
        found.add(
            where,
            f"{where}: {p}consumer.factory.class.name '{factory}' is not a Kafka consumer "
            "factory (e.g. org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory)",
        )
    if p + "zk.broker.url" in given:
        used = highlevel.BOOTSTRAP if high and p + highlevel.BOOTSTRAP in given else "broker.list"
        notes.append(f"{p}zk.broker.url is not used: brokers come from {p}{used}")

    decoder, avro_schema = attempt(_decoder, ("json", None), given, p, where)
    decoder_props = _decoder_props(given, p, decoder)
    attempt(check_props, None, decoder, decoder_props, where)
    if decoder == "json":
        attempt(check_json_props, None, given, p, where)
    registry_url = (
        given.get(p + "schema.registry.url")
        or given.get(p + "decoder.prop.schema.registry.rest.url")
        or given.get("schema.registry.url")
    )
    registry, registry_secrets = attempt(
        registry_options, ({}, {}), given, p + "decoder.prop.", where
    )
    if framed := _pinot_framed(given, p):  # its repository's URLs (only this key), framing
        registry_url = given.get(p + "decoder.prop.schema.registry.rest.url")
        registry, registry_secrets = {FRAMING_OPTION: FRAMING}, {}
        if registry_url:
            attempt(repository_urls, (), registry_url)
    if decoder in REGISTRY_KINDS and not registry_url:
        found.add(
            where,
            f"{where}: the schema registry decoder needs "
            + ("" if framed else f"{p}schema.registry.url (or ")
            + f"{p}decoder.prop.schema.registry.rest.url"
            + ("" if framed else ")"),
        )
    start = attempt(_start, "latest", given, p, where)
    client: dict[str, str] = {}
    secrets: dict[str, Secret] = {}
    for k, v in given.items():
        if k.startswith(p + "consumer.prop.") and k[len(p + "consumer.prop.") :] in CONSUMER_PROPS:
            target = CONSUMER_PROPS[k[len(p + "consumer.prop.") :]]
            if target:
                client[target] = v
    level = given.get(p + "isolation.level") or given.get("kafka.isolation.level")
    if level is not None and level not in ("read_committed", "read_uncommitted"):
        found.add(
            where,
            f"{where}: {p}isolation.level must be read_committed or read_uncommitted, "
            f"got '{level}'",
        )
    elif level is not None:
        client["isolation.level"] = level
    else:
        client.setdefault("isolation.level", "read_uncommitted")  # Pinot's default
    attempt(security, None, given, where, client, secrets, notes)
    timeouts = {}
    for key in ("connection.timeout.millis", "fetch.timeout.millis"):
        if p + key in given:
            timeouts[key] = attempt(_millis, None, given[p + key], f"{where}: {p}{key}")
    if timeouts.get("connection.timeout.millis") is not None:
        client["socket.connection.setup.timeout.ms"] = str(
            max(1000, timeouts["connection.timeout.millis"])
        )
    stop = stop_on_decode_error(given, notes)
    return StreamConfig(
        stream_type=stype,
        topic=topic,
        brokers=brokers,
        decoder=decoder,
        avro_schema=avro_schema,
        registry_url=registry_url if decoder in REGISTRY_KINDS else None,
        registry=registry,
        registry_secrets=registry_secrets,
        start=start,
        client=client,
        secrets=secrets,
        # the high-level consumer hands its decoder no metadata (highlevel.NOTE)
        metadata_populate=not high and attempt(_populate, False, given, p, where),
        connection_timeout_ms=timeouts.get("connection.timeout.millis"),
        fetch_timeout_ms=timeouts.get("fetch.timeout.millis"),
        flush=attempt(flush_thresholds, FlushThresholds(), given, where, notes),
        notes=tuple(notes),
        decoder_class=given.get(p + "decoder.class.name") if decoder == "stream" else None,
        decoder_props=decoder_props,
        partition_ids=attempt(partition_ids, None, given.get(p + "partition.ids"), p, where),
        high_level=high,
        stop_on_decode_error=stop,
    )


#: keys outside ``stream.<type>.`` a plugin stream's config may give
PLUGIN_TOP_KEYS = tuple(
    k for k in TOP_KEYS if k.startswith(("realtime.", "metadata.", "stream", STOP_ON_DECODE_ERROR))
)


def _plugin_stream(
    given: Mapping[str, str],
    d: Mapping[str, Any],
    stype: str,
    where: str,
    found: Problems,
    attempt: Any,
) -> StreamConfig:
    """A stream of a plugin (seed 003): its own ``stream.<type>.*`` keys are the plugin's
    to check; the common ones are checked here, other keys accepted and reported."""
    p = f"stream.{stype}."
    found.sort({k: d[k] for k in given}, PLUGIN_TOP_KEYS, "streamConfigs", where, skip=(p,))
    notes: list[str] = []
    topic = attempt(_topic, "?", given, p, where)
    decoder, avro_schema = attempt(_decoder, ("json", None), given, p, where)
    registry, registry_secrets = attempt(
        registry_options, ({}, {}), given, p + "decoder.prop.", where
    )
    plugin = {
        k: v
        for k, v in given.items()
        if k.startswith(p) and not k.startswith(p + "decoder.prop.") and not is_secret_key(k)
    }
    secrets = {k: Secret(v) for k, v in given.items() if k.startswith(p) and is_secret_key(k)}
    fetch = given.get(p + "fetch.timeout.millis")
    stop = stop_on_decode_error(given, notes)
    return StreamConfig(
        stream_type=stype,
        topic=topic,
        brokers=None,
        decoder=decoder,
        avro_schema=avro_schema,
        registry_url=(
            (
                given.get(p + "schema.registry.url")
                or given.get(p + "decoder.prop.schema.registry.rest.url")
            )
            if decoder in REGISTRY_KINDS
            else None
        ),
        registry=registry,
        registry_secrets=registry_secrets,
        start=attempt(_start, "latest", given, p, where),
        metadata_populate=attempt(_populate, False, given, p, where),
        fetch_timeout_ms=(
            attempt(_millis, None, fetch, f"{where}: {p}fetch.timeout.millis") if fetch else None
        ),
        flush=attempt(flush_thresholds, FlushThresholds(), given, where, notes),
        notes=tuple(notes),
        plugin=plugin,
        plugin_secrets=secrets,
        decoder_class=given.get(p + "decoder.class.name") if decoder == "stream" else None,
        decoder_props=_decoder_props(given, p, decoder),
        stop_on_decode_error=stop,
    )


def _topic(given: Mapping[str, str], p: str, where: str, high_level_ok: bool = False) -> str:
    """The topic; ``consumer.type`` is checked too (highlevel only where ``high_level_ok``:
    Kafka's)."""
    if not high_level_ok:
        highlevel.refuse_high_level(given, p, where)
    topic = given.get(p + "topic.name")
    if not topic:
        raise ConfigError(f"{where} needs {p}topic.name" + near(p + "topic.name", given))
    return topic


def _start(given: Mapping[str, str], p: str, where: str, now_ms: int | None = None) -> str:
    """Pinot's offset criteria: ``smallest``, ``largest``, a period back from now (``2d``,
    ``6h``, ``30m``: fixed when the table is added), or a time (ISO 8601, or epoch
    milliseconds): each partition starts at its first record at or after that time."""
    reset = given.get(p + "consumer.prop.auto.offset.reset")
    if reset is None:
        return "latest"  # Pinot's default
    if reset.lower() in OFFSET_RESETS:
        return OFFSET_RESETS[reset.lower()]
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    text = reset.strip()
    if text.isdigit():
        return f"at:{int(text)}"
    if re.fullmatch(r"(?i)\d+\s*(ms|s|m|h|d)", text):
        return f"at:{max(0, now_ms - parse_duration_ms(text, where))}"
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{where}: {p}consumer.prop.auto.offset.reset must be smallest, largest, a "
            f"period (2d, 6h) or a time (2026-01-01T00:00:00Z), got '{reset}'"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return f"at:{int(when.timestamp() * 1000)}"


def _populate(given: Mapping[str, str], p: str, where: str) -> bool:
    populate = given.get("metadata.populate", given.get(p + "metadata.populate", "false"))
    if populate.lower() not in ("true", "false"):
        raise ConfigError(f"{where}: metadata.populate must be true or false, got '{populate}'")
    return populate.lower() == "true"


def _pinot_framed(given: Mapping[str, str], p: str) -> bool:
    """Whether the decoder is Pinot's ``KafkaAvroMessageDecoder`` (a schema hash before
    each record, the schema from LinkedIn's repository: ``formats.avro_pinot``)."""
    m = _PINOT_CLASS.fullmatch(given.get(p + "decoder.class.name", ""))
    return m is not None and m.group("name") == "KafkaAvroMessageDecoder"


def _class_name(given: Mapping[str, str], p: str) -> str:
    """The simple name of a Pinot decoder class given (empty for any other)."""
    m = _PINOT_CLASS.fullmatch(given.get(p + "decoder.class.name", ""))
    return m.group("name") if m else ""


def _decoder_props(given: Mapping[str, str], p: str, decoder: str) -> dict[str, str]:
    if decoder != "stream" and decoder not in OWN_KINDS:
        return {}
    pre = p + "decoder.prop."
    return {k[len(pre) :]: v for k, v in given.items() if k.startswith(pre)}


def is_secret_key(key: str) -> bool:
    """Whether a config key's value is (or holds) a secret."""
    k = key.lower()
    return (
        k.endswith("password")
        or k.endswith("user.info")
        or k in ("sasl.jaas.config", "accesskey", "secretkey")  # Pinot's Kinesis keys
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
            + near(p + "decoder.class.name", given)
        )
    m = _PINOT_CLASS.fullmatch(name)
    if m:
        refuse(m.group("name"), name, where)
    kind = DECODERS.get(m.group("name")) if m else None
    if m and m.group("name") == "KafkaAvroMessageDecoder" and p != "stream.kafka.":
        raise ConfigError(f"{where}: decoder '{name}' is supported with streamType kafka only")
    if kind is None and not name.startswith(("org.apache.", "shaded.org.apache.")):
        if not re.fullmatch(r"[A-Za-z_][\w.]*[.:][A-Za-z_]\w*", name):
            raise ConfigError(f"{where}: {p}decoder.class.name '{name}' is not a class name")
        return "stream", None  # a StreamMessageDecoder of the plugin SPI, by Python path
    if kind is None:
        raise ConfigError(
            f"{where}: decoder '{name}' is not supported (JSON: "
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder; Avro: "
            "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder; Avro with a "
            "schema registry: org.apache.pinot.plugin.inputformat.avro.confluent."
            "KafkaConfluentSchemaRegistryAvroMessageDecoder; CSV: "
            "org.apache.pinot.plugin.inputformat.csv.CSVMessageDecoder; Protobuf: "
            "org.apache.pinot.plugin.inputformat.protobuf.ProtoBufMessageDecoder)"
        )
    schema = given.get(p + "decoder.prop.schema")
    if kind == "avro":
        if not schema:
            raise ConfigError(
                f"{where}: The Avro schema must be provided: SimpleAvroMessageDecoder needs "
                f"{p}decoder.prop.schema (the schema JSON, or the path of an .avsc file)"
            )
        if not is_inline_schema(schema):
            # a file of the server's disk (the REST API asks FILE READ for it): whether it
            # is missing, unreadable or not a schema is not told, nor anything it holds
            unusable = ConfigError(
                f"{where}: the file named by {p}decoder.prop.schema cannot be used as an "
                "Avro schema (give the schema JSON inline, or the path of a readable .avsc "
                "file)"
            )
            try:
                with open(schema, encoding="utf-8") as f:
                    text = f.read(_MAX_SCHEMA_FILE + 1)
            except (OSError, UnicodeDecodeError, ValueError):
                raise unusable from None
            if len(text) > _MAX_SCHEMA_FILE:
                raise unusable
            try:
                parsed(text)
            except ConfigError:
                raise unusable from None
            schema = text
        else:
            try:
                parsed(schema)
            except ConfigError as e:
                raise ConfigError(f"{where}: {p}decoder.prop.schema: {e.message}") from None
    return kind, schema if kind == "avro" else None


#: the largest Avro schema file read (a schema is small; a device or a huge file is not one)
_MAX_SCHEMA_FILE = 1 << 20


def is_inline_schema(value: str) -> bool:
    """Whether ``decoder.prop.schema`` is the schema JSON itself (not a file's path)."""
    return value.lstrip().startswith("{")


def local_file_keys(stream: Mapping[str, Any]) -> list[str]:
    """The keys of a streamConfigs that name a file of the server's disk, which the front
    end, the Kafka / registry clients or a stream plugin open (:mod:`sparkpipes.util.localfiles`),
    and a ``decoder.prop.schema`` that is not inline JSON."""
    schemas = [
        k
        for k, v in stream.items()
        if isinstance(k, str)
        and k.endswith("decoder.prop.schema")
        and (text := as_text(v)) is not None
        and text.strip()
        and not is_inline_schema(text)
    ]
    return sorted({*files_named(stream), *schemas})


def _millis(text: str, where: str) -> int:
    if not text.isdigit():
        raise ConfigError(f"{where} must be a whole number of milliseconds, got '{text}'")
    return int(text)

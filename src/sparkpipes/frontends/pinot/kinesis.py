"""Pinot's ``"streamType": "kinesis"`` streamConfigs (``pinot-kinesis``'s ``KinesisConfig``),
checked into a frozen :class:`~sparkpipes.frontends.pinot.stream.StreamConfig` and lowered
onto the ``kinesis.records`` source (the Kinesis connector's shards, each record's data a
payload for the table's decoder).

Pinot reads its Kinesis keys without the ``stream.kinesis.`` prefix: ``region``
(required), ``accessKey`` and ``secretKey`` (secrets: stored sealed, never shown; both or
neither — without them the AWS default chain, the server's own login), ``endpoint``,
``maxRecordsToFetch`` (records per GetRecords call, default 10,000). Where Pinot's consumer
reads differently from its keys' names, sparkpipes reads as Pinot does:

* a new table reads every shard **from its start**, whatever ``shardIteratorType`` or
  ``stream.kinesis.consumer.prop.auto.offset.reset`` say (Pinot's metadata provider starts
  each new shard at its starting sequence number; the consumer never reads
  ``shardIteratorType``); both are accepted and reported as not applicable;
* ``requests_per_second_limit`` paces Pinot's GetRecords calls: the rows are the same;
* a child shard is read once its parents are read to their end, as Pinot does.

Refused by name: ``iamRoleBasedAccessEnabled: true`` (assuming a role through STS) and
``metadata.populate: true`` (Pinot's Kinesis metadata columns, ``__metadata$sequenceNumber``
and ``__metadata$apprxArrivalTimestamp``, are not filled here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sparkpipes.config.core import Secret
from sparkpipes.config.parts import SourceSpec
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.flush import KEYS as FLUSH_KEYS
from sparkpipes.frontends.pinot.flush import FlushThresholds, flush_thresholds
from sparkpipes.frontends.pinot.keys import near
from sparkpipes.frontends.pinot.onerror import STOP_ON_DECODE_ERROR, stop_on_decode_error
from sparkpipes.frontends.pinot.problems import Problems, collecting
from sparkpipes.frontends.pinot.stream import (
    StreamConfig,
    _decoder,
    _decoder_props,
    _millis,
    _populate,
    _text,
    _topic,
)

STREAM_TYPE = "kinesis"
P = f"stream.{STREAM_TYPE}."
#: the Kinesis consumer factories Pinot users name (any other class is not Pinot's)
FACTORIES = (
    "org.apache.pinot.plugin.stream.kinesis.KinesisConsumerFactory",
    "shaded.org.apache.pinot.plugin.stream.kinesis.KinesisConsumerFactory",
)
#: the GetRecords API's most records a call
MAX_RECORDS = 10_000
#: keys read here (Pinot's Kinesis keys have no ``stream.kinesis.`` prefix)
KEYS = (
    "streamType",
    STOP_ON_DECODE_ERROR,
    "region",
    "accessKey",
    "secretKey",
    "endpoint",
    "maxRecordsToFetch",
    "iamRoleBasedAccessEnabled",
    "metadata.populate",
    *FLUSH_KEYS,
    *(
        P + k
        for k in (
            "topic.name",
            "consumer.type",
            "consumer.factory.class.name",
            "decoder.class.name",
            "fetch.timeout.millis",
            "metadata.populate",
        )
    ),
)


def load_kinesis(
    d: Mapping[str, Any], where: str, *, table: str, found: Problems | None = None
) -> StreamConfig:
    """One Kinesis ``streamConfigs`` map. Its problems are added to ``found`` (each check
    goes on with a stand-in, so all are found at once); without ``found`` the first
    raises."""
    return collecting(_load, d, where, found)


def _load(d: Mapping[str, Any], where: str, found: Problems) -> StreamConfig:
    given: dict[str, str] = {}
    for k, v in d.items():
        with found.at(f"{where}.{k}"):
            if (text := _text(v, f"{where}.{k}")) != "":
                given[k] = text

    def attempt(check: Callable[..., Any], default: Any, *args: Any) -> Any:
        with found.at(where):
            return check(*args)
        return default

    own = given.get(P + "decoder.class.name", "").startswith(("org.apache.", "shaded."))
    skip = () if own else (P + "decoder.prop.",)
    found.sort({k: d[k] for k in given}, KEYS, "streamConfigs", where, skip=skip)
    topic = attempt(_topic, "?", given, P, where)
    factory = given.get(P + "consumer.factory.class.name")
    if factory and factory not in FACTORIES:
        found.add(
            where,
            f"{where}: {P}consumer.factory.class.name '{factory}' is not Pinot's Kinesis "
            f"consumer factory ({FACTORIES[0]})",
        )
    decoder, avro_schema = attempt(_decoder, ("json", None), given, P, where)
    if attempt(_populate, False, given, P, where):
        found.add(
            where,
            f"{where}: metadata.populate with streamType kinesis is not supported (Pinot's "
            "Kinesis metadata columns __metadata$sequenceNumber and "
            "__metadata$apprxArrivalTimestamp are not filled here)",
        )
    if str(given.get("iamRoleBasedAccessEnabled", "false")).lower() == "true":
        found.add(
            where,
            f"{where}: iamRoleBasedAccessEnabled (assuming an IAM role with roleArn to read "
            "Kinesis) is not supported: give accessKey and secretKey, or none for the AWS "
            "default chain",
        )
    config = attempt(_client, {}, given, where)
    secrets = attempt(_secrets, {}, given, where)
    fetch = given.get(P + "fetch.timeout.millis")
    notes: list[str] = []
    stop = stop_on_decode_error(given, notes)
    return StreamConfig(
        stream_type=STREAM_TYPE,
        topic=topic,
        brokers=None,
        decoder=decoder,
        avro_schema=avro_schema,
        start="earliest",  # Pinot starts every new shard at its start
        fetch_timeout_ms=(
            attempt(_millis, None, fetch, f"{where}: {P}fetch.timeout.millis") if fetch else None
        ),
        flush=attempt(flush_thresholds, FlushThresholds(), given, where, notes),
        notes=tuple(notes),
        plugin=config,
        plugin_secrets=secrets,
        decoder_class=given.get(P + "decoder.class.name") if decoder == "stream" else None,
        decoder_props=_decoder_props(given, P, decoder),
        stop_on_decode_error=stop,
    )


def _client(given: Mapping[str, str], where: str) -> dict[str, str]:
    """The source's options: region (required, as in Pinot), endpoint, records a call."""
    region = given.get("region")
    if not region:
        raise ConfigError(
            f"{where}: Must provide 'region' in stream config (the stream's AWS region, "
            "e.g. us-east-1)" + near("region", given)
        )
    out = {"region": region}
    if given.get("endpoint"):
        out["endpoint"] = given["endpoint"]
    limit = given.get("maxRecordsToFetch")
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_RECORDS:
            raise ConfigError(
                f"{where}: maxRecordsToFetch must be a whole number from 1 to {MAX_RECORDS} "
                f"(GetRecords' limit), got '{limit}'"
            )
        out["max.records"] = limit
    return out


def _secrets(given: Mapping[str, str], where: str) -> dict[str, Secret]:
    access, secret = given.get("accessKey", "").strip(), given.get("secretKey", "").strip()
    if bool(access) != bool(secret):
        raise ConfigError(
            f"{where}: give both accessKey and secretKey, or neither (the AWS default chain: "
            f"environment, profile, instance role); only {'accessKey' if access else 'secretKey'}"
            " is given"
        )
    if not access:
        return {}
    return {"aws.access.key.id": Secret(access), "aws.secret.access.key": Secret(secret)}


def source_spec(stream: StreamConfig) -> SourceSpec:
    """The ``kinesis.records`` source of a Kinesis stream config."""
    return SourceSpec(
        kind="kinesis.records",
        location=stream.topic,
        config=dict(stream.plugin),
        credentials=dict(stream.plugin_secrets),
        start=stream.start,
    )

"""Kafka Connect's own connector keys — the worker's, the same for every connector
(``name``, ``errors.*``, the converters, ``consumer.override.*``, ``transforms``, …) — and
what sparkpipes does with each: one registry, so "what happens to key X" has one answer.

A key is **honoured** by the code that reads it, **accepted as not applicable** (kept,
shown back and reported, with the reason: it only concerns Connect's workers, its Kafka
producer or its logs, and changes nothing that is loaded here), or **refused by name**
(it would change what is loaded, and is not implemented). Connect's worker keys are
looked up here before a connector sees its CONFIG, for source connectors (a KAFKACONNECT
pipeline, ``POST /connectors``) and sink connectors (``frontends.connect``) alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkpipes.errors import ConfigError

SOURCE, SINK = "source", "sink"

_LOG = (
    "Connect's worker log; a record that fails is in information_schema.PIPELINES_ERRORS "
    "with its message whatever this says"
)
_RETRY = (
    "retries of Connect's converter and transform stages; a batch is retried as a whole "
    "(max.retries, the pipeline's retries)"
)
_NO_KAFKA = (
    "a source connector's records go straight into the table as JSON, never through a "
    "Kafka topic, so nothing is serialized with it"
)
_WORKER = "a setting of Connect's worker or its Kafka clients"
_NO_HEADERS = "record headers are not loaded"
_NO_DLQ = "Connect's dead-letter queue is a sink connector's; a source connector has none"
_SINK_KEYS = (
    "the sink loads record values; keys are not loaded (a transform reads a key as JSON "
    "where every key of a chunk is JSON, else as text)"
)

#: (key or prefix ending in '.', role or None for both) → reason it changes nothing here
NOT_APPLICABLE: dict[tuple[str, str | None], str] = {
    ("name", SOURCE): "the pipeline's name is its own (CREATE PIPELINE names it)",
    ("errors.log.enable", None): _LOG,
    ("errors.log.include.messages", None): _LOG,
    ("errors.retry.timeout", None): _RETRY,
    ("errors.retry.delay.max.ms", None): _RETRY,
    ("errors.tolerance", SOURCE): (
        "without transforms a source record is not converted or transformed here, so none "
        "can fail there (with transforms it decides about records they cannot process)"
    ),
    ("key.converter", SOURCE): _NO_KAFKA,
    ("key.converter.", SOURCE): _NO_KAFKA,
    ("value.converter", SOURCE): _NO_KAFKA,
    ("value.converter.", SOURCE): _NO_KAFKA,
    ("header.converter", None): _NO_HEADERS,
    ("header.converter.", None): _NO_HEADERS,
    ("key.converter", SINK): _SINK_KEYS,
    ("key.converter.", SINK): _SINK_KEYS,
    ("consumer.override.", SOURCE): "a source connector has no Kafka consumer here",
    ("producer.override.", None): "no Kafka producer: records go straight into the table",
    ("admin.override.", None): _WORKER,
    ("topic.creation.", SOURCE): "no Kafka topic is created: the records go into a table",
    ("config.action.reload", None): _WORKER,
    ("exactly.once.support", SOURCE): "every pipeline loads exactly once",
    ("transaction.boundary", SOURCE): "a batch is one commit of rows and offsets",
    ("offsets.storage.topic", SOURCE): "offsets are committed with the rows, not to a topic",
    ("confluent.license", None): "Confluent's license check of its commercial connectors",
    ("confluent.topic.", None): "Confluent's license topic of its commercial connectors",
    ("errors.deadletterqueue.topic.replication.factor", SOURCE): _NO_DLQ,
}

#: consumer settings that only tune the client (a sink's other consumer.override.* keys
#: are refused: security, isolation and group settings change what is read or from where)
SINK_CONSUMER_TUNING = frozenset(
    {
        "max.poll.records",
        "max.poll.interval.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "fetch.max.wait.ms",
        "max.partition.fetch.bytes",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "request.timeout.ms",
        "client.id",
        "receive.buffer.bytes",
        "partition.assignment.strategy",
    }
)

#: refused by name: each would change what is loaded and is not implemented
REFUSED: dict[tuple[str, str | None], str] = {
    # Connect has no dead-letter queue for source connectors: refused, so that nobody
    # waits for records there (a sink connector's is honoured: frontends.connect)
    ("errors.deadletterqueue.topic.name", SOURCE): (
        "errors.deadletterqueue.topic.name: Kafka Connect's dead-letter queue is a sink "
        "connector's; a source record that fails is in information_schema.PIPELINES_ERRORS"
    ),
    ("errors.deadletterqueue.context.headers.enable", SOURCE): (
        "errors.deadletterqueue.context.headers.enable: a dead-letter queue is a sink connector's"
    ),
}

#: parts of key names that hold a secret: sealed with the credentials, never shown
SECRET_SUFFIXES = ("password", "basic.auth.user.info", "sasl.jaas.config", "secret")


def _lookup(table: Mapping[tuple[str, str | None], str], key: str, role: str) -> str | None:
    for r in (role, None):
        if (key, r) in table:
            return table[(key, r)]
    prefixes = [
        (name, why)
        for (name, r), why in table.items()
        if r in (role, None) and name.endswith(".") and key.startswith(name)
    ]
    return max(prefixes, key=lambda p: len(p[0]))[1] if prefixes else None


def comment(key: str) -> bool:
    """``_comment``, ``_note`` …: a key starting with ``_`` is a comment people keep in
    JSON configs (JSON has no comments); Connect passes it to the connector, which
    ignores it."""
    return key.startswith("_")


def refusal(key: str, role: str) -> str | None:
    """Why Connect's key ``key`` is refused for a connector of ``role``, or None."""
    why = _lookup(REFUSED, key, role)
    if why is None and role == SINK and key.startswith("consumer.override."):
        setting = key[len("consumer.override.") :]
        if setting != "auto.offset.reset" and setting not in SINK_CONSUMER_TUNING:
            why = (
                f"{key} is not supported: it changes what the sink's Kafka consumer reads "
                "or where from (tuning settings such as max.poll.records are accepted)"
            )
    return why


def not_applicable(key: str, role: str) -> str | None:
    """Why Connect's key ``key`` changes nothing here for a connector of ``role``, or
    None (the key is not one of Connect's, or it is honoured or refused)."""
    if comment(key):
        return "a comment"
    if role == SINK and key.startswith("consumer.override."):
        setting = key[len("consumer.override.") :]
        return (
            "tunes Kafka's consumer client; the pipeline reads with its own settings"
            if setting in SINK_CONSUMER_TUNING
            else None
        )
    return _lookup(NOT_APPLICABLE, key, role)


def is_secret(key: str) -> bool:
    """Whether Connect's key ``key`` holds a secret (a converter's registry login, a
    client's password or JAAS config)."""
    return key.lower().endswith(SECRET_SUFFIXES)


def sort(config: Mapping[str, Any], role: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Connect's keys of ``config``: ``(not applicable: key → reason, problems: (key,
    message))``. Keys of neither are the connector's to check."""
    accepted: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for key in config:
        why = refusal(key, role)
        if why is not None:
            problems.append((key, why))
            continue
        reason = not_applicable(key, role)
        if reason is not None:
            accepted[key] = reason
    return accepted, problems


class ConnectConfigError(ConfigError):
    """Every problem of one connector config, each naming its key (``None``: the config
    as a whole), as Connect's validate endpoint lists them; the message holds them all."""

    def __init__(self, problems: list[tuple[str | None, str]], *, what: str = "connector") -> None:
        self.problems = list(dict.fromkeys(problems))
        lines = [f"{k}: {m}" if k and not m.startswith(k) else m for k, m in self.problems]
        head = f"{len(lines)} problems in the {what} config: " if len(lines) > 1 else ""
        super().__init__(head + "; ".join(lines))


def key_of(message: str, keys: list[str] | tuple[str, ...] | Any) -> str | None:
    """The config key a message from a connector names (the longest one it quotes or
    starts with), for messages raised before problems carried their key."""
    found = [k for k in keys if f"'{k}'" in message or message.startswith(k)]
    return max(found, key=len) if found else None

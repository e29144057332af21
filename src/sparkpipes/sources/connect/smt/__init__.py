"""Kafka Connect's Single Message Transforms, run column-wise on Arrow in the tasks.

A connector config's ``transforms`` / ``predicates`` keys are parsed once into a
:class:`~sparkpipes.config.transforms.TransformChain` (``config.transforms``); this package
turns it into a runnable :class:`~sparkpipes.sources.connect.smt.chain.Chain` through one
registry keyed by the Java class names users write (both ``$Key`` and ``$Value``
variants), and applies it to :class:`~sparkpipes.sources.connect.smt.base.Records`.

What each class does is Apache Kafka's (``connect/transforms`` of Kafka 3.x/4.x: option
names, defaults, "with schema" behaviour) or its author's: Debezium's
``ExtractNewRecordState``, jcustenborder's ``ChangeTopicCase`` and Confluent's
``Filter$Key``/``$Value`` (a JsonPath predicate); where sparkpipes differs, the class's
docstring says so. Classes not in the registry are refused by name (:data:`REFUSED` says why for the
ones people ask for), never ignored. The same chain runs for source connectors (in the
task that reads, ``sources.connect.source``) and sink connectors (in the task that
decodes the Kafka records, ``formats.connect``); a sink's routers decide its tables per
topic (:meth:`Chain.route`), so :data:`SINK_REFUSED` names what would not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparkpipes.config.transforms import TransformChain
from sparkpipes.sources.connect.smt import (
    casts,
    confluent,
    debezium,
    fields,
    jcustenborder,
    routing,
)
from sparkpipes.sources.connect.smt.base import (
    Options,
    Outcome,
    Predicate,
    Records,
    Refused,
    Transform,
)
from sparkpipes.sources.connect.smt.chain import Chain, build

_PKG = "org.apache.kafka.connect.transforms."
_JCUSTENBORDER = "com.github.jcustenborder.kafka.connect.transform.common."
_CONFLUENT = "io.confluent.connect.transforms."


@dataclass(frozen=True)
class _Entry:
    """One registry entry: the class and the part (key or value) it works on."""

    cls: type[Transform]
    part: str = "value"

    @property
    def options(self) -> frozenset[str]:
        return self.cls.options

    def __call__(self, opts: Options) -> Transform:
        return self.cls(opts, self.part)


def _both(name: str, cls: type[Transform], package: str = _PKG) -> dict[str, _Entry]:
    return {
        f"{package}{name}$Key": _Entry(cls, "key"),
        f"{package}{name}$Value": _Entry(cls, "value"),
    }


#: Java class name → transform
TRANSFORMS: dict[str, _Entry] = {
    f"{_PKG}ValueToKey": _Entry(fields.ValueToKey),
    **_both("ExtractField", fields.ExtractField),
    **_both("ReplaceField", fields.ReplaceField),
    **_both("InsertField", fields.InsertField),
    **_both("MaskField", fields.MaskField),
    **_both("HoistField", fields.HoistField),
    **_both("Flatten", fields.Flatten),
    **_both("SetSchemaMetadata", fields.SetSchemaMetadata),
    **_both("Cast", casts.Cast),
    **_both("TimestampConverter", casts.TimestampConverter),
    **_both("HeaderFrom", routing.HeaderFrom),
    f"{_PKG}Filter": _Entry(routing.Filter),
    f"{_PKG}RegexRouter": _Entry(routing.RegexRouter),
    f"{_PKG}TimestampRouter": _Entry(routing.TimestampRouter),
    f"{_PKG}DropHeaders": _Entry(routing.DropHeaders),
    f"{_PKG}InsertHeader": _Entry(routing.InsertHeader),
    "io.debezium.transforms.ExtractNewRecordState": _Entry(debezium.ExtractNewRecordState),
    f"{_JCUSTENBORDER}ChangeTopicCase": _Entry(jcustenborder.ChangeTopicCase),
    **_both("Filter", confluent.Filter, _CONFLUENT),
}

#: Java class name → predicate
PREDICATES: dict[str, Callable[[Options], Predicate]] = {
    f"{_PKG}predicates.TopicNameMatches": routing.TopicNameMatches,
    f"{_PKG}predicates.HasHeaderKey": routing.HasHeaderKey,
    f"{_PKG}predicates.RecordIsTombstone": routing.RecordIsTombstone,
}

#: classes people use that are refused, and why
REFUSED: dict[str, str] = {
    "io.debezium.transforms.ByLogicalTableRouter": "Debezium's routers are not supported",
    "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState": (
        "it turns MongoDB's change events, whose after/patch fields are extended-JSON "
        "text, into rows by Debezium's MongoDataConverter (BSON types such as $oid, $date "
        "and $numberDecimal, array.encoding, field-name sanitizing, update operators), "
        "which sparkpipes does not reproduce"
    ),
    f"{_CONFLUENT}MessageTimestampRouter": (
        "Confluent's router (connect-transforms, not open source) reads a timestamp from "
        "the first of message.timestamp.keys with message.timestamp.format; which zone "
        "and which rules it parses with is not published, so its topics are not "
        "reproduced exactly"
    ),
}

_PER_TIMESTAMP = (
    "on a sink connector it sends the records of one topic to a new table per timestamp "
    "(a table per day), but a sink pipeline here writes the one table its topic is routed "
    "to when the connector is made: that table's columns are read when the pipeline is "
    "assembled, and a batch commits into it in one transaction with its offsets (tables "
    "that appear while the connector runs would need their DDL outside that transaction); "
    "route with RegexRouter, or keep the time in a column (InsertField timestamp.field)"
)
#: classes refused for sink connectors only, and why: a sink writes each record to the
#: table its (routed) topic names, which is decided per topic when the connector is made
SINK_REFUSED: dict[str, str] = {
    f"{_PKG}TimestampRouter": _PER_TIMESTAMP,
    f"{_CONFLUENT}MessageTimestampRouter": f"Confluent's router: {_PER_TIMESTAMP}",
}
#: the predicates a router of a sink connector may have: those of the topic alone
_TOPIC_PREDICATES = frozenset({f"{_PKG}predicates.TopicNameMatches"})


def chain_of(chain: TransformChain, role: str) -> tuple[Chain, list[tuple[str, str]]]:
    """The runnable chain of ``chain`` for a connector of ``role`` (``source`` or
    ``sink``) and every problem of its classes and options, each ``(key, message)``.

    On a sink connector the routers decide the tables, per topic
    (:meth:`Chain.route`): a router under a predicate other than ``TopicNameMatches``
    would route records of one topic to several tables, and is a problem here."""
    problems: list[tuple[str, str]] = []
    refused = dict(REFUSED)
    if role == "sink":
        refused.update(SINK_REFUSED)
        for step in chain.steps:
            entry = TRANSFORMS.get(step.type)
            if entry is None or not entry.cls.routes or step.predicate is None:
                continue
            kind = chain.predicate(step.predicate).type
            if kind not in _TOPIC_PREDICATES:
                problems.append(
                    (
                        step.key("predicate"),
                        f"{step.key('predicate')}: a router of a sink connector may only "
                        f"have a TopicNameMatches predicate ({kind} would send records of "
                        "one topic to several tables, which are decided per topic here)",
                    )
                )
    built, more = build(
        chain,
        {k: v for k, v in TRANSFORMS.items() if k not in refused},
        PREDICATES,
        refused,
        role,
    )
    return built, more + problems


__all__ = [
    "PREDICATES",
    "REFUSED",
    "SINK_REFUSED",
    "TRANSFORMS",
    "Chain",
    "Outcome",
    "Records",
    "Refused",
    "chain_of",
]

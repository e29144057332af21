"""Kafka-Connect-style source connectors: the SPI (``base``), the source that runs them
(``source``) and the built-in connectors, found by the ``connector.class`` users write.

``connector.class`` resolves, in order, through:

1. the Java class names of well-known connectors, mapped to built-in Python connectors
   (:data:`BUILTIN`);
2. the ``sparkpipes.connectors`` entry-point group (name = the class name users write);
3. a Python path, ``package.module:Class`` or ``package.module.Class``, of a
   :class:`~sparkpipes.sources.connect.base.SourceConnector` subclass.

Anything else is an error that lists the class names understood.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from sparkpipes.sources.connect.base import (
    ConnectorConfig,
    PartitionReader,
    Polled,
    SourceConnector,
    SourceRecord,
    compact,
)
from sparkpipes.util.registry import resolve_class

#: Java class name → built-in connector ("module:Class", imported when first used)
BUILTIN = {
    "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector": (
        "sparkpipes.sources.connect.kinesis:KinesisConnector"
    ),
    "io.confluent.connect.jdbc.JdbcSourceConnector": (
        "sparkpipes.sources.connect.jdbc:JdbcConnector"
    ),
    "io.confluent.connect.kinesis.KinesisSourceConnector": (
        "sparkpipes.sources.connect.kinesis_confluent:ConfluentKinesisConnector"
    ),
}
ENTRY_POINT_GROUP = "sparkpipes.connectors"


def known() -> list[str]:
    """Every class name that resolves without a Python path."""
    names = set(BUILTIN)
    names.update(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def resolve(class_name: str) -> type[SourceConnector]:
    """The connector class for ``connector.class``; ConfigError naming it otherwise."""
    return resolve_class(
        class_name,
        builtin=BUILTIN,
        group=ENTRY_POINT_GROUP,
        base=SourceConnector,
        what="connector.class",
        hint="a sparkpipes SourceConnector subclass",
    )


__all__ = [
    "BUILTIN",
    "ConnectorConfig",
    "PartitionReader",
    "Polled",
    "SourceConnector",
    "SourceRecord",
    "compact",
    "known",
    "resolve",
]

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

import importlib
from importlib.metadata import entry_points

from sparkpipes.errors import ConfigError
from sparkpipes.sources.connect.base import (
    ConnectorConfig,
    PartitionReader,
    Polled,
    SourceConnector,
    SourceRecord,
    compact,
)

#: Java class name → built-in connector ("module:Class", imported when first used)
BUILTIN = {
    "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector": (
        "sparkpipes.sources.connect.kinesis:KinesisConnector"
    ),
    "io.confluent.connect.jdbc.JdbcSourceConnector": (
        "sparkpipes.sources.connect.jdbc:JdbcConnector"
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
    target = BUILTIN.get(class_name)
    if target is None:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name == class_name:
                target = ep.value
                break
    if target is None:
        target = class_name if ":" in class_name else _as_python_path(class_name)
    if target is None:
        raise ConfigError(
            f"unknown connector.class '{class_name}': sparkpipes runs these connectors: "
            f"{', '.join(known())}; or give the Python path of a SourceConnector subclass "
            "(package.module:Class)"
        )
    module_name, _, attr = target.partition(":")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except ImportError as e:
        raise ConfigError(
            f"connector.class '{class_name}' needs Python module '{e.name}', which is missing"
        ) from None
    except AttributeError:
        raise ConfigError(
            f"connector.class '{class_name}': module '{module_name}' has no '{attr}'"
        ) from None
    if not (isinstance(obj, type) and issubclass(obj, SourceConnector)):
        raise ConfigError(
            f"connector.class '{class_name}' is not a sparkpipes SourceConnector subclass"
        )
    return obj


def _as_python_path(name: str) -> str | None:
    """``pkg.mod.Class`` as ``pkg.mod:Class`` if ``pkg.mod`` imports (a Java name of a
    connector sparkpipes does not have fails to import and is reported as unknown)."""
    module_name, _, attr = name.rpartition(".")
    if not module_name or not attr:
        return None
    try:
        importlib.import_module(module_name)
    except ImportError:
        return None
    return f"{module_name}:{attr}"


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

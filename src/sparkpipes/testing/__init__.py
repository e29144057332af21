"""Helpers for demos, tests and benchmarks: the embedded Kafka broker, object-store servers."""

from sparkpipes.testing.broker import EmbeddedBroker
from sparkpipes.testing.objectstores import Azurite, MotoServer

__all__ = ["Azurite", "EmbeddedBroker", "MotoServer"]

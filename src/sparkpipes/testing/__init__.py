"""Helpers for demos, tests and benchmarks: the embedded Kafka broker."""

from sparkpipes.testing.broker import EmbeddedBroker

__all__ = ["EmbeddedBroker"]

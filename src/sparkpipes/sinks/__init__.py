"""Sinks: the SPI (``base``) and the built-in destinations, looked up by name."""

from __future__ import annotations

from sparkpipes.sinks.base import BatchCommit, Committed, Sink, SinkContext, SinkWriter, Staged
from sparkpipes.sinks.delta.sink import Append, DeltaSink, Upsert
from sparkpipes.sinks.parquet import AddFile, ParquetWriter
from sparkpipes.util.registry import Registry

SINKS = Registry("sink", entry_point_group="sparkpipes.sinks")
SINKS.register("delta", "sparkpipes.sinks.delta.sink:DeltaSink")
SINKS.register("procedure", "sparkpipes.sinks.procedure:ProcedureSink")
SINKS.register("database", "sparkpipes.sinks.database:DatabaseSink")

__all__ = [
    "SINKS",
    "AddFile",
    "Append",
    "BatchCommit",
    "Committed",
    "DeltaSink",
    "ParquetWriter",
    "Sink",
    "SinkContext",
    "SinkWriter",
    "Staged",
    "Upsert",
]

"""Sinks: destinations that commit a batch's data and offsets together."""

from sparkpipes.sinks.delta import AddFile, Committed, DeltaSink

__all__ = ["AddFile", "Committed", "DeltaSink"]

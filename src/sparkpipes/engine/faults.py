"""The crash points of the commit protocol (see :mod:`sparkpipes.util.faults`, where they
live so that sinks reach them without importing the engine)."""

from sparkpipes.util.faults import POINTS, crash_point

__all__ = ["POINTS", "crash_point"]

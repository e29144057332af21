"""Engine: plans batches, runs them as Spark jobs, commits and records them."""

from sparkpipes.engine.batch import BatchResult
from sparkpipes.engine.engine import Engine

__all__ = ["BatchResult", "Engine"]

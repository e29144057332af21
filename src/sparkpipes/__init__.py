"""sparkpipes: exactly-once streaming ingestion into Delta tables on Apache Spark."""

from sparkpipes.config import PipelineSpec, Secret
from sparkpipes.errors import SparkpipesError

__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "Engine":  # lazy: importing sparkpipes must not import pyspark
        from sparkpipes.engine import Engine

        return Engine
    raise AttributeError(name)


__all__ = ["Engine", "PipelineSpec", "Secret", "SparkpipesError"]

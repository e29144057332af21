"""Arrow ↔ Spark schema conversion shared by the engine and the sinks."""

from __future__ import annotations

import pyarrow as pa


def to_spark_schema(schema: pa.Schema):
    """The Spark StructType of an Arrow schema (timestamps stay zoned, as Delta keeps them)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=False)

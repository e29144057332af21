"""Table schemas: given as Spark DDL, a Spark StructType or an Arrow schema; kept as Arrow."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkpipes.errors import ConfigError
from sparkpipes.util.arrow import to_spark_schema


def to_arrow(schema: Any) -> tuple[pa.Schema, str]:
    """Return (Arrow schema, Spark DDL). Timestamps become ``timestamp[us, UTC]`` (Delta)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    from pyspark.sql.types import StructType

    if isinstance(schema, pa.Schema):
        struct = from_arrow_schema(_utc(schema), prefer_timestamp_ntz=False)
    elif isinstance(schema, StructType):
        struct = schema
    elif isinstance(schema, str):
        try:
            struct = StructType.fromDDL(schema)
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(f"invalid table schema {schema!r}: {first}") from None
    else:
        raise ConfigError(
            f"a table schema must be Spark DDL text, StructType or pa.Schema, not {schema!r}"
        )
    if not struct.fields:
        raise ConfigError("a table needs at least one column")
    arrow = _utc(to_arrow_schema(struct, timezone="UTC"))
    ddl = ", ".join(f"`{f.name}` {f.dataType.simpleString().upper()}" for f in struct.fields)
    return arrow, ddl


def _utc(schema: pa.Schema) -> pa.Schema:
    fields = []
    for f in schema:
        if pa.types.is_timestamp(f.type):
            f = f.with_type(pa.timestamp("us", tz="UTC"))
        fields.append(f)
    return pa.schema(fields)


to_spark = to_spark_schema

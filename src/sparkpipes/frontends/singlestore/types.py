"""SingleStore / MySQL column types → Spark SQL types (what the Delta table stores)."""

from __future__ import annotations

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore.ast_base import DataType
from sparkpipes.frontends.singlestore.build_base import VECTOR_ELEMENTS

_SIMPLE = {
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "MEDIUMINT": "INT",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "BOOL": "BOOLEAN",
    "BOOLEAN": "BOOLEAN",
    "FLOAT": "FLOAT",
    "REAL": "DOUBLE",
    "DOUBLE": "DOUBLE",
    "CHAR": "STRING",
    "VARCHAR": "STRING",
    "TINYTEXT": "STRING",
    "TEXT": "STRING",
    "MEDIUMTEXT": "STRING",
    "LONGTEXT": "STRING",
    "STRING": "STRING",
    "JSON": "STRING",
    "GEOGRAPHY": "STRING",
    "GEOGRAPHYPOINT": "STRING",
    "BINARY": "BINARY",
    "VARBINARY": "BINARY",
    "TINYBLOB": "BINARY",
    "BLOB": "BINARY",
    "MEDIUMBLOB": "BINARY",
    "LONGBLOB": "BINARY",
    "DATE": "DATE",
    "DATETIME": "TIMESTAMP",
    "TIMESTAMP": "TIMESTAMP",
}
_UNSIGNED = {
    "TINYINT": "SMALLINT",
    "SMALLINT": "INT",
    "INT": "BIGINT",
    "INTEGER": "BIGINT",
    "MEDIUMINT": "INT",
    "BIGINT": "DECIMAL(20,0)",
}


def spark_type(t: DataType) -> str:
    name = t.name.upper()
    if t.unsigned and name in _UNSIGNED:
        return _UNSIGNED[name]
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        p, s = ([*t.params, 0] if len(t.params) == 1 else [*t.params, 10, 0])[:2]
        return f"DECIMAL({p},{s})"
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name in ("ENUM", "SET") and t.members:
        return "STRING"
    if name == "VECTOR" and t.element:
        return f"ARRAY<{VECTOR_ELEMENTS[t.element]}>"
    if name == "ARRAY" and len(t.args) == 1:
        return f"ARRAY<{spark_type(t.args[0])}>"
    if name == "MAP" and len(t.args) == 2:
        return f"MAP<{spark_type(t.args[0])}, {spark_type(t.args[1])}>"
    if name == "STRUCT" and t.fields:
        inner = ", ".join(f"`{f.name}`: {spark_type(f.type)}" for f in t.fields)
        return f"STRUCT<{inner}>"
    raise ConfigError(f"column type {t.to_sql()} is not supported yet")


_ARROW_NAMES = {
    "TINYINT": "int8",
    "SMALLINT": "int16",
    "INT": "int32",
    "BIGINT": "int64",
    "BOOLEAN": "bool_",
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "STRING": "string",
    "BINARY": "binary",
    "DATE": "date32",
}


def arrow_type(t: DataType):
    """The Arrow type a column of type ``t`` is stored as: what Spark makes of
    ``spark_type(t)`` (timestamps in UTC, as Delta keeps them), known without starting
    Spark, so that CREATE TABLE needs no JVM."""
    import pyarrow as pa

    spark = spark_type(t)  # checks the type is supported
    name = t.name.upper()
    if name == "ARRAY":
        return pa.list_(arrow_type(t.args[0]))
    if name == "VECTOR":
        return pa.list_(getattr(pa, _ARROW_NAMES[VECTOR_ELEMENTS[t.element]])())
    if name == "MAP":
        return pa.map_(arrow_type(t.args[0]), arrow_type(t.args[1]))
    if name == "STRUCT":
        return pa.struct([pa.field(f.name, arrow_type(f.type)) for f in t.fields])
    if spark.startswith("DECIMAL("):
        p, s = (int(n) for n in spark[len("DECIMAL(") : -1].split(","))
        if not 1 <= p <= 38 or not 0 <= s <= p:
            raise ConfigError(
                f"column type {t.to_sql()} is not supported: DECIMAL takes a precision of 1 "
                "to 38 and a scale of 0 to the precision"
            )
        return pa.decimal128(p, s)
    if spark == "TIMESTAMP":
        return pa.timestamp("us", tz="UTC")
    return getattr(pa, _ARROW_NAMES[spark])()

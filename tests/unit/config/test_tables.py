"""A table as the front ends describe it (``config.tables.TableSpec``): checked when made,
stored as the catalog keeps it, and given back from what is stored, so SHOW CREATE TABLE
(the lowering run backwards) makes the same table again."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.config.tables import ColumnSpec, TableKey, TableSpec, ddl_types
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import parse_one
from sparkpipes.frontends.singlestore.lower_tables import create_table_sql, table_spec

DDL = """CREATE TABLE clicks (ts BIGINT NOT NULL, user_id TEXT, `odd name` VARCHAR(20),
  payload JSON, host AS (parse_url(url, 'HOST')) PERSISTED TEXT, url TEXT,
  id BIGINT PRIMARY KEY, SHARD KEY (user_id), SORT KEY (ts), KEY ix (user_id, ts) USING HASH)"""


def stored(spec: TableSpec) -> TableSpec:
    """What the catalog keeps of ``spec``, read back (the Spark DDL as the engine writes)."""
    schema = spec.schema
    assert isinstance(schema, pa.Schema)
    spark = {"int64": "BIGINT", "string": "STRING", "large_string": "STRING"}
    ddl = ", ".join(
        f"`{f.name.replace('`', '``')}` {spark.get(str(f.type), 'STRING')}" for f in schema
    )
    return TableSpec.of_stored(spec.name, schema, ddl, spec.options())


def test_create_table_lowers_and_show_create_runs_back_to_the_same_table():
    spec = table_spec(parse_one(DDL))
    assert [c.name for c in spec.columns][:3] == ["ts", "user_id", "odd name"]
    assert spec.primary == ("id",) and spec.not_null == ("ts", "id")
    assert spec.computed == {"host": "parse_url(url, 'HOST')"}
    assert spec.declared["payload"] == "JSON" and spec.declared["odd name"] == "VARCHAR(20)"
    assert [k.kind for k in spec.keys] == ["SHARD", "SORT", "KEY", "PRIMARY"]
    shown = create_table_sql(stored(spec))
    assert "`odd name` VARCHAR(20)" in shown and "`ts` BIGINT NOT NULL" in shown
    assert "KEY `ix` (`user_id`, `ts`) USING HASH" in shown
    again = stored(table_spec(parse_one(shown)))
    assert again == stored(spec)


def test_a_spec_is_checked_when_made():
    col = ColumnSpec("a", pa.int64())
    with pytest.raises(ConfigError, match="PRIMARY KEY names unknown column"):
        TableSpec("t", (col,), (TableKey("PRIMARY", ("b",)),))
    with pytest.raises(ConfigError, match="column 'A' twice"):
        TableSpec("t", (col, ColumnSpec("A", pa.string())))
    with pytest.raises(ConfigError, match="at least one column"):
        TableSpec("t", ())


def test_spark_ddl_types_stay_text_for_the_engine_to_read():
    spec = TableSpec("t", (ColumnSpec("a", "ARRAY<STRING>"), ColumnSpec("b c", "MAP<STRING, INT>")))
    assert spec.schema == "`a` ARRAY<STRING>, `b c` MAP<STRING, INT>"
    assert ddl_types(spec.schema) == {"a": "ARRAY<STRING>", "b c": "MAP<STRING, INT>"}

"""Column types to Arrow without Spark: CREATE TABLE makes the same table as Spark's DDL
parser would, and starts no Spark unless a computed column needs checking."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.engine.schema import to_arrow
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.frontends.singlestore.parser import parse_one
from sparkpipes.frontends.singlestore.types import arrow_type, spark_type

COLUMNS = """a TINYINT, b SMALLINT, c MEDIUMINT, d INT, e BIGINT, f INT UNSIGNED,
 g BIGINT UNSIGNED, h TINYINT UNSIGNED, ee SMALLINT UNSIGNED, i BOOL, j FLOAT, k REAL,
 l DOUBLE, m DECIMAL, n DECIMAL(10,2), o NUMERIC(5), dd DECIMAL(38,38), p CHAR(3),
 q VARCHAR(20), r TEXT, ff LONGTEXT, s JSON, u BLOB, v VARBINARY(9), w DATE, x DATETIME,
 y TIMESTAMP, z ARRAY<INT>, aa MAP<STRING, BIGINT>, bb STRUCT<x: INT, y: ARRAY<STRING>>,
 cc MAP<STRING, STRUCT<q: DOUBLE>>"""


def test_arrow_types_are_what_spark_makes_of_the_ddl(engine):
    columns = parse_one(f"CREATE TABLE t ({COLUMNS})").columns
    engine.spark  # noqa: B018 - Spark's DDL parser is the reference
    by_spark = to_arrow(", ".join(f"`{c.name}` {spark_type(c.type)}" for c in columns))
    ours = to_arrow(pa.schema([pa.field(c.name, arrow_type(c.type)) for c in columns]))
    assert ours[0].equals(by_spark[0], check_metadata=True)
    assert ours[1] == by_spark[1]


@pytest.mark.parametrize("typ", ["DECIMAL(39,0)", "DECIMAL(5,7)", "DECIMAL(0,0)"])
def test_decimals_out_of_range_are_refused(typ):
    (column,) = parse_one(f"CREATE TABLE t (c {typ})").columns
    with pytest.raises(ConfigError, match=r"DECIMAL takes a precision of 1 to 38"):
        arrow_type(column.type)


def test_create_table_starts_no_spark_unless_a_column_is_computed(engine):
    session = SqlSession(engine)
    session.execute(
        "CREATE TABLE ev (id BIGINT NOT NULL, at DATETIME, amount DECIMAL(12,3), "
        "tags ARRAY<TEXT>, PRIMARY KEY (id)); SHOW TABLES; DESCRIBE ev; SHOW CREATE TABLE ev"
    )
    assert engine.rt._spark is None
    rec = engine.catalog.tables.get("ev")
    assert rec.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert rec.ddl == "`id` BIGINT, `at` TIMESTAMP, `amount` DECIMAL(12,3), `tags` ARRAY<STRING>"
    session.execute("CREATE TABLE c (a INT, b AS (a + 1) PERSISTED INT)")
    assert engine.rt._spark is not None  # the expression is checked by Spark
    with pytest.raises(ConfigError, match=r"computed column 'b' of table 'bad' is invalid"):
        session.execute("CREATE TABLE bad (a INT, b AS (nope + 1) PERSISTED INT)")

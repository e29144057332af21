"""What ``DELETE`` and ``UPDATE`` make of a table's rows (``engine.changes``), on Spark:
the changes keep the values the statements set (a ``-0.0`` stays ``-0.0``, which Spark's
``distinct()`` would turn into ``0.0``), a table without a primary key gets one change
for each set of equal rows (the MERGE matches them all), and the count is MySQL's rows
affected, taken before that: two equal rows deleted are two rows. A local checkpoint of
the rows lost with an executor is transient, not the statement's fault."""

from __future__ import annotations

import datetime as dt
import math

import pyarrow as pa
import pytest

from sparkpipes.catalog import TableRecord
from sparkpipes.config.procedure import ProcedureStatement
from sparkpipes.engine.changes import ChangedTable
from sparkpipes.errors import ConfigError, LostExecutorDataError
from sparkpipes.sinks.delta.upsert import CHANGE_OP, old_column


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _table(keys: tuple[str, ...] = ()) -> TableRecord:
    schema = pa.schema([("x", pa.float64()), ("y", pa.int32())])
    options = {"keys": [{"kind": "PRIMARY", "columns": list(keys)}]} if keys else {}
    return TableRecord("t", "/nowhere", "", schema, options, dt.datetime.now(dt.UTC))


def _changed(spark, rows, keys=()) -> ChangedTable:
    snapshot = spark.createDataFrame(rows, "x double, y int")
    return ChangedTable(_table(keys), snapshot, ConfigError)


def _run(spark):
    def run(query, statement, views):
        views[statement.table].createOrReplaceTempView(statement.table)
        return spark.sql(query)

    return run


def _delete(where: str) -> ProcedureStatement:
    return ProcedureStatement("t", where, change="delete", text=f"DELETE FROM t WHERE {where}")


def _update(assign, where: str = "TRUE") -> ProcedureStatement:
    return ProcedureStatement("t", where, change="update", assign=tuple(assign), text="UPDATE t")


def _negative_zero(v: float) -> bool:
    return v == 0 and math.copysign(1.0, v) < 0


def test_deleting_equal_rows_of_a_keyless_table_counts_each_row(spark):
    table = _changed(spark, [(1.0, 1), (1.0, 1), (2.0, 2)])
    table.delete(_delete("y = 1"), _run(spark), {})
    changes = table.changes().collect()
    assert len(changes) == 1  # one change matches both equal rows
    assert changes[0][CHANGE_OP] == "delete" and changes[0][old_column(1)] == 1
    assert table.affected() == 2  # MySQL: 2 rows affected


def test_an_update_to_minus_zero_keeps_its_sign_in_a_keyless_table(spark):
    table = _changed(spark, [(5.0, 1), (5.0, 1), (7.0, 2)])
    table.update(_update([("x", "-0e0")], "y = 1"), _run(spark), {})
    changes = table.changes().collect()
    assert len(changes) == 1
    assert _negative_zero(changes[0]["x"])  # distinct() would have made it 0.0
    assert changes[0][old_column(0)] == 5.0
    assert table.affected() == 2


def test_an_update_to_minus_zero_keeps_its_sign_in_a_keyed_table(spark):
    table = _changed(spark, [(5.0, 1), (7.0, 2)], keys=("y",))
    table.update(_update([("x", "-0e0")], "y = 1"), _run(spark), {})
    (change,) = table.changes().collect()
    assert _negative_zero(change["x"]) and change[CHANGE_OP] == "update"
    assert table.affected() == 1


def test_zero_to_minus_zero_is_a_change_as_mysql_counts_it_but_zero_to_zero_is_not(spark):
    """MySQL compares the stored values: ``-0.0`` over ``0.0`` changes the row (SQL's
    ``=`` says they are equal); setting a value it has changes nothing."""
    table = _changed(spark, [(0.0, 1), (0.0, 2)], keys=("y",))
    table.update(_update([("x", "-0e0")], "y = 1"), _run(spark), {})
    table.update(_update([("x", "0e0")], "y = 2"), _run(spark), {})
    (change,) = table.changes().collect()
    assert change["y"] == 1 and _negative_zero(change["x"])
    assert table.affected() == 1


def test_unchanged_rows_of_an_update_are_not_counted(spark):
    table = _changed(spark, [(1.0, 1), (1.0, 1), (2.0, 2)])
    table.update(_update([("x", "1.0")]), _run(spark), {})  # only (2.0, 2) moves
    changes = table.changes().collect()
    assert [(c["x"], c["y"]) for c in changes] == [(1.0, 2)]
    assert table.affected() == 1


def test_a_lost_local_checkpoint_is_transient_not_the_statements_error(spark):
    """The rows a statement reads are a local checkpoint, kept by the executors only: one
    lost with its executor (here: its blocks removed) is the transient error, which a
    batch retries, never the statement's ConfigError."""
    table = _changed(spark, [(1.0, 1), (2.0, 2)])
    table.delete(_delete("y = 1"), _run(spark), {})
    table.state.count()  # the checkpoint is made
    rdds = spark.sparkContext._jsc.sc().getPersistentRDDs()
    values = rdds.values().iterator()
    while values.hasNext():
        values.next().unpersist(True)
    with pytest.raises(LostExecutorDataError) as e:
        table.affected()
    assert e.value.transient and "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND" in e.value.message

"""An integer SUM of an aggregating load saturates at its type's bounds, as Pinot's stored
``intValue()`` / ``longValue()`` of its double sum do, instead of wrapping around in the
MERGE that meets the stored row (delta-rs, no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sparkpipes.sinks.delta import aggregates


@pytest.mark.parametrize(
    ("arrow_type", "stored", "added", "expected"),
    [
        (pa.int32(), 2_147_483_000, 1_000, 2_147_483_647),
        (pa.int32(), -2_147_483_000, -1_000, -2_147_483_648),
        (pa.int64(), 9_223_372_036_854_775_000, 1_000, 9_223_372_036_854_775_807),
        (pa.int32(), 5, 7, 12),
        (pa.float64(), 1.5, 2.25, 3.75),
    ],
)
def test_a_sum_meets_the_stored_row_within_its_types_bounds(
    tmp_path, arrow_type, stored, added, expected
):
    where = str(tmp_path / "t")
    write_deltalake(where, pa.table({"d": ["x"], "n": pa.array([stored], arrow_type)}))
    batch = pa.table({"d": ["x"], "n": pa.array([added], arrow_type)})
    sql = aggregates.merged("n", "SUM", str(arrow_type))
    DeltaTable(where).merge(
        batch, aggregates.predicate(["d"]), source_alias="s", target_alias="t"
    ).when_matched_update(updates={"`n`": sql}).execute()
    (row,) = DeltaTable(where).to_pyarrow_table().to_pylist()
    assert row["n"] == expected

"""The Delta sink's write strategies, chosen at assembly: append, append through the
ingest-time SQL, and upsert (replace / ignore) by key streamed into one MERGE."""

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkpipes.engine.batch.transform import Refiner, Transform
from sparkpipes.sinks import BatchCommit, DeltaSink, SinkContext
from sparkpipes.sinks.frames import stream_frame

TABLE = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def sink(tmp_path, spark, write="append", refine=None, staged=TABLE):
    ctx = SinkContext(
        table="t",
        location=str(tmp_path / "t"),
        schema=TABLE,
        write=write,
        primary_key=("id",) if write != "append" else (),
        staged_schema=staged,
        refine=refine,
        scratch=str(tmp_path / "scratch"),
        spark=lambda: spark,
    )
    s = DeltaSink.for_pipeline(ctx)
    if not s.exists():
        s.create()
    return s


def rows(s):
    t = DeltaTable(s.uri).to_pyarrow_table().sort_by("id")
    return list(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


def load(s, batch_id, *parts):
    """Stage each part as one task would, finish and commit them as one batch."""
    w = s.writer()
    staged = [
        w.write(pa.table(p, schema=w.schema), f"part-b{batch_id}-p{i}") for i, p in enumerate(parts)
    ]
    done = s.finish(staged, batch_id)
    fresh = s.commit(done, BatchCommit("app", "p", batch_id, {"0": batch_id}))
    s.discard()
    return fresh


def test_append_writes_the_table_files_directly(tmp_path, spark):
    s = sink(tmp_path, spark)
    assert not s.stages and s.writer().root == s.uri
    assert load(s, 1, {"id": [1, 2], "v": ["a", "b"]})
    assert rows(s) == [(1, "a"), (2, "b")]
    assert not load(s, 1, {"id": [3], "v": ["c"]})  # a replay publishes nothing
    assert rows(s) == [(1, "a"), (2, "b")]


def test_append_through_ingest_time_sql(tmp_path, spark):
    staged = pa.schema([("id", pa.int64()), ("@raw", pa.string())])
    refine = Refiner(Transform(assignments=(("v", "upper(`@raw`)"),), where="id > 1"), TABLE)
    s = sink(tmp_path, spark, refine=refine, staged=staged)
    assert s.writer().root == s.scratch  # tasks stage; the table files come from Spark
    assert load(s, 1, {"id": [1, 2], "@raw": ["a", "b"]}, {"id": [3], "@raw": ["c"]})
    assert rows(s) == [(2, "B"), (3, "C")]
    assert DeltaTable(s.uri).transaction_version("app") == 1


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("replace", [(1, "new-last"), (2, "b2"), (3, "c")]),
        ("ignore", [(1, "old"), (2, "b1"), (3, "c")]),
    ],
)
def test_upsert_keeps_one_row_per_key_in_partition_and_offset_order(
    tmp_path, spark, mode, expected
):
    s = sink(tmp_path, spark, write=mode)
    assert load(s, 1, {"id": [1], "v": ["old"]})
    # batch 2: key 1 twice in partition 0 and once in partition 1; key 2 twice in p0
    p0 = {"id": [1, 2, 1, 2], "v": ["new-first", "b1", "new-mid", "b2"]}
    p1 = {"id": [3, 1], "v": ["c", "new-last"]}
    assert load(s, 2, p0, p1)
    assert rows(s) == expected
    assert DeltaTable(s.uri).transaction_version("app") == 2
    assert not load(s, 2, p0)  # replayed: the MERGE does not run again
    assert rows(s) == expected
    assert not (tmp_path / "scratch").exists()


def test_a_frame_streams_as_arrow_one_spark_partition_at_a_time(spark):
    df = spark.range(0, 10_000, numPartitions=4).selectExpr("id", "cast(id AS string) AS v")
    batches = list(stream_frame(df, TABLE, "t"))
    assert all(b.schema == TABLE for b in batches)
    assert len(batches) >= 4
    assert sum(b.num_rows for b in batches) == 10_000

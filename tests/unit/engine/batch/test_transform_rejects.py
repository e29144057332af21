"""``TransformSpec.rejects``: rows ingest-time SQL refuses with a reason (Pinot's
transforms that throw), judged on the row the ``SET`` expressions read, kept in the stored
definition, and sent to the errors store with their partition and offset."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkpipes.config import PipelineSpec
from sparkpipes.config.parts import TransformSpec
from sparkpipes.engine.batch.transform import REJECT_COLUMN, Refiner, Transform, apply

TABLE = pa.schema([("id", pa.int64()), ("v", pa.string())])
NOT_JSON = "`@j` IS NOT NULL AND try_parse_json(`@j`) IS NULL"
REASON = "transform of column 'v' (jsonPathString(j, '$.a')) fails: it's not JSON"


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _staged(spark):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType(
        [
            StructField("id", LongType()),
            StructField("@j", StringType()),
            StructField("__p", StringType()),
            StructField("__o", LongType()),
        ]
    )
    rows = [
        (1, '{"a": "x"}', "0", 10),
        (2, "nope", "0", 11),
        (3, None, "1", 12),
        (4, "no", "1", 13),
    ]
    return spark.createDataFrame(rows, schema)


def _transform(where: str | None = None) -> Transform:
    return Transform(
        assignments=(("v", "get_json_object(`@j`, '$.a')"),),
        where=where,
        rejects=((NOT_JSON, REASON),),
    )


def test_a_rejected_row_goes_to_the_errors_with_its_partition_and_offset(spark):
    refine = Refiner(_transform(), TABLE, skip=True, locate=("__p", "__o"))
    out = refine(_staged(spark))
    assert sorted((r["id"], r["v"]) for r in out.collect()) == [(1, "x"), (3, None)]
    rejected = refine.drain()
    assert [(e.partition, e.offset) for e in rejected] == [("0", 11), ("1", 13)]
    assert [e.reason for e in rejected] == [REASON, REASON]


def test_the_reason_comes_before_a_cast_and_where_does_not_hide_it(spark):
    # the WHERE would leave row 2 out: a record whose transform throws never reaches
    # Pinot's filter, it is dropped with an error
    refine = Refiner(_transform(where="id != 2"), TABLE, skip=True, locate=("__p", "__o"))
    out = refine(_staged(spark))
    assert sorted(r["id"] for r in out.collect()) == [1, 3]
    assert [e.offset for e in refine.drain()] == [11, 13]


def test_check_mode_names_the_reason_in_the_reject_column(spark):
    out = apply(_staged(spark), _transform(), TABLE, ("__o",), check=True)
    got = {r["__o"]: r[REJECT_COLUMN] for r in out.collect()}
    assert got == {10: None, 11: REASON, 12: None, 13: REASON}


def test_without_check_a_rejected_row_fails_the_job_naming_why(spark):
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException, match="fails: it's not JSON"):
        apply(_staged(spark), _transform(), TABLE).collect()
    good = _staged(spark).where("id IN (1, 3)")
    assert sorted(r["id"] for r in apply(good, _transform(), TABLE).collect()) == [1, 3]


def test_a_transform_with_rejects_alone_is_ingest_time_sql():
    assert TransformSpec(rejects=(("true", "why"),))
    assert Transform(rejects=(("true", "why"),))
    assert "true" in Transform(rejects=(("true", "why"),)).expressions()


def _spec(**transform) -> PipelineSpec:
    return PipelineSpec.build(
        name="p",
        source="kafka",
        location="127.0.0.1:9092/t",
        table="t",
        assignments=[("v", "`@j`")],
    ).replace(transform=TransformSpec((("v", "`@j`"),), **transform))


def test_rejects_are_kept_in_the_stored_definition():
    spec = _spec(rejects=((NOT_JSON, REASON),))
    stored = json.loads(json.dumps(spec.to_json()))
    assert stored["transform"]["rejects"] == [[NOT_JSON, REASON]]
    assert PipelineSpec.from_json(stored) == spec


def test_a_definition_stored_before_rejects_loads_without_them():
    spec = _spec()
    stored = json.loads(json.dumps(spec.to_json()))
    assert "rejects" not in stored["transform"]  # stored as before the field existed
    assert PipelineSpec.from_json(stored).transform.rejects == ()

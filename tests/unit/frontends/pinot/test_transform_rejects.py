"""The lowering of Pinot transforms and filters that throw for a record
(``PinotExpr.fails``): without ``continueOnError`` each is a reject of the pipeline
(``TransformSpec.rejects``, to the errors store), as Pinot's ``ExpressionTransformer`` /
``FilterTransformer`` rethrow and its consumer drops the record; with it the column is
left null and the record kept (``ExpressionTransformer.java:193-199``,
``FilterTransformer.java``: ``record.markIncomplete()``, the record kept)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import pytest

from sparkpipes.frontends.pinot.lowering import lower
from sparkpipes.frontends.pinot.model import load_schema, load_table
from tests.unit.frontends.pinot.test_chain import _rows

SCHEMA = {
    "schemaName": "t",
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "INT"},
        {"name": "a", "dataType": "STRING"},
        {"name": "level", "dataType": "STRING"},
    ],
}
STREAM = {
    "streamType": "kafka",
    "stream.kafka.topic.name": "t",
    "stream.kafka.broker.list": "127.0.0.1:9092",
    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
}
TABLE = {
    "tableName": "t",
    "tableType": "REALTIME",
    "segmentsConfig": {"schemaName": "t"},
    "tableIndexConfig": {"streamConfigs": STREAM},
    "ingestionConfig": {
        "transformConfigs": [
            # a value made of what throws: Pinot's column is null, never 'none'
            {
                "columnName": "a",
                "transformFunction": "coalesce(jsonPathString(j, '$.a'), 'none')",
            },
            # an intermediate (no schema column) another transform reads
            {"columnName": "msg", "transformFunction": "jsonPathString(payload, '$.msg')"},
            {"columnName": "level", "transformFunction": "jsonPathString(msg, '$.level', 'x')"},
        ],
        "filterConfig": {"filterFunction": "fromDateTime(day, 'yyyy-MM-dd') < 0"},
    },
}
GOOD = {"id": 1, "j": {"a": "x"}, "payload": {"msg": {"level": "hi"}}, "day": "2024-01-01"}


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _table(continue_on_error: bool = False) -> dict:
    t = copy.deepcopy(TABLE)
    t["ingestionConfig"]["continueOnError"] = continue_on_error
    return t


def _load(spark, table: Mapping, records: Sequence[Mapping]) -> tuple[list, dict]:
    """The rows the records become and the reason each rejected one is rejected for."""
    from sparkpipes.engine.batch.transform import REJECT_COLUMN

    got = _rows(spark, table, SCHEMA, records, check=True)
    rejected = {r["id"]: r[REJECT_COLUMN] for r in got if r[REJECT_COLUMN] is not None}
    kept = [{k: r[k] for k in ("id", "a", "level")} for r in got if r[REJECT_COLUMN] is None]
    return kept, rejected


def test_each_throwing_transform_and_the_filter_is_a_reject_naming_itself():
    schema = load_schema(SCHEMA)
    rejects = lower(schema, load_table(_table(), schema)).transform.rejects
    reasons = [r for _, r in rejects]
    assert len(reasons) == 3  # a, the intermediate msg, the filter (level has a default)
    assert reasons[0].startswith("transform of column 'a' (coalesce(jsonPathString(j, '$.a')")
    assert reasons[1].startswith("transform of column 'msg' (jsonPathString(payload")
    assert reasons[2].startswith("ingestionConfig.filterConfig.filterFunction (fromDateTime(")
    assert all("Pinot drops the record" in r for r in reasons)
    lowered = lower(schema, load_table(_table(continue_on_error=True), schema))
    assert lowered.transform.rejects == ()


def test_without_continue_on_error_the_records_pinot_drops_are_rejected(spark):
    records = [
        GOOD,
        {**GOOD, "id": 2, "j": "not json"},
        {**GOOD, "id": 3, "payload": "{broken"},
        {**GOOD, "id": 4, "day": "January"},
        {**GOOD, "id": 5, "a": "own", "j": "not json"},  # its own a: no transform, no throw
        {"id": 6},  # nothing there: every function gives null, none throws
    ]
    kept, rejected = _load(spark, _table(), records)
    assert kept == [
        {"id": 1, "a": "x", "level": "hi"},
        {"id": 5, "a": "own", "level": "hi"},
        {"id": 6, "a": "none", "level": "x"},
    ]
    assert {i: r.split(" (")[0] for i, r in rejected.items()} == {
        2: "transform of column 'a'",
        3: "transform of column 'msg'",
        4: "ingestionConfig.filterConfig.filterFunction",
    }


def test_with_continue_on_error_the_column_is_null_and_the_record_kept(spark):
    records = [
        GOOD,
        {**GOOD, "id": 2, "j": "not json"},
        {**GOOD, "id": 3, "payload": "{broken"},
        {**GOOD, "id": 4, "day": "January"},
    ]
    kept, rejected = _load(spark, _table(continue_on_error=True), records)
    assert rejected == {}
    # a: null where the transform throws, then the STRING default null value; the
    # intermediate msg is null, so level takes its default; the filter that throws keeps
    assert kept == [
        {"id": 1, "a": "x", "level": "hi"},
        {"id": 2, "a": "null", "level": "hi"},
        {"id": 3, "a": "x", "level": "x"},
        {"id": 4, "a": "x", "level": "hi"},
    ]


CONVERTING_SCHEMA = {
    "schemaName": "t",
    "dimensionFieldSpecs": [{"name": "id", "dataType": "INT"}, {"name": "n", "dataType": "INT"}],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "TIMESTAMP",
            "format": "TIMESTAMP",
            "granularity": "1:MILLISECONDS",
        }
    ],
}


def _converting(continue_on_error: bool) -> dict:
    t = copy.deepcopy(TABLE)
    t["ingestionConfig"] = {
        "transformConfigs": [
            {"columnName": "ts", "transformFunction": "jsonPathString(p, '$.when')"},
            {"columnName": "n", "transformFunction": "jsonPathArray(p, '$.ns')"},
        ],
        "filterConfig": {"filterFunction": "jsonPathLong(p, '$.skip', 0) = 1"},
        "continueOnError": continue_on_error,
    }
    return t


@pytest.mark.parametrize("continue_on_error", [False, True])
def test_a_value_that_does_not_convert_is_judged_after_the_filter(spark, continue_on_error):
    """Pinot's ``DataTypeTransformer`` runs after the filter (``RecordTransformerUtils``):
    text that is no timestamp (``TimestampUtils.toTimestamp`` throws) or an array of two
    into a single-value column ("Cannot read single-value from Object[]") drops the
    record, or under ``continueOnError`` stores the default; a record the filter drops
    is never converted. Before, such text failed the whole batch (Spark's CAST)."""
    from sparkpipes.engine.batch.transform import REJECT_COLUMN

    records = [
        {"id": 1, "p": {"when": "2024-01-02 03:04:05", "ns": [7]}},
        {"id": 2, "p": {"when": "abc", "ns": [7]}},
        {"id": 3, "p": {"when": "2024-01-02", "ns": [7, 8]}},
        {"id": 4, "p": {"when": "abc", "ns": [7, 8], "skip": 1}},
    ]
    got = _rows(spark, _converting(continue_on_error), CONVERTING_SCHEMA, records, check=True)
    rejected = sorted(r["id"] for r in got if r[REJECT_COLUMN] is not None)
    kept = {r["id"]: r for r in got if r[REJECT_COLUMN] is None}
    if continue_on_error:
        assert rejected == [] and sorted(kept) == [1, 2, 3]
        # the default null values (FieldSpec): TIMESTAMP 0, INT Integer.MIN_VALUE
        assert str(kept[2]["ts"]) == "1970-01-01 00:00:00" and kept[3]["n"] == -(2**31)
    else:
        assert rejected == [2, 3] and sorted(kept) == [1]
    assert kept[1]["n"] == 7 and str(kept[1]["ts"]).startswith("2024-01-02 03:04:05")

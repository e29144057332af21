"""A Pinot transform function that throws for a record, over a real Kafka topic.

Pinot's ``ExpressionTransformer.transform`` (apache/pinot 210c2951e72,
``pinot-segment-local/.../recordtransformer/ExpressionTransformer.java:178-197``) rethrows
without ``continueOnError``, and ``RealtimeSegmentDataManager.processStreamEvents`` drops
the record with a segment error and consumes on: here it goes to the errors store with its
partition and offset and the records after it load. Under ``continueOnError`` the column
is left null (then its default null value) and the record loads. ``jsonPathString(json,
path)`` throws for text that is not JSON (``JsonFunctions.java:235-241``).
"""

from __future__ import annotations

from tests.integration.test_pinot_tables import load, produce, rows, schema, table_config

TRANSFORM = {"columnName": "a", "transformFunction": "jsonPathString(j, '$.a')"}


def _records(broker, topic):
    produce(
        broker,
        topic,
        [
            (None, {"id": 1, "j": {"a": "x"}, "ts": 1}, None),
            (None, {"id": 2, "j": "not json", "ts": 2}, None),
            (None, {"id": 3, "j": {"b": 1}, "ts": 3}, None),
            (None, {"id": 4, "a": "own", "j": "not json", "ts": 4}, None),
        ],
    )


def _schema():
    return schema([{"name": "id", "dataType": "INT"}, {"name": "a", "dataType": "STRING"}])


def test_a_record_whose_transform_throws_goes_to_the_errors_store(engine, broker, topic):
    _records(broker, topic)
    t = table_config(broker, topic, ingestionConfig={"transformConfigs": [TRANSFORM]})
    load(engine, t, _schema())
    # record 3 has no "a": null, the STRING default null value; record 4 has its own
    # value, so the transform does not run (and cannot throw)
    assert {i: r["a"] for i, r in rows(engine).items()} == {1: "x", 3: "null", 4: "own"}
    [error] = engine.errors("t_REALTIME")
    assert error["partition"] == "0" and error["offset"] == 1
    assert "transform of column 'a'" in error["reason"]
    assert "jsonPathString(j, '$.a')" in error["reason"]


def test_under_continue_on_error_the_record_loads_with_the_default(engine, broker, topic):
    _records(broker, topic)
    ingestion = {"transformConfigs": [TRANSFORM], "continueOnError": True}
    load(engine, table_config(broker, topic, ingestionConfig=ingestion), _schema())
    got = {i: r["a"] for i, r in rows(engine).items()}
    assert got == {1: "x", 2: "null", 3: "null", 4: "own"}
    assert engine.errors("t_REALTIME") == []

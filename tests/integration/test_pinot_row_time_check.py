"""``ingestionConfig.rowTimeValueCheck`` over a real Kafka topic.

Pinot's ``TimeValidationTransformerUtils.transformTimeValue`` (apache/pinot 210c2951e72,
``pinot-segment-local/.../utils/TimeValidationTransformerUtils.java:106-137``) throws for a
time outside 1971-2071 without ``continueOnError`` — ``RealtimeSegmentDataManager`` drops
the record and consumes on: here it goes to the errors store with its partition and offset
and the records after it load — and under ``continueOnError`` nulls it, so the time
column's default is stored (``NullValueTransformerUtils``: its ``defaultNullValue``, a
valid time here).
"""

from __future__ import annotations

from tests.integration.test_pinot_tables import load, produce, rows, schema, table_config

GOOD_MS = 1_700_000_000_000
DEFAULT_MS = 946_684_800_000  # 2000-01-01


def _records(broker, topic):
    produce(
        broker,
        topic,
        [
            (None, {"id": 1, "ts": GOOD_MS}, None),
            (None, {"id": 2, "ts": 5}, None),  # 1970: out of range
            (None, {"id": 3}, None),  # no time: not checked, the default
            (None, {"id": 4, "ts": 4_000_000_000_000}, None),  # 2096: out of range
        ],
    )


def _schema():
    s = schema([{"name": "id", "dataType": "INT"}])
    s["dateTimeFieldSpecs"][0]["defaultNullValue"] = DEFAULT_MS
    return s


def test_a_record_whose_time_is_out_of_range_goes_to_the_errors_store(engine, broker, topic):
    _records(broker, topic)
    load(
        engine, table_config(broker, topic, ingestionConfig={"rowTimeValueCheck": True}), _schema()
    )
    assert {i: r["ts"] for i, r in rows(engine).items()} == {1: GOOD_MS, 3: DEFAULT_MS}
    errors = sorted(engine.errors("t_REALTIME"), key=lambda e: e["offset"])
    assert [(e["partition"], e["offset"]) for e in errors] == [("0", 1), ("0", 3)]
    assert all("not within 1971-01-01 and 2071-01-01 UTC" in e["reason"] for e in errors)


def test_under_continue_on_error_the_time_is_the_default(engine, broker, topic):
    _records(broker, topic)
    ingestion = {"rowTimeValueCheck": True, "continueOnError": True}
    load(engine, table_config(broker, topic, ingestionConfig=ingestion), _schema())
    got = {i: r["ts"] for i, r in rows(engine).items()}
    assert got == {1: GOOD_MS, 2: DEFAULT_MS, 3: DEFAULT_MS, 4: DEFAULT_MS}
    assert engine.errors("t_REALTIME") == []

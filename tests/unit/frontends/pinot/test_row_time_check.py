"""``ingestionConfig.rowTimeValueCheck`` (``frontends.pinot.timecheck``): the time column
checked as Pinot's ``TimeValidationTransformer`` checks it, over real records through the
pipeline's decoder, SET, WHERE, rejects and the table's null rule in a Spark session.

Pinot's source (apache/pinot 210c2951e72), ``pinot-segment-local/src/main/java/org/apache/
pinot/segment/local/``:

* ``utils/TimeValidationTransformerUtils.java`` 83-88: on only with a timeColumnName and
  rowTimeValueCheck true; 107-109: a null is left alone; 114: the value's text read by
  ``DateTimeFormatSpec.fromFormatToMillis(String)``; 115-123: a text that does not parse
  throws, or under continueOnError is null; 126-134: a time outside
  ``TimeUtils.timeValueInValidRange`` throws, or under continueOnError is null;
* ``recordtransformer/TimeValidationTransformer.java`` 58-61: null put in the column;
* ``recordtransformer/RecordTransformerUtils.java`` 90-98: after the ExpressionTransformer,
  FilterTransformer and DataTypeTransformer, before the NullValueTransformer;
* ``pinot-spi/.../utils/TimeUtils.java`` 37-38, 114-116: 1971-01-01 ≤ millis ≤ 2071-01-01
  (UTC, both ends in);
* ``pinot-spi/.../data/DateTimeFormatSpec.java`` 295-307: EPOCH ``new BigDecimal(text)
  .longValue() * size`` converted from its unit to millis; SIMPLE_DATE_FORMAT Joda's
  ``parseMillis``; TIMESTAMP ``TimestampUtils.toMillisSinceEpoch``;
* ``utils/NullValueTransformerUtils.java`` 79-110: a null time column stores its default
  when that is a valid time, else the time now in its format.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import pathlib
import time
from collections.abc import Mapping, Sequence

import pytest

from sparkpipes.frontends.pinot.lowering import lower
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.problems import PinotConfigError
from sparkpipes.frontends.pinot.timecheck import conditions
from tests.unit.frontends.pinot.test_chain import _rows

MIN_MS, MAX_MS = 31536000000, 3187296000000  # TimeUtils.VALID_MIN/MAX_TIME_MILLIS
GOOD_MS = 1700000000000  # 2023-11-14
DEFAULT_MS = 946684800000  # 2000-01-01: a valid default null value

STREAM = {
    "streamType": "kafka",
    "stream.kafka.topic.name": "t",
    "stream.kafka.broker.list": "127.0.0.1:9092",
    "stream.kafka.decoder.class.name": (
        "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder"
    ),
}


def _schema(data_type: str, fmt: str, default=None) -> dict:
    ts = {"name": "ts", "dataType": data_type, "format": fmt, "granularity": "1:MILLISECONDS"}
    if default is not None:
        ts["defaultNullValue"] = default
    return {
        "schemaName": "t",
        "dimensionFieldSpecs": [{"name": "id", "dataType": "INT"}],
        "dateTimeFieldSpecs": [ts],
    }


def _table(continue_on_error: bool = False, **ingestion) -> dict:
    return {
        "tableName": "t",
        "tableType": "REALTIME",
        "segmentsConfig": {"schemaName": "t", "timeColumnName": "ts"},
        "tableIndexConfig": {"streamConfigs": STREAM},
        "ingestionConfig": {
            "rowTimeValueCheck": True,
            "continueOnError": continue_on_error,
            **ingestion,
        },
    }


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _load(spark, table: Mapping, schema: Mapping, records: Sequence[Mapping]):
    """id → the row's ts (kept rows) and id → the reason (rejected rows)."""
    from sparkpipes.engine.batch.transform import REJECT_COLUMN

    got = _rows(spark, table, schema, records, check=True)
    kept = {r["id"]: r["ts"] for r in got if r[REJECT_COLUMN] is None}
    rejected = {r["id"]: r[REJECT_COLUMN] for r in got if r[REJECT_COLUMN] is not None}
    return kept, rejected


# --- epoch millis (the kelsa table's 1:MILLISECONDS:EPOCH LONG) ------------------------------
MILLIS = _schema("LONG", "1:MILLISECONDS:EPOCH", DEFAULT_MS)
MILLIS_RECORDS = [
    {"id": 1, "ts": GOOD_MS},  # in range: kept as it is (utils 136)
    {"id": 2, "ts": MIN_MS},  # 1971-01-01 itself is valid (TimeUtils 115: >=)
    {"id": 3, "ts": MAX_MS},  # 2071-01-01 itself is valid (TimeUtils 115: <=)
    {"id": 4, "ts": MIN_MS - 1},  # out of range (utils 126)
    {"id": 5, "ts": MAX_MS + 1},  # out of range
    {"id": 6, "ts": 0},  # 1970: out of range
    {"id": 7, "ts": -GOOD_MS},  # negative: out of range
    {"id": 8, "ts": None},  # null: not checked (utils 107; transformer 54)
    {"id": 9},  # missing: not checked
    {"id": 10, "ts": GOOD_MS // 1000},  # seconds given to a millis column: 1970, out
]


def test_without_continue_on_error_a_time_outside_1971_2071_drops_the_record(spark):
    kept, rejected = _load(spark, _table(), MILLIS, MILLIS_RECORDS)
    # utils 129-130: IllegalStateException, the consumer drops the record
    assert set(rejected) == {4, 5, 6, 7, 10}
    assert all("is not within 1971-01-01 and 2071-01-01 UTC" in r for r in rejected.values())
    assert all("rowTimeValueCheck" in r for r in rejected.values())
    # the null and missing times are the NullValueTransformer's: the default (valid)
    assert kept == {1: GOOD_MS, 2: MIN_MS, 3: MAX_MS, 8: DEFAULT_MS, 9: DEFAULT_MS}


def test_with_continue_on_error_an_invalid_time_is_the_columns_default(spark):
    # utils 132-133: logged and null; transformer 59: put in the column; then the
    # NullValueTransformer fills the default (NullValueTransformerUtils 79-110)
    kept, rejected = _load(spark, _table(True), MILLIS, MILLIS_RECORDS)
    assert rejected == {}
    assert kept == {
        **{1: GOOD_MS, 2: MIN_MS, 3: MAX_MS},
        **{i: DEFAULT_MS for i in (4, 5, 6, 7, 8, 9, 10)},
    }


def test_with_continue_on_error_and_no_valid_default_an_invalid_time_is_the_load_time(spark):
    # the implicit default of a LONG dateTime (Long.MIN_VALUE) is no valid time, so
    # NullValueTransformerUtils stores the time now (line 91: fromMillisToFormat(now))
    schema = _schema("LONG", "1:MILLISECONDS:EPOCH")
    before = int(time.time() * 1000)
    kept, rejected = _load(spark, _table(True), schema, [{"id": 1, "ts": 0}, {"id": 2}])
    after = int(time.time() * 1000)
    assert rejected == {} and all(before <= kept[i] <= after for i in (1, 2))


def test_the_kelsa_table_loads_with_its_check(spark):
    """prithvianilk/kelsa pinot/tables/work.json: rowTimeValueCheck with continueOnError."""
    corpus = pathlib.Path(__file__).parents[3] / "corpus" / "pinot" / "other"
    name = "prithvianilk-kelsa-pinot-tables-work"
    table = json.loads((corpus / f"{name}.table.json").read_text())
    schema = json.loads((corpus / f"{name}.schema.json").read_text())
    schema["dimensionFieldSpecs"].insert(0, {"name": "id", "dataType": "INT"})
    records = [{"id": 1, "done_at": GOOD_MS}, {"id": 2, "done_at": 5}]
    before = int(time.time() * 1000)
    got = _rows(spark, table, schema, records)
    assert got[0]["done_at"] == GOOD_MS
    assert got[1]["done_at"] >= before  # its default Long.MIN is no time: the load time


# --- epoch in other units ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data_type", "fmt", "valid", "invalid"),
    [
        # DateTimeFormatSpec 298: value * size, TimeUnit.MILLISECONDS.convert(…, unit)
        ("LONG", "1:SECONDS:EPOCH", [GOOD_MS // 1000, MIN_MS // 1000], [GOOD_MS, 0]),
        ("INT", "1:DAYS:EPOCH", [19675, 365, 36890], [364, 36891, -1]),
        ("LONG", "5:MINUTES:EPOCH", [GOOD_MS // 300000, MIN_MS // 300000], [MIN_MS // 300000 - 1]),
        # finer than millis: Java's division toward zero (999 micros are 0 millis)
        (
            "LONG",
            "1:MICROSECONDS:EPOCH",
            [GOOD_MS * 1000, MAX_MS * 1000 + 999],
            [MAX_MS * 1000 + 1000],
        ),
        # a TIMESTAMP column's value is its epoch millis inside Pinot (toInternal)
        (
            "TIMESTAMP",
            "1:MILLISECONDS:EPOCH",
            [GOOD_MS, "2023-11-14 22:13:20"],
            ["1960-01-01 00:00:00"],
        ),
        # EPOCH text is a BigDecimal cut to a long: '1.7e12' and '….9' read; '17' is 1970
        ("STRING", "1:MILLISECONDS:EPOCH", ["1700000000000", "1.7e12", "1700000000000.9"], ["17"]),
    ],
)
def test_epoch_in_its_unit(spark, data_type, fmt, valid, invalid):
    records = [{"id": i, "ts": v} for i, v in enumerate([*valid, *invalid])]
    kept, rejected = _load(spark, _table(), _schema(data_type, fmt), records)
    assert set(kept) == set(range(len(valid))), rejected
    assert set(rejected) == set(range(len(valid), len(records)))
    assert all("is not within 1971-01-01" in r for r in rejected.values())


def test_epoch_text_that_is_no_number_does_not_parse(spark):
    # a STRING epoch column: new BigDecimal(" 1700000000000") throws (utils 115-119)
    records = [{"id": 1, "ts": " 1700000000000"}, {"id": 2, "ts": "soon"}]
    schema = _schema("STRING", "1:MILLISECONDS:EPOCH", str(DEFAULT_MS))
    _, rejected = _load(spark, _table(), schema, records)
    assert set(rejected) == {1, 2}
    assert all("cannot read" in r and "'1:MILLISECONDS:EPOCH'" in r for r in rejected.values())
    kept, rejected = _load(spark, _table(True), schema, records)
    assert rejected == {} and kept == {1: str(DEFAULT_MS), 2: str(DEFAULT_MS)}


# --- SIMPLE_DATE_FORMAT -----------------------------------------------------------------------
DAYS = _schema("STRING", "1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd", "2000-01-01")
DAY_RECORDS = [
    {"id": 1, "ts": "2024-02-29"},  # parses, in range
    {"id": 2, "ts": "1971-01-01"},  # the first valid day
    {"id": 3, "ts": "1970-12-31"},  # parses, out of range (utils 126)
    {"id": 4, "ts": "2071-01-02"},  # parses, out of range
    {"id": 5, "ts": "2024/02/29"},  # does not parse (utils 115: parseMillis throws)
    {"id": 6, "ts": "tomorrow"},  # does not parse
    {"id": 7, "ts": None},  # null: not checked
]


def test_a_date_pattern_time_that_does_not_parse_or_is_out_of_range_drops_the_record(spark):
    kept, rejected = _load(spark, _table(), DAYS, DAY_RECORDS)
    assert kept == {1: "2024-02-29", 2: "1971-01-01", 7: "2000-01-01"}
    assert set(rejected) == {3, 4, 5, 6}
    for i in (3, 4):
        assert "is not within 1971-01-01 and 2071-01-01 UTC" in rejected[i]
    for i in (5, 6):  # Pinot's first failure: the parse (utils 112-123, before 126)
        assert "cannot read" in rejected[i] and "yyyy-MM-dd" in rejected[i]


def test_with_continue_on_error_a_bad_date_is_the_default(spark):
    kept, rejected = _load(spark, _table(True), DAYS, DAY_RECORDS)
    assert rejected == {}
    assert kept == {1: "2024-02-29", 2: "1971-01-01", **{i: "2000-01-01" for i in range(3, 8)}}


def test_a_date_pattern_read_in_its_zone(spark):
    # DateTimeFormatPatternSpec: Joda's formatter withZone(the format's zone); 1971-01-01
    # 00:30 in New York is 05:30 UTC: in range; 1970-12-31 18:00 there is 23:00 UTC: out
    schema = load_schema(_schema("STRING", "SIMPLE_DATE_FORMAT|yyyy-MM-dd HH:mm|America/New_York"))
    f = schema.field("ts")
    got = {}
    for value in ("1971-01-01 00:30", "1970-12-31 18:00", "1971-01-01"):
        unparsed, out = conditions(f"'{value}'", f)
        got[value] = spark.sql(f"SELECT {unparsed} AS u, {out} AS o").first().asDict()
    assert got == {
        "1971-01-01 00:30": {"u": False, "o": False},
        "1970-12-31 18:00": {"u": False, "o": True},
        "1971-01-01": {"u": True, "o": True},  # no time: Joda's parse throws
    }


# --- where the check sits among Pinot's transformers --------------------------------------------
def test_the_check_reads_the_transforms_value_and_never_a_filtered_record(spark):
    # RecordTransformerUtils 90-98: the transform makes ts, the filter drops id 3, then the
    # time is checked: id 2's made time is out of range, id 3 is filtered before the check
    table = _table(
        transformConfigs=[{"columnName": "ts", "transformFunction": "fromEpochSeconds(secs)"}],
        filterConfig={"filterFunction": "id = 3"},
    )
    records = [
        {"id": 1, "secs": GOOD_MS // 1000},
        {"id": 2, "secs": 5},
        {"id": 3, "secs": 5},
        {"id": 4, "ts": GOOD_MS, "secs": 5},  # the record's own ts: the transform is skipped
    ]
    kept, rejected = _load(spark, table, MILLIS, records)
    assert kept == {1: GOOD_MS, 4: GOOD_MS} and set(rejected) == {2}
    kept, rejected = _load(spark, _with(table, continueOnError=True), MILLIS, records)
    assert kept == {1: GOOD_MS, 2: DEFAULT_MS, 4: GOOD_MS} and rejected == {}


def test_a_transform_that_throws_is_its_own_reject_first(spark):
    # the ExpressionTransformer drops the record before the check runs
    table = _table(
        transformConfigs=[
            {"columnName": "ts", "transformFunction": "fromDateTime(day, 'yyyy-MM-dd')"}
        ]
    )
    _, rejected = _load(spark, table, MILLIS, [{"id": 1, "day": "nope"}])
    assert "transform of column 'ts'" in rejected[1]


def _with(table: Mapping, **ingestion) -> dict:
    t = copy.deepcopy(dict(table))
    t["ingestionConfig"].update(ingestion)
    return t


# --- the key ----------------------------------------------------------------------------------
def test_off_or_absent_checks_nothing():
    schema = load_schema(MILLIS)
    for value in (False, "false", None):
        table = _table()
        if value is None:
            del table["ingestionConfig"]["rowTimeValueCheck"]
        else:
            table["ingestionConfig"]["rowTimeValueCheck"] = value
        cfg = load_table(table, schema)
        assert not cfg.row_time_check and not lower(schema, cfg).transform.rejects


def test_on_as_text_too_and_anything_else_is_refused():
    schema = load_schema(MILLIS)
    assert load_table(_with(_table(), rowTimeValueCheck="TRUE"), schema).row_time_check
    with pytest.raises(PinotConfigError, match="rowTimeValueCheck must be true or false"):
        load_table(_with(_table(), rowTimeValueCheck="yes"), schema)


def test_without_a_time_column_it_checks_nothing_and_says_so():
    # TimeValidationTransformerUtils 80-88: no timeColumnName, no check (no-op)
    table = _table()
    del table["segmentsConfig"]["timeColumnName"]
    schema = load_schema(MILLIS)
    cfg = load_table(table, schema)
    assert not lower(schema, cfg).transform.rejects
    assert any("no time is checked" in w for w in cfg.warnings)


def test_segment_time_value_check_is_accepted_without_effect():
    # RealtimeSegmentConverter.java 97: realtime segments are built without it
    cfg = load_table(_with(_table(), segmentTimeValueCheck=True), load_schema(MILLIS))
    assert "ingestionConfig.segmentTimeValueCheck" in cfg.unrecognized


def test_timestamp_format_column(spark):
    # format TIMESTAMP: TimestampUtils.toMillisSinceEpoch of the millis' text
    schema = _schema("TIMESTAMP", "TIMESTAMP")
    records = [
        {"id": 1, "ts": "2023-11-14 22:13:20"},
        {"id": 2, "ts": "2099-01-01 00:00:00"},
        {"id": 3, "ts": MIN_MS},
    ]
    kept, rejected = _load(spark, _table(), schema, records)
    assert kept == {1: dt.datetime(2023, 11, 14, 22, 13, 20), 3: dt.datetime(1971, 1, 1)}
    assert set(rejected) == {2}

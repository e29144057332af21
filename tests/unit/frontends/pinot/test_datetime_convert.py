"""Pinot's ``dateTimeConvert`` / ``DATETIME_CONVERT`` (``expr/convert.py``), computed by a
real Spark session over a record's text fields, against the cases of Pinot's own test of
its scalar function: ``DateTimeFunctionsTest.testDateTimeConvert``
(pinot-core/src/test/java/org/apache/pinot/core/data/function/DateTimeFunctionsTest.java,
apache/pinot@210c2951e720), and the format forms of ``DateTimeFormatSpec``."""

from __future__ import annotations

import datetime as dt

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import translate
from sparkpipes.frontends.pinot.expr.convert import Granularity, TimeFormat

#: (value, inputFormat, outputFormat, outputGranularity, bucketingTimeZone, expected), as
#: in DateTimeFunctionsTest.testDateTimeConvert
PINOT_CASES = [
    # EPOCH to EPOCH
    (1505898960000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:EPOCH", "15:MINUTES", None, 1505898900000),
    (1505898960000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:EPOCH", "1:MILLISECONDS", None, 1505898960000),
    (1505902560000, "1:MILLISECONDS:EPOCH", "1:HOURS:EPOCH", "1:HOURS", None, 418306),
    (5019675, "5:MINUTES:EPOCH", "1:HOURS:EPOCH", "1:HOURS", None, 418306),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "1:HOURS", None, 1505901600000),
    (None, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "1:HOURS", None, None),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "1:HOURS", "UTC", 1505901600000),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "4:HOURS", None, 1505894400000),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "4:HOURS", "UTC", 1505894400000),
    (5019635, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "4:HOURS", "CET", 1505887200000),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "2:DAYS", None, 1505779200000),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "2:DAYS", "UTC", 1505779200000),
    (5019675, "5:MINUTES:EPOCH", "1:MILLISECONDS:EPOCH", "2:DAYS", "CET", 1505772000000),
    # EPOCH to SDF
    (1505985360000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd", "1:DAYS", None, "20170921"),
    (1505985360000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd", "1:DAYS", "CET", "20170920"),
    (1505962800000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(America/Los_Angeles)", "1:DAYS", None, "20170920"),
    (1505962800000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(America/Los_Angeles)", "1:DAYS", "CET", "20170920"),
    (1505962800000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(IST)", "1:DAYS", None, "20170921"),
    (1505962800000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(IST)", "1:DAYS", "CET", "20170921"),
    (1505962800000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/Los_Angeles)", "1:HOURS", None, "2017092020"),
    (1505962800000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/Los_Angeles)", "1:HOURS", "CET", "2017092020"),
    (1505970000000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/New_York)", "1:HOURS", None, "2017092101"),
    (1505970000000, "1:MILLISECONDS:EPOCH", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/New_York)", "1:HOURS", "CET", "2017092101"),
    (1523560632000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "15:SECONDS", None, "2018-04-12 13:17:00.000"),
    (1523561708000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "3:MINUTES", None, "2018-04-12 13:33:00.000"),
    (1523430205000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "12:HOURS", None, "2018-04-11 00:00:00.000"),
    (1523430205000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "12:HOURS", "CET", "2018-04-10 16:00:00.000"),
    (1519926205000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "5:DAYS", None, "2018-03-01 00:00:00.000"),
    (1519926205000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "5:DAYS", "CET", "2018-02-28 16:00:00.000"),
    (1522230205000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "5:DAYS", None, "2018-03-26 00:00:00.000"),
    (1522230205000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Denver)", "5:DAYS", "CET", "2018-03-25 16:00:00.000"),
    (1524013200000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Los_Angeles)", "1:DAYS", None, "2018-04-17 00:00:00.000"),
    (1524013200000, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS tz(America/Los_Angeles)", "1:DAYS", "CET", "2018-04-17 15:00:00.000"),
    # SDF to EPOCH
    ("20170921", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd", "1:MILLISECONDS:EPOCH", "1:DAYS", None, 1505952000000),
    ("20170921", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd", "1:MILLISECONDS:EPOCH", "1:DAYS", "CET", 1505944800000),
    ("20170921", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(America/New_York)", "1:MILLISECONDS:EPOCH", "1:DAYS", None, 1505952000000),
    ("20170921", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(America/New_York)", "1:MILLISECONDS:EPOCH", "1:DAYS", "CET", 1505944800000),
    ("2017092000", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/New_York)", "1:MILLISECONDS:EPOCH", "1:HOURS", None, 1505880000000),
    ("2017092000", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/New_York)", "1:MILLISECONDS:EPOCH", "1:HOURS", "CET", 1505880000000),
    ("2017092000 America/Los_Angeles", "1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMddHH ZZZ", "1:MILLISECONDS:EPOCH", "1:HOURS", None, 1505890800000),
    ("8/7/2017 12 PM", "1:HOURS:SIMPLE_DATE_FORMAT:M/d/yyyy h a", "1:MILLISECONDS:EPOCH", "1:HOURS", None, 1502107200000),
    ("8/7/2017 12:00:01 PM", "1:SECONDS:SIMPLE_DATE_FORMAT:M/d/yyyy h:mm:ss a", "1:MILLISECONDS:EPOCH", "1:HOURS", None, 1502107200000),
    ("8/7/2017 12:00:01 PM", "1:DAYS:SIMPLE_DATE_FORMAT:M/d/yyyy h:mm:ss a", "1:MILLISECONDS:EPOCH", "1:MILLISECONDS", None, 1502107201000),
]  # fmt: skip

#: the pipe forms and the other outputs of DateTimeFormatSpec / DateTimeConvert
MORE_CASES = [
    # pinpoint's configs: epoch millis bucketed to 10 and 30 seconds
    (1700000012345, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:EPOCH", "10:SECONDS", None, 1700000010000),
    (1700000012345, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:EPOCH", "30:SECONDS", None, 1700000010000),
    # EPOCH text is a BigDecimal cut to a long (DateTimeConvert.fromInputFormatToMillis)
    ("1.4988924E12", "1:MILLISECONDS:EPOCH", "1:HOURS:EPOCH", "1:HOURS", None, 416359),
    # Java's division cuts toward zero: before 1970 the bucket is the later one
    (-1500, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:EPOCH", "1:SECONDS", None, -1000),
    (416359, "EPOCH|HOURS", "EPOCH|MILLISECONDS|1", "MILLISECONDS|1", None, 1498892400000),
    (1498892400000, "EPOCH", "EPOCH|MINUTES|5", "MINUTES|5", None, 4996308),
    (1505962800000, "EPOCH|MILLISECONDS", "SIMPLE_DATE_FORMAT|yyyy-MM-dd HH:mm|America/Los_Angeles", "HOURS", None, "2017-09-20 20:00"),
    ("2017-09-20", "SIMPLE_DATE_FORMAT|yyyy-MM-dd", "1:SECONDS:EPOCH", "1:SECONDS", None, 1505865600),
    # sub-millisecond units: TimeUnit.convert (multiplied, or cut toward zero)
    (1500, "1:MILLISECONDS:EPOCH", "1:MICROSECONDS:EPOCH", "1:SECONDS", None, 1_000_000),
    ("1500999999", "1:NANOSECONDS:EPOCH", "EPOCH", "1:MILLISECONDS", None, 1500),
    # TIMESTAMP output: java.sql.Timestamp's text (UTC); with a bucketing zone, millis
    (1498892400120, "1:MILLISECONDS:EPOCH", "1:MILLISECONDS:TIMESTAMP", "1:MILLISECONDS", None, "2017-07-01 07:00:00.12"),
    (1498892400000, "1:MILLISECONDS:EPOCH", "TIMESTAMP", "1:HOURS", None, "2017-07-01 07:00:00.0"),
    (1498892400000, "1:MILLISECONDS:EPOCH", "TIMESTAMP", "1:DAYS", "UTC", 1498867200000),
    ("2017-07-01 07:30:00", "TIMESTAMP", "1:MILLISECONDS:EPOCH", "1:HOURS", None, 1498892400000),
]  # fmt: skip


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _values(spark, cases):
    from pyspark.sql.types import StringType, StructField, StructType

    exprs = []
    for _, fin, fout, gran, zone, _ in cases:
        tail = f", '{zone}'" if zone else ""
        exprs.append(f"dateTimeConvert(t, '{fin}', '{fout}', '{gran}'{tail})")
    row = [None if c[0] is None else str(c[0]) for c in cases]
    schema = StructType([StructField(f"@t{i}", StringType()) for i in range(len(cases))])
    df = spark.createDataFrame([tuple(row)], schema)
    sqls = [translate(e, where="t").sql.replace("`@t`", f"`@t{i}`") for i, e in enumerate(exprs)]
    return list(df.selectExpr(*[f"{s} AS c{i}" for i, s in enumerate(sqls)]).first())


@pytest.mark.parametrize("cases", [PINOT_CASES, MORE_CASES], ids=["pinot-test", "forms"])
def test_values_are_pinots(spark, cases):
    got = _values(spark, cases)
    expected = [c[-1] for c in cases]
    wrong = [(c, g) for c, g in zip(cases, got) if g != c[-1]]
    assert not wrong, wrong
    assert len(got) == len(expected)


def test_result_type_follows_the_output_format():
    def kind(fout: str, zone: str = "") -> str | None:
        tail = f", '{zone}'" if zone else ""
        return translate(
            f"DATETIME_CONVERT(ts, '1:MILLISECONDS:EPOCH', '{fout}', '1:HOURS'{tail})", where="t"
        ).type

    assert kind("1:HOURS:EPOCH") == "BIGINT"  # a TIMESTAMP column reads it as epoch millis
    assert kind("1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd") == "STRING"
    assert kind("1:MILLISECONDS:TIMESTAMP") == "STRING"
    assert kind("1:MILLISECONDS:TIMESTAMP", "UTC") == "BIGINT"


def test_format_and_granularity_strings_as_pinot_reads_them():
    assert TimeFormat.parse("1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(America/Chicago)") == (
        TimeFormat("SIMPLE_DATE_FORMAT", pattern="yyyyMMdd", zone="America/Chicago")
    )
    # the colon form keeps the ':' of a pattern; the pipe form a zone of its own
    assert TimeFormat.parse("1:SECONDS:SIMPLE_DATE_FORMAT:HH:mm:ss").pattern == "HH:mm:ss"
    assert TimeFormat.parse("SIMPLE_DATE_FORMAT|HH:mm|Asia/Tokyo").zone == "Asia/Tokyo"
    assert TimeFormat.parse("EPOCH|SECONDS|5") == TimeFormat("EPOCH", "SECONDS", 5)
    assert TimeFormat.parse("EPOCH") == TimeFormat("EPOCH", "MILLISECONDS", 1)
    assert Granularity.parse("15:MINUTES").millis == 900_000
    assert Granularity.parse("MINUTES|15").millis == 900_000
    assert Granularity.parse("DAYS").millis == 86_400_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("'1:MILLISECONDS:EPOCH', '1:WEEKS:EPOCH', '1:DAYS'", "time unit WEEKS"),
        ("'1:MILLISECONDS:EPOCH', '1:minutes:EPOCH', '1:DAYS'", "invalid time unit 'minutes'"),
        ("'1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCHS', '1:DAYS'", "invalid time format"),
        ("'1:MILLISECONDS:EPOCH', '0:MILLISECONDS:EPOCH', '1:DAYS'", "invalid size '0'"),
        ("'1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', '1:MICROSECONDS'", "under a milli"),
        ("'1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', '1:MINUTES:X'", "invalid time unit"),
        ("'1:MILLISECONDS:EPOCH', 'SIMPLE_DATE_FORMAT', '1:DAYS'", "without a pattern"),
        (
            "'1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', '1:DAYS', 'Mars/Base'",
            "unknown time zone",
        ),
        ("fmt, '1:MILLISECONDS:EPOCH', '1:DAYS'", "must be text in single quotes"),
    ],
)
def test_what_pinot_cannot_do_is_refused_by_name(args, message):
    with pytest.raises(ConfigError) as e:
        translate(f"DATETIME_CONVERT(ts, {args})", where="transform of column 'day'")
    assert message in str(e.value)
    assert e.value.message.startswith("transform of column 'day'")


PINPOINT = {
    "pinpoint/collector-pinot-heatmap-stat-application-realtime-table": 10_000,
    "pinpoint/inspector-module-inspector-collector-pinot-inspector-stat-application-realtime-table": 30_000,
}


@pytest.mark.parametrize("item", sorted(PINPOINT))
def test_pinpoints_tables_bucket_their_event_time_as_pinot_does(spark, item):
    """Pinpoint's configs fill the TIMESTAMP column ``roundedEventTime`` with
    ``DATETIME_CONVERT(eventTime, '1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH',
    '10:SECONDS')``: epoch millis cut to the bucket, which the column reads as millis."""
    import json
    import pathlib

    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    from sparkpipes.frontends.pinot.lowering import lower
    from sparkpipes.frontends.pinot.model import load_schema, load_table

    corpus = pathlib.Path(__file__).parents[3] / "corpus" / "pinot"
    schema = load_schema(json.loads((corpus / f"{item}.schema.json").read_text()))
    cfg = load_table(json.loads((corpus / f"{item}.table.json").read_text()), schema)
    spec = lower(schema, cfg)
    sql = dict(spec.transform.assignments)["roundedEventTime"]
    assert "timestamp_millis(CAST(" in sql  # a BIGINT of epoch millis into a TIMESTAMP
    # the record's own roundedEventTime, when it has one, wins (Pinot skips the transform);
    # the JSON decoder loads it into the column, converted as Pinot converts it
    assert {"@eventTime", "roundedEventTime"} <= {m.column for m in spec.format.mapping}
    own = dt.datetime.fromtimestamp(1600000000, dt.UTC)
    events = [("1700000012345", None), ("1700000039999", None), (None, None)]
    events.append(("1700000039999", own))
    df = spark.createDataFrame(
        events,
        StructType(
            [
                StructField("@eventTime", StringType()),
                StructField("roundedEventTime", TimestampType()),
            ]
        ),
    )
    got = [r[0] for r in df.selectExpr(f"unix_millis({sql})").collect()]
    bucket = PINPOINT[item]
    assert got[:2] == [int(e) // bucket * bucket for e, _ in events[:2]]
    assert got[2] is None  # a record without eventTime: NULL, then the column's null value
    assert got[3] == 1600000000000

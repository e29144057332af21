"""Pinot ingestion expressions → Spark SQL (config.pinotexpr): values computed by a real
Spark session, as a pipeline computes them over a record's fields (pipeline variables,
which are text), and the errors a user sees for what cannot be translated."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pytest

from sparkpipes.frontends.pinot.expr import PinotExpr, filter_sql, translate
from tests.unit.frontends.pinot.test_expr_parsing import _double

TS = 1644586485807  # 2022-02-11T13:34:45.807Z, a Friday
LONG_MIN = -(2**63)
PAYLOAD = {
    "a": {"b": 3, "c": "x", "f": "12", "e": 3.7},
    "arr": [1, 2, "z", {"k": 1}],
    "n": None,
    "s": "str",
    "t": True,
}
RECORD: dict[str, str | None] = {
    "ts": str(TS),
    "payload": json.dumps(PAYLOAD, separators=(",", ":")),
    "country": "US",
    "name": "hello world",
    "price": "99.5",
    "flag": "true",
    "missing": None,
}
WHERE = "transformConfigs[0] (column 'day')"


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _frame(spark, records: Sequence[Mapping[str, str | None]]):
    from pyspark.sql.types import StringType, StructField, StructType

    names = list(records[0])
    schema = StructType([StructField("@" + n, StringType()) for n in names])
    return spark.createDataFrame([tuple(r[n] for n in names) for r in records], schema)


def _evaluate(spark, exprs: Sequence[str], record: Mapping[str, str | None] = RECORD) -> list:
    """The values of the Pinot expressions ``exprs`` over ``record``, in one query."""
    sqls = [translate(e, where=WHERE).sql for e in exprs]
    row = _frame(spark, [record]).selectExpr(*[f"{s} AS `c{i}`" for i, s in enumerate(sqls)])
    return list(row.first())


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, float):
        return isinstance(got, float) and got == pytest.approx(want, rel=1e-6)
    if want is None or isinstance(want, bool):
        return got is want
    return type(got) is type(want) and got == want


def _check(spark, cases: Sequence[tuple[str, Any]], record=RECORD) -> None:
    got = _evaluate(spark, [e for e, _ in cases], record)
    wrong = {e: (g, w) for (e, w), g in zip(cases, got) if not _same(g, w)}
    assert not wrong, "\n".join(f"{e}: got {g!r}, want {w!r}" for e, (g, w) in wrong.items())


@pytest.fixture(params=["UTC", "America/Los_Angeles", "Asia/Kolkata"])
def session_zone(request, spark):
    """Runs the test in each of several session time zones; results must not differ."""
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, request.param)
    yield request.param
    spark.conf.set(key, before)


# --- date and time: the same in every session time zone -----------------------------

DATETIME = [
    ("toEpochSeconds(ts)", 1644586485),
    ("toEpochMinutes(ts)", 27409774),
    ("toEpochHours(ts)", 456829),
    ("toEpochDays(ts)", 19034),
    ("toEpochSeconds(-1500)", -1),  # truncated toward zero, as Java's TimeUnit
    ("toEpochMinutesRounded(ts, 15)", 27409770),
    ("toEpochMinutesBucket(ts, 15)", 1827318),
    ("toEpochDaysRounded(ts, 7)", 19033),
    ("fromEpochSeconds(1644586485)", 1644586485000),
    ("fromEpochDays(19034)", 1644537600000),
    ("fromEpochMinutesBucket(1827318, 15)", 1644586200000),
    ("round(ts, 1000)", 1644586485000),
    ("toDateTime(ts, 'yyyy-MM-dd HH:mm:ss.SSS')", "2022-02-11 13:34:45.807"),
    ("toDateTime(ts, 'yyyyMMdd')", "20220211"),
    ("toDateTime(ts, 'EEE, d MMM yy hh:mm a')", "Fri, 11 Feb 22 01:34 PM"),
    (
        "toDateTime(ts, 'yyyy-MM-dd''T''HH:mm:ssZZ', 'America/Los_Angeles')",
        "2022-02-11T05:34:45-08:00",
    ),
    ("toDateTime(ts, 'EEEE MMMM D HH:mm Z', 'Asia/Kolkata')", "Friday February 42 19:04 +0530"),
    ("toDateTime(ts, 'yyyy-MM-dd''T''HH:mm:ss.SSS''Z''')", "2022-02-11T13:34:45.807Z"),
    ("toDateTime(ts, 'ss.SS k K h')", "45.80 13 1 1"),
    ("toDateTime(1647138600000, 'yyyy-MM-dd HH:mm:ss')", "2022-03-13 02:30:00"),  # LA's DST gap
    ("fromDateTime('2022-02-11T13:34:45', 'yyyy-MM-dd''T''HH:mm:ss')", 1644586485000),
    (
        "fromDateTime('2022-02-11 05:34:45', 'yyyy-MM-dd HH:mm:ss', 'America/Los_Angeles')",
        1644586485000,
    ),
    ("fromDateTime('2022-02-11T19:04:45.807+05:30', 'yyyy-MM-dd''T''HH:mm:ss.SSSZZ')", TS),
    ("fromDateTime('20220211', 'yyyyMMdd')", 1644537600000),
    ("fromDateTime('2022-03-13 02:30:00', 'yyyy-MM-dd HH:mm:ss')", 1647138600000),
    ("fromDateTime('2022-07-13 04:30:45', 'yyyy-MM-dd HH:mm:ss')", 1657686645000),
    ("fromDateTime('garbage', 'yyyy-MM-dd')", None),
    ("fromDateTime('garbage', 'yyyy-MM-dd', 'UTC', -1)", -1),
    (
        "toDateTime(fromDateTime('2022-07-01 00:00', 'yyyy-MM-dd HH:mm', 'Europe/Berlin'), "
        "'yyyy-MM-dd HH:mm')",
        "2022-06-30 22:00",
    ),
    ("year(ts)", 2022),
    ("month(ts)", 2),
    ("dayOfMonth(ts)", 11),
    ("day(ts)", 11),
    ("dayOfWeek(ts)", 5),
    ("dow(ts)", 5),
    ("dayOfYear(ts)", 42),
    ("hour(ts)", 13),
    ("minute(ts)", 34),
    ("second(ts)", 45),
    ("millisecond(ts)", 807),
    ("quarter(ts)", 1),
    ("week(ts)", 6),
    ("yearOfWeek(1609459200000)", 2020),
    ("hour(ts, 'Asia/Kolkata')", 19),
    ("minute(ts, 'Asia/Kolkata')", 4),
    ("day(ts, 'Pacific/Kiritimati')", 12),
    ("hour(1657686645123)", 4),
    ("dateTrunc('second', ts)", 1644586485000),
    ("dateTrunc('hour', ts)", 1644584400000),
    ("dateTrunc('day', ts)", 1644537600000),
    ("dateTrunc('week', ts)", 1644192000000),
    ("dateTrunc('month', ts)", 1643673600000),
    ("dateTrunc('quarter', ts)", 1640995200000),
    ("dateTrunc('YEAR', ts)", 1640995200000),
    ("dateTrunc('day', ts, 'MILLISECONDS', 'America/Los_Angeles')", 1644566400000),
    ("dateTrunc('hour', 1644586485, 'SECONDS')", 1644584400),
    ("dateTrunc('day', 1644586485, 'SECONDS', 'UTC', 'MILLISECONDS')", 1644537600000),
    ("fromTimestamp(toTimestamp(ts))", TS),
    ("CAST(toTimestamp(ts) AS STRING)", "2022-02-11 13:34:45.807"),
    ("CAST(toTimestamp(ts) AS LONG)", TS),
    ("fromTimestamp(CAST(ts AS TIMESTAMP))", TS),
    ("fromTimestamp('2022-02-11 13:34:45.807')", TS),
    ("fromTimestamp('2022-02-11T19:04:45.807+05:30')", TS),
    ("now() - ago('PT1H')", 3600000),
    ("now() - ago('P1DT2H30M1.5S')", 95401500),
    ("now() > 1644586485807", True),
]


def test_datetime_functions_do_not_depend_on_the_session_time_zone(spark, session_zone):
    _check(spark, DATETIME)


def test_from_date_time_in_los_angeles_session(spark):
    """The brief's example: the wall clock is read in UTC whatever the session's zone."""
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, "America/Los_Angeles")
    try:
        got = _evaluate(
            spark, ["fromDateTime(d, 'yyyy-MM-dd''T''HH:mm:ss')"], {"d": "2022-02-11T13:34:45"}
        )
        assert got == [1644586485000]
    finally:
        spark.conf.set(key, before)


def test_typed_columns(spark):
    """Fields that arrive typed (not as text) work the same."""
    df = spark.createDataFrame([(TS, '{"a":{"b":3}}')], "`@ts` bigint, `@payload` string")
    exprs = [
        "toEpochSeconds(ts)",
        "jsonPathLong(payload, '$.a.b')",
        "ts > 1600000000000",
        "toDateTime(ts, 'yyyy-MM-dd')",
        "ts + 1",
    ]
    sqls = [translate(e, where=WHERE).sql for e in exprs]
    row = df.selectExpr(*[f"{s} AS `c{i}`" for i, s in enumerate(sqls)]).first()
    assert list(row) == [1644586485, 3, True, "2022-02-11", TS + 1.0]


# --- strings ----------------------------------------------------------------------------

STRINGS = [
    ("upper(name)", "HELLO WORLD"),
    ("lower('AbC')", "abc"),
    ("trim(' \t a b \n')", "a b"),
    ("ltrim('  a ')", "a "),
    ("rtrim('  a ')", "  a"),
    ("reverse('abc')", "cba"),
    ("length(name)", 11),
    ("length('a\U0001f600b')", 4),  # Java's String.length: UTF-16 units
    ("length(name) > 9", True),  # a number (Pinot's int), not text: 11 > 9
    ("concat('a', 'b')", "ab"),
    ("concat(name, country, ' | ')", "hello world | US"),
    ("concat(name, missing, '-')", None),
    ("concat_ws('-', 'a', 'b')", "a-b"),
    ("'x' || 'y'", "xy"),
    ("substr(name, 6)", "world"),
    ("substr(name, 0, 5)", "hello"),
    ("substr(name, 6, -1)", "world"),
    ("substr(name, -5)", "world"),
    ("substr(name, 3, 1)", ""),
    ("substr(name, 20)", ""),
    ("substr(name, length(country), 4)", "ll"),
    ("substr(missing, 1)", None),
    ("substring(name, 1, 5)", "hello"),
    ("leftSubStr(name, 5)", "hello"),
    ("rightSubStr(name, 5)", "world"),
    ("strpos(name, 'o')", 4),
    ("strpos(name, 'o', 2)", 7),
    ("strpos(name, 'o', 3)", -1),
    ("strpos(name, 'z')", -1),
    ("strrpos(name, 'o')", 7),
    ("startsWith(name, 'hell')", True),
    ("starts_with(name, 'x')", False),
    ("endsWith(name, 'world')", True),
    ("contains(name, 'lo w')", True),
    ("replace(name, 'o', '0')", "hell0 w0rld"),
    ("remove(name, 'l')", "heo word"),
    ("lpad('7', 3, '0')", "007"),
    ("lpad('12345', 3, '0')", "12345"),
    ("rpad('ab', 4, '*')", "ab**"),
    ("splitPart('a,,b,c', ',', 1)", "b"),
    ("splitPart('a,,b,c', ',', 5)", "null"),
    ("splitPart('a,,b,c', ',', -1)", "c"),
    ("splitPart('a::b', '::', 1)", "b"),
    ("splitPart('a.b', '.', 1)", "b"),
    ("split('a,,b,c', ',')", ["a", "b", "c"]),
    ("regexpExtract('foo123bar', '([a-z]+)(\\d+)', 2)", "123"),
    ("regexpExtract('foo123', '\\d+')", "123"),
    ("regexpExtract('foobar', '\\d+')", ""),
    ("regexpExtract('foobar', '(\\d+)', 1, 'none')", "none"),
    ("regexp_replace('a1b22c333', '\\d+', '#')", "a#b#c#"),
    ("regexpReplace('a1b22c333', '\\d+', '#', 2)", "a1b#c#"),
    ("regexpReplace('a1b22c333', '\\d+', '#', 0, 1)", "a1b#c333"),
    ("regexpReplace('aAa', 'a', '-', 0, -1, 'i')", "---"),
    ("regexpReplace('x-y', '(\\w)-(\\w)', '$2-$1')", "y-x"),
    ("regexpLike(name, '^h.*d$')", True),
    ("regexpLike(name, 'HELLO')", False),
    ("regexpLike(name, 'HELLO', 'i')", True),
    ("fromUtf8(toUtf8(name))", "hello world"),
    ("md5(toUtf8('abc'))", "900150983cd24fb0d6963f7d28e17f72"),
    ("md5('616263')", "900150983cd24fb0d6963f7d28e17f72"),  # Pinot reads text as hex bytes
    ("sha(toUtf8('abc'))", "a9993e364706816aba3e25717850c26c9cd0d89d"),
    ("sha256(toUtf8('abc'))", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ("length(sha512(toUtf8('abc')))", 128),
    ("toBase64(toUtf8('hi'))", "aGk="),
    ("fromUtf8(fromBase64('aGk='))", "hi"),
    ("strcmp('a', 'b')", -1),
    ("strcmp(country, 'US')", 0),
    ("strcmp('b', 'a')", 1),
    ("strcmp(missing, 'a')", None),
    ("encodeUrl('a b&c')", "a+b%26c"),
    ("decodeUrl('a+b%26c')", "a b&c"),
    ("repeat('ab', 3)", "ababab"),
    ("repeat('ab', '-', 3)", "ab-ab-ab"),
    ("isJson(payload)", True),
    ("isJson('{x')", False),
]


def test_string_functions(spark):
    _check(spark, STRINGS)


# --- math ---------------------------------------------------------------------------------

MATH = [
    ("abs(-2)", 2.0),
    ("ceil(1.2)", 2.0),
    ("floor(-1.5)", -2.0),
    ("exp(0)", 1.0),
    ("ln(1)", 0.0),
    ("log10(100)", 2.0),
    ("log2(8)", 3.0),
    ("sqrt(16)", 4.0),
    ("power(2, 10)", 1024.0),
    ("pow(price, 0)", 1.0),
    ("sign(-3)", -1.0),
    ("roundDecimal(2.345, 2)", 2.35),
    ("roundDecimal(2.5)", 3.0),
    ("roundDecimal(-2.5)", -2.0),
    ("mod(7, 3)", 1.0),
    ("mod(7.5, 2)", 1.5),
    ("mod(1, 0)", None),
    ("plus(1, 2)", 3.0),
    ("plus(price, 0.5)", 100.0),
    ("minus(5, 7)", -2.0),
    ("times(price, 2)", 199.0),
    ("divide(7, 2)", 3.5),
    ("divide(1, 0)", None),
    ("least(1, 2)", 1.0),
    ("greatest(price, 100)", 100.0),
    ("least(missing, 1)", None),
    ("coalesce(missing, price, 1)", "99.5"),  # text stays text
    ("coalesce(jsonPathLong(payload, '$.zz', 5), 1)", 5),
    ("coalesce(missing, country)", "US"),
]


def test_math_functions(spark):
    _check(spark, MATH)


# --- JSON ---------------------------------------------------------------------------------

JSON = [
    ("jsonPathString(payload, '$.a.c')", "x"),
    ("jsonPathString(payload, '$.a.b')", "3"),
    ("jsonPathString(payload, 'a.c')", "x"),
    ('jsonPathString(payload, \'$["a"]["c"]\')', "x"),
    ("jsonPathString(payload, '$.a')", json.dumps(PAYLOAD["a"], separators=(",", ":"))),
    ("jsonPathString(payload, '$.zz')", None),
    ("jsonPathString(payload, '$.zz', 'dflt')", "dflt"),
    ("jsonPathString(payload, '$.n', 'dflt')", "dflt"),
    ("jsonPathString(missing, '$.a', 'dflt')", "dflt"),
    ("jsonPathString(payload, '$.arr[2]')", "z"),
    ("jsonPathLong(payload, '$.a.b')", 3),
    ("jsonPathLong(payload, '$.a.f')", 12),
    ("jsonPathLong(payload, '$.a.e')", 3),
    ("jsonPathLong(payload, '$.zz')", LONG_MIN),
    ("jsonPathLong(payload, '$.zz', 7)", 7),
    ("jsonPathLong(payload, '$.a.c', 7)", 7),
    ("jsonPathLong(missing, '$.a')", None),
    ("jsonPathInt(payload, '$.a.b')", 3),
    ("jsonPathInt(payload, '$.zz')", -(2**31)),
    ("jsonPathDouble(payload, '$.a.e')", 3.7),
    ("jsonPathDouble(payload, '$.zz')", math.nan),
    ("jsonPathDouble(payload, '$.zz', 1.5)", 1.5),
    ("jsonPathArray(payload, '$.arr')", ["1", "2", "z", '{"k":1}']),
    ("jsonPathArray(payload, '$.a.b')", ["3"]),
    ("jsonPathArray(payload, '$.zz')", None),
    ("jsonPathArrayDefaultEmpty(payload, '$.zz')", []),
    ("jsonPathExists(payload, '$.a.b')", True),
    ("jsonPathExists(payload, '$.n')", False),
    ("jsonFormat(payload)", RECORD["payload"]),
    ("jsonFormat('abc')", '"abc"'),
    ("jsonFormat(jsonPathLong(payload, '$.a.b'))", "3"),
    ("jsonFormat(missing)", None),
    ("jsonExtractScalar(payload, '$.a.b', 'INT')", 3),
    ("json_extract_scalar(payload, '$.a.b', 'LONG')", 3),
    ("json_extract_scalar(payload, '$.a.e', 'DOUBLE')", 3.7),
    ("json_extract_scalar(payload, '$.a.e', 'FLOAT')", 3.7),
    (
        "json_extract_scalar(payload, '$.a.e', 'BIG_DECIMAL')",
        Decimal("3.7").quantize(Decimal("1e-18")),
    ),
    ("json_extract_scalar(payload, '$.a.c', 'STRING')", "x"),
    ("json_extract_scalar(payload, '$.zz', 'STRING', 'none')", "none"),
    ("json_extract_scalar(payload, '$.zz', 'LONG')", LONG_MIN),
    ("json_extract_scalar(payload, '$.zz', 'LONG', 5)", 5),
    ("json_extract_scalar(payload, '$.t', 'BOOLEAN')", True),
    ("json_extract_scalar(payload, '$.zz', 'BOOLEAN')", False),
    ("json_extract_scalar(payload, '$.zz', 'DOUBLE')", 5e-324),
]


def test_json_functions(spark):
    _check(spark, JSON)


# --- operators, CASE, CAST, nesting ---------------------------------------------------

OPERATORS = [
    ("ts / 1000", 1644586485.807),
    ("ts % 1000", 807.0),
    ("ts - ts % 1000", 1644586485000.0),
    ("ts > 1600000000000", True),
    ("price > 99", True),
    ("price < 100", True),
    ("price = 99.5", True),
    ("price * 2", 199.0),
    ("-price", -99.5),
    ("2 + 3 * 4", 14),
    ("(2 + 3) * 4", 20),
    ("2 - -3", 5),
    ("7 / 2", 3.5),
    ("7 % 3", 1),
    ("1 / 0", None),
    # text compares as doubles in Pinot's ingestion: strcmp for text (test_compare.py)
    ("strcmp(country, 'US') = 0", True),
    ("strcmp(country, 'US') != 0", False),
    ("strcmp(country, 'DE') <> 0", True),
    ("ts = 1644586485807", True),
    ("price = '99.5'", True),
    ("price BETWEEN 99 AND 100", True),
    ("price NOT BETWEEN 1 AND 2", True),
    ("name LIKE 'hello%'", True),
    ("name LIKE 'HELLO%'", True),  # Pinot's like ignores case
    ("name NOT LIKE '%x%'", True),
    ("missing IS NULL", True),
    ("name IS NOT NULL", True),
    ("flag = true", True),
    ("flag AND price > 1", True),
    ("NOT flag", False),
    ("NOT strcmp(country, 'US') = 0 OR price > 1000", False),
    ("strcmp(country, 'US') = 0 OR 1 / 0 > 1", True),
    ("CASE WHEN price > 100 THEN 'high' WHEN price > 50 THEN 'mid' ELSE 'low' END", "mid"),
    ("case price when 99.5 then 1 when 100 then 2 end", 1),
    ("CASE WHEN false THEN 1 END", None),
    ("CASE WHEN price > 1 THEN ts ELSE 0 END", str(TS)),
    ("CASE WHEN price > 1 THEN toEpochSeconds(ts) ELSE 0 END", 1644586485),
    ("CAST(ts AS LONG)", TS),
    ("CAST(price AS DOUBLE)", 99.5),
    ("CAST(CAST(price AS DOUBLE) AS INT)", 99),
    ("CAST(price AS INT)", 99),  # Pinot's cast: (int) Double.parseDouble, as "10.0" is 10
    ("CAST(price AS BIG_DECIMAL)", Decimal("99.5").quantize(Decimal("1e-18"))),
    ("CAST(price AS DECIMAL(5, 1))", Decimal("99.5")),
    ("CAST(flag AS BOOLEAN)", True),
    ("CAST(1 AS BOOLEAN)", True),
    ("CAST(ts AS STRING)", str(TS)),
    ("CAST(ts AS VARCHAR)", str(TS)),
    ("CAST(toUtf8('hi') AS STRING)", "6869"),
    ("fromUtf8(CAST('6869' AS BYTES))", "hi"),
    ("CAST(price AS JSON)", "99.5"),
    ("toDateTime(fromEpochSeconds(toEpochSeconds(ts)), 'yyyy-MM-dd')", "2022-02-11"),
    ("upper(concat(country, substr(name, 0, 5), '-'))", "US-HELLO"),
    ("jsonPathLong(payload, '$.a.b') * 10 + 1", 31),
    ("TOEPOCHSECONDS(ts) = to_epoch_seconds(ts)", True),
]


def test_operators_case_cast_and_nesting(spark):
    _check(spark, OPERATORS)


def test_fields_named_like_sql_keywords_and_quoted_names(spark):
    record = {
        "timestamp": "10",
        "count": "2",
        "date": "2022-02-11",
        "__metadata$offset": "41",
        "a.b": "x",
        "we`ird": "y",
    }
    cases = [
        ("timestamp * count", 20.0),
        ('"__metadata$offset" + 1', 42.0),
        ("fromDateTime(date, 'yyyy-MM-dd')", 1644537600000),
        ('concat("a.b", "we`ird", \'-\')', "x-y"),
        ("`a.b`", "x"),
    ]
    _check(spark, cases, record)


# --- filters --------------------------------------------------------------------------


def _kept(spark, filter_function: str, values: Sequence[str | None], field: str) -> list:
    expr = filter_sql(filter_function, where="ingestionConfig.filterConfig.filterFunction")
    df = _frame(spark, [{field: v, "i": str(i)} for i, v in enumerate(values)])
    return [values[int(r[0])] for r in df.where(expr.sql).select("`@i`").collect()]


def test_filter_keeps_the_records_the_filter_does_not_drop(spark):
    # a record for which Pinot's filter is TRUE is dropped; FALSE or NULL is kept
    assert _kept(spark, "strcmp(country, 'US') != 0", ["US", "DE", None], "country") == [
        "US",
        None,
    ]
    assert _kept(spark, "price > 100", ["99.5", "150", "abc", None], "price") == [
        "99.5",
        "abc",
        None,
    ]
    assert _kept(spark, "flag", ["true", "false", None], "flag") == ["false", None]
    assert _kept(spark, "price BETWEEN 100 AND 200", ["99.5", "150", None], "price") == [
        "99.5",
        None,
    ]


def test_filter_sql_shape():
    expr = filter_sql("ts < 1589007600000", where="f")
    # Pinot's lessThan takes doubles in ingestion: text that is no number throws
    # (PolymorphicComparisonScalarFunction.getFunctionInfo(int): the DOUBLE variant)
    ts = _double("ts")
    assert expr == PinotExpr(
        f"(NOT coalesce(((NOT isnan({ts}) AND ({ts} < 1589007600000.0D))), false))",
        ("ts",),
        fails=f"((`@ts`) IS NOT NULL AND ({ts}) IS NULL)",
    )


def test_cast_as_long_of_a_long_past_timestamp_millis_range(spark):
    # Spark's timestamp_millis throws past ~9.22e15 (failing the batch); Pinot's CAST
    # gives the long, and a timestamp's text is still its epoch millis
    record = {"ns": "1700000000000000000", "neg": "-9223372036854775808", "iso": "2022-02-11"}
    _check(
        spark,
        [
            ("CAST(ns AS LONG)", 1700000000000000000),
            ("CAST(ns AS BIGINT)", 1700000000000000000),
            ("CAST(neg AS LONG)", LONG_MIN),
            ("CAST(iso AS LONG)", 1644537600000),
            ("toTimestamp(CAST(ns AS LONG))", None),
            ("CAST(ns AS TIMESTAMP)", None),
        ],
        record,
    )


def test_deep_scan_before_a_bracket_is_refused():
    from sparkpipes.errors import ConfigError

    for path in ("$..[0]", "$..[*]", "$.a..[1]"):
        with pytest.raises(ConfigError, match="deep scan"):
            translate(f"jsonPathString(payload, '{path}')", where=WHERE)
    assert "'$[0]'" in translate("jsonPathString(payload, '$.[0]')", where=WHERE).sql


def test_json_path_numbers_read_a_boolean_but_not_the_string_true(spark):
    record = {"j": '{"b":true,"f":false,"s":"true","a":[true],"k":{"x y":"false"}}'}
    _check(
        spark,
        [
            ("jsonPathLong(j, '$.b')", 1),
            ("jsonPathLong(j, '$.f', 9)", 0),
            ("jsonPathLong(j, '$.s', 9)", 9),
            ("jsonPathLong(j, '$.s')", LONG_MIN),
            ("jsonPathInt(j, '$.a[0]')", 1),
            ("jsonPathInt(j, '$.s', 7)", 7),
            ('jsonPathInt(j, \'$["k"]["x y"]\', 7)', 7),
            ("jsonPathDouble(j, '$.b')", 1.0),
            ("jsonPathDouble(j, '$.s', 2.5)", 2.5),
        ],
        record,
    )


def test_a_json_null_array_element_is_null_but_the_text_null_is_kept(spark):
    """Jayway reads a JSON null element as null (Pinot's jsonPathString: null); Spark's
    get_json_object writes it as the text ``null``, as it writes the string "null"."""
    record = {"j": '{"arr":[1,null,"null"],"o":null}'}
    _check(
        spark,
        [
            ("jsonPathString(j, '$.arr[1]')", None),
            ("jsonPathString(j, '$.arr[2]')", "null"),
            ("jsonPathString(j, '$.o')", None),
            ("jsonPathString(j, '$.arr[1]', 'd')", "d"),
            ("jsonPathLong(j, '$.arr[1]', 5)", 5),
        ],
        record,
    )


#: (pattern, text, epoch millis) from Joda-Time 2.14.1's DateTimeFormat.forPattern(pattern)
#: .withZone(UTC).withLocale(ENGLISH).parseMillis(text), run in a JVM: a day name that is
#: not the date's moves it to that day of its ISO week
DAY_NAMES = [
    ("EE, dd MMM yyyy HH:mm:ss zzz", "Fri, 27 Nov 2026 15:59:58 UTC", 1795795198000),
    ("EE, dd MMM yyyy HH:mm:ss zzz", "Thu, 27 Nov 2026 15:59:58 UTC", 1795708798000),
    ("EE, dd MMM yyyy HH:mm:ss zzz", "friday, 27 Nov 2026 15:59:58 UTC", 1795795198000),
    ("EEEE dd-MM-yyyy", "Sunday 27-11-2026", 1795910400000),
    ("EEEE dd-MM-yyyy", "Monday 23-11-2026", 1795392000000),
    ("EEEE dd-MM-yyyy", "Fri 27-11-2026", 1795737600000),
]


def test_from_date_time_reads_day_names_as_joda(spark):
    """Spark cannot parse ``E`` (the whole batch failed: DATETIME_PATTERN_RECOGNITION);
    startreedata/examples' wikipedia table parses ``EE, dd MMM yyyy HH:mm:ss zzz``."""
    for pattern, text, millis in DAY_NAMES:
        _check(spark, [(f"fromDateTime(t, '{pattern}')", millis)], {"t": text})
    _check(spark, [("fromDateTime(t, 'EE, dd MMM yyyy', 'UTC', 5)", 5)], {"t": "27 Nov 2026"})


#: more Joda-Time 2.14.1 parseMillis runs (UTC, ENGLISH): a day name read on the text's
#: own date (a zone that crosses midnight UTC), a name joined to digits, fewer digits than
#: the pattern's letters; None: Joda throws (the record is dropped)
JODA_PARSES = [
    ("EEE MMM dd HH:mm:ss zzz yyyy", "Wed Oct 10 20:19:24 PDT 2018", 1539227964000),
    ("EEE MMM dd HH:mm:ss Z yyyy", "Wed Oct 10 20:19:24 -0500 2018", 1539220764000),
    ("EEEdd-MM-yyyy", "Mon01-01-2024", 1704067200000),
    ("yyyy-MM-dd", "2024-1-5", 1704412800000),
    ("dd/MM/yyyy HH:mm", "1/2/2024 1:05", 1706749500000),
    ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-05 10:00:00.12345", None),
    ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-05 10:00:00.1", 1704448800100),
    ("yyyyMMdd", "20240105", 1704412800000),
    ("yyyy-MM-dd", "2024-123-5", None),
    ("MM/dd/yyyy", "13/01/2024", None),
]


@pytest.mark.parametrize(("pattern", "text", "millis"), JODA_PARSES)
def test_from_date_time_parses_as_joda(spark, pattern, text, millis):
    expr = translate(f"fromDateTime(t, '{pattern}')", where="w")
    row = (
        _frame(spark, [{"t": text}])
        .selectExpr(f"{expr.sql} AS v", f"coalesce({expr.fails}, false) AS f")
        .first()
    )
    assert (row["v"], row["f"]) == (millis, millis is None)

"""``PinotExpr.fails``: the records for which Pinot's evaluation of an ingestion expression
throws (so Pinot drops the record, or under ``continueOnError`` leaves the column null),
family by family, each expectation read from Pinot's Java (apache/pinot 210c2951e72):

* ``pinot-common/.../evaluator/InbuiltFunctionEvaluator.java:270-291``
  (``FunctionExecutionNode.execute``): every argument is evaluated first (its exception is
  the call's), then a null argument returns null before any conversion (unless the
  function takes nullable parameters), then ``FunctionInvoker.convertTypes``
  (``FunctionInvoker.java:86-106``) converts each argument by ``PinotDataType``, whose
  ``STRING.toLong`` is ``Long.parseLong(trim)`` (``PinotDataType.java:837``), ``toBoolean``
  ``BooleanUtils.toBoolean`` which never throws (``:859``);
* ``InbuiltFunctionEvaluator.java:168-254``: ``AND`` / ``OR`` stop at the first false /
  true operand;
* ``JsonFunctions.java``: ``jsonPath`` (101-106), ``jsonPathString(Object, String)``
  (235-241) and ``jsonPathArray`` (188-194) parse the text with Jayway and let its
  ``InvalidJsonException`` out (``Option.SUPPRESS_EXCEPTIONS`` (68-71) covers only reading
  the path); the forms with a default (243-254, 330-342) and ``jsonPathLong`` /
  ``jsonPathDouble`` without one (324-328, 414-418: they call the default form) catch it;
* ``DataTypeConversionFunctions.java:39-97``: ``CAST`` of text into INT / LONG falls back
  to ``Double.parseDouble``, which throws for text that is no number;
* ``DateTimeFunctions.java:470-493`` / ``DateTimePatternHandler.java:33-50``:
  ``fromDateTime`` throws for text its pattern does not read, except with a default;
* ``DateTimeConvert.java:91-98`` / ``DateTimeFormatSpec.java:295-307``:
  ``dateTimeConvert`` reads text by its input format (``new BigDecimal`` for EPOCH,
  ``TimestampUtils`` for TIMESTAMP, Joda for SIMPLE_DATE_FORMAT) and throws where it cannot;
* ``PolymorphicComparisonScalarFunction.java:50-68`` and
  ``BaseBinaryArithmeticScalarFunction.java:44-51``: looked up by argument count, as the
  ingestion evaluator does, comparisons and arithmetic take doubles, so text that is no
  number throws;
* ``ObjectFunctions.java:67-68``: ``CASE`` is the function ``caseWhen``: every condition and
  value is evaluated;
* ``ExpressionTransformer.java:178-197``: a transform runs only where the record has no
  value of its column.
"""

from __future__ import annotations

import pytest

from sparkpipes.frontends.pinot.expr import filter_sql, first_existing, translate


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _fails(spark, expr: str, records: list[dict[str, str | None]], *, kind: str = "t") -> list:
    """Whether ``expr`` fails for each record (a filter's with ``kind='f'``)."""
    from pyspark.sql.types import StringType, StructField, StructType

    made = (translate if kind == "t" else filter_sql)(expr, where="w")
    if made.fails is None:
        return [False] * len(records)
    names = sorted({n for r in records for n in r} | set(made.fields))
    schema = StructType([StructField("@" + n, StringType()) for n in names])
    df = spark.createDataFrame([tuple(r.get(n) for n in names) for r in records], schema)
    rows = df.selectExpr(f"coalesce(({made.fails}), false) AS f").collect()
    return [r["f"] for r in rows]


def test_json_path_functions_without_a_default_fail_on_text_that_is_not_json(spark):
    records = [{"j": '{"a": "x"}'}, {"j": '{"b": 1}'}, {"j": "not json"}, {"j": ""}, {"j": None}]
    for fn in ("jsonPathString", "jsonPath", "jsonPathArray"):
        got = _fails(spark, f"{fn}(j, '$.a')", records)
        # JSON with the path or without it: no throw; not JSON or empty: thrown; null: null
        assert got == [False, False, True, True, False], fn


def test_json_path_functions_with_a_default_never_fail():
    for expr in (
        "jsonPathString(j, '$.a', 'none')",
        "jsonPathLong(j, '$.a')",
        "jsonPathLong(j, '$.a', 0)",
        "jsonPathDouble(j, '$.a')",
        "jsonPathArrayDefaultEmpty(j, '$.a')",
        "jsonPathExists(j, '$.a')",
    ):
        assert translate(expr, where="w").fails is None, expr


def test_an_arguments_failure_is_the_calls(spark):
    records = [{"j": '{"a": "x"}'}, {"j": "nope"}, {"j": None}]
    assert _fails(spark, "upper(jsonPathString(j, '$.a'))", records) == [False, True, False]
    # the default form catches what jsonPath throws inside it too, but not its argument's
    expr = "jsonPathString(jsonPathString(j, '$.a'), '$.b', 'd')"
    assert _fails(spark, expr, records) == [False, True, False]


def test_text_that_does_not_convert_to_a_numeric_parameter_fails(spark):
    records = [{"t": "1600000000000"}, {"t": " 42 "}, {"t": "soon"}, {"t": None}]
    assert _fails(spark, "toEpochSeconds(t)", records) == [False, False, True, False]
    assert _fails(spark, "fromEpochDays(t)", records) == [False, False, True, False]
    # text parameters and booleans take any text
    assert translate("upper(t)", where="w").fails is None


def test_a_null_argument_returns_null_before_any_conversion(spark):
    # toEpochSecondsRounded(long, long): a null second argument makes the call null
    # before the first is converted; with both there, text that is no number throws
    records = [{"t": "x", "u": None}, {"t": "x", "u": "10"}]
    expr = "toEpochSecondsRounded(t, u)"
    assert _fails(spark, expr, records) == [False, True]


def test_cast_of_text_that_is_no_number_fails(spark):
    records = [{"x": "12"}, {"x": "1.9"}, {"x": "2024-01-01 00:00:00"}, {"x": "abc"}, {"x": None}]
    assert _fails(spark, "CAST(x AS INT)", records) == [False, False, True, True, False]
    # LONG reads a timestamp's text as its epoch millis first
    assert _fails(spark, "CAST(x AS LONG)", records) == [False, False, False, True, False]
    assert _fails(spark, "CAST(x AS DOUBLE)", records) == [False, False, True, True, False]
    assert translate("CAST(x AS BOOLEAN)", where="w").fails is None
    assert translate("CAST(x AS STRING)", where="w").fails is None


def test_from_date_time_fails_on_text_its_pattern_does_not_read(spark):
    records = [{"d": "2024-03-01"}, {"d": "01/03/2024"}, {"d": None}]
    assert _fails(spark, "fromDateTime(d, 'yyyy-MM-dd')", records) == [False, True, False]
    expr = "fromDateTime(d, 'yyyy-MM-dd', 'UTC')"
    assert _fails(spark, expr, records) == [False, True, False]
    assert translate("fromDateTime(d, 'yyyy-MM-dd', 'UTC', 0)", where="w").fails is None


def test_date_time_convert_fails_on_text_its_input_format_does_not_read(spark):
    records = [{"t": "1600000000000"}, {"t": "1.6E12"}, {"t": " 1600000000000"}, {"t": "x"}]
    epoch = "dateTimeConvert(t, '1:MILLISECONDS:EPOCH', '1:DAYS:EPOCH', '1:DAYS')"
    # new BigDecimal reads scientific notation, not surrounding blanks
    assert _fails(spark, epoch, records) == [False, False, True, True]
    sdf = (
        "dateTimeConvert(t, '1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd', '1:MILLISECONDS:EPOCH', '1:DAYS')"
    )
    days = [{"t": "20240301"}, {"t": "2024-03-01"}, {"t": None}]
    assert _fails(spark, sdf, days) == [False, True, False]


def test_comparisons_and_arithmetic_take_doubles(spark):
    records = [{"a": "3"}, {"a": "three"}, {"a": None}]
    assert _fails(spark, "a + 1", records) == [False, True, False]
    assert _fails(spark, "a > 1", records, kind="f") == [False, True, False]


def test_or_and_and_stop_at_the_first_deciding_operand(spark):
    records = [
        {"x": "yes", "j": "nope"},
        {"x": "no", "j": "nope"},
        {"x": "no", "j": '{"a": "b"}'},
    ]
    expr = "strcmp(x, 'yes') = 0 OR strcmp(jsonPathString(j, '$.a'), 'b') = 0"
    assert _fails(spark, expr, records, kind="f") == [False, True, False]
    expr = "strcmp(x, 'yes') = 0 AND strcmp(jsonPathString(j, '$.a'), 'b') = 0"
    assert _fails(spark, expr, records, kind="f") == [True, False, False]


def test_case_evaluates_every_branch(spark):
    records = [{"j": "nope"}, {"j": '{"a": 1}'}]
    expr = "CASE WHEN isJson(j) THEN jsonPathString(j, '$.a') ELSE 'n/a' END"
    assert _fails(spark, expr, records) == [True, False]


def test_the_records_own_value_means_the_transform_does_not_run(spark):
    made = first_existing("out", translate("jsonPathString(j, '$.a')", where="w"))
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("@out", StringType()), StructField("@j", StringType())])
    df = spark.createDataFrame([("mine", "nope"), (None, "nope")], schema)
    got = [r[0] for r in df.selectExpr(f"coalesce(({made.fails}), false)").collect()]
    assert got == [False, True]

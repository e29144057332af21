"""Jayway JsonPath's path functions (``$.items.length()``, ``$.sum($[*].quantity)`` …) in
Pinot's ``jsonPath*`` functions, computed by a real Spark session over a record's text.

Pinot (apache/pinot 210c2951e72) reads paths with Jayway json-path 2.10.0 (``pom.xml``:
``jsonpath.version``) through ``JsonFunctions.PARSE_CONTEXT``: Jackson's provider and
mapping, ``Option.SUPPRESS_EXCEPTIONS``. The vectors are marked with their source:

* ``[J:<Test>]``: Jayway's own tests at tag json-path-2.10.0,
  ``json-path/src/test/java/com/jayway/jsonpath/internal/function/<Test>.java``, with their
  documents (``BaseFunctionTest``: ``NUMBER_SERIES``, ``TEXT_SERIES``);
* ``[J:<Class>]``: what Jayway's class computes (``internal/function/…``), e.g.
  ``numeric/Max`` starting from ``Double.MIN_VALUE``;
* ``[P]``: Pinot's ``JsonFunctions``: how each ``jsonPath*`` function converts the result
  (``jsonValueToString`` through Jackson, ``Number.longValue``, ``convertObjectToArray``)
  and which forms catch Jayway's exception (those with a default) or let it out (the
  record is dropped: ``PinotExpr.fails``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import translate

LONG_MIN = -(2**63)
# BaseFunctionTest's documents (Jayway 2.10.0)
NUMBER_SERIES = '{"empty": [], "numbers" : [ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}'
TEXT_SERIES = (
    '{"urls": ["http://api.worldbank.org/countries/all/?format=json", '
    '"http://api.worldbank.org/countries/all/?format=json"], '
    '"text" : [ "a", "b", "c", "d", "e", "f" ]}'
)
# keyset.json (KeySetFunctionTest)
KEYSET = '{\n  "data" : {\n    "a" : "a",\n    "b" : "b"\n  }\n}'
# JSONEntityPathFunctionTest's BATCH_JSON, which has a trailing comma ("1,\n]"): its test
# reads it with json-smart; Jackson (Pinot's provider) refuses it
BATCH_JSON = (
    '{"batches": {"minBatchSize": 10, "results": [{"productId": 23, "values": '
    "[2, 45, 34, 23, 3, 5, 4, 3, 2, 1,\n]}, "
    '{"productId": 23, "values": [52, 3, 12, 11, 18, 22, 1]}]}}'
)
OTHER = json.dumps(
    {
        "mixed": [1, "3", True, None, [4], {"k": 5}, 2.5],
        "neg": [-1, -2.5],
        "inf": "INF",  # replaced below by [1e400] (Jackson reads it as Infinity)
        "one": [7],
        "o": {"b": 1, "a": [1, 2]},
        "order": {"b": 1e16, "c": -1e16, "a": 1.0},
        "tenths": [0.1, 0.1, 0.1],
        "s": "text",
        "n": None,
        "bools": [True, False, "x"],
        "nested": [[1, 2], {"k": "v"}, None],
    }
).replace('"INF"', "[1e400]")
# pizza-shop-demo's orders (tests/corpus/pinot/other/startreedata-pizza-shop-demo-…): its
# transforms JSONPATHARRAY(items, '$.length()') and JSONPATHLONG(items, '$.sum($.[*].quantity)')
ITEMS = json.dumps(
    [
        {"productId": "p1", "quantity": 2, "price": 9.5},
        {"productId": "p2", "quantity": 3, "price": 4.25},
    ]
)
RECORD: dict[str, str | None] = {
    "num": NUMBER_SERIES,
    "txt": TEXT_SERIES,
    "keyset": KEYSET,
    "batch": BATCH_JSON,
    "batch_ok": BATCH_JSON.replace("1,\n]", "1\n]"),
    "j": OTHER,
    "items": ITEMS,
    "no_qty": json.dumps([{"productId": "p1"}]),
    "with_numbers": json.dumps([1, {"quantity": 2}]),
    "empty_items": "[]",
    "not_json": "not json",
    "missing": None,
}


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _run(
    spark, exprs: Sequence[str], record: Mapping[str, str | None] = RECORD
) -> list[tuple[Any, bool]]:
    """Each expression's value over ``record`` and whether Pinot's evaluation throws."""
    from pyspark.sql.types import StringType, StructField, StructType

    made = [translate(e, where="w") for e in exprs]
    names = list(record)
    schema = StructType([StructField("@" + n, StringType()) for n in names])
    df = spark.createDataFrame([tuple(record[n] for n in names)], schema)
    cols = []
    for i, m in enumerate(made):
        cols += [f"{m.sql} AS `v{i}`", f"coalesce({m.fails or 'false'}, false) AS `f{i}`"]
    row = df.selectExpr(*cols).first()
    return [(row[2 * i], row[2 * i + 1]) for i in range(len(made))]


def _exactly(got: Any, want: Any) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(want) and got == want


def _check(spark, cases: Sequence[tuple[str, Any, bool]]) -> None:
    """(expression, value, throws): values compared exactly (a double bit for bit)."""
    got = _run(spark, [e for e, _, _ in cases])
    wrong = {
        e: (g, (w, t)) for (e, w, t), g in zip(cases, got) if not (_exactly(g[0], w) and g[1] is t)
    }
    assert not wrong, "\n".join(f"{e}: got {g!r}, want {w!r}" for e, (g, w) in wrong.items())


def test_numeric_functions_as_jayways_tests(spark):
    _check(
        spark,
        [
            # [J:NumericPathFunctionTest] the Doubles; [P] jsonPathDouble: doubleValue
            ("jsonPathDouble(num, '$.numbers.avg()')", 5.5, False),
            ("jsonPathDouble(num, '$.numbers.sum()')", 55.0, False),
            ("jsonPathDouble(num, '$.numbers.max()')", 10.0, False),
            ("jsonPathDouble(num, '$.numbers.min()')", 1.0, False),
            ("jsonPathDouble(num, '$.numbers.stddev()')", 2.8722813232690143, False),
            # [P] jsonPathString: Jackson writes a Double as Double.toString
            ("jsonPathString(num, '$.numbers.sum()')", "55.0", False),
            ("jsonPathString(num, '$.numbers.stddev()')", "2.8722813232690143", False),
            # [P] jsonPath: the Double itself
            ("jsonPath(num, '$.numbers.avg()')", 5.5, False),
            # [P] jsonPathLong: Double.longValue (toward zero)
            ("jsonPathLong(num, '$.numbers.avg()')", 5, False),
            ("jsonPathInt(num, '$.numbers.stddev()')", 2, False),
            # [J:NumericPathFunctionTest] "…Negative": an empty array throws "Aggregation
            # function attempted to calculate value using empty array"; [P] the forms with
            # a default catch it, the others let it out (the record is dropped)
            ("jsonPathString(num, '$.empty.avg()')", None, True),
            ("jsonPath(num, '$.empty.sum()')", None, True),
            ("jsonPathArray(num, '$.empty.max()')", None, True),
            ("jsonPathString(num, '$.empty.min()', 'none')", "none", False),
            ("jsonPathDouble(num, '$.empty.stddev()')", math.nan, False),
            ("jsonPathLong(num, '$.empty.sum()')", LONG_MIN, False),
            ("jsonPathLong(num, '$.empty.sum()', 7)", 7, False),
            ("jsonPathArrayDefaultEmpty(num, '$.empty.sum()')", [], False),
            ("jsonPathExists(num, '$.empty.sum()')", False, False),
            ("jsonPathExists(num, '$.numbers.sum()')", True, False),
            # [J:NestedFunctionTest] testSimpleLiteralArgument: JSON numbers as arguments
            ("jsonPathDouble(num, '$.sum(5)')", 5.0, False),
            ("jsonPathDouble(num, '$.sum(50)')", 50.0, False),
            # [J:NumericPathFunctionTest]'s series plus arguments (AbstractAggregation: the
            # array's numbers, then each argument's: a number, an array's numbers)
            ("jsonPathDouble(num, '$.numbers.sum(1, $.numbers, 0.5)')", 111.5, False),
        ],
    )


def test_numeric_functions_as_jayways_classes_compute_them(spark):
    _check(
        spark,
        [
            # [J:AbstractAggregation] only `instanceof Number` elements: "3", true, null,
            # [4] and {"k": 5} are skipped
            ("jsonPathDouble(j, '$.mixed.sum()')", 3.5, False),
            ("jsonPathDouble(j, '$.mixed.avg()')", 1.75, False),
            # [J:Max] starts from Double.MIN_VALUE (the least positive double), so negative
            # numbers give 4.9E-324; [J:Min] from Double.MAX_VALUE
            ("jsonPathDouble(j, '$.neg.max()')", 5e-324, False),
            ("jsonPathString(j, '$.neg.max()')", "4.9E-324", False),
            ("jsonPathDouble(j, '$.neg.min()')", -2.5, False),
            ("jsonPathDouble(j, '$.inf.min()')", 1.7976931348623157e308, False),  # 1e400: ∞
            ("jsonPathDouble(j, '$.inf.max()')", math.inf, False),
            # [P] Jackson writes NaN and the infinities as JSON strings, quoted
            ("jsonPathString(j, '$.inf.sum()')", '"Infinity"', False),
            # [J:StandardDeviation] sqrt(sumSq/n - sum*sum/n/n): NaN where rounding makes
            # it negative; [P] NaN's longValue is 0
            ("jsonPathDouble(j, '$.tenths.stddev()')", _java_stddev([0.1, 0.1, 0.1]), False),
            ("jsonPathString(j, '$.tenths.stddev()')", _java_text(_java_stddev([0.1] * 3)), False),
            ("jsonPathLong(j, '$.tenths.stddev()')", 0, False),
            # [J:AbstractAggregation] no array, or no number in it, throws
            ("jsonPathString(j, '$.s.sum()')", None, True),
            ("jsonPathString(j, '$.o.sum()')", None, True),
            ("jsonPathString(j, '$.n.sum()')", None, True),
            ("jsonPathString(j, '$.bools.sum()')", None, True),
            # the path before the function absent: Jayway never calls it, the read is null
            ("jsonPathString(j, '$.zz.sum()')", None, False),
            ("jsonPathDouble(j, '$.zz.sum()', 1.5)", 1.5, False),
            # [J:PathLateBindingValue] an argument path is read from the document's root;
            # a wildcard's matches over an object come in the object's order (1e16 - 1e16
            # + 1 = 1.0; in another order 1.0 + 1e16 rounds away the 1)
            ("jsonPathDouble(j, '$.sum($.order.*)')", 1.0, False),
            ("jsonPathDouble(j, '$.o.sum($.o.*)')", 1.0, False),  # [1, 2] is no Number
            ("jsonPathDouble(j, '$.sum($.nested[*][0])')", 1.0, False),
            ("jsonPathDouble(j, '$.sum($.zz[*].q, 2)')", 2.0, False),
            # [P] not JSON: the forms without a default throw (InvalidJsonException)
            ("jsonPathString(not_json, '$.sum()')", None, True),
            ("jsonPathString(not_json, '$.sum()', 'd')", "d", False),
            ("jsonPathString(missing, '$.sum()')", None, False),
        ],
    )


def _java_stddev(xs: list[float]) -> float:
    """StandardDeviation.getValue as Java computes it (IEEE doubles, as Python's)."""
    s = q = n = 0.0
    for x in xs:
        s, q, n = s + x, q + x * x, n + 1
    v = q / n - s * s / n / n
    return math.sqrt(v) if v >= 0 else math.nan


def _java_text(d: float) -> str:
    return '"NaN"' if math.isnan(d) else repr(d)


def test_length_as_jayways_tests_and_class(spark):
    _check(
        spark,
        [
            # [J:JSONEntityPathFunctionTest] an Integer; size() is length()
            ("jsonPath(txt, '$[''text''].length()')", 6, False),
            ("jsonPath(txt, '$[''text''].size()')", 6, False),
            ("jsonPath(num, '$.numbers.length()')", 10, False),
            ("jsonPathString(num, '$.numbers.size()')", "10", False),
            ("jsonPath(batch_ok, '$.batches.length()')", 2, False),  # an object: its keys
            # ... BATCH_JSON as that test writes it has a trailing comma Jackson refuses
            ("jsonPath(batch, '$.batches.length()')", None, True),
            ("jsonPathLong(batch, '$.batches.length()', 0)", 0, False),
            # [J:Length] an empty array 0; a string, a number, null: null (no throw)
            ("jsonPathLong(num, '$.empty.length()')", 0, False),
            ("jsonPathString(j, '$.s.length()')", None, False),
            ("jsonPathLong(j, '$.s.length()', 9)", 9, False),
            ("jsonPathString(j, '$.n.length()')", None, False),
            ("jsonPathExists(j, '$.n.length()')", False, False),
            ("jsonPathExists(j, '$.o.length()')", True, False),
            ("jsonPathString(j, '$.zz.length()')", None, False),
            ("jsonPathDouble(j, '$.o.length()')", 2.0, False),
            # [P] jsonPathArray wraps the Integer: a one-element array; null stays null
            ("jsonPathArray(j, '$.mixed.length()')", ["7"], False),
            ("jsonPathArray(j, '$.s.length()')", None, False),
            ("jsonPathArrayDefaultEmpty(j, '$.s.length()')", [], False),
        ],
    )


def test_first_last_index_as_jayways_tests_and_class(spark):
    _check(
        spark,
        [
            # [J:SequentialPathFunctionTest] (its Jackson configuration, as Pinot's)
            ("jsonPathLong(num, '$.numbers.first()')", 1, False),
            ("jsonPathLong(num, '$.numbers.last()')", 10, False),
            ("jsonPathLong(num, '$.numbers.index(0)')", 1, False),
            ("jsonPathLong(num, '$.numbers.index(-1)')", 10, False),
            ("jsonPathLong(num, '$.numbers.index(1)')", 2, False),
            ("jsonPathString(txt, '$.text.first()')", "a", False),
            ("jsonPathString(txt, '$.text.last()')", "f", False),
            ("jsonPathString(txt, '$.text.index(0)')", "a", False),
            ("jsonPathString(txt, '$.text.index(-1)')", "f", False),
            ("jsonPathString(txt, '$.text.index(1)')", "b", False),
            # [J:AbstractSequenceAggregation] the element as any path's value: an array as
            # JSON text (jsonPathArray: its elements), null as null, a boolean 1 for
            # jsonPathLong but not the string "x"
            ("jsonPathString(j, '$.nested.first()')", "[1,2]", False),
            ("jsonPathArray(j, '$.nested.first()')", ["1", "2"], False),
            ("jsonPathString(j, '$.nested.index(1)')", '{"k":"v"}', False),
            ("jsonPathString(j, '$.nested.last()', 'd')", "d", False),
            ("jsonPathLong(j, '$.bools.first()')", 1, False),
            ("jsonPathLong(j, '$.bools.index(1)')", 0, False),
            ("jsonPathLong(j, '$.bools.last()', 5)", 5, False),
            # ... throws: not an array, first() of an empty array, an index past the end,
            # and last() / a negative index unless size + index > 0 (its check is "> 0", so
            # last() of a one-element array throws)
            ("jsonPathString(j, '$.o.first()')", None, True),
            ("jsonPathString(num, '$.empty.first()')", None, True),
            ("jsonPathString(num, '$.numbers.index(10)')", None, True),
            ("jsonPathString(j, '$.one.last()')", None, True),
            ("jsonPathString(j, '$.one.first()')", "7", False),
            ("jsonPathString(num, '$.numbers.index(-10)')", None, True),
            ("jsonPathString(num, '$.numbers.index(-9)')", "2", False),
            ("jsonPathLong(j, '$.one.last()', 3)", 3, False),
            ("jsonPathExists(j, '$.one.last()')", False, False),
            ("jsonPathString(j, '$.zz.first()')", None, False),
        ],
    )


def test_keys_as_jayways_test(spark):
    _check(
        spark,
        [
            # [J:KeySetFunctionTest] {"a", "b"}: Jackson's map keeps the document's order;
            # [P] jsonPathString writes the Set as a JSON array
            ("jsonPathString(keyset, '$.data.keys()')", '["a","b"]', False),
            ("jsonPathString(j, '$.o.keys()')", '["b","a"]', False),
            # [J:KeySetFunction] not an object: null
            ("jsonPathString(j, '$.mixed.keys()', 'none')", "none", False),
            # [P] a Set's text is no number: jsonPathLong's parse throws, its default
            ("jsonPathLong(keyset, '$.data.keys()', 4)", 4, False),
            ("jsonPathExists(keyset, '$.data.keys()')", True, False),
        ],
    )


def test_pizza_shop_orders_transforms(spark):
    _check(
        spark,
        [
            ("JSONPATHARRAY(items, '$.length()')", ["2"], False),
            ("JSONPATHLONG(items, '$.sum($.[*].quantity)')", 5, False),
            ("JSONPATHARRAY(empty_items, '$.length()')", ["0"], False),
            # no quantity: the sum throws, jsonPathLong's default (Long.MIN_VALUE)
            ("JSONPATHLONG(no_qty, '$.sum($.[*].quantity)')", LONG_MIN, False),
            ("JSONPATHLONG(empty_items, '$.sum($.[*].quantity)')", LONG_MIN, False),
            # [J:AbstractAggregation] the root array's own numbers count too
            ("JSONPATHLONG(with_numbers, '$.sum($.[*].quantity)')", 3, False),
        ],
    )


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("$.text.concat()", "concat(), which sparkpipes does not support"),
        ("$.numbers.append(11).avg()", "function before the end of the path"),
        ("$.numbers.append(11)", "append(), which sparkpipes does not support"),
        ("$.numbers.foo()", "foo(), which is no Jayway JsonPath function"),
        ("$.numbers.Length()", "Length(), which is no Jayway JsonPath function"),
        ("$.items[*].price.sum()", "function after a wildcard"),
        ("$..price.max()", "deep scan"),
        ("$.length($.numbers)", "gives length() arguments"),
        ("$.sum(5, 3, $.numbers.max(), 2)", "uses a function"),  # [J:NestedFunctionTest]
        ("$.sum($..timestamp)", "deep scan"),  # [J:Issue191]
        ("$.sum($.a[*].b[*])", "more than one wildcard"),
        ('$.sum("5")', "is not a number or a '$' path"),
        ("$.numbers.index(x)", "index() takes one whole number"),
        ("$.numbers.length().x", "function before the end of the path"),
    ],
)
def test_refused_by_name(path, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        translate(f"jsonPathString(j, '{path}')", where="w")


def test_where_the_result_type_has_no_exact_conversion_it_is_refused():
    for fn in ("jsonPath", "jsonPathArray", "jsonPathArrayDefaultEmpty"):
        with pytest.raises(ConfigError, match="Set of keys"):
            translate(f"{fn}(j, '$.o.keys()')", where="w")
    # jsonExtractScalar is Pinot's query function, read by another configuration
    with pytest.raises(ConfigError, match="uses a function"):
        translate("jsonExtractScalar(j, '$.a.length()', 'INT')", where="w")


def test_an_array_into_a_single_value_column_is_read_as_pinot_reads_it(spark):
    """[P] ``DataTypeTransformerUtils.standardize``: of an Object[] (``jsonPathArray``'s)
    a single-value column takes the one non-null element; none is null, more throw
    ("Cannot read single-value from Object[]"). A JSON column takes the array whole."""
    from sparkpipes.frontends.pinot.lowering import _converted
    from sparkpipes.frontends.pinot.schema import FieldSpec

    count = FieldSpec("productsOrdered", "INT", "metric")
    cases = [
        ("jsonPathArray(items, '$.length()')", count, "2", False),
        ("jsonPathArray(j, '$.one')", count, "7", False),
        ("jsonPathArray(j, '$.zz')", count, None, False),  # null: no array
        ("jsonPathArray(num, '$.empty')", count, None, False),
        ("jsonPathArray(num, '$.numbers')", count, None, True),
        (
            "jsonPathArray(items, '$.length()')",
            FieldSpec("m", "INT", "metric", False),
            ["2"],
            False,
        ),
        ("jsonPathArray(j, '$.one')", FieldSpec("doc", "JSON", "dimension"), ["7"], False),
    ]
    from pyspark.sql.types import StringType, StructField, StructType

    names = list(RECORD)
    schema = StructType([StructField("@" + n, StringType()) for n in names])
    df = spark.createDataFrame([tuple(RECORD[n] for n in names)], schema)
    cols = []
    for i, (e, f, _, _) in enumerate(cases):
        made, fails = _converted(translate(e, where="w"), f)
        cols += [f"{made.sql} AS `v{i}`", f"coalesce({fails or 'false'}, false) AS `f{i}`"]
    row = df.selectExpr(*cols).first()
    got = [(row[2 * i], row[2 * i + 1]) for i in range(len(cases))]
    assert got == [(v, t) for _, _, v, t in cases]


def test_functions_on_the_root_document(spark):
    """``$.f()``: the function called on the document itself ([J:<Class>] as above); a
    JSON ``null`` document is read (Jackson: null) and the function called on it."""
    record = {"nul": "null", "arr": "[1, 2]", "str": '"str"', "five": "5"}
    cases = [
        ("jsonPathString(nul, '$.sum()')", None, True),  # [J:AbstractAggregation]
        ("jsonPathString(nul, '$.length()')", None, False),  # [J:Length]
        ("jsonPathString(nul, '$.x.sum()')", None, False),  # never called
        ("jsonPathString(arr, '$.sum()')", "3.0", False),
        ("jsonPathString(str, '$.length()')", None, False),
        ("jsonPathString(five, '$.first()')", None, True),  # [J:AbstractSequenceAggregation]
        ("jsonPathString(arr, '$.keys()')", None, False),  # [J:KeySetFunction]
    ]
    got = _run(spark, [e for e, _, _ in cases], record)
    assert got == [(v, t) for _, v, t in cases]


def test_a_double_into_a_whole_number_as_java_casts_it(spark):
    """[P] ``jsonValueToLong``: ``Number.longValue()`` of the Double, Java's ``(long)``:
    toward zero, past the range its end (jsonPathInt: ``(int)``), NaN 0."""
    record = {"big": "[1e300]", "wide": "[3e9]", "low": "[-2147483647.5]", "neg": "[-2.7]"}
    cases = [
        ("jsonPathLong(big, '$.sum()')", 2**63 - 1, False),
        ("jsonPathLong(neg, '$.sum()')", -2, False),
        ("jsonPathInt(wide, '$.max()')", 2**31 - 1, False),
        ("jsonPathInt(low, '$.min()')", -2147483647, False),
        ("jsonPathLong(wide, '$.avg()')", 3000000000, False),
    ]
    got = _run(spark, [e for e, _, _ in cases], record)
    assert got == [(v, t) for _, v, t in cases]

"""Pinot's comparisons, BETWEEN, IN and LIKE as its ingestion evaluates them
(apache/pinot@210c2951e72): ``InbuiltFunctionEvaluator`` takes each function's DOUBLE
variant (``PolymorphicComparisonScalarFunction.getFunctionInfo(int)``), so text compares
as numbers and text that is none throws (``RecordTransformerTest``: the filter
``svInt = 'abc'`` "Should have failed executing function"); ``=`` has a 1e-7 tolerance;
``IN`` is no scalar function; ``like`` ignores case (``PatternFactory.compile(regex,
true)``)."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import translate
from sparkpipes.frontends.pinot.expr.compare import like_regex
from tests.unit.frontends.pinot.test_expr import _frame, spark  # noqa: F401


def _values(spark, exprs, record):  # noqa: F811
    """(value, fails) of each expression over ``record``."""
    made = [translate(e, where="f") for e in exprs]
    cols = []
    for i, m in enumerate(made):
        cols += [f"{m.sql} AS `v{i}`", f"coalesce({m.fails or 'false'}, false) AS `f{i}`"]
    row = _frame(spark, [record]).selectExpr(*cols).first()
    return [(row[f"v{i}"], row[f"f{i}"]) for i in range(len(made))]


RECORD = {"s": "US", "n": "10", "d": "10.00000001", "nan": "NaN", "big": "9007199254740993"}

CASES = [
    # text that is no number throws, whatever it is compared with
    ("s = 'US'", (None, True)),
    ("s != 'DE'", (None, True)),
    ("'US' = 'US'", (None, True)),
    ("s < 'V'", (None, True)),
    # numbers in text compare as doubles
    ("n = '10.0'", (True, False)),
    ("n = 10", (True, False)),
    ("n > '9'", (True, False)),  # as text '10' < '9'
    ("n >= 10.5", (False, False)),
    # = and != within Pinot's tolerance of 1e-7
    ("d = 10", (True, False)),
    ("d != n", (False, False)),
    # two longs past 2^53 compare as the doubles they round to
    ("big = 9007199254740992", (True, False)),
    # Java's NaN: every comparison false, != too (|NaN| >= tol is false)
    ("nan = nan", (False, False)),
    ("nan != 1", (False, False)),
    ("nan > 1", (False, False)),
    ("nan < 1", (False, False)),
    ("nan BETWEEN 0 AND 1", (False, False)),
    ("nan NOT BETWEEN 0 AND 1", (True, False)),
    ("n BETWEEN '9' AND 11", (True, False)),
    ("s BETWEEN 1 AND 2", (None, True)),
    # a null argument: Pinot returns null before converting the other
    ("missing = 'US'", (None, False)),
    # strcmp is how text is compared in Pinot's ingestion
    ("strcmp(s, 'US') = 0", (True, False)),
    # a simple CASE compares with equals too
    ("CASE n WHEN 10 THEN 'ten' ELSE 'other' END", ("ten", False)),
    ("CASE s WHEN 'US' THEN 'us' ELSE 'other' END", (None, True)),
    # LIKE: Pinot's like ignores case and finds its regular expression
    ("s LIKE 'us'", (True, False)),
    ("s LIKE 'U_'", (True, False)),
    ("s LIKE 'U'", (False, False)),
    ("s NOT LIKE '%S'", (False, False)),
    ("n LIKE '1%'", (True, False)),
]


def test_comparisons_are_pinots(spark):  # noqa: F811
    record = {**RECORD, "missing": None}
    got = _values(spark, [e for e, _ in CASES], record)
    # a part that throws drops the record: its value is never stored
    got = [(None if fails else value, fails) for value, fails in got]
    wrong = {e: (g, w) for (e, w), g in zip(CASES, got) if g != w}
    assert not wrong, "\n".join(f"{e}: got {g!r}, want {w!r}" for e, (g, w) in wrong.items())


@pytest.mark.parametrize("expr", ["x IN (1, 2)", "x NOT IN ('a')", "x in (1)"])
def test_in_is_refused_as_pinot_refuses_it(expr):
    with pytest.raises(ConfigError) as e:
        translate(expr, where="ingestionConfig.filterConfig.filterFunction")
    message = str(e.value)
    assert "IN (character" in message and "is not supported" in message
    assert "Unsupported function: in" in message
    assert "ingestionConfig.filterConfig.filterFunction: " in message


def test_like_takes_a_literal_pattern():
    with pytest.raises(ConfigError, match="LIKE takes a text literal"):
        translate("x LIKE y", where="f")


#: RegexpPatternConverterUtils.likeToRegexpLike: Pinot's RegexpPatternConverterUtilsTest
#: (apache/pinot@210c2951e72, pinot-common), then cases read from its code
LIKE = [
    ("%++", "\\+\\+$"),
    ("C+%", "^C\\+"),
    ("%+%", "\\+"),
    ("C%+", "^C.*\\+$"),
    ("_++", "^.\\+\\+$"),
    ("C+_", "^C\\+.$"),
    ("C_+", "^C.\\+$"),
    ("C_%", "^C."),
    ("%%%%%%%%%%%%%zz", "zz$"),
    ("zz%%%%%%%%%%%%%", "^zz"),
    ("%z", "z$"),
    ("z%", "^z"),
    ("a\\_b_\\", "^a\\_b.\\\\$"),
    ("a\\%b\\cde", "^a\\%b\\\\cde$"),
    ("%2\\_2%", "2\\_2"),
    ("", "^$"),
    ("%", ""),
    ("%%", ""),
    ("a", "^a$"),
    ("_", "^.$"),
    ("%abc%", "abc"),
    ("%abc", "abc$"),
    ("abc%", "^abc"),
    ("a_b%c", "^a.b.*c$"),
    ("a.b", "^a\\.b$"),
    ("a\\_b", "^a\\_b$"),
    ("a\\%b", "^a\\%b$"),
    ("a\\b", "^a\\\\b$"),
    ("z\\", "^z\\\\$"),
    ("(x)", "^\\(x\\)$"),
]


@pytest.mark.parametrize(("pattern", "regex"), LIKE)
def test_like_patterns_are_pinots_regular_expressions(pattern, regex):
    assert like_regex(pattern) == regex


def test_only_the_special_numbers_java_reads_are_numbers(spark):  # noqa: F811
    """``Double.parseDouble`` reads ``NaN`` and ``Infinity`` (signed), not Spark's ``inf``
    or ``nan`` in any case: those throw in Pinot, so the record is dropped."""
    record = {"a": "-Infinity", "b": "inf", "c": "nan", "d": " NaN "}
    got = _values(spark, ["a < 0", "b > 0", "c = c", "d = d", "b + 1"], record)
    assert got == [(True, False), (None, True), (None, True), (False, False), (None, True)]

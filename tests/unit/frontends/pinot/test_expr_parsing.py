"""Pinot ingestion expressions → Spark SQL, without Spark: what the parser reads (fields,
function names, parentheses), the function registry, and the errors a user sees for what
cannot be translated (split from ``test_expr.py``, which computes values in Spark)."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import FUNCTIONS, filter_sql, translate

WHERE = "transformConfigs[0] (column 'day')"


#: the Pinot functions ingestion configs use most (Pinot spelling)
REQUIRED = """toEpochSeconds toEpochMinutes toEpochHours toEpochDays toEpochSecondsRounded
toEpochMinutesRounded toEpochHoursRounded toEpochDaysRounded toEpochSecondsBucket
toEpochMinutesBucket toEpochHoursBucket toEpochDaysBucket fromEpochSeconds
fromEpochMinutes fromEpochHours fromEpochDays fromEpochSecondsBucket
fromEpochMinutesBucket fromEpochHoursBucket fromEpochDaysBucket toDateTime fromDateTime
toTimestamp fromTimestamp now ago year month dayOfMonth day dayOfWeek dayOfYear hour
minute second millisecond dateTrunc upper lower trim ltrim rtrim reverse length concat
substr strpos startsWith endsWith replace lpad rpad splitPart regexpExtract
regexpReplace contains toUtf8 fromUtf8 md5 sha sha256 sha512 toBase64 fromBase64 strcmp
abs ceil floor exp ln log10 sqrt power pow round roundDecimal mod plus minus times divide
least greatest jsonPathString jsonPathLong jsonPathDouble jsonPathArray jsonFormat
json_extract_scalar coalesce isNull isNotNull"""


# --- parsing without Spark ---------------------------------------------------------------


def test_fields_in_first_appearance_order_without_duplicates():
    assert translate("concat(b, a, b)", where="w").fields == ("b", "a")
    expr = translate('"__metadata$offset" + "a`b" + x + "x"', where="w")
    assert expr.fields == ("__metadata$offset", "a`b", "x")
    assert "`@__metadata$offset`" in expr.sql
    assert "`@a``b`" in expr.sql
    assert translate("now()", where="w").fields == ()
    assert translate("timestamp + count + date + year(ts)", where="w").fields == (
        "timestamp",
        "count",
        "date",
        "ts",
    )


def test_function_names_are_case_and_underscore_insensitive():
    sql = translate("toEpochSeconds(ts)", where="w").sql
    assert translate("TOEPOCHSECONDS(ts)", where="w").sql == sql
    assert translate("to_epoch_seconds(ts)", where="w").sql == sql
    assert sql == "(try_cast(`@ts` AS BIGINT) div 1000)"


def _double(name: str) -> str:
    """A field's text as Pinot's ``Double.parseDouble`` reads it (test_compare.py)."""
    special = r"^\\s*[+-]?(?!(Infinity|NaN)\\s*$)(?i:inf|infinity|nan)\\s*$"
    return f"try_cast(regexp_replace(`@{name}`, '{special}', 'x') AS DOUBLE)"


def test_generated_subexpressions_are_parenthesised():
    sql = translate("(a + b) * c", where="w").sql
    assert sql == f"(({_double('a')} + {_double('b')}) * {_double('c')})"
    assert translate("a - (b - c)", where="w").sql.endswith(f"({_double('b')} - {_double('c')}))")


def test_registry():
    must = REQUIRED.split()
    missing = [n for n in must if n.replace("_", "").lower() not in FUNCTIONS]
    assert not missing
    fn = FUNCTIONS["toepochseconds"]
    assert (fn.name, fn.min_args, fn.max_args) == ("toEpochSeconds", 1, 1)
    fn = FUNCTIONS["todatetime"]
    assert (fn.min_args, fn.max_args, fn.signature) == (
        2,
        3,
        "toDateTime(millis, pattern[, timezone])",
    )
    assert FUNCTIONS["coalesce"].max_args is None
    assert all(key == key.lower() and "_" not in key for key in FUNCTIONS)
    with pytest.raises(TypeError):
        FUNCTIONS["x"] = fn  # type: ignore[index]


# --- errors ---------------------------------------------------------------------------


def _error(expr: str, where: str = WHERE, *, filter: bool = False) -> str:
    with pytest.raises(ConfigError) as e:
        (filter_sql if filter else translate)(expr, where=where)
    message = e.value.message
    assert message.startswith(where + ": ")
    assert "Traceback" not in message
    return message[len(where) + 2 :]


def test_unknown_function_names_the_nearest_one():
    assert _error("toEpochSecond(ts)") == (
        "unknown transform function 'toEpochSecond' (character 1); did you mean 'toEpochSeconds'?"
    )
    msg = _error(
        "upper(jsonPathStrin(p, '$.a'))", where="ingestionConfig.filterConfig", filter=True
    )
    assert msg.startswith("unknown filter function 'jsonPathStrin' (character 7)")
    assert msg.endswith("did you mean 'jsonPathString'?")
    assert "did you mean" not in _error("zzzzqqq(ts)")


def test_wrong_number_of_arguments():
    assert _error("toEpochSeconds(ts, 1)") == (
        "toEpochSeconds takes 1 argument (toEpochSeconds(millis)), got 2 (character 1)"
    )
    assert _error("upper(toDateTime(ts))") == (
        "toDateTime takes 2 to 3 arguments (toDateTime(millis, pattern[, timezone])), got 1 "
        "(character 7)"
    )
    assert "now takes 0 arguments" in _error("now(1)")
    assert "coalesce takes at least 1 argument" in _error("coalesce()")


def test_syntax_errors_name_the_position_and_the_text_around_it():
    assert _error("toEpochSeconds(ts") == (
        "syntax error at character 18: expected ')' closing the arguments of toEpochSeconds, "
        "found the end of the expression (after 'toEpochSeconds(ts', at the end)"
    )
    assert _error("a + * b") == (
        "syntax error at character 5: unexpected '*' (after 'a + ', before '* b')"
    )
    assert _error("1 2").startswith("syntax error at character 3: unexpected '2'")
    assert _error("'abc").startswith("syntax error at character 1: unterminated string")
    assert _error("a ; b").startswith("syntax error at character 3: unexpected character ';'")
    assert _error("a.b + 1").startswith(
        "syntax error at character 1: a field name with '.' or '$' must be double-quoted: \"a.b\""
    )
    assert "expected AND in BETWEEN" in _error("x BETWEEN 1 OR 2")
    assert "expected END closing CASE" in _error("CASE WHEN x THEN 1")
    assert "unknown type FOO" in _error("CAST(x AS FOO)")
    assert "did you mean LONG?" in _error("CAST(x AS LONGG)")


def test_groovy_is_refused_with_a_way_out():
    msg = _error("Groovy({timestamp / 1000}, timestamp)")
    assert msg.startswith("Groovy scripts are not supported")
    assert "arbitrary code" in msg
    # Pinot's own controller refuses them by default (ControllerConf.DEFAULT_DISABLE_GROOVY)
    assert "Pinot's controller refuses them too" in msg
    assert "controller.disable.ingestion.groovy=false" in msg
    assert "toEpochSeconds(ts)" in msg
    assert _error("groovy ({x > 10}, x)", filter=True).startswith(
        "Groovy scripts are not supported"
    )


def test_empty_expression():
    assert _error("") == "the expression is empty"
    assert _error("  \n") == "the expression is empty"


def test_arguments_that_must_be_literals_and_other_checks():
    assert "the pattern of toDateTime must be text in single quotes" in _error("toDateTime(ts, p)")
    msg = _error('toDateTime(ts, "yyyy-MM-dd")')
    assert 'a double-quoted "..." is a field name' in msg
    assert "pattern letter 'q'" in _error("toDateTime(ts, 'qq')")
    assert "unterminated quote" in _error("toDateTime(ts, 'yyyy''T')")
    assert "unknown time zone 'Amerika/New_York'; did you mean 'America/New_York'?" in _error(
        "hour(ts, 'Amerika/New_York')"
    )
    assert "deep scan" in _error("jsonPathString(j, '$..a')")
    assert "a filter" in _error("jsonPathLong(j, '$.a[?(@.b > 1)]')")
    assert "result type 'INTEGERS'" in _error("json_extract_scalar(j, '$.a', 'INTEGERS')")
    assert "dateTrunc unit 'fortnight'" in _error("dateTrunc('fortnight', ts)")
    assert "not an ISO-8601 duration" in _error("ago('1 day')")
    assert "replaces one occurrence only" in _error("regexpReplace(s, r, 'x', 0, 1)")

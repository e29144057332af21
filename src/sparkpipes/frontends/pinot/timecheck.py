"""Pinot's ``ingestionConfig.rowTimeValueCheck``: each record's time checked as Pinot's
``TimeValidationTransformer`` checks it.

In Pinot (``pinot-segment-local``, ``recordtransformer/TimeValidationTransformer.java`` and
``utils/TimeValidationTransformerUtils.java``):

* the check runs when the table has a ``segmentsConfig.timeColumnName`` and
  ``rowTimeValueCheck`` is true (``TimeValidationTransformerUtils.getConfig``, lines
  79-97); without a time column it is a no-op;
* it runs after ``ExpressionTransformer``, ``FilterTransformer`` and ``DataTypeTransformer``
  and before ``NullValueTransformer`` (``RecordTransformerUtils.getTransformers``, lines
  90-98): it sees the time column's value converted to the column's type (a TIMESTAMP as
  its epoch millis, ``PinotDataType.TIMESTAMP.toInternal``) and never a record the
  filter dropped;
* a null time is left alone (``TimeValidationTransformer.transform``, line 54);
* any other value is read as its text by the column's format
  (``DateTimeFormatSpec.fromFormatToMillis(value.toString())``, utils line 114: EPOCH text
  a ``BigDecimal`` cut to a long, times the size, in the unit; TIMESTAMP
  ``TimestampUtils.toMillisSinceEpoch``; SIMPLE_DATE_FORMAT Joda's ``parseMillis`` in the
  format's zone) and must be within ``TimeUtils.timeValueInValidRange``: 1971-01-01 to
  2071-01-01 UTC, both ends included (``TimeUtils.java`` lines 37-38, 114-116);
* a value that does not parse (utils lines 115-123) or is out of range (lines 126-134)
  throws ``IllegalStateException`` — the consumer drops the record — unless
  ``continueOnError``: then the column is set to null (transformer lines 58-61) and
  ``NullValueTransformer`` stores its default, the time column's own rule
  (:mod:`~sparkpipes.frontends.pinot.nulls`: its default if that is a valid time, else
  the load time).

Here the value is read by the same Spark SQL that reads a ``dateTimeConvert`` input of the
column's format (``DateTimeConvert.fromInputFormatToMillis`` of text is the same
``fromFormatToMillis(String)``), written by :func:`millis_sql`. Without
``continueOnError`` the two failures are rejects of the pipeline
(``TransformSpec.rejects``: the record goes to ``PIPELINES_ERRORS`` with its partition and
offset), judged only on records the filter keeps; with it the time column's ``SET`` is
NULL there, and the table's null rule fills it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparkpipes.frontends.pinot.expr import translate
from sparkpipes.frontends.pinot.nulls import VALID_TIME_MS
from sparkpipes.frontends.pinot.schema import DateTimeFormat, FieldSpec

#: a field name no record has: the value's place in the translated SQL (:func:`millis_sql`)
_PLACE = "__sp_row_time_value__"
#: where errors about the check are reported
WHERE = "ingestionConfig.rowTimeValueCheck"
#: what Pinot's log says of the range (``TimeUtils.VALID_TIME_INTERVAL``)
RANGE = "1971-01-01T00:00:00.000Z/2071-01-01T00:00:00.000Z"


def format_text(fmt: DateTimeFormat) -> str:
    """The dateTime format as Pinot writes it (the colon form, the pipe form for a
    SIMPLE_DATE_FORMAT given with its zone after a ``|``)."""
    if fmt.kind == "EPOCH":
        return f"{fmt.size}:{fmt.unit}:EPOCH"
    if fmt.kind == "TIMESTAMP":
        return "1:MILLISECONDS:TIMESTAMP"
    pattern = fmt.pattern or ""
    if "|" in pattern:  # SIMPLE_DATE_FORMAT|pattern|zone
        return f"SIMPLE_DATE_FORMAT|{pattern}"
    return f"{fmt.size}:{fmt.unit}:SIMPLE_DATE_FORMAT:{pattern}"


def millis_sql(text: str, fmt: DateTimeFormat) -> tuple[str, str]:
    """``(millis, unparsed)``: the Spark SQL of ``fromFormatToMillis`` of the value text
    ``text`` (SQL, not NULL where it is used) — NULL where it cannot be read or does not
    fit a long — and the condition true where Pinot's parse throws. Raises ConfigError
    (starting with :data:`WHERE`) for a format whose parse is not written here."""
    fmt_lit = format_text(fmt).replace("'", "''")
    expr = translate(
        f"dateTimeConvert(\"{_PLACE}\", '{fmt_lit}', '1:MILLISECONDS:EPOCH', '1:MILLISECONDS')",
        where=f"{WHERE} (the time column's format '{format_text(fmt)}')",
    )
    place = translate(f'"{_PLACE}"', where=WHERE).sql
    value = f"({text})"
    millis = expr.sql.replace(place, value)
    if expr.fails is None:  # (EPOCH and TIMESTAMP text, SIMPLE_DATE_FORMAT: always given)
        return millis, "false"
    return millis, expr.fails.replace(place, value)


def value_text(value: str, ddl_type: str) -> str:
    """The SQL of ``value.toString()`` for a value of the column's type: a TIMESTAMP is
    its epoch millis inside Pinot, the rest Java's text of them (Spark's is the same)."""
    stored = f"try_cast(({value}) AS {ddl_type})"
    if ddl_type == "TIMESTAMP":
        return f"CAST(unix_millis({stored}) AS STRING)"
    return f"CAST({stored} AS STRING)"


def conditions(value: str, f: FieldSpec) -> tuple[str, str]:
    """``(unparsed, out_of_range)``: Spark SQL true where Pinot's check of ``f``'s value
    ``value`` (SQL, of the column's type) throws for a text the format cannot read, and
    for a time outside 1971-2071 (or one too large for a long, which Java's ``TimeUnit``
    saturates to ``Long.MAX_VALUE``). Both false for NULL."""
    assert f.format is not None  # a dateTime field
    text = value_text(value, f.ddl_type)
    millis, unparsed = millis_sql(text, f.format)
    lo, hi = VALID_TIME_MS
    given = f"{text} IS NOT NULL"
    return (
        f"({given} AND {unparsed})",
        f"({given} AND NOT coalesce(({millis}) BETWEEN {lo} AND {hi}, false))",
    )


def check(f: FieldSpec) -> None:
    """Raises ConfigError when ``f``'s values cannot be checked here (its format)."""
    conditions(_quoted(f.name), f)


def reasons(column: str, fmt: DateTimeFormat) -> tuple[str, str]:
    """Why a record is rejected: its time does not parse, or is out of range."""
    then = (
        "Pinot drops the record (with continueOnError it would store the column's default "
        "null value and load the record)"
    )
    return (
        f"the time column '{column}' has a value its format '{format_text(fmt)}' cannot "
        "read: rowTimeValueCheck is on, and Pinot's TimeValidationTransformer throws "
        f'("Caught exception while parsing time value"); {then}',
        f"the time column '{column}' is not within 1971-01-01 and 2071-01-01 UTC: "
        "rowTimeValueCheck is on, and Pinot's TimeValidationTransformer throws (\"Time "
        f'value: … is not in valid range: {RANGE}"); {then}',
    )


def lowered(
    f: FieldSpec,
    assignments: Sequence[tuple[str, str]],
    where: str | None,
    continue_on_error: bool,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The pipeline's ``SET`` assignments and the rejects to add for the check of the time
    column ``f``. ``where`` is the pipeline's WHERE (the records the filter keeps: the
    check never sees the others). Without ``continueOnError`` the assignments are as
    given and a failing record is rejected; with it, the time column's value is NULL
    where the check fails (its ``SET``, made when the record field is loaded into it)."""
    sets = dict(assignments)
    value = sets.get(f.name, _quoted(f.name))
    unparsed, out_of_range = conditions(value, f)
    if continue_on_error:
        nulled = f"CASE WHEN {unparsed} OR {out_of_range} THEN NULL ELSE {value} END"
        if f.name in sets:
            return [(c, nulled if c == f.name else e) for c, e in assignments], []
        return [*assignments, (f.name, nulled)], []
    kept = (lambda c: c) if where is None else (lambda c: f"(({where}) AND {c})")
    why = reasons(f.name, f.format or DateTimeFormat("EPOCH"))
    return list(assignments), [(kept(unparsed), why[0]), (kept(out_of_range), why[1])]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"

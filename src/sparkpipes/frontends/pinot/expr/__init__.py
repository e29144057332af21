"""Pinot ingestion expressions (``transformFunction``, ``filterFunction``) → Spark SQL.

:func:`translate` reads one Pinot expression and writes the Spark SQL that computes the
same value over a record, Pinot's function semantics included; :func:`filter_sql` writes
the condition of the records a Pinot ``filterFunction`` keeps. Errors are
:class:`~sparkpipes.errors.ConfigError` messages that begin with the caller's ``where``.

What the SQL reads and returns:

* every record field (``ts``, ``"a.b"``, ``"__metadata$offset"``) is the column
  ```@name``` — a pipeline variable, which sparkpipes loads as text (nested values as JSON
  text). Arguments are converted to the type the Pinot function declares (``long millis``
  → BIGINT, ``String`` → STRING …) with ``try_cast``, so a value that does not convert is
  NULL rather than a failed batch; a comparison or arithmetic between a field and a number
  compares / computes numerically.
* Pinot's epoch millis are BIGINT; date-time functions work in UTC unless given a time
  zone, and never depend on ``spark.sql.session.timeZone`` (they compute on
  TIMESTAMP_NTZ wall clocks and explicit zone conversions, not Spark's zone-dependent
  ``date_format`` / ``year`` on TIMESTAMP).
* a function returns NULL when an argument is NULL, as Pinot's scalar functions do, except
  where Pinot's takes a default (``jsonPathString(json, path, default)`` …).
* division and remainder by zero are NULL (Pinot's doubles give Infinity / NaN; Spark's
  ANSI mode would fail the batch).

:data:`FUNCTIONS` lists every function: its name lower-cased without underscores (Pinot
matches names that way, so ``to_epoch_seconds`` is ``toEpochSeconds``) → its
:class:`Function` (Pinot's spelling, parameters, argument count, what it returns).
``Groovy({...}, ...)`` is refused: a Groovy script is arbitrary code. Pinot's
geospatial functions are not SQL: they are computed first, as :attr:`PinotExpr.calls`
(:mod:`.geo`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkpipes.config import FunctionCall

# the function modules register their functions in FUNCTIONS as they are imported, the
# date and time functions first (FUNCTIONS lists them in that order)
from sparkpipes.frontends.pinot.expr import times  # noqa: F401  # isort: skip
from sparkpipes.frontends.pinot.expr import functions  # noqa: F401  # isort: skip
from sparkpipes.frontends.pinot.expr import json_functions  # noqa: F401  # isort: skip
from sparkpipes.frontends.pinot.expr import convert  # noqa: F401  # isort: skip
from sparkpipes.frontends.pinot.expr.budget import MAX_SQL, Budget, TooLarge
from sparkpipes.frontends.pinot.expr.core import (
    FUNCTIONS,
    Function,
    _as,
    _first_existing,
    _Node,
    _var,
)
from sparkpipes.frontends.pinot.expr.parser import _Parser

__all__ = [
    "FUNCTIONS",
    "MAX_SQL",
    "Budget",
    "Function",
    "PinotExpr",
    "TooLarge",
    "as_type",
    "filter_sql",
    "first_existing",
    "translate",
]


@dataclass(frozen=True)
class PinotExpr:
    """One translated expression.

    ``sql`` is Spark SQL text, parenthesised as needed so it can be embedded anywhere;
    ``fields`` are the record fields it reads (each is the column ```@name``` in ``sql``),
    in order of first appearance, without duplicates.
    """

    sql: str
    fields: tuple[str, ...]
    #: the Spark type of the result where it is known (BIGINT for epoch millis …)
    type: str | None = None
    #: the columns ``sql`` reads that are computed first (Pinot's geospatial functions,
    #: :mod:`.geo`), inner calls first
    calls: tuple[FunctionCall, ...] = ()
    #: Spark SQL true exactly for the records where Pinot's evaluation throws (a function
    #: over text it cannot read: not JSON, no number, no date; an argument's failure is
    #: its call's), None where it cannot. Pinot then drops the record, or under
    #: ``continueOnError`` leaves the column null (a filter: keeps the record); ``sql``
    #: gives NULL there, or what an enclosing function makes of a NULL (the lowering
    #: writes ``CASE WHEN fails THEN NULL ...`` where that matters). A field another
    #: transform makes is read without that transform's failure: it is that transform's
    #: own (Pinot evaluates it first, dropping the record there)
    fails: str | None = None


def translate(
    expr: str,
    *,
    where: str,
    derived: Mapping[str, PinotExpr] | None = None,
    budget: Budget | None = None,
) -> PinotExpr:
    """The Spark SQL of the Pinot expression ``expr`` (a ``transformFunction``).

    ``derived`` maps the fields other transforms make to their translations: a field
    named there is read as that transform's value (the record's own value of it first,
    :func:`first_existing`), as Pinot runs transforms in the order they read each other
    (:mod:`sparkpipes.frontends.pinot.chain`); any other field is the record's.

    ``budget`` is what the SQL of the table's expressions may still come to, shared by
    all of them and spent by this one (without it: :data:`MAX_SQL` for this one alone).

    Raises :class:`ConfigError`, its message starting with ``where``, for an empty or
    malformed expression, an unknown function (naming the nearest known one), a wrong
    number of arguments, an argument a function needs as a literal (a date pattern, a JSON
    type …) given otherwise, and ``Groovy(...)``; :class:`TooLarge` for SQL over the
    budget.
    """
    parser = _Parser(expr, where, "transform", derived, budget)
    node, fields = parser.parse()
    return PinotExpr(node.sql, fields, node.type, tuple(parser.calls.values()), node.fails)


def as_type(sql: str, source: str | None, target: str) -> str:
    """The SQL of ``sql`` (of Spark type ``source``, None: text) converted to ``target`` as
    Pinot's ``PinotDataType`` converts a value (NULL where it cannot)."""
    return _as(_Node(sql, source), target).sql


def first_existing(column: str, expr: PinotExpr) -> PinotExpr:
    """The value Pinot's ``ExpressionTransformer`` leaves in ``column``, the destination of
    ``expr``: the record's own non-null value of ``column`` if it has one (Pinot skips the
    transform then), else ``expr``'s. Reads the record's ``column`` as one more field."""
    node = _first_existing(column, _Node(expr.sql, expr.type))
    fields = (column, *(f for f in expr.fields if f != column))
    # the transform runs (and can fail) only where the record has no value of its own
    fails = None if expr.fails is None else f"({_var(column)} IS NULL AND {expr.fails})"
    return PinotExpr(node.sql, fields, node.type, expr.calls, fails)


def filter_sql(
    expr: str,
    *,
    where: str,
    derived: Mapping[str, PinotExpr] | None = None,
    budget: Budget | None = None,
) -> PinotExpr:
    """The Spark SQL condition of the records a Pinot ``filterFunction`` keeps.

    Pinot drops a record for which the filter is true, so this is
    ``NOT coalesce((<filter>), false)``: a record whose filter is false or NULL is kept.
    ``fails`` is where the filter throws (``FilterTransformer``: the record is dropped
    with an error, or under ``continueOnError`` kept).
    Pinot filters after its transforms, so a field in ``derived`` is read as the
    transform's value (see :func:`translate`, and for ``budget``). Errors as for
    :func:`translate`.
    """
    parser = _Parser(expr, where, "filter", derived, budget)
    node, fields = parser.parse()
    cond = _as(node, "BOOLEAN").sql
    keep = f"(NOT coalesce(({cond}), false))"
    return PinotExpr(keep, fields, None, tuple(parser.calls.values()), node.fails)

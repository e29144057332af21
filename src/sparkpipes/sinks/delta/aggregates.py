"""Aggregating loads into a Delta table (the :class:`~sparkpipes.sinks.delta.upsert.Upsert`
mode ``aggregate``; Pinot's ingestion-time rollup): the rows of a batch with equal values of
every column that is not aggregated (the group key) collapse into one row, each aggregated
column its function over the group's values, and that row meets the stored row of the same
group in the batch's MERGE — SUM adds, MIN and MAX compare — in the one commit that holds
the batch's offsets.

:data:`AGGREGATES` is the registry: a function's name → the Spark aggregate over a group's
values (NULLs are skipped), the delta-rs SQL that combines the stored value ``t`` with the
batch's ``s``, and its identity — what a group without a single value holds (SUM 0, MIN
the greatest value of the column's type, MAX the least: a later value then wins, as Pinot's
``MinValueAggregator`` starts from +Infinity). A group's aggregate is never NULL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: the greatest and least value of a Spark type (its ``simpleString``), a fold's start
_GREATEST = {
    "tinyint": "127",
    "smallint": "32767",
    "int": "2147483647",
    "bigint": "9223372036854775807",
    "float": "CAST('Infinity' AS FLOAT)",
    "double": "CAST('Infinity' AS DOUBLE)",
}
_LEAST = {
    "tinyint": "-128",
    "smallint": "-32768",
    "int": "-2147483648",
    "bigint": "-9223372036854775808",
    "float": "CAST('-Infinity' AS FLOAT)",
    "double": "CAST('-Infinity' AS DOUBLE)",
}


@dataclass(frozen=True)
class Aggregate:
    """One aggregation function: ``batch`` (Spark SQL over ``{c}``), ``merge`` (delta-rs
    SQL over the stored ``{t}`` and the batch's ``{s}``, both not NULL), ``identity``
    (Spark type → SQL of the value of a group without values; NULL where the type has
    none)."""

    batch: str
    merge: str
    identity: Callable[[str], str]


AGGREGATES: dict[str, Aggregate] = {
    "SUM": Aggregate("sum({c})", "{t} + {s}", lambda t: "0"),
    "MIN": Aggregate(
        "min({c})", "CASE WHEN {s} < {t} THEN {s} ELSE {t} END", lambda t: _GREATEST.get(t, "NULL")
    ),
    "MAX": Aggregate(
        "max({c})", "CASE WHEN {s} > {t} THEN {s} ELSE {t} END", lambda t: _LEAST.get(t, "NULL")
    ),
}


#: integer types (Arrow's names and Spark's) → the bounds a SUM saturates at: Pinot keeps
#: a sum as a double and stores its ``intValue()`` / ``longValue()``, which saturate,
#: where an integer sum here would wrap around
_INTEGERS = {
    "int8": ("TINYINT", -(2**7), 2**7 - 1),
    "int16": ("SMALLINT", -(2**15), 2**15 - 1),
    "int32": ("INT", -(2**31), 2**31 - 1),
    "int64": ("BIGINT", -(2**63), 2**63 - 1),
}
_INTEGERS.update({"tinyint": _INTEGERS["int8"], "smallint": _INTEGERS["int16"]})
_INTEGERS.update({"int": _INTEGERS["int32"], "bigint": _INTEGERS["int64"]})


def saturated_sum(left: str, right: str | None, type_name: str) -> str | None:
    """SQL of ``left + right`` (or of the sum aggregate over ``left``) in exact arithmetic,
    kept within the integer type's bounds; None for a type that is not an integer."""
    if type_name not in _INTEGERS:
        return None
    sql_type, least, greatest = _INTEGERS[type_name]
    wide = f"CAST({left} AS DECIMAL(38,0))"
    total = f"sum({wide})" if right is None else f"{wide} + CAST({right} AS DECIMAL(38,0))"
    return f"CAST(LEAST(GREATEST({total}, {least}), {greatest}) AS {sql_type})"


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def reduce(df, keys: Sequence[str], functions: Mapping[str, str], columns: Sequence[str]):
    """``df`` with one row per group of equal ``keys`` (NULL equal to NULL), each column of
    ``functions`` aggregated by its function; ``columns`` in order."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    aggs = []
    for c, name in functions.items():
        fn, t = AGGREGATES[name], types[c]
        batch = (name == "SUM" and saturated_sum(_q(c), None, t)) or fn.batch.format(c=_q(c))
        aggs.append(F.expr(f"CAST(coalesce({batch}, {fn.identity(t)}) AS {t})").alias(c))
    return df.groupBy(*[F.col(_q(k)) for k in keys]).agg(*aggs).select(*[_q(c) for c in columns])


def predicate(keys: Sequence[str]) -> str:
    """The MERGE's match: the same group (a NULL key value matches a NULL; parenthesised,
    as delta-rs's parser binds ``IS NOT DISTINCT FROM`` looser than ``AND``)."""
    return " AND ".join(f"(t.{_q(k)} IS NOT DISTINCT FROM s.{_q(k)})" for k in keys)


def merged(column: str, name: str, type_name: str = "") -> str:
    """The delta-rs SQL of ``column`` (of Arrow type ``type_name``) once the batch's
    aggregate ``s`` met the stored ``t``; an integer SUM saturates (:func:`saturated_sum`)."""
    s, t = f"s.{_q(column)}", f"t.{_q(column)}"
    both = (name == "SUM" and saturated_sum(t, s, type_name)) or AGGREGATES[name].merge.format(
        s=s, t=t
    )
    return f"CASE WHEN {s} IS NULL THEN {t} WHEN {t} IS NULL THEN {s} ELSE {both} END"

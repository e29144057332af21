"""Ingest-time SQL: a pipeline's ``SET`` and ``WHERE`` and a table's computed columns.

They are Spark SQL expressions (in the SingleStore dialect, translated by
``sparkpipes.engine.dialect``), so they run in Spark, not in the decoding tasks: when a
pipeline has any, its sink stages what the tasks decoded and runs them in one Spark job
(a :class:`Refiner` is what the engine hands the sink). The batch still makes its one
commit with the offsets; staged files are never part of the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from sparkpipes.engine.dialect import translate
from sparkpipes.engine.schema import to_spark
from sparkpipes.errors import ConfigError


@dataclass(frozen=True)
class Transform:
    """Expressions from the load schema to the table schema."""

    assignments: tuple[tuple[str, str], ...] = ()
    where: str | None = None
    computed: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.assignments or self.where or self.computed)


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def apply(df, transform: Transform, table_schema: pa.Schema, carry: Sequence[str] = ()):
    """The DataFrame of table rows: SET, then WHERE, then computed columns, then cast.
    The ``carry`` columns of ``df`` are carried through unchanged, after the table's."""
    from pyspark.errors import PySparkException

    spark_types = {f.name: f.dataType.simpleString() for f in to_spark(table_schema).fields}
    try:
        if transform.assignments:
            assigned = {c for c, _ in transform.assignments}
            keep = [_q(c) for c in df.columns if c not in assigned]
            sets = [f"{translate(e)} AS {_q(c)}" for c, e in transform.assignments]
            df = df.selectExpr(*keep, *sets)
        if transform.where:
            df = df.where(translate(transform.where))
        have = set(df.columns)
        base = []
        for f in table_schema:
            if f.name in dict(transform.computed):
                continue
            src = _q(f.name) if f.name in have else "NULL"
            base.append(f"CAST({src} AS {spark_types[f.name]}) AS {_q(f.name)}")
        df = df.selectExpr(*base, *[_q(c) for c in carry])
        for name, expr in transform.computed:
            df = df.selectExpr(
                "*", f"CAST(({translate(expr)}) AS {spark_types[name]}) AS {_q(name)}"
            )
        return df.select(*[f.name for f in table_schema], *carry)
    except PySparkException as e:
        first = str(e).strip().splitlines()[0]
        raise ConfigError(f"invalid SET / WHERE / computed-column expression: {first}") from None


@dataclass(frozen=True)
class Refiner:
    """The ingest-time SQL of one pipeline into one table, as the sink SPI's ``refine``:
    staged rows in, table rows (plus the extra columns asked for) out."""

    transform: Transform
    table_schema: pa.Schema

    def __call__(self, df, keep: Sequence[str] = ()):
        return apply(df, self.transform, self.table_schema, keep)

"""Ingest-time SQL: a pipeline's ``SET`` and ``WHERE`` and a table's computed columns.

They are Spark SQL expressions (in the SingleStore dialect, translated by
``sparkpipes.sql.translate``), so they run in Spark, not in the decoding tasks: when a
pipeline has any, its tasks write what they decoded to a staging area, and a second
Spark job reads it, applies the expressions and writes the table's Parquet files. The
batch still makes its one Delta commit with the offsets; staging files are never part
of the table and are removed after the commit.

``write_dataframe`` is also how ``INSERT`` loads a DataFrame into a table.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from sparkpipes.engine.dialect import translate
from sparkpipes.engine.schema import to_spark
from sparkpipes.errors import ConfigError, SchemaMismatchError
from sparkpipes.sinks import AddFile, DeltaSink

ADD_FILE_SCHEMA = (
    "path string, size bigint, modification_time bigint, num_records bigint, stats string"
)


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


def apply(df, transform: Transform, table_schema: pa.Schema):
    """The DataFrame of table rows: SET, then WHERE, then computed columns, then cast."""
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
        df = df.selectExpr(*base)
        for name, expr in transform.computed:
            df = df.selectExpr(
                "*", f"CAST(({translate(expr)}) AS {spark_types[name]}) AS {_q(name)}"
            )
        return df.select(*[f.name for f in table_schema])
    except PySparkException as e:
        first = str(e).strip().splitlines()[0]
        raise ConfigError(f"invalid SET / WHERE / computed-column expression: {first}") from None


def write_dataframe(df, sink: DeltaSink, prefix: str) -> list[AddFile]:
    """Write a DataFrame's rows as Parquet files of ``sink`` (one per Spark partition with
    rows) from the executors; return their add-actions, uncommitted."""

    def write(batches):
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        f = sink.write_file(pa.concat_tables(tables), prefix)
        yield pa.RecordBatch.from_pylist([f.to_dict()])

    try:
        rows = df.mapInArrow(write, ADD_FILE_SCHEMA).collect()
    except Exception as e:
        text = str(e)
        for line in text.splitlines():
            if "SparkpipesError" in line or "SchemaMismatchError" in line:
                raise SchemaMismatchError(line.split(":", 1)[-1].strip()) from None
        first = text.strip().splitlines()[0] if text.strip() else type(e).__name__
        raise SchemaMismatchError(f"writing to table '{sink.name}' failed: {first}") from None
    return [AddFile(**r.asDict()) for r in rows]


def run_staged(
    spark,
    staged: list[AddFile],
    staging_dir: str,
    load_schema: pa.Schema,
    transform: Transform,
    sink: DeltaSink,
    prefix: str,
) -> list[AddFile]:
    """Read a batch's staged files, apply the transform, write the table's files."""
    if not staged:
        return []
    import os

    paths = [os.path.join(staging_dir, f.path) for f in staged]
    df = spark.read.schema(to_spark(load_schema)).parquet(*paths)
    return write_dataframe(apply(df, transform, sink.schema), sink, prefix)


def remove_staging(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def computed_from(options: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in dict(options.get("computed", {})).items())

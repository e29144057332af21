"""Spark DataFrames into and out of a sink, on the executors, as Arrow.

:func:`write_frame` writes a DataFrame's rows as data files from the tasks (nothing passes
through the driver but the add-actions); :func:`stream_frame` brings rows to the driver
one Spark partition at a time, as Arrow IPC. Both turn a failed Spark job into one of our
errors naming the table (:func:`spark_call`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from sparkpipes.errors import (
    SchemaMismatchError,
    SinkError,
    SparkpipesError,
    lost_executor_data,
)
from sparkpipes.sinks.parquet import ADD_FILE_SCHEMA, AddFile, ParquetWriter


def write_frame(df, writer: ParquetWriter, prefix: str, table: str) -> list[AddFile]:
    """Write a DataFrame's rows with ``writer`` from the executors (one file per Spark
    partition with rows); return the add-actions, uncommitted. If the job fails, the
    files its tasks wrote (named with a prefix unique to this call) are removed."""
    prefix = f"{prefix}{uuid.uuid4().hex[:8]}"

    df, names = _passable(df)

    def write(batches: Iterator[pa.RecordBatch]):
        tables = [pa.Table.from_batches([_named(b, names)]) for b in batches if b.num_rows]
        if not tables:
            return
        f = writer.write(pa.concat_tables(tables), prefix)
        yield pa.RecordBatch.from_pylist([f.to_dict()])

    try:
        rows = spark_call(lambda: df.mapInArrow(write, ADD_FILE_SCHEMA).collect(), table)
    except SparkpipesError:
        try:
            writer.remove(prefix=prefix)
        except OSError:
            pass  # left behind, unreferenced: harmless but for the space
        raise
    return [AddFile(**r.asDict()) for r in rows]


def stream_frame(df, schema: pa.Schema, table: str) -> Iterator[pa.RecordBatch]:
    """A DataFrame's rows as Arrow batches, fetched one Spark partition at a time: each
    partition travels as one Arrow IPC stream, never as Python row objects."""
    df, names = _passable(df)

    def to_ipc(batches: Iterator[pa.RecordBatch]):
        buf = pa.BufferOutputStream()
        with pa.ipc.new_stream(buf, schema) as out:
            for b in batches:
                if b.num_rows:
                    out.write_batch(_named(b, names).cast(schema))
        yield pa.RecordBatch.from_arrays([pa.array([buf.getvalue().to_pybytes()])], ["ipc"])

    chunks = iter(df.mapInArrow(to_ipc, "ipc binary").toLocalIterator(prefetchPartitions=True))
    while True:
        row = spark_call(lambda: next(chunks, None), table)
        if row is None:
            return
        yield from pa.ipc.open_stream(row["ipc"])


def _passable(df) -> tuple[Any, list[str] | None]:
    """``df`` with columns PySpark's ``mapInArrow`` can hand over — it passes each column
    as ``df[name]``, which reads a dotted name (``group.city``, as Pinot's complexTypeConfig
    names columns) as a path into a struct — and the names its batches get back (None:
    unchanged)."""
    names = df.columns
    if not any("." in n for n in names):
        return df, None
    return df.toDF(*[f"_c{i}" for i in range(len(names))]), names


def _named(batch: pa.RecordBatch, names: list[str] | None) -> pa.RecordBatch:
    return batch if names is None else batch.rename_columns(names)


#: the last line of the trace of one of our errors raised in a Spark task
_OURS = re.compile(r"sparkpipes(?:\.\w+)*\.(\w+Error): (?:\[SP\d+\] )?(.*)")


def spark_call(fn: Callable[[], Any], table: str) -> Any:
    """Run a Spark action; one of our errors raised in its tasks (a full disk while
    writing a data file) comes back as itself, data an executor took with it when it was
    lost (a local checkpoint's block) is a transient error (the batch is computed
    again), any other failure in it (a bad value for a column, a SQL error in ingest-time
    SQL) becomes a SchemaMismatchError naming the table."""
    try:
        return fn()
    except SinkError:
        raise
    except Exception as e:
        lost = lost_executor_data(e)
        if lost is not None:
            raise lost from None
        text = str(e)
        for line in text.splitlines():
            ours = _OURS.fullmatch(line.strip())
            if ours and ours[1] != "SparkpipesError":
                raise SparkpipesError.from_dict({"type": ours[1], "message": ours[2]}) from None
            if "SparkpipesError" in line or "SchemaMismatchError" in line:
                raise SchemaMismatchError(line.split(":", 1)[-1].strip()) from None
        first = text.strip().splitlines()[0] if text.strip() else type(e).__name__
        raise SchemaMismatchError(f"writing to table '{table}' failed: {first}") from None

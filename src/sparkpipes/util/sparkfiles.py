"""Parquet files as a Spark DataFrame, wherever they are.

Local files (and ``file://``) are read by Spark's own Parquet reader. Files on an object
store (``s3://``, ``az://``/``abfs://``, ``gs://``) are read through a Python data source
(``sparkpipes_files``, PySpark's DataSource API) whose tasks open them with ``pyarrow.fs``
and hand Spark Arrow record batches: Spark's JVM would need the Hadoop connectors
(``hadoop-aws`` …), which the pyspark wheel does not ship, while pyarrow reads the stores
with the same credentials as delta-rs (the ``AWS_*`` / ``AZURE_*`` environment of each
process, executors included). Files are spread over tasks, a few per task.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

REMOTE = ("s3://", "s3a://", "gs://", "az://", "abfs://", "abfss://")
FILES_PER_TASK = 4
_registered: set[int] = set()


def remote(path: str) -> bool:
    return path.startswith(REMOTE)


def read_parquet(spark: Any, schema: Any, paths: Sequence[str]) -> Any:
    """The rows of ``paths`` (Parquet) with ``schema`` (a Spark StructType)."""
    if not paths:
        return spark.createDataFrame([], schema)
    if not any(remote(p) for p in paths):
        return spark.read.schema(schema).parquet(*paths)
    _register(spark)
    return (
        spark.read.format("sparkpipes_files")
        .schema(schema)
        .option("paths", json.dumps(list(paths)))
        .load()
    )


def _register(spark: Any) -> None:
    key = id(spark.sparkContext)
    if key not in _registered:
        spark.dataSource.register(_source_class())
        _registered.add(key)


def _source_class() -> type:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FilesPartition(InputPartition):
        def __init__(self, paths: list[str]) -> None:
            super().__init__(paths)
            self.paths = paths

    class FilesReader(DataSourceReader):
        def __init__(self, paths: list[str], schema: Any) -> None:
            self.paths = paths
            self.schema = schema

        def partitions(self) -> list[FilesPartition]:
            step = FILES_PER_TASK
            return [
                FilesPartition(self.paths[i : i + step]) for i in range(0, len(self.paths), step)
            ]

        def read(self, partition: FilesPartition) -> Iterator[Any]:
            return read_batches(partition.paths, [f.name for f in self.schema.fields])

    class FilesSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "sparkpipes_files"

        def schema(self) -> Any:
            raise ValueError("sparkpipes_files needs a schema")

        def reader(self, schema: Any) -> FilesReader:
            return FilesReader(json.loads(self.options["paths"]), schema)

    return FilesSource


def read_batches(paths: Sequence[str], columns: Sequence[str]) -> Iterator[Any]:
    """Record batches of ``columns`` from each file (executor side)."""
    import pyarrow.parquet as pq
    from pyarrow import fs

    for path in paths:
        filesystem, where = fs.FileSystem.from_uri(path)
        with filesystem.open_input_file(where) as f:
            parquet = pq.ParquetFile(f)
            names = set(parquet.schema_arrow.names)
            wanted = [c for c in columns if c in names]
            for batch in parquet.iter_batches(columns=wanted):
                if len(wanted) < len(columns):  # a column added after the file was written
                    import pyarrow as pa

                    arrays = {n: batch.column(n) for n in wanted}
                    batch = pa.RecordBatch.from_arrays(
                        [arrays.get(c, pa.nulls(batch.num_rows)) for c in columns], columns
                    )
                yield batch

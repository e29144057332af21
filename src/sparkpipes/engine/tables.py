"""Tables: DDL, INSERT, and reading a table's current snapshot (Spark or Arrow).

A table is a Delta table under ``<warehouse>/tables/<name>`` plus its catalog record
(Arrow schema, Spark DDL, SingleStore keys, computed columns). Pipelines that load a
table are re-assembled when its columns change.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import TableRecord
from sparkpipes.config import check_name
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.engine.transform import Transform, apply
from sparkpipes.errors import ConfigError, NotFoundError, PipelineStateError
from sparkpipes.sinks import DeltaSink
from sparkpipes.sinks.delta import write_frame


class Tables:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def names(self) -> list[str]:
        return [t.name for t in self.rt.catalog.tables()]

    def sink(self, rec: TableRecord) -> DeltaSink:
        return DeltaSink(rec.location, rec.schema, rec.name)

    def create(
        self,
        name: str,
        schema: Any,
        *,
        keys: Sequence[Mapping[str, Any]] = (),
        computed: Mapping[str, str] | None = None,
        if_not_exists: bool = False,
        declared: Mapping[str, str] | None = None,
        not_null: Sequence[str] = (),
    ) -> None:
        check_name(name, "table name")
        if if_not_exists and name in self.names():
            return
        if isinstance(schema, str):
            self.rt.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(schema)
        for col in computed or {}:
            if col not in arrow.names:
                raise ConfigError(f"computed column '{col}' is not a column of table '{name}'")
        for col, expr in (computed or {}).items():
            self._check_computed(name, arrow, col, expr)
        location = os.path.join(self.rt.tables_dir, name)
        sink = DeltaSink(location, arrow, name)
        if sink.exists():
            raise ConfigError(f"a Delta table already exists at {location}; drop it first")
        options = {"keys": [dict(k) for k in keys], "computed": dict(computed or {})}
        if declared:
            options["declared"] = dict(declared)
        unknown = [c for c in not_null if c not in arrow.names]
        if unknown:
            raise ConfigError(f"NOT NULL names unknown column(s) {', '.join(unknown)}")
        if not_null:
            options["not_null"] = list(not_null)
        self.rt.catalog.create_table(name, location, ddl, arrow, options)
        try:
            sink.create()
        except Exception:  # any failure creating it: the catalog row must not stay
            self.rt.catalog.drop_table(name)
            raise

    def drop(self, name: str, *, if_exists: bool = False) -> None:
        users = [p.name for p in self.rt.catalog.pipelines() if p.table == name]
        if users:
            raise PipelineStateError(
                f"table '{name}' is loaded by pipeline(s) {', '.join(users)}; drop them first"
            )
        try:
            rec = self.rt.catalog.table(name)
        except NotFoundError:
            if if_exists:
                return
            raise
        self.rt.catalog.drop_table(name)
        shutil.rmtree(rec.location, ignore_errors=True)

    def add_column(
        self,
        table: str,
        column: str,
        type_ddl: str,
        computed: str | None = None,
        *,
        declared: str | None = None,
    ) -> None:
        """Add a column (NULL in existing rows; a computed column is computed for rows
        loaded from now on)."""
        from deltalake import DeltaTable
        from deltalake.schema import Field

        rec = self.rt.catalog.table(table)
        if column in rec.schema.names:
            raise ConfigError(f"table '{table}' already has a column '{column}'")
        self.rt.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(f"`{column}` {type_ddl}")
        if computed:
            self._check_computed(table, rec.schema.append(arrow.field(0)), column, computed)
        DeltaTable(rec.location).alter.add_columns([Field.from_arrow(arrow.field(0))])
        options = dict(rec.options)
        if computed:
            options["computed"] = {**rec.computed, column: computed}
        if declared:
            options["declared"] = {**options.get("declared", {}), column: declared}
        self.rt.catalog.update_table(
            table,
            schema=rec.schema.append(arrow.field(0)),
            ddl=f"{rec.ddl}, {ddl}",
            options=options,
        )
        for p in self.rt.catalog.pipelines():
            if p.table == table:
                with self.rt.lock(p.name):
                    self.rt.forget(p.name)

    def _check_computed(self, table: str, schema: pa.Schema, column: str, expr: str) -> None:
        """A computed column's expression must resolve now, not fail every later load."""
        empty = self.rt.spark.createDataFrame([], to_spark(schema))
        try:
            apply(empty, Transform(computed=((column, expr),)), schema)
        except ConfigError as e:
            detail = e.message.split(": ", 1)[-1]
            raise ConfigError(
                f"computed column '{column}' of table '{table}' is invalid: {detail}"
            ) from None

    def add_key(self, table: str, key: Mapping[str, Any]) -> None:
        """Record a key / index (SingleStore-style) on the table; Delta enforces none."""
        rec = self.rt.catalog.table(table)
        missing = [c for c in key.get("columns", ()) if c not in rec.schema.names]
        if missing:
            raise ConfigError(f"table '{table}' has no column(s) {', '.join(missing)}")
        options = dict(rec.options)
        options["keys"] = [*options.get("keys", []), dict(key)]
        self.rt.catalog.update_table(table, options=options)

    def insert(self, table: str, df) -> int:
        """Append a DataFrame's rows (columns by name; computed columns are computed) in
        one Delta commit. Returns the number of rows written."""
        rec = self.rt.catalog.table(table)
        sink = self.sink(rec)
        out = apply(df, Transform(computed=tuple(rec.computed.items())), rec.schema)
        if rec.not_null:
            from pyspark.sql import functions as F

            cond = F.lit(False)
            for c in rec.not_null:
                cond = cond | F.col(f"`{c}`").isNull()
            bad = out.where(cond).limit(1).collect()
            if bad:
                null = [c for c in rec.not_null if bad[0][c] is None]
                raise ConfigError(
                    f"column '{null[0]}' of table '{table}' is NOT NULL; the row has no value"
                )
        files = write_frame(out, sink.table_writer(), "part-insert", rec.name)
        if files:
            sink.commit_files(files, operation="INSERT")
        return sum(f.num_records for f in files)

    def frame(self, name: str):
        """The table's current snapshot as a Spark DataFrame."""
        rec = self.rt.catalog.table(name)
        files = self.sink(rec).file_uris()
        schema = to_spark(rec.schema)
        if not files:
            return self.rt.spark.createDataFrame([], schema)
        return self.rt.spark.read.schema(schema).parquet(*files)

    def arrow(self, name: str):
        """The table's current snapshot as an Arrow table (no Spark needed)."""
        from deltalake import DeltaTable

        return DeltaTable(self.rt.catalog.table(name).location).to_pyarrow_table()

    def sql(self, query: str):
        """Spark SQL with every table registered as a view of its current snapshot."""
        for t in self.names():
            self.frame(t).createOrReplaceTempView(t)
        return self.rt.spark.sql(query)

"""Tables: DDL, INSERT, and reading a table's current snapshot (Spark or Arrow).

A table is a Delta table under ``<warehouse>/tables/<name>`` plus its catalog record
(Arrow schema, Spark DDL, SingleStore keys, computed columns). Pipelines that load a
table are re-assembled when its columns change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import TableRecord
from sparkpipes.config import PipelineSpec, check_name
from sparkpipes.engine.assembly import PROVENANCE, load_schema, validate
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.engine.transform import REJECT_COLUMN, Transform, apply, checked_cast
from sparkpipes.errors import ConfigError, NotFoundError, PipelineStateError
from sparkpipes.sinks import DeltaSink
from sparkpipes.sinks.delta import write_frame

log = logging.getLogger("sparkpipes.tables")


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
        """Add a column: NULL in existing rows, or, for a computed column, computed for
        them too, in one commit that rewrites the table's rows (a value the column's
        type cannot hold is NULL, as for a row loaded later with SKIP PARSER ERRORS) and
        for rows loaded from now on."""
        from deltalake import DeltaTable
        from deltalake.schema import Field

        rec = self.rt.catalog.table(table)
        if column in rec.schema.names:
            raise ConfigError(f"table '{table}' already has a column '{column}'")
        self.rt.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(f"`{column}` {type_ddl}")
        if computed:
            self._check_computed(table, rec.schema.append(arrow.field(0)), column, computed)
        options = dict(rec.options)
        if computed:
            options["computed"] = {**rec.computed, column: computed}
        if declared:
            options["declared"] = {**options.get("declared", {}), column: declared}
        if computed and DeltaTable(rec.location).file_uris():
            after = dataclasses.replace(
                rec, schema=rec.schema.append(arrow.field(0)), options=options
            )
            fill = Transform(computed=((column, computed),))

            def change(rows):
                log.info(
                    "ALTER TABLE %s ADD COLUMN %s: computing it for existing rows", table, column
                )
                return apply(rows, fill, after.schema, check=True).drop(REJECT_COLUMN)

            self._rewrite(rec, after, change, "ADD COLUMN")
            return
        DeltaTable(rec.location).alter.add_columns([Field.from_arrow(arrow.field(0))])
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

    def drop_column(self, table: str, column: str) -> None:
        """``ALTER TABLE … DROP COLUMN``: the table's current rows rewritten without the
        column in one Delta commit that keeps the log, and with it every pipeline's
        committed offsets (see :meth:`_rewrite`). A computed column can be dropped.

        Refused, naming what is in the way: the table's only column, a column of a key,
        one another computed column uses, and one a pipeline into the table loads (field
        mapping, SET, CSV fields by position) or needs (WHERE, SET expressions)."""
        rec = self.rt.catalog.table(table)
        self._column_of(rec, column)
        refuse = f"cannot drop column '{column}' of table '{table}'"
        if len(rec.schema) == 1:
            raise ConfigError(f"{refuse}: it is the table's only column")
        for key in rec.options.get("keys", []):
            if column in key.get("columns", ()):
                raise ConfigError(f"{refuse}: it is in {_key_text(key)}")
        for name, spec in self._loaders(table):
            if column in {m.column for m in spec.format.mapping}:
                how = "in its field mapping"
            elif column in {c for c, _ in spec.transform.assignments}:
                how = "in its SET"
            elif spec.format.kind == "csv" and not spec.format.mapping:
                if column not in load_schema(spec, rec).names:
                    continue
                how = "by position: CSV without a column list"
            else:
                continue
            raise ConfigError(
                f"{refuse}: pipeline '{name}' loads it ({how}); replace or drop the pipeline first"
            )
        options = dict(rec.options)
        for name in ("computed", "declared"):
            options[name] = {c: v for c, v in options.get(name, {}).items() if c != column}
        options["not_null"] = [c for c in options.get("not_null", []) if c != column]
        schema = pa.schema([f for f in rec.schema if f.name != column])
        after = dataclasses.replace(rec, schema=schema, options=options)
        self._check_users(rec, after, refuse, dropped=True)
        self._rewrite(rec, after, lambda df: df.drop(column), f"DROP COLUMN {column}")

    def modify_column(
        self,
        table: str,
        column: str,
        type_ddl: str,
        *,
        declared: str | None = None,
        not_null: bool = False,
    ) -> None:
        """``ALTER TABLE … MODIFY COLUMN``: a column's new type (Spark DDL), declared
        (SingleStore) type and nullability, as in SingleStore the whole definition:
        without ``not_null`` the column takes NULLs again (a primary-key column never does).

        The current rows are converted in one Delta commit that keeps the log and every
        pipeline's committed offsets (see :meth:`_rewrite`); if the type does not change,
        only the catalog does. A value the new type cannot hold, or a NULL under NOT NULL,
        fails the statement naming the column and the value, and nothing changes; so does
        a computed column or a pipeline's SET / WHERE that would no longer resolve. A
        computed column's type and expression cannot be modified (drop it, add it again).
        """
        rec = self.rt.catalog.table(table)
        old = self._column_of(rec, column)
        refuse = f"cannot modify column '{column}' of table '{table}'"
        if column in rec.computed:
            raise ConfigError(
                f"{refuse}: it is a computed column, whose type and expression cannot be "
                "modified; drop it and add it again"
            )
        self.rt.spark  # noqa: B018 - DDL parsing needs a session
        field = to_arrow(f"`{column}` {type_ddl}")[0].field(0)
        primary = {
            c
            for k in rec.options.get("keys", [])
            if k.get("kind") == "PRIMARY"
            for c in k.get("columns", ())
        }
        not_null = not_null or column in primary
        options = dict(rec.options)
        declared_types = {c: v for c, v in options.get("declared", {}).items() if c != column}
        options["declared"] = {**declared_types, column: declared} if declared else declared_types
        nn = [c for c in options.get("not_null", []) if c != column]
        options["not_null"] = [*nn, column] if not_null else nn
        schema = pa.schema([field if f.name == column else f for f in rec.schema])
        after = dataclasses.replace(rec, schema=schema, options=options)
        self._check_users(rec, after, refuse, dropped=False)

        target = to_spark(pa.schema([field])).fields[0].dataType.simpleString()
        quoted = _q(column)
        value, reason = checked_cast(quoted, target, column)
        if not_null:
            lit = column.replace("\\", "\\\\").replace("'", "\\'")
            reason = (
                f"coalesce({reason}, CASE WHEN {quoted} IS NULL THEN 'column ''{lit}'' is NULL "
                "in a row, so it cannot be NOT NULL' END)"
            )

        def check(rows) -> None:
            bad = rows.selectExpr(f"{reason} AS r").where("r IS NOT NULL")
            n, first = bad.selectExpr("count(*)", "first(r)").collect()[0]
            if n:
                more = f" (and {n - 1} more row{'s' * (n > 2)} like it)" if n > 1 else ""
                raise ConfigError(f"{refuse}: {first}{more}")

        def convert(rows):
            return rows.selectExpr(
                *(f"{value} AS {quoted}" if c == column else _q(c) for c in rows.columns)
            )

        same = old.type == field.type  # then no row changes: only the catalog does
        self._rewrite(
            rec,
            after,
            None if same else convert,
            f"MODIFY COLUMN {column}",
            check=None if same and not not_null else check,
        )

    def _column_of(self, rec: TableRecord, column: str) -> pa.Field:
        if column not in rec.schema.names:
            raise ConfigError(
                f"table '{rec.name}' has no column '{column}' (columns: "
                f"{', '.join(rec.schema.names)})"
            )
        return rec.schema.field(column)

    def _loaders(self, table: str) -> list[tuple[str, PipelineSpec]]:
        """The pipelines into ``table``, by name, with their definitions."""
        return [
            (p.name, PipelineSpec.from_json(p.definition))
            for p in self.rt.catalog.pipelines()
            if p.table == table
        ]

    def _check_users(
        self, before: TableRecord, after: TableRecord, refuse: str, *, dropped: bool
    ) -> None:
        """What uses the table and works on ``before`` must work on ``after``: the other
        computed columns' expressions, and each pipeline into it (its definition against
        the table, its SET / WHERE on what it loads), resolved by Spark. Otherwise raise
        ConfigError ``refuse: <who> …``; ``dropped``: the change drops a column, which
        the failing part uses."""
        for other, expr in after.computed.items():
            t = Transform(computed=((other, expr),))
            if self._unresolved(before.schema, t) is not None:
                continue
            why = self._unresolved(after.schema, t)
            if why is not None:
                uses = "uses it" if dropped else f"would fail: {why}"
                raise ConfigError(f"{refuse}: computed column '{other}' {uses}")
        for name, spec in self._loaders(before.name):
            if self._breaks(spec, before) is not None:
                continue
            why = self._breaks(spec, after)
            if why is not None:
                if dropped and why.startswith("would fail in its SET / WHERE"):
                    why = "uses it in its SET / WHERE"
                raise ConfigError(
                    f"{refuse}: pipeline '{name}' {why}; replace or drop the pipeline first"
                )

    def _breaks(self, spec: PipelineSpec, rec: TableRecord) -> str | None:
        """Why pipeline ``spec`` cannot load into ``rec`` (to follow its name), or None."""
        try:
            validate(spec, rec)
        except ConfigError as e:
            return f"could not load the table any more: {e.message}"
        if not spec.transform:
            return None
        load = load_schema(spec, rec)
        extra = [
            pa.field(c, pa.string() if i == 0 else pa.int64())
            for i, c in enumerate(PROVENANCE)
            if c not in load.names
        ]
        t = Transform(spec.transform.assignments, spec.transform.where)
        why = self._unresolved(rec.schema, t, pa.schema([*load, *extra]))
        return None if why is None else f"would fail in its SET / WHERE: {why}"

    def _unresolved(
        self, schema: pa.Schema, transform: Transform, load: pa.Schema | None = None
    ) -> str | None:
        """Why Spark cannot resolve ``transform`` from rows of ``load`` (default: the
        table's own) to rows of ``schema``, or None."""
        spark = self.rt.spark
        empty = spark.createDataFrame([], to_spark(schema if load is None else load))
        try:
            apply(empty, transform, schema)
        except ConfigError as e:
            return e.message.split(": ", 1)[-1]
        return None

    def _rewrite(
        self,
        before: TableRecord,
        after: TableRecord,
        change: Callable[[Any], Any] | None,
        operation: str,
        *,
        check: Callable[[Any], None] | None = None,
    ) -> None:
        """Make ``after`` the table, holding the lock of every pipeline into it (no batch
        runs meanwhile): ``check`` the current rows (it raises to refuse), replace them by
        ``change(rows)`` under the new schema, record ``after`` in the catalog and have
        the pipelines re-assembled for their next batch.

        The rows are replaced by one Delta commit, an overwrite that adds the new files
        and removes the old ones. The log stays, and in it the app transactions and the
        commit info holding each pipeline's offsets (``DeltaSink.committed``): a pipeline
        resumes where it was, loading nothing twice. The commit is refused if anything
        else committed to the table since its rows were read (an INSERT of another
        session, a pipeline run by another process), rather than drop those rows."""
        from deltalake import DeltaTable

        users = [p.name for p in self.rt.catalog.pipelines() if p.table == before.name]
        with contextlib.ExitStack() as held:
            for name in users:
                held.enter_context(self.rt.lock(name))
            snapshot = DeltaTable(before.location)
            spark_schema = to_spark(before.schema)
            files = snapshot.file_uris()
            if files:
                rows = self.rt.spark.read.schema(spark_schema).parquet(*files)
            else:
                rows = self.rt.spark.createDataFrame([], spark_schema)
            if check is not None:
                check(rows)
            if change is not None:
                sink = DeltaSink(before.location, after.schema, before.name)
                added = write_frame(change(rows), sink.table_writer(), "part-alter", before.name)
                try:
                    sink.replace_all(added, operation=operation, version=snapshot.version())
                except Exception:  # the new files stay unreferenced: remove them
                    for f in added:
                        with contextlib.suppress(OSError):
                            os.remove(os.path.join(before.location, f.path))
                    raise
            self.rt.catalog.update_table(
                before.name,
                schema=after.schema,
                ddl=to_arrow(after.schema)[1],
                options=after.options,
            )
            for name in users:
                self.rt.forget(name)

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
        if key.get("kind") == "KEY" and key.get("columns"):
            self._cluster(rec, list(key["columns"]))

    def _cluster(self, rec: TableRecord, columns: list[str]) -> None:
        """``CREATE INDEX``: Delta has no indexes; what speeds reads on the columns is
        Z-ordering the table's files by them (delta-rs ``optimize.z_order``), so that each
        file's min/max statistics cover a narrow range and a filter skips most files.
        One OPTIMIZE commit, made while no batch of a pipeline into the table runs; rows
        loaded later are not re-clustered until the next CREATE INDEX."""
        from deltalake import DeltaTable

        users = [p.name for p in self.rt.catalog.pipelines() if p.table == rec.name]
        with contextlib.ExitStack() as held:
            for name in users:
                held.enter_context(self.rt.lock(name))
            dt = DeltaTable(rec.location)
            if len(dt.file_uris()) > 0:
                metrics = dt.optimize.z_order(columns)
                log.info("CREATE INDEX on %s (%s): %s", rec.name, ", ".join(columns), metrics)

    def insert(self, table: str, df) -> int:
        """Append a DataFrame's rows (columns by name; computed columns are computed) in
        one Delta commit. Returns the number of rows written."""
        rec = self.rt.catalog.table(table)
        sink = self.sink(rec)
        from pyspark.sql import functions as F

        checked = apply(df, Transform(computed=tuple(rec.computed.items())), rec.schema, check=True)
        cond = F.col(REJECT_COLUMN).isNotNull()
        for c in rec.not_null:
            cond = cond | F.col(f"`{c}`").isNull()
        bad = checked.where(cond).limit(1).collect()
        if bad:
            reason = bad[0][REJECT_COLUMN]
            if reason is None:
                null = [c for c in rec.not_null if bad[0][c] is None]
                reason = f"column '{null[0]}' is NOT NULL; the row has no value"
            raise ConfigError(f"cannot insert into table '{table}': {reason}")
        out = checked.drop(REJECT_COLUMN)
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


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _key_text(key: Mapping[str, Any]) -> str:
    """A key of a table's options as a message names it: ``the SHARD KEY``, ``KEY 'ix'``."""
    kind = key.get("kind", "KEY")
    what = "KEY" if kind == "KEY" else f"{kind} KEY"
    if key.get("name"):
        return f"{what} '{key['name']}'"
    return f"the {what}" if kind in ("PRIMARY", "SHARD", "SORT") else f"a {what}"

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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import TableRecord
from sparkpipes.config import PipelineSpec, check_name
from sparkpipes.engine.batch.assembly import PROVENANCE, load_schema, validate
from sparkpipes.engine.batch.transform import REJECT_COLUMN, Transform, apply, checked_cast
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.errors import (
    AlreadyExistsError,
    ConfigError,
    NotFoundError,
    PipelineStateError,
)
from sparkpipes.sinks import DeltaSink
from sparkpipes.sinks.delta.commits import retrying
from sparkpipes.sinks.frames import write_frame
from sparkpipes.sinks.parquet import AddFile
from sparkpipes.util.sparkfiles import read_parquet

log = logging.getLogger("sparkpipes.tables")

#: a rewrite (ALTER TABLE) reads and writes the table in steps of about this many rows (or
#: bytes of data files), one Spark job each, telling its progress after each
REWRITE_STEP_ROWS = 1_000_000
REWRITE_STEP_BYTES = 512 << 20
#: how many times a rewrite takes in what other writers committed meanwhile, then gives up
REWRITE_ATTEMPTS = 8
#: CREATE INDEX: the size of the files it clusters into (None: delta-rs's default, 100 MB)
#: and of their row groups, the unit a Parquet reader skips by statistics
INDEX_FILE_BYTES: int | None = None
INDEX_ROW_GROUP_ROWS = 128 * 1024


@dataclass(frozen=True)
class RewriteProgress:
    """How far a statement that rewrites a table's rows (``ALTER TABLE``) has come, told
    after each step: rows and data files of the table done out of all."""

    table: str
    operation: str
    rows_done: int
    rows_total: int
    files_done: int
    files_total: int

    def __str__(self) -> str:
        pct = 100 * self.rows_done // self.rows_total if self.rows_total else 100
        return (
            f"ALTER TABLE {self.table} {self.operation}: {self.rows_done:,} of "
            f"{self.rows_total:,} rows ({pct}%), {self.files_done} of {self.files_total} files"
        )


Progress = Callable[[RewriteProgress], None]


@dataclass(frozen=True)
class _DataFile:
    path: str  # as the Delta log names it
    uri: str  # as Spark reads it
    rows: int
    size: int


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
        twin = next((t for t in self.names() if t.lower() == name.lower() and t != name), None)
        if twin is not None:  # SQL resolves names without regard to case
            raise AlreadyExistsError(
                f"table '{twin}' exists: a table's name must differ from every other's by "
                f"more than case ('{name}')"
            )
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
            sink.create(table_properties(self.rt.catalog.variables()))
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
        progress: Progress | None = None,
    ) -> None:
        """Add a column: NULL in existing rows; or, for a computed column, computed for
        the existing rows too, with the translation and cast rows loaded later get, by one
        Delta commit that rewrites them (see :meth:`_rewrite`: in steps, told to
        ``progress``; what another writer commits meanwhile is taken in, not lost).

        A value the column's type cannot hold (``PERSISTED INT`` over ``'x9'``) fails
        the statement naming it and how many rows are like it, and nothing changes, as
        such a row fails an ``INSERT`` and is a bad record to a pipeline: the table never
        holds a computed value that is not its expression's."""
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
            target = to_spark(pa.schema([arrow.field(0)])).fields[0].dataType.simpleString()

            def check(rows):
                return apply(rows, fill, after.schema, check=True).select(REJECT_COLUMN)

            def change(rows):
                return apply(rows, fill, after.schema)

            self._rewrite(
                rec,
                after,
                change,
                f"ADD COLUMN {column}",
                check=None if target == "string" else check,  # anything casts to STRING
                refuse=f"cannot add column '{column}' to table '{table}'",
                progress=progress,
            )
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

    def drop_column(self, table: str, column: str, *, progress: Progress | None = None) -> None:
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
        self._rewrite(
            rec, after, lambda df: df.drop(column), f"DROP COLUMN {column}", progress=progress
        )

    def modify_column(
        self,
        table: str,
        column: str,
        type_ddl: str,
        *,
        declared: str | None = None,
        not_null: bool = False,
        progress: Progress | None = None,
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

        def check(rows):
            return rows.selectExpr(f"{reason} AS r")

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
            refuse=refuse,
            progress=progress,
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
        check: Callable[[Any], Any] | None = None,
        refuse: str = "",
        progress: Progress | None = None,
    ) -> None:
        """Make ``after`` the table, holding the lock of every pipeline into it (no batch
        of this process runs meanwhile): ``check`` the current rows, replace them by
        ``change(rows)`` under the new schema, record ``after`` in the catalog and have
        the pipelines re-assembled for their next batch.

        ``check(rows)`` gives one column of reasons a row cannot be changed (NULL: it
        can); a row with one fails the statement, ``refuse: <first reason> (and N more
        rows like it)``, and nothing changes. Without ``change`` only the catalog does.

        The table is read and written in steps of about ``REWRITE_STEP_ROWS`` rows, one
        Spark job each, each logged and told to ``progress``. The rows are then replaced
        by one Delta commit, an overwrite made on top of the snapshot that was read: the
        log stays, and in it the app transactions and the commit info holding each
        pipeline's offsets (``DeltaSink.committed``), so a pipeline resumes where it was.
        If another writer committed in the meantime (a pipeline run by another process, an
        INSERT of another session), the commit is not made; the rewrite reads the new
        snapshot, rewrites only the files it has not rewritten yet (all of a step whose
        files another writer removed) and commits again: nothing committed meanwhile is
        lost or left in the old shape. After ``REWRITE_ATTEMPTS`` such rounds it gives up
        and nothing changes."""
        from deltalake import DeltaTable

        users = [p.name for p in self.rt.catalog.pipelines() if p.table == before.name]
        sink = DeltaSink(before.location, after.schema, before.name)
        done: list[tuple[frozenset[str], list[AddFile]]] = []  # files read -> files written
        with contextlib.ExitStack() as held:
            for name in users:
                held.enter_context(self.rt.lock(name))
            try:

                def round_(attempt: int) -> None:
                    snapshot = DeltaTable(before.location)
                    files = _data_files(snapshot)
                    for step in [d for d in done if not d[0].issubset(files)]:
                        done.remove(step)  # another writer removed some of its files
                        sink.table_writer().remove(step[1])
                    self._rewrite_steps(
                        before, after, files, done, change, operation, check, refuse, progress
                    )
                    if change is not None:
                        written = [f for _, out in done for f in out]
                        sink.replace_all(written, operation=operation, snapshot=snapshot)

                retrying(
                    f"rewriting table '{before.name}'",
                    round_,
                    attempts=REWRITE_ATTEMPTS,
                    pause_s=0.0,
                    gave_up=lambda cause, n: (
                        f"{cause}, {n} times; nothing was changed: stop the pipelines "
                        "loading it in other processes, or try again"
                    ),
                    wrap_failures=False,
                )
            except BaseException:
                for _, out in done:  # never referenced: remove them
                    with contextlib.suppress(OSError):
                        sink.table_writer().remove(out)
                raise
            self.rt.catalog.update_table(
                before.name,
                schema=after.schema,
                ddl=to_arrow(after.schema)[1],
                options=after.options,
            )
            for name in users:
                self.rt.forget(name)

    def _rewrite_steps(
        self,
        before: TableRecord,
        after: TableRecord,
        files: Mapping[str, _DataFile],
        done: list[tuple[frozenset[str], list[AddFile]]],
        change: Callable[[Any], Any] | None,
        operation: str,
        check: Callable[[Any], Any] | None,
        refuse: str,
        progress: Progress | None,
    ) -> None:
        """Check and rewrite the ``files`` no step in ``done`` covers, adding a step each."""
        covered = {p for paths, _ in done for p in paths}
        todo = [f for p, f in files.items() if p not in covered]
        rows_total = sum(f.rows for f in files.values())
        rows_done = sum(files[p].rows for p in covered)
        files_done = len(covered)
        spark_schema = to_spark(before.schema)
        sink = DeltaSink(before.location, after.schema, before.name)
        for step in _steps(todo):
            rows = read_parquet(self.rt.spark, spark_schema, [f.uri for f in step])
            if check is not None:
                bad = check(rows).toDF("r").where("r IS NOT NULL")
                n, first = bad.selectExpr("count(*)", "first(r)").collect()[0]
                if n:
                    seen = rows_done + sum(f.rows for f in step)
                    among = "" if seen >= rows_total else f" among the first {seen:,} rows read"
                    more = f" (and {n - 1} more row{'s' * (n > 2)} like it{among})" if n > 1 else ""
                    raise ConfigError(f"{refuse}: {first}{more}")
            if change is not None:
                out = write_frame(change(rows), sink.table_writer(), "part-alter", before.name)
                done.append((frozenset(f.path for f in step), out))
            rows_done += sum(f.rows for f in step)
            files_done += len(step)
            told = RewriteProgress(
                before.name, operation, rows_done, rows_total, files_done, len(files)
            )
            log.info("%s", told)
            if progress is not None:
                progress(told)

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
        """Record a key (SingleStore-style) on the table; Delta enforces none. An index
        (kind ``KEY``, what ``CREATE INDEX`` makes) also clusters the table's files by
        the columns of all its indexes first (:meth:`cluster`); if that fails, nothing
        is recorded."""
        rec = self.rt.catalog.table(table)
        missing = [c for c in key.get("columns", ()) if c not in rec.schema.names]
        if missing:
            raise ConfigError(f"table '{table}' has no column(s) {', '.join(missing)}")
        keys = rec.options.get("keys", [])
        if key.get("name") and any(k.get("name") == key["name"] for k in keys):
            raise AlreadyExistsError(f"table '{table}' already has an index '{key['name']}'")
        options = dict(rec.options)
        options["keys"] = [*keys, dict(key)]
        if key.get("kind") == "KEY" and key.get("columns"):
            self.cluster(dataclasses.replace(rec, options=options), f"CREATE INDEX {key['name']}")
        self.rt.catalog.update_table(table, options=options)

    def drop_key(self, table: str, name: str) -> None:
        """``DROP INDEX name ON table``: forget an index (``KEY`` or ``UNIQUE KEY``). The
        files stay as they are (no commit); the next clustering leaves its columns out."""
        rec = self.rt.catalog.table(table)
        keys = rec.options.get("keys", [])
        found = [k for k in keys if k.get("name") == name]
        if not found:
            named = [k["name"] for k in keys if k.get("name")]
            have = f" (indexes: {', '.join(named)})" if named else " (it has no named index)"
            raise NotFoundError(f"table '{table}' has no index '{name}'{have}")
        if found[0].get("kind") not in ("KEY", "UNIQUE"):
            raise ConfigError(f"{_key_text(found[0])} of table '{table}' cannot be dropped")
        options = dict(rec.options)
        options["keys"] = [k for k in keys if k.get("name") != name]
        self.rt.catalog.update_table(table, options=options)

    def cluster(self, rec: TableRecord, operation: str = "OPTIMIZE") -> dict[str, Any] | None:
        """Z-order the table's files by the columns of its indexes (``KEY``s, in order):
        Delta has no indexes; what makes a filter on those columns fast is files, and
        row groups within them (``INDEX_ROW_GROUP_ROWS``), each holding a narrow range of
        their values, which a reader skips by their statistics (delta-rs writes them,
        strings included). Returns delta-rs's metrics, or None (no files, no index).

        One delta-rs OPTIMIZE commit, which removes the files it rewrote and adds the
        clustered ones (``dataChange`` false). Pipelines keep loading meanwhile: their
        appends and this commit do not conflict (delta-rs rebases whichever comes
        second); one that does (another writer removed a file being clustered) starts
        again from a fresh snapshot, up to ``COMMIT_ATTEMPTS`` times. Rows loaded later
        are not clustered until the table is clustered again."""
        from deltalake import CommitProperties, DeltaTable, WriterProperties

        columns = list(
            dict.fromkeys(
                c
                for k in rec.options.get("keys", [])
                if k.get("kind") == "KEY"
                for c in k.get("columns", ())
            )
        )
        props = WriterProperties(compression="SNAPPY", max_row_group_size=INDEX_ROW_GROUP_ROWS)
        commit = CommitProperties(custom_metadata={"sparkpipes.op": operation})

        def once(attempt: int) -> dict[str, Any] | None:
            dt = DeltaTable(rec.location)
            if not columns or not dt.file_uris():
                return None
            started = time.monotonic()
            log.info(
                "%s: clustering %d files of table %s by (%s)",
                operation,
                len(dt.file_uris()),
                rec.name,
                ", ".join(columns),
            )
            metrics = dt.optimize.z_order(
                columns,
                target_size=INDEX_FILE_BYTES,
                writer_properties=props,
                commit_properties=commit,
            )
            log.info(
                "%s: table %s clustered, %d files into %d in %.1fs",
                operation,
                rec.name,
                metrics.get("numFilesRemoved", 0),
                metrics.get("numFilesAdded", 0),
                time.monotonic() - started,
            )
            return metrics

        return retrying(f"clustering table '{rec.name}' by ({', '.join(columns)})", once)

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
        return read_parquet(self.rt.spark, to_spark(rec.schema), files)

    def arrow(self, name: str):
        """The table's current snapshot as an Arrow table (no Spark needed)."""
        from deltalake import DeltaTable

        return DeltaTable(self.rt.catalog.table(name).location).to_pyarrow_table()

    def sql(self, query: str):
        """Spark SQL with every table registered as a view of its current snapshot."""
        for t in self.names():
            self.frame(t).createOrReplaceTempView(t)
        return self.rt.spark.sql(query)


def table_properties(stored: Mapping[str, str]) -> dict[str, str]:
    """Delta properties a new table gets from the variables (``table_checkpoint_interval``:
    delta-rs writes a checkpoint every that many commits, so opening the table reads one
    checkpoint and fewer commits than that, however long its log)."""
    from sparkpipes.engine.variables import resolve

    return {
        "delta.checkpointInterval": str(max(1, resolve(dict(stored))["table_checkpoint_interval"]))
    }


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _key_text(key: Mapping[str, Any]) -> str:
    """A key of a table's options as a message names it: ``the SHARD KEY``, ``KEY 'ix'``."""
    kind = key.get("kind", "KEY")
    what = "KEY" if kind == "KEY" else f"{kind} KEY"
    if key.get("name"):
        return f"{what} '{key['name']}'"
    return f"the {what}" if kind in ("PRIMARY", "SHARD", "SORT") else f"a {what}"


def _data_files(snapshot) -> dict[str, _DataFile]:
    """The snapshot's data files by their path in the log, with rows and bytes."""
    actions = pa.table(snapshot.get_add_actions(flatten=True))
    uris = {u.rsplit("/", 1)[-1]: u for u in snapshot.file_uris()}
    out = {}
    for a in actions.select(["path", "num_records", "size_bytes"]).to_pylist():
        path = a["path"]
        uri = uris.get(path.rsplit("/", 1)[-1], os.path.join(snapshot.table_uri, path))
        out[path] = _DataFile(path, uri, a["num_records"] or 0, a["size_bytes"] or 0)
    return out


def _steps(files: Sequence[_DataFile]) -> list[list[_DataFile]]:
    """``files`` in runs of about ``REWRITE_STEP_ROWS`` rows or ``REWRITE_STEP_BYTES``."""
    steps: list[list[_DataFile]] = []
    run: list[_DataFile] = []
    rows = size = 0
    for f in files:
        run.append(f)
        rows, size = rows + f.rows, size + f.size
        if rows >= REWRITE_STEP_ROWS or size >= REWRITE_STEP_BYTES:
            steps.append(run)
            run, rows, size = [], 0, 0
    if run:
        steps.append(run)
    return steps

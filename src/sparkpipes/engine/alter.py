"""ALTER TABLE: adding, dropping and changing columns, online.

A change of a column's type, a dropped column or a new computed one rewrites the table's
rows in steps (one Spark job each, progress told after each) and replaces them by one
Delta commit on top of the snapshot read, so the log, the app transactions and each
pipeline's offsets stay; a commit of another writer meanwhile is taken in
(``commits.retrying``). Pipelines loading the table are checked first (a change that would
break one is refused, naming it) and re-assembled after. :class:`AlterTable` is a part of
``tables.Tables``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import TableRecord
from sparkpipes.config import PipelineSpec
from sparkpipes.engine.batch.assembly import PROVENANCE, load_schema, validate
from sparkpipes.engine.batch.transform import REJECT_COLUMN, Transform, apply, checked_cast
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.errors import (
    ConfigError,
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


class AlterTable:
    """The ALTER TABLE statements of :class:`~sparkpipes.engine.tables.Tables`."""

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

        rec = self.rt.catalog.tables.get(table)
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
        self.rt.catalog.tables.update(
            table,
            schema=rec.schema.append(arrow.field(0)),
            ddl=f"{rec.ddl}, {ddl}",
            options=options,
        )
        for p in self.rt.catalog.pipelines.all():
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
        rec = self.rt.catalog.tables.get(table)
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
        for name in ("computed", "declared", "defaults"):
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
        rec = self.rt.catalog.tables.get(table)
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
        # MODIFY redefines the column: a DEFAULT it had goes, as in MySQL
        options["defaults"] = {c: v for c, v in options.get("defaults", {}).items() if c != column}
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
            for p in self.rt.catalog.pipelines.all()
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
        t = Transform(
            spec.transform.assignments,
            spec.transform.where,
            functions=spec.transform.functions,
            rejects=spec.transform.rejects,
        )
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

        users = [p.name for p in self.rt.catalog.pipelines.all() if p.table == before.name]
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
            self.rt.catalog.tables.update(
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


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _key_text(key: Mapping[str, Any]) -> str:
    """A key of a table's options as a message names it: ``the SHARD KEY``, ``KEY 'ix'``."""
    kind = key.get("kind", "KEY")
    what = "KEY" if kind == "KEY" else f"{kind} KEY"
    if key.get("name"):
        return f"{what} '{key['name']}'"
    return f"the {what}" if kind in ("PRIMARY", "SHARD", "SORT") else f"a {what}"

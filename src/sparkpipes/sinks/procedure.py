"""``INTO PROCEDURE``: a batch's rows bound to the procedure's ``QUERY`` parameter, its body
run on Spark, each written table committed with the pipeline's app transaction.

Exactly once per table, across a crash between the tables' commits:

1. **Stage.** The tasks stage the batch's decoded rows in the pipeline's scratch area.
2. **Run the body** (``finish``). The rows are bound to the parameter as a view; each
   statement's rows become data files of its table (``INSERT``), or staged files kept
   for a MERGE by primary key (``REPLACE``, ``ON DUPLICATE KEY UPDATE``), none of them
   visible yet.
3. **Commit** (``commit``). First a manifest of the batch (per table: its files and
   how it takes them — location, schema, the MERGE's mode, match columns and
   assignments; the end offsets) is written durably under the procedure's directory
   (``procedure_manifest``); then each table, in a fixed order, gets one Delta commit
   with the app transaction ``(app id, batch)`` and the offsets. A table that already
   holds the batch is skipped.
4. **Recover** (``committed``). The batch a pipeline has committed is the one every
   table of its manifest holds. If a crash left some tables holding batch *B* and
   others not, the missing commits are made from *B*'s manifest (its files are still
   there, and the way each table takes them) before anything else: the source is never
   read again for a half-committed batch, because a second read could find more
   records than the first; and a procedure replaced meanwhile does not change how the
   rest of *B* is committed (its staged files fit the way they were made). A table of
   *B* that is missing and no longer the procedure's (replaced, then the table dropped)
   is skipped with a warning, never made again.
5. **Done.** Once every table holds *B*, its manifest is marked done (it keeps *B*'s
   offsets, no table): no later start opens *B*'s tables.

A table with no rows in a batch still gets its commit (without files), so every table
of the procedure moves through the same batches.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkpipes.errors import SparkpipesError, lost_executor_data
from sparkpipes.sinks.base import BatchCommit, Committed, Sink, SinkContext, Staged
from sparkpipes.sinks.delta.keys import no_duplicates
from sparkpipes.sinks.delta.sink import DeltaSink, Upsert
from sparkpipes.sinks.delta.upsert import change_schema
from sparkpipes.sinks.frames import write_frame
from sparkpipes.sinks.parquet import AddFile, ParquetWriter
from sparkpipes.sinks.procedure_manifest import (
    TableCommit,
    manifest_batches,
    mark_done,
    read_manifest,
    write_manifest,
)
from sparkpipes.util.arrow import to_spark_schema
from sparkpipes.util.faults import crash_point
from sparkpipes.util.sparkfiles import read_parquet

log = logging.getLogger("sparkpipes.sinks")


@dataclass(frozen=True)
class TableFiles(Staged):
    """What one batch of the procedure writes to one table: data files of the table
    (``INSERT``) or, with ``stage``, files staged there for a MERGE (``REPLACE``)."""

    table: str
    files: tuple[AddFile, ...]
    stage: str | None = None
    #: for a table the body DELETEs from or UPDATEs: the version its changes were
    #: computed from (not kept in the manifest: a recovery finishes on the table as it is)
    read_version: int | None = None

    @property
    def num_records(self) -> int:  # type: ignore[override]
        return sum(f.num_records for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "files": [f.to_dict() for f in self.files],
            "stage": self.stage,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TableFiles:
        return cls(d["table"], tuple(AddFile(**f) for f in d["files"]), d.get("stage"))


class ProcedureSink(Sink):
    kind = "procedure"

    def __init__(self, ctx: SinkContext) -> None:
        body = ctx.procedure
        self.body = body
        self.spec = body.spec
        self.spark = ctx.spark
        self.batch_schema = ctx.schema
        self.scratch = ctx.scratch
        self.location = ctx.location
        every = [st for _, st in body.everything()]  # its CALLs' statements too
        self.replacing = {s.table for s in every if s.replace}
        #: tables of ON DUPLICATE KEY UPDATE statements that have a primary key (into one
        #: without, every row is inserted)
        self.updating = {s.table for s in every if s.update and body.primary_key(s.table)}
        #: tables of INSERT IGNORE statements that have a primary key
        self.ignoring = {s.table for s in every if s.ignore and body.primary_key(s.table)}
        #: tables of DELETE or UPDATE statements (their INSERTs too): the body's changes
        self.changing = {s.table for s in every if s.change}
        #: tables with a primary key of plain INSERT statements: a duplicate key fails
        self.inserting = {
            s.table
            for s in every
            if _plain(s) and s.table not in self.changing and body.primary_key(s.table)
        }
        self.replacing -= self.changing
        self.updating -= self.changing
        self.ignoring -= self.changing
        self.staging = (
            self.replacing | self.updating | self.ignoring | self.changing | self.inserting
        )
        self.tables = {t: DeltaSink(rec.location, rec.schema, t) for t, rec in body.tables.items()}

    @classmethod
    def for_pipeline(cls, ctx: SinkContext) -> ProcedureSink:
        if ctx.procedure is None:
            raise ValueError("a procedure sink needs the procedure's body")
        return cls(ctx)

    # -- executor side -------------------------------------------------------------------
    def writer(self) -> ParquetWriter:
        return ParquetWriter(self.scratch, self.batch_schema, self.spec.name)

    # -- driver side ---------------------------------------------------------------------
    def _manifests(self, app_id: str) -> str:
        safe = "".join(c if c.isalnum() else "_" for c in app_id)
        return os.path.join(self.location, "_manifests", safe)

    def _stage(self, app_id: str, batch_id: int, table: str) -> str:
        return os.path.join(self._manifests(app_id), f"b{batch_id:08d}", table)

    def finish(self, staged: Sequence[Staged], batch_id: int) -> list[Staged]:
        paths = [os.path.join(self.scratch, f.path) for f in staged if isinstance(f, AddFile)]
        if not paths:  # nothing decoded: the commit (if offsets moved) writes no rows
            return []
        spark = self.spark()
        frame = read_parquet(spark, to_spark_schema(self.batch_schema), paths)
        view = f"__sp_batch_{uuid.uuid4().hex}"
        frame.createOrReplaceTempView(view)
        run = _Run(spark, batch_id, {t: [] for t in self.tables})
        read = {t: self.tables[t].version() for t in self.changing}  # before any is read
        try:
            self._body(self.body, view, run)
            for t, table in run.changed.items():
                run.written[t] += self._write(table.changes(), t, batch_id, run.stages)
            self._no_duplicates(run)
        except BaseException as e:
            self.abort([TableFiles(t, tuple(f), run.stages.get(t)) for t, f in run.written.items()])
            lost = None if isinstance(e, SparkpipesError) else lost_executor_data(e)
            if lost is not None:  # a local checkpoint of the body's rows went with an executor
                raise lost from None
            raise
        finally:
            spark.catalog.dropTempView(view)
        return [
            TableFiles(t, tuple(f), run.stages.get(t), read.get(t)) for t, f in run.written.items()
        ]

    def _body(self, body: Any, view: str, run: _Run, given: Any = None) -> None:
        """Run ``body`` (the pipeline's procedure, or one it CALLs) on the batch bound to
        ``view``, into ``run``; ``given``: a CALL's values of its scalar parameters."""
        spark = run.spark
        kinds = {v.name: v.type for v in body.spec.variables}
        values = body.variables(spark, view, given)

        def query(text: str, statement: Any, tables: dict[str, Any]) -> Any:
            return body.run(spark, text, statement, view, values, tables)

        for statement in body.spec.statements:
            if statement.when is not None and values.get(statement.when) is not True:
                continue  # in a branch of an IF not taken
            if statement.variable is not None:
                values[statement.variable] = body.value(
                    spark,
                    statement.query,
                    kinds[statement.variable],
                    view,
                    values,
                    statement.line,
                    run.views,
                )
                continue
            if statement.call is not None:  # its batch: the query named, as it is now
                callee = body.calls[statement.call]
                args = body.arguments(spark, statement, view, values, run.views)
                rows = query(body.call_query(statement), statement, run.views)
                rows = callee.batch_of(rows, body.spec.name, statement)
                inner = f"__sp_batch_{uuid.uuid4().hex}"
                rows.createOrReplaceTempView(inner)
                try:
                    self._body(callee, inner, run, args)
                finally:
                    spark.catalog.dropTempView(inner)
                continue
            t = statement.table
            if t in self.changing:
                table = run.changed.get(t) or run.changed.setdefault(t, body.changed(t))
                if statement.change == "delete":
                    table.delete(statement, query, run.views)
                elif statement.change == "update":
                    table.update(statement, query, run.views)
                elif statement.replace or statement.ignore or statement.update:
                    rows = body.rows(spark, statement, view, values, run.views)
                    table.upsert(rows, self._upsert(body, statement))
                else:
                    table.insert(body.rows(spark, statement, view, values, run.views))
                run.views[t] = table.view()
                continue
            rows = body.rows(spark, statement, view, values, run.views)
            run.written[t] += self._write(rows, t, run.batch_id, run.stages)

    def _no_duplicates(self, run: _Run) -> None:
        """A key a plain INSERT repeats fails the batch here, before any table commits:
        found in a table's commit, after another table took the batch, it would fail every
        recovery of the batch too. (The commit checks again, against a newer version.)"""
        from deltalake import DeltaTable

        for t in sorted(self.inserting):
            if not run.written.get(t):
                continue
            sink = self.tables[t]
            paths = [os.path.join(run.stages[t], f.path) for f in run.written[t]]
            rows = read_parquet(run.spark, to_spark_schema(sink.schema), paths)
            keys = self.body.primary_key(t)
            no_duplicates(DeltaTable(sink.uri), rows, keys, sink.schema, t)

    def _write(self, rows: Any, t: str, batch_id: int, stages: dict[str, str]) -> list[AddFile]:
        """``rows`` as data files of table ``t``, or staged for its MERGE."""
        writer = self.tables[t].table_writer()
        if t in self.staging:
            stages.setdefault(t, os.path.join(self.scratch, "replace", t))
            writer = ParquetWriter(stages[t], self._staged_schema(t), t)
        return write_frame(rows, writer, f"part-b{batch_id:08d}-p", t)

    def _staged_schema(self, t: str) -> pa.Schema:
        schema = self.tables[t].schema
        return change_schema(schema, self._match(t)) if t in self.changing else schema

    def _match(self, t: str) -> tuple[str, ...]:
        return self.body.primary_key(t) or tuple(self.tables[t].schema.names)

    def commit(self, staged: Sequence[Staged], batch: BatchCommit) -> bool:
        parts = {s.table: s for s in staged if isinstance(s, TableFiles)}
        if not parts:  # offsets moved by hand: every table records the move
            parts = {t: TableFiles(t, ()) for t in self.tables}
        parts = self._durable(parts, batch)
        how = {t: self._how(t) for t in parts}
        doc = self._write_manifest(batch, parts, how)
        fresh = self._commit_tables(batch, parts, how)
        self._done(batch.app_id, doc)
        return fresh

    def _how(self, t: str) -> TableCommit:
        """How table ``t`` takes this procedure's batches (kept in the manifest)."""
        sink = self.tables[t]
        if t not in self.staging:
            return TableCommit(sink.uri, sink.schema)
        return TableCommit(sink.uri, sink.schema, self._staged_schema(t), self._strategy(t))

    def _durable(self, parts: dict[str, TableFiles], batch: BatchCommit) -> dict[str, TableFiles]:
        """REPLACE files move from the scratch area (removed after every attempt) to the
        batch's directory beside its manifest, where a recovery finds them."""
        out = {}
        for t, part in parts.items():
            if part.stage is None:
                out[t] = part
                continue
            target = self._stage(batch.app_id, batch.batch_id, t)
            os.makedirs(target, exist_ok=True)
            for f in part.files:
                shutil.move(os.path.join(part.stage, f.path), os.path.join(target, f.path))
            out[t] = TableFiles(t, part.files, target, part.read_version)
        return out

    def _write_manifest(
        self, batch: BatchCommit, parts: dict[str, TableFiles], how: dict[str, TableCommit]
    ) -> dict[str, Any]:
        doc = {
            "batch": batch.batch_id,
            "pipeline": batch.pipeline,
            "offsets": dict(batch.offsets),
            "extra": dict(batch.extra),
            "tables": [{**parts[t].to_dict(), "commit": how[t].to_dict()} for t in sorted(parts)],
        }
        write_manifest(self._manifests(batch.app_id), doc)
        return doc

    def _done(self, app_id: str, doc: dict[str, Any]) -> None:
        """Every table of ``doc``'s batch holds it: the manifest is marked done, so that no
        recovery opens its tables again (one may be dropped once the procedure no longer
        writes it). Its staged files go with the next batch's commit (``_forget_before``),
        as before: an attempt of the same batch elsewhere may still be reading them."""
        mark_done(self._manifests(app_id), doc)

    def _commit_tables(
        self, batch: BatchCommit, parts: dict[str, TableFiles], how: dict[str, TableCommit]
    ) -> bool:
        """Each table's commit; those of changes computed from a version go first, so
        that when another writer changed the first such table meanwhile, the batch fails
        before any of its tables holds it and computes everything again
        (``StaleChanges``). A conflict on a later one, after a table took the batch, is
        finished by the recovery (:meth:`committed`) on that table as it is then: a body
        that DELETEs from or UPDATEs several tables another writer changes too is safe
        only for the first."""
        fresh = False
        for i, t in enumerate(sorted(parts, key=lambda t: (parts[t].read_version is None, t))):
            if i:
                crash_point("between_procedure_tables")
            part, way = parts[t], how[t]
            sink = self.tables.get(t)
            if sink is None or sink.uri != way.location:  # no longer the procedure's
                sink = DeltaSink(way.location, way.schema, t)
            if part.stage is not None:
                sink = DeltaSink(
                    way.location,
                    way.schema,
                    t,
                    strategy=way.upsert,
                    staged_schema=way.staged_schema,
                    scratch=part.stage,
                    spark=self.spark,
                    read_version=part.read_version,
                )
            fresh = sink.commit(list(part.files), batch) or fresh
        self._forget_before(batch.app_id, batch.batch_id)
        return fresh

    def _strategy(self, table: str) -> Upsert:
        keys = self.body.primary_key(table)
        if table in self.changing:
            return Upsert(self._match(table), "changes")
        if table in self.inserting:
            return Upsert(keys, "insert")
        if table in self.updating:  # the one statement that writes it (check())
            body, s = next((b, s) for b, s in self.body.everything() if s.table == table)
            return Upsert(keys, "update", update=body.updates(table, self.spark(), s))
        return Upsert(keys, "ignore" if table in self.ignoring else "replace")

    def _upsert(self, body: Any, statement: Any) -> Upsert:
        """How a REPLACE, INSERT IGNORE or ON DUPLICATE KEY UPDATE statement (of ``body``)
        meets the rows of a table the body changes."""
        keys = body.primary_key(statement.table)
        if statement.update:
            updates = body.updates(statement.table, self.spark(), statement)
            return Upsert(keys, "update", update=updates)
        return Upsert(keys, "replace" if statement.replace else "ignore")

    def _forget_before(self, app_id: str, batch_id: int) -> None:
        """Manifests and staged files of batches before ``batch_id``: every table holds
        them, no recovery needs them."""
        root = self._manifests(app_id)
        for name in os.listdir(root) if os.path.isdir(root) else ():
            number = name.removeprefix("batch-").removesuffix(".json").removeprefix("b")
            if number.isdigit() and int(number) < batch_id:
                path = os.path.join(root, name)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)

    def committed(self, app_id: str, hint: Committed | None = None) -> Committed | None:
        finished = self._finish(app_id)
        held = [c for c in (s.committed(app_id) for s in self.tables.values()) if c is not None]
        done = max(held, key=lambda c: c.batch_id, default=None)
        if finished is not None and (done is None or finished.batch_id > done.batch_id):
            return finished  # the procedure no longer writes the tables that hold it
        return done

    def _finish(self, app_id: str) -> Committed | None:
        """The last batch a commit was begun for, made whole: if a crash left some tables
        of its manifest holding it and others not, the missing commits are made from the
        manifest, as the batch was staged (its files, and how each table takes them:
        ``procedure_manifest``), before anything else. A batch whose manifest is done is
        not looked for in its tables. A batch no table holds never began its commit (it
        is run again): the one before it is the last committed."""
        root = self._manifests(app_id)
        for top in manifest_batches(root):
            doc = read_manifest(root, top)
            if doc is None:
                continue
            if doc.get("done"):
                return Committed(top, dict(doc["offsets"]))
            parts, how = {}, {}
            for p in doc["tables"]:
                t = p["table"]
                if "commit" in p:
                    how[t] = TableCommit.from_dict(p["commit"])
                elif t in self.tables:  # a manifest of an earlier release: today's way
                    how[t] = self._how(t)
                else:
                    continue
                parts[t] = TableFiles.from_dict(p)
            holds = {t: self._held(app_id, t, how[t], top) for t in parts}
            holds = {t: h for t, h in holds.items() if h is not None}
            if not holds or max(holds.values()) < top:
                continue
            behind = {t: parts[t] for t, h in holds.items() if h < top}
            if behind:  # a crash between the tables' commits: finish the batch
                batch = BatchCommit(
                    app_id, doc["pipeline"], top, doc["offsets"], doc.get("extra", {})
                )
                self._commit_tables(batch, behind, how)
            self._done(app_id, doc)
            return Committed(top, dict(doc["offsets"]))
        return None

    def _held(self, app_id: str, t: str, way: TableCommit, batch_id: int) -> int | None:
        """The last batch of ``app_id`` table ``t`` (where ``way`` says it is) holds; None
        (with a warning) for a table that is missing and no longer the procedure's: it
        was dropped, and batch ``batch_id`` is finished without it, never made again."""
        sink = self.tables.get(t)
        if sink is None or sink.uri != way.location:
            sink = DeltaSink(way.location, way.schema, t)
            if not sink.exists():
                log.warning(
                    "procedure '%s': table '%s' of batch %d is missing at %s and no longer "
                    "written by the procedure; the batch is finished without it",
                    self.spec.name,
                    t,
                    batch_id,
                    way.location,
                )
                return None
        held = sink.committed(app_id)
        return held.batch_id if held is not None else 0

    def discard(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def abort(self, staged: Sequence[Staged]) -> None:
        for part in staged:
            if not isinstance(part, TableFiles) or part.table not in self.tables:
                continue
            sink = self.tables[part.table]
            if part.stage is None:
                sink.table_writer().remove(part.files)
            else:
                shutil.rmtree(part.stage, ignore_errors=True)


@dataclass
class _Run:
    """One batch's run of the body: what it has written (files, or files staged for a
    MERGE, by table), the tables its DELETE / UPDATE statements follow
    (``engine.changes.ChangedTable``) and how later statements read them."""

    spark: Any
    batch_id: int
    written: dict[str, list[AddFile]]
    stages: dict[str, str] = field(default_factory=dict)
    changed: dict[str, Any] = field(default_factory=dict)
    views: dict[str, Any] = field(default_factory=dict)


def _plain(statement: Any) -> bool:
    """A plain ``INSERT`` (no REPLACE, IGNORE, ON DUPLICATE KEY UPDATE, DELETE, UPDATE)."""
    return not (statement.replace or statement.ignore or statement.update or statement.change)

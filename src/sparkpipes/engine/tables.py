"""Tables: DDL, INSERT, and reading a table's current snapshot (Spark or Arrow).

A table is a Delta table under ``<warehouse>/tables/<name>`` plus its catalog record
(Arrow schema, Spark DDL, SingleStore keys, computed columns). Pipelines that load a
table are re-assembled when its columns change.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from typing import Any

from sparkpipes.catalog import TableRecord
from sparkpipes.config import check_name
from sparkpipes.config.procedure import ProcedureStatement
from sparkpipes.config.tables import TableSpec
from sparkpipes.engine.alter import AlterTable, _key_text
from sparkpipes.engine.batch.generated import Generated
from sparkpipes.engine.batch.transform import REJECT_COLUMN, Transform, apply
from sparkpipes.engine.changes import ChangedTable, Run
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.schema import to_arrow, to_spark
from sparkpipes.engine.variables import resolve
from sparkpipes.errors import (
    AlreadyExistsError,
    ConfigError,
    DuplicateKeyError,
    NotFoundError,
    PipelineStateError,
)
from sparkpipes.sinks import DeltaSink
from sparkpipes.sinks.delta.commits import StaleChanges, retrying
from sparkpipes.sinks.delta.keys import no_duplicates
from sparkpipes.sinks.delta.upsert import Upsert, change_schema
from sparkpipes.sinks.frames import write_frame
from sparkpipes.sinks.parquet import ParquetWriter
from sparkpipes.util.sparkfiles import read_parquet

log = logging.getLogger("sparkpipes.tables")

#: CREATE INDEX: the size of the files it clusters into (None: delta-rs's default, 100 MB)
#: and of their row groups, the unit a Parquet reader skips by statistics
INDEX_FILE_BYTES: int | None = None
INDEX_ROW_GROUP_ROWS = 128 * 1024
#: how many times a DELETE or UPDATE is computed, when other writers keep changing its table
CHANGE_ATTEMPTS = 5


class Tables(AlterTable):
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def names(self) -> list[str]:
        """The names of the warehouse's tables."""
        return [t.name for t in self.rt.catalog.tables.all()]

    def sink(self, rec: TableRecord) -> DeltaSink:
        return DeltaSink(rec.location, rec.schema, rec.name)

    def create(self, spec: TableSpec, *, if_not_exists: bool = False) -> None:
        """Create the Delta table of ``spec`` and record it in the catalog; a spec with
        Spark DDL types needs a Spark session (to read them), one of Arrow types does not
        (a computed column does: its expression is checked with Spark)."""
        name = spec.name
        check_name(name, "table name")
        if if_not_exists and name in self.names():
            return
        twin = next((t for t in self.names() if t.lower() == name.lower() and t != name), None)
        if twin is not None:  # SQL resolves names without regard to case
            raise AlreadyExistsError(
                f"table '{twin}' exists: a table's name must differ from every other's by "
                f"more than case ('{name}')"
            )
        schema = spec.schema
        if isinstance(schema, str):
            self.rt.spark  # noqa: B018 - DDL parsing needs a session
        arrow, ddl = to_arrow(schema)
        for col, expr in spec.computed.items():
            self._check_computed(name, arrow, col, expr)
        location = os.path.join(self.rt.tables_dir, name)
        sink = DeltaSink(location, arrow, name)
        if sink.exists():
            raise ConfigError(f"a Delta table already exists at {location}; drop it first")
        options = spec.options()
        self.rt.catalog.tables.create(name, location, ddl, arrow, options)
        try:
            sink.create(table_properties(self.rt.catalog.variables.all()))
        except Exception:  # any failure creating it: the catalog row must not stay
            self.rt.catalog.tables.drop(name)
            raise

    def drop(self, name: str, *, if_exists: bool = False) -> None:
        """Drop the table and its files; refused while a pipeline loads it."""
        users = [p.name for p in self.rt.catalog.pipelines.all() if p.table == name]
        if users:
            raise PipelineStateError(
                f"table '{name}' is loaded by pipeline(s) {', '.join(users)}; drop them first"
            )
        try:
            rec = self.rt.catalog.tables.get(name)
        except NotFoundError:
            if if_exists:
                return
            raise
        self.rt.catalog.tables.drop(name)
        shutil.rmtree(rec.location, ignore_errors=True)

    def add_key(self, table: str, key: Mapping[str, Any]) -> None:
        """Record a key (SingleStore-style) on the table; Delta enforces none. An index
        (kind ``KEY``, what ``CREATE INDEX`` makes) also clusters the table's files by
        the columns of all its indexes first (:meth:`cluster`); if that fails, nothing
        is recorded."""
        rec = self.rt.catalog.tables.get(table)
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
        self.rt.catalog.tables.update(table, options=options)

    def drop_key(self, table: str, name: str) -> None:
        """``DROP INDEX name ON table``: forget an index (``KEY`` or ``UNIQUE KEY``). The
        files stay as they are (no commit); the next clustering leaves its columns out."""
        rec = self.rt.catalog.tables.get(table)
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
        self.rt.catalog.tables.update(table, options=options)

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

    def insert(self, table: str, df, *, ignore: bool = False) -> int:
        """Append a DataFrame's rows (columns by name; computed columns are computed,
        DEFAULTs and ``AUTO_INCREMENT`` values filled) in one Delta commit. Returns the
        number of rows written. Into a table with a PRIMARY KEY, a key the table or
        another of the rows holds fails the whole INSERT (``DuplicateKeyError``, MySQL's
        "Duplicate entry"), nothing of it written; with ``ignore`` (``INSERT IGNORE``)
        such a row is skipped instead, the first of the rows of a key kept."""
        rec = self.rt.catalog.tables.get(table)
        sink = self.sink(rec)
        from pyspark.sql import functions as F

        fill = Transform(
            computed=tuple(rec.computed.items()),
            defaults=tuple(rec.defaults.items()),
            rules=rec.rules,
        )
        checked = apply(df, fill, rec.schema, check=True)
        cond = F.col(REJECT_COLUMN).isNotNull()
        for c in rec.not_null:
            if c not in rec.auto_increment:
                cond = cond | F.col(f"`{c}`").isNull()
        bad = checked.where(cond).limit(1).collect()
        if bad:
            reason = bad[0][REJECT_COLUMN]
            if reason is None:
                null = [c for c in rec.not_null if bad[0][c] is None]
                reason = f"column '{null[0]}' is NOT NULL; the row has no value"
            raise ConfigError(f"cannot insert into table '{table}': {reason}")
        out = checked.drop(REJECT_COLUMN)
        ids = Generated.of(rec, self.rt.catalog.tables.reserve_ids)
        if ids is not None:
            out = ids.fill(out, ())
        keys = list(rec.primary_key)
        if ignore and keys:
            out = _new_keys(out, self.frame(table), keys)
        files = write_frame(out, sink.table_writer(), "part-insert", rec.name)

        def unique(dt) -> None:  # a key the table or another row holds: MySQL's error
            if keys:
                no_duplicates(dt, out, keys, rec.schema, rec.name)

        if files:
            try:
                sink.commit_files(files, operation="INSERT", check=unique)
            except DuplicateKeyError:
                sink.table_writer().remove(files)
                raise
        return sum(f.num_records for f in files)

    def change(self, table: str, statement: ProcedureStatement, run: Run, source: str) -> int:
        """``DELETE`` or ``UPDATE`` (``statement``; ``run`` runs its query, the table's rows
        registered as ``source``) computed on Spark over the current snapshot and applied
        in one MERGE (``engine.changes``) on that snapshot: computed again when another
        writer committed meanwhile (:class:`StaleChanges`), at most
        :data:`CHANGE_ATTEMPTS` times. Returns MySQL's rows affected (each row deleted,
        each row an UPDATE changed)."""
        for attempt in range(1, CHANGE_ATTEMPTS + 1):
            try:
                return self._change(table, statement, run, source)
            except StaleChanges:
                if attempt == CHANGE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _change(self, table: str, statement: ProcedureStatement, run: Run, source: str) -> int:
        rec = self.rt.catalog.tables.get(table)
        version = self.sink(rec).version()  # before the rows are read
        changed = ChangedTable(rec, self.frame(table), ConfigError, source)
        (changed.delete if statement.change == "delete" else changed.update)(statement, run, {})
        staged = change_schema(rec.schema, changed.match)
        scratch = os.path.join(self.rt.warehouse, "_scratch", f"change-{uuid.uuid4().hex}")
        sink = DeltaSink(
            rec.location,
            rec.schema,
            table,
            strategy=Upsert(changed.match, "changes"),
            staged_schema=staged,
            scratch=scratch,
            spark=lambda: self.rt.spark,
            read_version=version,
        )
        try:
            writer = ParquetWriter(scratch, staged, table)
            files = write_frame(changed.changes(), writer, "part-change", table)
            written = sum(f.num_records for f in files)
            # a keyed table's changes are one per row; a keyless one's, one per equal
            # rows: those are counted before the commit, as nothing may fail after it (a
            # statement reported failed would be run again, and applied twice)
            affected = written if changed.keyed or not written else changed.affected()
            if files:
                sink.apply(files)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return affected

    def frame(self, name: str):
        """The table's current snapshot as a Spark DataFrame."""
        rec = self.rt.catalog.tables.get(name)
        files = self.sink(rec).file_uris()
        return read_parquet(self.rt.spark, to_spark(rec.schema), files)

    def arrow(self, name: str):
        """The table's current snapshot as an Arrow table (no Spark needed)."""
        from deltalake import DeltaTable

        return DeltaTable(self.rt.catalog.tables.get(name).location).to_pyarrow_table()

    def sql(self, query: str):
        """Spark SQL with every table registered as a view of its current snapshot."""
        for t in self.names():
            self.frame(t).createOrReplaceTempView(t)
        return self.rt.spark.sql(query)


def table_properties(stored: Mapping[str, str]) -> dict[str, str]:
    """Delta properties a new table gets from the variables (``table_checkpoint_interval``:
    delta-rs writes a checkpoint every that many commits, so opening the table reads one
    checkpoint and fewer commits than that, however long its log)."""
    return {
        "delta.checkpointInterval": str(max(1, resolve(dict(stored))["table_checkpoint_interval"]))
    }


def _new_keys(rows, stored, keys: list[str]):
    """``rows`` less those whose key ``stored`` holds or an earlier row has (MySQL's
    ``INSERT IGNORE``: the first row of a key is kept)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cols = [f"`{k}`" for k in keys]
    first = Window.partitionBy(*cols).orderBy(F.monotonically_increasing_id())
    once = rows.withColumn("__sp_n", F.row_number().over(first)).where("__sp_n = 1").drop("__sp_n")
    return once.join(stored.select(*cols), keys, "left_anti")

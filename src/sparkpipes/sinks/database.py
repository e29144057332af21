"""Tables of PostgreSQL and MySQL-protocol databases (MariaDB, MySQL, SingleStore) and of
SQLite files as a sink: seed 001's destination and Confluent's JDBC sink's, exactly once
through the metadata table.

One batch is one database transaction:

1. **Stage.** The tasks write the batch's rows as Parquet files in the pipeline's
   scratch area (nothing reaches the database from an executor).
2. **Commit.** In one transaction: first the batch's **metadata rows**, one for each
   partition whose offset the batch moves (``id`` = topic-partition-first-last offset,
   ``count`` of rows, ``update_time``; and what a restart needs: the pipeline's app id,
   the batch id, the partition and its end offset). A batch already there breaks the
   primary key: the transaction is rolled back and the commit reports it held (a
   replay after a crash loads nothing twice). Then the rows, as the write mode says
   (``database_load``: insert, upsert, update, with deletes of tombstones). Then
   ``COMMIT``. With ``tolerate`` (``errors.tolerance=all``) rows the database refuses
   (a duplicate key, a value a column does not take) are written again one at a time,
   each in a savepoint, and the ones refused again are reported (:meth:`DatabaseSink
   .rejected`) instead of failing the batch, as Confluent's JDBC sink reports each
   record of a failed write to its errant-record reporter. With ``SKIP DUPLICATE KEY
   ERRORS`` the rows skipped as duplicate keys are found in the transaction and listed
   with their source partition and offset (``database_duplicates``), as the Delta
   sink lists them. What a commit skips is handed to the engine's ``report`` before
   ``COMMIT`` (``BatchCommit.report``): a batch whose commit is final has its list,
   however the process fails after, and a retry replaces an earlier attempt's.
3. **Resume.** :meth:`DatabaseSink.committed` reads the metadata table: each partition's
   end offset from its latest row, and the greatest batch id.

Without a metadata table (``singlestore.metadata.allow=false``) rows are committed
without it and the offsets live only in the catalog, written after the database
commit: a crash between the two loads the batch again (at least once).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sparkpipes.errors import ConfigError, SchemaMismatchError, SinkError, SparkpipesError
from sparkpipes.sinks.base import BatchCommit, Committed, Sink, SinkContext, Staged
from sparkpipes.sinks.database_duplicates import insert_skipping
from sparkpipes.sinks.database_load import (
    MODES,
    OFFSET_COLUMN,
    PARTITION_COLUMN,
    Writes,
    apply,
)
from sparkpipes.sinks.database_tables import (
    DEFAULT_METADATA_TABLE,
    DIALECTS,
    Destination,
    TableKey,
    add_columns,
    create_table,
    dead_letter_table,
    describe,
    metadata_table,
    reflect,
)
from sparkpipes.sinks.parquet import AddFile, ParquetWriter
from sparkpipes.util.faults import crash_point

log = logging.getLogger("sparkpipes.sinks.database")


class _AlreadyThere(Exception):
    """The batch's metadata rows are in the table already."""


@dataclass
class _Held:
    """What the sink knows of its committed offsets (from :meth:`DatabaseSink.committed`)."""

    offsets: dict[str, Any] | None = None
    batch_id: int = 0
    reported: set[str] = field(default_factory=set)


class DatabaseSink(Sink):
    """One pipeline's rows into one table of a database (see the module docstring)."""

    kind = "database"

    def __init__(self, ctx: SinkContext) -> None:
        cfg, creds = dict(ctx.sink_config or {}), dict(ctx.sink_credentials or {})
        self.dest = Destination.of(cfg, creds)
        self.table = ctx.table
        self.schema = ctx.schema
        self.staged_schema = ctx.staged_schema or ctx.schema
        self.scratch = ctx.scratch or ""
        self.topic = str(cfg.get("topic") or ctx.table)
        meta = cfg.get("metadata_table")
        self.metadata = str(meta) if meta else None
        dead = cfg.get("dead_letter_table")
        self.dead_letters = str(dead) if dead else None
        if ctx.refine is not None:
            raise ConfigError(
                f"a pipeline into {self.dest.where()} cannot have SET, WHERE or computed "
                "columns (they run on Spark, before a Delta commit)"
            )
        self.writes = _writes(ctx, cfg, self.dest.where())
        if self.writes.mode != "insert" and not self.writes.keys:
            raise ConfigError(
                f"upserting into table '{self.table}' of {self.dest.where()} needs its primary key"
            )
        marked = self.writes.deletes
        if marked is not None and marked not in self.staged_schema.names:
            raise ConfigError(
                f"deletes into table '{self.table}' of {self.dest.where()} need the key "
                f"the rows are matched on ({', '.join(self.writes.keys) or 'none given'})"
            )
        #: errors.tolerance=all: rows the database refuses are reported, not fatal
        self.tolerate = bool(cfg.get("tolerate"))
        #: SKIP DUPLICATE KEY ERRORS: the rows skipped as duplicates are listed
        self.report = bool(ctx.skipped_duplicates) and self.writes.mode == "ignore"
        if self.report and (marked is not None or self.tolerate):
            raise ConfigError(
                f"SKIP DUPLICATE KEY ERRORS into table '{self.table}' of {self.dest.where()} "
                "is not supported with deletes or errors.tolerance"
            )
        self._rejected: list[dict[str, Any]] = []
        self._engine: Any = None
        self._held = _Held()

    @classmethod
    def for_pipeline(cls, ctx: SinkContext) -> DatabaseSink:
        return cls(ctx)

    def writer(self) -> ParquetWriter:
        return ParquetWriter(self.scratch, self.staged_schema, self.table)

    # -- driver side ------------------------------------------------------------------------
    def _connect(self, doing: str) -> Any:
        if self._engine is None:
            self._engine = self.dest.engine()
        try:
            return self._engine.connect()
        except Exception as e:
            raise self.dest.error(e, doing) from None

    def _qualified(self, conn: Any, name: str) -> str:
        q = conn.dialect.identifier_preparer.quote
        return f"{q(self.dest.schema)}.{q(name)}" if self.dest.schema else q(name)

    def ensure_metadata(self) -> None:
        """Create the metadata and dead-letter tables if missing (once per sink)."""
        if "ensured" in self._held.reported:
            return
        tables = []
        if self.metadata is not None:
            tables.append(metadata_table(self.metadata, self.dest.schema))
        if self.dead_letters is not None:
            tables.append(dead_letter_table(self.dead_letters, self.dest.schema))
        with self._connect("creating the metadata table") as conn:
            for t in tables:
                try:
                    t.create(conn, checkfirst=True)
                    conn.commit()
                except Exception as e:
                    raise self.dest.error(e, f"creating table {t.name}") from None
        self._held.reported.add("ensured")

    def committed(self, app_id: str, hint: Committed | None = None) -> Committed | None:
        if self.metadata is None:  # at least once: the catalog's word is all there is
            self._held.offsets = dict(hint.offsets) if hint else {}
            return hint
        import sqlalchemy as sa

        self.ensure_metadata()
        meta = metadata_table(self.metadata, self.dest.schema)
        query = (
            sa.select(meta.c.batch_id, meta.c.partition_key, meta.c.end_offset)
            .where(meta.c.app_id == app_id)
            .order_by(meta.c.batch_id)
        )
        with self._connect("reading the committed offsets") as conn:
            try:
                rows = conn.execute(query).all()
            except Exception as e:
                raise self.dest.error(e, f"reading table {self.metadata}") from None
        offsets = {r.partition_key: json.loads(r.end_offset) for r in rows if r.partition_key}
        batch = max((r.batch_id for r in rows), default=0)
        self._held.offsets, self._held.batch_id = offsets, batch
        return Committed(batch, offsets) if rows else None

    def commit(self, staged: Sequence[Staged], batch: BatchCommit) -> bool:
        rows = self._read(staged)
        with self._connect(f"committing batch {batch.batch_id}") as conn:
            try:
                with conn.begin():
                    if self.metadata is not None and not self._mark(conn, batch):
                        raise _AlreadyThere
                    rejected = self._write(conn, rows, batch) if rows.num_rows else []
                    errors = [*batch.errors, *rejected]
                    if self.dead_letters is not None and errors:
                        self._dead_letters(conn, batch, errors)
                    if batch.report is not None and self.reports_in_commit:
                        batch.report(rejected)  # before COMMIT: none lost after it
                    crash_point("in_database_transaction")
            except _AlreadyThere:
                return False
            except SparkpipesError:
                raise
            except Exception as e:
                raise self._load_error(e, batch) from None
        self._held.offsets = dict(batch.offsets)
        self._held.batch_id = batch.batch_id
        self._rejected = rejected
        return True

    @property
    def reports_in_commit(self) -> bool:
        """SKIP DUPLICATE KEY ERRORS and ``errors.tolerance=all`` report in the batch's
        transaction, after :meth:`_mark` found the batch not there."""
        return self.report or self.tolerate

    def rejected(self) -> list[dict[str, Any]]:
        """The rows the last commit's database refused and skipped (``tolerate``), as
        rows of the errors store; each reported once."""
        out, self._rejected = self._rejected, []
        return out

    def _write(self, conn: Any, rows: pa.Table, batch: BatchCommit) -> list[dict[str, Any]]:
        """Apply ``rows``; with ``tolerate``, rows the database refuses are written again
        one at a time and those it refuses again are returned as error rows."""
        dialect = self.dest.dialect
        if self.report:  # SKIP DUPLICATE KEY ERRORS
            import sqlalchemy as sa

            keys = sa.table(self.table, *map(sa.column, self.writes.keys), schema=self.dest.schema)
            return insert_skipping(conn, dialect, keys, rows, self.writes, self.table)
        target = self._qualified(conn, self.table)
        if not self.tolerate:
            apply(conn, dialect, target, rows, self.writes)
            return []
        try:
            with conn.begin_nested():
                apply(conn, dialect, target, rows, self.writes)
            return []
        except Exception as e:
            if self.dest.error(e, "").transient:
                raise
        out = []
        for i in range(rows.num_rows):
            one = rows.slice(i, 1)
            try:
                with conn.begin_nested():
                    apply(conn, dialect, target, one, self.writes)
            except Exception as e:
                err = self.dest.error(e, f"loading batch {batch.batch_id} into table {self.table}")
                if err.transient:
                    raise err from None
                out.append(_refused(one, err.message))
        return out

    def _load_error(self, e: BaseException, batch: BatchCommit) -> SinkError:
        err = self.dest.error(e, f"loading batch {batch.batch_id} into table {self.table}")
        if not err.transient:
            return SchemaMismatchError(err.message)
        return err

    def _mark(self, conn: Any, batch: BatchCommit) -> bool:
        """Insert the batch's metadata rows; False if the batch is there already."""
        import sqlalchemy as sa
        from sqlalchemy.exc import IntegrityError

        if self._held.offsets is None:
            self.committed(batch.app_id)
        before = self._held.offsets or {}
        meta = metadata_table(self.metadata or "", self.dest.schema)
        # the table's word, in this transaction, not what this sink last saw: another
        # process may have committed since (offsets set by hand, a connector's reset)
        last = conn.execute(
            sa.select(sa.func.max(meta.c.batch_id)).where(meta.c.app_id == batch.app_id)
        ).scalar()
        if max(self._held.batch_id, last or 0) >= batch.batch_id:
            return False
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        values = [
            {
                "id": f"{self.topic}-{p}-{_text(batch.starts.get(p, before.get(p)))}-{_text(end)}",
                "count": int(batch.rows.get(p, 0)),
                "update_time": now,
                "app_id": batch.app_id,
                "batch_id": batch.batch_id,
                "partition_key": p,
                "end_offset": json.dumps(end),
            }
            for p, end in sorted(batch.offsets.items())
            if p not in before or before[p] != end
        ]
        if not values:  # an idle batch moves nothing; its id still has to be kept
            values = [
                {
                    "id": f"{self.topic}-batch-{batch.batch_id}",
                    "count": 0,
                    "update_time": now,
                    "app_id": batch.app_id,
                    "batch_id": batch.batch_id,
                    "partition_key": "",
                    "end_offset": "null",
                }
            ]
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(meta), values)
        except IntegrityError:
            return False
        return True

    def _dead_letters(
        self, conn: Any, batch: BatchCommit, errors: Sequence[dict[str, Any]] | Any
    ) -> None:
        import sqlalchemy as sa

        self.ensure_metadata()
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        rows = [
            {
                "topic": self.topic,
                "partition_key": str(e.get("partition", "")),
                "record_offset": _text(e.get("offset")),
                "error_code": str(e.get("code", "")),
                "reason": str(e.get("reason", "")),
                "excerpt": e.get("excerpt"),
                "failed_at": now,
                "app_id": batch.app_id,
                "batch_id": batch.batch_id,
            }
            for e in errors
        ]
        conn.execute(sa.insert(dead_letter_table(self.dead_letters or "", self.dest.schema)), rows)

    def _read(self, staged: Sequence[Staged]) -> pa.Table:
        """The staged rows in the order the tasks read them: the table's columns, and
        the delete mark and where each row came from when staged."""
        paths = [os.path.join(self.scratch, s.path) for s in staged if isinstance(s, AddFile)]
        parts = [pq.read_table(p) for p in paths]
        table = pa.concat_tables(parts) if parts else self.staged_schema.empty_table()
        keep = {PARTITION_COLUMN, OFFSET_COLUMN, self.writes.deletes}
        return table.select([c for c in table.column_names if c in self.schema.names or c in keep])

    def abort(self, staged: Sequence[Staged]) -> None:
        for s in staged:
            if isinstance(s, AddFile):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.scratch, s.path))

    def discard(self) -> None:
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def _text(offset: Any) -> str:
    return offset if isinstance(offset, str) else json.dumps(offset)


#: the engine's write strategies → the database sink's write modes (seed 001's)
_STRATEGIES = {"append": "insert", "insert": "insert", "replace": "upsert", "ignore": "ignore"}


def _writes(ctx: SinkContext, cfg: dict[str, Any], where: str) -> Writes:
    """How rows meet the table: the sink's own ``mode`` and ``keys`` (a Kafka Connect
    JDBC sink's ``insert.mode`` and ``pk.fields``) where given, else the pipeline's write
    strategy and the table's primary key."""
    mode = cfg.get("mode")
    if mode is None:
        mode = _STRATEGIES.get(ctx.write)
        if mode is None:
            raise ConfigError(
                f"a pipeline into {where} cannot {ctx.write.upper()} rows: it appends, "
                "replaces or ignores rows of a key"
            )
    elif mode not in MODES:
        raise ConfigError(f"database sink mode must be one of {', '.join(MODES)}, got {mode!r}")
    keys = tuple(str(k) for k in cfg.get("keys") or ()) or tuple(ctx.primary_key)
    return Writes(
        mode=str(mode),
        keys=keys,
        deletes=str(cfg["deletes"]) if cfg.get("deletes") else None,
        timezone=str(cfg["timezone"]) if cfg.get("timezone") else None,
        dates_in_utc=str(cfg.get("date_timezone") or "").upper() == "UTC",
    )


def _refused(row: pa.Table, reason: str) -> dict[str, Any]:
    """A row the database refused as a row of the errors store (where it came from, when
    the tasks staged that)."""
    names = row.column_names
    partition = row.column(PARTITION_COLUMN)[0].as_py() if PARTITION_COLUMN in names else ""
    return {
        "partition": str(partition),
        "offset": row.column(OFFSET_COLUMN)[0].as_py() if OFFSET_COLUMN in names else None,
        "code": SchemaMismatchError.code,
        "kind": SchemaMismatchError.kind,
        "reason": reason,
        "excerpt": None,
    }


__all__ = [
    "DEFAULT_METADATA_TABLE",
    "DIALECTS",
    "DatabaseSink",
    "Destination",
    "TableKey",
    "add_columns",
    "create_table",
    "dead_letter_table",
    "describe",
    "metadata_table",
    "reflect",
]

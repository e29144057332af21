"""Tables of PostgreSQL and MySQL-protocol databases (MariaDB, MySQL, SingleStore) as a
sink: seed 001's destination, exactly once through its metadata table.

One batch is one database transaction:

1. **Stage.** The tasks write the batch's rows as Parquet files in the pipeline's
   scratch area (nothing reaches the database from an executor).
2. **Commit.** In one transaction: first the batch's **metadata rows**, one for each
   partition whose offset the batch moves (``id`` = topic-partition-first-last offset,
   ``count`` of rows, ``update_time``; and what a restart needs: the pipeline's app id,
   the batch id, the partition and its end offset). A batch already there breaks the
   primary key: the transaction is rolled back and the commit reports it held (a
   replay after a crash loads nothing twice). Then the rows: PostgreSQL ``COPY … FROM
   STDIN`` (CSV), MySQL multi-row ``INSERT``; an upsert loads through ``INSERT … ON
   CONFLICT`` / ``ON DUPLICATE KEY UPDATE`` (``INSERT IGNORE`` to keep the old row).
   Then ``COMMIT``.
3. **Resume.** :meth:`DatabaseSink.committed` reads the metadata table: each partition's
   end offset from its latest row, and the greatest batch id.

Without a metadata table (``singlestore.metadata.allow=false``) rows are committed
without it and the offsets live only in the catalog, written after the database
commit: a crash between the two loads the batch again (at least once).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from sparkpipes.config import Secret
from sparkpipes.errors import ConfigError, SchemaMismatchError, SinkError
from sparkpipes.sinks.base import BatchCommit, Committed, Sink, SinkContext, Staged
from sparkpipes.sinks.parquet import AddFile, ParquetWriter
from sparkpipes.util import db as dbutil
from sparkpipes.util.db import classify
from sparkpipes.util.faults import crash_point

log = logging.getLogger("sparkpipes.sinks.database")

DIALECTS = {
    "postgresql": ("postgresql+psycopg2", "psycopg2", 5432, "PostgreSQL"),
    "mysql": ("mysql+pymysql", "pymysql", 3306, "MySQL"),
}
DEFAULT_METADATA_TABLE = "kafka_connect_transaction_metadata"
#: rows per multi-row INSERT statement (MySQL)
INSERT_ROWS = 2_000


@dataclass(frozen=True)
class Destination:
    """A database and where its tables are: picklable, no I/O until :meth:`engine`."""

    dialect: str
    host: str
    port: int
    database: str
    user: str | None = None
    password: Secret | None = None
    schema: str | None = None

    @classmethod
    def of(cls, config: Mapping[str, Any], credentials: Mapping[str, Secret]) -> Destination:
        dialect = str(config.get("dialect", ""))
        if dialect not in DIALECTS:
            raise ConfigError(f"database sink dialect must be one of {', '.join(DIALECTS)}")
        return cls(
            dialect,
            str(config.get("host") or "127.0.0.1"),
            int(config.get("port") or DIALECTS[dialect][2]),
            str(config.get("database") or ""),
            config.get("user"),
            credentials.get("password"),
            config.get("schema"),
        )

    def where(self) -> str:
        return f"{DIALECTS[self.dialect][3]} database '{self.database}' at {self.host}:{self.port}"

    def engine(self) -> Any:
        return dbutil.engine(
            DIALECTS[self.dialect][0],
            host=self.host,
            port=self.port,
            database=self.database,
            user=self.user,
            password=self.password,
        )

    def error(self, e: BaseException, doing: str) -> SinkError:
        """A driver error as a sink error that names the database (never the password).
        Transient only when the server could not be reached or went away."""
        d = classify(e)
        err = SinkError(
            f"{'cannot reach ' if d.down else ''}{self.where()}: {d.text} (while {doing})"
        )
        err.transient = d.down
        return err


@dataclass(frozen=True)
class TableKey:
    """A key of a table the sink creates (``tableKey.<KIND>[.<name>]=cols``)."""

    kind: str  # PRIMARY, UNIQUE, KEY, SHARD, COLUMNSTORE
    columns: tuple[str, ...]
    name: str | None = None


def metadata_table(name: str, schema: str | None = None) -> Any:
    """The metadata table (seed 001's three columns, then the sink's own)."""
    import sqlalchemy as sa

    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("update_time", sa.DateTime, nullable=False),
        sa.Column("app_id", sa.String(64), primary_key=True),
        sa.Column("batch_id", sa.BigInteger, nullable=False),
        sa.Column("partition_key", sa.String(255), nullable=False),
        sa.Column("end_offset", sa.Text, nullable=False),
        schema=schema,
    )


def dead_letter_table(name: str, schema: str | None = None) -> Any:
    """Records a batch skipped (``errors.tolerance=all``), committed with the batch."""
    import sqlalchemy as sa

    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("partition_key", sa.String(255), nullable=False),
        sa.Column("record_offset", sa.String(255), nullable=False),
        sa.Column("error_code", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("excerpt", sa.Text),
        sa.Column("failed_at", sa.DateTime, nullable=False),
        sa.Column("app_id", sa.String(64), nullable=False),
        sa.Column("batch_id", sa.BigInteger, nullable=False),
        schema=schema,
    )


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
        # ``insert``: the database refuses a duplicate key itself, as SingleStore would
        self.write = "append" if ctx.write == "insert" else ctx.write
        self.keys = tuple(ctx.primary_key)
        if ctx.refine is not None:
            raise ConfigError(
                f"a pipeline into {self.dest.where()} cannot have SET, WHERE or computed "
                "columns (they run on Spark, before a Delta commit)"
            )
        if self.write not in ("append", "replace", "ignore"):
            raise ConfigError(
                f"a pipeline into {self.dest.where()} cannot {self.write.upper()} rows: it "
                "appends, replaces or ignores rows of a key"
            )
        if self.write != "append" and not self.keys:
            raise ConfigError(
                f"upserting into table '{self.table}' of {self.dest.where()} needs its primary key"
            )
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
                    if rows.num_rows:
                        self._load(conn, rows)
                    if self.dead_letters is not None and batch.errors:
                        self._dead_letters(conn, batch)
                    crash_point("in_database_transaction")
            except _AlreadyThere:
                return False
            except SinkError:
                raise
            except Exception as e:
                raise self._load_error(e, batch) from None
        self._held.offsets = dict(batch.offsets)
        self._held.batch_id = batch.batch_id
        return True

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
        if self._held.batch_id >= batch.batch_id:
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
        meta = metadata_table(self.metadata or "", self.dest.schema)
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(meta), values)
        except IntegrityError:
            return False
        return True

    def _dead_letters(self, conn: Any, batch: BatchCommit) -> None:
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
            for e in batch.errors
        ]
        conn.execute(sa.insert(dead_letter_table(self.dead_letters or "", self.dest.schema)), rows)

    def _read(self, staged: Sequence[Staged]) -> pa.Table:
        paths = [os.path.join(self.scratch, s.path) for s in staged if isinstance(s, AddFile)]
        parts = [pq.read_table(p) for p in paths]
        table = pa.concat_tables(parts) if parts else self.staged_schema.empty_table()
        if self.write != "append" and table.num_rows:
            table = _last_by_key(table, self.keys)
        return table.select([c for c in self.schema.names if c in table.column_names])

    def _load(self, conn: Any, rows: pa.Table) -> None:
        target = self._qualified(conn, self.table)
        q = conn.dialect.identifier_preparer.quote
        cols = ", ".join(q(c) for c in rows.column_names)
        if self.dest.dialect == "postgresql":
            self._copy(conn, target, cols, rows)
        else:
            self._insert(conn, target, cols, rows)

    def _copy(self, conn: Any, target: str, cols: str, rows: pa.Table) -> None:
        raw = conn.connection.dbapi_connection
        buf = io.BytesIO()
        pcsv.write_csv(
            _csv_ready(rows),
            buf,
            pcsv.WriteOptions(include_header=False, quoting_style="all_valid"),
        )
        buf.seek(0)
        copy = "COPY {} ({}) FROM STDIN WITH (FORMAT csv)"
        with raw.cursor() as cur:
            if self.write == "append":
                cur.copy_expert(copy.format(target, cols), buf)
                return
            cur.execute(
                f"CREATE TEMP TABLE __sp_stage (LIKE {target} INCLUDING DEFAULTS) ON COMMIT DROP"
            )
            cur.copy_expert(copy.format("__sp_stage", cols), buf)
            q = conn.dialect.identifier_preparer.quote
            keys = ", ".join(q(k) for k in self.keys)
            others = [c for c in rows.column_names if c not in self.keys]
            action = (
                "DO NOTHING"
                if self.write == "ignore" or not others
                else "DO UPDATE SET " + ", ".join(f"{q(c)} = EXCLUDED.{q(c)}" for c in others)
            )
            cur.execute(
                f"INSERT INTO {target} ({cols}) SELECT {cols} FROM __sp_stage "
                f"ON CONFLICT ({keys}) {action}"
            )

    def _insert(self, conn: Any, target: str, cols: str, rows: pa.Table) -> None:
        q = conn.dialect.identifier_preparer.quote
        verb = "INSERT IGNORE" if self.write == "ignore" else "INSERT"
        tail = ""
        if self.write == "replace":
            others = [c for c in rows.column_names if c not in self.keys] or list(self.keys)
            tail = " ON DUPLICATE KEY UPDATE " + ", ".join(
                f"{q(c)} = VALUES({q(c)})" for c in others
            )
        marks = ", ".join(["%s"] * rows.num_columns)
        sql = f"{verb} INTO {target} ({cols}) VALUES ({marks}){tail}"
        columns = [_db_values(c) for c in rows.columns]
        raw = conn.connection.dbapi_connection
        with raw.cursor() as cur:
            for start in range(0, rows.num_rows, INSERT_ROWS):
                chunk = list(zip(*(c[start : start + INSERT_ROWS] for c in columns)))
                cur.executemany(sql, chunk)

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


def _last_by_key(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The last row of each key (a later record of a batch wins, as it would later)."""
    idx = pa.array(range(table.num_rows), pa.int64())
    picked = (
        table.select(list(keys))
        .append_column("__i", idx)
        .group_by(list(keys), use_threads=False)
        .aggregate([("__i", "max")])
    )
    last = picked.column("__i_max").combine_chunks()
    return table.take(last.take(pc.sort_indices(last)))


def _csv_ready(rows: pa.Table) -> pa.Table:
    """Columns COPY's CSV reads as the table's: binary as bytea hex, nested as JSON."""
    cols = []
    for col in rows.columns:
        t = col.type
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            col = pa.array(
                [None if v is None else "\\x" + v.hex() for v in col.to_pylist()], pa.string()
            )
        elif pa.types.is_nested(t):
            col = pa.array(
                [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()],
                pa.string(),
            )
        cols.append(col)
    return pa.table(cols, names=rows.column_names)


def _db_values(col: pa.ChunkedArray) -> list[Any]:
    if pa.types.is_nested(col.type):
        return [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()]
    return col.to_pylist()


def reflect(dest: Destination, table: str) -> tuple[pa.Schema, tuple[str, ...], tuple[str, ...]]:
    """A database table's columns as Arrow, its NOT NULL columns and its primary key;
    a SinkError naming the table and database if it is not there."""
    import sqlalchemy as sa
    from sqlalchemy.exc import NoSuchTableError

    engine = dest.engine()
    try:
        with engine.connect() as conn:
            t = sa.Table(table, sa.MetaData(), schema=dest.schema, autoload_with=conn)
    except NoSuchTableError:
        err = SinkError(f"{dest.where()} has no table '{table}'")
        err.transient = False
        raise err from None
    except Exception as e:
        raise dest.error(e, f"reading the columns of table '{table}'") from None
    finally:
        engine.dispose()
    fields = [pa.field(c.name, _arrow_type(c.type), nullable=c.nullable) for c in t.columns]
    not_null = tuple(c.name for c in t.columns if not c.nullable)
    return pa.schema(fields), not_null, tuple(c.name for c in t.primary_key.columns)


def _arrow_type(t: Any) -> pa.DataType:
    import sqlalchemy as sa

    if isinstance(t, sa.Boolean):
        return pa.bool_()
    if isinstance(t, sa.SmallInteger):
        return pa.int16()
    if isinstance(t, sa.BigInteger):
        return pa.int64()
    if isinstance(t, sa.Integer):
        return pa.int32() if type(t).__name__ not in ("TINYINT",) else pa.int8()
    if isinstance(t, sa.Numeric) and not isinstance(t, sa.Float):
        if t.precision and t.scale is not None and t.precision <= 38:
            return pa.decimal128(t.precision, t.scale)
        return pa.float64()
    if isinstance(t, sa.Float):
        return pa.float32() if type(t).__name__ in ("REAL", "FLOAT") else pa.float64()
    if isinstance(t, sa.DateTime):
        return pa.timestamp("us", tz="UTC" if t.timezone else None)
    if isinstance(t, sa.Date):
        return pa.date32()
    if isinstance(t, sa.LargeBinary) or type(t).__name__ in ("BLOB", "VARBINARY", "BINARY"):
        return pa.binary()
    return pa.string()  # text, JSON, UUID, enums: as text


def create_table(
    dest: Destination,
    table: str,
    fields: Sequence[tuple[str, tuple[str, str], bool]],
    keys: Sequence[Any],
) -> list[Any]:
    """``CREATE TABLE`` in the database from (name, (SQLAlchemy type, _), nullable) and
    the connector's keys (``PRIMARY``, ``UNIQUE``, ``KEY``; SingleStore's ``SHARD`` and
    ``COLUMNSTORE`` where the server is SingleStore). Returns the keys left out."""
    import sqlalchemy as sa

    key_cols = {c for k in keys for c in k.columns}
    pk = [c for k in keys if k.kind == "PRIMARY" for c in k.columns]
    cols = []
    for name, (type_name, _), nullable in fields:
        t = getattr(sa, type_name)
        if type_name == "Text" and key_cols and name in key_cols:
            t = sa.String(255)  # MySQL indexes no TEXT without a length
        elif type_name == "DateTime" and dest.dialect == "mysql":
            from sqlalchemy.dialects.mysql import DATETIME

            t = DATETIME(fsp=6)  # MySQL keeps whole seconds by default
        elif type_name == "JSON" and dest.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            t = JSONB
        cols.append(sa.Column(name, t, nullable=nullable and name not in pk, autoincrement=False))
    meta = sa.MetaData()
    t = sa.Table(table, meta, *cols, schema=dest.schema)
    left_out = []
    for k in keys:
        if k.kind == "PRIMARY":
            t.append_constraint(sa.PrimaryKeyConstraint(*k.columns, name=k.name))
        elif k.kind == "UNIQUE":
            t.append_constraint(sa.UniqueConstraint(*k.columns, name=k.name))
        elif k.kind == "KEY":
            sa.Index(k.name or f"ix_{table}_{'_'.join(k.columns)}", *[t.c[c] for c in k.columns])
        else:
            left_out.append(k)
    engine = dest.engine()
    try:
        with engine.begin() as conn:
            meta.create_all(conn)
    except Exception as e:
        raise dest.error(e, f"creating table '{table}'") from None
    finally:
        engine.dispose()
    return left_out

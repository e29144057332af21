"""How a batch's rows meet a database table, inside the batch's transaction: the write
modes of the database sink (:class:`Writes`) and the statements of each dialect.

- ``insert``: every row is inserted (PostgreSQL ``COPY``, MySQL multi-row ``INSERT``,
  SQLite ``INSERT``); a duplicate of a key the table has fails the statement, as a JDBC
  batch of ``INSERT`` fails.
- ``upsert``: the last row of each key wins within the batch (a later record replaces
  an earlier one, as it would in a later batch), then PostgreSQL ``INSERT … ON CONFLICT
  (keys) DO UPDATE``, MySQL ``ON DUPLICATE KEY UPDATE``, SQLite ``INSERT OR REPLACE`` —
  the statements of Confluent's JDBC sink dialects.
- ``update``: ``UPDATE … SET … WHERE keys``: a row of a key the table does not hold
  changes nothing.
- ``ignore``: the first row of each key in the batch, then ``INSERT IGNORE`` / ``ON
  CONFLICT DO NOTHING`` (seed 001's upserts that keep the old row; SingleStore's
  ``IGNORE`` and ``SKIP DUPLICATE KEY ERRORS``, which keep a key's first row). The rows
  ``SKIP DUPLICATE KEY ERRORS`` skips are found and listed by ``database_duplicates``,
  with a statement that tolerates a duplicate key and nothing else (:func:`insert_new`).

With ``deletes`` (a Kafka Connect JDBC sink's ``delete.enabled``) rows marked in that
staged column are tombstones: ``DELETE … WHERE keys``. The batch's outcome is the
records' in order: for ``upsert`` the last record of a key decides (a delete or a
row); for ``update`` a key deleted anywhere in the batch stays deleted (an ``UPDATE``
after a ``DELETE`` finds no row); for ``insert`` runs of rows and of deletes are applied
in record order, so that an insert after the delete of its key succeeds, as Confluent's
``BufferedRecords`` flushes before a row that follows deletes.

Naive timestamps are written as wall-clock time in ``timezone`` (``db.timezone``; UTC by
default), and dates as the day that midnight UTC falls on there unless
``dates_in_utc`` (``date.timezone=UTC``), as Confluent's JDBC sink binds them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

#: the engine's staged provenance columns (``engine.batch.contract``): where a staged row
#: came from, in the order the tasks read them
PARTITION_COLUMN = "__source_partition"
OFFSET_COLUMN = "__source_offset"
#: rows per multi-row INSERT statement (MySQL)
INSERT_ROWS = 2_000
MODES = ("insert", "upsert", "update", "ignore")


@dataclass(frozen=True)
class Writes:
    """How rows meet the table (see the module docstring)."""

    mode: str = "insert"
    keys: tuple[str, ...] = ()
    deletes: str | None = None
    timezone: str | None = None
    dates_in_utc: bool = False

    def columns(self, rows: pa.Table) -> list[str]:
        """The columns of ``rows`` that are the table's (not the delete mark or where a
        row came from)."""
        skip = {PARTITION_COLUMN, OFFSET_COLUMN, self.deletes}
        return [c for c in rows.column_names if c not in skip]


def apply(conn: Any, dialect: str, target: str, rows: pa.Table, writes: Writes) -> None:
    """Write ``rows`` (staged order; with the delete mark if ``writes.deletes``)."""
    if not rows.num_rows:
        return
    rows = zoned(rows, writes)
    if writes.deletes is None:
        _rows(conn, dialect, target, _last(rows, writes), writes)
        return
    gone = pc.fill_null(rows.column(writes.deletes).cast(pa.bool_()), False)
    if writes.mode == "insert":
        for start, stop, deleting in _runs(gone):
            part = rows.slice(start, stop - start)
            if deleting:
                _delete(conn, target, part, writes.keys)
            else:
                _rows(conn, dialect, target, part, writes)
        return
    if writes.mode == "update":  # a key deleted in the batch stays deleted
        deleted = rows.filter(gone)
        dead = set(zip(*(deleted.column(k).to_pylist() for k in writes.keys), strict=True))
        alive = pc.invert(gone)
        if dead:
            keyed = zip(*(rows.column(k).to_pylist() for k in writes.keys), strict=True)
            alive = pa.array([not g and k not in dead for g, k in zip(gone.to_pylist(), keyed)])
        _delete(conn, target, deleted, writes.keys)
        _rows(conn, dialect, target, _last(rows.filter(alive), writes), writes)
        return
    last = last_by_key(rows, writes.keys)
    gone = pc.fill_null(last.column(writes.deletes).cast(pa.bool_()), False)
    _delete(conn, target, last.filter(gone), writes.keys)
    _rows(conn, dialect, target, last.filter(pc.invert(gone)), writes)


def _last(rows: pa.Table, writes: Writes) -> pa.Table:
    """The row of each key the mode keeps: the first for ``ignore`` (a later one is the
    duplicate), the last for the others (a later record wins, as it would later)."""
    if writes.keys and rows.num_rows:
        if writes.mode == "ignore":
            return first_by_key(rows, writes.keys)
        if writes.mode in ("upsert", "update"):
            return last_by_key(rows, writes.keys)
    return rows


def insert_new(conn: Any, dialect: str, target: str, rows: pa.Table, writes: Writes) -> int:
    """``rows`` (one per key, staged values) inserted unless the table holds their key;
    the number the database inserted. Only a duplicate key is tolerated, as SingleStore's
    ``SKIP DUPLICATE KEY ERRORS`` tolerates nothing else: PostgreSQL and SQLite ``ON
    CONFLICT (keys) DO NOTHING``; MySQL a plain ``INSERT``, whose duplicate key raises
    (:func:`duplicate_key`) — ``INSERT IGNORE`` would turn every strict-mode error (NULL
    into NOT NULL, a value too long, a foreign key) into a warning and drop or clip the
    row, and ``ON DUPLICATE KEY UPDATE k = k`` counts a kept row as inserted under the
    ``FOUND_ROWS`` flag SQLAlchemy connects with. Any other failure raises."""
    if not rows.num_rows:
        return 0
    return _rows(conn, dialect, target, zoned(rows, writes), replace(writes, mode="new"))


#: a driver's error for a duplicate key: MySQL ``ER_DUP_ENTRY``, PostgreSQL
#: ``unique_violation``, SQLite ``SQLITE_CONSTRAINT_PRIMARYKEY`` / ``_UNIQUE``
_DUPLICATE_CODES = {"mysql": (1062,), "postgresql": ("23505",), "sqlite": (1555, 2067)}


def duplicate_key(e: BaseException, dialect: str) -> bool:
    """Whether ``e`` (a driver's error, or SQLAlchemy's wrapping of one) is a duplicate
    key and nothing else."""
    orig = getattr(e, "orig", None) or e
    args = getattr(orig, "args", ())
    code = (
        getattr(orig, "pgcode", None)
        or getattr(orig, "sqlite_errorcode", None)
        or (args[0] if args and isinstance(args[0], int) else None)
    )
    return code in _DUPLICATE_CODES.get(dialect, _DUPLICATE_CODES["mysql"])


def _runs(gone: pa.Array) -> list[tuple[int, int, bool]]:
    """``(start, stop, deleting)`` of each run of rows of one kind, in order."""
    flags = gone.to_pylist()
    out, start = [], 0
    for i in range(1, len(flags) + 1):
        if i == len(flags) or flags[i] != flags[start]:
            out.append((start, i, bool(flags[start])))
            start = i
    return out


def _rows(conn: Any, dialect: str, target: str, rows: pa.Table, writes: Writes) -> int:
    """Write ``rows``; how many the database says it wrote (for ``ignore``: inserted)."""
    if not rows.num_rows:
        return 0
    rows = rows.select(writes.columns(rows))
    if writes.mode == "update":
        _update(conn, target, rows, writes.keys)
        return rows.num_rows
    if dialect == "postgresql":
        return _copy(conn, target, rows, writes)
    if dialect == "sqlite":
        return _sqlite(conn, target, rows, writes)
    return _insert(conn, target, rows, writes)


def _quoted(conn: Any, names: Sequence[str]) -> list[str]:
    q = conn.dialect.identifier_preparer.quote
    return [q(n) for n in names]


def _copy(conn: Any, target: str, rows: pa.Table, writes: Writes) -> int:
    """PostgreSQL: ``COPY`` into the table, or into a staging table then ``INSERT …
    SELECT … ON CONFLICT`` for an upsert; the rows written."""
    cols = ", ".join(_quoted(conn, rows.column_names))
    raw = conn.connection.dbapi_connection
    buf = io.BytesIO()
    pcsv.write_csv(
        _csv_ready(rows), buf, pcsv.WriteOptions(include_header=False, quoting_style="all_valid")
    )
    buf.seek(0)
    copy = "COPY {} ({}) FROM STDIN WITH (FORMAT csv)"
    with raw.cursor() as cur:
        if writes.mode == "insert":
            cur.copy_expert(copy.format(target, cols), buf)
            return rows.num_rows
        cur.execute(
            f"CREATE TEMP TABLE __sp_stage (LIKE {target} INCLUDING DEFAULTS) ON COMMIT DROP"
        )
        cur.copy_expert(copy.format("__sp_stage", cols), buf)
        keys = ", ".join(_quoted(conn, writes.keys))
        others = [c for c in rows.column_names if c not in writes.keys]
        action = (
            "DO NOTHING"
            if writes.mode in ("ignore", "new") or not others
            else "DO UPDATE SET " + ", ".join(f"{c} = EXCLUDED.{c}" for c in _quoted(conn, others))
        )
        cur.execute(
            f"INSERT INTO {target} ({cols}) SELECT {cols} FROM __sp_stage "
            f"ON CONFLICT ({keys}) {action}"
        )
        written = cur.rowcount
        cur.execute("DROP TABLE __sp_stage")
        return written


def _insert(conn: Any, target: str, rows: pa.Table, writes: Writes) -> int:
    """MySQL: multi-row ``INSERT`` (``IGNORE``, or ``ON DUPLICATE KEY UPDATE``); the rows
    affected (an ignored row is none)."""
    names = _quoted(conn, rows.column_names)
    verb = "INSERT IGNORE" if writes.mode == "ignore" else "INSERT"  # "new": plain
    tail = ""
    if writes.mode == "upsert":
        others = [c for c in rows.column_names if c not in writes.keys] or list(writes.keys)
        tail = " ON DUPLICATE KEY UPDATE " + ", ".join(
            f"{c} = VALUES({c})" for c in _quoted(conn, others)
        )
    marks = ", ".join(["%s"] * rows.num_columns)
    head = f"{verb} INTO {target} ({', '.join(names)}) VALUES ".replace("%", "%%")
    sql = f"{head}({marks}){tail.replace('%', '%%')}"  # PyMySQL formats the statement
    columns = [db_values(c, "mysql") for c in rows.columns]
    raw = conn.connection.dbapi_connection
    written = 0
    with raw.cursor() as cur:
        for start in range(0, rows.num_rows, INSERT_ROWS):
            chunk = list(zip(*(c[start : start + INSERT_ROWS] for c in columns), strict=True))
            cur.executemany(sql, chunk)
            written += max(cur.rowcount, 0)
    return written


def _sqlite(conn: Any, target: str, rows: pa.Table, writes: Writes) -> int:
    """SQLite: ``INSERT`` (``OR REPLACE`` for an upsert, ``OR IGNORE``), as Confluent's
    SQLite dialect writes them, or ``ON CONFLICT (keys) DO NOTHING`` (``new``: nothing
    but the key is ignored); the rows written."""
    verb = {"upsert": "INSERT OR REPLACE", "ignore": "INSERT OR IGNORE"}.get(writes.mode, "INSERT")
    names = ", ".join(_quoted(conn, rows.column_names))
    marks = ", ".join(["?"] * rows.num_columns)
    tail = ""
    if writes.mode == "new":
        tail = f" ON CONFLICT ({', '.join(_quoted(conn, writes.keys))}) DO NOTHING"
    columns = [db_values(c, "sqlite") for c in rows.columns]
    done = conn.exec_driver_sql(
        f"{verb} INTO {target} ({names}) VALUES ({marks}){tail}", list(zip(*columns, strict=True))
    )
    return max(done.rowcount, 0)


def _update(conn: Any, target: str, rows: pa.Table, keys: Sequence[str]) -> None:
    """``UPDATE … SET`` the other columns ``WHERE`` the keys match, a row at a time (as
    Confluent's prepared statement batch does)."""
    others = [c for c in rows.column_names if c not in keys]
    if not others or not rows.num_rows:
        return
    sets = ", ".join(f"{c} = :v{i}" for i, c in enumerate(_quoted(conn, others)))
    where = " AND ".join(f"{c} = :k{i}" for i, c in enumerate(_quoted(conn, keys)))
    params = _params(conn, rows, others, keys)
    _many(conn, f"UPDATE {target} SET {sets} WHERE {where}", params)


def _delete(conn: Any, target: str, rows: pa.Table, keys: Sequence[str]) -> None:
    """``DELETE … WHERE`` the keys match, for each row."""
    if not rows.num_rows:
        return
    where = " AND ".join(f"{c} = :k{i}" for i, c in enumerate(_quoted(conn, keys)))
    _many(conn, f"DELETE FROM {target} WHERE {where}", _params(conn, rows, (), keys))


def _params(
    conn: Any, rows: pa.Table, values: Sequence[str], keys: Sequence[str]
) -> list[dict[str, Any]]:
    """Each row's ``:v<i>`` (``values``) and ``:k<i>`` (``keys``) parameters."""
    dialect = conn.dialect.name
    cols = {f"v{i}": db_values(rows.column(c), dialect) for i, c in enumerate(values)}
    cols |= {f"k{i}": db_values(rows.column(c), dialect) for i, c in enumerate(keys)}
    return [{k: v[i] for k, v in cols.items()} for i in range(rows.num_rows)]


def _many(conn: Any, sql: str, params: list[dict[str, Any]]) -> None:
    import sqlalchemy as sa

    if params:
        conn.execute(sa.text(sql), params)


def last_by_key(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The last row of each key (a later record of a batch wins, as it would later)."""
    return table.take(_by_key(table, keys, "max"))


def first_by_key(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The first row of each key (the others are its duplicates)."""
    return table.take(first_of_keys(table, keys))


def first_of_keys(table: pa.Table, keys: Sequence[str]) -> pa.Array:
    """The index of each key's first row, in order."""
    return _by_key(table, keys, "min")


def _by_key(table: pa.Table, keys: Sequence[str], pick: str) -> pa.Array:
    idx = pa.array(range(table.num_rows), pa.int64())
    picked = (
        table.select(list(keys))
        .append_column("__i", idx)
        .group_by(list(keys), use_threads=False)
        .aggregate([("__i", pick)])
    )
    chosen = picked.column(f"__i_{pick}").combine_chunks()
    return chosen.take(pc.sort_indices(chosen))


def zoned(rows: pa.Table, writes: Writes) -> pa.Table:
    """Naive timestamps (UTC wall-clock) as wall-clock time in ``writes.timezone``, and
    dates as the day midnight UTC is there (unless ``dates_in_utc``)."""
    zone = writes.timezone
    if not zone or zone.upper() in ("UTC", "Z", "ETC/UTC", "GMT"):
        return rows
    cols = []
    for col in rows.columns:
        t = col.type
        if pa.types.is_timestamp(t) and t.tz is None:
            col = pc.local_timestamp(
                col.cast(pa.timestamp(t.unit, "UTC")).cast(pa.timestamp(t.unit, zone))
            )
        elif pa.types.is_date(t) and not writes.dates_in_utc:
            at = col.cast(pa.date32()).cast(pa.timestamp("s")).cast(pa.timestamp("s", "UTC"))
            col = pc.local_timestamp(at.cast(pa.timestamp("s", zone))).cast(pa.date32()).cast(t)
        cols.append(col)
    return pa.table(cols, names=rows.column_names)


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


def db_values(col: pa.ChunkedArray | pa.Array, dialect: str = "") -> list[Any]:
    """A column's values as the driver binds them: nested values as JSON text; for
    SQLite decimals as text and timestamps as SQLite's text form."""
    if pa.types.is_nested(col.type):
        return [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()]
    values = col.to_pylist()
    if dialect == "sqlite":
        if pa.types.is_decimal(col.type):
            return [None if v is None else str(v) for v in values]
        if pa.types.is_timestamp(col.type):
            return [None if v is None else v.isoformat(sep=" ") for v in values]
        if pa.types.is_date(col.type):
            return [None if v is None else v.isoformat() for v in values]
    return values

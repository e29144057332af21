"""``SKIP DUPLICATE KEY ERRORS`` into a database table (PostgreSQL, MySQL-protocol servers,
SQLite): the batch's rows inserted as SingleStore inserts them — a key's first row in
arrival order, unless the table holds the key — and every row skipped listed with its
source partition and offset (``sinks.duplicates``), inside the batch's transaction.

1. The rows after a key's first in the batch are skipped (*twice in the batch*).
2. The table is asked, in the transaction, which of the remaining keys it holds; those
   rows are skipped (*in the table already*).
3. The others are written under a savepoint with a statement that tolerates a duplicate
   key and nothing else (``database_load.insert_new``: ``ON CONFLICT (keys) DO
   NOTHING``, or MySQL's plain ``INSERT``): a row that fails otherwise (NULL into a NOT
   NULL column, a CHECK, a value too long in strict mode) fails the batch, as it does
   SingleStore's. If the database inserted fewer than were sent, or refused one as a
   duplicate key — it compares keys otherwise than Arrow does (a case-insensitive
   collation, trailing spaces), another writer inserted a key meanwhile, or another
   unique key repeats — the savepoint is rolled back and they are written one at a time,
   each in a savepoint: each one the database does not insert, or refuses as a duplicate
   key, is listed too; any other refusal fails the batch. So every row the statement
   skips is listed, never one that was loaded, and nothing but a duplicate is skipped.

The list is the caller's to report with the batch (``DatabaseSink.rejected``); a batch
that is retried computes it again, so a retry lists what it skipped, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.sinks.database_load import (
    OFFSET_COLUMN,
    PARTITION_COLUMN,
    Writes,
    db_values,
    duplicate_key,
    first_of_keys,
    insert_new,
    zoned,
)
from sparkpipes.sinks.duplicates import MAX_REPORTED, THERE, TWICE, capped, key_text, skipped_row

#: keys asked for per query
KEYS_PER_QUERY = 1_000


def insert_skipping(
    conn: Any,
    dialect: str,
    target: Any,
    rows: pa.Table,
    writes: Writes,
    name: str,
) -> list[dict[str, Any]]:
    """Insert ``rows`` (staged order, with where each came from) into ``target`` (a
    SQLAlchemy table of the key columns, ``name`` its name for messages) skipping
    duplicate keys; the rows skipped, as rows of the errors store."""
    keys = list(writes.keys)
    firsts = first_of_keys(rows, keys).to_pylist()
    first_set = set(firsts)
    why = {i: TWICE for i in range(rows.num_rows) if i not in first_set}
    values = _key_values(zoned(rows.take(firsts), writes), keys, dialect)
    held = _held(conn, target, keys, values)
    fresh = []
    for i, key in zip(firsts, values, strict=True):
        if key in held:
            why[i] = THERE
        else:
            fresh.append(i)
    quoted = _quoted_target(conn, target)
    if not _all_new(conn, dialect, quoted, rows.take(fresh), writes):
        # the database told keys apart otherwise: one at a time, each outcome known
        for i in fresh:
            if not _all_new(conn, dialect, quoted, rows.slice(i, 1), writes):
                why[i] = f"{THERE}, as the database compares keys"
    return _listed(rows, sorted(why), why, keys, name)


def _all_new(conn: Any, dialect: str, target: str, rows: pa.Table, writes: Writes) -> bool:
    """Insert ``rows`` under a savepoint, kept if the database inserted every one of them;
    rolled back, False, if it inserted fewer or refused one as a duplicate key. Any other
    error is raised: the batch fails."""
    savepoint = conn.begin_nested()
    try:
        written = insert_new(conn, dialect, target, rows, writes)
    except Exception as e:
        savepoint.rollback()
        if duplicate_key(e, dialect):
            return False
        raise
    if written == rows.num_rows:
        savepoint.commit()
        return True
    savepoint.rollback()
    return False


def _key_values(rows: pa.Table, keys: Sequence[str], dialect: str) -> list[tuple[Any, ...]]:
    """Each row's key as the driver binds it (timestamps as written: ``zoned``)."""
    columns = [db_values(rows.column(k), dialect) for k in keys]
    return list(zip(*columns, strict=True))


def _held(conn: Any, target: Any, keys: Sequence[str], values: list[tuple[Any, ...]]) -> set:
    """The keys of ``values`` the table holds, read in the caller's transaction."""
    import sqlalchemy as sa

    cols = [target.c[k] for k in keys]
    found: set = set()
    for start in range(0, len(values), KEYS_PER_QUERY):
        chunk = values[start : start + KEYS_PER_QUERY]
        if len(cols) == 1:
            where = cols[0].in_([v[0] for v in chunk])
        else:
            where = sa.tuple_(*cols).in_(chunk)
        found.update(tuple(r) for r in conn.execute(sa.select(*cols).where(where)))
    return found


def _quoted_target(conn: Any, target: Any) -> str:
    q = conn.dialect.identifier_preparer.quote
    return f"{q(target.schema)}.{q(target.name)}" if target.schema else q(target.name)


def _listed(
    rows: pa.Table, order: list[int], why: dict[int, str], keys: Sequence[str], name: str
) -> list[dict[str, Any]]:
    """The skipped rows ``order`` (indices in arrival order) as rows of the errors store,
    at most ``MAX_REPORTED`` one by one."""
    names = rows.column_names
    shown = rows.take(order[: MAX_REPORTED + 1])
    parts = shown.column(PARTITION_COLUMN).to_pylist() if PARTITION_COLUMN in names else None
    offsets = shown.column(OFFSET_COLUMN).to_pylist() if OFFSET_COLUMN in names else None
    key_cols = [shown.column(k).to_pylist() for k in keys]
    out = [
        skipped_row(
            parts[j] if parts is not None else "",
            offsets[j] if offsets is not None else None,
            key_text([c[j] for c in key_cols]),
            why[i],
            name,
        )
        for j, i in enumerate(order[: MAX_REPORTED + 1])
    ]
    return capped(out, len(order), name)

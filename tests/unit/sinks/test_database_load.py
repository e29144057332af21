"""How a batch's rows meet a database table (``sinks.database_load``), on a real SQLite
file: the outcome of a batch with deletes is the records' in order, as Confluent's JDBC
sink's ``BufferedRecords`` (which flushes before a row that follows deletes) leaves it —
for ``upsert`` the last record of a key decides, for ``update`` a deleted key stays
deleted, for ``insert`` an insert after the delete of its key succeeds while two inserts
of one key fail."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
import sqlalchemy as sa

from sparkpipes.sinks.database_load import Writes, apply
from sparkpipes.sinks.database_tables import Destination

MARK = "@__connect_delete"


@pytest.fixture
def db(tmp_path):
    dest = Destination("sqlite", "", 0, str(tmp_path / "t.db"))
    engine = dest.engine()
    with engine.begin() as c:
        c.exec_driver_sql('CREATE TABLE "t" (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)')
        c.exec_driver_sql("INSERT INTO \"t\" VALUES (1, 'old', 7)")
    yield engine
    engine.dispose()


def batch(*records: tuple[int, str | None]) -> pa.Table:
    """Rows in record order; a None value is a tombstone of its key."""
    return pa.table(
        {
            "id": pa.array([i for i, _ in records], pa.int64()),
            "v": pa.array([v or "" for _, v in records], pa.string()),
            MARK: pa.array(["true" if v is None else None for _, v in records], pa.string()),
        }
    )


def run(engine, rows: pa.Table, mode: str) -> list[tuple]:
    with engine.begin() as c:
        apply(c, "sqlite", '"t"', rows, Writes(mode, ("id",), MARK))
    with engine.connect() as c:
        return [tuple(r) for r in c.execute(sa.text('SELECT id, v, n FROM "t" ORDER BY id'))]


def test_upsert_the_last_record_of_a_key_decides(db):
    got = run(db, batch((1, "a"), (2, "b"), (1, None), (2, None), (2, "c"), (3, "d")), "upsert")
    # SQLite's INSERT OR REPLACE (Confluent's SQLite dialect) writes the whole row
    assert got == [(2, "c", None), (3, "d", None)]


def test_update_a_deleted_key_stays_deleted_and_new_keys_are_not_inserted(db):
    assert run(db, batch((1, "a"), (2, "b")), "update") == [(1, "a", 7)]
    assert run(db, batch((1, None), (1, "again")), "update") == []


def test_insert_runs_apply_in_record_order(db):
    assert run(db, batch((1, None), (1, "new"), (2, "b")), "insert") == [
        (1, "new", None),
        (2, "b", None),
    ]
    with pytest.raises(sa.exc.IntegrityError):
        run(db, batch((3, "x"), (3, "y")), "insert")


def test_db_timezone_writes_wall_clock_time_there_and_dates_as_confluent_binds_them(tmp_path):
    """``db.timezone``: a zone-less timestamp is written as that zone's wall-clock time;
    a date is the day midnight UTC falls on there (``date.timezone=DB_TIMEZONE``, the
    default), or itself (``UTC``)."""

    engine = Destination("sqlite", "", 0, str(tmp_path / "z.db")).engine()
    with engine.begin() as c:
        c.exec_driver_sql('CREATE TABLE "z" (ts TEXT, d TEXT)')
    rows = pa.table(
        {
            "ts": pa.array([dt.datetime(2024, 1, 1, 12, 0)], pa.timestamp("us")),
            "d": pa.array([dt.date(2024, 1, 1)], pa.date32()),
        }
    )
    for utc_dates in (False, True):
        with engine.begin() as c:
            apply(
                c,
                "sqlite",
                '"z"',
                rows,
                Writes("insert", timezone="America/New_York", dates_in_utc=utc_dates),
            )
    with engine.connect() as c:
        got = [tuple(r) for r in c.execute(sa.text('SELECT ts, d FROM "z"'))]
    engine.dispose()
    assert got == [
        ("2024-01-01 07:00:00", "2023-12-31"),
        ("2024-01-01 07:00:00", "2024-01-01"),
    ]

"""``SKIP DUPLICATE KEY ERRORS`` into a database table (``sinks.database_duplicates``), on
a real SQLite file: a key's first row in arrival order is inserted unless the table holds
the key; every row skipped is listed with its partition and offset and why, once; a key
the database compares otherwise than Arrow (a ``NOCASE`` collation) is still listed, never
loaded twice or dropped unlisted. ``IGNORE`` (no listing) keeps a key's first row too."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlalchemy as sa

from sparkpipes.sinks.database_duplicates import insert_skipping
from sparkpipes.sinks.database_load import OFFSET_COLUMN, PARTITION_COLUMN, Writes, apply
from sparkpipes.sinks.database_tables import Destination
from sparkpipes.sinks.duplicates import MAX_REPORTED


@pytest.fixture
def db(tmp_path):
    engine = Destination("sqlite", "", 0, str(tmp_path / "t.db")).engine()
    with engine.begin() as c:
        c.exec_driver_sql('CREATE TABLE "t" (id TEXT COLLATE NOCASE PRIMARY KEY, v TEXT)')
        c.exec_driver_sql("INSERT INTO \"t\" VALUES ('1', 'old'), ('A', 'old')")
    yield engine
    engine.dispose()


def batch(*rows: tuple[str, str]) -> pa.Table:
    return pa.table(
        {
            "id": [i for i, _ in rows],
            "v": [v for _, v in rows],
            PARTITION_COLUMN: ["f.json"] * len(rows),
            OFFSET_COLUMN: pa.array([10 * n for n in range(len(rows))], pa.int64()),
        }
    )


def skip(engine, rows: pa.Table) -> tuple[list[dict], list[tuple]]:
    with engine.begin() as c:
        target = sa.table("t", sa.column("id"))
        listed = insert_skipping(c, "sqlite", target, rows, Writes("ignore", ("id",)), "t")
    with engine.connect() as c:
        stored = [tuple(r) for r in c.execute(sa.text('SELECT id, v FROM "t" ORDER BY id'))]
    return listed, stored


def test_skipped_rows_are_listed_with_where_they_came_from_and_why(db):
    listed, stored = skip(db, batch(("1", "a"), ("2", "b"), ("2", "c"), ("3", "d")))
    assert stored == [("1", "old"), ("2", "b"), ("3", "d"), ("A", "old")]
    assert [(e["partition"], e["offset"]) for e in listed] == [("f.json", 0), ("f.json", 20)]
    assert (
        "Duplicate entry '1' for key 'PRIMARY' of table 't' (in the table already)"
        in (listed[0]["reason"])
    )
    assert "(twice in the batch)" in listed[1]["reason"]
    assert all(e["code"] == "SP403" and "SKIP DUPLICATE KEY ERRORS" in e["reason"] for e in listed)


def test_keys_the_database_compares_otherwise_are_listed_not_dropped(db):
    """``a`` is ``A`` to a NOCASE column and ``B``/``b`` one key: Arrow tells them apart,
    the database does not; each row the database does not insert is listed."""
    listed, stored = skip(db, batch(("a", "x"), ("B", "y"), ("b", "z"), ("c", "w")))
    assert stored == [("1", "old"), ("A", "old"), ("B", "y"), ("c", "w")]
    assert [e["offset"] for e in listed] == [0, 20]
    assert all("as the database compares keys" in e["reason"] for e in listed)


def test_a_batch_of_many_duplicates_lists_the_first_ones_and_counts_the_rest(db):
    n = MAX_REPORTED + 5
    listed, stored = skip(db, batch(*[("9", f"v{i}") for i in range(n)]))
    assert stored[-1] == ("A", "old") and ("9", "v0") in stored
    assert len(listed) == MAX_REPORTED + 1
    assert listed[-1]["reason"].startswith(f"{n - 1 - MAX_REPORTED} more rows were skipped")


def test_ignore_keeps_the_first_row_of_a_key(db):
    with db.begin() as c:
        apply(c, "sqlite", '"t"', batch(("5", "first"), ("5", "second")), Writes("ignore", ("id",)))
    with db.connect() as c:
        assert c.execute(sa.text("SELECT v FROM \"t\" WHERE id = '5'")).scalar() == "first"


@pytest.fixture
def strict(tmp_path):
    """A table whose rows can fail otherwise than by their key."""
    engine = Destination("sqlite", "", 0, str(tmp_path / "s.db")).engine()
    with engine.begin() as c:
        c.exec_driver_sql(
            'CREATE TABLE "t" (id TEXT PRIMARY KEY, v TEXT NOT NULL CHECK (length(v) < 5))'
        )
        c.exec_driver_sql("INSERT INTO \"t\" VALUES ('1', 'old')")
    yield engine
    engine.dispose()


@pytest.mark.parametrize("bad", [None, "toolongvalue"])
def test_a_row_that_fails_otherwise_than_by_its_key_fails_the_batch(strict, bad):
    """SingleStore's SKIP DUPLICATE KEY ERRORS skips duplicate keys only: a NULL into a
    NOT NULL column or a value its CHECK refuses fails the batch (``INSERT OR IGNORE``
    would drop the row and list it as a duplicate), and nothing of the batch is kept."""
    with pytest.raises(sa.exc.IntegrityError, match=r"NOT NULL|CHECK"):
        skip(strict, batch(("1", "dup"), ("2", "ok"), ("3", bad)))
    with strict.connect() as c:
        assert [tuple(r) for r in c.execute(sa.text('SELECT id, v FROM "t"'))] == [("1", "old")]


WRITES = Writes("ignore", ("id",))


def test_a_failure_other_than_a_key_fails_the_batch_beside_keys_compared_otherwise(db):
    """A key the database compares otherwise in the same batch does not make a row that
    fails for another reason a duplicate."""
    with db.begin() as c:
        c.exec_driver_sql('CREATE TABLE "u" (id TEXT COLLATE NOCASE PRIMARY KEY, v TEXT NOT NULL)')
        c.exec_driver_sql("INSERT INTO \"u\" VALUES ('A', 'old')")
    rows = batch(("a", "x"), ("b", None))
    with pytest.raises(sa.exc.IntegrityError, match="NOT NULL"), db.begin() as c:
        insert_skipping(c, "sqlite", sa.table("u", sa.column("id")), rows, WRITES, "u")


@pytest.fixture
def unique(tmp_path):
    """A table with a second unique key besides its primary key."""
    engine = Destination("sqlite", "", 0, str(tmp_path / "u.db")).engine()
    with engine.begin() as c:
        c.exec_driver_sql('CREATE TABLE "t" (id TEXT PRIMARY KEY, v TEXT UNIQUE NOT NULL)')
        c.exec_driver_sql("INSERT INTO \"t\" VALUES ('1', 'held')")
    yield engine
    engine.dispose()


def test_a_duplicate_of_another_unique_key_is_skipped_one_at_a_time(unique):
    """The conflict clause names the primary key; a row that repeats another unique key
    fails the batch's statement as a duplicate key, so the rows go one at a time and that
    one is skipped and listed, the others loaded."""
    listed, stored = skip(unique, batch(("2", "held"), ("3", "new")))
    assert stored == [("1", "held"), ("3", "new")]
    assert [e["offset"] for e in listed] == [0]


def test_one_at_a_time_a_failure_other_than_a_key_fails_the_batch(unique):
    """Sent one at a time (a duplicate of another unique key first), a row that fails for
    another reason still fails the batch: only a duplicate key is skipped."""
    with pytest.raises(sa.exc.IntegrityError, match="NOT NULL"):
        skip(unique, batch(("2", "held"), ("3", None)))
    with unique.connect() as c:
        assert [tuple(r) for r in c.execute(sa.text('SELECT id, v FROM "t"'))] == [("1", "held")]

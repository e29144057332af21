"""``DELETE | UPDATE … ORDER BY … LIMIT n`` (MySQL's single-table forms; SingleStore's
LIMIT) as statements and in procedure bodies, and ``CALL p(q, value …)``: a procedure's
scalar parameters bound by position with their declared types."""

from __future__ import annotations

import json

import pytest

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession


def _table(sql: SqlSession, query: str):
    return sorted(sql.execute(query)[0].rows, key=repr)


def test_delete_and_update_with_order_by_and_limit_as_statements(engine):
    """The first n rows the condition holds for change, in ORDER BY's order (ascending:
    NULLs first, as MySQL sorts them); UPDATE's LIMIT counts matched rows, not changed
    ones; without ORDER BY, n of them; LIMIT 0 changes none."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE q (id BIGINT, prio INT, state TEXT, PRIMARY KEY (id));"
        "INSERT INTO q VALUES (1, 5, 'new'), (2, 1, 'new'), (3, NULL, 'new'), (4, 9, 'new'),"
        " (5, 1, 'done'), (6, 3, 'new')"
    )
    (taken,) = sql.execute("UPDATE q SET state = 'taken' WHERE state = 'new' ORDER BY prio LIMIT 2")
    assert taken.message.startswith("Query OK, 2 rows affected")
    assert _table(sql, "SELECT id FROM q WHERE state = 'taken'") == [(2,), (3,)]  # NULL first
    sql.execute("UPDATE q SET state = 'taken' WHERE state <> 'done' ORDER BY prio DESC, id LIMIT 1")
    assert _table(sql, "SELECT id FROM q WHERE state = 'taken'") == [(2,), (3,), (4,)]
    # matched rows count: the first two by id already say 'taken' (unchanged), so none moves
    (same,) = sql.execute("UPDATE q SET state = 'taken' WHERE state = 'taken' ORDER BY id LIMIT 2")
    assert same.message.startswith("Query OK, 0 rows affected")
    (gone,) = sql.execute("DELETE FROM q WHERE state = 'new' ORDER BY prio DESC LIMIT 1")
    assert gone.message.startswith("Query OK, 1 row affected")
    assert _table(sql, "SELECT id FROM q") == [(2,), (3,), (4,), (5,), (6,)]  # 1 (prio 5)
    sql.execute("DELETE FROM q LIMIT 0")
    (some,) = sql.execute("DELETE FROM q WHERE prio IS NOT NULL LIMIT 2")
    assert some.message.startswith("Query OK, 2 rows affected")
    assert len(_table(sql, "SELECT id FROM q")) == 3


def test_order_by_and_limit_in_a_body_and_call_with_scalar_parameters(engine, tmp_path):
    """A body's DELETE … ORDER BY … LIMIT sees what the statements before it left; ``CALL
    keep_latest(batch, n, tag)`` gives the callee its batch and its scalars by position,
    each cast to the type it declares ('2' is INT 2), read by the parameter's name."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE events (id BIGINT, at BIGINT, tag TEXT);"
        "CREATE TABLE calls (n INT, tag TEXT);"
        "CREATE PROCEDURE keep_latest(n INT, rows QUERY(id BIGINT, at BIGINT), label TEXT) AS "
        "BEGIN INSERT INTO events SELECT id, at, label FROM rows; "
        "DELETE FROM events WHERE tag = label AND at >= n ORDER BY at DESC LIMIT 1; "
        "INSERT INTO calls VALUES (n, label); END"
    )
    with pytest.raises(SparkpipesError, match=r"takes scalar parameters \(n, label\)"):
        sql.execute(
            f"CREATE PIPELINE x AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE keep_latest"
        )
    sql.execute(
        "CREATE PROCEDURE route(batch QUERY(id BIGINT, at BIGINT)) AS "
        "DECLARE many INT = (SELECT count(*) FROM batch) - 2; "
        "BEGIN CALL keep_latest('1', batch, concat('b', many)); END"
    )
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text(
        "".join(json.dumps({"id": i, "at": 10 * i}) + "\n" for i in range(4))
    )
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' INTO PROCEDURE route FORMAT JSON"
    )
    engine.run_batches("p", 3, until_idle=True)
    # the newest row (at 30) went: n = 1 and the tag 'b2', both as the CALL gave them
    assert _table(sql, "SELECT id, at, tag FROM events") == [
        (0, 0, "b2"),
        (1, 10, "b2"),
        (2, 20, "b2"),
    ]
    assert _table(sql, "SELECT n, tag FROM calls") == [(1, "b2")]


def test_a_call_whose_arguments_do_not_fit_is_refused_naming_its_line(engine):
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE t (id BIGINT);"
        "CREATE PROCEDURE two(rows QUERY(id BIGINT), n INT) AS BEGIN "
        "INSERT INTO t SELECT id + n FROM rows; END"
    )
    with pytest.raises(
        SparkpipesError, match=r"line 1: CALL two gives 1 argument\(s\); .* takes 2"
    ):
        sql.execute("CREATE PROCEDURE a(batch QUERY(id BIGINT)) AS BEGIN CALL two(batch); END")
    with pytest.raises(SparkpipesError, match="its batch 'batch' is argument 2"):
        sql.execute("CREATE PROCEDURE b(batch QUERY(id BIGINT)) AS BEGIN CALL two(5, batch); END")
    with pytest.raises(SparkpipesError, match="its batch is 'batch' or a DECLAREd QUERY"):
        sql.execute("CREATE PROCEDURE c(batch QUERY(id BIGINT)) AS BEGIN CALL two(1, 2); END")
    sql.execute("CREATE PROCEDURE d(batch QUERY(id BIGINT)) AS BEGIN CALL two(batch, 1 + 1); END")

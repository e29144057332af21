"""DELETE and UPDATE in a pipeline procedure's body, as SingleStore runs them: each statement
sees what the earlier ones left, a NULL condition does not hold, a row UPDATE sets must fit
its table, and all of a batch's changes are committed with the batch (the crash test in
``test_procedures.py`` counts an UPDATEd total exactly once across kills)."""

from __future__ import annotations

import json

import pytest

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession

TABLES = """
CREATE TABLE latest (id BIGINT NOT NULL, v TEXT, seen INT DEFAULT 0, PRIMARY KEY (id));
CREATE TABLE totals (name TEXT NOT NULL, n BIGINT, changed DATETIME(6) ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (name));
CREATE TABLE loose (id BIGINT, tag TEXT);
CREATE TABLE audit (batch_rows BIGINT, latest_rows BIGINT, loose_rows BIGINT);
INSERT INTO totals (name, n) VALUES ('rows', 0), ('deleted', 0), ('untouched', 7);
INSERT INTO loose VALUES (1, 'a'), (1, 'a'), (2, 'b'), (3, NULL);
"""

# The batch holds (id, v, gone): a row with gone = 1 deletes its id; the others replace
# their id's row, counting how often each id was seen; ``loose`` (no key) loses rows by
# value, and ``audit`` reads the tables as the earlier statements left them.
BODY = """
CREATE PROCEDURE apply_batch(batch QUERY(id BIGINT, v TEXT, gone INT)) AS
DECLARE
  before_count BIGINT = (SELECT count(*) FROM latest);
BEGIN
  UPDATE totals SET n = n + (SELECT count(*) FROM latest l WHERE l.id IN
    (SELECT id FROM batch WHERE gone = 1)) WHERE name = 'deleted';
  DELETE FROM latest WHERE id IN (SELECT id FROM batch WHERE gone = 1);
  UPDATE latest AS l SET seen = seen + 1, v = (SELECT max(b.v) FROM batch b WHERE b.id = l.id)
    WHERE EXISTS (SELECT 1 FROM batch b WHERE b.id = l.id AND b.gone = 0);
  INSERT INTO latest (id, v, seen)
    SELECT id, max(v), 1 FROM batch
    WHERE gone = 0 AND id NOT IN (SELECT id FROM latest) GROUP BY id;
  UPDATE totals SET n = n + (SELECT count(*) FROM batch) WHERE name = 'rows';
  DELETE FROM loose WHERE tag = (SELECT min(v) FROM batch);
  UPDATE loose SET tag = 'seen' WHERE id = 3;
  INSERT INTO audit SELECT (SELECT count(*) FROM batch), (SELECT count(*) FROM latest),
    (SELECT count(*) FROM loose);
END
"""


def _feed(path, name: str, rows) -> None:
    lines = [json.dumps({"id": i, "v": v, "gone": g}) for i, v, g in rows]
    (path / name).write_text("\n".join(lines) + "\n")


def _table(sql: SqlSession, query: str):
    return sorted(sql.execute(query)[0].rows, key=repr)


def test_delete_and_update_in_a_body_change_tables_as_singlestore_does(engine, tmp_path):
    sql = SqlSession(engine)
    sql.execute(TABLES + BODY)
    data = tmp_path / "data"
    data.mkdir()
    _feed(data, "a.json", [(1, "a", 0), (2, "b", 0), (3, "c", 0), (2, "z", 0)])
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' INTO PROCEDURE apply_batch FORMAT JSON"
    )
    engine.run_batches("p", 5, until_idle=True)
    assert _table(sql, "SELECT id, v, seen FROM latest") == [(1, "a", 1), (2, "z", 1), (3, "c", 1)]
    # ``loose`` has no key: both equal rows (1, 'a') go; the NULL tag is set
    assert _table(sql, "SELECT id, tag FROM loose") == [(2, "b"), (3, "seen")]
    # the audit row reads latest and loose as the statements before it left them
    assert _table(sql, "SELECT * FROM audit") == [(4, 3, 2)]

    _feed(data, "b.json", [(2, "x", 0), (3, None, 1), (4, "d", 0)])
    engine.run_batches("p", 5, until_idle=True)
    assert _table(sql, "SELECT id, v, seen FROM latest") == [(1, "a", 1), (2, "x", 2), (4, "d", 1)]
    totals = {r[0]: r[1:] for r in sql.execute("SELECT name, n, changed FROM totals")[0].rows}
    assert totals["rows"][0] == 7 and totals["deleted"][0] == 1
    # ON UPDATE CURRENT_TIMESTAMP: set when a value changed, never on an untouched row
    assert totals["rows"][1] is not None and totals["untouched"] == (7, None)
    # ``tag = min(v)`` is ``tag = 'd'`` this time: no row of ``loose`` goes
    assert _table(sql, "SELECT id, tag FROM loose") == [(2, "b"), (3, "seen")]
    assert _table(sql, "SELECT * FROM audit") == [(3, 3, 2), (4, 3, 2)]


def test_a_null_condition_deletes_nothing(engine, tmp_path):
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE t (id BIGINT, tag TEXT);"
        "INSERT INTO t VALUES (1, NULL), (2, 'b');"
        "CREATE TABLE seen (n BIGINT);"
        "CREATE PROCEDURE p(batch QUERY(id BIGINT)) AS BEGIN "
        "DELETE FROM t WHERE tag <> 'b'; INSERT INTO seen SELECT count(*) FROM batch; END"
    )
    (tmp_path / "a.json").write_text('{"id": 1}\n')
    sql.execute(
        f"CREATE PIPELINE q AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE p FORMAT JSON"
    )
    engine.run_batches("q", 2, until_idle=True)
    assert _table(sql, "SELECT * FROM t") == [(1, None), (2, "b")]


def test_an_update_that_breaks_a_constraint_fails_the_batch_naming_its_line(engine, tmp_path):
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE t (id BIGINT, tag TEXT NOT NULL, PRIMARY KEY (id));"
        "INSERT INTO t VALUES (1, 'a');"
        "CREATE PROCEDURE p(batch QUERY(id BIGINT)) AS\nBEGIN\n"
        "UPDATE t SET tag = NULL WHERE id IN (SELECT id FROM batch);\nEND"
    )
    (tmp_path / "a.json").write_text('{"id": 1}\n')
    sql.execute(
        f"CREATE PIPELINE q AS LOAD DATA FS '{tmp_path}/*.json' MAX_RETRIES_PER_BATCH_PARTITION 0 "
        "INTO PROCEDURE p FORMAT JSON"
    )
    with pytest.raises(SparkpipesError) as e:
        engine.run_batch("q")
    assert "procedure 'p', line 3" in str(e.value) and "'tag' is NOT NULL" in str(e.value)
    assert _table(sql, "SELECT * FROM t") == [(1, "a")]


def test_a_plain_insert_of_a_key_the_table_holds_fails_the_batch(engine, tmp_path):
    """SingleStore's INSERT into a table with a PRIMARY KEY: ``Duplicate entry``, and no
    table of the body takes the batch; a body that DELETEs the key first inserts it
    again."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE t (id BIGINT, v TEXT, PRIMARY KEY (id)); INSERT INTO t VALUES (1, 'old');"
        "CREATE TABLE u (id BIGINT, v TEXT, PRIMARY KEY (id)); INSERT INTO u VALUES (1, 'old');"
        "CREATE TABLE log (id BIGINT);"
        "CREATE PROCEDURE plain(batch QUERY(id BIGINT, v TEXT)) AS BEGIN "
        "INSERT INTO log SELECT id FROM batch; INSERT INTO t SELECT id, v FROM batch; END;"
        "CREATE PROCEDURE again(batch QUERY(id BIGINT, v TEXT)) AS BEGIN "
        "DELETE FROM u WHERE id IN (SELECT id FROM batch); INSERT INTO u SELECT id, v FROM batch;"
        " END"
    )
    (tmp_path / "a.json").write_text('{"id": 1, "v": "new"}\n')
    for name, proc in (("q1", "plain"), ("q2", "again")):
        sql.execute(
            f"CREATE PIPELINE {name} AS LOAD DATA FS '{tmp_path}/*.json' "
            f"MAX_RETRIES_PER_BATCH_PARTITION 0 INTO PROCEDURE {proc} FORMAT JSON"
        )
    with pytest.raises(SparkpipesError, match="Duplicate entry '1' for key 'PRIMARY'"):
        engine.run_batch("q1")
    assert _table(sql, "SELECT * FROM t") == [(1, "old")]
    # found before any table commits: ``log`` (committed first) does not take the batch
    assert _table(sql, "SELECT * FROM log") == []
    engine.run_batches("q2", 2, until_idle=True)
    assert _table(sql, "SELECT * FROM u") == [(1, "new")]


@pytest.mark.parametrize(
    ("statement", "error"),
    [
        ("UPDATE t SET id = 2", "a row's PRIMARY KEY does not change here"),
        ("UPDATE t SET nope = 2", "table 't' has no column 'nope'"),
        ("UPDATE t SET v = 'x', w = v", "reads 'v', which an earlier assignment of this SET"),
        ("DELETE FROM missing", "table 'missing' does not exist"),
        (
            "REPLACE INTO t SELECT id, 'a', 'b' FROM batch; INSERT IGNORE INTO t SELECT id, "
            "'a', 'b' FROM batch",
            "one way",
        ),
        ("DELETE u FROM t JOIN u", "deleting from the joined one is not supported yet"),
    ],
)
def test_changes_a_body_cannot_make_are_refused_when_it_is_created(engine, statement, error):
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE t (id BIGINT, v TEXT, w TEXT, PRIMARY KEY (id))")
    with pytest.raises(SparkpipesError, match=error):
        sql.execute(f"CREATE PROCEDURE p(batch QUERY(id BIGINT)) AS BEGIN {statement}; END")


def test_every_kind_of_write_to_one_table_in_statement_order(engine, tmp_path):
    """A table the body DELETEs from takes ON DUPLICATE KEY UPDATE, REPLACE and INSERT
    IGNORE too, each meeting the table as the statements before it left it: a key deleted
    by one statement is new to the next."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE state (id BIGINT, seq INT, v TEXT, n INT, PRIMARY KEY (id));"
        "CREATE PROCEDURE keep(batch QUERY(id BIGINT, seq INT, v TEXT)) AS BEGIN "
        "INSERT INTO state SELECT id, seq, v, 1 FROM batch WHERE v <> 'gone' "
        "ON DUPLICATE KEY UPDATE v = IF(VALUES(seq) > seq, VALUES(v), v), "
        "seq = GREATEST(seq, VALUES(seq)), n = n + 1;"
        "DELETE state FROM state JOIN batch WHERE state.id = batch.id AND batch.v = 'gone';"
        "REPLACE INTO state SELECT id + 100, seq, v, 0 FROM batch WHERE v = 'copy';"
        "INSERT IGNORE INTO state SELECT id, 0, 'ignored', 0 FROM batch; END"
    )
    data = tmp_path / "data"
    data.mkdir()
    rows = [(1, 1, "a"), (2, 1, "b"), (1, 2, "c"), (3, 1, "copy")]
    (data / "a.json").write_text(
        "".join(json.dumps({"id": i, "seq": q, "v": v}) + "\n" for i, q, v in rows)
    )
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' INTO PROCEDURE keep FORMAT JSON"
    )
    engine.run_batches("p", 5, until_idle=True)
    assert _table(sql, "SELECT * FROM state") == [
        (1, 2, "c", 2),
        (103, 1, "copy", 0),
        (2, 1, "b", 1),
        (3, 1, "copy", 1),
    ]
    rows = [(2, 0, "gone"), (1, 1, "old"), (4, 1, "d")]
    (data / "b.json").write_text(
        "".join(json.dumps({"id": i, "seq": q, "v": v}) + "\n" for i, q, v in rows)
    )
    engine.run_batches("p", 5, until_idle=True)
    assert _table(sql, "SELECT * FROM state") == [
        (1, 2, "c", 3),
        (103, 1, "copy", 0),
        (2, 0, "ignored", 0),
        (3, 1, "copy", 1),
        (4, 1, "d", 1),
    ]


def test_delete_and_update_as_statements_of_their_own(engine):
    """``DELETE`` and ``UPDATE`` run by themselves as in MySQL: ``n rows affected``, a
    NULL condition does not hold, a row that would break a constraint fails the statement
    and changes nothing, ``DELETE t FROM t JOIN u`` deletes the rows some row of u joins."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE t (id BIGINT, v TEXT NOT NULL, n INT, at DATETIME(6) ON UPDATE "
        "CURRENT_TIMESTAMP, PRIMARY KEY (id));"
        "INSERT INTO t (id, v, n) VALUES (1, 'a', 1), (2, 'b', NULL), (3, 'c', 3), (4, 'd', 4);"
        "CREATE TABLE gone (id BIGINT); INSERT INTO gone VALUES (4), (9);"
        "CREATE TABLE bag (x INT); INSERT INTO bag VALUES (1), (1), (2)"
    )
    (updated,) = sql.execute("UPDATE t SET v = upper(v), n = n * 10 WHERE n > 2")
    assert updated.message.startswith("Query OK, 2 rows affected")
    assert _table(sql, "SELECT id, v, n, at IS NULL FROM t") == [
        (1, "a", 1, True),
        (2, "b", None, True),
        (3, "C", 30, False),
        (4, "D", 40, False),
    ]
    with pytest.raises(SparkpipesError, match="'v' is NOT NULL"):
        sql.execute("UPDATE t SET v = NULL WHERE id = 1")
    (deleted,) = sql.execute("DELETE FROM t WHERE n < 5")  # NULL < 5 is not true
    assert deleted.message.startswith("Query OK, 1 row")
    sql.execute("DELETE t FROM t JOIN gone g ON t.id = g.id")
    assert _table(sql, "SELECT id FROM t") == [(2,), (3,)]
    sql.execute("DELETE FROM bag WHERE x = 1")  # no key: equal rows go together
    assert _table(sql, "SELECT x FROM bag") == [(2,)]
    with pytest.raises(SparkpipesError, match="PRIMARY KEY does not change"):
        sql.execute("UPDATE t SET id = 7")


def test_call_runs_another_procedure_on_a_query_of_the_batch(engine, tmp_path):
    """``CALL p(q)``: the procedure called runs on the batch (or a declared query of it)
    in the same commit, its writes and the caller's one table's changes seen in order;
    replacing the called procedure changes what the pipeline runs; it cannot be dropped
    while called, nor call back."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE seen (id BIGINT, PRIMARY KEY (id));"
        "CREATE TABLE big (id BIGINT); CREATE TABLE totals (n BIGINT);"
        "INSERT INTO totals VALUES (0);"
        "CREATE PROCEDURE count_big(rows QUERY(id BIGINT)) AS BEGIN "
        "INSERT INTO big SELECT id FROM rows; "
        "UPDATE totals SET n = n + (SELECT count(*) FROM rows); END;"
        "CREATE PROCEDURE route(batch QUERY(id BIGINT)) AS "
        "DECLARE large QUERY(id BIGINT) = SELECT id FROM batch WHERE id > 5; "
        "BEGIN INSERT INTO seen SELECT id FROM batch; CALL count_big(large); "
        "UPDATE totals SET n = n * 10; END"
    )
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(9)))
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' INTO PROCEDURE route FORMAT JSON"
    )
    engine.run_batches("p", 5, until_idle=True)
    assert _table(sql, "SELECT id FROM big") == [(6,), (7,), (8,)]
    assert _table(sql, "SELECT n FROM totals") == [(30,)]  # (0 + 3) * 10: in order
    with pytest.raises(SparkpipesError, match="is used by pipeline"):
        sql.execute("DROP PROCEDURE count_big")
    with pytest.raises(SparkpipesError, match="comes back to 'count_big'"):
        sql.execute(
            "CREATE OR REPLACE PROCEDURE count_big(rows QUERY(id BIGINT)) AS BEGIN "
            "CALL route(rows); END"
        )
    sql.execute(
        "CREATE OR REPLACE PROCEDURE count_big(rows QUERY(id BIGINT)) AS BEGIN "
        "INSERT INTO big SELECT id * 100 FROM rows; END"
    )
    (data / "b.json").write_text(json.dumps({"id": 9}) + "\n")
    engine.run_batches("p", 5, until_idle=True)
    assert _table(sql, "SELECT id FROM big") == [(6,), (7,), (8,), (900,)]
    assert _table(sql, "SELECT n FROM totals") == [(300,)]
    with pytest.raises(SparkpipesError, match="procedure 'missing' does not exist"):
        sql.execute("CREATE PROCEDURE r2(batch QUERY(id BIGINT)) AS BEGIN CALL missing(batch); END")
    with pytest.raises(SparkpipesError, match="its batch is 'batch' or a DECLAREd QUERY"):
        sql.execute(
            "CREATE PROCEDURE r3(batch QUERY(id BIGINT)) AS BEGIN CALL count_big(other); END"
        )


def test_a_called_procedure_takes_the_query_as_its_query_parameter_declares_it(engine, tmp_path):
    """SingleStore assigns the query of ``CALL p(q)`` to p's ``QUERY(…)`` parameter: its
    columns by position under the declared names and types (``q``'s own names do not
    matter), and a NULL where the parameter says NOT NULL fails the batch at the CALL."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE labels (n BIGINT, label TEXT);"
        "CREATE PROCEDURE keep(rows QUERY(n BIGINT NOT NULL, label TEXT)) AS BEGIN "
        "INSERT INTO labels SELECT n, label FROM rows; END;"
        "CREATE PROCEDURE relay(batch QUERY(id TEXT, v TEXT)) AS "
        "DECLARE pairs QUERY(a TEXT, b TEXT) = SELECT id, upper(v) FROM batch; "
        "BEGIN CALL keep(pairs); END"
    )
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text('{"id": "7", "v": "x"}\n{"id": "8", "v": "y"}\n')
    sql.execute(
        f"CREATE PIPELINE r AS LOAD DATA FS '{data}/*.json' INTO PROCEDURE relay FORMAT JSON"
    )
    engine.run_batches("r", 3, until_idle=True)
    assert _table(sql, "SELECT n, label FROM labels") == [(7, "X"), (8, "Y")]
    (data / "b.json").write_text('{"v": "no id"}\n')
    with pytest.raises(SparkpipesError, match="line 1, CALL keep: column 'n' of the QUERY"):
        engine.run_batch("r")
    assert _table(sql, "SELECT n, label FROM labels") == [(7, "X"), (8, "Y")]


def test_procedures_a_body_calls_write_each_table_one_way(engine):
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE t (id BIGINT, PRIMARY KEY (id));"
        "CREATE PROCEDURE first(b QUERY(id BIGINT)) AS BEGIN INSERT IGNORE INTO t "
        "SELECT id FROM b; END;"
        "CREATE PROCEDURE last(b QUERY(id BIGINT)) AS BEGIN REPLACE INTO t SELECT id FROM b; END"
    )
    with pytest.raises(SparkpipesError, match="one way"):
        sql.execute(
            "CREATE PROCEDURE both(batch QUERY(id BIGINT)) AS BEGIN CALL first(batch); "
            "CALL last(batch); END"
        )


def test_changes_are_never_applied_over_what_another_writer_committed_meanwhile(engine, tmp_path):
    """A procedure's UPDATE of a total is computed from the table as the batch read it;
    when another writer commits to the table before the batch does, applying the computed
    row would overwrite that write (a lost update). The commit fails instead, nothing of
    the batch is kept, and the next attempt computes from the table as it is: both the
    batch's count and the other writer's change are in the total."""
    sql = SqlSession(engine)
    sql.execute(
        "CREATE TABLE totals (name TEXT NOT NULL, n BIGINT, PRIMARY KEY (name));"
        "INSERT INTO totals VALUES ('rows', 0);"
        "CREATE PROCEDURE count_rows(batch QUERY(id BIGINT)) AS BEGIN "
        "  UPDATE totals SET n = n + (SELECT count(*) FROM batch) WHERE name = 'rows'; END"
    )
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(3)))
    sql.execute(
        f"CREATE PIPELINE c AS LOAD DATA FS '{data}/*.json' INTO PROCEDURE count_rows FORMAT JSON"
    )
    runner = engine._runner("c")
    written = runner.extract(runner.plan())  # the changes: n = 0 + 3
    (other,) = sql.execute("UPDATE totals SET n = n + 100 WHERE name = 'rows'")  # meanwhile
    assert other.message.startswith("Query OK, 1 row")
    with pytest.raises(SparkpipesError, match="changed while its changes were computed") as e:
        runner.commit(written)
    assert e.value.transient
    assert _table(sql, "SELECT n FROM totals") == [(100,)]
    engine.run_batches("c", 3, until_idle=True)
    assert _table(sql, "SELECT n FROM totals") == [(103,)]
    assert engine.offsets("c")


def test_an_update_of_a_keyless_table_that_fails_after_its_commit_is_not_reported_failed(
    engine, monkeypatch
):
    """``UPDATE`` of a table without a primary key counts the rows it changed (MySQL's rows
    affected) before its MERGE commits: a count that failed after the commit (an executor
    lost: transient, "a statement can be run again") would have a client run the UPDATE
    again and apply it twice."""
    from sparkpipes.engine.changes import ChangedTable
    from sparkpipes.errors import LostExecutorDataError

    sql = SqlSession(engine)
    sql.execute("CREATE TABLE bag (n INT); INSERT INTO bag VALUES (1), (1), (5)")
    counted = ChangedTable.affected
    lost: list[bool] = []

    def affected(self) -> int:
        if not lost:
            lost.append(True)
            raise LostExecutorDataError("an executor took the rows with it")
        return counted(self)

    monkeypatch.setattr(ChangedTable, "affected", affected)
    statement = "UPDATE bag SET n = n + 1"
    try:
        (updated,) = sql.execute(statement)
    except LostExecutorDataError:  # transient: the client runs the statement again
        (updated,) = sql.execute(statement)
    assert lost == [True]
    assert updated.message.startswith("Query OK, 3 rows affected")
    assert _table(sql, "SELECT n FROM bag") == [(2,), (2,), (6,)]  # once

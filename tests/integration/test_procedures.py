"""INTO PROCEDURE: stored procedures whose body writes several tables per batch, exactly
once per table, including after a crash between the tables' commits; and the errors a
user gets for a procedure that cannot run."""

from __future__ import annotations

import json
import signal
import textwrap
from collections import Counter

import pytest

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from tests.integration.children import finish, spawn

PROCEDURE = """
CREATE OR REPLACE PROCEDURE route(batch QUERY(id BIGINT, kind TEXT, amount DOUBLE))
AS
BEGIN
  INSERT INTO orders (id, amount) SELECT id, amount FROM batch WHERE kind = 'order';
  INSERT INTO events SELECT id, kind FROM batch;
  REPLACE INTO latest (kind, last_id) SELECT kind, max(id) FROM batch GROUP BY kind;
END;
"""
TABLES = """
CREATE TABLE orders (id BIGINT NOT NULL, amount DOUBLE, big AS (amount > 100) PERSISTED BOOLEAN);
CREATE TABLE events (id BIGINT, kind TEXT);
CREATE TABLE latest (kind TEXT, last_id BIGINT, PRIMARY KEY (kind));
"""


def _write(d, name: str, ids) -> None:
    kinds = ("order", "view", "click")
    (d / name).write_text(
        "".join(json.dumps({"id": i, "kind": kinds[i % 3], "amount": float(i)}) + "\n" for i in ids)
    )


def _rows(engine, table: str, column: str) -> Counter:
    return Counter(engine.table_arrow(table).column(column).to_pylist())


def test_a_procedure_writes_several_tables_once_per_batch(engine, tmp_path):
    sql = SqlSession(engine)
    _write(tmp_path, "a.json", range(30))
    sql.execute(TABLES + PROCEDURE)
    assert sql.execute("SHOW PROCEDURES")[0].rows == [("route", "sparkpipes")]
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE route "
        "FORMAT JSON (id <- id, kind <- kind, amount <- amount)"
    )
    shown = sql.execute("SHOW CREATE PIPELINE p")[0].rows[0][1]
    assert "INTO PROCEDURE route" in shown
    engine.run_batches("p", 5, until_idle=True)
    _write(tmp_path, "b.json", range(30, 45))
    engine.run_batches("p", 5, until_idle=True)

    assert _rows(engine, "events", "id") == Counter(range(45))
    assert _rows(engine, "orders", "id") == Counter(range(0, 45, 3))
    big = sql.execute("SELECT count(*) FROM orders WHERE big")[0].rows
    assert big == [(0,)]  # computed column of the target table, filled by the procedure
    latest = dict(sql.execute("SELECT kind, last_id FROM latest")[0].rows)
    assert latest == {"order": 42, "view": 43, "click": 44}  # REPLACE: one row per key

    with pytest.raises(SparkpipesError, match="procedure 'route' is used by pipeline"):
        sql.execute("DROP PROCEDURE route")
    sql.execute("DROP PIPELINE p")
    sql.execute("DROP PROCEDURE route; DROP PROCEDURE IF EXISTS route")
    assert sql.execute("SHOW PROCEDURES")[0].rows == []


def test_procedures_that_cannot_run_are_named_with_their_line(engine, tmp_path):
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE events (id BIGINT, kind TEXT NOT NULL)")
    with pytest.raises(SparkpipesError) as e:
        sql.execute(
            "CREATE PROCEDURE bad(batch QUERY(id BIGINT))\nAS\nBEGIN\n"
            "INSERT INTO events SELECT id, 'x' FROM batch;\n"
            "INSERT INTO nosuch SELECT id FROM batch;\nEND"
        )
    assert "procedure 'bad', line 5: table 'nosuch' does not exist" in str(e.value)
    assert "Traceback" not in str(e.value)
    with pytest.raises(SparkpipesError, match="takes one parameter, the batch"):
        sql.execute("CREATE PROCEDURE two(a INT, b INT) AS BEGIN END")
    with pytest.raises(SparkpipesError, match="procedure 'nope' does not exist"):
        sql.execute(f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE nope")

    # a row that does not fit: the batch fails naming the statement, nothing is loaded
    sql.execute(
        "CREATE PROCEDURE nulls(batch QUERY(id BIGINT, kind TEXT))\nAS\nBEGIN\n"
        "INSERT INTO events SELECT id, kind FROM batch;\nEND"
    )
    (tmp_path / "a.json").write_text('{"id": 1, "kind": "a"}\n{"id": 2}\n')
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' MAX_RETRIES_PER_BATCH_PARTITION 0 "
        "INTO PROCEDURE nulls FORMAT JSON"
    )
    with pytest.raises(SparkpipesError) as e:
        engine.run_batch("p")
    assert "procedure 'nulls', line 4" in str(e.value) and "'kind' is NOT NULL" in str(e.value)
    assert engine.table_arrow("events").num_rows == 0


CHILD = textwrap.dedent(
    """
    import sys
    from sparkpipes import Engine
    from sparkpipes.frontends.singlestore.executor import SqlSession
    warehouse, data, tables, procedure = sys.argv[1:]
    eng = Engine(warehouse, spark_master="local[2]")
    sql = SqlSession(eng)
    if "orders" not in eng.tables():
        sql.execute(tables + procedure)
        sql.execute(
            f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' CONFIG '{{\\"packing\\": false}}' "
            "MAX_PARTITIONS_PER_BATCH 1 INTO PROCEDURE route "
            "FORMAT JSON (id <- id, kind <- kind, amount <- amount)"
        )
    while eng.run_batch("p").state != "NoData":
        pass
    eng.close()
    """
)


def test_a_crash_between_the_tables_commits_is_finished_on_restart(tmp_path):
    from deltalake import DeltaTable

    data, warehouse = tmp_path / "data", tmp_path / "wh"
    data.mkdir()
    for k in range(3):
        _write(data, f"f{k}.json", range(k * 20, (k + 1) * 20))
    # a fourth table, changed by UPDATE: its count is exactly once too
    tables = TABLES + "CREATE TABLE totals (name TEXT, n BIGINT, PRIMARY KEY (name));\n"
    tables += "INSERT INTO totals VALUES ('all', 0), ('none', 0);\n"
    update = "UPDATE totals SET n = n + (SELECT count(*) FROM batch) WHERE name = 'all';\nEND;"
    args = (CHILD, warehouse, data, tables, PROCEDURE.replace("END;", update))
    # one object per batch; the second run first finishes the batch the first left
    # half-committed, then is killed in the same place in its own batch
    for point in ("between_procedure_tables:1", "between_procedure_tables:2", "after_commit:1"):
        assert finish(spawn(*args, crash_at=point)) == -signal.SIGKILL, point
    _write(data, "f3.json", range(60, 80))
    assert finish(spawn(*args)) == 0

    def ids(table: str) -> Counter:
        path = warehouse / "tables" / table
        return Counter(DeltaTable(str(path)).to_pyarrow_table(columns=["id"])["id"].to_pylist())

    assert ids("events") == Counter(range(80))
    assert ids("orders") == Counter(range(0, 80, 3))
    latest = DeltaTable(str(warehouse / "tables" / "latest")).to_pyarrow_table().to_pylist()
    assert {r["kind"]: r["last_id"] for r in latest} == {"order": 78, "view": 79, "click": 77}
    totals = DeltaTable(str(warehouse / "tables" / "totals")).to_pyarrow_table().to_pylist()
    assert {r["name"]: r["n"] for r in totals} == {"all": 80, "none": 0}


def test_a_not_null_member_of_the_batch_rejects_a_record_without_it(engine, tmp_path):
    """``QUERY(id BIGINT NOT NULL, …)``, as SingleStore's demos write it: a record without
    ``id`` breaks a constraint (the batch fails, or with SKIP CONSTRAINT ERRORS it is listed in
    PIPELINES_ERRORS), never a batch row holding NULL."""
    sql = SqlSession(engine)
    (tmp_path / "a.json").write_text('{"id": 1, "kind": "x"}\n{"kind": "no id"}\n')
    sql.execute(
        "CREATE TABLE seen (id BIGINT, kind TEXT);"
        "CREATE PROCEDURE keep(batch QUERY(id BIGINT NOT NULL, kind TEXT)) AS BEGIN "
        "INSERT INTO seen SELECT id, kind FROM batch; END"
    )
    stored = engine._procedures.get("keep")
    assert stored.not_null == ("id",)
    assert "QUERY(id BIGINT NOT NULL, kind TEXT)" in stored.sql
    sql.execute(
        f"CREATE PIPELINE strict AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE keep "
        "FORMAT JSON"
    )
    with pytest.raises(SparkpipesError, match="column 'id' is NOT NULL"):
        sql.execute("START PIPELINE strict FOREGROUND")
    sql.execute(
        f"CREATE PIPELINE lenient AS LOAD DATA FS '{tmp_path}/*.json' SKIP CONSTRAINT ERRORS "
        "INTO PROCEDURE keep FORMAT JSON"
    )
    sql.execute("START PIPELINE lenient FOREGROUND")
    assert engine.table_arrow("seen").to_pylist() == [{"id": 1, "kind": "x"}]


def test_declared_queries_and_on_duplicate_key_update_in_a_body(engine, tmp_path):
    """A body as SingleStore's demos write it: ``DECLARE name QUERY(…) = SELECT …`` names
    a query its statements read; ``INSERT … SELECT … ON DUPLICATE KEY UPDATE`` applies each
    row to the stored one of its key (bare names the stored row, ``VALUES(col)`` the new),
    across batches; a loop is named as not supported yet."""
    sql = SqlSession(engine)
    _write(tmp_path, "a.json", range(9))
    sql.execute(
        "CREATE TABLE totals (kind TEXT PRIMARY KEY, n BIGINT, top DOUBLE, seen INT DEFAULT 0);"
        "CREATE TABLE big (id BIGINT, amount DOUBLE);"
        """
        DELIMITER //
        CREATE OR REPLACE PROCEDURE tally(batch QUERY(id BIGINT, kind TEXT, amount DOUBLE))
        AS
        DECLARE
          _sums QUERY(kind TEXT, n BIGINT, top DOUBLE) =
            SELECT kind, count(*) AS n, max(amount) AS top FROM batch GROUP BY kind;
          _big QUERY(id BIGINT, amount DOUBLE) = SELECT id, amount FROM batch WHERE amount > 5;
        BEGIN
          INSERT INTO totals (kind, n, top) SELECT kind, n, top FROM _sums
          ON DUPLICATE KEY UPDATE n = n + VALUES(n), top = GREATEST(top, VALUES(top)),
            seen = seen + 1;
          INSERT INTO big SELECT * FROM _big;
        END //
        DELIMITER ;
        """
    )
    sql.execute(
        f"CREATE PIPELINE t AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE tally "
        "FORMAT JSON (id <- id, kind <- kind, amount <- amount)"
    )
    engine.run_batches("t", 5, until_idle=True)
    _write(tmp_path, "b.json", range(9, 12))
    engine.run_batches("t", 5, until_idle=True)
    got = sorted(sql.execute("SELECT kind, n, top, seen FROM totals")[0].rows)
    assert got == [("click", 4, 11.0, 1), ("order", 4, 9.0, 1), ("view", 4, 10.0, 1)]
    assert sorted(_rows(engine, "big", "id")) == list(range(6, 12))
    with pytest.raises(SparkpipesError, match="WHILE is not supported yet"):
        sql.execute(
            "CREATE PROCEDURE d(batch QUERY(id BIGINT)) AS BEGIN "
            "WHILE 1 > 0 LOOP DELETE FROM big; END LOOP; END"
        )


def test_scalar_variables_set_and_read_by_later_statements(engine, tmp_path):
    """``DECLARE v type [= expr]`` (each line may repeat DECLARE), ``SET v = expr`` (a
    scalar subquery over the batch too) and statements that read ``v``, as in the stats
    procedures users write: an ``INSERT … VALUES`` of variables, an ``INSERT … SELECT``
    filtered by one; ``IF … ELSEIF … ELSE … END IF`` (nested too) runs one branch;
    ``ECHO SELECT`` answers no one here. ``WHILE`` is named as not supported."""
    sql = SqlSession(engine)
    _write(tmp_path, "a.json", range(6))
    sql.execute(
        "CREATE TABLE stats (kind TEXT, n BIGINT, top DOUBLE, note TEXT);"
        "CREATE TABLE above (id BIGINT, amount DOUBLE);"
        """
        DELIMITER //
        CREATE OR REPLACE PROCEDURE measure(batch QUERY(id BIGINT, kind TEXT, amount DOUBLE))
        RETURNS void AS
        DECLARE v_n BIGINT;
        DECLARE v_top DOUBLE = 0;
          v_note TEXT DEFAULT 'batch';
        BEGIN
          SET v_n = (SELECT count(*) FROM batch);
          v_top = (SELECT max(amount) FROM batch) / 2;
          INSERT INTO stats VALUES ('all', v_n, v_top, v_note);
          IF v_n > 100 THEN
            INSERT INTO stats VALUES ('big', v_n, NULL, NULL);
          ELSEIF v_n > 3 THEN
            SET v_note = 'medium';
            INSERT INTO above SELECT id, amount FROM batch WHERE amount > v_top;
            IF v_top > 100 THEN INSERT INTO stats VALUES ('never', 0, 0, 'x'); END IF;
          ELSE
            INSERT INTO stats VALUES ('small', v_n, NULL, NULL);
          END IF;
          INSERT INTO stats VALUES ('after', NULL, NULL, v_note);
          ECHO SELECT v_n AS rows_in_batch;
        END //
        DELIMITER ;
        """
    )
    sql.execute(
        f"CREATE PIPELINE m AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE measure "
        "FORMAT JSON (id <- id, kind <- kind, amount <- amount)"
    )
    engine.run_batches("m", 5, until_idle=True)
    assert sorted(sql.execute("SELECT kind, n, top, note FROM stats")[0].rows) == [
        ("after", None, None, "medium"),  # the ELSEIF branch ran, its SET seen after END IF
        ("all", 6, 2.5, "batch"),
    ]
    assert sorted(_rows(engine, "above", "id")) == [3, 4, 5]
    with pytest.raises(SparkpipesError, match="line 1: WHILE is not supported yet"):
        sql.execute(
            "CREATE PROCEDURE i(batch QUERY(id BIGINT)) AS DECLARE v INT; BEGIN "
            "WHILE v > 1 DO INSERT INTO above SELECT id, 0 FROM batch; END WHILE; END"
        )


def test_insert_ignore_in_a_body_skips_keys_the_table_holds(engine, tmp_path):
    """``INSERT IGNORE`` in a body (as users write it to skip duplicates): a row whose
    primary key the table, or an earlier row of the batch, holds is skipped."""
    sql = SqlSession(engine)
    _write(tmp_path, "a.json", [1, 2, 2, 3])
    sql.execute(
        "CREATE TABLE firsts (id BIGINT PRIMARY KEY, kind TEXT);"
        "CREATE PROCEDURE keep(batch QUERY(id BIGINT, kind TEXT, amount DOUBLE)) AS BEGIN "
        "INSERT IGNORE INTO firsts SELECT id, kind FROM batch; END"
    )
    sql.execute("INSERT INTO firsts VALUES (1, 'kept')")
    sql.execute(
        f"CREATE PIPELINE k AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE keep "
        "FORMAT JSON (id <- id, kind <- kind, amount <- amount)"
    )
    engine.run_batches("k", 5, until_idle=True)
    got = sorted(sql.execute("SELECT id, kind FROM firsts")[0].rows)
    assert got == [(1, "kept"), (2, "click"), (3, "order")]


def test_a_body_reads_the_tables_it_joins_as_they_are_now(engine, tmp_path):
    """A body joining another table reads that table's current rows, not the snapshot
    some earlier statement of the session saw."""
    sql = SqlSession(engine)
    _write(tmp_path, "a.json", [1])
    sql.execute(
        "CREATE TABLE dim (id BIGINT, name TEXT); CREATE TABLE fact (id BIGINT, name TEXT);"
        "CREATE PROCEDURE enrich(batch QUERY(id BIGINT, kind TEXT, amount DOUBLE)) AS BEGIN "
        "INSERT INTO fact SELECT b.id, d.name FROM batch b LEFT JOIN dim d ON d.id = b.id; END"
    )
    sql.execute("SELECT * FROM dim")  # the session's view of dim: empty
    sql.execute("INSERT INTO dim VALUES (1, 'one')")
    sql.execute(
        f"CREATE PIPELINE e AS LOAD DATA FS '{tmp_path}/*.json' INTO PROCEDURE enrich "
        "FORMAT JSON (id <- id, kind <- kind, amount <- amount)"
    )
    engine.run_batches("e", 5, until_idle=True)
    assert sql.execute("SELECT id, name FROM fact")[0].rows == [(1, "one")]

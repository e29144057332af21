"""A SingleStore script's database, as its scripts name it: ``CREATE DATABASE d; USE d``,
``d.t`` and ``t.c`` qualified names, and what is refused because a warehouse holds one
database (a second name, an unknown one), through a real engine."""

from __future__ import annotations

import pytest

from sparkpipes.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigError,
    NotFoundError,
    SparkpipesError,
)
from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def owner(engine):
    return SqlSession(engine)


def rows(session, text):
    return [tuple(r) for r in session.execute(text)[-1].rows]


def test_a_script_that_makes_and_uses_its_database_runs_as_written(owner, tmp_path):
    """SingleStore's scripts begin by making their database; names qualified with it
    (``db.t``, a mapping's ``t.c`` and ``db.t.c``) load the same table, and the listings
    and views say the database's name."""
    (tmp_path / "a.json").write_text('{"id": 1, "name": "ann"}\n{"id": 2, "name": "bo"}\n')
    owner.execute(
        "CREATE DATABASE IF NOT EXISTS demo;\n"
        "USE demo;\n"
        "CREATE TABLE demo.actors (id INT, name TEXT);\n"
        f"CREATE PIPELINE IF NOT EXISTS demo.actors AS LOAD DATA FS '{tmp_path}/*.json'\n"
        "INTO TABLE `demo`.`actors` FORMAT JSON (actors.id <- id, demo.actors.name <- name);\n"
        "START PIPELINE demo.actors FOREGROUND"
    )
    assert rows(owner, "SELECT id, name FROM actors ORDER BY id") == [(1, "ann"), (2, "bo")]
    assert rows(owner, "SELECT a.name FROM demo.actors a JOIN `demo`.actors b USING (id)") == [
        ("ann",),
        ("bo",),
    ]
    assert owner.execute("SHOW PIPELINES")[-1].columns[0] == "Pipelines_in_demo"
    assert owner.execute("SHOW TABLES")[-1].columns[0] == "Tables_in_demo"
    assert rows(owner, "SELECT DATABASE_NAME FROM information_schema.PIPELINES") == [("demo",)]
    # a dashboard's query as SingleStore's docs write it: its column names, lower case
    summary = rows(
        owner,
        "SELECT DATABASE_NAME, PIPELINE_NAME, SUM(ROWS_STREAMED), SUM(NUM_PARTITIONS_FINISHED), "
        "SUM(MB_STREAMED) > 0, MAX(START_TIME) IS NOT NULL, MAX(BATCH_TIME) >= 0 "
        "FROM information_schema.pipelines_batches_summary WHERE BATCH_STATE = 'Succeeded' "
        "GROUP BY DATABASE_NAME, PIPELINE_NAME",
    )
    assert summary == [("demo", "actors", 2, 1, True, True, True)]
    shown = rows(owner, "SHOW CREATE PIPELINE demo.actors EXTENDED")[0][1]
    assert "INTO TABLE actors" in shown and "demo." not in shown
    # the warehouse's own name still names it
    owner.execute("INSERT INTO sparkpipes.actors VALUES (3, 'cy'); USE sparkpipes")
    assert rows(owner, "SELECT count(*) FROM actors") == [(3,)]
    assert "0 rows affected" in owner.execute("CREATE DATABASE IF NOT EXISTS DEMO")[-1].message


def test_an_unknown_or_a_second_database_is_refused_by_name(owner):
    owner.execute("CREATE DATABASE shop")
    for text in ("USE other", "CREATE TABLE other.t (a INT)", "DROP TABLE IF EXISTS other.t"):
        with pytest.raises(NotFoundError, match="Unknown database 'other'"):
            owner.execute(text)
    with pytest.raises(ConfigError, match="one database, named 'shop'"):
        owner.execute("CREATE DATABASE other")
    with pytest.raises(AlreadyExistsError, match="database exists"):
        owner.execute("CREATE DATABASE shop")
    with pytest.raises(SparkpipesError, match="not a column of the table the pipeline loads"):
        owner.execute(
            "CREATE TABLE t (a INT); CREATE PIPELINE p AS LOAD DATA FS '/nowhere' "
            "INTO TABLE t FORMAT JSON (other.a <- a)"
        )


def test_grants_name_the_database_by_either_name_and_naming_it_needs_super(owner, engine):
    owner.execute(
        "CREATE USER ana IDENTIFIED BY 'ana-pw'; CREATE USER bo IDENTIFIED BY 'bo-pw';"
        "CREATE DATABASE shop; CREATE TABLE t (a INT); INSERT INTO t VALUES (1);"
        "GRANT SELECT ON shop.* TO bo"
    )
    bo = SqlSession(engine, user="bo")
    assert rows(bo, "SELECT a FROM t") == rows(bo, "SELECT a FROM shop.t") == [(1,)]
    owner.execute("REVOKE SELECT ON sparkpipes.* FROM bo")
    for text in ("SELECT a FROM t", "SELECT a FROM shop.t", "SELECT a FROM sparkpipes.t"):
        with pytest.raises(AccessDeniedError):
            bo.execute(text)
    with pytest.raises(NotFoundError, match="Unknown database 'other'"):
        owner.execute("GRANT SELECT ON other.* TO bo")
    with pytest.raises(AccessDeniedError, match="SUPER"):
        SqlSession(engine, user="bo").execute("CREATE DATABASE IF NOT EXISTS shop")


def test_detach_stops_a_pipeline_keeping_its_offsets(owner, tmp_path):
    """DETACH PIPELINE (and STOP … DETACH) stop it as STOP does; START resumes where it
    was, loading nothing twice."""
    (tmp_path / "a.json").write_text('{"a": 1}\n')
    owner.execute(
        "CREATE TABLE t (a INT);"
        f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' INTO TABLE t FORMAT JSON;"
        "START PIPELINE p FOREGROUND; START PIPELINE p"
    )
    assert rows(owner, "SHOW PIPELINES") == [("p", "Running")]
    owner.execute("DETACH PIPELINE p")
    assert rows(owner, "SHOW PIPELINES") == [("p", "Stopped")]
    owner.execute("DETACH PIPELINE IF EXISTS nope; DETACH PIPELINE p")  # detached already
    owner.execute("START PIPELINE p; STOP PIPELINE p DETACH")
    assert rows(owner, "SHOW PIPELINES") == [("p", "Stopped")]
    with pytest.raises(NotFoundError):
        owner.execute("DETACH PIPELINE nope")
    owner.execute("START PIPELINE p FOREGROUND")
    assert rows(owner, "SELECT a FROM t") == [(1,)]

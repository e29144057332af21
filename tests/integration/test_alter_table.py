"""ALTER TABLE … DROP COLUMN / MODIFY COLUMN as a user types them, against Spark and Delta:
the rows are rewritten in one Delta commit, what is in the way is named, and a pipeline
into the table resumes from its committed offsets."""

from __future__ import annotations

import datetime
import os
import re

import pytest
from deltalake import DeltaTable

from sparkpipes.errors import ConfigError, SinkError
from sparkpipes.sql import SemanticError
from sparkpipes.sql.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)

    def run(text):
        return session.execute(text)[-1]

    return run


def rows(result):
    return [tuple(r) for r in result.rows]


def delta(engine, table: str) -> DeltaTable:
    return DeltaTable(engine.catalog.table(table).location)


def test_drop_and_modify_rewrite_the_rows_in_one_commit_each(sql, engine):
    sql(
        "CREATE TABLE t (id BIGINT, n TEXT, d TEXT, tmp TEXT, label VARCHAR(10), "
        "twice AS (id * 2) PERSISTED BIGINT, PRIMARY KEY (id))"
    )
    sql("INSERT INTO t (id, n, d, tmp, label) VALUES (1, '10', '2024-01-02', 'x', 'a')")
    sql("INSERT INTO t (id, n, d, tmp, label) VALUES (2, NULL, NULL, 'y', 'b')")
    before = delta(engine, "t").version()

    assert sql("ALTER TABLE t DROP COLUMN tmp").message == "Query OK, 0 rows affected"
    sql("alter table t drop twice")  # a computed column; COLUMN is optional
    sql("ALTER TABLE t MODIFY COLUMN n INT")
    sql("ALTER TABLE t MODIFY d DATE")
    assert delta(engine, "t").version() == before + 4  # one commit per statement
    sql("ALTER TABLE t MODIFY label TEXT NOT NULL")  # same Spark type: only the catalog changes
    assert delta(engine, "t").version() == before + 4

    assert [r[:4] for r in sql("DESCRIBE t").rows] == [
        ("id", "BIGINT", "NO", "PRI"),
        ("n", "INT", "YES", ""),
        ("d", "DATE", "YES", ""),
        ("label", "TEXT", "NO", ""),
    ]
    assert rows(sql("SELECT * FROM t ORDER BY id")) == [
        (1, 10, datetime.date(2024, 1, 2), "a"),
        (2, None, None, "b"),
    ]
    rec = engine.catalog.table("t")
    assert rec.ddl == "`id` BIGINT, `n` INT, `d` DATE, `label` STRING"
    assert rec.computed == {} and "tmp" not in rec.options["declared"]
    assert delta(engine, "t").schema().to_arrow().names == ["id", "n", "d", "label"]
    ops = [h.get("sparkpipes.op") for h in delta(engine, "t").history(4)]
    assert ops == ["MODIFY COLUMN d", "MODIFY COLUMN n", "DROP COLUMN twice", "DROP COLUMN tmp"]
    # the table takes rows of the new shape; NOT NULL is enforced from now on
    sql("INSERT INTO t (id, n, d, label) VALUES (3, 30, '2024-03-04', 'c')")
    with pytest.raises(ConfigError, match="column 'label' is NOT NULL"):
        sql("INSERT INTO t (id) VALUES (4)")
    # MODIFY without NOT NULL takes NULLs again, except in a primary-key column
    sql("ALTER TABLE t MODIFY label TEXT")
    sql("ALTER TABLE t MODIFY id INT")
    assert [r[2] for r in sql("DESCRIBE t").rows] == ["NO", "YES", "YES", "YES"]
    assert rows(sql("SELECT id, n FROM t ORDER BY id")) == [(1, 10), (2, None), (3, 30)]


def test_each_refusal_names_what_is_in_the_way_and_changes_nothing(sql, engine):
    sql(
        "CREATE TABLE t (id BIGINT, s BIGINT, k BIGINT, ix TEXT, n TEXT, x TEXT, "
        "url TEXT, host TEXT, twice AS (n * 2) PERSISTED BIGINT, "
        "h AS (parse_url(url, 'HOST')) PERSISTED TEXT, "
        "PRIMARY KEY (id), SHARD KEY (s), SORT KEY (k))"
    )
    sql("CREATE INDEX by_ix ON t (ix)")
    sql("INSERT INTO t (id, s, k, ix, n, x) VALUES (1, 1, 1, 'i', '10', 'abc')")
    sql("INSERT INTO t (id, s, k, ix, n, x) VALUES (2, 2, 2, 'j', NULL, 'x2')")
    sql("INSERT INTO t (id, s, k, ix, n, x) VALUES (3, 3, 3, 'k', '30', '3')")
    sql("CREATE TABLE one (only_col INT)")
    version, described = delta(engine, "t").version(), sql("DESCRIBE t").rows
    refusals = [
        (
            "ALTER TABLE t DROP COLUMN nope",
            "table 't' has no column 'nope' (columns: id, s, k, ix, n, x, url, host, twice, h)",
        ),
        ("ALTER TABLE t MODIFY nope INT", "table 't' has no column 'nope' (columns: id,"),
        ("ALTER TABLE one DROP only_col", "column 'only_col' of table 'one': it is the table's"),
        ("ALTER TABLE t DROP id", "cannot drop column 'id' of table 't': it is in the PRIMARY KEY"),
        ("ALTER TABLE t DROP s", "cannot drop column 's' of table 't': it is in the SHARD KEY"),
        ("ALTER TABLE t DROP k", "cannot drop column 'k' of table 't': it is in the SORT KEY"),
        ("ALTER TABLE t DROP ix", "cannot drop column 'ix' of table 't': it is in KEY 'by_ix'"),
        ("ALTER TABLE t DROP n", "cannot drop column 'n' of table 't': computed column 'twice'"),
        ("ALTER TABLE t DROP url", "column 'url' of table 't': computed column 'h' uses it"),
        (
            "ALTER TABLE t MODIFY twice INT",
            "cannot modify column 'twice' of table 't': it is a computed column, whose type and "
            "expression cannot be modified; drop it and add it again",
        ),
        (
            "ALTER TABLE t MODIFY n BIGINT NOT NULL",
            "cannot modify column 'n' of table 't': column 'n' is NULL in a row, so it cannot "
            "be NOT NULL",
        ),
        ("ALTER TABLE t MODIFY n INT DEFAULT 0", "takes a type and NULL / NOT NULL only"),
        ("ALTER TABLE nope DROP COLUMN a", "table 'nope' does not exist"),
    ]
    for stmt, message in refusals:
        with pytest.raises(Exception, match=re.escape(message)) as err:
            sql(stmt)
        assert err.value.code in ("SP100", "SP101"), stmt
    with pytest.raises(ConfigError) as err:
        sql("ALTER TABLE t MODIFY COLUMN x INT")
    assert re.fullmatch(
        r"cannot modify column 'x' of table 't': column 'x' cannot hold (abc|x2) as INT "
        r"\(and 1 more row like it\)",
        err.value.message,
    )
    with pytest.raises(SemanticError, match="MODIFY COLUMN cannot change a computed column's"):
        sql("ALTER TABLE t MODIFY COLUMN twice AS (n * 3) PERSISTED BIGINT")
    # the error points at the column, not at a letter of the statement that happens to match
    with pytest.raises(ConfigError) as err:
        sql("ALTER TABLE t DROP COLUMN s")
    assert err.value.column == len("ALTER TABLE t DROP COLUMN s")
    assert delta(engine, "t").version() == version and sql("DESCRIBE t").rows == described
    # a name in a string literal of another computed column is not a use of the column
    sql("ALTER TABLE t DROP COLUMN host")
    assert "host" not in [r[0] for r in sql("DESCRIBE t").rows]


def test_a_rewrite_that_would_drop_a_concurrent_commit_is_refused(sql, engine, monkeypatch):
    import sparkpipes.engine.tables as tables

    sql("CREATE TABLE t (a INT, b TEXT)")
    sql("INSERT INTO t VALUES (1, 'x')")
    write_frame = tables.write_frame

    # Not a mock: the rewrite's real files are written and a real INSERT commits to the
    # real Delta table; the wrapper only picks the moment (between the rewrite's read and
    # its commit), which no real server lets a test choose.
    def racing(df, writer, prefix, table):
        files = write_frame(df, writer, prefix, table)
        if prefix == "part-alter":  # another session commits while the rows are rewritten
            monkeypatch.setattr(tables, "write_frame", write_frame)
            sql("INSERT INTO t VALUES (2, 'y')")
        return files

    monkeypatch.setattr(tables, "write_frame", racing)
    with pytest.raises(SinkError, match=r"Delta table 't' changed \(version 1 to 2\) while being"):
        sql("ALTER TABLE t DROP COLUMN b")
    assert rows(sql("SELECT a, b FROM t ORDER BY a")) == [(1, "x"), (2, "y")]
    location = engine.catalog.table("t").location
    assert not [f for f in os.listdir(location) if f.startswith("part-alter")]  # removed
    sql("ALTER TABLE t DROP COLUMN b")  # once nothing races it
    assert rows(sql("SELECT * FROM t ORDER BY a")) == [(1,), (2,)]


def test_a_pipeline_resumes_from_its_offsets_after_the_table_changed(sql, engine, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text(
        '{"id": 1, "n": "10", "x": "a", "tmp": "t"}\n{"id": 2, "n": "20", "x": "b", "tmp": "u"}\n'
    )
    sql(
        "CREATE TABLE t (id BIGINT, n TEXT, x TEXT, tmp TEXT, w TEXT, "
        "twice AS (n * 2) PERSISTED BIGINT, PRIMARY KEY (id))"
    )
    # an append (the computed column makes it stage and refine its rows)
    sql(f"CREATE PIPELINE p AS LOAD DATA FS '{src}/*.json' INTO TABLE t FORMAT JSON")
    assert "2 rows loaded" in sql("START PIPELINE p FOREGROUND").message
    app_id = f"sparkpipes:{engine.catalog.pipeline('p').id}"  # BatchRunner.app_id
    committed = delta(engine, "t").transaction_version(app_id)
    assert committed is not None
    history = len(delta(engine, "t").history())

    other = tmp_path / "other"
    other.mkdir()
    for name, load in [
        ("m", "FORMAT JSON (id <- id, x <- x)"),
        ("s", "FORMAT JSON (id <- id, @x <- x) SET x = upper(@x)"),
        ("c", "FORMAT CSV"),
    ]:
        sql(f"CREATE PIPELINE {name} AS LOAD DATA FS '{other}/*' INTO TABLE t {load}")
        how = {"m": "in its field mapping", "s": "in its SET", "c": "by position: CSV without"}
        with pytest.raises(ConfigError, match=f"pipeline '{name}' loads it \\({how[name]}"):
            sql("ALTER TABLE t DROP COLUMN x")
        sql(f"DROP PIPELINE {name}")
    sql(f"CREATE PIPELINE wh AS LOAD DATA FS '{other}/*' INTO TABLE t FORMAT JSON WHERE w <> ''")
    with pytest.raises(ConfigError, match="pipeline 'wh' uses it in its SET / WHERE; replace or"):
        sql("ALTER TABLE t DROP COLUMN w")
    sql("DROP PIPELINE wh")

    sql("ALTER TABLE t DROP COLUMN tmp")
    sql("ALTER TABLE t DROP COLUMN twice")  # p now appends straight into the table
    sql("ALTER TABLE t MODIFY COLUMN n INT NOT NULL")
    dt = delta(engine, "t")
    assert dt.transaction_version(app_id) == committed  # the offsets are where they were
    assert len(dt.history()) == history + 3  # the log kept, one commit per statement
    assert rows(sql("SELECT id, n, x FROM t ORDER BY id")) == [(1, 10, "a"), (2, 20, "b")]

    (src / "b.json").write_text('{"id": 3, "n": "30", "x": "c", "tmp": "v"}\n')
    assert "1 row loaded" in sql("START PIPELINE p FOREGROUND").message
    assert rows(sql("SELECT id, n, x, w FROM t ORDER BY id")) == [
        (1, 10, "a", None),
        (2, 20, "b", None),
        (3, 30, "c", None),
    ]
    assert delta(engine, "t").transaction_version(app_id) == committed + 1
    assert "0 rows loaded" in sql("START PIPELINE p FOREGROUND").message  # nothing twice
    # the pipeline's next batch checks the new definition: NOT NULL, INT
    (src / "c.json").write_text('{"id": 4, "x": "d"}\n')
    with pytest.raises(Exception, match="column 'n' is NOT NULL"):
        sql("START PIPELINE p FOREGROUND")
    assert sql("SELECT count(*) FROM t").rows == [(3,)]


def test_a_computed_column_added_later_is_filled_for_existing_rows(sql, engine, tmp_path):
    sql(
        "CREATE TABLE kp (topic TEXT NOT NULL, id JSON NOT NULL, record JSON NOT NULL, "
        "SORT KEY __UNORDERED (), SHARD KEY ())"
    )
    sql(
        'INSERT INTO kp VALUES (\'t\', \'1\', \'{"status": "active", "customer_id": "17"}\'), '
        '(\'t\', \'2\', \'{"status": "closed", "customer_id": "x9"}\')'
    )
    (tmp_path / "a.json").write_text(
        '{"topic": "t", "id": "3", "record": {"status": "active", "customer_id": "5"}}\n'
    )
    sql(f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' INTO TABLE kp")
    engine.run_batches("p", 3, until_idle=True)
    before = delta(engine, "kp").version()
    # seed 000's statements, verbatim
    sql(
        "ALTER TABLE kp ADD COLUMN status AS (JSON_EXTRACT_STRING(record, 'status')) "
        "PERSISTED STRING"
    )
    sql(
        "ALTER TABLE kp ADD COLUMN customer_id AS (JSON_EXTRACT_STRING(record, 'customer_id')) "
        "PERSISTED INT"
    )
    assert delta(engine, "kp").version() == before + 2  # one rewrite commit each
    got = rows(sql("SELECT id, status, customer_id FROM kp ORDER BY id"))
    assert got == [("1", "active", 17), ("2", "closed", None), ("3", "active", 5)]  # x9: NULL
    (tmp_path / "b.json").write_text(
        '{"topic": "t", "id": "4", "record": {"status": "new", "customer_id": "8"}}\n'
    )
    engine.run_batches("p", 3, until_idle=True)  # the pipeline resumes, computing both
    assert rows(sql("SELECT status, customer_id FROM kp WHERE id = '4'")) == [("new", 8)]
    assert rows(sql("SELECT count(*) FROM kp WHERE status = 'active'")) == [(2,)]

"""ALTER TABLE … DROP COLUMN / MODIFY COLUMN as a user types them, against Spark and Delta:
the rows are rewritten in one Delta commit, what is in the way is named, and a pipeline
into the table resumes from its committed offsets."""

from __future__ import annotations

import base64
import datetime
import json
import os
import re

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from sparkpipes.errors import ConfigError, SinkError
from sparkpipes.frontends.singlestore import SemanticError
from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)

    def run(text):
        return session.execute(text)[-1]

    return run


def rows(result):
    return [tuple(r) for r in result.rows]


def delta(engine, table: str) -> DeltaTable:
    return DeltaTable(engine.catalog.tables.get(table).location)


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
    rec = engine.catalog.tables.get("t")
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


def test_a_commit_made_while_the_rows_are_rewritten_is_taken_in(sql, engine, monkeypatch):
    """Nothing is mocked: the real write_frame is wrapped only to make the other writer's
    commit land at the one moment that matters, between the rewrite's read and its commit
    (a race no timing could hit reliably); the rows, the Delta log and the commit are real."""
    import sparkpipes.engine.alter as tables

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
    sql("ALTER TABLE t DROP COLUMN b")
    assert rows(sql("SELECT * FROM t ORDER BY a")) == [(1,), (2,)]  # the INSERT's row too
    ops = [h.get("sparkpipes.op", h["operation"]) for h in delta(engine, "t").history(2)]
    assert ops == ["DROP COLUMN b", "INSERT"]  # one rewrite commit, after the INSERT's
    assert pq.read_schema(delta(engine, "t").file_uris()[0]).names == ["a"]


def test_a_rewrite_that_never_gets_a_quiet_moment_gives_up_and_changes_nothing(
    sql, engine, monkeypatch
):
    import sparkpipes.engine.alter as tables

    sql("CREATE TABLE t (a INT, b TEXT)")
    sql("INSERT INTO t VALUES (1, 'x')")
    monkeypatch.setattr(tables, "REWRITE_ATTEMPTS", 2)
    write_frame = tables.write_frame
    n = iter(range(2, 100))

    def racing(df, writer, prefix, table):
        files = write_frame(df, writer, prefix, table)
        if prefix == "part-alter":  # a commit after every step of every attempt
            sql(f"INSERT INTO t VALUES ({next(n)}, 'y')")
        return files

    monkeypatch.setattr(tables, "write_frame", racing)
    version = delta(engine, "t").version()
    with pytest.raises(SinkError, match=r"changed .* while being rewritten, 2 times; nothing") as e:
        sql("ALTER TABLE t DROP COLUMN b")
    assert e.value.transient
    monkeypatch.setattr(tables, "write_frame", write_frame)
    assert delta(engine, "t").version() == version + 2  # the two INSERTs, nothing else
    assert rows(sql("SELECT a, b FROM t ORDER BY a")) == [(1, "x"), (2, "y"), (3, "y")]
    location = engine.catalog.tables.get("t").location
    assert not [f for f in os.listdir(location) if f.startswith("part-alter")]  # removed


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
    app_id = f"sparkpipes:{engine.catalog.pipelines.get('p').id}"  # BatchRunner.app_id
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


SEED_TABLE = (
    "CREATE TABLE kp (topic TEXT NOT NULL, id JSON NOT NULL, record JSON NOT NULL, "
    "SORT KEY __UNORDERED (), SHARD KEY ())"
)


def record(i: int, status: str, customer: str) -> str:
    return json.dumps(
        {"topic": "t", "id": str(i), "record": {"status": status, "customer_id": customer}}
    )


def test_a_computed_column_added_later_is_filled_for_existing_rows(sql, engine, tmp_path):
    sql(SEED_TABLE)
    sql(
        'INSERT INTO kp VALUES (\'t\', \'1\', \'{"status": "active", "customer_id": "17"}\'), '
        "('t', '2', '{\"status\": \"closed\"}')"
    )
    (tmp_path / "a.json").write_text(record(3, "active", "5") + "\n")
    sql(f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' INTO TABLE kp FORMAT JSON")
    engine.run_batches("p", 3, until_idle=True)
    app_id = f"sparkpipes:{engine.catalog.pipelines.get('p').id}"
    committed = delta(engine, "kp").transaction_version(app_id)
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
    dt = delta(engine, "kp")
    assert dt.version() == before + 2  # one rewrite commit each
    assert dt.transaction_version(app_id) == committed  # the pipeline's offsets stay
    got = rows(sql("SELECT id, status, customer_id FROM kp ORDER BY id"))
    assert got == [("1", "active", 17), ("2", "closed", None), ("3", "active", 5)]
    assert [r[:2] for r in sql("DESCRIBE kp").rows][-2:] == [
        ("status", "STRING"),
        ("customer_id", "INT"),
    ]
    (tmp_path / "b.json").write_text(record(4, "new", "8") + "\n")
    engine.run_batches("p", 3, until_idle=True)  # the pipeline resumes, computing both
    assert rows(sql("SELECT status, customer_id FROM kp WHERE id = '4'")) == [("new", 8)]
    assert rows(sql("SELECT count(*) FROM kp WHERE status = 'active'")) == [(2,)]


def test_a_computed_value_the_type_cannot_hold_fails_the_statement(sql, engine):
    """As such a row fails an INSERT and is a bad record to a pipeline, the table never
    holds a computed value that is not its expression's: nothing changes."""
    sql(SEED_TABLE)
    for i, customer in enumerate(["17", "x9", "n/a", None]):
        value = json.dumps({"customer_id": customer})
        sql(f"INSERT INTO kp VALUES ('t', '{i}', '{value}')")
    version, described = delta(engine, "kp").version(), sql("DESCRIBE kp").rows
    with pytest.raises(ConfigError) as err:
        sql(
            "ALTER TABLE kp ADD COLUMN customer_id AS "
            "(JSON_EXTRACT_STRING(record, 'customer_id')) PERSISTED INT"
        )
    assert re.fullmatch(
        r"cannot add column 'customer_id' to table 'kp': column 'customer_id' cannot hold "
        r"(x9|n/a) as INT \(and 1 more row like it\)",
        err.value.message,
    )
    assert delta(engine, "kp").version() == version and sql("DESCRIBE kp").rows == described
    location = engine.catalog.tables.get("kp").location
    assert not [f for f in os.listdir(location) if f.startswith("part-alter")]
    # an expression that says what such a value is makes it NULL instead
    sql(
        "ALTER TABLE kp ADD COLUMN customer_id AS (CASE WHEN JSON_EXTRACT_STRING(record, "
        "'customer_id') RLIKE '^[0-9]+$' THEN JSON_EXTRACT_STRING(record, 'customer_id') END) "
        "PERSISTED INT"
    )
    got = rows(sql("SELECT id, customer_id FROM kp ORDER BY id"))
    assert got == [("0", 17), ("1", None), ("2", None), ("3", None)]


def test_the_seed_base64_column_is_computed_for_rows_already_there(sql, engine):
    sql(
        "CREATE TABLE parsed_kinesis_stream (partitionKey BIGINT, sequence_number VARCHAR(255), "
        "shardId VARCHAR(255), data_base64 VARCHAR(255))"
    )
    data = [
        base64.b64encode(json.dumps({"customer_id": f"c{i}"}).encode()).decode() for i in (1, 2)
    ]
    sql(
        "INSERT INTO parsed_kinesis_stream (partitionKey, data_base64) VALUES "
        + ", ".join(f"({i}, '{d}')" for i, d in enumerate(data))
    )
    sql(
        "ALTER TABLE parsed_kinesis_stream ADD COLUMN "
        "parsed_data AS FROM_BASE64(data_base64) PERSISTED VARCHAR(255)"
    )
    sql("INSERT INTO parsed_kinesis_stream (partitionKey, data_base64) VALUES (2, 'e30=')")
    got = sql(
        "SELECT partitionKey, JSON_EXTRACT_STRING(parsed_data, 'customer_id') AS c, parsed_data "
        "FROM parsed_kinesis_stream ORDER BY partitionKey"
    )
    assert rows(got) == [
        (0, "c1", '{"customer_id": "c1"}'),
        (1, "c2", '{"customer_id": "c2"}'),
        (2, None, "{}"),
    ]


def test_a_rewrite_goes_in_steps_and_tells_its_progress(engine, monkeypatch):
    """The step size is shrunk to 2 rows (a setting, not a mock) so that a few rows show
    several steps."""
    import sparkpipes.engine.alter as tables

    told = []
    session = SqlSession(engine, progress=told.append)
    session.execute(SEED_TABLE)
    for i in range(5):  # five commits: five files of one row
        session.execute(f"INSERT INTO kp VALUES ('t', '{i}', '{{\"status\": \"s{i}\"}}')")
    monkeypatch.setattr(tables, "REWRITE_STEP_ROWS", 2)
    version = delta(engine, "kp").version()
    session.execute(
        "ALTER TABLE kp ADD COLUMN status AS (JSON_EXTRACT_STRING(record, 'status')) "
        "PERSISTED STRING"
    )
    assert [(p.rows_done, p.rows_total, p.files_done, p.files_total) for p in told] == [
        (2, 5, 2, 5),
        (4, 5, 4, 5),
        (5, 5, 5, 5),
    ]
    assert str(told[0]) == "ALTER TABLE kp ADD COLUMN status: 2 of 5 rows (40%), 2 of 5 files"
    assert delta(engine, "kp").version() == version + 1  # still one commit
    got = rows(session.execute("SELECT id, status FROM kp ORDER BY id")[0])
    assert got == [(str(i), f"s{i}") for i in range(5)]


def test_a_pipeline_of_another_process_loading_meanwhile_loses_nothing(
    sql, engine, tmp_path, monkeypatch
):
    """Another Engine on the warehouse stands for another process: its pipeline's lock is
    not this one's. Its batch committed during the rewrite is rewritten too; its next
    batch, assembled before the ALTER, is refused by the table (its columns changed) and
    retried assembled from the new definition: every row has the computed value."""
    import sparkpipes.engine.alter as tables
    from sparkpipes import Engine

    src = tmp_path / "in"
    src.mkdir()
    sql(SEED_TABLE)
    (src / "a.json").write_text(record(1, "active", "1") + "\n")
    sql(f"CREATE PIPELINE p AS LOAD DATA FS '{src}/*.json' INTO TABLE kp FORMAT JSON")
    other = Engine(engine.warehouse)
    try:
        other.run_batches("p", 1)  # assembled now, with the table's three columns
        write_frame = tables.write_frame

        def racing(df, writer, prefix, table):
            files = write_frame(df, writer, prefix, table)
            if prefix == "part-alter":
                monkeypatch.setattr(tables, "write_frame", write_frame)
                (src / "b.json").write_text(record(2, "closed", "2") + "\n")
                assert other.run_batches("p", 1)[0].rows == 1
            return files

        monkeypatch.setattr(tables, "write_frame", racing)
        sql(
            "ALTER TABLE kp ADD COLUMN status AS (JSON_EXTRACT_STRING(record, 'status')) "
            "PERSISTED STRING"
        )
        (src / "c.json").write_text(record(3, "new", "3") + "\n")
        assert other.run_batches("p", 1)[0].rows == 1
        assert other.pipeline("p").last_error is None
    finally:
        other.close()
    got = rows(sql("SELECT id, status FROM kp ORDER BY id"))
    assert got == [("1", "active"), ("2", "closed"), ("3", "new")]

"""SQL statements run by SqlSession against the real broker, Spark and Delta."""

from __future__ import annotations

import json
import logging

import pytest

from sparkpipes.errors import ConfigError, NotFoundError, SparkpipesError
from sparkpipes.frontends.singlestore import ParseError
from sparkpipes.frontends.singlestore.executor import QueryError, SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)

    def run(text):
        results = session.execute(text)
        return results[-1]

    return run


def rows(result):
    return [tuple(r) for r in result.rows]


def test_pipeline_with_mapping_set_where_and_computed_columns(sql, broker, topic):
    recs = [
        {"id": i, "p": {"name": f"n{i}"}, "status": "active" if i % 2 else "idle"}
        for i in range(40)
    ]
    broker.produce(topic, [json.dumps(r) for r in recs], partitions=4)
    sql(
        """
        CREATE TABLE ev (id BIGINT, name VARCHAR(20), status TEXT, raw JSON,
          twice AS id * 2 PERSISTED BIGINT,
          st AS (JSON_EXTRACT_STRING(raw, 'status')) PERSISTED TEXT,
          SHARD KEY (id), SORT KEY (id));
        """
    )
    sql(
        f"""
        CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}'
          BATCH_INTERVAL 100 MAX_OFFSETS_PER_BATCH_PARTITION 4
          INTO TABLE ev FORMAT JSON (id <- id, @n <- p::name, raw <- %, status <- status)
          SET name = upper(@n) WHERE status = 'active';
        """
    )
    preview = sql("TEST PIPELINE p LIMIT 3")
    assert preview.columns == ["id", "@n", "raw", "status"] and len(preview.rows) == 3
    assert sql("SELECT count(*) FROM ev").rows == [(0,)]  # TEST loads nothing
    assert "20 rows loaded" in sql("START PIPELINE p FOREGROUND").message
    got = rows(sql("SELECT id, name, twice, st FROM ev ORDER BY id"))
    assert got == [(i, f"N{i}", 2 * i, "active") for i in range(1, 40, 2)]
    # the JSON helpers of the seeds, on Spark
    q = sql(
        "SELECT raw::$status, raw::p::$name, JSON_EXTRACT_STRING(raw, 'p', 'name'),"
        " JSON_EXTRACT_BIGINT(raw, 'id') FROM ev WHERE id = 3"
    )
    assert rows(q) == [("active", "n3", "n3", 3)]
    # batches were limited to 4 records per partition: several of them, chained
    summary = sql(
        "SELECT BATCH_ID, BATCH_STATE, BATCH_ROWS_WRITTEN FROM "
        "information_schema.PIPELINES_BATCHES_SUMMARY WHERE PIPELINE_NAME = 'p' ORDER BY BATCH_ID"
    )
    assert len(summary.rows) >= 3 and sum(r[2] for r in summary.rows) == 20


def test_information_schema_views_are_tables(sql, broker, topic):
    broker.produce(topic, [json.dumps({"a": i}) for i in range(8)] + ["{bad"], partitions=4)
    sql("CREATE TABLE t (a INT)")
    sql(
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "SKIP PARSER ERRORS INTO TABLE t FORMAT JSON"
    )
    sql("START PIPELINE p FOREGROUND")
    joined = sql(
        "SELECT p.PIPELINE_NAME, p.STATE, count(e.BATCH_ID) AS errors "
        "FROM information_schema.PIPELINES p "
        "LEFT JOIN information_schema.PIPELINES_ERRORS e ON p.PIPELINE_NAME = e.PIPELINE_NAME "
        "GROUP BY p.PIPELINE_NAME, p.STATE"
    )
    assert rows(joined) == [("p", "Stopped", 1)]
    err = sql(
        "SELECT ERROR_CODE, BATCH_SOURCE_PARTITION_ID, BATCH_OFFSET, LOAD_DATA_LINE "
        "FROM information_schema.PIPELINES_ERRORS"
    )
    assert rows(err) == [("SP300", "0", "2", "{bad")]
    offsets = sql(
        "SELECT TASK_ID, KEY, VALUE FROM information_schema.PIPELINES_SOURCE_OFFSETS "
        "WHERE PIPELINE_NAME = 'p' ORDER BY TASK_ID"
    )
    assert [json.loads(r[1])["partition"] for r in offsets.rows] == [0, 1, 2, 3]
    assert [json.loads(r[2]) for r in offsets.rows] == [
        {"offset": 3},
        {"offset": 2},
        {"offset": 2},
        {"offset": 2},
    ]
    per_task = sql(
        "SELECT TASK_ID, COUNT(*) AS offset_count FROM information_schema.PIPELINES_SOURCE_OFFSETS "
        "WHERE PIPELINE_NAME = 'p' GROUP BY TASK_ID ORDER BY TASK_ID"
    )
    assert rows(per_task) == [(0, 1), (1, 1), (2, 1), (3, 1)]
    lag = sql(
        "SELECT SOURCE_PARTITION_ID, COMMITTED_OFFSET, LAG FROM information_schema.PIPELINES_OFFSETS"
    )
    assert sorted(rows(lag)) == [("0", "3", 0), ("1", "2", 0), ("2", "2", 0), ("3", "2", 0)]
    parts = sql(
        "SELECT count(*) FROM information_schema.PIPELINES_BATCHES WHERE PIPELINE_NAME = 'p'"
    )
    assert parts.rows[0][0] == 4
    assert sql("SELECT count(*) FROM information_schema.PIPELINES_CURSORS").rows == [(4,)]


def test_alter_offsets_show_create_and_lifecycle(sql, engine, broker, topic):
    broker.produce(topic, [json.dumps({"a": i}) for i in range(20)], partitions=4)
    sql("CREATE TABLE t (a INT)")
    sql(
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        'CONFIG \'{"client.id": "me"}\' '
        'CREDENTIALS \'{"sasl.username": "u", "sasl.password": "hunter2"}\' '
        "BATCH_INTERVAL 50 INTO TABLE t FORMAT JSON"
    )
    shown = sql("SHOW CREATE PIPELINE p").rows[0][1]
    assert "hunter2" not in shown and '"sasl.password": "<redacted>"' in shown
    assert 'CONFIG \'{"client.id": "me"}\'' in shown and "BATCH_INTERVAL 50" in shown
    sql("ALTER PIPELINE p SET OFFSETS LATEST")
    broker.produce(topic, [json.dumps({"a": 100 + i}) for i in range(4)], partitions=4)
    sql("START PIPELINE p FOREGROUND")
    assert sorted(r[0] for r in sql("SELECT a FROM t").rows) == [100, 101, 102, 103]
    sql("ALTER PIPELINE p SET OFFSETS '{\"0\": 0}'")
    sql("START PIPELINE p FOREGROUND LIMIT 1 BATCHES")
    assert sql("SELECT count(*) FROM t").rows == [(10,)]  # partition 0 re-read: 5 + 1 + 4
    sql("ALTER PIPELINE p SET BATCH_INTERVAL 75, SET MAX_PARTITIONS_PER_BATCH 2")
    assert engine.spec("p").batch.interval_ms == 75
    assert engine.spec("p").batch.max_partitions == 2
    assert sql("SHOW PIPELINES").rows == [("p", "Stopped")]
    sql("START PIPELINE p")
    assert sql("SHOW PIPELINES").rows == [("p", "Running")]
    sql("STOP PIPELINE p")
    sql("DROP PIPELINE p")
    assert sql("SHOW PIPELINES").rows == []
    with pytest.raises(NotFoundError, match="pipeline 'p' does not exist"):
        sql("START PIPELINE p")


def test_tables_insert_describe_and_variables(sql):
    sql(
        "CREATE TABLE k (id BIGINT, s VARCHAR(10), n DECIMAL(10,2), d AS id + 1 PERSISTED BIGINT, PRIMARY KEY (id))"
    )
    assert "2 rows affected" in sql("INSERT INTO k (id, s) VALUES (1, 'a'), (2, 'b')").message
    sql("INSERT INTO k (id, s, n) SELECT id + 10, upper(s), 1.5 FROM k")
    assert [float(r[0]) for r in sql("SELECT n FROM k WHERE id > 10").rows] == [1.5, 1.5]
    got = rows(sql("SELECT id, s, d FROM k ORDER BY id"))
    assert got == [(1, "a", 2), (2, "b", 3), (11, "A", 12), (12, "B", 13)]
    desc = sql("DESCRIBE k")
    assert desc.columns[:4] == ["Field", "Type", "Null", "Key"]
    assert desc.rows[0][:4] == ("id", "BIGINT", "NO", "PRI")  # a primary key is NOT NULL
    assert desc.rows[3][5] == "computed: id + 1"
    sql("ALTER TABLE k ADD COLUMN tag AS (concat(s, '!')) PERSISTED STRING")
    sql("CREATE INDEX by_tag ON k (tag)")
    sql("INSERT INTO k (id, s) VALUES (3, 'c')")
    assert rows(sql("SELECT tag FROM k WHERE id = 3")) == [("c!",)]
    assert rows(sql("SHOW TABLES LIKE 'k%'")) == [("k",)]
    sql('SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"')
    shown = sql("SHOW VARIABLES LIKE 'experimental_features_config'")
    assert rows(shown) == [("experimental_features_config", "kafka_connect_enabled=true")]
    with pytest.raises(ConfigError, match="unknown system variable 'no_such_var'"):
        sql("SET GLOBAL no_such_var = 1")
    sql("DROP TABLE k")
    assert sql("SHOW TABLES").rows == []


def test_file_pipeline_in_sql_with_csv_options(sql, tmp_path):
    (tmp_path / "a.csv").write_text("id|name\n1|'x|y'\n2|z\n")
    sql("CREATE TABLE f (id INT, name TEXT)")
    sql(
        f"CREATE PIPELINE fp AS LOAD DATA FS '{tmp_path}/*.csv' INTO TABLE f "
        "FIELDS TERMINATED BY '|' ENCLOSED BY '''' IGNORE 1 LINES (id, name)"
    )
    sql("START PIPELINE fp FOREGROUND")
    assert rows(sql("SELECT id, name FROM f ORDER BY id")) == [(1, "x|y"), (2, "z")]
    files = sql("SELECT FILE_NAME, FILE_STATE FROM information_schema.PIPELINES_FILES")
    assert rows(files) == [(str(tmp_path / "a.csv"), "Loaded")]


def test_errors_are_clear_and_name_the_problem(sql, caplog):
    with pytest.raises(ParseError) as e:
        sql("CREATE PIPELINE p AS LOAD DATA INTO TABLE t")
    assert "line 1, column 32" in str(e.value) and "^" in str(e.value)
    with pytest.raises(ConfigError, match=r"unknown connector\.class 'x'"):
        sql(
            "CREATE INFERRED PIPELINE k AS LOAD DATA KAFKACONNECT 'kafka-connector' "
            "CONFIG '{\"connector.class\": \"x\"}' CREDENTIALS '{}' FORMAT AVRO INTO TABLE t"
        )
    with pytest.raises(ConfigError, match="'gcs' is not supported yet"):
        sql("CREATE TABLE t (a INT); CREATE PIPELINE s AS LOAD DATA GCS 'bucket/x' INTO TABLE t")
    with pytest.raises(QueryError) as q:
        sql("SELECT nope FROM t")
    assert "nope" in str(q.value) and "Traceback" not in str(q.value)
    with pytest.raises(NotFoundError) as nf:
        sql("SHOW TABLES;\n  DESCRIBE missing")
    assert "at line 2, column 12:\n  DESCRIBE missing\n           ^" in str(nf.value)
    with pytest.raises(SparkpipesError, match="INTO PROCEDURE"):
        sql("CREATE PIPELINE pp AS LOAD DATA KAFKA 'h:1/t' INTO PROCEDURE proc")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_replace_and_ignore_into_table_upsert_by_primary_key(sql, broker, topic):
    def send(pairs, partition):
        broker.produce(topic, [json.dumps({"k": k, "v": v}) for k, v in pairs], partition=partition)

    sql(
        "CREATE TABLE latest (k INT, v TEXT, PRIMARY KEY (k)); CREATE TABLE first (k INT, v TEXT, PRIMARY KEY (k))"
    )
    sql("CREATE TABLE nokey (k INT, v TEXT)")
    for name, mode, table in (("r", "REPLACE", "latest"), ("i", "IGNORE", "first")):
        sql(
            f"CREATE PIPELINE {name} AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f"{mode} INTO TABLE {table} FORMAT JSON"
        )
    send([(1, "a"), (2, "b"), (1, "a2")], partition=0)  # a key twice in one batch
    sql("START PIPELINE r FOREGROUND; START PIPELINE i FOREGROUND")
    send([(2, "b2"), (3, "c")], partition=1)  # a key again in a later batch
    sql("START PIPELINE r FOREGROUND; START PIPELINE i FOREGROUND")
    assert rows(sql("SELECT k, v FROM latest ORDER BY k")) == [(1, "a2"), (2, "b2"), (3, "c")]
    assert rows(sql("SELECT k, v FROM first ORDER BY k")) == [(1, "a"), (2, "b"), (3, "c")]
    assert "REPLACE INTO TABLE" in sql("SHOW CREATE PIPELINE r").rows[0][1]
    with pytest.raises(
        ConfigError, match=r"needs a PRIMARY KEY \(or one UNIQUE KEY\) on table 'nokey'"
    ):
        sql(
            f"CREATE PIPELINE n AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' REPLACE INTO TABLE nokey FORMAT JSON"
        )


def test_reporting_counts_loaded_batches_and_describes_views(sql, engine, tmp_path):
    (tmp_path / "in.json").write_text('{"a": 1}\n{"a": 2}\n')
    sql("CREATE TABLE t (a BIGINT)")
    sql(f"CREATE PIPELINE fp AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE t FORMAT JSON")
    msg = sql("START PIPELINE fp FOREGROUND LIMIT 3 BATCHES").message
    assert msg == "Query OK, 2 rows loaded in 1 batch (3 run)"
    described = sql("DESCRIBE information_schema.PIPELINES_BATCHES_SUMMARY")
    assert described.columns[:2] == ["Field", "Type"]
    types = {r[0]: r[1] for r in described.rows}
    assert types["BATCH_ID"] == "BIGINT" and types["BATCH_END_TIME"] == "TIMESTAMP"
    start, end = sql(
        "SELECT BATCH_START_TIME, BATCH_END_TIME FROM information_schema.PIPELINES_BATCHES_SUMMARY"
    ).rows[0]
    assert start <= end
    assert [r[0] for r in sql("DESC t").rows] == ["a"]
    with pytest.raises(NotFoundError, match=r"information_schema\.NOPE does not exist"):
        sql("DESCRIBE information_schema.NOPE")
    with pytest.raises(NotFoundError, match="Unknown database 'other'"):
        sql("DESCRIBE other.t")


def test_describe_shows_declared_types_and_seed_keyless_tables_are_accepted(sql):
    """Seed 000's inferred-table DDL: empty SHARD KEY, SORT KEY __UNORDERED ()."""
    sql(
        "CREATE TABLE kc (topic TEXT, id BIGINT UNSIGNED, record JSON, s VARCHAR(20), "
        "SHARD KEY (), SORT KEY __UNORDERED ())"
    )
    types = {r[0]: r[1] for r in sql("DESCRIBE kc").rows}
    assert types == {"topic": "TEXT", "id": "BIGINT UNSIGNED", "record": "JSON", "s": "VARCHAR(20)"}
    sql("ALTER TABLE kc ADD COLUMN extra JSON")
    assert sql("DESCRIBE kc").rows[-1][:2] == ("extra", "JSON")


def test_computed_columns_are_checked_at_create_and_seed_functions_work(sql):
    sql(
        "CREATE TABLE parsed (data_base64 VARCHAR(255), "
        "parsed_data AS FROM_BASE64(data_base64) PERSISTED VARCHAR(255))"
    )
    sql("INSERT INTO parsed (data_base64) VALUES ('eyJzdGF0dXMiOiAiYWN0aXZlIn0=')")
    got = sql(
        "SELECT parsed_data, JSON_EXTRACT_STRING(FROM_BASE64(data_base64), 'status'), "
        "TO_BASE64(parsed_data) FROM parsed"
    )
    assert rows(got) == [('{"status": "active"}', "active", "eyJzdGF0dXMiOiAiYWN0aXZlIn0=")]
    with pytest.raises(ConfigError, match="computed column 'd' of table 'bad' is invalid") as e:
        sql("CREATE TABLE bad (a TEXT, d AS NO_SUCH_FN(a) PERSISTED TEXT)")
    assert "UNRESOLVED_ROUTINE" in str(e.value)
    assert "bad" not in [r[0] for r in sql("SHOW TABLES").rows]
    with pytest.raises(ConfigError, match="computed column 'e' of table 'parsed'"):
        sql("ALTER TABLE parsed ADD COLUMN e AS nope + 1 PERSISTED INT")
    assert [r[0] for r in sql("DESCRIBE parsed").rows] == ["data_base64", "parsed_data"]


def test_not_null_is_enforced_at_ingest_and_on_insert(sql, engine, tmp_path):
    (tmp_path / "in.json").write_text(
        '{"id": 1, "s": "a"}\n{"id": 2}\n{"s": "c"}\n{"id": 4, "s": "d"}\n'
    )
    sql("CREATE TABLE nn (id BIGINT NOT NULL, s TEXT, PRIMARY KEY (id))")
    assert [r[2] for r in sql("DESCRIBE nn").rows] == ["NO", "YES"]
    with pytest.raises(ConfigError, match="cannot insert into table 'nn': column 'id' is NOT NULL"):
        sql("INSERT INTO nn VALUES (NULL, 'x')")
    sql(f"CREATE PIPELINE strict AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE nn FORMAT JSON")
    with pytest.raises(SparkpipesError, match=r"in\.json' byte 30: column 'id' is NOT NULL"):
        sql("START PIPELINE strict FOREGROUND")
    assert sql("SELECT count(*) FROM nn").rows == [(0,)]  # the failed batch loaded nothing
    sql(
        f"CREATE PIPELINE lenient AS LOAD DATA FS '{tmp_path}/in.json' "
        "SKIP CONSTRAINT ERRORS INTO TABLE nn FORMAT JSON"
    )
    sql("START PIPELINE lenient FOREGROUND")
    assert rows(sql("SELECT id, s FROM nn ORDER BY id")) == [(1, "a"), (2, None), (4, "d")]
    (err,) = engine.errors("lenient")
    assert (err["offset"], err["kind"], err["partition"]) == (
        30,
        "parse",
        str(tmp_path / "in.json"),
    )
    assert "column 'id' is NOT NULL" in err["reason"] and err["excerpt"] == '{"s": "c"}'
    # a NOT NULL column that SET fills is checked after SET, at the same partition/offset
    sql("CREATE TABLE up (id BIGINT, u TEXT NOT NULL)")
    sql(
        f"CREATE PIPELINE setter AS LOAD DATA FS '{tmp_path}/in.json' SKIP CONSTRAINT ERRORS "
        "INTO TABLE up FORMAT JSON (id <- id DEFAULT NULL, @s <- s DEFAULT NULL) "
        "SET u = upper(@s)"
    )
    sql("START PIPELINE setter FOREGROUND")
    assert rows(sql("SELECT id, u FROM up ORDER BY id")) == [(None, "C"), (1, "A"), (4, "D")]
    (err,) = engine.errors("setter")
    assert (err["offset"], err["reason"]) == (20, "column 'u' is NOT NULL but gets no value")


def test_a_value_a_column_cannot_hold_is_a_bad_record_not_a_poisoned_table(sql, engine, tmp_path):
    (tmp_path / "in.json").write_text(
        '{"id": 1, "s": "12"}\n{"id": 2, "s": "abc"}\n{"id": 3, "s": "7"}\n{"id": 4, "s": "x1"}\n'
    )
    sql("CREATE TABLE c (id BIGINT, s TEXT, n AS (s) PERSISTED INT, PRIMARY KEY (id))")
    with pytest.raises(ConfigError, match="'c': column 'n' cannot hold abc as INT"):
        sql("INSERT INTO c (id, s) VALUES (9, 'abc')")  # the statement fails, whole
    sql("INSERT INTO c (id, s) VALUES (10, '10')")  # and the table takes the next one
    sql(f"CREATE PIPELINE strict AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE c FORMAT JSON")
    with pytest.raises(
        SparkpipesError,
        match=r"in\.json' byte 21: column 'n' cannot hold abc as INT \(pipeline 'strict'",
    ) as err:
        sql("START PIPELINE strict FOREGROUND")
    assert err.value.partition == str(tmp_path / "in.json") and err.value.offset == 21
    assert engine.pipeline("strict").state == "Error"
    assert rows(sql("SELECT id FROM c")) == [(10,)]  # the failed batch loaded nothing
    for name, write in (("appended", ""), ("upserted", "REPLACE ")):
        sql(
            f"CREATE PIPELINE {name} AS LOAD DATA FS '{tmp_path}/in.json' "
            f"SKIP CONSTRAINT ERRORS {write}INTO TABLE c FORMAT JSON"
        )
        sql(f"START PIPELINE {name} FOREGROUND")
        errs = engine.errors(name)
        assert [(e["offset"], e["kind"]) for e in errs] == [(21, "parse"), (63, "parse")]
        assert errs[1]["reason"] == "column 'n' cannot hold x1 as INT"
        assert errs[0]["partition"] == str(tmp_path / "in.json")
    # the good records once each (the upsert replaced what the append loaded)
    assert rows(sql("SELECT id, n FROM c ORDER BY id")) == [(1, 12), (3, 7), (10, 10)]

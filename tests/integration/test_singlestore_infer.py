"""``INFER PIPELINE | TABLE`` and ``CREATE INFERRED PIPELINE`` as SingleStore documents them
(pipelines-commands/infer-pipeline, create-inferred-pipeline, schema-and-pipeline-
inference): INFER answers the CREATE TABLE and CREATE PIPELINE it infers from what the
source holds (default format CSV), makes nothing, and its answer runs as it is; CREATE
INFERRED PIPELINE makes the table (named as the pipeline) and the pipeline, which loads what
SingleStore's would. ``FLUSH EXTRACTOR POOLS`` is accepted and does nothing."""

from __future__ import annotations

import json

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpipes.errors import AccessDeniedError, ConfigError, SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession

CANARY = "infer-Secret-9f2e"

# the Avro schema of SingleStore's INFER / CREATE INFERRED PIPELINE examples (books)
BOOKS = {
    "namespace": "books.avro",
    "type": "record",
    "name": "Book",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "num_pages", "type": "int"},
        {"name": "rating", "type": "double"},
        {"name": "publish_timestamp", "type": "long", "logicalType": "timestamp-micros"},
    ],
}


def rows(session, text):
    return sorted(tuple(r) for r in session.execute(text)[-1].rows)


def test_infer_pipeline_answers_ddl_that_runs_and_loads_the_file(engine, tmp_path):
    (tmp_path / "a.csv").write_text('id,city,temp\n1,Oslo,-3.5\n2,"Rome, IT",18\n3,Lima,\n')
    sql = SqlSession(engine)
    (answer,) = sql.execute(f"INFER PIPELINE AS LOAD DATA FS '{tmp_path}/*.csv'")
    assert len(answer.columns) == 1 and len(answer.rows) == 1
    text = answer.rows[0][0]
    table, pipeline = text.split(";\n\n")
    assert table.startswith("CREATE TABLE infer_example_table (\nid bigint(20) NULL,\n")
    assert "city text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL" in table
    assert "temp double NULL" in table
    assert pipeline.startswith("CREATE PIPELINE infer_example_pipeline AS LOAD DATA FS")
    assert "INTO TABLE infer_example_table FORMAT CSV FIELDS TERMINATED BY ','" in pipeline
    assert "IGNORE 1 LINES (id, city, temp)" in pipeline
    assert engine.tables() == [] and engine.pipelines() == []  # INFER makes nothing
    (only,) = sql.execute(f"INFER TABLE AS LOAD DATA FS '{tmp_path}/*.csv'")
    assert only.rows[0][0] == table + ";"
    sql.execute(text)  # the answer runs as it is
    sql.execute("START PIPELINE infer_example_pipeline FOREGROUND")
    assert rows(sql, "SELECT id, city, temp FROM infer_example_table") == [
        (1, "Oslo", -3.5),
        (2, "Rome, IT", 18.0),
        (3, "Lima", None),
    ]


def test_create_inferred_pipeline_of_avro_files_makes_the_books_table(engine, tmp_path):
    with open(tmp_path / "books.avro", "wb") as f:
        fastavro.writer(
            f,
            fastavro.parse_schema(BOOKS),
            [
                {"id": 1, "name": "A", "num_pages": 10, "rating": 4.5, "publish_timestamp": 7},
                {"id": 2, "name": "B", "num_pages": 20, "rating": 3.0, "publish_timestamp": 8},
            ],
        )
    sql = SqlSession(engine)
    (made,) = sql.execute(
        f"CREATE INFERRED PIPELINE books_pipe AS LOAD DATA FS '{tmp_path}/books.avro' FORMAT AVRO"
    )
    assert made.message.startswith("Query OK")
    assert engine.tables() == ["books_pipe"]  # a table of the pipeline's name
    described = [tuple(r[:3]) for r in sql.execute("DESCRIBE books_pipe")[0].rows]
    assert described == [
        ("id", "INT(11)", "NO"),
        ("name", "TEXT", "NO"),
        ("num_pages", "INT(11)", "NO"),
        ("rating", "DOUBLE", "NO"),
        ("publish_timestamp", "BIGINT(20)", "NO"),  # a logical type keeps its long
    ]
    shown = rows(sql, "SHOW CREATE PIPELINE books_pipe")[0][1]
    assert "INTO TABLE books_pipe FORMAT AVRO (id <- id, name <- name" in shown
    sql.execute("START PIPELINE books_pipe FOREGROUND")
    assert rows(sql, "SELECT * FROM books_pipe") == [(1, "A", 10, 4.5, 7), (2, "B", 20, 3.0, 8)]
    # NOT NULL as the schema says: the table refuses a NULL name
    with pytest.raises(SparkpipesError):
        sql.execute("INSERT INTO books_pipe VALUES (3, NULL, 1, 1.0, 1)")


def test_json_parquet_and_a_topic_of_json_messages(engine, tmp_path, broker, topic):
    sql = SqlSession(engine)
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "a.json").write_text(
        '{"id": 1, "tags": ["x"], "ok": true}\n{"id": 2, "ok": false, "v": 2.5}\n'
    )
    sql.execute(f"CREATE INFERRED PIPELINE j AS LOAD DATA FS '{tmp_path}/j/*.json' FORMAT JSON")
    sql.execute("START PIPELINE j FOREGROUND")
    assert rows(sql, "SELECT id, tags, ok, v FROM j") == [(1, '["x"]', 1, None), (2, None, 0, 2.5)]
    (tmp_path / "p").mkdir()
    pq.write_table(
        pa.table({"a": pa.array([1, 2], pa.int16()), "b": ["x", None]}),
        tmp_path / "p" / "a.parquet",
    )
    sql.execute(f"CREATE INFERRED PIPELINE pp AS LOAD DATA FS '{tmp_path}/p' FORMAT PARQUET")
    sql.execute("START PIPELINE pp FOREGROUND")
    assert rows(sql, "SELECT a, b FROM pp") == [(1, "x"), (2, None)]
    broker.produce(topic, [json.dumps({"k": i, "name": f"n{i}"}) for i in range(3)], partitions=1)
    (answer,) = sql.execute(
        f"INFER PIPELINE AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' FORMAT JSON"
    )
    assert "k bigint(20) NULL" in answer.rows[0][0]
    assert "FORMAT JSON (k <- k, name <- name)" in answer.rows[0][0]


def test_infer_never_shows_credentials_and_reads_as_the_pipeline_would(engine, broker, topic):
    """A link's pipeline is answered as LOAD DATA LINK (its credentials are not the user's
    to see); INFER of the server's files needs FILE READ, as CREATE PIPELINE does; a
    source with nothing in it, and AS JSON, say so."""
    broker.produce(topic, [json.dumps({"id": 1})], partitions=1)
    owner = SqlSession(engine)
    config = json.dumps({"bootstrap.servers": broker.bootstrap})
    owner.execute(
        f"CREATE LINK kl AS KAFKA CONFIG '{config}' CREDENTIALS "
        f"'{json.dumps({'sasl.password': CANARY})}'"
    )
    (answer,) = owner.execute(f"INFER PIPELINE AS LOAD DATA LINK kl '{topic}' FORMAT JSON")
    assert f"AS LOAD DATA LINK kl '{broker.bootstrap}/{topic}'" in answer.rows[0][0]
    assert CANARY not in answer.rows[0][0] and "CREDENTIALS" not in answer.rows[0][0]
    owner.execute("CREATE USER ana IDENTIFIED BY 'a'; CREATE USER bo IDENTIFIED BY 'b'")
    bo = SqlSession(engine, user="bo")
    with pytest.raises(AccessDeniedError, match="FILE READ"):
        bo.execute("INFER PIPELINE AS LOAD DATA FS '/etc/*.conf'")
    with pytest.raises(ConfigError, match="nothing to infer from"):
        owner.execute(f"INFER PIPELINE AS LOAD DATA FS '{engine.warehouse}/none/*.csv'")
    with pytest.raises(SparkpipesError, match="AS JSON is not supported"):
        owner.execute("INFER PIPELINE AS LOAD DATA FS '/x' AS JSON")
    (flushed,) = owner.execute("FLUSH EXTRACTOR POOLS")
    assert flushed.message.startswith("Query OK, 0 rows affected")
    bo.execute("FLUSH NODE EXTRACTOR POOLS")  # nothing to flush: no privilege needed

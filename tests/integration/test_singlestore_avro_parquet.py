"""What FORMAT AVRO and FORMAT PARQUET pipelines made from SingleStore SQL load, through
real files, Spark and Delta, against SingleStore's documented extraction and conversion:

- https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/load-avro-files-examples
- https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/extracting-and-converting-avro-values
- https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-parquet-files/create-a-parquet-pipeline
"""

from __future__ import annotations

import io
import json
import math

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)
    return lambda text: session.execute(text)[-1]


def rows(result):
    return [tuple(r) for r in result.rows]


def write_avro(path, schema, records):
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records)


def test_load_avro_files_example_1(sql, tmp_path):
    """Load Avro Files Examples, Example 1, as written there (a pipeline in place of
    LOAD DATA): the union's string branch, NULL where it holds null, and the record as
    its Avro JSON encoding in a JSON column."""
    schema = {
        "type": "record",
        "name": "data",
        "fields": [{"name": "id", "type": "long"}, {"name": "payload", "type": ["null", "string"]}],
    }
    write_avro(
        tmp_path / "example.avro",
        schema,
        [{"id": 1, "payload": "first"}, {"id": 1, "payload": "second"}, {"id": 1, "payload": None}],
    )
    sql("CREATE TABLE t(payload TEXT, input_record JSON)")
    sql(
        f"CREATE PIPELINE ex1 AS LOAD DATA FS '{tmp_path}/example.avro' INTO TABLE t "
        "FORMAT AVRO ( payload <- %::payload::string, input_record <- % )"
    )
    sql("START PIPELINE ex1 FOREGROUND")
    got = rows(sql("SELECT payload, input_record FROM t"))
    assert sorted(got, key=lambda r: r[0] or "~") == [
        ("first", '{"id":1,"payload":{"string":"first"}}'),
        ("second", '{"id":1,"payload":{"string":"second"}}'),
        (None, '{"id":1,"payload":null}'),
    ]


def test_load_avro_files_example_2_a_raw_stream_with_schema(sql, tmp_path):
    """Load Avro Files Examples, Example 2: the values of Example 1 as a raw Avro stream
    (the binary values and nothing else) load the same with a SCHEMA clause; a file cut
    inside a record fails the batch naming where."""
    schema = {
        "type": "record",
        "name": "data",
        "fields": [{"name": "id", "type": "long"}, {"name": "payload", "type": ["null", "string"]}],
    }
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    for rec in (
        {"id": 1, "payload": "first"},
        {"id": 1, "payload": "second"},
        {"id": 1, "payload": None},
    ):
        fastavro.schemaless_writer(out, parsed, rec)
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "example.raw_avro").write_bytes(out.getvalue())
    sql("CREATE TABLE t2(payload TEXT, input_record JSON)")
    sql(
        f"CREATE PIPELINE ex2 AS LOAD DATA FS '{tmp_path}/raw/example.raw_avro' INTO TABLE t2 "
        "FORMAT AVRO ( payload <- %::payload::string, input_record <- % ) "
        f"SCHEMA '{json.dumps(schema)}'"
    )
    sql("START PIPELINE ex2 FOREGROUND")
    got = rows(sql("SELECT payload, input_record FROM t2"))
    assert sorted(got, key=lambda r: r[0] or "~") == [
        ("first", '{"id":1,"payload":{"string":"first"}}'),
        ("second", '{"id":1,"payload":{"string":"second"}}'),
        (None, '{"id":1,"payload":null}'),
    ]
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "x.raw_avro").write_bytes(out.getvalue()[:-3])
    sql(
        f"CREATE PIPELINE cut AS LOAD DATA FS '{tmp_path}/cut/x.raw_avro' INTO TABLE t2 "
        f"FORMAT AVRO (payload <- payload::string) SCHEMA '{json.dumps(schema)}'"
    )
    with pytest.raises(SparkpipesError, match=r"does not decode at byte"):
        sql("START PIPELINE cut FOREGROUND")


UNION = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "u",
            "type": [
                "int",
                {
                    "type": "record",
                    "name": "a",
                    "namespace": "n",
                    "fields": [{"name": "f1", "type": "int"}],
                },
            ],
        },
        {"name": "ok", "type": "boolean"},
    ],
}


def test_branch_paths_booleans_and_a_missing_field(sql, engine, tmp_path):
    """Extracting and Converting Avro Values: ``u::`n.a`::f1`` and ``u::int`` select a
    branch (NULL where another is selected); a boolean is 1/0 as text; a field the
    schema does not have fails the batch naming it, or, under SKIP PARSER ERRORS, each
    record is in PIPELINES_ERRORS with its file and record number."""
    write_avro(
        tmp_path / "u.avro",
        UNION,
        [{"id": 1, "u": {"f1": 10}, "ok": True}, {"id": 2, "u": 20, "ok": False}],
    )
    sql("CREATE TABLE u (id BIGINT, f1 INT, i INT, ok TEXT)")
    sql(
        f"CREATE PIPELINE up AS LOAD DATA FS '{tmp_path}/u.avro' INTO TABLE u "
        "FORMAT AVRO (id <- id, f1 <- u::`n.a`::f1, i <- %::u::int, ok <- ok)"
    )
    sql("START PIPELINE up FOREGROUND")
    assert rows(sql("SELECT id, f1, i, ok FROM u ORDER BY id")) == [
        (1, 10, None, "1"),
        (2, None, 20, "0"),
    ]

    sql("CREATE TABLE m (id BIGINT, x TEXT)")
    sql(
        f"CREATE PIPELINE strict AS LOAD DATA FS '{tmp_path}/u.avro' INTO TABLE m "
        "FORMAT AVRO (id <- id, x <- nope)"
    )
    with pytest.raises(SparkpipesError, match=r"has no field 'nope'"):
        sql("START PIPELINE strict FOREGROUND")
    sql(
        f"CREATE PIPELINE lenient AS LOAD DATA FS '{tmp_path}/u.avro' SKIP PARSER ERRORS "
        "INTO TABLE m FORMAT AVRO (id <- id, x <- nope)"
    )
    sql("START PIPELINE lenient FOREGROUND")
    assert rows(sql("SELECT id FROM m")) == []
    errors = [
        e
        for e in engine.information_schema("PIPELINES_ERRORS").to_pylist()
        if e["PIPELINE_NAME"] == "lenient"
    ]
    assert sorted(e["BATCH_OFFSET"] for e in errors) == ["0", "1"]
    assert all(e["BATCH_SOURCE_PARTITION_ID"].endswith("u.avro") for e in errors)
    assert "has no field 'nope'" in errors[0]["ERROR_MESSAGE"]


def test_parquet_values_as_singlestore_converts_them(sql, tmp_path):
    """Create a Parquet Pipeline: ``user::id`` into nested groups; a boolean is 1/0 as
    text, a float that is not finite NULL, and a path the file lacks takes its DEFAULT."""
    table = pa.table(
        {
            "user": pa.array([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]),
            "flag": [True, False],
            "x": [2.5, math.nan],
        }
    )
    pq.write_table(table, tmp_path / "p.parquet")
    sql("CREATE TABLE p (id BIGINT, name TEXT, flag TEXT, x DOUBLE, gone TEXT)")
    sql(
        f"CREATE PIPELINE pp AS LOAD DATA FS '{tmp_path}/p.parquet' INTO TABLE p FORMAT PARQUET "
        "(id <- user::id, name <- user::name, flag <- flag, x <- x, gone <- nope DEFAULT 'd')"
    )
    sql("START PIPELINE pp FOREGROUND")
    assert rows(sql("SELECT id, name, flag, x, gone FROM p ORDER BY id")) == [
        (1, "a", "1", 2.5, "d"),
        (2, "b", "0", None, "d"),
    ]

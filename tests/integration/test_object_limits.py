"""Hostile objects in file pipelines: a line longer than the framing holds
(``max_record_bytes``, CONFIG of LOAD DATA FS/S3/AZURE/HDFS) is a parse error at its
file and byte, as a line that does not parse is (SKIP PARSER ERRORS skips it to
PIPELINES_ERRORS and the lines after it load; without, the batch fails naming it); a raw
Avro value longer than it fails its object naming the byte."""

from __future__ import annotations

import json

import pytest

from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)
    return lambda text: session.execute(text)[-1]


def test_a_line_longer_than_max_record_bytes_is_a_parse_error_at_its_byte(sql, tmp_path):
    long = "9," + "x" * 200
    (tmp_path / "a.csv").write_text(f"1,a\n{long}\n2,b\n")
    sql("CREATE TABLE t (id INT, s TEXT)")
    for name, skip in (("lenient", "SKIP PARSER ERRORS "), ("strict", "")):
        sql(
            f"CREATE PIPELINE {name} AS LOAD DATA FS '{tmp_path}/*.csv' "
            f"CONFIG '{json.dumps({'max_record_bytes': 100})}' {skip}"
            "INTO TABLE t FIELDS TERMINATED BY ','"
        )
    sql("START PIPELINE lenient FOREGROUND")
    assert [tuple(r) for r in sql("SELECT id, s FROM t ORDER BY id").rows] == [(1, "a"), (2, "b")]
    (error,) = sql(
        "SELECT ERROR_TYPE, BATCH_SOURCE_PARTITION_ID, BATCH_OFFSET, ERROR_MESSAGE, "
        "LOAD_DATA_LINE FROM information_schema.PIPELINES_ERRORS WHERE PIPELINE_NAME = 'lenient'"
    ).rows
    kind, partition, offset, message, line = error
    assert (kind, partition, offset) == ("parse", str(tmp_path / "a.csv"), "4")
    assert "longer than 100 bytes (202 bytes)" in message and "max_record_bytes" in message
    assert line.startswith("9,xxx")
    with pytest.raises(Exception, match=r"a\.csv' byte 4: the line is longer than 100 bytes"):
        sql("START PIPELINE strict FOREGROUND")


def test_max_record_bytes_is_checked_when_the_pipeline_is_made(sql, tmp_path):
    sql("CREATE TABLE t (id INT)")
    with pytest.raises(Exception, match="max_record_bytes must be an integer >= 1"):
        sql(
            f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.csv' "
            """CONFIG '{"max_record_bytes": "big"}' INTO TABLE t"""
        )

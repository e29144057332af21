"""Object pipelines over the local filesystem, typed as a user types them: every format
(NDJSON, CSV with a header, Parquet, Avro; gzip, zstd, bz2), PIPELINES_FILES, DROP FILE,
corrupt objects skipped or failing the batch, and an object split across tasks."""

from __future__ import annotations

import bz2
import gzip
import io
import json

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from sparkpipes.errors import CorruptObjectError
from sparkpipes.frontends.singlestore.executor import SqlSession


def _ndjson(ids) -> bytes:
    return b"".join(json.dumps({"id": i, "name": f"n{i}"}).encode() + b"\n" for i in ids)


def _files(sql: SqlSession, pipeline: str):
    rows = sql.execute(
        "SELECT FILE_NAME, FILE_STATE, BATCH_ID, FILE_ERROR FROM information_schema.PIPELINES_FILES"
        f" WHERE PIPELINE_NAME = '{pipeline}' ORDER BY FILE_NAME"
    )[-1].rows
    return {r[0].rsplit("/", 1)[-1]: r[1:] for r in rows}


@pytest.fixture
def sql(engine):
    return SqlSession(engine)


def test_every_format_and_compression_loads_each_object_once(sql, engine, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.json").write_bytes(_ndjson(range(0, 3)))
    (d / "b.json.gz").write_bytes(gzip.compress(_ndjson(range(3, 6))))
    (d / "c.json.zst").write_bytes(zstandard.ZstdCompressor().compress(_ndjson(range(6, 9))))
    (d / "d.json.bz2").write_bytes(bz2.compress(_ndjson(range(9, 12))))
    (d / "notes.txt").write_bytes(b"not data\n")  # outside the suffixes
    sql.execute("CREATE TABLE t (id BIGINT, name TEXT)")
    sql.execute(
        f'CREATE PIPELINE nd AS LOAD DATA FS \'{d}\' CONFIG \'{{"suffixes": ["json", '
        '"json.gz", "json.zst", "json.bz2"]}\' INTO TABLE t FORMAT JSON'
    )
    engine.run_batches("nd", 3, until_idle=True)
    (d / "e.json").write_bytes(_ndjson([12]))  # added later: the next batch finds it
    engine.run_batches("nd", 3, until_idle=True)
    got = sorted(engine.table_arrow("t").column("id").to_pylist())
    assert got == list(range(13))
    files = _files(sql, "nd")
    assert set(files) == {"a.json", "b.json.gz", "c.json.zst", "d.json.bz2", "e.json"}
    assert all(state == "Loaded" and batch for state, batch, _ in files.values())
    assert files["e.json"][1] > files["a.json"][1]  # loaded by a later batch


def test_csv_with_a_header_parquet_and_avro_with_mappings(sql, engine, tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "x.csv").write_bytes(b'id;name\n1;"a;b"\n2;c\n3;"two\r\nlines"\n4;d\n')
    sql.execute("CREATE TABLE t (id BIGINT, name TEXT)")
    sql.execute(
        f"CREATE PIPELINE c AS LOAD DATA FS '{tmp_path}/csv/*.csv' INTO TABLE t "
        "FIELDS TERMINATED BY ';' ENCLOSED BY '\"' IGNORE 1 LINES"
    )
    engine.run_batches("c", 2, until_idle=True)

    (tmp_path / "pq").mkdir()
    table = pa.table(
        {"user": pa.array([{"key": i, "label": f"p{i}"} for i in range(10, 20)]), "x": range(10)}
    )
    pq.write_table(table, tmp_path / "pq" / "p.parquet", row_group_size=3)
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/pq/*.parquet' INTO TABLE t "
        "FORMAT PARQUET (id <- user::key, name <- user::label)"
    )
    engine.run_batches("p", 2, until_idle=True)

    (tmp_path / "avro").mkdir()
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "ident", "type": "long"}, {"name": "n", "type": ["null", "string"]}],
    }
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"ident": 100 + i, "n": None if i else "z"} for i in range(5)])
    (tmp_path / "avro" / "r.avro").write_bytes(buf.getvalue())
    sql.execute(  # a union's value is its branch's: n::string (SingleStore's paths)
        f"CREATE PIPELINE v AS LOAD DATA FS '{tmp_path}/avro' INTO TABLE t "
        "FORMAT AVRO (id <- ident, name <- n::string)"
    )
    engine.run_batches("v", 2, until_idle=True)

    rows = sorted(engine.table_arrow("t").to_pylist(), key=lambda r: r["id"])
    assert rows[:4] == [
        {"id": 1, "name": "a;b"},
        {"id": 2, "name": "c"},
        {"id": 3, "name": "two\r\nlines"},  # a quoted newline belongs to its field
        {"id": 4, "name": "d"},
    ]
    assert rows[4:14] == [{"id": 10 + i, "name": f"p{10 + i}"} for i in range(10)]
    assert rows[14:] == [{"id": 100, "name": "z"}] + [
        {"id": 100 + i, "name": None} for i in range(1, 5)
    ]


def test_drop_file_loads_the_object_again(sql, engine, tmp_path):
    (tmp_path / "a.json").write_bytes(_ndjson([1, 2]))
    sql.execute("CREATE TABLE t (id BIGINT, name TEXT)")
    sql.execute(f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' INTO TABLE t FORMAT JSON")
    engine.run_batches("p", 2, until_idle=True)
    key = str(tmp_path / "a.json")
    sql.execute(f"ALTER PIPELINE p DROP FILE '{key}'")
    assert _files(sql, "p")["a.json"][:2] == ("Unloaded", None)
    engine.run_batches("p", 2, until_idle=True)
    assert sorted(engine.table_arrow("t").column("id").to_pylist()) == [1, 1, 2, 2]
    assert _files(sql, "p")["a.json"][0] == "Loaded"
    with pytest.raises(Exception, match=r"pipeline 'p' has no file '/nope.json'"):
        sql.execute("ALTER PIPELINE p DROP FILE '/nope.json'")


def test_a_corrupt_object_is_skipped_or_fails_naming_it(sql, engine, tmp_path):
    good = gzip.compress(_ndjson(range(5)))
    (tmp_path / "ok.json.gz").write_bytes(good)
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(_ndjson(range(100, 20_000)))[:-30])
    (tmp_path / "lines.json").write_bytes(b'{"id": 7}\n{"id": oops}\n{"id": 8}\n')
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    sql.execute("CREATE TABLE t (id BIGINT, name TEXT)")
    sql.execute(
        f"CREATE PIPELINE skip AS LOAD DATA FS '{tmp_path}/*.json*' SKIP PARSER ERRORS INTO TABLE t FORMAT JSON"
    )
    engine.run_batches("skip", 2, until_idle=True)
    ids = engine.table_arrow("t").column("id").to_pylist()
    assert set(range(5)) | {7, 8} <= set(ids)  # good records of every object load
    assert 100 in ids  # records before the damage in the truncated stream load too
    files = _files(sql, "skip")
    assert files["ok.json.gz"][0] == "Loaded" and files["lines.json"][0] == "Loaded"
    state, _, error = files["bad.json.gz"]
    assert state == "Skipped" and "EOFError" in error
    errs = sql.execute(
        "SELECT BATCH_SOURCE_PARTITION_ID, BATCH_OFFSET, ERROR_MESSAGE FROM "
        "information_schema.PIPELINES_ERRORS WHERE PIPELINE_NAME = 'skip' "
        "ORDER BY BATCH_SOURCE_PARTITION_ID"
    )[-1].rows
    assert [(r[0].rsplit("/", 1)[-1], r[1]) for r in errs][1] == ("lines.json", "10")
    assert "bad.json.gz" in errs[0][0] and "cannot be read to its end" in errs[0][2]

    sql.execute(
        f"CREATE PIPELINE strict AS LOAD DATA FS '{tmp_path}/*.parquet' INTO TABLE t FORMAT PARQUET"
    )
    with pytest.raises(CorruptObjectError, match=r"file '.*broken\.parquet' cannot be read"):
        engine.run_batch("strict")
    assert engine.pipeline("strict").state == "Error"


def test_a_large_object_is_split_across_tasks_and_loaded_once(sql, engine, tmp_path):
    (tmp_path / "big.json").write_bytes(_ndjson(range(20_000)))
    for i in range(4):
        (tmp_path / f"s{i}.json").write_bytes(_ndjson([100_000 + i]))
    sql.execute("CREATE TABLE t (id BIGINT, name TEXT)")
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/*.json' "
        "CONFIG '{\"min_split_bytes\": 65536}' MAX_PARTITIONS_PER_BATCH 2 "
        "INTO TABLE t FORMAT JSON"
    )
    engine.run_batches("p", 3, until_idle=True)
    t = engine.table_arrow("t")
    assert sorted(t.column("id").to_pylist()) == [*range(20_000), *range(100_000, 100_004)]
    (first,) = [b for b in engine.batches("p") if b["rows"]]
    pieces = [p for p in first["partitions"] if p["partition"].endswith("big.json")]
    assert len(pieces) >= 2 and {p["task"] for p in first["partitions"]} == {0, 1}
    assert engine.offsets("p")[str(tmp_path / "big.json")] == {
        "byte": (tmp_path / "big.json").stat().st_size
    }


def test_an_object_that_vanishes_is_named_retried_and_never_half_loaded(engine, tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_bytes(_ndjson([ord(name)]))
    engine.create_table("t", "id BIGINT, name STRING")
    engine.create_pipeline("p", source="fs", location=str(tmp_path / "*.json"), table="t")
    runner = engine.rt.runner("p")
    plan = runner.plan()
    (tmp_path / "b.json").unlink()  # listed by the plan, gone before the task reads it
    from sparkpipes.errors import SourceUnavailableError

    with pytest.raises(SourceUnavailableError, match=r"cannot read file '.*b\.json'"):
        runner.run(1, plan=plan)
    assert engine.table_arrow("t").num_rows == 0  # the batch committed nothing
    engine.run_batches("p", 2, until_idle=True)  # the next plan no longer lists it
    assert engine.table_arrow("t").column("id").to_pylist() == [ord("a")]

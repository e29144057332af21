"""S3 (moto in server mode) and Azure Blob (Azurite) pipelines against real servers on
127.0.0.1: objects found by prefix, loaded once, later ones found by the next batch,
Parquet and gzip from S3, credentials refused or redacted, a missing bucket named."""

from __future__ import annotations

import gzip
import io
import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpipes.errors import SourceAuthError, SourceError, SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession


def _ndjson(ids) -> bytes:
    return b"".join(json.dumps({"id": i}).encode() + b"\n" for i in ids)


def _s3(s3_server, **extra) -> str:
    config = json.dumps({"endpoint_url": s3_server.endpoint_url, "region": "us-east-1", **extra})
    creds = json.dumps({"aws_access_key_id": "testing", "aws_secret_access_key": "testing"})
    return f"CONFIG '{config}' CREDENTIALS '{creds}'"


def test_s3_objects_load_once_and_later_ones_are_found(engine, s3_server):
    bucket = f"b{uuid.uuid4().hex[:10]}"
    s3_server.create_bucket(bucket)
    s3_server.put(bucket, "in/a.json", _ndjson(range(3)))
    s3_server.put(bucket, "in/b.json.gz", gzip.compress(_ndjson(range(3, 6))))
    s3_server.put(bucket, "other/x.json", _ndjson([99]))  # outside the prefix
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": [6, 7]}), buf)
    s3_server.put(bucket, "pq/c.parquet", buf.getvalue())
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE t (id BIGINT)")
    (msg,) = sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA S3 '{bucket}/in/' {_s3(s3_server)} INTO TABLE t FORMAT JSON"
    )
    assert "answered with 2 objects" in msg.message
    sql.execute(
        f"CREATE PIPELINE q AS LOAD DATA S3 '{bucket}/pq' {_s3(s3_server)} "
        "INTO TABLE t FORMAT PARQUET"
    )
    engine.run_batches("p", 3, until_idle=True)
    engine.run_batches("q", 3, until_idle=True)
    s3_server.put(bucket, "in/d.json", _ndjson([8, 9]))
    engine.run_batches("p", 3, until_idle=True)
    assert sorted(engine.table_arrow("t").column("id").to_pylist()) == list(range(10))
    files = sql.execute(
        "SELECT FILE_NAME, FILE_STATE, FILE_SIZE FROM information_schema.PIPELINES_FILES "
        "WHERE PIPELINE_NAME = 'p' ORDER BY FILE_NAME"
    )[-1].rows
    assert [(r[0], r[1]) for r in files] == [
        (f"{bucket}/in/a.json", "Loaded"),
        (f"{bucket}/in/b.json.gz", "Loaded"),
        (f"{bucket}/in/d.json", "Loaded"),
    ]
    shown = sql.execute("SHOW CREATE PIPELINE p")[-1].rows[0][-1]
    assert "testing" not in shown.replace("'testing'", "")  # the key id and secret
    assert "aws_secret_access_key" in shown and "<redacted>" in shown


def test_disable_gunzip_loads_gz_objects_as_they_are(engine, s3_server):
    """S3 CONFIG ``disable_gunzip`` (SingleStore's): an object named ``.gz`` is read as it
    is stored, not decompressed; ``bzip2``/``zstd`` names still are."""
    bucket = f"b{uuid.uuid4().hex[:10]}"
    s3_server.create_bucket(bucket)
    s3_server.put(bucket, "raw/a.json.gz", _ndjson(range(3)))  # named .gz, not compressed
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE g (id BIGINT)")
    sql.execute(
        f"CREATE PIPELINE g AS LOAD DATA S3 '{bucket}/raw/' "
        f"{_s3(s3_server, disable_gunzip=True)} INTO TABLE g FORMAT JSON"
    )
    engine.run_batches("g", 3, until_idle=True)
    assert sorted(engine.table_arrow("g").column("id").to_pylist()) == [0, 1, 2]
    with pytest.raises(SparkpipesError, match=r"disable_gunzip.*true or false"):
        sql.execute(
            f"CREATE PIPELINE h AS LOAD DATA S3 '{bucket}/raw/' "
            f"{_s3(s3_server, disable_gunzip='yes')} INTO TABLE g FORMAT JSON"
        )


def test_a_missing_bucket_is_named_at_create_pipeline(engine, s3_server):
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE t (id BIGINT)")
    with pytest.raises(SourceError, match=r"s3 'no-such-bucket-x/in'"):
        sql.execute(
            f"CREATE PIPELINE p AS LOAD DATA S3 'no-such-bucket-x/in' {_s3(s3_server)} INTO TABLE t"
        )


def test_azure_blobs_load_once(engine, azurite):
    container = f"c{uuid.uuid4().hex[:10]}"
    azurite.create_container(container)
    azurite.put(container, "logs/a.json", _ndjson(range(4)))
    azurite.put(container, "logs/b.json", _ndjson(range(4, 6)))
    config = json.dumps({"endpoint_url": azurite.blob_endpoint})
    creds = json.dumps({"account_name": azurite.account_name, "account_key": azurite.account_key})
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE t (id BIGINT)")
    sql.execute(
        f"CREATE PIPELINE az AS LOAD DATA AZURE '{container}/logs' CONFIG '{config}' "
        f"CREDENTIALS '{creds}' INTO TABLE t FORMAT JSON"
    )
    engine.run_batches("az", 3, until_idle=True)
    azurite.put(container, "logs/c.json", _ndjson([6]))
    engine.run_batches("az", 3, until_idle=True)
    assert sorted(engine.table_arrow("t").column("id").to_pylist()) == list(range(7))
    shown = sql.execute("SHOW CREATE PIPELINE az")[-1].rows[0][-1]
    assert azurite.account_key not in shown


def test_a_wrong_azure_key_is_refused_without_showing_it(engine, azurite):
    container = f"c{uuid.uuid4().hex[:10]}"
    azurite.create_container(container)
    wrong = "d3Jvbmcta2V5LXRoYXQtaXMtbm90LXRoZS1hY2NvdW50cw=="
    config = json.dumps({"endpoint_url": azurite.blob_endpoint})
    creds = json.dumps({"account_name": azurite.account_name, "account_key": wrong})
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE t (id BIGINT)")
    with pytest.raises(SourceAuthError, match="failed to authenticate") as err:
        sql.execute(
            f"CREATE PIPELINE az AS LOAD DATA AZURE '{container}' CONFIG '{config}' "
            f"CREDENTIALS '{creds}' INTO TABLE t FORMAT JSON"
        )
    assert wrong not in str(err.value) and f"azure '{container}'" in str(err.value)
    creds = json.dumps({"account_name": azurite.account_name, "account_key": azurite.account_key})
    with pytest.raises(SourceError, match=r"azure 'nowhere/x': 'nowhere' does not exist"):
        sql.execute(
            f"CREATE PIPELINE az AS LOAD DATA AZURE 'nowhere/x' CONFIG '{config}' "
            f"CREDENTIALS '{creds}' INTO TABLE t FORMAT JSON"
        )


def test_an_unreachable_azure_endpoint_fails_create_pipeline_within_seconds(engine, azurite):
    import socket
    import time

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = json.dumps({"endpoint_url": f"http://127.0.0.1:{port}/{azurite.account_name}"})
    creds = json.dumps({"account_name": azurite.account_name, "account_key": azurite.account_key})
    sql = SqlSession(engine)
    sql.execute("CREATE TABLE t (id BIGINT)")
    started = time.monotonic()
    with pytest.raises(SourceError) as err:
        sql.execute(
            f"CREATE PIPELINE az AS LOAD DATA AZURE 'c/x' CONFIG '{config}' "
            f"CREDENTIALS '{creds}' INTO TABLE t FORMAT JSON"
        )
    assert time.monotonic() - started < 20  # the SDK's own retries took about 80 s
    assert f"127.0.0.1:{port}" in str(err.value) or "reach" in str(err.value)
    assert azurite.account_key not in str(err.value)

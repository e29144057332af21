"""Sources and sinks take an injected filesystem, so an object store is a different
filesystem, not an engine change. Here HDFS's listing and reading run against the local
disk behind pyarrow's filesystem interface — the one ``pyarrow.fs.HadoopFileSystem``
implements — because no HDFS server exists on these machines (the Hadoop client's
absence is tested as the error a user sees). Paths inside it are not the disk's paths:
every read must go through it."""

import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.arrow import ArrowFSWrapper
from pyarrow import fs

from sparkpipes.errors import ConfigError, SourceError
from sparkpipes.sinks import ParquetWriter
from sparkpipes.sources import build_source
from sparkpipes.sources.stores import HdfsSource


def _hdfs_like(root) -> ArrowFSWrapper:
    return ArrowFSWrapper(fs.SubTreeFileSystem(str(root), fs.LocalFileSystem()))


def test_hdfs_lists_and_reads_through_the_filesystem_interface(tmp_path):
    (tmp_path / "out" / "day=1").mkdir(parents=True)
    (tmp_path / "out" / "x.json").write_bytes(b'{"a":1}\n{"a":2}\r\n{"a":3}')
    (tmp_path / "out" / "day=1" / "y.json").write_bytes(b'{"a":4}\n')
    (tmp_path / "out" / "_SUCCESS").write_bytes(b"")  # a job's marker, not an object
    (tmp_path / "out" / "skip.csv").write_bytes(b"1\n")
    source = HdfsSource(
        "hdfs://namenode:8020/out", {"suffixes": ["json"]}, {}, filesystem=_hdfs_like(tmp_path)
    )
    meta = source.metadata()
    assert meta.partitions() == ["out/day=1/y.json", "out/x.json"]
    assert meta.latest("out/x.json") == {"byte": 24} and meta.size("out/x.json") == 24
    consumer = pickle.loads(pickle.dumps(source)).consumer("out/x.json")
    consumer.open({"byte": 8})
    got = [consumer.fetch(10, 0.1) for _ in range(3)]
    assert [v for f in got for v in f.values.to_pylist()] == [b'{"a":2}', b'{"a":3}']
    assert [v for f in got for v in f.positions.to_pylist()] == [8, 17]  # HDFS files are
    assert got[-1].at_end and consumer.position() == {"byte": 24}  # complete: all lines
    consumer.close()


def test_hdfs_without_a_hadoop_client_says_what_to_install():
    source = HdfsSource("hdfs://127.0.0.1:1/data", {}, {})
    with pytest.raises(SourceError, match=r"HDFS needs a Hadoop client.*HADOOP_HOME"):
        source.metadata().partitions()


@pytest.mark.parametrize(
    ("kind", "location", "config", "creds", "message"),
    [
        ("s3", "bucket/x", {"regoin": "us-east-1"}, {}, r"unknown S3 option 'regoin'.*'region'"),
        ("s3", "bucket/x", {}, {"aws_secret_key": "k"}, r"unknown S3 credential"),
        ("azure", "c/x", {}, {"account_nme": "a"}, r"unknown AZURE credential 'account_nme'"),
        ("hdfs", "/data", {}, {}, r"HDFS location must be 'hdfs://host:port/path'"),
        ("fs", "s3://b/x", {}, {}, r"use LOAD DATA S3"),
        ("s3", "", {}, {}, r"S3 location is empty"),
        ("gcs", "b/x", {}, {}, r"FS, S3, AZURE and HDFS; GCS is not"),
        ("s3", "b/x", {"suffixes": "json"}, {}, r'"suffixes" must be a list'),
    ],
)
def test_object_store_options_are_checked_before_any_connection(
    kind, location, config, creds, message
):
    from sparkpipes.config import Secret

    with pytest.raises(ConfigError, match=message):
        build_source(kind, location, config, {k: Secret(v) for k, v in creds.items()})


def test_the_parquet_writer_writes_through_the_injected_filesystem(tmp_path):
    sub = fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem())
    schema = pa.schema([("a", pa.int64())])
    writer = pickle.loads(pickle.dumps(ParquetWriter("tables/t", schema, "t", filesystem=sub)))
    added = writer.write(pa.table({"a": [1, 2]}), "part-b1-p0")
    on_disk = tmp_path / "tables" / "t" / added.path
    assert on_disk.stat().st_size == added.size and added.num_records == 2
    assert pq.read_table(on_disk).column("a").to_pylist() == [1, 2]

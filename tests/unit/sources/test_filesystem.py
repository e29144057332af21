"""Sources and sinks take an injected ``pyarrow.fs`` filesystem, so an object store is a
different filesystem, not an engine change. Here the injected filesystem is a subtree of
the local disk (pyarrow's own implementation), whose paths are not the disk's paths:
every read and write must go through it."""

import pickle

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs

from sparkpipes.sinks import ParquetWriter
from sparkpipes.sources.files import FileSource


def test_the_file_source_lists_and_reads_through_the_injected_filesystem(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.json").write_bytes(b'{"a":1}\n{"a":2}\r\n{"a":3')  # last line partial
    (tmp_path / "data" / "skip.csv").write_bytes(b"1\n")
    sub = fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem())
    source = FileSource("/data/*.json", {}, {}, filesystem=sub)
    meta = source.metadata()
    assert meta.partitions() == ["data/x.json"]
    assert meta.latest("data/x.json") == {"byte": 17, "line": 2}
    assert meta.watermark("data/x.json") == {"byte": 17}
    consumer = pickle.loads(pickle.dumps(source)).consumer("data/x.json")
    consumer.open({"byte": 8, "line": 1})
    fetched = consumer.fetch(10, 0.1)
    assert fetched.values.to_pylist() == [b'{"a":2}'] and fetched.positions.to_pylist() == [1]
    assert fetched.at_end and consumer.position() == {"byte": 17, "line": 2}
    consumer.close()


def test_the_parquet_writer_writes_through_the_injected_filesystem(tmp_path):
    sub = fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem())
    schema = pa.schema([("a", pa.int64())])
    writer = pickle.loads(pickle.dumps(ParquetWriter("tables/t", schema, "t", filesystem=sub)))
    added = writer.write(pa.table({"a": [1, 2]}), "part-b1-p0")
    on_disk = tmp_path / "tables" / "t" / added.path
    assert on_disk.stat().st_size == added.size and added.num_records == 2
    assert pq.read_table(on_disk).column("a").to_pylist() == [1, 2]

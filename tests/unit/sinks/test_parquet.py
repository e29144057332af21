"""The executor-side Parquet writer every sink stages or writes with."""

import json
import os
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpipes.errors import SchemaMismatchError
from sparkpipes.sinks.parquet import STATS_STRING_CHARS, ParquetWriter

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


@pytest.fixture
def writer(tmp_path):
    # pickled as to an executor: nothing is opened before the first write
    return pickle.loads(pickle.dumps(ParquetWriter(str(tmp_path / "t"), SCHEMA, "t")))


def test_a_file_is_written_under_a_unique_name_with_its_add_action(writer):
    f = writer.write(pa.table({"id": [2, 1], "s": ["b", "a"]}), "part-b1-p0")
    g = writer.write(pa.table({"id": [3], "s": ["c"]}), "part-b1-p0")
    assert f.path != g.path and f.path.startswith("part-b1-p0-")
    path = os.path.join(writer.root, f.path)
    assert pq.read_table(path).to_pydict() == {"id": [2, 1], "s": ["b", "a"]}
    assert f.size == os.path.getsize(path) and f.num_records == 2
    assert json.loads(f.stats)["minValues"] == {"id": 1, "s": "a"}


def test_data_that_does_not_fit_the_table_is_refused(writer):
    with pytest.raises(SchemaMismatchError, match="does not fit table 't'"):
        writer.write(pa.table({"id": ["x"], "s": ["a"]}), "p")


def test_string_statistics_are_bounds_even_when_cut(writer):
    long = "x" * (STATS_STRING_CHARS + 5)
    f = writer.write(pa.table({"id": [1, 2], "s": ["b" + long, "a" + long]}), "p")
    stats = json.loads(f.stats)
    assert stats["minValues"]["s"] == ("a" + long)[:STATS_STRING_CHARS]  # a prefix: still <=
    assert "s" not in stats["maxValues"]  # a cut maximum would not be an upper bound
    g = writer.write(pa.table({"id": [3], "s": [None]}, schema=SCHEMA), "q")
    assert "s" not in json.loads(g.stats)["minValues"] and json.loads(g.stats)["nullCount"]["s"]


def test_a_failed_attempt_removes_what_it_wrote_and_nothing_else(writer):
    """What a failed job's tasks wrote under its prefix goes, reported or not; the files
    of other attempts stay; a file already gone is no error."""
    row = pa.table({"id": [1], "s": ["a"]})
    reported = writer.write(row, "part-insert1a2b3c4d")
    writer.write(row, "part-insert1a2b3c4d")  # a task that never reported back
    other = writer.write(row, "part-b00000001-t")
    gone = writer.write(row, "part-b00000002-t")
    os.remove(os.path.join(writer.root, gone.path))
    writer.remove([reported, gone], prefix="part-insert1a2b3c4d")
    assert sorted(os.listdir(writer.root)) == [other.path]


def test_file_statistics_leave_out_bounds_json_cannot_hold():
    """A NaN or an infinity is no JSON number: the side it would bound is left out (a
    finite bound beside it would not bound the file), so the commit's log stays readable
    and a reader skips no file it needs."""
    import json
    import math

    import pyarrow as pa

    from sparkpipes.sinks.parquet import _stats

    stats = json.loads(
        _stats(
            pa.table(
                {
                    "low": [1.0, -math.inf, None],
                    "high": [1.5, math.inf, 2.5],
                    "nan": [1.0, math.nan, 2.0],
                    "plain": [1.0, 2.0, 3.0],
                }
            )
        )
    )
    assert stats["minValues"] == {"high": 1.5, "plain": 1.0}
    assert stats["maxValues"] == {"low": 1.0, "plain": 3.0}
    assert stats["nullCount"]["low"] == 1

"""FORMAT PARQUET from SingleStore SQL: values reach their columns as SingleStore
converts them, and a path the file lacks is an error, never a silent NULL.
Source: https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-parquet-files/create-a-parquet-pipeline
(``parquet_subvalue_path``: ``ident [::ident …]`` into nested groups) and, for the
conversion as if from text, the Avro page it shares its rules with:
https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/extracting-and-converting-avro-values
"""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq

from sparkpipes.config import FieldMapping
from sparkpipes.formats import build_decoder

TABLE = pa.table(
    {
        "flag": pa.array([True, False, None]),
        "x": pa.array([1.5, float("nan"), float("-inf")]),
        "user": pa.array(
            [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": None}],
            pa.struct([("id", pa.int64()), ("name", pa.string())]),
        ),
    }
)


def load(columns: dict, mapping: list, *, text_values: bool = True, table=TABLE) -> tuple:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    buf.seek(0)
    maps = [FieldMapping(m[0], m[1], *(m[2:] or ("error",))) for m in mapping]
    dec = build_decoder("parquet", pa.schema(list(columns.items())), maps, text_values=text_values)
    rows, errors = [], []
    for frame in dec.framing().frames(buf, 0, None, final=True, align=False):
        d = dec.decode_table(frame.table)
        rows += d.table.to_pylist()
        errors += [(e.index, e.reason) for e in d.errors]
    return rows, errors


def test_booleans_are_1_and_0_and_non_finite_floats_null():
    """A boolean converts as ``1``/``0`` (text ``'1'`` in a TEXT column, 1 in an INT); a
    float that is not finite is NULL."""
    rows, errors = load(
        {"t": pa.string(), "n": pa.int32(), "x": pa.float64()},
        [("t", ("flag",)), ("n", ("flag",)), ("x", ("x",))],
    )
    assert errors == []
    assert rows == [
        {"t": "1", "n": 1, "x": 1.5},
        {"t": "0", "n": 0, "x": None},
        {"t": None, "n": None, "x": None},
    ]


def test_nested_group_fields_by_path():
    """``user::name`` is field ``name`` of group ``user``."""
    rows, errors = load(
        {"id": pa.int64(), "name": pa.string()},
        [("id", ("user", "id")), ("name", ("user", "name"))],
    )
    assert errors == []
    assert rows == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": None}]


def test_a_path_the_file_lacks_is_an_error_unless_default():
    """Without DEFAULT a path the file does not have is an error for each record (SKIP
    PARSER ERRORS puts them in PIPELINES_ERRORS), never NULL; with DEFAULT it is the
    literal; from the Python API it is NULL, as before."""
    rows, errors = load({"a": pa.string()}, [("a", ("user", "nope"))])
    assert rows == [] and len(errors) == 3 and "the file has no user::nope" in errors[0][1]
    rows, errors = load({"a": pa.string()}, [("a", ("nope",), "default", "d")])
    assert (rows, errors) == ([{"a": "d"}] * 3, [])
    rows, errors = load({"a": pa.string()}, [("a", ("nope",), "null")], text_values=False)
    assert (rows, errors) == ([{"a": None}] * 3, [])


def test_a_timestamp_into_text_is_its_datetime_text():
    """A Parquet timestamp into a TEXT column is its ``YYYY-MM-DD hh:mm:ss.ffffff`` text
    (in UTC; ``TIMEZONE`` is refused), not Arrow's ISO text; into a DATETIME column it
    is the instant."""
    ts = dt.datetime(2020, 1, 1, 1, 2, 3, 400000, tzinfo=dt.UTC)
    table = pa.table({"ts": pa.array([ts], pa.timestamp("us", tz="UTC"))})
    rows, errors = load(
        {"t": pa.string(), "d": pa.timestamp("us", tz="UTC")},
        [("t", ("ts",)), ("d", ("ts",))],
        table=table,
    )
    assert errors == []
    assert rows == [{"t": "2020-01-01 01:02:03.400000", "d": ts}]

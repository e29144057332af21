"""A decoded chunk shaped into the table's rows (``formats.conform``): the table's columns
in its order with the missing ones NULL, record-metadata columns filled from the fetched
records that were kept, and rows leaving a NOT NULL column empty named by their index in
the fetch."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.formats import RecordError
from sparkpipes.formats.conform import as_text, not_null, to_columns, with_metadata
from sparkpipes.sources.base import HEADERS_TYPE, Fetched

# -- to_columns ----------------------------------------------------------------------------


def test_to_columns_orders_fills_missing_with_null_and_drops_others():
    decoded = pa.table({"b": ["x", "y"], "a": pa.array([1, 2], pa.int64()), "extra": [1, 2]})
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())])
    out = to_columns(decoded, schema)
    assert out.schema == schema
    assert out.to_pydict() == {"a": [1, 2], "b": ["x", "y"], "c": [None, None]}


def test_to_columns_casts_a_loaded_column_and_refuses_a_lossy_cast():
    decoded = pa.table({"a": pa.array([1, 2**40], pa.int64())})
    widened = to_columns(decoded.slice(0, 1), pa.schema([("a", pa.decimal128(20, 0))]))
    assert widened.schema.field("a").type == pa.decimal128(20, 0)
    assert widened.column("a").to_pylist() == [1]
    with pytest.raises(pa.ArrowInvalid):
        to_columns(decoded, pa.schema([("a", pa.int32())]))


def test_to_columns_of_an_empty_chunk_has_the_schema_and_no_rows():
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    out = to_columns(pa.table({"a": pa.array([], pa.int64())}), schema)
    assert out.schema == schema and out.num_rows == 0


# -- with_metadata -------------------------------------------------------------------------


def fetched(**parts) -> Fetched:
    """Four fetched records at offsets 10..13, with whatever metadata ``parts`` gives."""
    return Fetched(
        values=pa.array([b"{}"] * 4, pa.binary()),
        positions=pa.array([10, 11, 12, 13], pa.int64()),
        **parts,
    )


#: records 0, 2 and 3 decoded (record 1 did not)
KEPT = pa.array([0, 2, 3], pa.int32())


def chunk(**columns) -> pa.Table:
    """A decoded chunk of three rows with a payload column and the given (empty) ones."""
    cols = {"v": pa.array([1, 2, 3], pa.int64())}
    cols.update({name: pa.nulls(3, t) for name, t in columns.items()})
    return pa.table(cols)


def test_metadata_columns_come_from_the_kept_records_as_text():
    table = pa.table(
        {
            "v": pa.array([1, 2, 3], pa.int64()),
            "__key": pa.nulls(3, pa.string()),
            "__metadata$offset": pa.nulls(3, pa.string()),
            "__metadata$partition": pa.nulls(3, pa.string()),
            "__metadata$recordTimestamp": pa.nulls(3, pa.string()),
        }
    )
    f = fetched(
        keys=pa.array([b"k0", b"k1", None, b"k3"], pa.binary()),
        timestamps=pa.array([1000, 1001, 1002, 1003], pa.int64()),
    )
    out = with_metadata(table, table.column_names[1:], "7", f, KEPT)
    assert out.schema == table.schema
    assert out.to_pydict() == {
        "v": [1, 2, 3],
        "__key": ["k0", None, "k3"],
        "__metadata$offset": ["10", "12", "13"],
        "__metadata$partition": ["7", "7", "7"],
        "__metadata$recordTimestamp": ["1000", "1002", "1003"],
    }


def test_a_metadata_column_of_another_type_gets_its_type():
    table = chunk(**{"__metadata$offset": pa.int64(), "__metadata$recordTimestamp": pa.int64()})
    f = fetched(timestamps=pa.array([1000, 1001, 1002, 1003], pa.int64()))
    out = with_metadata(table, ("__metadata$offset", "__metadata$recordTimestamp"), "0", f, KEPT)
    assert out.schema == table.schema
    assert out.column("__metadata$offset").to_pylist() == [10, 12, 13]
    assert out.column("__metadata$recordTimestamp").to_pylist() == [1000, 1002, 1003]


def test_metadata_the_source_does_not_give_is_null_and_missing_columns_are_skipped():
    table = chunk(
        **{
            "__key": pa.string(),
            "__metadata$recordTimestamp": pa.int64(),
            "__header$h": pa.string(),
        }
    )
    columns = ("__key", "__metadata$recordTimestamp", "__header$h", "__metadata$partition")
    out = with_metadata(table, columns, "0", fetched(), KEPT)  # no keys, timestamps, headers
    assert out.schema == table.schema  # no __metadata$partition column added
    assert out.column("__key").to_pylist() == [None] * 3
    assert out.column("__metadata$recordTimestamp").to_pylist() == [None] * 3
    assert out.column("__header$h").to_pylist() == [None] * 3


def test_a_header_column_holds_the_last_header_of_its_name_as_text():
    headers = pa.array(
        [
            [{"key": "h", "value": b"first"}, {"key": "h", "value": b"last"}],
            [{"key": "h", "value": b"skipped record"}],
            None,  # a record without headers
            [{"key": "other", "value": b"o"}, {"key": "h", "value": None}],
        ],
        HEADERS_TYPE,
    )
    table = chunk(**{"__header$h": pa.string(), "__header$other": pa.string()})
    out = with_metadata(
        table, ("__header$h", "__header$other"), "0", fetched(headers=headers), KEPT
    )
    assert out.column("__header$h").to_pylist() == ["last", None, None]
    assert out.column("__header$other").to_pylist() == [None, None, "o"]


def test_keys_and_headers_that_are_not_utf8_are_replaced_not_refused():
    bad = b"caf\xe9"
    f = fetched(
        keys=pa.array([bad, b"x", b"ok", None], pa.binary()),
        headers=pa.array([[{"key": "h", "value": bad}]] * 4, HEADERS_TYPE),
    )
    table = chunk(**{"__key": pa.string(), "__header$h": pa.string()})
    out = with_metadata(table, ("__key", "__header$h"), "0", f, KEPT)
    assert out.column("__key").to_pylist() == ["caf\ufffd", "ok", None]
    assert out.column("__header$h").to_pylist() == ["caf\ufffd"] * 3


def test_as_text():
    assert as_text(pa.array([b"a", None], pa.binary())).to_pylist() == ["a", None]
    assert as_text(pa.array([b"\xff", None], pa.binary())).to_pylist() == ["\ufffd", None]
    assert as_text(pa.array([b"\xff"], pa.binary())).type == pa.string()


def test_metadata_of_an_empty_chunk():
    table = chunk(**{"__key": pa.string(), "__header$h": pa.string()}).slice(0, 0)
    f = fetched(keys=pa.array([b"k"] * 4), headers=pa.array([[]] * 4, HEADERS_TYPE))
    out = with_metadata(table, ("__key", "__header$h"), "0", f, pa.array([], pa.int32()))
    assert out.num_rows == 0 and out.schema == table.schema


# -- not_null ------------------------------------------------------------------------------


def test_rows_leaving_a_not_null_column_empty_are_rejected_by_their_fetched_index():
    table = pa.table({"a": [1, None, None, 4], "b": ["x", None, "z", None], "c": [None] * 4})
    kept = pa.array([0, 2, 5, 6], pa.int32())  # records 1, 3, 4 did not decode
    out = not_null(table, kept, ("b", "a", "missing"))
    assert out.table.to_pydict() == {"a": [1], "b": ["x"], "c": [None]}
    assert out.kept.to_pylist() == [0]
    assert out.errors == (
        # row 1 leaves both empty: the first column named is given
        RecordError(2, "column 'b' is NOT NULL but the record gives it no value"),
        RecordError(5, "column 'a' is NOT NULL but the record gives it no value"),
        RecordError(6, "column 'b' is NOT NULL but the record gives it no value"),
    )


def test_not_null_keeps_a_chunk_with_values_or_without_those_columns_as_it_is():
    table = pa.table({"a": [1, 2], "b": [None, None]})
    kept = pa.array([0, 1], pa.int32())
    for columns in (("a",), ("missing",), ()):
        out = not_null(table, kept, columns)
        assert out.table is table and out.kept is kept and out.errors == ()


def test_not_null_of_an_empty_chunk():
    table = pa.table({"a": pa.array([], pa.int64())})
    out = not_null(table, pa.array([], pa.int32()), ("a",))
    assert out.table.num_rows == 0 and out.errors == ()


def test_not_null_across_the_chunks_of_a_table():
    table = pa.concat_tables([pa.table({"a": [1, None]}), pa.table({"a": [None, 4]})])
    out = not_null(table, pa.array([0, 1, 2, 3], pa.int32()), ("a",))
    assert out.table.column("a").to_pylist() == [1, 4]
    assert out.kept.to_pylist() == [0, 3]
    assert [e.index for e in out.errors] == [1, 2]

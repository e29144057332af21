"""Cutting objects into records: lines, and CSV records whose quoted fields hold newlines."""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pytest

from sparkpipes.config import CsvOptions
from sparkpipes.formats import build_decoder
from sparkpipes.sources.framing import AvroStreamFraming, CsvFraming, LineFraming

CSV = b'1,"one\nline two"\r\n2,plain\n3,"say ""hi""\nthere"\n4,"a,b"\n'


def _records(framing, data: bytes) -> list[tuple[int, bytes]]:
    out = []
    for frame in framing.frames(io.BytesIO(data), 0, None, final=True, align=False):
        out += zip(frame.positions.to_pylist(), frame.values.to_pylist())
    return out


@pytest.mark.parametrize("block", [3, 7, 64, 1 << 20])
def test_quoted_newlines_stay_in_their_record_at_any_block_size(block):
    got = _records(CsvFraming('"', block=block), CSV)
    assert [v for _, v in got] == [
        b'1,"one\nline two"',
        b"2,plain",
        b'3,"say ""hi""\nthere"',
        b'4,"a,b"',
    ]
    assert [p for p, _ in got] == [0, CSV.index(b"2,"), CSV.index(b"3,"), CSV.index(b"4,")]


def test_an_escaped_quote_does_not_open_a_field():
    data = b'1,"a\\"b\nc"\n2,x\n'
    assert [v for _, v in _records(CsvFraming('"', "\\"), data)] == [b'1,"a\\"b\nc"', b"2,x"]


def test_a_record_still_open_at_the_end_of_a_growing_object_waits():
    frames = CsvFraming('"').frames(io.BytesIO(b'1,a\n2,"b\nc'), 0, None, final=False, align=False)
    (frame,) = list(frames)
    assert frame.values.to_pylist() == [b"1,a"] and frame.end == 4


def test_plain_lines_still_split_and_csv_with_quotes_does_not():
    assert LineFraming.splittable and not CsvFraming.splittable
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    quoted = build_decoder("csv", schema, (), CsvOptions())
    assert isinstance(quoted.framing(), CsvFraming)
    bare = build_decoder("csv", schema, (), CsvOptions(quote=None))
    assert type(bare.framing()) is LineFraming


def test_the_csv_decoder_reads_the_multi_line_records():
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    decoder = build_decoder("csv", schema, (), CsvOptions())
    values = pa.array([v for _, v in _records(CsvFraming('"'), CSV)], pa.binary())
    decoded = decoder.decode(values)
    assert decoded.table.to_pylist() == [
        {"id": 1, "text": "one\nline two"},
        {"id": 2, "text": "plain"},
        {"id": 3, "text": 'say "hi"\nthere'},
        {"id": 4, "text": "a,b"},
    ]
    assert not decoded.errors


@pytest.mark.parametrize("framing", [LineFraming(), CsvFraming('"')])
def test_a_carriage_return_before_the_newline_is_dropped_by_default(framing):
    assert [v for _, v in _records(framing, b"1,a\r\n2,b\n")] == [b"1,a", b"2,b"]


@pytest.mark.parametrize(
    "framing",
    [LineFraming(keep_cr=True), CsvFraming('"', keep_cr=True), LineFraming(block=2, keep_cr=True)],
)
def test_with_keep_cr_it_stays_in_the_line_as_load_data_reads_it(framing):
    """``LINES TERMINATED BY '\\n'`` (MySQL's and SingleStore's default) ends a line at
    the newline only: a file written on Windows has a carriage return in each last field."""
    assert [v for _, v in _records(framing, b"1,a\r\n2,b\n\r\n")] == [b"1,a\r", b"2,b", b"\r"]


@pytest.mark.parametrize("block", [2, 5, 1 << 20])
def test_any_terminator_cuts_records_where_it_occurs_and_newlines_are_data(block):
    """``LINES TERMINATED BY ';'`` or ``'||'``: LOAD DATA cuts at each occurrence, left to
    right (``;;`` in ``;;;`` once); inside an enclosed field it is data."""
    assert _records(LineFraming(block=block, terminator=b";"), b"1,a;2,b\nc;;3,d") == [
        (0, b"1,a"),
        (4, b"2,b\nc"),
        (11, b"3,d"),
    ]
    got = _records(LineFraming(block=block, terminator=b"||"), b"1,a||2,b||||3|x||")
    assert [v for _, v in got] == [b"1,a", b"2,b", b"3|x"]
    assert [v for _, v in _records(LineFraming(block=block, terminator=b";;"), b"a;;;b;;")] == [
        b"a",
        b";b",
    ]
    quoted = _records(CsvFraming('"', block=block, terminator=b";"), b'1,"a;b";2,c;')
    assert [v for _, v in quoted] == [b'1,"a;b"', b"2,c"]
    assert not LineFraming(terminator=b";").splittable and LineFraming().splittable


def test_lines_starting_by_skips_up_to_its_text_and_lines_without_it():
    """``LINES STARTING BY 'xxx'``: what precedes the prefix is skipped, and a line that
    lacks it is no record (MySQL's and SingleStore's LOAD DATA)."""
    data = b"xxx1,a\nno prefix\nabcxxx2,bxxx\n"
    assert _records(LineFraming(prefix=b"xxx"), data) == [(0, b"1,a"), (17, b"2,bxxx")]


def test_a_raw_avro_schema_of_zero_byte_records_fails_instead_of_loading_without_end():
    """A record without fields takes no bytes: one byte of such a "stream" would be an
    endless run of records, all at position 0."""
    schema = fastavro.parse_schema({"type": "record", "name": "r", "fields": []})
    with pytest.raises(ValueError, match="encodes a record in zero bytes"):
        _records(AvroStreamFraming(schema), b"x")

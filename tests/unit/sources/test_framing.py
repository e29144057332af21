"""Cutting objects into records: lines, and CSV records whose quoted fields hold newlines."""

from __future__ import annotations

import io
import json
import time
import tracemalloc

import fastavro
import pyarrow as pa
import pytest

from sparkpipes.config import CsvOptions
from sparkpipes.formats import build_decoder
from sparkpipes.sources.avro_framing import AvroFraming, AvroStreamFraming
from sparkpipes.sources.framing import CsvFraming, LineFraming

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


class _Stream:
    """An object of ``size`` bytes of ``fill`` followed by ``tail``, read as from a store:
    never held whole by the test itself."""

    def __init__(self, size: int, tail: bytes = b"", fill: bytes = b"x") -> None:
        self.left, self.tail, self.fill = size, tail, fill

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            out, self.tail = self.tail, b""
            return out
        take = min(n, self.left)
        self.left -= take
        return self.fill * take


def _framed(framing, f, final: bool = True) -> tuple[list, list, int | None]:
    records, unreadable, end = [], [], None
    for frame in framing.frames(f, 0, None, final=final, align=False):
        records += zip(frame.positions.to_pylist(), frame.values.to_pylist())
        unreadable += frame.unreadable
        end = frame.end
    return records, unreadable, end


LONG_LINES = {
    "lines": LineFraming(block=64 << 10),
    "csv": CsvFraming('"', block=64 << 10),
    "terminator": LineFraming(block=64 << 10, terminator=b";;"),
}


@pytest.mark.parametrize("kind", sorted(LONG_LINES))
def test_a_line_without_end_is_scanned_once_and_never_held_whole(kind):
    """48 MiB without a terminator, read 64 KiB at a time: each chunk is scanned once
    (it used to be scanned again with everything before it, and all of it held), the
    line is reported at its byte without being held, and the line after it loads."""
    framing = LONG_LINES[kind].limited(1 << 20)
    end = framing.terminator
    size = 48 << 20
    _framed(framing, _Stream(10, end))  # what the first use loads is not the object's
    tracemalloc.start()
    try:
        t = time.perf_counter()
        records, unreadable, last = _framed(framing, _Stream(size, end + b"1,ok" + end))
        elapsed = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert records == [(size + len(end), b"1,ok")] and last == size + 2 * len(end) + 4
    ((position, reason, head),) = unreadable
    assert position == 0 and head == b"x" * 512
    assert reason.startswith(f"the line is longer than {1 << 20} bytes ({size} bytes)")
    assert "max_record_bytes" in reason
    assert peak < 8 << 20, peak  # the cap and a block or two, not the 48 MiB line
    assert elapsed < 5, elapsed  # linear: the quadratic scan took minutes for CSV


@pytest.mark.parametrize("block", [1, 2, 3, 5, 64])
@pytest.mark.parametrize("kind", ["lines", "csv", "terminator"])
def test_a_line_longer_than_the_cap_is_reported_at_any_block_size(kind, block):
    """Lines of at most ``max_record`` bytes load; a longer one, inside a block or across
    many, is reported at the byte where it begins, and the lines after it load."""
    term = b";;" if kind == "terminator" else b"\n"
    make = {"lines": LineFraming, "csv": lambda **k: CsvFraming('"', **k)}.get(kind)
    framing = (make or LineFraming)(block=block, **({"terminator": term} if not make else {}))
    lines = [b"a", b"1234567890", b"bb", b"x" * 11, b"123456789012", b"cc"]
    data = term.join(lines) + term
    records, unreadable, end = _framed(framing.limited(10), io.BytesIO(data))
    starts = [data.index(term.join(lines[i:])) for i in range(len(lines))]
    assert records == [(starts[i], lines[i]) for i in (0, 1, 2, 5)]
    assert [p for p, _, _ in unreadable] == [starts[3], starts[4]]
    assert all(line.startswith(h) and h for line, (_, _, h) in zip(lines[3:5], unreadable))
    assert end == len(data)


def test_an_over_long_line_counts_as_a_line_ignore_lines_skips():
    framing = LineFraming(skip_lines=1, block=4).limited(5)
    records, unreadable, end = _framed(framing, io.BytesIO(b"header-too-long\n1,a\n"))
    assert records == [(16, b"1,a")] and not unreadable and end == 20


def test_an_over_long_last_line_of_a_growing_object_waits_and_of_a_complete_one_is_reported():
    data = b"1,a\n" + b"y" * 100
    framing = LineFraming(block=8).limited(10)
    assert _framed(framing, io.BytesIO(data), final=False) == ([(0, b"1,a")], [], 4)
    records, unreadable, end = _framed(framing, io.BytesIO(data))
    assert records == [(0, b"1,a")] and [p for p, _, _ in unreadable] == [4] and end == 104


def test_a_quote_left_open_at_the_end_of_an_object_ends_with_it():
    """The last record's end is the object's, whatever quote is open (it failed the
    object with an IndexError); the decoder reads or refuses it as a record."""
    records, _, end = _framed(CsvFraming('"'), io.BytesIO(b'1,a\n2,"b\nc'))
    assert records == [(0, b"1,a"), (4, b'2,"b\nc')] and end == 10


AVRO = fastavro.parse_schema(
    {
        "type": "record",
        "name": "r",
        "fields": [{"name": "id", "type": "long"}, {"name": "blob", "type": "bytes"}],
    }
)


def _avro(*records: dict) -> bytes:
    out = io.BytesIO()
    for rec in records:
        fastavro.schemaless_writer(out, AVRO, rec)
    return out.getvalue()


@pytest.mark.parametrize("block", [1, 3, 7, 1 << 20])
def test_a_raw_avro_stream_is_read_block_by_block_at_any_block_size(block):
    records = [{"id": i, "blob": b"z" * (i * 5)} for i in range(40)]
    data = _avro(*records)
    got = _records(AvroStreamFraming(AVRO, block=block), data)
    assert [fastavro.schemaless_reader(io.BytesIO(v), AVRO, None) for _, v in got] == records
    assert [p for p, _ in got] == [len(_avro(*records[:i])) for i in range(40)]


class _Repeat:
    """``count`` copies of ``one`` as a stream, never held whole by the test."""

    def __init__(self, one: bytes, count: int) -> None:
        self.one, self.left, self.pending = one, count, b""

    def read(self, n: int = -1) -> bytes:
        while len(self.pending) < n and self.left:
            k = min(self.left, max(1, n // len(self.one)))
            self.pending += self.one * k
            self.left -= k
        out, self.pending = self.pending[:n], self.pending[n:]
        return out


def test_a_raw_avro_stream_is_not_read_whole():
    """48 MiB of records in frames of about one block: the stream was read whole
    (``f.read()``) and every payload cut from it held at once."""
    one = _avro({"id": 7, "blob": b"q" * 1000})
    count = (48 << 20) // len(one)
    framing = AvroStreamFraming(AVRO, block=1 << 20)
    _records(framing, one)  # what the first use loads is not the stream's
    tracemalloc.start()
    try:
        n = sum(
            len(f.positions)
            for f in framing.frames(_Repeat(one, count), 0, None, final=True, align=False)
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == count
    assert peak < 12 << 20, peak


def test_a_raw_avro_value_longer_than_the_cap_fails_its_object_at_its_byte():
    data = _avro({"id": 1, "blob": b"a"}, {"id": 2, "blob": b"b" * 5000}, {"id": 3, "blob": b""})
    at = len(_avro({"id": 1, "blob": b"a"}))
    with pytest.raises(ValueError, match=f"the raw Avro record at byte {at} is longer than 1000"):
        _records(AvroStreamFraming(AVRO, block=64).limited(1000), data)
    # a length that claims more than the stream holds: the cap, not the claim, bounds it
    claim = _avro({"id": 1, "blob": b"a"})[:-2] + b"\xfe\xff\xff\xff\x0f" + b"c" * 10_000
    with pytest.raises(ValueError, match="the raw Avro record at byte 0 is longer than 4096"):
        _records(AvroStreamFraming(AVRO, block=64).limited(4096), claim)


def test_a_raw_avro_stream_cut_inside_a_record_fails_naming_its_byte():
    data = _avro({"id": 1, "blob": b"a"}, {"id": 2, "blob": b"bbbb"})
    at = len(_avro({"id": 1, "blob": b"a"}))
    with pytest.raises(
        ValueError, match=f"does not decode at byte {at} with the pipeline's SCHEMA"
    ):
        _records(AvroStreamFraming(AVRO, block=2), data[:-2])


@pytest.mark.parametrize(
    "items",
    [
        "null",
        {"type": "record", "name": "e", "fields": []},
        {"type": "fixed", "name": "f", "size": 0},
    ],
)
def test_a_raw_avro_schema_with_an_array_of_zero_byte_items_is_refused(items):
    """An array's count is all its bytes say when its items take none: ``[0x80 … 0x01]``
    would claim billions of nulls, decoded one by one. Refused when the pipeline is made."""
    from sparkpipes.errors import ConfigError

    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "xs", "type": {"type": "array", "items": items}},
        ],
    }
    with pytest.raises(ConfigError, match=r"array value\.xs holds items encoded in zero bytes"):
        build_decoder(
            "avro", pa.schema([("id", pa.int64())]), options={"schema": json.dumps(schema)}
        )
    fine = {**schema, "fields": [{"name": "xs", "type": {"type": "array", "items": "int"}}]}
    build_decoder("avro", pa.schema([]), options={"schema": json.dumps(fine)}).framing()


def test_an_avro_file_whose_own_schema_has_an_array_of_empty_records_fails_the_object():
    """A container file brings its writer schema: as hostile as its bytes."""
    schema = {
        "type": "record",
        "name": "r",
        "namespace": "n",
        "fields": [
            {"name": "a", "type": {"type": "record", "name": "E", "fields": []}},
            {"name": "b", "type": {"type": "array", "items": "E"}},
        ],
    }
    f = io.BytesIO()
    fastavro.writer(f, schema, [{"a": {}, "b": [{}]}])
    f.seek(0)
    with pytest.raises(ValueError, match=r"array \(value\.b\) of items encoded in zero bytes"):
        list(AvroFraming().frames(f, 0, None, final=True, align=False))

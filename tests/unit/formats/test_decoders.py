import datetime as dt
import decimal

import pyarrow as pa
import pytest

from sparkpipes.config import CsvOptions, FieldMapping
from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("score", pa.float64()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def values(*items):
    return pa.array([i if isinstance(i, bytes) or i is None else i.encode() for i in items])


def test_json_fast_path_with_nested_mapping_and_unknown_fields():
    d = build_decoder("json", SCHEMA, [FieldMapping("score", ("m", "s"))])
    out = d.decode(
        values(
            '{"id": 1, "name": "a", "m": {"s": 1.5}, "ts": "2026-01-02T03:04:05Z", "x": 9}',
            '{"id": 2}',
        )
    )
    assert out.errors == ()
    assert out.kept.to_pylist() == [0, 1]
    rows = out.table.to_pylist()
    assert rows[0]["score"] == 1.5 and rows[0]["name"] == "a"
    assert rows[0]["ts"] == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert rows[1] == {"id": 2, "name": None, "score": None, "ts": None}
    assert out.table.schema == SCHEMA


def test_json_bad_records_are_reported_by_index_and_the_rest_kept():
    d = build_decoder("json", SCHEMA)
    out = d.decode(
        values(
            '{"id": 1, "name": 7, "ts": 1700000000000}',  # lenient: number→string, epoch ms
            "{not json",
            "[1, 2]",
            '{"id": "x"}',
            b"",
            '{"id": 99999999999999999999}',
            '{"id": 5}',
        )
    )
    assert out.kept.to_pylist() == [0, 6]
    assert out.table.column("name").to_pylist() == ["7", None]
    assert out.table.column("ts")[0].as_py() == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
    reasons = {e.index: e.reason for e in out.errors}
    assert set(reasons) == {1, 2, 3, 4, 5}
    assert reasons[1] == (  # where in the record, as Python's own JSON error says it
        "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    assert "expected a JSON object, got list" in reasons[2]
    assert "column 'id': cannot convert 'x' to int64" in reasons[3]
    assert "column 'id'" in reasons[5] and "out of range" in reasons[5]


def test_json_value_with_newlines_is_one_record():
    d = build_decoder("json", SCHEMA)
    out = d.decode(values('{\n"id": 1,\n"name": "a"\n}', '{"id": 2}'))
    assert out.errors == ()
    assert out.table.column("id").to_pylist() == [1, 2]


def test_csv_fast_and_slow_paths():
    d = build_decoder("csv", SCHEMA, csv=CsvOptions(delimiter="|"))
    out = d.decode(values("1|a|2.5|2026-01-01T00:00:00Z", '2|"b|c"|3|'))
    assert out.errors == ()
    assert out.table.column("name").to_pylist() == ["a", "b|c"]
    out = d.decode(values("1|a|2.5|", "2|b", "x|b|1|", "4|d|1|"))
    assert out.kept.to_pylist() == [0, 3]
    reasons = {e.index: e.reason for e in out.errors}
    assert reasons[1] == "expected 4 fields, found 2"
    assert "column 'id'" in reasons[2]


#: SingleStore's LOAD DATA defaults: fields terminated by a tab, not enclosed, escaped by \\
LOAD_DATA = CsvOptions(delimiter="\t", quote=None, escape="\\")
TEXT = pa.schema([("a", pa.string()), ("b", pa.string()), ("n", pa.int64())])


@pytest.mark.parametrize(
    "opts, record, fields",
    [
        # not enclosed: a quote is an ordinary character
        (LOAD_DATA, 'x\t"y"\t1', ["x", '"y"', 1]),
        # escapes: a tab, a newline, the escape itself, an escaped delimiter; \N is NULL
        (LOAD_DATA, "a\\tb\tc\\nd\t1", ["a\tb", "c\nd", 1]),
        (LOAD_DATA, "a\\\\\tx\\\ty\t2", ["a\\", "x\ty", 2]),
        (LOAD_DATA, "\\N\tN\t\\N", [None, "N", None]),
        # enclosed: the delimiter inside, the quote doubled or escaped
        (CsvOptions(",", '"', "\\"), '"a,b","say ""hi""",3', ["a,b", 'say "hi"', 3]),
        (CsvOptions(",", '"', "\\"), '"a\\"b",c,4', ['a"b', "c", 4]),
        # a quote not followed by the delimiter does not close the field
        (CsvOptions(",", '"', None), '"a"b",c,5', ['a"b', "c", 5]),
        # a delimiter of two characters; ESCAPED BY '' escapes nothing
        (CsvOptions("||", None, None), "a\\b||c||6", ["a\\b", "c", 6]),
        # NULL DEFINED BY: bare, and enclosed only with OPTIONALLY ENCLOSED
        (CsvOptions(",", '"', None, null_text="nil"), 'nil,"nil",nil', [None, "nil", None]),
        (
            CsvOptions(",", '"', None, null_text="nil", null_enclosed=True),
            '"nil",x,7',
            [None, "x", 7],
        ),
        # TRAILING NULLCOLS: the missing last fields are NULL
        (CsvOptions(",", None, None, trailing_nullcols=True), "x", ["x", None, None]),
        # pyarrow's own null words are text like any other
        (CsvOptions(",", None, None), "NULL,NaN,8", ["NULL", "NaN", 8]),
    ],
)
def test_csv_reads_fields_as_load_data_does(opts, record, fields):
    d = build_decoder("csv", TEXT, csv=opts)
    out = d.decode(values(record))
    assert out.errors == ()
    assert list(out.table.to_pylist()[0].values()) == fields
    # the same record among plain ones (the fast path's chunk, or not) reads the same
    many = d.decode(values(*["p\tq\t0"] * 3, record) if opts == LOAD_DATA else values(record))
    assert list(many.table.to_pylist()[-1].values()) == fields


def test_csv_fast_path_agrees_with_load_data_on_plain_chunks():
    d = build_decoder("csv", TEXT, csv=CsvOptions(",", '"', "\\"))
    out = d.decode(values('"a,1",b,1', 'c,"",2', "e,f,"))
    assert out.table.to_pylist() == [
        {"a": "a,1", "b": "b", "n": 1},
        {"a": "c", "b": "", "n": 2},
        {"a": "e", "b": "f", "n": None},
    ]
    with pytest.raises(ConfigError, match="one character"):
        CsvOptions(",", '""')


def test_raw_into_one_string_column_and_invalid_utf8_is_an_error():
    d = build_decoder("raw", pa.schema([("line", pa.string())]))
    out = d.decode(values("hello", b"\xff\xfe", "world"))
    assert out.table.column("line").to_pylist() == ["hello", "world"]
    assert [(e.index, e.reason) for e in out.errors] == [(1, "not valid UTF-8 text (byte 0)")]
    with pytest.raises(ConfigError, match="one STRING or BINARY column"):
        build_decoder("raw", SCHEMA)


def test_unknown_and_planned_formats():
    with pytest.raises(ConfigError, match="unknown format 'xml'"):
        build_decoder("xml", SCHEMA)
    with pytest.raises(ConfigError, match=r"FORMAT AVRO reads whole objects"):
        build_decoder("avro", SCHEMA).decode(values("x"))


def test_the_arrow_fast_paths_take_whole_chunks():
    """The fast paths must not fall back on good input (they are the hot path)."""
    from sparkpipes.formats.json import newline_joined

    vals = values(*[f'{{"id": {i}, "name": "n{i}"}}' for i in range(1000)])
    assert newline_joined(vals).to_pybytes() == b"".join(v.as_py() + b"\n" for v in vals)
    assert newline_joined(vals.slice(10, 5)).to_pybytes().count(b"\n") == 5
    d = build_decoder("json", SCHEMA)
    assert d._fast(vals).num_rows == 1000
    pretty = values('{"id": 1,\n "name": "a"}', '{"id": 2, "name": "b"}', '{"id": 3}')
    assert newline_joined(pretty.slice(1)).to_pybytes() == b'{"id": 2, "name": "b"}\n{"id": 3}\n'
    assert newline_joined(pretty).to_pybytes().startswith(b'{"id": 1,  "name": "a"}\n{"id": 2')
    assert d._fast(pretty).column("name").to_pylist() == ["a", "b", None]
    c = build_decoder("csv", SCHEMA)
    assert (
        c._fast(values(*[f"{i},n{i},1.5,2026-01-01T00:00:00Z" for i in range(100)])).num_rows == 100
    )


def test_an_avro_timestamp_into_an_integer_column_is_epoch_milliseconds():
    """Pinot keeps times as LONG epoch millis; an Avro timestamp-millis field (fastavro
    gives a datetime) lands in such a column as its milliseconds."""
    import datetime as dt

    from sparkpipes.formats.coerce import coerce

    when = dt.datetime(2026, 9, 21, 14, 13, 20, 7000, tzinfo=dt.UTC)
    assert coerce(when, pa.int64()) == 1_790_000_000_007
    assert coerce(when.replace(tzinfo=None), pa.int64()) == 1_790_000_000_007
    with pytest.raises(ValueError, match="out of range"):
        coerce(when, pa.int32())


def test_a_decimal_with_more_places_than_its_column_is_rounded_as_mysql_stores_it():
    """1.005 into DECIMAL(10,2) is 1.01 (half away from zero), on either path and from
    JSON numbers, JSON strings and CSV text alike; more whole digits than the precision
    is a bad record, not a failed chunk."""
    schema = pa.schema([("g", pa.decimal128(10, 2))])
    d = build_decoder("json", schema, [FieldMapping("g", ("g",))])
    out = d.decode(values('{"g": 1.005}', '{"g": "-2.345"}', '{"g": 3}', '{"g": 123456789}'))
    assert [r["g"] for r in out.table.to_pylist()] == [
        decimal.Decimal("1.01"),
        decimal.Decimal("-2.35"),
        decimal.Decimal("3.00"),
    ]
    assert [(e.index, "out of range" in e.reason) for e in out.errors] == [(3, True)]
    d = build_decoder("csv", schema, csv=CsvOptions())
    assert d.decode(values("1.005", "2.344")).table.column("g").to_pylist() == [
        decimal.Decimal("1.01"),
        decimal.Decimal("2.34"),
    ]


def test_a_mapping_says_what_a_missing_path_gives():
    """NULL (the default), the mapping's DEFAULT, or a bad record; a JSON null is there."""
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int64())])
    mapping = [
        FieldMapping("a", ("x", "y"), "error"),
        FieldMapping("b", ("b",), "default", "none"),
        FieldMapping("c", ("c",)),
    ]
    d = build_decoder("json", schema, mapping)
    out = d.decode(values('{"x": {"y": 1}, "b": "s", "c": 2}', '{"x": {"y": null}}', '{"x": 5}'))
    assert out.table.to_pylist() == [
        {"a": 1, "b": "s", "c": 2},
        {"a": None, "b": "none", "c": None},
    ]
    assert [e.index for e in out.errors] == [2] and "the record has no x::y" in out.errors[0].reason


def test_text_values_convert_json_as_singlestore_load_data_does():
    """SingleStore converts each extracted JSON value to text before assigning it
    ("Extracting and Converting JSON Values"): null is NULL, true/false are "1"/"0", a
    number is its text as written, a string its characters, an object or array its JSON
    text; the text then converts to the column's type (true into INT is 1). Without
    ``text_values`` (Pinot, Python) a value keeps its JSON type."""
    schema = pa.schema(
        [
            ("flag", pa.string()),
            ("n", pa.int32()),
            ("price", pa.string()),
            ("on", pa.bool_()),
            ("doc", pa.string()),
            ("whole", pa.string()),
        ]
    )
    mapping = [
        FieldMapping("flag", ("flag",)),
        FieldMapping("n", ("n",)),
        FieldMapping("price", ("price",)),
        FieldMapping("on", ("on",)),
        FieldMapping("doc", ("doc",)),
        FieldMapping("whole", ()),
    ]
    record = (
        '{"flag": false, "n": true, "price": 1.50, "on": 1, "doc": {"k": [1.0, "é"], "z": null}}'
    )
    d = build_decoder("json", schema, mapping, text_values=True)
    out = d.decode(values(record, '{"flag": null, "n": 2, "price": "x", "on": true, "doc": 3e2}'))
    assert out.errors == ()
    assert out.table.to_pylist() == [
        {
            "flag": "0",
            "n": 1,
            "price": "1.50",
            "on": True,
            "doc": '{"k":[1.0,"é"],"z":null}',
            "whole": '{"flag":false,"n":true,"price":1.50,"on":1,"doc":{"k":[1.0,"é"],"z":null}}',
        },
        {
            "flag": None,
            "n": 2,
            "price": "x",
            "on": True,
            "doc": "3e2",
            "whole": '{"flag":null,"n":2,"price":"x","on":true,"doc":3e2}',
        },
    ]
    typed = build_decoder("json", schema, mapping).decode(values(record))
    assert [e.index for e in typed.errors] == [0]  # true into INT: not an integer


def test_text_values_agree_on_both_paths():
    """A chunk the Arrow reader takes whole loads what record by record gives."""
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())])
    mapping = [FieldMapping(c, (c,)) for c in "abc"]
    d = build_decoder("json", schema, mapping, text_values=True)
    rows = ['{"a": 1, "b": "x", "c": 1.5}', '{"a": 2, "b": "y", "c": 2}']
    fast = d.decode(values(*rows)).table.to_pylist()
    slow = d.decode(values(*rows, '{"a": true, "b": "z", "c": false}')).table.to_pylist()
    assert slow[:2] == fast
    assert slow[2] == {"a": 1, "b": "z", "c": 0.0}


def test_a_kept_carriage_return_is_text_of_the_last_field_and_not_of_a_number():
    """``LINES TERMINATED BY '\\n'`` on a file written on Windows: SingleStore, as MySQL,
    keeps the carriage return in a text column and converts ``'5\\r'`` to 5."""
    opts = CsvOptions(delimiter=",", quote=None, carriage_return=True)
    text_last = pa.schema([("n", pa.int64()), ("s", pa.string())])
    out = build_decoder("csv", text_last, csv=opts).decode(values("1,ab\r", "2,cd"))
    assert out.errors == ()
    assert out.table.to_pylist() == [{"n": 1, "s": "ab\r"}, {"n": 2, "s": "cd"}]
    number_last = pa.schema([("s", pa.string()), ("n", pa.int64())])
    out = build_decoder("csv", number_last, csv=opts).decode(values("ab,5\r", "cd,6"))
    assert out.table.to_pylist() == [{"s": "ab", "n": 5}, {"s": "cd", "n": 6}]
    dropped = CsvOptions(delimiter=",", quote=None)  # the Python API's default
    assert build_decoder("csv", text_last, csv=dropped).framing().keep_cr is False


def test_a_newline_is_data_of_a_field_when_lines_end_with_another_terminator():
    opts = CsvOptions(delimiter=",", quote=None, escape="\\", line_end=";")
    schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
    out = build_decoder("csv", schema, csv=opts).decode(values("1,a", "2,b\nc"))
    assert out.table.to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": "b\nc"}]


def test_a_quoted_last_field_before_a_kept_carriage_return_says_what_to_write():
    """As LOAD DATA reads ``"5"\\r`` under LINES TERMINATED BY '\\n', the quote does not
    end the field; the record's error says how to read a Windows file."""
    opts = CsvOptions(delimiter=",", quote='"', carriage_return=True)
    schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
    out = build_decoder("csv", schema, csv=opts).decode(values('1,"a"\r'))
    (error,) = out.errors
    assert "LINES TERMINATED BY '\\r\\n'" in error.reason

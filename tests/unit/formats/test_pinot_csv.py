"""Pinot's ``CSVMessageDecoder`` (``formats.pinot_csv``) against Pinot's documented behaviour:
the cases of Pinot's own ``CSVMessageDecoderTest`` (pinot-plugins/pinot-input-format/
pinot-csv/src/test/java/.../CSVMessageDecoderTest.java), the rules of
``CSVMessageDecoder.init`` and ``CSVRecordExtractor`` (empty → null, multi-value split), and
the Pinot config naming it lowered onto it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.config import FieldMapping
from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.pinot_csv import PinotCsvDecoder, csv_format, extracted, records

# Pinot's CSVMessageDecoderTest.getStandardDecoderProps
STANDARD = {"header": "name;age;gender", "delimiter": ";", "multiValueDelimiter": ","}
STANDARD = {**STANDARD, "escapeCharacter": "\\"}


def _one(text: str, **props: str) -> dict:
    return extracted(text, csv_format({**STANDARD, **props}))


def test_pinots_own_decoder_tests():
    # testHappyCase
    assert _one("Alice;18;F") == {"name": "Alice", "age": "18", "gender": "F"}
    # testMultivalue: the multi-value column becomes a list
    got = _one("Alice;18;F;maths,German,history", header="name;age;gender;subjects")
    assert got["subjects"] == ["maths", "German", "history"]
    # testEscapeCharacter: an escaped delimiter is text
    assert _one("Alice;18;F;mat\\;hs", header="name;age;gender;subjects")["subjects"] == "mat;hs"
    # testNullString
    got = _one("Alice;null;F;null", header="name;age;gender;subjects", nullStringValue="null")
    assert got == {"name": "Alice", "age": None, "gender": "F", "subjects": None}
    # testCommentMarker: a message that is a comment holds no record (Pinot throws)
    with pytest.raises(ValueError, match="no CSV record"):
        _one("#Alice,18,F", header="name,age,gender", delimiter=",", commentMarker="#")
    # testHeaderFromRecord / testDefaultProps: no header prop, the message's first line
    fmt = csv_format({})
    assert extracted("name,age,gender,subjects\nAlice,18,F,maths", fmt) == {
        "name": "Alice",
        "age": "18",
        "gender": "F",
        "subjects": "maths",
    }


def test_extractor_rules():
    fmt = csv_format({"header": "a,b,c", "delimiter": ",", "multiValueDelimiter": ";"})
    # empty and "" alike are null (CSVRecordExtractor.convert); a missing column is null
    assert extracted('x,"",', fmt) == {"a": "x", "b": None, "c": None}
    assert extracted("x", fmt) == {"a": "x", "b": None, "c": None}
    # split drops empty parts; fewer than two parts keep the text as written
    assert extracted("p;;q,r;,s", fmt) == {"a": ["p", "q"], "b": "r;", "c": "s"}
    # only the first record of a message; skipHeader skips the message's first
    assert extracted("1,2,3\n4,5,6", fmt)["a"] == "1"
    skip = csv_format({"header": "a,b", "delimiter": ",", "skipHeader": "TRUE"})
    assert extracted("a,b\n4,5", skip) == {"a": "4", "b": "5"}


def test_header_split_as_commons_lang():
    # StringUtils.split(header, delimiter): any of its characters, empty names dropped;
    # without a delimiter prop, at whitespace (so "a,b" is one column, as in Pinot)
    assert csv_format({"header": "a,,b", "delimiter": ","}).header == ("a", "b")
    assert csv_format({"header": "a,b c"}).header == ("a,b", "c")
    assert csv_format({"header": "a|b", "delimiter": "|;"}).delimiter == "|"


def test_file_formats_and_checks():
    assert csv_format({"fileFormat": "tdf"}).delimiter == "\t"
    mysql = csv_format({"fileFormat": "MYSQL", "header": "a\tb", "delimiter": "\t"})
    assert extracted("\\N\tx\\ty", mysql) == {"a": None, "b": "x\ty"}
    # an unknown format is DEFAULT, as Pinot falls back to it
    assert csv_format({"fileFormat": "nope"}) == csv_format({})
    # TDF trims surrounding spaces of unquoted fields
    tdf = csv_format({"fileFormat": "TDF", "header": "a b", "delimiter": "\t "})
    assert extracted("  x \t y", tdf) == {"a": "x", "b": "y"}
    with pytest.raises(ConfigError, match="quoteMode 'SOME'"):
        csv_format({"quoteMode": "SOME"})
    with pytest.raises(ConfigError, match="quote character and the delimiter"):
        csv_format({"quoteCharacter": ";", "delimiter": ";"})


def test_commons_csv_lexer():
    fmt = csv_format({})
    assert list(records('a,"b,""c"""\r\nd,', fmt)) == [["a", 'b,"c"'], ["d", ""]]
    with pytest.raises(ValueError, match="EOF reached"):
        list(records('"open', fmt))
    with pytest.raises(ValueError, match="invalid char"):
        list(records('"a"b,c', fmt))
    # an escape before an ordinary character keeps both (Lexer.readEscape)
    esc = csv_format({"escapeCharacter": "\\"})
    assert list(records("a\\q,b\\n", esc)) == [["a\\q", "b\n"]]


SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("score", pa.float64()),
        ("absent", pa.string()),
    ]
)
OPTIONS = {
    "decoder.prop.header": "id,name,tags,score",
    "decoder.prop.delimiter": ",",
    "decoder.prop.multiValueDelimiter": ";",
}


def _decoder(**props: str) -> PinotCsvDecoder:
    opts = {**OPTIONS, **{f"decoder.prop.{k}": v for k, v in props.items()}}
    dec = build_decoder("pinot-csv", SCHEMA, (), None, opts)
    assert isinstance(dec, PinotCsvDecoder)
    return dec


def test_fast_and_slow_paths_agree():
    good = [b"1,a,x;y,1.5", b"2,,z,", b'3,"q,r",,2', b"4,d,,"]
    dec = _decoder()
    assert dec._fast_ok(pa.array(good))  # Arrow's reader takes this chunk
    fast = dec.decode(pa.array(good))
    assert not fast.errors
    # the same rows record by record (an escape char forces the slow path)
    slow = _decoder(escapeCharacter="\\").decode(pa.array(good))
    assert fast.table.to_pylist() == slow.table.to_pylist()
    assert fast.table.to_pylist()[:3] == [
        {"id": 1, "name": "a", "tags": ["x", "y"], "score": 1.5, "absent": None},
        # one value of a multi-value column is a one-element list (DataTypeTransformer)
        {"id": 2, "name": None, "tags": ["z"], "score": None, "absent": None},
        {"id": 3, "name": "q,r", "tags": None, "score": 2.0, "absent": None},
    ]


def test_bad_records_are_named_by_index():
    values = pa.array([b"1,a,x,1", b"x,b,,", b"", b"2,b;c,,", b'3,"a"b,,', b"\xff,n,,"])
    got = _decoder().decode(values)
    assert got.kept.to_pylist() == [0]
    reasons = {e.index: e.reason for e in got.errors}
    assert "column 'id'" in reasons[1]
    assert "no CSV record" in reasons[2]
    # Pinot's standardize: "Cannot read single-value from Object[]"
    assert "column 'name'" in reasons[3] and "single value from 2 values" in reasons[3]
    assert "invalid char" in reasons[4]
    assert "column 'id'" in reasons[5]  # not UTF-8: U+FFFD, then not an INT


def test_mapped_paths_and_transform_inputs():
    # the lowering maps schema columns by name and transform inputs as "@field"
    schema = pa.schema([("id", pa.int64()), ("@raw", pa.string())])
    mapping = (FieldMapping("id", ("id",)), FieldMapping("@raw", ("name",)))
    dec = build_decoder("pinot-csv", schema, mapping, None, OPTIONS)
    assert dec.decode(pa.array([b"7,seven,,"])).table.to_pylist() == [{"id": 7, "@raw": "seven"}]


def test_a_pinot_config_naming_it_lowers_onto_it():
    from sparkpipes.frontends.pinot.lowering import lower
    from sparkpipes.frontends.pinot.model import load_schema, load_table

    schema = load_schema(
        {
            "schemaName": "t",
            "dimensionFieldSpecs": [
                {"name": "name", "dataType": "STRING"},
                {"name": "tags", "dataType": "STRING", "singleValueField": False},
            ],
            "metricFieldSpecs": [{"name": "age", "dataType": "INT"}],
        }
    )
    stream = {
        "streamType": "kafka",
        "stream.kafka.topic.name": "t",
        "stream.kafka.broker.list": "127.0.0.1:9092",
        "stream.kafka.decoder.class.name": (
            "org.apache.pinot.plugin.inputformat.csv.CSVMessageDecoder"
        ),
        "stream.kafka.decoder.prop.header": "name;age;tags",
        "stream.kafka.decoder.prop.delimiter": ";",
        "stream.kafka.decoder.prop.multiValueDelimiter": ",",
    }
    doc = {
        "tableName": "t",
        "tableType": "REALTIME",
        "segmentsConfig": {},
        "tableIndexConfig": {"streamConfigs": stream},
    }
    cfg = load_table(doc, schema)
    assert not cfg.unrecognized  # every prop is read
    spec = lower(schema, cfg)
    assert spec.format.kind == "pinot-csv"
    assert spec.format.options["decoder.prop.header"] == "name;age;tags"
    # a prop Pinot's decoder rejects when it starts fails the table, named
    bad = {**stream, "stream.kafka.decoder.prop.quoteMode": "SOMETIMES"}
    with pytest.raises(ConfigError, match="quoteMode 'SOMETIMES'"):
        load_table({**doc, "tableIndexConfig": {"streamConfigs": bad}}, schema)


@pytest.mark.parametrize(
    "name", ["org.apache.pinot.plugin.inputformat.protobuf.ProtoBufCodeGenMessageDecoder"]
)
def test_refused_decoders_are_named_with_why(name):
    from sparkpipes.frontends.pinot.stream import load_stream

    stream = {
        "streamType": "kafka",
        "stream.kafka.topic.name": "t",
        "stream.kafka.broker.list": "127.0.0.1:9092",
        "stream.kafka.decoder.class.name": name,
    }
    with pytest.raises(ConfigError, match=f"decoder '{name}' is not supported: "):
        load_stream(stream, "streamConfigs", table="t")

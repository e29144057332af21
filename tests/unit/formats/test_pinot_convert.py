"""Pinot's CSV, Avro and Protobuf decoders' values stored as Pinot's ``DataTypeTransformer``
stores them (``formats.pinot_convert``), each case checked against Pinot's source at
apache/pinot@210c2951e72:

- ``pinot-plugins/pinot-input-format/pinot-csv/.../CSVRecordExtractor.java``: every cell a
  ``String``, a multi-value cell of two or more parts ``Object[]`` of them;
- ``pinot-plugins/pinot-input-format/pinot-avro-base/.../AvroRecordExtractor.java``: ``int``
  an ``Integer``, ``long`` a ``Long``, ``float`` a ``Float``, ``bytes`` ``byte[]``, ``enum``
  its name, ``timestamp-millis`` a ``Timestamp``, a record a ``Map``;
- ``pinot-plugins/pinot-input-format/pinot-protobuf/.../ProtoBufRecordExtractor.java``:
  ``int64`` a ``Long``, ``float`` a ``Float``, ``bytes`` ``byte[]``, a message a ``Map``;
- ``pinot-segment-local/.../recordtransformer/DataTypeTransformer.java`` (``continueOnError``:
  null, the row kept) and ``.../utils/DataTypeTransformerUtils.java`` (``standardize``);
- ``pinot-spi/.../utils/PinotDataType.java``: ``STRING.toInt`` is ``Integer.parseInt(trim)``,
  ``STRING.toBoolean`` ``BooleanUtils.toBoolean``, ``STRING.toBytes`` hex, ``LONG.toTimestamp``
  ``new Timestamp(long)`` where ``INT.toTimestamp`` and ``FLOAT.toTimestamp`` throw,
  ``FLOAT.toString`` ``Float.toString``, ``BYTES.toString`` hex, ``TIMESTAMP.toString``
  ``Timestamp.toString``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import json
import math
import uuid
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from google.protobuf import message_factory

from sparkpipes.formats import build_decoder
from sparkpipes.formats.pinot_convert import (
    JavaFloat,
    JavaLong,
    convert_value,
    java_float,
    java_int,
)
from sparkpipes.formats.protobuf import DESCRIPTOR_OPTION, message_descriptor

UTC = dt.UTC
TS = pa.timestamp("ms", tz="UTC")
CONTINUE = {"pinot.values": "true", "pinot.continue.on.error": "true"}
STRICT = {"pinot.values": "true"}


def _ms(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)


# --- one value: what each extractor's Java type converts to -------------------------------


@pytest.mark.parametrize(
    ("value", "t", "stored"),
    [
        # CSV's Strings: STRING.toInt / toLong / toBoolean / toBytes / toTimestamp
        (" 42 ", pa.int32(), 42),
        ("+7", pa.int64(), 7),
        ("TRUE", pa.bool_(), True),
        ("1", pa.bool_(), True),
        ("yes", pa.bool_(), False),  # BooleanUtils: anything else is false, no error
        ("0a0B", pa.binary(), b"\x0a\x0b"),
        ("1700000000000", TS, _ms(1700000000000)),
        ("2023-11-14 22:13:20.5", TS, _ms(1700000000500)),
        ("1e3", pa.float64(), 1000.0),
        ("-0.0", pa.float64(), 0.0),
        ("NaN", pa.float64(), None),  # SpecialValueTransformer
        (["1", "2"], pa.list_(pa.int32()), [1, 2]),
        ("5", pa.list_(pa.int64()), [5]),  # a single value into a multi-value column
        # Long and Integer: LONG.toTimestamp takes it, Long.intValue wraps into an INT
        (JavaLong(1000), TS, _ms(1000)),
        (JavaLong(2**32 + 5), pa.int32(), 5),
        (JavaLong(7), pa.string(), "7"),
        # Float: Float.toString, new BigDecimal(Float.toString), (double) float
        (JavaFloat(1.100000023841858), pa.string(), "1.1"),
        (JavaFloat(1e10), pa.string(), "1.0E10"),
        (JavaFloat(1.100000023841858), pa.decimal128(38, 18), decimal.Decimal("1.1")),
        (JavaFloat(2.75), pa.int64(), 2),
        (JavaFloat(1.5), pa.float64(), 1.5),
        # byte[]: hex text, BigDecimalUtils.deserialize (scale, then the unscaled value)
        (b"\x01\xff", pa.string(), "01ff"),
        (b"\x00\x02\x01\x00", pa.decimal128(38, 18), decimal.Decimal("2.56")),
        (b"\x01", pa.binary(), b"\x01"),
        # Timestamp (Avro timestamp-millis): getTime, Timestamp.toString (UTC servers)
        (dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), pa.int64(), 1700000000000),
        (dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), pa.string(), "2023-11-14 22:13:20.0"),
        # LocalDate / LocalTime / UUID (Avro's date, time-millis, uuid)
        (dt.date(2020, 1, 2), pa.int32(), 18263),
        (dt.date(2020, 1, 2), TS, _ms(18263 * 86_400_000)),
        (dt.time(8, 51), pa.string(), "08:51"),
        (dt.time(8, 51, 32, 123000), pa.string(), "08:51:32.123"),
        (uuid.UUID(int=1), pa.string(), "00000000-0000-0000-0000-000000000001"),
        # a Map (a record, a message) into a single-value column: its one value
        ({"a": JavaLong(3)}, pa.int32(), 3),
    ],
)
def test_a_value_converts_as_pinot_converts_it(value, t, stored):
    assert convert_value(value, t) == stored


@pytest.mark.parametrize(
    ("value", "t", "why"),
    [
        ("2.7", pa.int32(), "For input string"),  # Integer.parseInt
        ("1e3", pa.int64(), "For input string"),  # Long.parseLong
        ("two", pa.int32(), "For input string"),
        ("xyz", pa.binary(), "not Hex"),
        (5, TS, "INT to TIMESTAMP"),  # an Integer (Avro int)
        (JavaFloat(5.0), TS, "FLOAT to TIMESTAMP"),
        (b"\x01", pa.int32(), "BYTES to INT"),
        (dt.datetime(2020, 1, 1, tzinfo=UTC), pa.int32(), "TIMESTAMP to INT"),
        (["a", "b"], pa.string(), "single value from 2 values"),  # standardize
        ({"a": 1, "b": 2}, pa.string(), "single value from 2 values"),
    ],
)
def test_a_value_pinot_cannot_convert_raises(value, t, why):
    with pytest.raises((ValueError, ArithmeticError), match=why):
        convert_value(value, t)


def test_java_number_forms():
    # Float.toString: the shortest digits of the float, scientific past 10^7 and under 10^-3
    assert [java_float(v) for v in (100.0, 0.001, 1234567.0, 12345678.0, 1e-5)] == [
        "100.0",
        "0.001",
        "1234567.0",
        "1.2345678E7",
        "1.0E-5",
    ]
    # protobuf's uint32 / uint64 in Java's signed int / long (Message.getField)
    assert (java_int(4294967295, 32), java_int(2**64 - 2, 64), java_int(5, 32)) == (-1, -2, 5)


# --- CSV: CSVMessageDecoder, fast (Arrow) and record-by-record paths alike ------------------

CSV_SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("n", pa.int64()),
        ("ok", pa.bool_()),
        ("ts", TS),
        ("raw", pa.binary()),
        ("score", pa.float32()),
        ("tags", pa.list_(pa.int32())),
    ]
)
CSV_PROPS = {
    "decoder.prop.header": "id;n;ok;ts;raw;score;tags",
    "decoder.prop.delimiter": ";",
    "decoder.prop.multiValueDelimiter": ",",
}


def _csv(extra=None, **props):
    opts = {**CSV_PROPS, **{f"decoder.prop.{k}": v for k, v in props.items()}, **(extra or {})}
    return build_decoder("pinot-csv", CSV_SCHEMA, (), None, opts)


GOOD = [
    b"1;10;true;1700000000000;0a0b;1.5;1,2",
    b"2;-3;TRUE;1700000000001;;-0.0;7",
    b"3;0;yes;;ff;1e3;",
    b"4;5;1;1;;;3,4,5",
]
GOOD_ROWS = [
    {
        "id": 1,
        "n": 10,
        "ok": True,
        "ts": _ms(1700000000000),
        "raw": b"\n\x0b",
        "score": 1.5,
        "tags": [1, 2],
    },
    {
        "id": 2,
        "n": -3,
        "ok": True,
        "ts": _ms(1700000000001),
        "raw": None,
        "score": 0.0,
        "tags": [7],
    },
    {"id": 3, "n": 0, "ok": False, "ts": None, "raw": b"\xff", "score": 1000.0, "tags": None},
    {"id": 4, "n": 5, "ok": True, "ts": _ms(1), "raw": None, "score": None, "tags": [3, 4, 5]},
]


def test_csv_values_convert_as_pinot_on_both_paths():
    fast_dec = _csv()
    assert fast_dec._fast_ok(pa.array(GOOD))
    fast = fast_dec.decode(pa.array(GOOD))
    slow = _csv(escapeCharacter="\\").decode(pa.array(GOOD))  # an escape: record by record
    assert not fast.errors and not slow.errors
    assert fast.table.to_pylist() == slow.table.to_pylist() == GOOD_ROWS


def test_csv_text_arrow_reads_otherwise_goes_record_by_record():
    # Java trims and takes '+'; Arrow's cast does not: the chunk goes record by record
    got = _csv().decode(pa.array([b" 7 ;+8; true ;+5;;1d;"]))
    assert not got.errors
    row = got.table.to_pylist()[0]
    assert (row["id"], row["n"], row["ok"], row["ts"], row["score"]) == (7, 8, True, _ms(5), 1.0)


BAD = [b"two;1;;;;;", b"2.7;1;;;;;", b"1;1e3;;;;;", b"1;1;;;zz;;", b"1;1;;;;;a,2"]


def test_csv_a_value_that_does_not_convert_is_a_bad_record_without_continue_on_error():
    got = _csv(extra=STRICT).decode(pa.array([*BAD, b"9;9;;;;;"]))
    assert got.kept.to_pylist() == [5]
    reasons = [e.reason for e in got.errors]
    assert [r.split("'")[1] for r in reasons] == ["id", "id", "n", "raw", "tags"]


def test_csv_continue_on_error_stores_null_and_keeps_the_row():
    got = _csv(extra=CONTINUE).decode(pa.array(BAD))
    assert not got.errors and got.kept.to_pylist() == [0, 1, 2, 3, 4]
    rows = got.table.to_pylist()
    assert [r["id"] for r in rows] == [None, None, 1, 1, 1]
    assert [r["n"] for r in rows] == [1, 1, None, 1, 1]
    assert rows[3]["raw"] is None
    assert rows[4]["tags"] is None  # "a" does not convert: the whole value is null


def test_csv_several_values_into_a_single_value_column():
    schema = pa.schema([("name", pa.string())])
    opts = {
        "decoder.prop.header": "name",
        "decoder.prop.delimiter": ";",
        "decoder.prop.multiValueDelimiter": ",",
    }
    strict = build_decoder("pinot-csv", schema, (), None, opts).decode(pa.array([b"a,b"]))
    assert "single value from 2 values" in strict.errors[0].reason
    lenient = build_decoder("pinot-csv", schema, (), None, {**opts, **CONTINUE})
    assert lenient.decode(pa.array([b"a,b"])).table.to_pylist() == [{"name": None}]


# --- Avro: SimpleAvroMessageDecoder's fixed schema, fastavro with Pinot's Java types --------

AVRO = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "l", "type": ["null", "long"]},
        {"name": "f", "type": "float"},
        {"name": "b", "type": "bytes"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["RED", "BLUE"]}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "nested",
            "type": {"type": "record", "name": "N", "fields": [{"name": "x", "type": "long"}]},
        },
    ],
}
AVRO_SCHEMA = pa.schema(
    [
        ("l", TS),  # a Long into a TIMESTAMP: epoch millis
        ("i", TS),  # an Integer into a TIMESTAMP: refused (INT.toTimestamp)
        ("f", pa.string()),  # a Float as text: Float.toString
        ("b", pa.string()),  # byte[] as text: hex
        ("e", pa.string()),
        ("t", pa.string()),  # a Timestamp as text
        ("nested", pa.int32()),  # a Map of one value: that value
    ]
)


def _avro_message(**values) -> bytes:
    rec = {
        "i": 5,
        "l": 1000,
        "f": 1.1,
        "b": b"\x01\xff",
        "e": "BLUE",
        "t": _ms(1700000000000),
        "nested": {"x": 9},
        **values,
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(AVRO), rec)
    return buf.getvalue()


def _avro(options):
    return build_decoder("avro", AVRO_SCHEMA, (), None, {"schema": json.dumps(AVRO), **options})


def test_avro_values_convert_as_pinot_with_continue_on_error():
    got = _avro(CONTINUE).decode(pa.array([_avro_message()]))
    assert not got.errors
    assert got.table.to_pylist() == [
        {
            "l": _ms(1000),
            "i": None,
            "f": "1.1",
            "b": "01ff",
            "e": "BLUE",
            "t": "2023-11-14 22:13:20.0",
            "nested": 9,
        }
    ]


def test_avro_without_continue_on_error_the_record_is_bad_naming_the_column():
    got = _avro(STRICT).decode(pa.array([_avro_message()]))
    assert not got.kept.to_pylist()
    assert "column 'i'" in got.errors[0].reason and "INT to TIMESTAMP" in got.errors[0].reason


def test_avro_fast_path_only_where_arrow_equals_pinot():
    schema = pa.schema([("l", TS), ("i", pa.int64()), ("f", pa.float64()), ("e", pa.string())])
    dec = build_decoder("avro", schema, (), None, {"schema": json.dumps(AVRO), **STRICT})
    msgs = pa.array([_avro_message(), _avro_message(l=None, i=-2, f=-0.0)])
    table = dec._fast(msgs)  # Long into TIMESTAMP, Integer into LONG, Float into DOUBLE
    assert table.to_pylist() == [
        {"l": _ms(1000), "i": 5, "f": pytest.approx(1.1), "e": "BLUE"},
        {"l": None, "i": -2, "f": 0.0, "e": "BLUE"},
    ]
    assert math.copysign(1, table.column("f")[1].as_py()) == 1  # -0.0 made 0.0


def test_avro_without_pinot_values_keeps_its_own_reading():
    # SingleStore's and Connect's FORMAT AVRO are not Pinot's: no option, no conversion
    dec = build_decoder(
        "avro", pa.schema([("b", pa.binary())]), (), None, {"schema": json.dumps(AVRO)}
    )
    assert dec.decode(pa.array([_avro_message()])).table.to_pylist() == [{"b": b"\x01\xff"}]


# --- Protobuf: ProtoBufMessageDecoder on Pinot's own test descriptor -----------------------

PROTO = Path(__file__).parent / "protobuf" / "complex_types.desc"


def _proto_message(**fields) -> bytes:
    cls = message_factory.GetMessageClass(message_descriptor(PROTO.read_bytes(), "TestMessage"))
    return cls(**fields).SerializeToString()


def _proto(schema: pa.Schema, options):
    opts = {DESCRIPTOR_OPTION: base64.b64encode(PROTO.read_bytes()).decode(), **options}
    opts["decoder.prop.protoClassName"] = "TestMessage"
    return build_decoder("protobuf", schema, (), None, opts)


def test_protobuf_values_convert_as_pinot():
    schema = pa.schema(
        [
            ("long_field", TS),  # int64: a Long, epoch millis
            ("int_field", TS),  # int32: an Integer, refused
            ("float_field", pa.string()),  # Float.toString
            ("bytes_field", pa.string()),  # hex
            ("enum_field", pa.string()),
            ("nested_message", pa.string()),  # a Map of two values: does not convert
            ("repeated_strings", pa.list_(pa.int64())),  # STRING.toLong each
            ("bool_field", pa.int32()),  # BOOLEAN.toInt
        ]
    )
    msg = _proto_message(
        long_field=1000,
        int_field=5,
        float_field=1.1,
        bytes_field=b"\xab",
        enum_field=2,
        nested_message={"nested_string_field": "s", "nested_int_field": 3},
        repeated_strings=["1", " 2"],
        bool_field=True,
    )
    got = _proto(schema, CONTINUE).decode(pa.array([msg]))
    assert got.table.to_pylist() == [
        {
            "long_field": _ms(1000),
            "int_field": None,
            "float_field": "1.1",
            "bytes_field": "ab",
            "enum_field": "GAMMA",
            "nested_message": None,
            "repeated_strings": [1, 2],
            "bool_field": 1,
        }
    ]
    strict = _proto(schema, STRICT).decode(pa.array([msg]))
    assert "column 'int_field'" in strict.errors[0].reason


def test_protobuf_fast_path_agrees():
    schema = pa.schema(
        [("long_field", TS), ("int_field", pa.int64()), ("float_field", pa.float64())]
    )
    dec = _proto(schema, STRICT)
    msgs = pa.array([_proto_message(long_field=1000, int_field=-4, float_field=0.5)])
    assert dec._fast(msgs).to_pylist() == dec._slow(msgs, dec._parse_one).table.to_pylist()

"""What Pinot's Jackson and Java make of a JSON message's values (apache/pinot@210c2951e72),
stored here the same. Expected values marked "Java run" were printed by a JDK 17 program
running the code paths of that commit (``JacksonPayloadParser.parse``,
``JSONRecordExtractor.convert``, ``PinotDataType.toJson`` / ``MAP.toJson`` with
``MapUtils``' ``ORDER_MAP_ENTRIES_BY_KEYS`` writer, ``DataTypeTransformerUtils.standardize``,
``TimestampUtils.toTimestamp``) on Jackson 2.22.3 (Pinot pins 2.22.2) and Guava 33.5.0
(Pinot's ``LICENSE-binary``); the others are read from the source file named."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest

from sparkpipes.formats import build_decoder
from sparkpipes.formats.pinot_jackson import hash_order, java_hash
from sparkpipes.formats.pinot_values import convert, timestamp_millis

J = pa.string()
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _rows(schema: pa.Schema, payloads: list[bytes], json_columns: str = "") -> tuple:
    dec = build_decoder("pinot-json", schema, options={"pinot.json.columns": json_columns})
    out = dec.decode(pa.array(payloads, pa.binary()))
    return out.table.to_pylist(), [e.index for e in out.errors]


# -- 1. text into a JSON column: readTree with BigDecimal reals (Java run) ------------------
@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("10.0", "1E+1"),
        ('{"b":1.50,"a":[10.0,1e2,0.0,-0.0,100]}', '{"b":1.5,"a":[1E+1,1E+2,0,0,100]}'),
        ("123.4500e10", "1.2345E+12"),
        ("1.5e-7", "1.5E-7"),
        ("1e400", "1E+400"),
        ("12345678901234567890123", "12345678901234567890123"),
        ("2024 was great", "2024"),  # the first value; FAIL_ON_TRAILING_TOKENS is off
        ("2024-01-01", '"2024-01-01"'),  # a root number needs a space after it
        ("2024x", '"2024x"'),
        ("2024/1", '"2024/1"'),
        ("[1,2]x", "[1,2]"),
        ('{"a":1}}', '{"a":1}'),
        ('"abc" d', '"abc"'),
        ("null and void", "null"),
        ("true story", "true"),
        ("true}", "true"),
        ("true_", '"true_"'),  # Character.isJavaIdentifierPart after a keyword
        ("nullé", '"nullé"'),
        ("", ""),  # a MissingNode
        ("   ", ""),
        ("  \x0b1", '"  \\u000B1"'),
        ('{"x":"\\u001b\\u007f\\u2028"}', '{"x":"\\u001B\x7f\u2028"}'),
    ],
)
def test_text_into_a_json_column_is_what_jacksons_tree_writes(text, stored):
    assert convert(text, J, is_json=True) == stored


def test_jacksons_limits_fail_the_value():
    with pytest.raises(ValueError):
        convert("1" * 1001, J, is_json=True)  # StreamConstraintsException (Java run)
    assert convert("1" * 1000, J, is_json=True) == "1" * 1000


# -- 1, 2. objects and arrays into a JSON column -------------------------------------------
def test_an_object_into_a_json_column_is_key_sorted_at_every_depth_its_reals_doubles():
    rows, errors = _rows(
        pa.schema([("v", J)]),
        [b'{"v":{"b":10.0,"a":1.50,"c":{"z":1,"y":[{"q":1,"p":2}]}}}'],
        json_columns="v",
    )
    assert not errors
    assert rows[0]["v"] == '{"a":1.5,"b":10.0,"c":{"y":[{"p":2,"q":1}],"z":1}}'  # Java run


def test_an_array_into_a_json_column_writes_its_objects_in_hash_map_order():
    rows, _ = _rows(pa.schema([("v", J)]), [b'{"v":[{"q":1,"p":2,"a":3},{"b":1}]}'], "v")
    assert rows[0]["v"] == '[{"p":2,"q":1,"a":3},{"b":1}]'  # Java run


# -- 2. an object into a multi-value column: HashMap order -----------------------------------
def test_an_objects_values_into_a_multi_value_column_come_in_hash_map_order():
    schema = pa.schema([("v", pa.list_(pa.int32()))])
    keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12"]
    obj = {**{k: i + 1 for i, k in enumerate(keys)}, "Aa": 14, "BB": 15}
    rows, _ = _rows(schema, [b'{"v":{"b":1,"a":2,"c":3}}', json.dumps({"v": obj}).encode()])
    assert rows[0]["v"] == [2, 1, 3]  # Java run
    assert rows[1]["v"] == [14, 15, 1, 2, 3, 4, 5, 6, 12, 7, 11, 8, 9, 13, 10]  # Java run


def test_hash_map_order_through_resizes_and_a_small_tables_overfull_bin():
    assert java_hash("Aa") == java_hash("BB") == 2112
    assert java_hash("AaAaAa") == 1952508096
    keys = [
        "k0",
        "k1",
        "k2",
        "k3",
        "k4",
        "k5",
        "k6",
        "k7",
        "k8",
        "k9",
        "k10",
        "k11",
        "k12",
        "Aa",
        "BB",
        "zz",
    ]
    # new HashMap<>(2), then the keys put (Java run)
    assert hash_order(keys, 1) == [
        "Aa",
        "BB",
        "zz",
        "k0",
        "k1",
        "k2",
        "k3",
        "k4",
        "k5",
        "k11",
        "k6",
        "k10",
        "k7",
        "k8",
        "k12",
        "k9",
    ]
    colliding = ["Aa", "BB", "AaAa", "AaBB", "BBAa", "BBBB", "AaAaAa", "AaAaBB", "AaBBAa"]
    assert hash_order(colliding, 1) == (
        [
            "Aa",
            "BB",
            "AaAaAa",
            "AaAaBB",
            "AaBBAa",
            "AaAa",
            "AaBB",
            "BBAa",
            "BBBB",
        ]  # treeifyBin resizes
    )


# -- 3. a mixed-type array: converted by its first element's type ---------------------------
@pytest.mark.parametrize(
    ("values", "t", "stored"),
    [
        ([1, "2", 3.5], pa.int32(), [1, 2, 3]),  # INT.toInt casts fail: each by its own type
        (["1", 7], pa.int32(), [1, 7]),  # STRING.toInt(value.toString())
        (["1", 2.5], pa.int32(), ValueError),  # Integer.parseInt("2.5")
        (["1", True], pa.int64(), ValueError),
        ([1.5, True], pa.float64(), [1.5, 1.0]),
        ([1, 2], pa.decimal128(38, 18), [decimal.Decimal(1), decimal.Decimal(2)]),
        ([1, 2.5], pa.decimal128(38, 18), ValueError),  # BigDecimal.valueOf((Integer) 2.5)
        ([2.5, 3], pa.decimal128(38, 18), [decimal.Decimal("2.5"), decimal.Decimal(3)]),
        ([2.5, " 3"], pa.decimal128(38, 18), ValueError),  # new BigDecimal(" 3")
        (["1", True, 2, 1.0], pa.bool_(), [True, True, False, False]),  # BooleanUtils
        ([1, True], pa.bool_(), ValueError),  # (Integer) true
        ([10**20, 0, "false", False], pa.bool_(), [True, True, True, True]),  # !equals(ZERO)
        (["5", 1700000000000], pa.timestamp("us", tz="UTC"), [5, 1700000000000]),
        (["5", 1.7e12], pa.timestamp("us", tz="UTC"), ValueError),  # "1.7E12"
        ([2**40, 2.5], pa.timestamp("us", tz="UTC"), ValueError),  # (Long) 2.5
        ([2**64 + 1700000000000, 7, 2.9], pa.timestamp("us", tz="UTC"), [1700000000000, 7, 2]),
        (["00", 12], pa.binary(), [b"\x00", b"\x12"]),  # BytesUtils.toBytes("12")
        ([1.5, "x", True], pa.string(), ["1.5", "x", "true"]),
        ([10**20, "x"], pa.string(), ValueError),  # ((BigDecimal) "x").toPlainString
    ],
)
def test_a_mixed_array_converts_by_its_first_elements_type(values, t, stored):
    """PinotDataType.java: ``to<Type>Array`` of ``getMultiValueType(values[0])``; only
    ``toIntegerArray`` … ``toDoubleArray`` catch ``ClassCastException`` (``anyToInt``)."""
    if stored is ValueError:
        with pytest.raises(ValueError):
            convert(values, pa.list_(t))
        return
    got = convert(values, pa.list_(t))
    if pa.types.is_timestamp(t):
        got = [(v - EPOCH) // dt.timedelta(milliseconds=1) for v in got]
    assert got == stored


def test_a_whole_number_past_a_long_into_bytes_is_big_decimal_utils_serialize():
    n = 12345678901234567890123  # BigDecimalUtils.serialize: scale (2 bytes), toByteArray
    assert convert(n, pa.binary()) == b"\x00\x00" + n.to_bytes(10, "big", signed=True)
    assert convert(-128 - 2**70, pa.binary())[:2] == b"\x00\x00"


# -- 4. text after the message's value -------------------------------------------------------
def test_what_follows_the_messages_object_is_not_read():
    schema = pa.schema([("i", pa.int32())])
    payloads = [
        b'{"i":1} x',
        b'{"i":2}}',
        b'{"i":3}{"i":9}',
        b'{"i":4} \xff\xfe',  # not UTF-8, but never read
        b'  {"i":5}\n{',
        b'[{"i":6}]',  # not an object: refused
        b'{"i":7,',  # the object does not end
        b'{"i":8, "s":"\xff"}',  # not UTF-8 within the object
        b"   ",
        b'\xef\xbb\xbf{"i":10} y',  # a UTF-8 byte order mark is skipped
    ]
    rows, errors = _rows(schema, payloads)
    assert [r["i"] for r in rows] == [1, 2, 3, 4, 5, 10]
    assert errors == [5, 6, 7, 8]


def test_a_blank_payload_beside_a_double_one_does_not_shift_the_fast_paths_rows():
    rows, errors = _rows(pa.schema([("i", pa.int32())]), [b'{"i":1} {"i":2}', b" ", b'{"i":3}'])
    assert [r["i"] for r in rows] == [1, 3] and errors == [1]


# -- 5. date-time text into a TIMESTAMP ------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "millis"),
    [  # Java run (TimestampUtils.toTimestamp(text).getTime(), JVM zone UTC)
        ("2024-02-30 00:00:00", 1709251200000),  # Timestamp.valueOf rolls over: March 1st
        ("2024-02-31 25:61:61.5", 1709431321500),
        ("2024-1-5 1:2:3", 1704416523000),
        ("2024-01-01 -1:00:00", 1704063600000),
        ("+999-01-01 00:00:00", -30641328000000),
        ("1000-01-01 00:00:00", -30609792000000),  # java.util.Date: Julian
        ("1582-10-10 00:00:00", -12218860800000),
        ("1582-10-04 00:00:00", -12219379200000),
        ("1582-10-15 00:00:00", -12219292800000),
        ("1582-10-20 -200:00:00", -12218716800000),
        ("1583-01-01 -100000:00:00", -12571689600000),
        ("0000-01-01 00:00:00", -62167392000000),
        ("١٩٧٠-01-01 00:00:00", 0),  # Integer.parseInt takes any Unicode digit
        ("2024-02-30", 1709164800000),  # ISO, SMART: the month's last day
        ("2024-02-30T10:00", 1709200800000),
        ("2023-02-29 10:00", 1677578400000),
        ("2024-04-31T00:00Z", 1714435200000),
        ("2024-01-01T24:00", 1704153600000),
        ("1000-01-01T00:00", -30609792000000),  # Timestamp.valueOf(LocalDateTime): Julian
        ("1000-01-01T00:00Z", -30610224000000),  # an Instant: proleptic Gregorian
        ("2024-01-01T10:00.5", 1704103200500),
    ],
)
def test_timestamp_text_is_read_as_javas_timestamp_utils_reads_it(text, millis):
    assert timestamp_millis(text) == millis


@pytest.mark.parametrize(
    "text",
    [  # Java run: every attempt throws
        "2024-13-01 00:00:00",
        "2024-02-32 00:00:00",
        "2024-01-01 00:00:00.",
        "2024-01-01 00:00:00.1234567891",
        "12024-01-01T00:00",
        "2024-01-01T24:30",
        "2024-01-01T24:00:01",
        "2024-00-10",
        "0000-01-01",
    ],
)
def test_timestamp_text_java_refuses_is_refused(text):
    with pytest.raises(ValueError):
        timestamp_millis(text)


def test_an_impossible_day_is_stored_rolled_over_through_the_decoder():
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC"))])
    rows, errors = _rows(schema, [b'{"ts": "2024-02-30 00:00:00"}'])
    assert not errors and rows[0]["ts"] == dt.datetime(2024, 3, 1, tzinfo=dt.UTC)

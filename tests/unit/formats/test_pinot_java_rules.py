"""Pinot's conversion rules that Java's types decide, each from apache/pinot@210c2951e72:

- a multi-value field's elements all converted by the first element's type
  (``pinot-segment-local/.../utils/DataTypeTransformerUtils.java:74``,
  ``getMultiValueType(values[0])``; ``pinot-spi/.../utils/PinotDataType.java`` 1682-1697,
  ``toBooleanArray``: ``singleValueType.toBoolean`` on each element, no retry), for the
  Java types Avro and Protobuf give (``Long``, ``Float``, ``byte[]``, ``Timestamp``) too;
- ``FLOAT``: ``PinotDataType.java`` 835-838 ``STRING.toFloat`` is ``Float.parseFloat``,
  rounded once from the decimal text (JDK ``FloatingDecimal``), then
  ``SpecialValueTransformerUtils`` makes ``-0.0`` ``0.0``;
- trimming: ``STRING.toInt`` / ``toBigDecimal`` / ``toBoolean`` (``PinotDataType.java``
  830-848) call ``String.trim()``, which strips only chars up to U+0020;
- ``STRING.toBigDecimal``: ``new BigDecimal(String)``, which refuses ``1_000``.

Both the CSV decoder's Arrow path and its record-by-record path are checked.
"""

from __future__ import annotations

import io
import json
import math

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from sparkpipes.formats import build_decoder
from sparkpipes.formats.base import Mismatch
from sparkpipes.formats.pinot_convert import JavaFloat, JavaLong, convert_value, fast_column
from sparkpipes.formats.pinot_values import convert

CONTINUE = {"pinot.values": "true", "pinot.continue.on.error": "true"}
BOOLS = pa.list_(pa.bool_())


# --- 1. a multi-value field: the first element's type converts every element -------------


@pytest.mark.parametrize(
    ("values", "t", "stored"),
    [
        # STRING.toBoolean(value.toString().trim()): Integer 8 is "8", not true
        (["7", 8], BOOLS, [False, False]),
        # LONG.toBigDecimal: BigDecimal.valueOf((Long) value); a Long first, an Integer cast
        ([JavaLong(1), JavaLong(2)], pa.list_(pa.decimal128(38, 0)), [1, 2]),
        # FLOAT.toBigDecimal: new BigDecimal(value.toString()): a Double's Double.toString
        ([JavaFloat(1.100000023841858), 0.1], pa.list_(pa.decimal128(38, 2)), [1.1, 0.1]),
        # STRING first: a Float's Float.toString, parsed as text ("1.1", not 1.1000000238)
        (["2", JavaFloat(1.100000023841858)], pa.list_(pa.string()), ["2", "1.1"]),
        # INT_ARRAY.toLongArray: the failed (Integer) cast retried by anyToLong
        ([1, JavaLong(2**40)], pa.list_(pa.int64()), [1, 2**40]),
    ],
)
def test_elements_convert_by_the_first_elements_type(values, t, stored):
    got = convert_value(values, t)
    assert [float(v) if hasattr(v, "as_tuple") else v for v in got] == stored


@pytest.mark.parametrize(
    ("values", "t"),
    [
        ([8, "true"], BOOLS),  # INT.toBoolean: (Integer) "true": ClassCastException
        ([JavaLong(5), 6], pa.list_(pa.timestamp("ms"))),  # LONG.toTimestamp: (Long) 6
        ([JavaFloat(1.5), "x"], BOOLS),  # FLOAT.toBoolean: (Float) "x"
        ([JavaLong(1), 2], pa.list_(pa.decimal128(38, 0))),  # BigDecimal.valueOf((Long) 2)
    ],
)
def test_an_element_the_first_type_cannot_cast_fails(values, t):
    with pytest.raises(ValueError):
        convert_value(values, t)


def test_avro_union_elements_convert_by_the_first_element_type():
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "a", "type": {"type": "array", "items": ["int", "string"]}}],
    }
    dec = build_decoder(
        "avro", pa.schema([("a", BOOLS)]), (), None, {"schema": json.dumps(schema), **CONTINUE}
    )

    def msg(a):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), {"a": a})
        return buf.getvalue()

    got = dec.decode(pa.array([msg(["7", 8]), msg([8, "true"])]))
    # the second: ClassCastException, null under continueOnError (DataTypeTransformer)
    assert got.table.to_pylist() == [{"a": [False, False]}, {"a": None}]


# --- 2. FLOAT: Float.parseFloat rounds once; -0.0 is 0.0 ---------------------------------

FLOAT_MAX = float(np.finfo(np.float32).max)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("-1e-50", 0.0),  # Float.parseFloat: -0.0f; SpecialValueTransformer: 0.0
        ("1.00000017881393432617187499", float(np.float32(1.0000001192092896))),
        ("3.4028235677973366e38", FLOAT_MAX),  # short of MAX_VALUE + half an ulp
        ("3.4028235677973367e38", math.inf),  # past it
        ("1.5f", 1.5),
    ],
)
def test_float_text_rounds_once_on_both_paths(text, stored):
    slow = convert(text, pa.float32())
    assert slow == stored and math.copysign(1, slow) == math.copysign(1, stored)
    fast = fast_column(pa.array([text]), pa.float32()).to_pylist() if text[-1] != "f" else [slow]
    assert fast == [stored] and math.copysign(1, fast[0]) == math.copysign(1, stored)


def test_a_double_into_float_narrows_then_loses_its_sign_of_zero():
    assert math.copysign(1, convert(-1e-50, pa.float32())) == 1


# --- 3. String.trim strips only chars up to U+0020 -----------------------------------------


@pytest.mark.parametrize(
    ("text", "t", "stored"),
    [
        ("true\x00", pa.bool_(), True),  # NUL is trimmed
        ("true\u00a0", pa.bool_(), False),  # NBSP is not: "true\u00a0" is not "true"
        (" 5\x1f", pa.int32(), 5),
        ("5\x00", pa.decimal128(10, 0), 5),
    ],
)
def test_java_trim_on_both_paths(text, t, stored):
    assert convert(text, t) == stored
    try:  # the Arrow path reads it alike or leaves it to the record-by-record path
        assert fast_column(pa.array([text]), t).to_pylist() == [stored]
    except Mismatch:
        pass


@pytest.mark.parametrize(
    ("text", "t"),
    [
        ("5\u00a0", pa.int32()),  # Integer.parseInt("5\u00a0"): NumberFormatException
        ("5\u00a0", pa.decimal128(10, 0)),  # new BigDecimal("5\u00a0"): NumberFormatException
        ("5\u2003", pa.float64()),  # FloatingDecimal trims as String.trim
        # 5. new BigDecimal("1_000"): NumberFormatException (Python's Decimal takes it)
        ("1_000", pa.decimal128(10, 0)),
    ],
)
def test_text_java_does_not_trim_or_read_fails_on_both_paths(text, t):
    with pytest.raises(ValueError):
        convert(text, t)
    with pytest.raises(Mismatch):
        fast_column(pa.array([text]), t)


# --- 4. CSV TIMESTAMP text on the Arrow path; Avro's walk of the fields columns read -------

TS = pa.timestamp("ms", tz="UTC")
ISO = [
    "2024-01-01T00:00:05Z",  # ZonedDateTime.parse, UNIVERSAL_DATE_TIME_FORMATTER (XXX)
    "2024-01-01 12:00:05",  # Timestamp.valueOf, in the JVM's zone (UTC)
    "2024-01-01T00:00:05.123456789+05:30",  # fraction to 9 digits, truncated to millis
    "2024-01-01 10:11:05.1-07:00",  # valueOf refuses it; the formatter's space form
    "2024-01-01",  # parseDefaulting: midnight
    "2024-01-01T10:11",  # seconds optional
    "1969-12-31T23:59:59.9995Z",  # Instant.toEpochMilli floors
    "1700000000000",  # new Timestamp(Long.parseLong)
    None,
]


def test_csv_iso_timestamps_stay_on_the_arrow_path_and_read_as_pinot():
    # TimestampUtils.java 84-105: valueOf, then Long.parseLong, then ISO with a zone,
    # then ISO without one (LocalDateTime in the JVM's zone)
    fast = fast_column(pa.array(ISO), TS).to_pylist()
    assert fast == [convert(x, TS) for x in ISO]
    assert fast[2].isoformat() == "2023-12-31T18:30:05.123000+00:00"
    assert fast[6].isoformat() == "1969-12-31T23:59:59.999000+00:00"


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-30 00:00:00",  # Timestamp.valueOf is lenient: March 1st
        "1582-12-01 00:00:00",  # java.util.Date: Julian before 1582-10-15
        " 2024-01-01T00:00Z",  # trimmed first
        "2024-01-01T10:11:05+18:00",  # an offset Arrow's reading may not share
    ],
)
def test_csv_timestamps_arrow_cannot_decide_go_record_by_record(text):
    with pytest.raises(Mismatch):
        fast_column(pa.array([text]), TS)
    assert convert(text, TS) is not None  # the record path reads them


def _avro_decoder(schema, columns):
    opts = {"schema": json.dumps(schema), **CONTINUE}
    return build_decoder("avro", columns, (), None, opts)


def _avro_message(schema, rec):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), rec)
    return buf.getvalue()


def test_avro_walks_only_the_fields_columns_read_on_both_paths():
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "l", "type": "long"},
            {"name": "f", "type": "float"},
            {"name": "skip", "type": {"type": "array", "items": "long"}},
        ],
    }
    columns = pa.schema([("l", TS), ("f", pa.string())])
    dec = _avro_decoder(schema, columns)
    msgs = pa.array([_avro_message(schema, {"l": 1000, "f": 1.1, "skip": [1, 2]})])
    want = [
        {"l": convert_value(JavaLong(1000), TS), "f": "1.1"}
    ]  # LONG.toTimestamp, Float.toString
    assert dec.decode(msgs).table.to_pylist() == want
    assert dec._parse_one(msgs[0].as_py()) == want[0]


# --- 5. Avro union ["null", "float", "double"]: a value no float32 holds is the double -----


def test_avro_union_value_no_float_holds_is_read_from_the_double_branch():
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "x", "type": ["null", "float", "double"]}],
    }
    dec = _avro_decoder(schema, pa.schema([("x", pa.string())]))
    # 0.123456789 is written to the double branch (a float would lose it): DOUBLE.toString
    # is Double.toString, not Float.toString's "0.12345679"; 1.5 fits a float: "1.5"
    msgs = pa.array([_avro_message(schema, {"x": x}) for x in (0.123456789, 1.5)])
    assert dec.decode(msgs).table.to_pylist() == [{"x": "0.123456789"}, {"x": "1.5"}]
    assert convert_value(JavaFloat(0.123456789), pa.string()) == "0.12345679"


@pytest.mark.parametrize(
    ("text", "t", "want"),
    [("١٢", pa.int32(), 12), ("-٣", pa.int64(), -3), ("\uff11\uff12", pa.int32(), 12)],
)
def test_whole_numbers_take_unicode_digits_as_java_parses_them(text, t, want):
    # PinotDataType.java 832/892: STRING.toInt/toLong is Integer.parseInt/Long.parseLong
    # of the trimmed text, which take any Unicode decimal digit (Character.digit)
    assert convert(text, t) == want

"""A JSON message's values stored as Pinot stores them (issue 34): Pinot's
``DataTypeTransformer`` / ``PinotDataType`` conversions and ``SpecialValueTransformer``,
apache/pinot@210c2951e72; under ``continueOnError`` a value that does not convert is null
(then the default null value), the row kept."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkpipes.formats import build_decoder

SCHEMA = pa.schema(
    [
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("d", pa.float64()),
        ("b", pa.bool_()),
        ("s", pa.string()),
        ("by", pa.binary()),
        ("j", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("mi", pa.list_(pa.int32())),
    ]
)


def _decode(records, **opts):
    options = {"pinot.json.columns": "j", **opts}
    dec = build_decoder("pinot-json", SCHEMA, options=options)
    out = dec.decode(pa.array([json.dumps(r).encode() for r in records], pa.binary()))
    return out.table.to_pylist(), out.errors


def test_values_convert_by_pinots_rules():
    [row], errors = _decode(
        [
            {
                "i": "7",  # STRING.toInt: Integer.parseInt
                "l": 2.7,  # DOUBLE.toLong: truncated
                "d": "NaN",  # NaN → null (SpecialValueTransformer)
                "b": 2,  # INT.toBoolean: != 0
                "s": ["x"],  # standardize: a list of one is its value
                "by": "00ab",  # STRING.toBytes: hex
                "j": "plain",  # toJson: text that is not JSON is a JSON string
                "ts": "1700000000000",  # TimestampUtils: epoch millis
                "mi": 5,  # a single value into a multi-value column
            }
        ]
    )
    assert not errors
    assert row["i"] == 7 and row["l"] == 2 and row["d"] is None and row["b"] is True
    assert row["s"] == "x" and row["by"] == b"\x00\xab" and row["j"] == '"plain"'
    assert row["ts"].timestamp() == 1700000000 and row["mi"] == [5]


def test_text_into_boolean_is_true_only_for_true_or_1():
    rows, _ = _decode([{"b": "yes"}, {"b": "TRUE"}, {"b": "1"}, {"b": 0.5}])
    assert [r["b"] for r in rows] == [False, True, True, True]


def test_a_value_that_does_not_convert_is_a_bad_record_without_continue_on_error():
    rows, errors = _decode([{"i": "seven", "l": 1}])
    assert rows == [] and len(errors) == 1 and "column 'i'" in errors[0].reason


def test_under_continue_on_error_it_is_null_and_the_row_is_kept():
    rows, errors = _decode(
        [{"i": "seven", "l": 1, "by": "xyz"}], **{"pinot.continue.on.error": "true"}
    )
    assert not errors and rows[0]["i"] is None and rows[0]["by"] is None and rows[0]["l"] == 1


def test_the_fast_path_makes_negative_zero_zero():
    rows, _ = _decode([{"i": 1, "l": 2, "d": -0.0, "b": True, "s": "x"}] * 2)
    assert [str(r["d"]) for r in rows] == ["0.0", "0.0"]


def _raw(schema, payloads, fmt="pinot-json", **opts):
    dec = build_decoder(fmt, schema, options=opts) if fmt == "pinot-json" else None
    dec = dec or build_decoder(fmt, schema)
    return dec.decode(pa.array(payloads, pa.binary()))


def test_big_decimal_with_eleven_or_more_whole_digits():
    from decimal import Decimal

    from sparkpipes.formats.coerce import coerce

    schema = pa.schema([("bd", pa.decimal128(38, 18))])
    out = _raw(schema, [b'{"bd": "12345678901.5"}', b'{"bd": "98765432109876543210.25"}'])
    assert not out.errors
    assert out.table.column("bd").to_pylist() == [
        Decimal("12345678901.5"),
        Decimal("98765432109876543210.25"),
    ]
    assert coerce("12345678901.5", pa.decimal128(38, 18)) == Decimal("12345678901.5")


def test_nan_and_infinity_tokens_are_bad_records_in_pinot_json_only():
    schema = pa.schema([("d", pa.float64()), ("i", pa.int64())])
    payloads = [b'{"d": NaN, "i": 1}', b'{"d": 1.5, "i": 2}', b'{"d": 2, "i": 3, "x": -Infinity}']
    out = _raw(schema, payloads)
    assert [e.index for e in out.errors] == [0, 2] and "NaN" in out.errors[0].reason
    assert out.table.column("i").to_pylist() == [2]
    assert out.kept.to_pylist() == [1]
    # a chunk of good records whose text names NaN stays whole
    out = _raw(pa.schema([("s", pa.string())]), [b'{"s": "NaN"}', b'{"s": "Infinity"}'])
    assert not out.errors and out.table.column("s").to_pylist() == ["NaN", "Infinity"]
    # FORMAT JSON keeps reading them
    generic = _raw(schema, [b'{"d": NaN, "i": 1}'], fmt="json")
    assert not generic.errors and generic.table.num_rows == 1


def test_a_float_column_takes_float_max_value_as_java_does():
    schema = pa.schema([("f", pa.float32())])
    out = _raw(schema, [b'{"f": "3.4028235E38"}', b'{"f": 3.4028235E38}', b'{"f": 3.5e38}'])
    f = out.table.column("f").to_pylist()
    assert not out.errors and f[0] == f[1] == 3.4028234663852886e38 and f[2] == float("inf")


def test_timestamps_on_the_fast_path_are_those_record_by_record():
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("by", pa.binary())])
    good = [b'{"ts": 1700000000000, "by": "00AB"}', b'{"ts": null, "by": " 01 "}', b"{}"]
    fast = _raw(schema, good)
    slow = _raw(schema, [*good, b'{"ts": "x"}'])  # the last one sends it record by record
    assert not fast.errors and [e.index for e in slow.errors] == [3]
    assert fast.table.to_pylist() == slow.table.to_pylist()
    assert fast.table.column("by").to_pylist() == [b"\x00\xab", b"\x01", None]
    assert fast.table.column("ts")[0].as_py().timestamp() == 1700000000
    # a number that fits an int is refused (INT.toTimestamp), not read as millis
    out = _raw(schema, [b'{"ts": 1700000000000}', b'{"ts": 17}'])
    assert [e.index for e in out.errors] == [1] and out.table.num_rows == 1
    out = _raw(schema, [b'{"by": "xyz"}'])
    assert len(out.errors) == 1 and "column 'by'" in out.errors[0].reason


def test_timestamp_columns_keep_the_fast_path():
    from sparkpipes.formats.pinot_json import PinotJsonDecoder

    dec = build_decoder("pinot-json", pa.schema([("ts", pa.timestamp("us", tz="UTC"))]), options={})
    assert isinstance(dec, PinotJsonDecoder) and dec.fast


@pytest.mark.parametrize("fmt", ["pinot-json", "json"])
def test_unstorable_text_and_deep_nesting_are_bad_records_of_their_own(fmt):
    schema = pa.schema([("s", pa.string())])
    payloads = [
        b'{"s": "ok"}',
        b'{"s": "\\ud800"}',  # a lone surrogate
        b'{"s": "\xff"}',  # not UTF-8
        b'{"s": "x", "d": ' + b"[" * 100000 + b"]" * 100000 + b"}",
        b'{"s": "fine"}',
    ]
    out = _raw(schema, payloads, fmt=fmt)
    assert [e.index for e in out.errors] == [1, 2, 3]
    assert out.table.column("s").to_pylist() == ["ok", "fine"]
    assert out.kept.to_pylist() == [0, 4]
    # invalid UTF-8 alone does not slip through the fast path
    out = _raw(schema, [b'{"s": "\xff"}', b'{"s": "a"}'], fmt=fmt)
    assert [e.index for e in out.errors] == [0] and "UTF-8" in out.errors[0].reason


@pytest.mark.parametrize(
    ("prop", "value", "message"),
    [
        ("jsonFormat", "SMILE", r"stream\.kafka\.decoder\.prop\.jsonFormat 'SMILE'"),
        ("jsonFormat", "auto", "jsonFormat 'auto' is not supported"),
        ("recordExtractorClass", "com.acme.Extractor", r"recordExtractorClass 'com\.acme"),
    ],
)
def test_json_decoder_props_that_change_its_reading_are_refused(prop, value, message):
    from sparkpipes.errors import ConfigError
    from sparkpipes.frontends.pinot.model import load_table
    from tests.unit.frontends.pinot.test_model import TABLE, with_stream

    stream = TABLE["tableIndexConfig"]["streamConfigs"]
    with pytest.raises(ConfigError, match=message) as e:
        load_table(with_stream({**stream, f"stream.kafka.decoder.prop.{prop}": value}))
    assert "streamConfigs" in str(e.value)
    for fine in ("TEXT", " text "):  # the default, as Pinot reads it
        load_table(with_stream({**stream, "stream.kafka.decoder.prop.jsonFormat": fine}))

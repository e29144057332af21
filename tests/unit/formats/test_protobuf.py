"""Pinot's ``ProtoBufMessageDecoder`` (``formats.protobuf``) on Pinot's own descriptor
files (``tests/unit/formats/protobuf``, copied from Pinot's test resources: see SOURCE.md)
against Pinot's documented behaviour: the cases of Pinot's ``ProtoBufMessageDecoderTest``
(pinot-plugins/pinot-input-format/pinot-protobuf/src/test/java/.../
ProtoBufMessageDecoderTest.java), the value rules of ``ProtoBufRecordExtractor`` and how
protobuf-dynamic's ``DynamicSchema`` picks the message; and the Pinot config naming it,
its descriptor read by the front end."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow as pa
import pytest
from google.protobuf import message_factory

from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.protobuf import DESCRIPTOR_OPTION, ProtoBufDecoder, message_descriptor

HERE = Path(__file__).parent / "protobuf"


def _desc(name: str) -> bytes:
    return (HERE / f"{name}.desc").read_bytes()


def _cls(name: str, class_name: str | None = None):
    return message_factory.GetMessageClass(message_descriptor(_desc(name), class_name))


def _decoder(name: str, schema: pa.Schema, class_name: str | None = None) -> ProtoBufDecoder:
    options = {DESCRIPTOR_OPTION: base64.b64encode(_desc(name)).decode()}
    if class_name:
        options["decoder.prop.protoClassName"] = class_name
    dec = build_decoder("protobuf", schema, (), None, options)
    assert isinstance(dec, ProtoBufDecoder)
    return dec


SAMPLE = pa.schema(
    [
        ("name", pa.string()),
        ("id", pa.int32()),
        ("email", pa.string()),
        ("friends", pa.list_(pa.string())),
    ]
)


@pytest.mark.parametrize("class_name", [None, "SampleRecord"])
def test_happy_case_and_with_class_name(class_name):
    # testHappyCase, testWithClassName
    msg = _cls("sample")(name="Alice", id=18, email="foobar@hello.com", friends=["Bob"])
    got = _decoder("sample", SAMPLE, class_name).decode(pa.array([msg.SerializeToString()]))
    assert got.table.to_pylist() == [
        {"name": "Alice", "id": 18, "email": "foobar@hello.com", "friends": ["Bob"]}
    ]


def test_which_message_dynamic_schema_picks():
    # DynamicSchema.getMessageTypes() is a TreeSet of full names: the first in Java order
    pkg = "org.apache.pinot.plugin.inputformat.protobuf."
    assert message_descriptor(_desc("complex_types"), None).full_name == pkg + "TestMessage"
    assert message_descriptor(_desc("composite_types"), None).full_name == pkg + "CompositeMessage"
    # by the name within the package (nested dotted), or the full name
    nested = message_descriptor(_desc("complex_types"), "TestMessage.NestedMessage")
    assert nested.full_name == pkg + "TestMessage.NestedMessage"
    assert message_descriptor(_desc("sample"), pkg + "SampleRecord").name == "SampleRecord"
    with pytest.raises(ConfigError, match="protoClassName 'Nope'"):
        message_descriptor(_desc("sample"), "Nope")
    with pytest.raises(ConfigError, match="not a FileDescriptorSet"):
        message_descriptor(b"\xff\xff\xff", None)


COMPLEX = pa.schema(
    [
        ("string_field", pa.string()),
        ("int_field", pa.int32()),
        ("long_field", pa.int64()),
        ("bool_field", pa.bool_()),
        ("bytes_field", pa.binary()),
        ("nested_message", pa.string()),  # a map: JSON text
        ("repeated_nested_messages", pa.string()),
        ("complex_map", pa.string()),
        ("simple_map", pa.string()),
        ("enum_field", pa.string()),
        ("nullable_string_field", pa.string()),
        ("nullable_int_field", pa.int32()),
        ("repeated_strings", pa.list_(pa.string())),
        ("repeated_ints", pa.list_(pa.int32())),
        ("repeated_enums", pa.list_(pa.string())),
    ]
)


def test_complex_values_as_the_record_extractor_gives_them():
    cls = _cls("complex_types")
    msg = cls(
        string_field="s",
        int_field=0,  # proto3 without presence: its value, the default too
        bool_field=True,
        bytes_field=b"\x00\x01",
        nested_message=cls.NestedMessage(nested_string_field="n"),  # int left default
        repeated_nested_messages=[cls.NestedMessage(nested_int_field=2)],
        complex_map={"k": cls.NestedMessage(nested_string_field="v")},
        simple_map={"a": 1},
        enum_field=cls.TestEnum.Value("GAMMA"),
        nullable_int_field=0,  # optional and set: 0, not NULL
        repeated_strings=["x", "y"],
    )
    other = cls(enum_field=7)  # no value of TestEnum (proto3 keeps the number)
    values = pa.array([msg.SerializeToString(), other.SerializeToString()])
    row, row2 = _decoder("complex_types", COMPLEX).decode(values).table.to_pylist()
    assert row["string_field"] == "s" and row["int_field"] == 0 and row["long_field"] == 0
    assert row["bool_field"] is True and row["bytes_field"] == b"\x00\x01"
    # nested messages: only their set fields (Message.getAllFields)
    assert json.loads(row["nested_message"]) == {"nested_string_field": "n"}
    assert json.loads(row["repeated_nested_messages"]) == [{"nested_int_field": 2}]
    assert json.loads(row["complex_map"]) == {"k": {"nested_string_field": "v"}}
    assert json.loads(row["simple_map"]) == {"a": 1}
    # enums by name; an unknown number as Java's EnumValueDescriptor names it
    assert row["enum_field"] == "GAMMA"
    assert row2["enum_field"] == "UNKNOWN_ENUM_VALUE_TestEnum_7"
    # optional not set: NULL; set to its default: the default
    assert row["nullable_string_field"] is None and row["nullable_int_field"] == 0
    # an empty repeated field is NULL (DataTypeTransformer standardizes it)
    assert row["repeated_strings"] == ["x", "y"] and row2["repeated_strings"] is None
    # a column of no field of the message (this .desc predates repeated_ints): NULL
    assert row["repeated_ints"] is None and row["repeated_enums"] is None


def test_nested_message_class_and_bad_bytes():
    # testNestedMessageClass
    schema = pa.schema([("nested_string_field", pa.string()), ("nested_int_field", pa.int32())])
    nested = _cls("complex_types", "TestMessage.NestedMessage")(
        nested_string_field="hello", nested_int_field=42
    )
    dec = _decoder("complex_types", schema, "TestMessage.NestedMessage")
    got = dec.decode(pa.array([nested.SerializeToString(), b"\x0a\xff"]))
    assert got.table.to_pylist() == [{"nested_string_field": "hello", "nested_int_field": 42}]
    [error] = got.errors
    assert error.index == 1 and "Protobuf bytes do not decode" in error.reason


def test_composite_message_default_class():
    # testCompositeMessage: the default message of composite_types.desc is CompositeMessage
    cls = _cls("composite_types")
    raw = cls().SerializeToString()  # nothing set: both messages NULL
    schema = pa.schema([("sample_record", pa.string()), ("test_message", pa.string())])
    msg = cls()
    msg.sample_record.name = "Alice"
    msg.sample_record.id = 18
    got = _decoder("composite_types", schema).decode(pa.array([msg.SerializeToString(), raw]))
    rows = got.table.to_pylist()
    assert json.loads(rows[0]["sample_record"]) == {"name": "Alice", "id": 18}
    assert rows[0]["test_message"] is None and rows[1] == {
        "sample_record": None,
        "test_message": None,
    }


def _stream(**props):
    return {
        "streamType": "kafka",
        "stream.kafka.topic.name": "t",
        "stream.kafka.broker.list": "127.0.0.1:9092",
        "stream.kafka.decoder.class.name": (
            "org.apache.pinot.plugin.inputformat.protobuf.ProtoBufMessageDecoder"
        ),
        **{f"stream.kafka.decoder.prop.{k}": v for k, v in props.items()},
    }


def test_a_pinot_config_naming_it_lowers_with_the_descriptor_read():
    from sparkpipes.frontends.pinot.lowering import lower
    from sparkpipes.frontends.pinot.model import load_schema, load_table

    schema = load_schema(
        {
            "schemaName": "t",
            "dimensionFieldSpecs": [{"name": "name", "dataType": "STRING"}],
            "metricFieldSpecs": [{"name": "id", "dataType": "INT"}],
        }
    )
    uri = (HERE / "sample.desc").as_uri()  # Pinot's tests give a file: URI
    doc = {
        "tableName": "t",
        "tableType": "REALTIME",
        "segmentsConfig": {},
        "tableIndexConfig": {"streamConfigs": _stream(descriptorFile=uri)},
    }
    cfg = load_table(doc, schema)
    assert not cfg.unrecognized
    spec = lower(schema, cfg)
    assert spec.format.kind == "protobuf"
    assert base64.b64decode(spec.format.options[DESCRIPTOR_OPTION]) == _desc("sample")
    assert spec.format.options["decoder.prop.descriptorFile"] == uri


@pytest.mark.parametrize(
    "props, message",
    [
        ({}, "Protocol Buffer schema descriptor file must be provided"),
        ({"descriptorFile": "s3://bucket/x.desc"}, "file system 's3' is not read here"),
        # missing or not a descriptor set: the same words, nothing of the file told
        ({"descriptorFile": "/nonexistent/x.desc"}, "cannot be used as a Protobuf descriptor"),
        ({"descriptorFile": str(HERE / "sample.proto")}, "cannot be used as a Protobuf descriptor"),
        (
            {"descriptorFile": str(HERE / "sample.desc"), "protoClassName": "Nope"},
            "protoClassName 'Nope'",
        ),
    ],
)
def test_descriptor_problems_are_named(props, message):
    from sparkpipes.frontends.pinot.stream import load_stream

    with pytest.raises(ConfigError, match=message):
        load_stream(_stream(**props), "streamConfigs", table="t")


def test_the_descriptor_file_asks_file_read():
    from sparkpipes.frontends.pinot.stream import local_file_keys

    keys = local_file_keys(_stream(descriptorFile="sample.desc", protoClassName="X"))
    assert keys == ["stream.kafka.decoder.prop.descriptorFile"]

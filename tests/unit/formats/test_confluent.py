"""Pinot's ``KafkaConfluentSchemaRegistryProtoBufMessageDecoder`` and
``KafkaConfluentSchemaRegistryJsonMessageDecoder`` (``formats.confluent``) against a real
HTTP server on 127.0.0.1 (the stand-in registry of ``sparkpipes.testing.registry``, serving
Protobuf schemas as Confluent's registry answers ``format=serialized``), with Pinot's own
descriptor files (``tests/unit/formats/protobuf``: composite_types imports two others,
registered as references). Behaviour per Pinot's decoders (pinot-plugins/
pinot-input-format/pinot-confluent-protobuf and pinot-confluent-json: a message without
the magic byte is discarded) and Confluent's wire format (``MessageIndexes.readFrom``)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2, message_factory

from sparkpipes.errors import ConfigError, SourceUnavailableError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.confluent import message_indexes
from sparkpipes.formats.protobuf import message_descriptor
from sparkpipes.testing.registry import framed

DESCS = Path(__file__).parent / "protobuf"


def _files() -> dict[str, descriptor_pb2.FileDescriptorProto]:
    data = (DESCS / "composite_types.desc").read_bytes()
    return {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(data).file}


def _serialized(proto: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(proto.SerializeToString()).decode()


@pytest.fixture(scope="module")
def schemas(registry):
    """composite_types in the registry, its two imports as references (by subject)."""
    files = _files()
    refs = []
    for subject, name in (
        ("sample-value", "sample.proto"),
        ("complex-value", "complex_types.proto"),
    ):
        registry.register_typed(_serialized(files[name]), "PROTOBUF", subject=subject)
        refs.append({"name": name, "subject": subject, "version": 1})
    root = registry.register_typed(
        _serialized(files["composite_types.proto"]), "PROTOBUF", references=refs
    )
    complex_only = registry.register_typed(_serialized(files["complex_types.proto"]), "PROTOBUF")
    return {"root": root, "complex": complex_only}


def _types(class_name: str):
    desc = message_descriptor((DESCS / "composite_types.desc").read_bytes(), class_name)
    return message_factory.GetMessageClass(desc)


def _decoder(kind: str, url: str, schema: pa.Schema, **options):
    return build_decoder(kind, schema, (), None, {"schema.registry.url": url, **options})


def test_message_indexes_as_confluent_writes_them():
    assert message_indexes(b"\x00\x00\x00\x00\x01\x00rest") == ([0], 6)
    assert message_indexes(framed(1, b"x", (0, 2))) == ([0, 2], 8)
    assert message_indexes(framed(1, b"x", (1, 0, 3))) == ([1, 0, 3], 9)


def test_protobuf_with_references_and_nested_indexes(registry, schemas):
    composite = _types("CompositeMessage")
    msg = composite()
    msg.sample_record.name = "Alice"
    msg.test_message.string_field = "s"
    nested = _types("TestMessage.NestedMessage")(nested_int_field=7)
    schema = pa.schema(
        [
            ("sample_record", pa.string()),
            ("test_message", pa.string()),
            ("nested_int_field", pa.int32()),
        ]
    )
    dec = _decoder("protobuf-registry", registry.url, schema)
    values = pa.array(
        [
            framed(schemas["root"], msg.SerializeToString(), (0,)),
            # TestMessage.NestedMessage of complex_types: message indexes [0, 0]
            framed(schemas["complex"], nested.SerializeToString(), (0, 0)),
            b"\x01not framed",  # Pinot discards it ("Unknown magic byte!"): no row, no error
            framed(999, b"", (0,)),  # an id the registry does not know
            framed(schemas["root"], b"\x0a\xff", (0,)),  # bytes that do not decode
            framed(schemas["complex"], b"", (0, 9)),  # no such nested message
            b"\x00\x00",  # too short for its header
        ]
    )
    got = dec.decode(values)
    assert got.kept.to_pylist() == [0, 1]
    rows = got.table.to_pylist()
    assert json.loads(rows[0]["sample_record"]) == {"name": "Alice"}
    assert json.loads(rows[0]["test_message"]) == {"string_field": "s"}
    assert rows[1]["nested_int_field"] == 7
    reasons = {e.index: e.reason for e in got.errors}
    assert sorted(reasons) == [3, 4, 5, 6]
    assert "schema id 999 is not in the schema registry" in reasons[3]
    assert "Protobuf bytes do not decode" in reasons[4]
    assert "names no message" in reasons[5]
    assert "shorter than its header" in reasons[6]


def test_json_bodies_read_as_pinots_json_decoder(registry):
    sid = registry.register_typed(json.dumps({"type": "object"}), "JSON")
    schema = pa.schema([("id", pa.int64()), ("city", pa.string())])
    dec = _decoder("json-registry", registry.url, schema)
    values = pa.array(
        [
            framed(sid, b'{"id": 1, "city": "Paris"}'),
            b'{"id": 2}',  # no magic byte: discarded, as Pinot's decoder does
            framed(sid, b'{"id": 3}'),
            framed(4242, b'{"id": 4}'),
            framed(sid, b"{not json"),
        ]
    )
    got = dec.decode(values)
    assert got.kept.to_pylist() == [0, 2]
    assert got.table.to_pylist() == [{"id": 1, "city": "Paris"}, {"id": 3, "city": None}]
    assert sorted(e.index for e in got.errors) == [3, 4]


def test_a_registry_that_does_not_answer_fails_the_batch_without_its_password():
    schema = pa.schema([("id", pa.int64())])
    dec = _decoder("json-registry", "http://u:s3cret@127.0.0.1:9", schema)
    with pytest.raises(SourceUnavailableError) as e:
        dec.decode(pa.array([framed(1, b'{"id": 1}')]))
    assert "s3cret" not in str(e.value)


def test_pinot_configs_naming_them_lower_onto_them(registry):
    from sparkpipes.frontends.pinot.lowering import lower
    from sparkpipes.frontends.pinot.model import load_schema, load_table

    schema = load_schema(
        {"schemaName": "t", "dimensionFieldSpecs": [{"name": "id", "dataType": "LONG"}]}
    )
    for cls, kind in (
        ("protobuf.KafkaConfluentSchemaRegistryProtoBufMessageDecoder", "protobuf-registry"),
        ("json.confluent.KafkaConfluentSchemaRegistryJsonMessageDecoder", "json-registry"),
    ):
        stream = {
            "streamType": "kafka",
            "stream.kafka.topic.name": "t",
            "stream.kafka.broker.list": "127.0.0.1:9092",
            "stream.kafka.decoder.class.name": f"org.apache.pinot.plugin.inputformat.{cls}",
            "stream.kafka.decoder.prop.schema.registry.rest.url": registry.url,
            "stream.kafka.decoder.prop.schema.registry.basic.auth.user.info": "u:pw",
            "stream.kafka.decoder.prop.cached.schema.map.capacity": "100",
        }
        doc = {
            "tableName": "t",
            "tableType": "REALTIME",
            "segmentsConfig": {},
            "tableIndexConfig": {"streamConfigs": stream},
        }
        cfg = load_table(doc, schema)
        assert not cfg.unrecognized
        spec = lower(schema, cfg)
        assert spec.format.kind == kind
        assert spec.format.options["schema.registry.url"] == registry.url
        assert "pw" not in json.dumps(dict(spec.format.options))
        no_url = {k: v for k, v in stream.items() if "rest.url" not in k}
        with pytest.raises(ConfigError, match=r"schema\.registry\.rest\.url"):
            load_table({**doc, "tableIndexConfig": {"streamConfigs": no_url}}, schema)

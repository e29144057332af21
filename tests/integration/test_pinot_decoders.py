"""Pinot's own message decoders on the real broker (Tansu), through the whole pipeline:
``CSVMessageDecoder`` (``formats.pinot_csv``) loading typed and multi-value columns exactly
once, ``ProtoBufMessageDecoder`` (``formats.protobuf``) with Pinot's own descriptor file; a
``KafkaConfluentSchemaRegistryProtoBufMessageDecoder`` and ``…JsonMessageDecoder``
(``formats.confluent``) with schemas from the stand-in registry; a message that does not
decode in the errors store with its partition and offset, loading going on after it (as
Pinot's consumer drops it), or failing the batch with ``stopOnDecodeError``."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from google.protobuf import descriptor_pb2, message_factory

from sparkpipes.errors import SparkpipesError
from sparkpipes.formats.protobuf import message_descriptor
from sparkpipes.testing.registry import framed
from tests.integration.test_pinot_tables import load, rows, schema, table_config

CSV = "org.apache.pinot.plugin.inputformat.csv.CSVMessageDecoder"


def _csv_table(broker, topic, **extra):
    return table_config(
        broker,
        topic,
        stream={
            "stream.kafka.decoder.class.name": CSV,
            # Pinot's CSVMessageDecoderTest props: header, ';' fields, ',' multi-values
            "stream.kafka.decoder.prop.header": "id;city;tags;ts",
            "stream.kafka.decoder.prop.delimiter": ";",
            "stream.kafka.decoder.prop.multiValueDelimiter": ",",
            "stream.kafka.decoder.prop.nullStringValue": "null",
        },
        **extra,
    )


def _schema():
    return schema(
        [
            {"name": "id", "dataType": "INT"},
            {"name": "city", "dataType": "STRING"},
            {"name": "tags", "dataType": "STRING", "singleValueField": False},
        ]
    )


def _produce(broker, topic, messages):
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for m in messages:
        p.produce(topic, m, partition=0)
    assert p.flush(30) == 0


def test_csv_messages_load_once_values_convert_as_pinot_and_bad_ones_go_to_the_errors_store(
    engine, broker, topic
):
    _produce(
        broker,
        topic,
        [
            b"1;Paris;a,b;1700000000000",
            b"2;null;c;1700000000001",
            b"two;Rome;;1700000000002",  # id is no INT
            b'3;"Lyon;Nord";;1700000000003',
            b'4;"Ni"ce;;1700000000004',  # text after a quoted field: does not decode
            b" 5 ;Metz;;1700000000005",  # Integer.parseInt(trim): 5
        ],
    )
    load(engine, _csv_table(broker, topic, ingestionConfig={"continueOnError": True}), _schema())
    engine.run_batches("t_REALTIME", 3, until_idle=True)  # again: nothing more
    got = rows(engine)
    # continueOnError: "two" does not convert (STRING.toInt, PinotDataType at apache/pinot
    # 210c2951e72), so DataTypeTransformer stores null and keeps the row, which then holds
    # the INT dimension's default null value, Integer.MIN_VALUE (FieldSpec); a NULL
    # STRING dimension holds "null"
    assert {i: (r["city"], r["tags"]) for i, r in got.items()} == {
        1: ("Paris", ["a", "b"]),
        2: ("null", ["c"]),
        -(2**31): ("Rome", ["null"]),
        3: ("Lyon;Nord", ["null"]),
        5: ("Metz", ["null"]),
    }
    # a message the decoder cannot read is dropped (Pinot's consumer): the errors store
    [error] = engine.errors("t_REALTIME")
    assert error["partition"] == "0" and error["offset"] == 4
    assert "invalid char" in error["reason"]


def test_without_continue_on_error_a_bad_message_is_dropped_and_loading_goes_on(
    engine, broker, topic
):
    # Pinot's consumer drops a record its transforms cannot load (a segment error) and
    # consumes on: here it goes to the errors store, and the rows after it load
    _produce(broker, topic, [b"1;Paris;;1", b"#;;;", b"2;Rome;;2"])
    load(engine, _csv_table(broker, topic), _schema())
    assert sorted(rows(engine)) == [1, 2]
    [error] = engine.errors("t_REALTIME")
    assert error["partition"] == "0" and error["offset"] == 1
    assert "'id'" in error["reason"]


def test_stop_on_decode_error_fails_the_batch_at_the_bad_message(engine, broker, topic):
    _produce(broker, topic, [b"1;Paris;;1", b"#;;;"])
    t = _csv_table(broker, topic)
    t["tableIndexConfig"]["streamConfigs"]["stopOnDecodeError"] = "true"
    engine.pinot.add(t, _schema())
    with pytest.raises(SparkpipesError, match=r"partition 0 offset 1: column .id."):
        engine.run_batches("t_REALTIME", 1)
    assert rows(engine) == {}  # the batch failed as a whole: the good row waits too


PROTOBUF = "org.apache.pinot.plugin.inputformat.protobuf.ProtoBufMessageDecoder"
DESCRIPTORS = Path(__file__).parents[1] / "unit" / "formats" / "protobuf"


def test_protobuf_messages_by_a_descriptor_file(engine, broker, topic):
    # Pinot's own sample.desc (SampleRecord), as its ProtoBufMessageDecoderTest uses it
    record = message_factory.GetMessageClass(
        message_descriptor((DESCRIPTORS / "sample.desc").read_bytes(), "SampleRecord")
    )
    messages = [
        record(name="Alice", id=1, email="a@x", friends=["Bob", "Eve"]).SerializeToString(),
        record(name="Bob", id=2).SerializeToString(),
        b"\x0a\xff",  # a string field longer than the message: does not decode
        record(id=3, email="e").SerializeToString(),
    ]
    _produce(broker, topic, messages)
    t = table_config(
        broker,
        topic,
        stream={
            "stream.kafka.decoder.class.name": PROTOBUF,
            "stream.kafka.decoder.prop.descriptorFile": str(DESCRIPTORS / "sample.desc"),
            "stream.kafka.decoder.prop.protoClassName": "SampleRecord",
        },
        ingestionConfig={"continueOnError": True},
    )
    s = schema(
        [
            {"name": "id", "dataType": "INT"},
            {"name": "name", "dataType": "STRING"},
            {"name": "friends", "dataType": "STRING", "singleValueField": False},
            {"name": "email", "dataType": "STRING"},
        ]
    )
    load(engine, t, s)
    engine.run_batches("t_REALTIME", 3, until_idle=True)
    got = {i: (r["name"], r["friends"], r["email"]) for i, r in rows(engine).items()}
    # a proto3 string without presence is "" when not set; an empty repeated field is
    # NULL, then Pinot's default null value of a STRING dimension ("null")
    assert got == {
        1: ("Alice", ["Bob", "Eve"], "a@x"),
        2: ("Bob", ["null"], ""),
        3: ("", ["null"], "e"),
    }
    [error] = engine.errors("t_REALTIME")
    assert error["partition"] == "0" and error["offset"] == 2
    assert "Protobuf bytes do not decode" in error["reason"]


def test_confluent_protobuf_and_json_messages_by_the_registry(engine, broker, topic, registry):
    # Protobuf: Pinot's sample.desc as the registry serves it (format=serialized)
    [proto] = descriptor_pb2.FileDescriptorSet.FromString(
        (DESCRIPTORS / "sample.desc").read_bytes()
    ).file
    pid = registry.register_typed(base64.b64encode(proto.SerializeToString()).decode(), "PROTOBUF")
    jid = registry.register_typed(json.dumps({"type": "object"}), "JSON")
    record = message_factory.GetMessageClass(
        message_descriptor((DESCRIPTORS / "sample.desc").read_bytes(), None)
    )
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):
        body = record(name=f"n{i}", id=i).SerializeToString()
        p.produce(topic, framed(pid, body, (0,)), partition=0)
        p.produce(
            topic, framed(jid, json.dumps({"id": 10 + i, "name": f"j{i}"}).encode()), partition=1
        )
    p.produce(topic, b"\x07unframed", partition=0)  # discarded, as Pinot does
    p.produce(topic, framed(pid, b"\x0a\xff", (0,)), partition=0)  # does not decode
    assert p.flush(30) == 0
    s = schema([{"name": "id", "dataType": "INT"}, {"name": "name", "dataType": "STRING"}])
    for n, cls in enumerate(
        (
            "protobuf.KafkaConfluentSchemaRegistryProtoBufMessageDecoder",
            "json.confluent.KafkaConfluentSchemaRegistryJsonMessageDecoder",
        )
    ):
        t = table_config(
            broker,
            topic,
            stream={
                "stream.kafka.decoder.class.name": f"org.apache.pinot.plugin.inputformat.{cls}",
                "stream.kafka.decoder.prop.schema.registry.rest.url": registry.url,
                "stream.kafka.partition.ids": str(n),  # partition 0: Protobuf, 1: JSON
            },
            ingestionConfig={"continueOnError": True},
        )
        t["tableName"] = f"t{n}"
        t["segmentsConfig"]["schemaName"] = f"t{n}"
        engine.pinot.add(t, {**s, "schemaName": f"t{n}"})
        engine.run_batches(f"t{n}_REALTIME", 10, until_idle=True)
    got = {r["id"]: r["name"] for r in engine.table_arrow("t0").to_pylist()}
    assert got == {0: "n0", 1: "n1", 2: "n2"}
    got = {r["id"]: r["name"] for r in engine.table_arrow("t1").to_pylist()}
    assert got == {10: "j0", 11: "j1", 12: "j2"}
    [error] = engine.errors("t0_REALTIME")
    assert error["partition"] == "0" and error["offset"] == 4
    assert "Protobuf bytes do not decode" in error["reason"]
    assert engine.errors("t1_REALTIME") == []

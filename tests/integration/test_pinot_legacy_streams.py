"""Pinot configs of older Pinot on the real broker: the high-level consumer
(``consumer.type: highLevel`` with ``hlc.bootstrap.server``) loading the same rows, exactly
once, as a low-level one; Pinot's own ``KafkaAvroMessageDecoder`` (LinkedIn's framing, the
schema fetched by its hash from a schema repository over HTTP on 127.0.0.1); and
``DATETIME_CONVERT`` bucketing the time into a TIMESTAMP column."""

from __future__ import annotations

from confluent_kafka import Producer

from sparkpipes.testing.registry import encode_hashed
from tests.integration.test_pinot_tables import load, produce, rows, schema, table_config

AVRO = {
    "type": "record",
    "name": "event",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "city", "type": "string"},
        {"name": "ts", "type": "long"},
    ],
}


def test_a_high_level_config_loads_every_record_once(engine, broker, topic):
    s = schema(
        [
            {"name": "id", "dataType": "INT"},
            {"name": "__key", "dataType": "STRING"},
            {"name": "bucket", "dataType": "TIMESTAMP"},
        ]
    )
    t = table_config(
        broker,
        topic,
        stream={
            "stream.kafka.consumer.type": "highLevel",
            "stream.kafka.broker.list": "",
            "stream.kafka.hlc.bootstrap.server": broker.bootstrap,
            "stream.kafka.hlc.zk.connect.string": "127.0.0.1:2191/kafka",
        },
        ingestionConfig={
            "transformConfigs": [
                {
                    "columnName": "bucket",
                    "transformFunction": (
                        "DATETIME_CONVERT(ts, '1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', "
                        "'10:SECONDS')"
                    ),
                }
            ]
        },
    )
    base = 1_700_000_000_000
    for part in range(2):
        produce(
            broker,
            topic,
            [(b"k", {"id": part * 10 + i, "ts": base + 4_000 * i}, None) for i in range(5)],
            partition=part,
        )
    load(engine, t, s)
    engine.run_batches("t_REALTIME", 3, until_idle=True)  # again: nothing more
    got = rows(engine)
    assert sorted(got) == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    # Pinot's high-level consumer hands its decoder the value only: __key is its default
    assert {r["__key"] for r in got.values()} == {"null"}
    millis = {i: int(r["bucket"].timestamp() * 1000) for i, r in got.items()}
    assert millis[0] == base // 10_000 * 10_000
    assert millis[3] == (base + 12_000) // 10_000 * 10_000


def test_pinots_own_avro_decoder_reads_schemas_by_their_hash(engine, broker, topic, registry):
    registry.hash_status = None
    registry.register_hashed(AVRO)
    s = schema([{"name": "id", "dataType": "INT"}, {"name": "city", "dataType": "STRING"}])
    t = table_config(
        broker,
        topic,
        stream={
            "stream.kafka.decoder.class.name": (
                "org.apache.pinot.plugin.stream.kafka.KafkaAvroMessageDecoder"
            ),
            "stream.kafka.decoder.prop.schema.registry.rest.url": registry.repository_url,
            "stream.kafka.decoder.prop.schema.registry.schema.name": "event",
        },
    )
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        p.produce(topic, encode_hashed(AVRO, {"id": i, "city": f"c{i}", "ts": i}), partition=0)
    p.produce(topic, b"", partition=0)  # Pinot's decoder gives no row for it
    assert p.flush(30) == 0
    load(engine, t, s)
    assert {i: r["city"] for i, r in rows(engine).items()} == {i: f"c{i}" for i in range(4)}

"""``stream.kafka.consumer.type: highlevel`` (``frontends/pinot/highlevel.py``): Pinot's
high-level Kafka consumer (``KafkaStreamLevelConsumer`` of pinot-kafka-2.0) loads the same
records' values as the low-level one, so such a config is read as lowlevel, from the
brokers of ``stream.kafka.hlc.bootstrap.server``; its decoder gets no key and no metadata,
as Pinot's did; brokers found through ZooKeeper only (Kafka 0.9) are refused by name."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.lowering import RECORD_METADATA, lower
from sparkpipes.frontends.pinot.model import load_schema, load_table

CORPUS = pathlib.Path(__file__).parents[3] / "corpus" / "pinot"
KAFKA20 = "apache-pinot-history/sample-data-kafka-2-0-meetupRsvp-realtime-table-config"
KAFKA09 = "apache-pinot-history/sample-data-kafka-0-9-meetupRsvp-realtime-table-config"


def _pair(item: str) -> tuple[dict, dict]:
    table = json.loads((CORPUS / f"{item}.table.json").read_text())
    schema = json.loads((CORPUS / f"{item}.schema.json").read_text())
    return table, schema


def _streams(table: dict) -> dict:
    return table["tableIndexConfig"]["streamConfigs"]


def test_the_kafka_2_high_level_config_is_read_as_the_low_level_one():
    table, schema_doc = _pair(KAFKA20)
    schema = load_schema(schema_doc)
    cfg = load_table(table, schema)
    spec = lower(schema, cfg)
    # the brokers of hlc.bootstrap.server, the topic, JSON, Kafka's default start (latest)
    assert (spec.source.kind, spec.source.location, spec.source.start) == (
        "kafka",
        "localhost:19092/meetupRSVPEvents",
        "latest",
    )
    assert spec.format.kind == "pinot-json"
    assert RECORD_METADATA not in spec.source.config
    assert cfg.stream.high_level and not cfg.stream.metadata_populate
    # the consumer group's ZooKeeper keys change nothing here: reported, not applied
    unrecognized = set(cfg.unrecognized)
    assert "tableIndexConfig.streamConfigs.stream.kafka.hlc.zk.connect.string" in unrecognized
    assert not any("hlc.bootstrap.server" in k for k in unrecognized)  # used: the brokers
    assert any("highlevel: read as lowlevel" in n for n in cfg.notes)
    assert any("come from stream.kafka.hlc.bootstrap.server" in n for n in cfg.notes)

    low_table = copy.deepcopy(table)
    streams = _streams(low_table)
    streams["stream.kafka.consumer.type"] = "lowlevel"
    streams["stream.kafka.broker.list"] = streams.pop("stream.kafka.hlc.bootstrap.server")
    low = lower(schema, load_table(low_table, schema))
    # the same pipeline as the low-level config of the same stream
    assert (low.source, low.format, low.transform, low.sink) == (
        spec.source,
        spec.format,
        spec.transform,
        spec.sink,
    )


def test_the_high_level_consumer_fills_no_key_and_no_metadata():
    table, schema_doc = _pair(KAFKA20)
    schema_doc["dimensionFieldSpecs"].append({"name": "__key", "dataType": "STRING"})
    _streams(table)["metadata.populate"] = "true"
    schema = load_schema(schema_doc)
    cfg = load_table(table, schema)
    spec = lower(schema, cfg)
    assert RECORD_METADATA not in spec.source.config  # neither the key nor metadata
    assert any("lists __key" in n for n in cfg.notes)
    # the low-level consumer fills __key from the record's key
    _streams(table)["stream.kafka.consumer.type"] = "lowlevel"
    _streams(table)["stream.kafka.broker.list"] = "localhost:19092"
    del _streams(table)["metadata.populate"]
    low = lower(schema, load_table(table, schema))
    assert RECORD_METADATA in low.source.config


def test_brokers_found_through_zookeeper_are_refused_with_the_way_out():
    table, schema_doc = _pair(KAFKA09)
    with pytest.raises(ConfigError) as e:
        load_table(table, load_schema(schema_doc))
    assert "found through ZooKeeper (stream.kafka.hlc.zk.connect.string" in str(e.value)
    assert "give the brokers in stream.kafka.hlc.bootstrap.server" in str(e.value)
    # and says that current Pinot refuses every high-level consumer (its StreamConfig)
    assert (
        "Realtime tables with HLC consumer (consumer.type=highlevel) is no longer supported "
        "in Apache Pinot" in str(e.value)
    )
    _streams(table)["stream.kafka.hlc.bootstrap.server"] = "127.0.0.1:9092"
    cfg = load_table(table, load_schema(schema_doc))
    assert cfg.stream.brokers == "127.0.0.1:9092" and cfg.stream.high_level


def test_a_low_level_config_reports_the_bootstrap_server_as_not_applicable():
    table, schema_doc = _pair(KAFKA20)
    streams = _streams(table)
    streams["stream.kafka.consumer.type"] = "LowLevel"
    streams["stream.kafka.broker.list"] = "127.0.0.1:9092"
    cfg = load_table(table, load_schema(schema_doc))
    assert not cfg.stream.high_level and cfg.stream.brokers == "127.0.0.1:9092"
    assert "tableIndexConfig.streamConfigs.stream.kafka.hlc.bootstrap.server" in set(
        cfg.unrecognized
    )

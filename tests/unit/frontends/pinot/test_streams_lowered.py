"""``stream.kafka.partition.ids`` (Pinot's ``KafkaPartitionSubsetUtils`` syntax) and the
Kinesis ``streamType`` (``KinesisConfig``'s keys), read and lowered onto sources: the Kafka
source's ``partitions`` option, the ``kinesis.records`` source; secrets typed and never
shown; what Pinot's Kinesis consumer ignores reported, what it cannot do refused by name."""

import json

import pytest

from sparkpipes.config.core import REDACTED, Secret
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.lowering import lower
from sparkpipes.frontends.pinot.model import load_schema, load_table, server_logins
from sparkpipes.sources import build_source
from sparkpipes.sources.kafka import KafkaSource
from sparkpipes.sources.kinesis import KinesisSource
from tests.unit.frontends.pinot.test_model import SCHEMA, TABLE, with_stream

STREAM = TABLE["tableIndexConfig"]["streamConfigs"]
KINESIS = {
    "streamType": "kinesis",
    "stream.kinesis.topic.name": "events",
    "stream.kinesis.decoder.class.name": (
        "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder"
    ),
    "stream.kinesis.consumer.factory.class.name": (
        "org.apache.pinot.plugin.stream.kinesis.KinesisConsumerFactory"
    ),
    "stream.kinesis.consumer.prop.auto.offset.reset": "largest",
    "region": "us-east-1",
    "shardIteratorType": "LATEST",
    "endpoint": "http://127.0.0.1:4566",
    "accessKey": "AKIDEXAMPLE",
    "secretKey": "wJalrXUtnFEMI-secret",
    "maxRecordsToFetch": "500",
    "requests_per_second_limit": "2",
    "realtime.segment.flush.threshold.time": "12h",
}


def _spec(stream):
    schema = load_schema(SCHEMA)
    return lower(schema, load_table(with_stream(stream), schema))


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        ("1", [1]),
        ("0,2,5", [0, 2, 5]),
        (" 5, 0 ,2,2 ", [0, 2, 5]),
        ("0-3,7,5-6", [0, 1, 2, 3, 5, 6, 7]),
    ],
)
def test_partition_ids_become_the_kafka_sources_partitions(ids, expected):
    spec = _spec({**STREAM, "stream.kafka.partition.ids": ids})
    assert spec.source.kind == "kafka" and spec.source.config["partitions"] == expected
    source = build_source(
        "kafka", spec.source.location, spec.source.config, spec.source.credentials
    )
    assert isinstance(source, KafkaSource) and source.only == tuple(expected)
    assert "partitions" not in source.client_config()  # the source's own option


@pytest.mark.parametrize("ids", ["", " ", ",,"])
def test_blank_partition_ids_read_every_partition(ids):
    spec = _spec({**STREAM, "stream.kafka.partition.ids": ids})
    assert "partitions" not in spec.source.config


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ("a,1", "stream.kafka.partition.ids must be partition ids and ranges"),
        ("-1", "stream.kafka.partition.ids must be partition ids and ranges"),
        ("5-2", "range start must be <= end in '5-2'"),
        ("0-10000", "names more than 10000 partitions"),
    ],
)
def test_bad_partition_ids_are_errors_naming_the_key(ids, message):
    with pytest.raises(ConfigError, match=message):
        load_table(with_stream({**STREAM, "stream.kafka.partition.ids": ids}))


@pytest.mark.parametrize("value", [[-1], ["x"], [True], [], "1,,x", 3])
def test_the_kafka_sources_partitions_option_is_checked(value):
    with pytest.raises(ConfigError, match="'partitions'"):
        KafkaSource("127.0.0.1:9092/t", {"partitions": value}, {})


def test_kinesis_lowers_onto_the_kinesis_records_source():
    table = load_table(with_stream(KINESIS), load_schema(SCHEMA))
    st = table.stream
    assert (st.stream_type, st.topic, st.decoder, st.start) == (
        "kinesis",
        "events",
        "json",
        "earliest",  # Pinot reads every new shard from its start, whatever the keys say
    )
    assert st.plugin == {
        "region": "us-east-1",
        "endpoint": "http://127.0.0.1:4566",
        "max.records": "500",
    }
    assert st.plugin_secrets == {
        "aws.access.key.id": Secret("AKIDEXAMPLE"),
        "aws.secret.access.key": Secret("wJalrXUtnFEMI-secret"),
    }
    assert st.flush.time_ms == 12 * 3_600_000
    reported = set(table.unrecognized)
    assert {
        "tableIndexConfig.streamConfigs.shardIteratorType",
        "tableIndexConfig.streamConfigs.stream.kinesis.consumer.prop.auto.offset.reset",
        "tableIndexConfig.streamConfigs.requests_per_second_limit",
    } <= reported
    spec = lower(load_schema(SCHEMA), table)
    assert (spec.source.kind, spec.source.location, spec.source.start) == (
        "kinesis.records",
        "events",
        "earliest",
    )
    assert spec.format.kind == "pinot-json"
    source = build_source(
        spec.source.kind, spec.source.location, spec.source.config, spec.source.credentials
    )
    assert isinstance(source, KinesisSource) and source.max_records == 500
    assert source.connector.client.endpoint == "http://127.0.0.1:4566"


def test_kinesis_secrets_are_never_shown():
    table = load_table(with_stream(KINESIS), load_schema(SCHEMA))
    shown = json.dumps(table.shown())
    assert "wJalrXUtnFEMI-secret" not in shown and "AKIDEXAMPLE" not in shown
    assert "wJalrXUtnFEMI-secret" not in repr(table)
    assert table.shown()["tableIndexConfig"]["streamConfigs"]["secretKey"] == REDACTED
    spec = lower(load_schema(SCHEMA), table)
    assert "wJalrXUtnFEMI-secret" not in repr(spec.source) + json.dumps(spec.source.config)


def test_kinesis_without_keys_signs_in_as_the_server():
    stream = {k: v for k, v in KINESIS.items() if k not in ("accessKey", "secretKey")}
    spec = _spec(stream)
    assert spec.source.credentials == {}
    assert KinesisSource.signs_in_as_server(spec.source.config, spec.source.credentials)
    assert not KinesisSource.signs_in_as_server({}, {"aws.access.key.id": Secret("AK")})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"region": None}, "Must provide 'region'"),
        ({"secretKey": None}, "give both accessKey and secretKey, or neither"),
        ({"maxRecordsToFetch": "20000"}, "maxRecordsToFetch must be a whole number from 1"),
        ({"iamRoleBasedAccessEnabled": "true", "roleArn": "arn:x"}, "iamRoleBasedAccessEnabled"),
        ({"metadata.populate": "true"}, "metadata.populate with streamType kinesis is not"),
        (
            {"stream.kinesis.consumer.factory.class.name": "com.acme.Factory"},
            "is not Pinot's Kinesis consumer factory",
        ),
        ({"stream.kinesis.topic.name": None}, "needs stream.kinesis.topic.name"),
    ],
)
def test_kinesis_config_errors_name_the_key(change, message):
    stream = {**KINESIS, **change}
    stream = {k: v for k, v in stream.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        load_table(with_stream(stream))


def test_kinesis_problems_come_all_at_once():
    stream = {**KINESIS, "maxRecordsToFetch": "0", "metadata.populate": "true"}
    del stream["region"]
    with pytest.raises(ConfigError) as e:
        load_table(with_stream(stream))
    text = str(e.value)
    assert "Must provide 'region'" in text and "metadata.populate with streamType" in text


def test_pulsar_stays_refused_by_name():
    stream = {
        "streamType": "pulsar",
        "stream.pulsar.topic.name": "t",
        "stream.pulsar.decoder.class.name": (
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder"
        ),
    }
    spec = _spec(stream)
    assert spec.source.kind == "stream"
    with pytest.raises(ConfigError, match="pulsar"):
        build_source(
            spec.source.kind, spec.source.location, spec.source.config, spec.source.credentials
        )


def test_kinesis_without_keys_is_named_for_the_rest_apis_file_read_check():
    keyless = {k: v for k, v in KINESIS.items() if k not in ("accessKey", "secretKey")}
    assert server_logins(with_stream(keyless)) == ["tableIndexConfig.streamConfigs"]
    assert server_logins(with_stream(KINESIS)) == []
    assert server_logins(with_stream(STREAM)) == [] and server_logins("{not json") == []

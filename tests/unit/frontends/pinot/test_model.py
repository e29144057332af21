"""Pinot schema and table config JSON (seed 002) checked into typed configs: every key of
the seed's examples understood, secrets typed and redacted, clear errors that name the key."""

import copy
import json
from pathlib import Path

import pytest

from sparkpipes.config.core import REDACTED, Secret
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.model import DateTimeFormat, load_schema, load_table
from sparkpipes.frontends.pinot.security import parse_jaas
from sparkpipes.frontends.pinot.stream import parse_duration_ms, parse_size

SEED = Path(__file__).parents[3] / "e2e" / "pinot"
SCHEMA = json.loads((SEED / "schema-stream.json").read_text())
TABLE = json.loads((SEED / "table-config-stream.json").read_text())

# seed 002's SSL example with its empty values left empty, except the ones it needs
SSL = {
    "tableName": "transcript",
    "tableType": "REALTIME",
    "segmentsConfig": {
        "timeColumnName": "timestamp",
        "timeType": "MILLISECONDS",
        "schemaName": "transcript",
        "replicasPerPartition": "1",
    },
    "tenants": {},
    "tableIndexConfig": {
        "loadMode": "MMAP",
        "streamConfigs": {
            "streamType": "kafka",
            "stream.kafka.consumer.type": "LowLevel",
            "stream.kafka.topic.name": "transcript-topic",
            "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.inputformat.avro.confluent.KafkaConfluentSchemaRegistryAvroMessageDecoder",
            "stream.kafka.consumer.factory.class.name": "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory",
            "stream.kafka.zk.broker.url": "pinot-zookeeper:2191/kafka",
            "stream.kafka.broker.list": "localhost:9092",
            "schema.registry.url": "",
            "security.protocol": "SSL",
            "ssl.truststore.location": "",
            "ssl.keystore.location": "",
            "ssl.truststore.password": "",
            "ssl.keystore.password": "",
            "ssl.key.password": "",
            "stream.kafka.decoder.prop.schema.registry.rest.url": "http://registry:8081",
            "stream.kafka.decoder.prop.schema.registry.ssl.truststore.location": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.keystore.location": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.truststore.password": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.keystore.password": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.keystore.type": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.truststore.type": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.key.password": "",
            "stream.kafka.decoder.prop.schema.registry.ssl.protocol": "",
        },
    },
    "metadata": {"customConfigs": {}},
}

SASL_STREAM = {
    "streamType": "kafka",
    "stream.kafka.consumer.type": "lowlevel",
    "stream.kafka.topic.name": "mytopic",
    "stream.kafka.consumer.prop.auto.offset.reset": "largest",
    "stream.kafka.consumer.factory.class.name": "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory",
    "stream.kafka.broker.list": "kafka:9092",
    "stream.kafka.schema.registry.url": "https://xxx",
    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.inputformat.avro.confluent.KafkaConfluentSchemaRegistryAvroMessageDecoder",
    "stream.kafka.decoder.prop.schema.registry.rest.url": "https://xxx",
    "stream.kafka.decoder.prop.basic.auth.credentials.source": "USER_INFO",
    "stream.kafka.decoder.prop.schema.registry.basic.auth.user.info": "schema_registry_username:schema_registry_password",
    "sasl.mechanism": "PLAIN",
    "security.protocol": "SASL_SSL",
    "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kafkausername" password="kafkapassword";',
    "realtime.segment.flush.threshold.rows": "0",
    "realtime.segment.flush.threshold.time": "24h",
    "realtime.segment.flush.autotune.initialRows": "3000000",
    "realtime.segment.flush.threshold.segment.size": "500M",
}


def with_stream(stream, table=TABLE):
    t = copy.deepcopy(table)
    t["tableIndexConfig"]["streamConfigs"] = stream
    return t


def test_seed_schema_and_table():
    s = load_schema(SCHEMA)
    assert s.name == "events" and s.names == ["uuid", "count", "ts"]
    assert [f.ddl_type for f in s.fields] == ["STRING", "INT", "TIMESTAMP"]
    assert s.field("ts").format == DateTimeFormat("EPOCH", "MILLISECONDS", 1)
    t = load_table(TABLE, s)
    assert (t.name, t.schema_name, t.time_column) == ("events", "events", "ts")
    st = t.stream
    assert (st.topic, st.brokers, st.decoder, st.start) == (
        "events",
        "kafka:9092",
        "json",
        "earliest",
    )
    assert st.flush.rows == 0 and st.flush.time_ms == 24 * 3_600_000
    assert st.flush.segment_bytes == 50 << 20
    assert st.client == {"isolation.level": "read_uncommitted"}
    assert not st.secrets and not st.metadata_populate


def test_stream_config_maps_form_and_largest():
    t = copy.deepcopy(TABLE)
    stream = t["tableIndexConfig"].pop("streamConfigs")
    stream["stream.kafka.consumer.prop.auto.offset.reset"] = "largest"
    t["ingestionConfig"] = {"streamIngestionConfig": {"streamConfigMaps": [stream]}}
    assert load_table(t).stream.start == "latest"


def test_ssl_example_empty_values_mean_not_given():
    t = load_table(SSL)
    st = t.stream
    assert st.decoder == "avro-registry" and st.registry_url == "http://registry:8081"
    assert st.client["security.protocol"] == "SSL" and not st.secrets
    assert any("zk.broker.url" in n for n in t.notes)


def test_sasl_example_secrets_typed_and_redacted():
    t = load_table(with_stream(SASL_STREAM))
    st = t.stream
    assert st.client["security.protocol"] == "SASL_SSL"
    assert st.client["sasl.mechanism"] == "PLAIN"
    assert "sasl.jaas.config" not in st.client
    assert st.secrets == {
        "sasl.username": Secret("kafkausername"),
        "sasl.password": Secret("kafkapassword"),
    }
    assert st.registry_secrets == {
        "schema.registry.basic.auth.user.info": Secret(
            "schema_registry_username:schema_registry_password"
        )
    }
    assert st.start == "latest" and st.flush.initial_rows == 3_000_000
    shown = json.dumps(t.shown())
    for secret in ("kafkapassword", "schema_registry_password"):
        assert secret not in shown and secret not in repr(t)
    assert t.shown()["tableIndexConfig"]["streamConfigs"]["sasl.jaas.config"] == REDACTED


def test_isolation_level_and_shaded_class_names():
    stream = dict(TABLE["tableIndexConfig"]["streamConfigs"])
    stream["stream.kafka.isolation.level"] = "read_committed"
    stream["stream.kafka.decoder.class.name"] = (
        "shaded.org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder"
    )
    stream["stream.kafka.consumer.factory.class.name"] = (
        "org.apache.pinot.plugin.stream.kafka30.KafkaConsumerFactory"
    )
    st = load_table(with_stream(stream)).stream
    assert st.client["isolation.level"] == "read_committed" and st.decoder == "json"


def test_simple_avro_schema_inline_or_file(tmp_path):
    avsc = {"type": "record", "name": "e", "fields": [{"name": "uuid", "type": "string"}]}
    stream = dict(TABLE["tableIndexConfig"]["streamConfigs"])
    stream["stream.kafka.decoder.class.name"] = (
        "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder"
    )
    with pytest.raises(ConfigError, match="The Avro schema must be provided"):
        load_table(with_stream(stream))
    stream["stream.kafka.decoder.prop.schema"] = json.dumps(avsc)
    assert load_table(with_stream(stream)).stream.avro_schema == json.dumps(avsc)
    path = tmp_path / "e.avsc"
    path.write_text(json.dumps(avsc))
    stream["stream.kafka.decoder.prop.schema"] = str(path)
    assert json.loads(load_table(with_stream(stream)).stream.avro_schema) == avsc


def test_a_schema_file_that_is_no_schema_is_named_without_its_content(tmp_path):
    """Missing, a directory, a JSON secret, an object without "type": one message, no
    content of the file, no uncaught exception."""
    stream = dict(TABLE["tableIndexConfig"]["streamConfigs"])
    stream["stream.kafka.decoder.class.name"] = (
        "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder"
    )
    (tmp_path / "creds.json").write_text('{"client_secret": "s3cr3t-value"}')
    (tmp_path / "notjson").write_text("password=s3cr3t-value\n")
    messages = set()
    for name in ("creds.json", "notjson", "missing.avsc", "."):
        path = str(tmp_path / name)
        stream["stream.kafka.decoder.prop.schema"] = path
        with pytest.raises(ConfigError, match="cannot be used as an Avro schema") as e:
            load_table(with_stream(stream))
        assert "s3cr3t" not in str(e.value) and "client_secret" not in str(e.value)
        messages.add(str(e.value))
    assert len(messages) == 1
    stream["stream.kafka.decoder.prop.schema"] = '{"name": "x"}'  # inline: no KeyError
    with pytest.raises(ConfigError, match="does not parse"):
        load_table(with_stream(stream))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            # a misspelt key is accepted, as Pinot accepts it; the key it misses is named
            {"stream.kafka.topic.name": "", "stream.kafka.topic.nmae": "x"},
            r"needs stream.kafka.topic.name; did you mean 'stream.kafka.topic.name' \(given: 'stream.kafka.topic.nmae'\)",
        ),
        (
            {
                "stream.kafka.consumer.type": "highLevel",
                "stream.kafka.broker.list": "",
                "stream.kafka.hlc.zk.connect.string": "zk:2181/kafka",
            },
            "highlevel with the brokers found through ZooKeeper",
        ),
        ({"stream.kafka.consumer.type": "fast"}, "must be lowlevel or highlevel, got 'fast'"),
        ({"stream.kafka.topic.name": ""}, "needs stream.kafka.topic.name"),
        (
            {
                "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.inputformat.protobuf.ProtoBufCodeGenMessageDecoder"
            },
            "decoder 'org.apache.pinot.plugin.inputformat.protobuf.ProtoBufCodeGenMessageDecoder' is not supported",
        ),
        ({"stream.kafka.decoder.class.name": "not a class"}, "is not a class name"),
        (
            {"stream.kafka.consumer.factory.class.name": "com.acme.Factory"},
            "not a Kafka consumer factory",
        ),
        (
            {"stream.kafka.consumer.prop.auto.offset.reset": "oldest"},
            "must be smallest, largest, a period",
        ),
        ({"stream.kafka.isolation.level": "serializable"}, "read_committed or read_uncommitted"),
        ({"security.protocol": "SASL_SSL"}, "needs sasl.jaas.config"),
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism must be one of"),
        ({"streamType": "Kafka!"}, "streamType must be a lower-case name"),
        ({"metadata.populate": "yes"}, "metadata.populate must be true or false"),
    ],
)
def test_stream_config_errors(change, message):
    stream = {**TABLE["tableIndexConfig"]["streamConfigs"], **change}
    with pytest.raises(ConfigError, match=message):
        load_table(with_stream(stream))


def test_jaas_parsing_never_echoes_the_password():
    assert parse_jaas(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username='u' password=\"p;w\";",
        "here",
    ) == ("u", "p;w")
    with pytest.raises(ConfigError) as e:
        parse_jaas('PlainLoginModule required username="u" pasword="hunter2";', "here")
    assert "has no password" in e.value.message and "hunter2" not in e.value.message
    with pytest.raises(ConfigError, match="GssapiLoginModule is not supported"):
        parse_jaas('com.x.GssapiLoginModule required username="u" password="p";', "here")


def test_table_config_errors():
    offline = {**TABLE, "tableType": "OFFLINE"}
    with pytest.raises(ConfigError, match="tableType OFFLINE"):
        load_table(offline)
    misspelt = {"tablename": "x", **{k: v for k, v in TABLE.items() if k != "tableName"}}
    with pytest.raises(
        ConfigError, match=r"needs a tableName; did you mean 'tableName' \(given: 'tablename'\)"
    ):
        load_table(misspelt)
    no_stream = copy.deepcopy(TABLE)
    del no_stream["tableIndexConfig"]["streamConfigs"]
    with pytest.raises(ConfigError, match="has no stream"):
        load_table(no_stream)
    other = copy.deepcopy(TABLE)
    other["segmentsConfig"]["schemaName"] = "clicks"
    with pytest.raises(ConfigError, match="names schema 'clicks'"):
        load_table(other, load_schema(SCHEMA))
    bad_time = copy.deepcopy(TABLE)
    bad_time["segmentsConfig"]["timeColumnName"] = "uuid"
    with pytest.raises(ConfigError, match="must be a dateTime field"):
        load_table(bad_time, load_schema(SCHEMA))


def test_schema_types_and_errors():
    s = load_schema(
        {
            "schemaName": "all",
            "dimensionFieldSpecs": [
                {"name": n.lower(), "dataType": n}
                for n in (
                    "INT",
                    "LONG",
                    "FLOAT",
                    "DOUBLE",
                    "BIG_DECIMAL",
                    "BOOLEAN",
                    "TIMESTAMP",
                    "STRING",
                    "JSON",
                    "BYTES",
                )
            ]
            + [
                {
                    "name": "tags",
                    "dataType": "STRING",
                    "singleValueField": False,
                    "defaultNullValue": "none",
                }
            ],
            "primaryKeyColumns": ["int"],
        }
    )
    assert [f.ddl_type for f in s.fields] == [
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DECIMAL(38,18)",
        "BOOLEAN",
        "TIMESTAMP",
        "STRING",
        "STRING",
        "BINARY",
        "ARRAY<STRING>",
    ]
    assert s.primary_key == ("int",) and s.field("tags").default_null == "none"
    for doc, message in [
        (
            {"schemaName": "x", "dimensionFieldSpecs": [{"name": "a", "dataType": "CHAR"}]},
            "not a Pinot data type",
        ),
        (
            {"schemaName": "x", "metricFieldSpecs": [{"name": "a", "dataType": "STRING"}]},
            "a metric field cannot be STRING",
        ),
        (
            {
                "schemaName": "x",
                "dateTimeFieldSpecs": [
                    {"name": "a", "dataType": "LONG", "format": "1:HOURS:EPOCH"}
                ],
            },
            "needs a granularity",
        ),
        (
            {
                "schemaName": "x",
                "dateTimeFieldSpecs": [
                    {
                        "name": "a",
                        "dataType": "LONG",
                        "format": "1:EONS:EPOCH",
                        "granularity": "1:HOURS",
                    }
                ],
            },
            "not a Pinot dateTime format",
        ),
        (
            {
                "schemaName": "x",
                "dimensionFieldSpecs": [{"name": "a", "dataType": "INT"}],
                "primaryKeyColumns": ["b"],
            },
            "primary key column 'b'",
        ),
        (
            {
                "schemaName": "x",
                "dimensionFieldSpecs": [
                    {"name": "a", "dataType": "INT"},
                    {"name": "a", "dataType": "LONG"},
                ],
            },
            "twice",
        ),
        ("{not json", "not valid JSON"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_schema(doc)


def test_datetime_formats_and_units():
    assert DateTimeFormat.parse("1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd", "f").pattern == "yyyy-MM-dd"
    assert DateTimeFormat.parse("EPOCH|SECONDS|5", "f") == DateTimeFormat("EPOCH", "SECONDS", 5)
    assert DateTimeFormat.parse("SIMPLE_DATE_FORMAT|yyyyMMdd", "f").kind == "SIMPLE_DATE_FORMAT"
    assert DateTimeFormat.parse("TIMESTAMP", "f").kind == "TIMESTAMP"
    assert (
        parse_duration_ms("6h", "x") == 6 * 3_600_000 and parse_duration_ms("90m", "x") == 5_400_000
    )
    assert parse_size("500M", "x") == 500 << 20 and parse_size("1G", "x") == 1 << 30


@pytest.mark.parametrize(
    "fmt",
    [
        "1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-ddTHH:MM:ss",
        "SIMPLE_DATE_FORMAT|yyyy-MM-ddTHH:mm",
        "1:DAYS:SIMPLE_DATE_FORMAT:uuuu-MM-dd tz(UTC)",
        # the pipe form gives its zone apart: ' tz(…)' is part of its pattern
        "SIMPLE_DATE_FORMAT|yyyy tz(UTC)|UTC",
    ],
)
def test_a_pattern_joda_refuses_is_refused_in_pinots_words(fmt):
    """``DateTimeFormatPatternSpec``: ``DateTimeFormat.forPattern`` throws "Illegal pattern
    component" for a letter it does not know, and ``SchemaUtils`` refuses the format."""
    with pytest.raises(ConfigError) as e:
        DateTimeFormat.parse(fmt, "dateTimeFieldSpecs[0]")
    assert f"dateTimeFieldSpecs[0]: Invalid format: {fmt}" in str(e.value)
    assert "Invalid SIMPLE_DATE_FORMAT pattern" in str(e.value)
    assert "Illegal pattern component: " in str(e.value)


@pytest.mark.parametrize("fmt", ["1:DAYS:SIMPLE_DATE_FORMAT:", "SIMPLE_DATE_FORMAT||UTC"])
def test_an_empty_pattern_is_refused_as_joda_refuses_it(fmt):
    with pytest.raises(ConfigError, match="Pattern is null or empty"):
        DateTimeFormat.parse(fmt, "dateTimeFieldSpecs[0]")


def test_patterns_joda_reads_are_kept():
    for fmt in (
        "1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "1:HOURS:SIMPLE_DATE_FORMAT:yyyyMMddHH tz(America/Chicago)",
        "1:SECONDS:SIMPLE_DATE_FORMAT:EEE, dd MMM yyyy HH:mm:ss z",
        "SIMPLE_DATE_FORMAT|yyyy-MM-dd'T",  # an open quote runs to the end in Joda
    ):
        assert DateTimeFormat.parse(fmt, "f").kind == "SIMPLE_DATE_FORMAT"


def test_upsert_dedup_retention():
    schema = {**SCHEMA, "primaryKeyColumns": ["uuid"], "enableColumnBasedNullHandling": True}
    s = load_schema(schema)
    t = load_table(
        {
            **TABLE,
            "upsertConfig": {"mode": "PARTIAL", "partialUpsertStrategies": {"count": "INCREMENT"}},
        },
        s,
    )
    assert t.upsert.mode == "PARTIAL" and t.upsert.comparison == ("ts",)
    assert t.upsert.strategies == {"count": "INCREMENT"}
    assert load_table({**TABLE, "dedupConfig": {"dedupEnabled": True}}, s).dedup
    with pytest.raises(ConfigError, match="needs primaryKeyColumns"):
        load_table({**TABLE, "upsertConfig": {"mode": "FULL"}}, load_schema(SCHEMA))
    with pytest.raises(ConfigError, match="not one of OVERWRITE"):
        load_table(
            {
                **TABLE,
                "upsertConfig": {"mode": "PARTIAL", "partialUpsertStrategies": {"count": "SUM"}},
            },
            s,
        )
    seg = {**TABLE["segmentsConfig"], "retentionTimeUnit": "DAYS", "retentionTimeValue": "3"}
    assert load_table({**TABLE, "segmentsConfig": seg}).retention_ms == 3 * 86_400_000


def test_a_partial_upsert_needs_null_handling_as_pinot_says():
    """TableConfigUtils.validatePartialUpsertStrategies: "Null handling must be enabled for
    partial upsert tables" — a null there means "keep the stored value"."""
    s = load_schema({**SCHEMA, "primaryKeyColumns": ["uuid"]})
    partial = {**TABLE, "upsertConfig": {"mode": "PARTIAL"}}
    with pytest.raises(ConfigError, match=r"upsertConfig\.mode: .*PARTIAL upsert needs null"):
        load_table(partial, s)
    index = {**TABLE["tableIndexConfig"], "nullHandlingEnabled": True}
    assert load_table({**partial, "tableIndexConfig": index}, s).null_handling


def test_offset_criteria_by_period_or_time():
    from sparkpipes.frontends.pinot.stream import _start

    key = "stream.kafka.consumer.prop.auto.offset.reset"
    now = 1_790_000_000_000
    for given, want in [
        ("smallest", "earliest"),
        ("LARGEST", "latest"),
        ("2d", f"at:{now - 2 * 86_400_000}"),
        ("6h", f"at:{now - 6 * 3_600_000}"),
        ("1790000000123", "at:1790000000123"),
        ("2026-09-21T14:13:20Z", "at:1790000000000"),
        ("2026-09-21T16:13:20+02:00", "at:1790000000000"),
    ]:
        assert _start({key: given}, "stream.kafka.", "here", now) == want
    with pytest.raises(ConfigError, match=r"a period \(2d, 6h\) or a time"):
        _start({key: "yesterday"}, "stream.kafka.", "here", now)


def test_registry_tls_props_take_pem_files_and_refuse_java_keystores(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    both = tmp_path / "client.pem"
    both.write_text(
        ca.read_text() + "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
    )
    jks = tmp_path / "trust.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00")
    pre = "stream.kafka.decoder.prop.schema.registry."
    stream = {
        **SSL["tableIndexConfig"]["streamConfigs"],
        pre + "ssl.truststore.location": str(ca),
        pre + "ssl.keystore.location": str(both),
        pre + "ssl.keystore.type": "PEM",
    }
    st = load_table(with_stream(stream, SSL)).stream
    assert st.registry == {
        "schema.registry.ssl.ca.location": str(ca),
        "schema.registry.ssl.certificate.location": str(both),
        "schema.registry.ssl.key.location": str(both),
    }
    for change, message in [
        # not PEM, no key, missing: one answer, which tells nothing of the file
        ({pre + "ssl.truststore.location": str(jks)}, "cannot be used: it must be a readable PEM"),
        ({pre + "ssl.truststore.type": "JKS"}, "Java keystore format"),
        ({pre + "ssl.keystore.location": str(ca)}, "readable PEM file with the private key"),
        (
            {pre + "ssl.truststore.location": str(tmp_path / "none.pem")},
            "cannot be used: it must be a readable PEM",
        ),
        ({"ssl.keystore.location": "/x/client.jks"}, "is a Java keystore"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_table(with_stream({**stream, **change}, SSL))

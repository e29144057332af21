"""A secret given back as ``<redacted>`` (SHOW CREATE PIPELINE's text run again, a
connector config GET …/config showed sent back) keeps the sealed value only while
everything that decides where it is sent is as stored: the source's kind, location and
every CONFIG option for the source's secrets; the decoder's kind and options for its own;
the sink's kind and options for the sink's; a connector's keys but the batch, topic,
table and error settings. Anything else changed is refused, naming what changed and the
secrets, never their values; the batch options, the mapping, SET / WHERE and the table may
change and the secrets stay."""

from __future__ import annotations

import pytest

from sparkpipes.config import REDACTED, PipelineSpec, Secret
from sparkpipes.config.parts import SinkSpec, SourceSpec
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect.model import load as load_connector
from sparkpipes.frontends.connect.model import moved
from sparkpipes.frontends.singlestore import parse_one
from sparkpipes.frontends.singlestore.lowering import create_pipeline_sql, to_spec

SECRETS = ("AKIAVICTIM", "VICTIMSECRET", "VICTIMSESSIONTOKEN", "KAFKA-PW-9", "REG-PW-7", "DB-PW-3")
S3 = (
    "CREATE PIPELINE s3p AS LOAD DATA S3 'corpbucket/private/' "
    'CONFIG \'{"region": "us-east-1"}\' '
    'CREDENTIALS \'{"aws_access_key_id": "AKIAVICTIM", "aws_secret_access_key": "VICTIMSECRET", '
    '"aws_session_token": "VICTIMSESSIONTOKEN"}\' INTO TABLE secret FORMAT JSON'
)
KAFKA = (
    "CREATE PIPELINE kp AS LOAD DATA KAFKA 'kafka.corp:9093/orders' "
    'CONFIG \'{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}\' '
    'CREDENTIALS \'{"sasl.username": "svc", "sasl.password": "KAFKA-PW-9"}\' '
    "INTO TABLE orders FORMAT AVRO SCHEMA REGISTRY 'http://ana:REG-PW-7@registry:8081' "
    "(id <- id)"
)
JDBC = (
    "CREATE PIPELINE jp AS LOAD DATA KAFKACONNECT 'jdbc' CONFIG '"
    '{"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", '
    '"connection.url": "jdbc:postgresql://loader:DB-PW-3@db.corp:5432/app", '
    '"mode": "incrementing", "incrementing.column.name": "id"}'
    "' INTO TABLE rows FORMAT AVRO"
)


def lower(sql: str) -> PipelineSpec:
    return to_spec(parse_one(sql), {})


def clear(spec: PipelineSpec) -> dict[str, str]:
    return {k: v.reveal() for k, v in spec.credentials.items()}


def refused(again: PipelineSpec, stored: PipelineSpec) -> str:
    with pytest.raises(ConfigError) as e:
        again.keep_secrets(stored)
    message = f"{e.value} {e.value.to_dict()!r}"
    for secret in SECRETS:
        assert secret not in message
    assert "give the value again" in message
    return str(e.value)


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        # the finding: another bucket and the attacker's endpoint
        (
            lambda t: t.replace("'corpbucket/private/'", "'attackerbucket/x/'").replace(
                '{"region": "us-east-1"}',
                '{"endpoint_url": "http://127.0.0.1:18150", "region": "us-east-1"}',
            ),
            "the location, CONFIG option 'endpoint_url' differ",
        ),
        (
            lambda t: t.replace(
                '{"region": "us-east-1"}',
                '{"endpoint_url": "http://127.0.0.1:18150", "region": "us-east-1"}',
            ),
            "CONFIG option 'endpoint_url' differs",
        ),
        (lambda t: t.replace("corpbucket/", "attackerbucket/"), "the location differs"),
        (lambda t: t.replace("/private/", "/public/"), "the location differs"),
        # the region picks the endpoint botocore signs for: it counts as well
        (lambda t: t.replace("us-east-1", "eu-west-1"), "CONFIG option 'region' differs"),
        (
            lambda t: t.replace('CONFIG \'{"region": "us-east-1"}\' ', ""),
            "CONFIG option 'region' differs",
        ),
        (lambda t: t.replace("LOAD DATA S3", "LOAD DATA AZURE"), "the source kind"),
    ],
)
def test_an_s3_secret_is_not_kept_for_another_place(edit, named):
    stored = lower(S3)
    message = refused(lower(edit(create_pipeline_sql(stored))), stored)
    assert named in message, message
    assert (
        "credential 'aws_access_key_id', credential 'aws_secret_access_key', credential "
        "'aws_session_token' are '<redacted>'"
    ) in message


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace("BATCH_INTERVAL 2500", "BATCH_INTERVAL 100"),
        lambda t: t.replace(
            "MAX_RETRIES_PER_BATCH_PARTITION 4", "MAX_RETRIES_PER_BATCH_PARTITION 9"
        ),
        lambda t: t.replace("INTO TABLE secret", "MAX_PARTITIONS_PER_BATCH 2 INTO TABLE other"),
        lambda t: t.replace("INTO TABLE secret", "SKIP PARSER ERRORS INTO TABLE secret"),
        lambda t: t + " (a <- x::y) SET b = upper(a) WHERE a IS NOT NULL",
    ],
)
def test_an_s3_secret_is_kept_when_only_batches_mapping_transform_or_table_change(edit):
    stored = lower(S3)
    again = lower(edit(create_pipeline_sql(stored)))
    kept = again.keep_secrets(stored)
    assert clear(kept) == clear(stored)
    assert kept.redacted_secrets() == []
    assert (kept.batch, kept.table, kept.transform, kept.mapping) == (
        again.batch,
        again.table,
        again.transform,
        again.mapping,
    )


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda t: t.replace("kafka.corp:9093", "127.0.0.1:18150"), "the location differs"),
        (lambda t: t.replace("/orders'", "/payroll'"), "the location differs"),
        (
            lambda t: t.replace('"SASL_SSL"', '"SASL_PLAINTEXT"'),
            "CONFIG option 'security.protocol' differs",
        ),
        (
            lambda t: t.replace('"SCRAM-SHA-512"', '"PLAIN"'),
            "CONFIG option 'sasl.mechanism' differs",
        ),
        (
            lambda t: t.replace("CONFIG '{\"sasl", 'CONFIG \'{"sasl.mechanisms": "PLAIN", "sasl'),
            "CONFIG option 'sasl.mechanisms' differs",
        ),
        (
            lambda t: t.replace(
                "CONFIG '{\"sasl", 'CONFIG \'{"bootstrap.servers": "127.0.0.1:18150", "sasl'
            ),
            "CONFIG option 'bootstrap.servers' differs",
        ),
        (
            lambda t: t.replace(
                "CONFIG '{\"sasl", 'CONFIG \'{"ssl.ca.location": "/tmp/evil.pem", "sasl'
            ),
            "CONFIG option 'ssl.ca.location' differs",
        ),
    ],
)
def test_a_kafka_login_is_not_kept_for_another_broker_or_wire(edit, named):
    stored = lower(KAFKA)
    message = refused(lower(edit(create_pipeline_sql(stored))), stored)
    assert named in message, message
    assert "credential 'sasl.password', credential 'sasl.username' are '<redacted>'" in message
    # the registry's password is the decoder's: its registry did not move, so it is not named
    assert "schema.registry.url" not in message


def test_each_component_keeps_its_own_secrets_by_its_own_destination():
    stored = lower(KAFKA)
    shown = create_pipeline_sql(stored)
    # the registry moved, the broker did not: the registry's password is refused alone
    moved_registry = lower(shown.replace("@registry:8081", "@127.0.0.1:18150"))
    message = refused(moved_registry, stored)
    assert (
        "the password in format option 'schema.registry.url' is '<redacted>' but format "
        "option 'schema.registry.url' differs"
    ) in message
    assert "sasl" not in message
    assert lower(shown.replace("registry:8081'", "registry:8081/v2'")).redacted_secrets()
    refused(lower(shown.replace("registry:8081'", "registry:8081/v2'")), stored)
    # both moved: both named, each with what changed
    message = refused(
        lower(shown.replace("kafka.corp:9093", "evil:9093").replace("@registry", "@evil")),
        stored,
    )
    assert "credential 'sasl.password'" in message and "the location differs" in message
    assert "format option 'schema.registry.url' differs" in message
    # the broker's login given again in clear, the registry's kept: the broker may move
    given = shown.replace("kafka.corp:9093", "kafka2.corp:9093").replace(
        '"sasl.password": "<redacted>", "sasl.username": "<redacted>"',
        '"sasl.password": "NEW-PW", "sasl.username": "svc2"',
    )
    kept = lower(given).keep_secrets(stored)
    assert clear(kept) == {
        "sasl.password": "NEW-PW",
        "sasl.username": "svc2",
        "format.url:schema.registry.url": "REG-PW-7",
    }
    # one credential rotated in clear, the other kept, the destination unchanged
    rotated = lower(shown.replace('"sasl.password": "<redacted>"', '"sasl.password": "NEW-PW"'))
    assert clear(rotated.keep_secrets(stored))["sasl.username"] == "svc"
    # … but with the destination changed, the one still <redacted> is refused
    message = refused(
        lower(
            shown.replace('"sasl.password": "<redacted>"', '"sasl.password": "x"').replace(
                "9093", "9094"
            )
        ),
        stored,
    )
    assert "credential 'sasl.username' is '<redacted>'" in message


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda t: t.replace("@db.corp:5432", "@127.0.0.1:18150"), "'connection.url' differs"),
        (lambda t: t.replace("5432/app", "5433/app"), "'connection.url' differs"),
        (lambda t: t.replace("5432/app", "5432/other"), "'connection.url' differs"),
        (lambda t: t.replace("//loader:", "//admin:"), "'connection.url' differs"),
        (
            lambda t: t.replace('"mode"', '"connection.user": "x", "mode"'),
            "CONFIG option 'connection.user' differs",
        ),
    ],
)
def test_a_url_password_is_kept_only_with_the_rest_of_its_url(edit, named):
    stored = lower(JDBC)
    shown = create_pipeline_sql(stored)
    assert "jdbc:postgresql://loader:<redacted>@db.corp:5432/app" in shown
    message = refused(lower(edit(shown)), stored)
    assert "the password in CONFIG option 'connection.url' is '<redacted>'" in message
    assert named in message, message
    kept = lower(
        shown.replace("BATCH_INTERVAL 2500", "BATCH_INTERVAL 7").replace(" rows ", " rows2 ")
    )
    assert clear(kept.keep_secrets(stored)) == {"url:connection.url": "DB-PW-3"}


def test_a_sink_password_is_kept_only_for_the_same_database():
    config = {"dialect": "postgresql", "host": "db.corp", "port": 5432, "database": "app"}

    def spec(password: str, table: str = "t", **changes: object) -> PipelineSpec:
        return PipelineSpec(
            name="c",
            source=SourceSpec(kind="kafka", location="k:9092/t"),
            sink=SinkSpec(
                table=table,
                kind="database",
                config={**config, "user": "loader", "topic": "t", **changes},
                credentials={"password": Secret(password)},
            ),
        )

    stored = spec("DB-PW-3")
    assert clear(spec(REDACTED, table="t2").keep_secrets(stored)) == {"sink.password": "DB-PW-3"}
    for changes, named in (
        ({"host": "127.0.0.1"}, "sink option 'host' differs"),
        ({"port": 5433}, "sink option 'port' differs"),
        ({"port": "5432"}, "sink option 'port' differs"),  # not the same JSON value
        ({"database": "other"}, "sink option 'database' differs"),
        ({"user": "admin"}, "sink option 'user' differs"),
        ({"sslmode": "disable"}, "sink option 'sslmode' differs"),
    ):
        message = refused(spec(REDACTED, **changes), stored)
        assert "sink credential 'password' is '<redacted>'" in message
        assert named in message, message
    other_kind = stored.replace(
        sink=SinkSpec(table="t", credentials={"password": Secret(REDACTED)})
    )
    assert "but the sink kind, sink option 'database'" in refused(other_kind, stored)


def test_a_connector_keeps_its_passwords_only_for_the_same_destination():
    base = {
        "name": "n",
        "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
        "topics": "t",
        "bootstrap.servers": "kafka:9092",
        "connection.url": "jdbc:postgresql://loader:DB-PW-3@db.corp:5432/app",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "http://ana:REG-PW-7@registry:8081",
    }
    stored = dict(load_connector(base).raw)
    shown = dict(load_connector(stored).raw)  # what GET …/config shows, sent back
    assert shown == stored and moved(stored, shown) == []
    edited = {
        **shown,
        "tasks.max": "4",
        "batch.interval.ms": "100",
        "max.retries": "2",
        "topics": "t,u",
        "tableKey.PRIMARY": "id",
        "singlestore.tableName.t": "t2",
        "singlestore.upsert": "true",
        "errors.tolerance": "all",
        "connection.password": REDACTED,  # a password given back as shown is a secret
    }
    assert moved(stored, edited) == []
    for key, value in (
        ("connection.url", "jdbc:postgresql://loader:<redacted>@127.0.0.1:18150/app"),
        ("connection.url", "jdbc:postgresql://loader:<redacted>@db.corp:5432/app?currentSchema=x"),
        ("connection.ddlEndpoint", "127.0.0.1:18150"),
        ("connection.user", "admin"),
        ("connection.database", "other"),
        ("params.ssl", "false"),
        ("value.converter.schema.registry.url", "http://ana:<redacted>@127.0.0.1:18150"),
        ("value.converter", "org.apache.kafka.connect.json.JsonConverter"),
        ("bootstrap.servers", "127.0.0.1:18150"),
    ):
        assert moved(stored, {**edited, key: value}) == [key]
    assert moved(stored, {k: v for k, v in edited.items() if k != "bootstrap.servers"}) == [
        "bootstrap.servers"
    ]

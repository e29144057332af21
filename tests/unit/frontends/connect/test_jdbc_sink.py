"""Confluent's JDBC sink connector's config (``frontends.connect.jdbc_sink``) as
``JdbcSinkConfig`` and ``JdbcSinkConnectorValidation`` of confluentinc/kafka-connect-jdbc
check it: every key honoured, accepted as not applicable or refused by name, every
problem at once under its key, with the connector's own words where it has them."""

from __future__ import annotations

import json

import pytest

from sparkpipes.config import REDACTED, Secret, urls
from sparkpipes.frontends.connect import plugins
from sparkpipes.frontends.connect.model import load
from sparkpipes.frontends.connect.validate import problems, validate
from sparkpipes.sinks.database_tables import Destination
from sparkpipes.sources.connect.framework import ConnectConfigError

SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
BASE = {
    "name": "jdbc-sink",
    "connector.class": SINK,
    "topics": "orders",
    "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
}


def found(**cfg: str) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for key, message in problems({**BASE, **cfg})[0]:
        out.setdefault(key, []).append(message)
    return out


def test_the_debezium_example_as_written():
    cfg = load(
        {
            **BASE,
            "connection.url": "jdbc:postgresql://127.0.0.1:5432/inventory?user=postgresuser"
            "&password=postgrespw",
            "transforms": "unwrap",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.drop.tombstones": "false",
            "auto.create": "true",
            "insert.mode": "upsert",
            "delete.enabled": "true",
            "pk.fields": "id",
            "pk.mode": "record_key",
        }
    )
    jdbc = cfg.jdbc
    assert jdbc is not None
    assert (jdbc.insert_mode, jdbc.pk_mode, jdbc.pk_fields) == ("upsert", "record_key", ("id",))
    assert jdbc.deletes and jdbc.auto_create and not jdbc.auto_evolve
    assert (cfg.destination, cfg.database, cfg.user) == ("postgresql", "inventory", "postgresuser")
    assert cfg.password == Secret("postgrespw")
    assert "postgrespw" not in json.dumps(dict(cfg.raw))
    assert cfg.raw["connection.url"].endswith(f"password={REDACTED}")
    assert cfg.max_retries == 10  # Confluent's default
    assert cfg.metadata_table == "kafka_connect_transaction_metadata"  # exactly once


def test_every_problem_at_once_in_confluents_words():
    got = found(
        **{
            "delete.enabled": "true",
            "pk.mode": "record_value",
            "insert.mode": "merge",
            "batch.size": "-1",
            "db.timezone": "Mars/Olympus",
            "auto.create": "yes",
            "table.name.format": " ",
            "quote.sql.identifiers": "sometimes",
            "pk.feilds": "id",
        }
    )
    deletes = "Deletes are only supported for pk.mode record_key"
    assert got["pk.mode"] == [deletes] and got["delete.enabled"] == [deletes]
    assert (
        "Invalid value merge for configuration insert.mode: Invalid enumerator"
        in (got["insert.mode"][0])
    )
    assert got["batch.size"] == [
        "Invalid value -1 for configuration batch.size: Value must be at least 0"
    ]
    assert "Invalid time zone" in got["db.timezone"][0]
    assert "Expected value to be either true or false" in got["auto.create"][0]
    assert "String must be non-empty" in got["table.name.format"][0]
    assert "Invalid enumerator" in got["quote.sql.identifiers"][0]
    assert "did you mean 'pk.fields'" in got["pk.feilds"][0]
    with pytest.raises(ConnectConfigError) as e:
        load({**BASE, "delete.enabled": "true", "insert.mode": "merge"})
    assert len(e.value.problems) == 3


@pytest.mark.parametrize(
    ("cfg", "key", "words"),
    [
        (
            {"insert.mode": "upsert"},
            "insert.mode",
            "UPSERT mode requires key field names to be known",
        ),
        ({"insert.mode": "update"}, "insert.mode", "UPDATE mode requires key field names"),
        (
            {"pk.mode": "kafka", "pk.fields": "a,b"},
            "pk.fields",
            "there should either be no field names defined",
        ),
        (
            {"value.converter.schemas.enable": "false"},
            "value.converter.schemas.enable",
            "requires records with a non-null Struct or String value",
        ),
        (
            {
                "pk.mode": "record_key",
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            },
            "pk.fields",
            "Need exactly one PK column defined since the key schema for records is a "
            "primitive type",
        ),
        (
            {"pk.mode": "record_key", "key.converter.schemas.enable": "false"},
            "key.converter.schemas.enable",
            "record key schema is missing",
        ),
        (
            {
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "pk.mode": "record_value",
            },
            "pk.mode",
            "pk.mode record_value is not supported with String value schemas",
        ),
        ({"timestamp.fields.list": "ts"}, "timestamp.fields.list", "is not supported"),
        (
            {"jdbc.credentials.provider.class": "com.example.Vault"},
            "jdbc.credentials.provider.class",
            "is not supported",
        ),
        ({"dialect.name": "OracleDatabaseDialect"}, "dialect.name", "not the dialect"),
        (
            {"connection.url": "jdbc:sqlserver://127.0.0.1:1433;databaseName=db"},
            "connection.url",
            "SQL Server is not supported as a JDBC sink's database",
        ),
        (
            {"key.converter.basic.auth.user.info": "u:p"},
            "key.converter.basic.auth.user.info",
            "a converter option that may change how values are decoded is refused",
        ),
        ({"tableKey.PRIMARY": "id"}, "tableKey.PRIMARY", "unknown connector config key"),
    ],
)
def test_rules_of_the_connector(cfg, key, words):
    got = found(**cfg)
    assert key in got, got
    assert any(words in m for m in got[key]), got[key]


def test_a_missing_url_and_what_is_not_applicable():
    got = found(**{"connection.url": ""})
    assert got["connection.url"] == [
        'Missing required configuration "connection.url" which has no default value.'
    ]
    answer = validate(
        SINK,
        {
            **BASE,
            "batch.size": "500",
            "connection.attempts": "5",
            "retry.backoff.ms": "1000",
            "trim.sensitive.log": "true",
            "date.calendar.system": "LEGACY",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "errors.log.enable": "true",
            "connection.password": "s3cret-pw",
        },
    )
    assert answer["error_count"] == 0
    assert {"batch.size", "connection.attempts", "retry.backoff.ms", "trim.sensitive.log"} <= set(
        answer["not_applicable"]
    )
    assert "date.calendar.system" in answer["not_applicable"]
    assert "errors.log.enable" in answer["not_applicable"]
    assert "key.converter" not in answer["not_applicable"]  # it reads record_key's keys
    assert "s3cret-pw" not in json.dumps(answer)


def test_table_names_as_confluents_dialects_parse_them():
    jdbc = load({**BASE, "table.name.format": "kafka_${topic}"}).jdbc
    assert jdbc is not None and jdbc.table_of("orders") == (None, "kafka_orders")
    jdbc = load({**BASE, "table.name.format": "sales.${topic}"}).jdbc
    assert jdbc is not None and jdbc.table_of("orders") == ("sales", "orders")
    never = load({**BASE, "quote.sql.identifiers": "never"}).jdbc
    assert never is not None and never.table_of("Orders") == (None, "orders")  # PG folds
    jdbc = load(BASE).jdbc
    assert jdbc is not None
    with pytest.raises(Exception, match="splits a name on its dots"):
        jdbc.table_of("dbserver1.inventory.customers")
    sqlite = load({**BASE, "connection.url": "jdbc:sqlite:test.db"})
    assert sqlite.destination == "sqlite" and sqlite.database == "test.db"


def test_the_plugin_is_listed_with_its_keys():
    assert {"class": SINK, "type": "sink", "version": "sparkpipes"} in plugins.listed()
    names = {k["name"] for k in plugins.definition(SINK)}
    assert {"pk.mode", "pk.fields", "insert.mode", "delete.enabled", "auto.evolve"} <= names
    assert "tableKey." not in names and "singlestore.upsert" not in names
    secret = [k for k in plugins.definition(SINK) if k["type"] == "PASSWORD"]
    assert [k["name"] for k in secret] == ["connection.password"]


def test_the_playground_tls_sink_plans_the_sources_tls_and_time_outs():
    """The playground's mysql-ssl sink (Connector/J 5.1 URL): the database sink reads the
    URL again with the JDBC source's code (``jdbc_tls``, ``jdbc_url``) — VERIFY_CA against
    the JKS trust store, its password sealed with the login's and never shown."""
    url = (
        "jdbc:mysql://127.0.0.1:3306/db?user=userssl&password=password"
        "&verifyServerCertificate=true&useSSL=true&requireSSL=true"
        "&enabledTLSProtocols=TLSv1,TLSv1.1,TLSv1.2,TLSv1.3&socketTimeout=60000"
        "&trustCertificateKeyStoreUrl=file:///etc/kafka/secrets/truststore.jks"
        "&trustCertificateKeyStorePassword=mypassword"
    )
    cfg = load({**BASE, "connection.url": url, "auto.create": "true"})
    jdbc = cfg.jdbc
    assert jdbc is not None and jdbc.url_secret is not None
    assert "mypassword" not in jdbc.url and "password=<redacted>" in jdbc.url
    config = {"dialect": "mysql", "host": "127.0.0.1", "database": "db", "url": jdbc.url}
    creds = {"password": cfg.password, urls.secret_key("url"): jdbc.url_secret}
    dest = Destination.of(config, creds)
    assert dest.tls is not None and dest.limits is not None
    assert (dest.tls.mode, dest.tls.trust.path) == (
        "VERIFY_CA",
        "/etc/kafka/secrets/truststore.jks",
    )
    assert dest.tls.trust.password == Secret("mypassword")
    assert dest.limits.read_s == 60.0  # socketTimeout, Connector/J's milliseconds
    assert "mypassword" not in repr(dest)
    answer = json.dumps(validate(SINK, {**BASE, "connection.url": url}))
    assert "mypassword" not in answer and "trustCertificateKeyStorePassword=<redacted>" in answer

"""The Kafka Connect compatibility corpus (``tests/corpus/connect``): SingleStore sink,
Confluent JDBC source and sink and Kinesis source configs written by others (the
SingleStore connector's repository, Confluent's JDBC connector, demo-scene, examples, the
Kafka Docker playground, debezium-examples), each with its source in ``index.yaml``, hosts rewritten to loopback.
Every config is validated as ``PUT /connector-plugins/{class}/config/validate`` validates
it (which is what ``POST /connectors`` and a KAFKACONNECT CREATE PIPELINE check, without
I/O), and is accepted, or is a gap listed below with the text its error must contain. A
gap that starts to pass fails this test until it leaves the list, so the list stays true.
A config without ``name`` (the playground names it on the command line) is named after
its file, as ``PUT /connectors/{name}/config`` names it."""

from __future__ import annotations

import json
import pathlib
from urllib.parse import urlsplit

import pytest
import yaml

from sparkpipes.config import Secret
from sparkpipes.frontends.connect.model import parse_properties
from sparkpipes.frontends.connect.validate import problems, validate
from sparkpipes.sources import build_source

CORPUS = pathlib.Path(__file__).parents[3] / "corpus" / "connect"
ITEMS = {item["id"]: item for item in yaml.safe_load((CORPUS / "index.yaml").read_text())}

SINK_ONLY_OFFSET = "offset.field is only applicable to sink connectors"
NO_TABLE_INCLUDE = (
    "unknown CONFIG key of io.confluent.connect.jdbc.JdbcSourceConnector 'table.include'"
)
REDSHIFT = (
    "Amazon Redshift is not supported: its SQLAlchemy dialect is not installed "
    "(pip install sqlalchemy-redshift redshift_connector)"
)
#: config → what its error says, by cause
GAPS = {
    # InsertField's offset.field on a source connector: Connect fails every record with
    # "Only SinkRecord supported for [field insertion]" (InsertField.java), so it is
    # refused when the config is checked rather than failing the first batch
    "jdbc-source/playground-mysql-insertfield-smt": SINK_ONLY_OFFSET,
    # `table.include` is no key of Confluent's JDBC source (table.whitelist, or
    # table.include.list): Connect ignores it and reads every table
    "jdbc-source/demo-scene-smt-day10-mysql-bulk": NO_TABLE_INCLUDE,
    # Redshift: no dialect here (Oracle and SQL Server validate, and fail to read without
    # their drivers, naming the package)
    "jdbc-source/playground-redshift": REDSHIFT,
    # not a config as written: `key : "value"` puts the quotes in the value, for Connect too
    "sink/memsql-quickstart-colon": "connection.ddlEndpoint has an invalid port",
    # Debezium's MongoDB unwrap: its MongoDataConverter (BSON extended JSON) is not reproduced
    "jdbc-sink/debezium-examples-unwrap-mongodb": "ExtractNewDocumentState is not supported",
    # a table per record timestamp on a sink: a sink pipeline writes the one table fixed
    # when the connector is made (its columns read at assembly, one transaction per batch)
    "jdbc-sink/demo-scene-smt-day7-message-timestamp-router": (
        "MessageTimestampRouter is not supported: Confluent's router: on a sink connector"
    ),
    "jdbc-sink/demo-scene-smt-day7-timestamprouter": (
        "TimestampRouter is not supported: on a sink connector it sends the records of one "
        "topic to a new table per timestamp"
    ),
    # databases the JDBC sink does not write here
    "jdbc-sink/playground-oracle19": "Oracle is not supported as a JDBC sink's database",
    "jdbc-sink/playground-sqlserver": "property 'encrypt' of SQL Server is not supported",
}


def _config(item: dict) -> dict:
    text = (CORPUS / item["file"]).read_text(encoding="utf-8")
    obj = json.loads(text) if item["file"].endswith(".json") else parse_properties(text)
    cfg = dict(obj.get("config", obj))
    cfg.setdefault("name", obj.get("name") or item["id"].split("/", 1)[1])
    return cfg


def test_the_corpus_holds_what_it_says():
    assert len(ITEMS) >= 37
    for item in ITEMS.values():
        assert {"repository", "path", "commit"} <= set(item["source"]), item["id"]
        assert len(item["source"]["commit"]) == 40, item["id"]
        assert (CORPUS / item["file"]).is_file(), item["id"]
    assert set(GAPS) <= set(ITEMS)


def test_no_address_but_loopback():
    for item in ITEMS.values():
        cfg = _config(item)
        hosts = [urlsplit(str(cfg.get("connection.url", "")).removeprefix("jdbc:")).hostname]
        for key in ("connection.ddlEndpoint", "connection.dmlEndpoints"):
            hosts += [p.strip('" ').split(":")[0] for p in str(cfg.get(key, "")).split(",")]
        assert set(hosts) <= {None, "", "127.0.0.1"}, (item["id"], hosts)


@pytest.mark.parametrize("item_id", sorted(ITEMS))
def test_each_config_is_accepted_or_a_known_gap(item_id):
    cfg = _config(ITEMS[item_id])
    found, _ = problems(cfg)
    messages = " | ".join(m for _, m in found)
    if item_id not in GAPS:
        assert not found, messages
        return
    assert found, f"{item_id} is accepted now: remove it from GAPS"
    assert GAPS[item_id] in messages, messages


@pytest.mark.parametrize("item_id", ["playground-mysql-ssl", "playground-mysql-mtls"])
def test_the_mysql_tls_configs_plan_what_connector_j_does(item_id):
    """The playground's TLS configs, written for Connector/J 5.1.45 (its mysql-ssl.sh and
    mysql-mtls.sh): ``verifyServerCertificate=true`` makes Connector/J verify the server's
    chain (VERIFY_CA: not its host name) against the JKS trust store;
    ``enabledTLSProtocols`` keeps TLSv1.2 and TLSv1.3 (both: the default), and mTLS
    presents the client key store. The store passwords and the login's are sealed: the
    plan holds them as secrets, and the config as stored shows them redacted."""
    cfg = _config(ITEMS[f"jdbc-source/{item_id}"])
    src = build_source("kafkaconnect", "jdbc", cfg, {})
    db = src.connector.settings.db
    tls = db.tls
    assert (db.user, db.password, tls.driver) == (
        "user" + item_id.rsplit("-", 1)[1],
        Secret("password"),
        "MySQL Connector/J",
    )
    assert (tls.mode, tls.versions, tls.system_trust) == ("VERIFY_CA", (), True)
    assert tls.trust.path == "/etc/kafka/secrets/truststore.jks"
    assert tls.trust.password == Secret("mypassword")
    if item_id.endswith("mtls"):
        assert tls.identity.path == "/etc/kafka/secrets/keystore.jks"
        assert tls.identity.password == Secret("mypassword")
        assert "client certificate from clientCertificateKeyStoreUrl" in tls.describe()
    else:
        assert tls.identity is None
    assert "mypassword" not in repr(db) and "mypassword" not in tls.describe()
    answer = json.dumps(validate(cfg["connector.class"], cfg))
    assert "trustCertificateKeyStorePassword=<redacted>" in answer
    assert "mypassword" not in answer


def test_accepted_share_is_reported():
    accepted = [i for i in ITEMS if not problems(_config(ITEMS[i]))[0]]
    assert len(accepted) == len(ITEMS) - len(GAPS)
    # issue 35: at least 85 % of real configs accepted unchanged
    assert len(accepted) / len(ITEMS) >= 0.85, f"{len(accepted)} of {len(ITEMS)}"


def test_validate_names_every_problem_and_never_a_secret():
    answer = validate(
        "io.confluent.connect.jdbc.JdbcSourceConnector",
        {
            "connection.url": "jdbc:postgresql://127.0.0.1/db?user=u&password=s3cret-pw",
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "transforms": "x",
            "transforms.x.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "errors.deadletterqueue.topic.name": "dlq",
            "value.converter.basic.auth.user.info": "u:sr-s3cret",
            "poll.interval.ms": "1000",
            "_comment": "a note",
            "name": "jdbc-1",
        },
    )
    # ValueToKey's `fields` has no default (ValueToKey.java: NO_DEFAULT_VALUE, non-empty)
    assert answer["error_count"] == 2
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"]}
    assert errors["transforms.x.fields"] and not errors["transforms.x.type"]
    assert errors["errors.deadletterqueue.topic.name"]
    assert not errors["poll.interval.ms"] and not errors["_comment"]
    assert set(answer["not_applicable"]) >= {"poll.interval.ms", "_comment", "name"}
    text = json.dumps(answer)
    assert "s3cret-pw" not in text and "sr-s3cret" not in text


def test_a_sink_config_lists_all_its_key_problems():
    found, accepted = problems(
        {
            "name": "s",
            "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
            "topics": "t",
            "transforms": "a",
            "consumer.override.security.protocol": "SSL",
            "value.converter.basic.auth.user.info": "u:p",
            "errors.retry.timeout": "-1",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "consumer.override.max.poll.records": "500",
        }
    )
    keys = {k for k, _ in found}
    assert keys == {
        "transforms",
        "consumer.override.security.protocol",
        "value.converter.basic.auth.user.info",
    }
    assert "u:p" not in " ".join(m for _, m in found)
    assert {"errors.retry.timeout", "key.converter", "consumer.override.max.poll.records"} <= set(
        accepted
    )


def test_a_confluent_kinesis_config_never_shows_its_keys():
    answer = validate(
        "io.confluent.connect.kinesis.KinesisSourceConnector",
        {
            "kinesis.stream": "s",
            "kafka.topic": "t",
            "aws.access.key.id": "AKIA-k3y",
            "aws.secret.key.id": "s3cret-k3y",
            "kinesis.position": "AT_TIMESTAMP",
            "kinesis.record.limit": "20000",
            "kinesis.credentials.provider.class": "com.example.Mine",
        },
    )
    text = json.dumps(answer)
    assert "s3cret-k3y" not in text and "AKIA-k3y" not in text
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"]}
    assert errors["kinesis.record.limit"] and errors["kinesis.credentials.provider.class"]
    assert answer["error_count"] == 3  # and the missing kinesis.shard.timestamp


def test_a_dead_letter_topic_consumed_by_the_connector_and_a_non_text_secret_are_refused():
    """Connect's SinkConnectorConfig refuses a DLQ topic the connector reads (its failed
    records would come back forever); a value that is not text is named by its type,
    never echoed (it may be a password)."""
    base = {
        "connection.ddlEndpoint": "127.0.0.1:3306",
        "connection.database": "db",
        "errors.tolerance": "all",
    }
    sink = "com.singlestore.kafka.SingleStoreSinkConnector"
    for topics in ({"topics": "t"}, {"topics.regex": "t.*"}):
        answer = validate(sink, {**base, **topics, "errors.deadletterqueue.topic.name": "t"})
        assert "may not be included in the list of topics" in json.dumps(answer)
    answer = validate(sink, {**base, "topics": "t", "connection.password": ["N0t-Text-Pw"]})
    assert answer["error_count"] == 1 and "N0t-Text-Pw" not in json.dumps(answer)

"""Kafka Connect sink configs (seed 001) checked into SinkConnectorConfig: JSON and
.properties, the destination each set of keys means, tableKey, secrets, and every
mistake named."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect.model import Key, load, parse_properties

BASE = {
    "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
    "topics": "topic-test-1,topic-test-2",
}


def test_the_seed_style_properties_file():
    cfg = load(
        "# a comment\n"
        "name=singlestore-sink-connector\n"
        "connector.class=com.singlestore.kafka.SingleStoreSinkConnector\n"
        "tasks.max: 1\n"
        "topics=topic-test-1,topic-test-2\n"
        "connection.ddlEndpoint=singlestore-host1:3308\n"
        "connection.dmlEndpoints=singlestore-host2:3306\n"
        "connection.database=test\n"
        "connection.user=root\n"
        "connection.password=s3cret\n"
        "params.connectTimeout=10000\n"
        "params.ssl=false\n"
        "tableKey.PRIMARY=id\n"
        "tableKey.COLUMNSTORE=data,created_at\n"
        "tableKey.UNIQUE.unique_email=email\n"
        "singlestore.loadDataCompression=LZ4\n"
        "singlestore.metadata.allow=true\n"
        "singlestore.metadata.table=my_custom_metadata_table\n"
        "singlestore.tableName.topic-test-1=singlestore-table-name\n"
    )
    assert cfg.name == "singlestore-sink-connector"
    assert cfg.topics == ("topic-test-1", "topic-test-2")
    assert (cfg.destination, cfg.host, cfg.port, cfg.database) == (
        "mysql",
        "singlestore-host1",
        3308,
        "test",
    )
    assert cfg.password.reveal() == "s3cret" and "connection.password" not in cfg.raw
    assert "s3cret" not in repr(cfg)
    assert cfg.keys == (
        Key("PRIMARY", ("id",)),
        Key("COLUMNSTORE", ("data", "created_at")),
        Key("UNIQUE", ("email",), "unique_email"),
    )
    assert cfg.metadata_table == "my_custom_metadata_table"
    assert cfg.table_of("topic-test-1") == "singlestore-table-name"
    assert cfg.table_of("topic-test-2") == "topic-test-2"
    assert cfg.connect_timeout_s == 10


def test_the_rest_api_shape_and_the_three_destinations():
    pg = load(
        {
            "name": "n",
            "config": {**BASE, "connection.url": "jdbc:postgresql://h/db?currentSchema=s"},
        }
    )
    assert (pg.destination, pg.port, pg.database, pg.schema) == ("postgresql", 5432, "db", "s")
    lake = load(
        {**BASE, "name": "n", "singlestore.metadata.allow": False, "singlestore.upsert": True}
    )
    assert lake.destination == "delta" and lake.metadata_table is None and lake.upsert
    assert load({**BASE, "name": "n"}).metadata_table == "kafka_connect_transaction_metadata"


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"task.max": "1"}, r"unknown connector config key 'task.max'; did you mean 'tasks.max'"),
        ({"connector.class": "x.Y"}, r"connector.class must be one of"),
        ({"topics": None}, r"give 'topics' .* or 'topics.regex'"),
        ({"topics.regex": "t.*"}, r"give 'topics' .* or 'topics.regex', one of them"),
        ({"topics.regex": "(", "topics": None}, r"not a regular expression"),
        ({"tasks.max": "0"}, r"'tasks.max' must be an integer of at least 1"),
        ({"tableKey.FOREIGN": "id"}, r"key kind must be one of PRIMARY, UNIQUE"),
        ({"tableKey.PRIMARY": " "}, r"names no column"),
        (
            {"value.converter": "io.confluent.connect.avro.AvroConverter"},
            r"needs value.converter.schema.registry.url",
        ),
        ({"connection.ddlEndpoint": "h"}, r"needs connection.database"),
        (
            {"connection.url": "jdbc:postgresql://h/db?password=x", "connection.password": "y"},
            r"connection.url and connection.password give different passwords",
        ),
        (
            {"bootstrap.servers": "svc:Pw-9@127.0.0.1:9092"},
            r"bootstrap.servers 'svc:<redacted>@127.0.0.1:9092' holds a password: Kafka clients",
        ),
        (
            {"connection.ddlEndpoint": "root:Pw-9@h:3306", "connection.database": "d"},
            r"connection.ddlEndpoint 'root:<redacted>@h:3306' holds a password: it is host",
        ),
        ({"connection.url": "jdbc:mysql://h/db"}, r"must be jdbc:postgresql"),
        ({"params.allowLoadLocalInfile": "true"}, r"parameter 'allowLoadLocalInfile'"),
        ({"singlestore.metadata.allow": "yes"}, r"must be true or false"),
        ({"errors.tolerance": "some"}, r"errors.tolerance must be none or all"),
        ({"errors.deadletterqueue.table.name": "dlq"}, r"needs errors.tolerance=all"),
        (
            {"errors.deadletterqueue.table.name": "dlq", "errors.tolerance": "all"},
            r"for database destinations",
        ),
    ],
)
def test_mistakes_are_named(cfg, message):
    given = {**BASE, "name": "n", **cfg}
    with pytest.raises(ConfigError, match=message):
        load({k: v for k, v in given.items() if v is not None})


def test_properties_continuation_and_a_bad_line():
    assert parse_properties("a=1\\\n  2\n! note\nb : x y\n") == {"a": "12", "b": "x y"}
    with pytest.raises(ConfigError, match="line 1"):
        parse_properties("=oops")


def test_json_text_errors_and_names_that_differ():
    with pytest.raises(ConfigError, match="not valid JSON"):
        load('{"name": ')
    with pytest.raises(ConfigError, match="differ"):
        load({**BASE, "name": "a"}, name="b")

"""Source connectors created through the REST API: the topics each class would write
(so the tables it loads), each with the config that reads only it; a config shown with
its secrets ``<redacted>``; classes and routers refused by name. No I/O here: the JDBC
tables are named by the whitelist (listing them is the integration test's)."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect import sources

JDBC = {
    "connector.class": sources.JDBC,
    "connection.url": "jdbc:postgresql://127.0.0.1:5432/db?user=u&password=Pw-77",
    "connection.password": "Pw-77",
    "mode": "incrementing",
    "incrementing.column.name": "id",
    "topic.prefix": "pg-",
    "table.include.list": "public.orders, items",
    "table.blacklist": "",
}


def test_jdbc_topics_are_the_prefix_and_each_table_read_alone():
    topics = sources.TOPICS[sources.JDBC](JDBC)
    assert list(topics) == ["pg-orders", "pg-items"]
    assert topics["pg-orders"]["table.whitelist"] == "public.orders"
    assert "table.include.list" not in topics["pg-orders"]
    assert "table.blacklist" not in topics["pg-items"]
    query = {**JDBC, "query": "SELECT * FROM orders", "table.include.list": ""}
    assert list(sources.TOPICS[sources.JDBC](query)) == ["pg-"]
    with pytest.raises(ConfigError, match=r"topic\.prefix"):
        sources.TOPICS[sources.JDBC]({**query, "topic.prefix": ""})


def test_kinesis_topics_are_kafka_topic_or_the_stream():
    kinesis = {"connector.class": sources.CONFLUENT_KINESIS, "kinesis.stream": "s"}
    assert list(sources.TOPICS[sources.CONFLUENT_KINESIS]({**kinesis, "kafka.topic": "k"})) == ["k"]
    assert list(sources.TOPICS[sources.SINGLESTORE_KINESIS](kinesis)) == ["s"]


def test_tables_are_topics_written_as_identifiers():
    assert sources.table_of("pg-orders.v1") == "pg_orders_v1"
    assert sources.table_of("plain_1") == "plain_1"


def test_the_config_shown_never_holds_a_secret():
    shown = sources.shown(sources.JDBC, JDBC)
    assert shown["connection.password"] == "<redacted>"
    assert "Pw-77" not in str(shown) and "<redacted>" in shown["connection.url"]
    assert shown["topic.prefix"] == "pg-"


def test_routers_are_refused_by_name():
    routed = {
        **JDBC,
        "transforms": "r",
        "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
    }
    with pytest.raises(ConfigError, match=r"transforms\.r\.type: a transform that renames"):
        sources._refuse(sources.JDBC, routed)
    assert sources.is_source(JDBC) and not sources.is_source({"connector.class": "x.Y"})
    cased = {
        **routed,
        "transforms.r.type": "com.github.jcustenborder.kafka.connect.transform.common"
        ".ChangeTopicCase",
    }
    with pytest.raises(ConfigError, match="a transform that renames topics"):
        sources._refuse(sources.JDBC, cased)

"""A source connector created through Kafka Connect's REST API as its users create it: a
Confluent JDBC source config posted to ``sparkpipes serve``, reading two tables of the real
PostgreSQL on 127.0.0.1. Each table's rows land in a table named as the topic the
connector would write (``topic.prefix`` + the table's name, ``-`` written ``_``), exactly
once, rows inserted later too; status, one task's status, the config shown with its
password ``<redacted>`` and sent back unchanged (``PUT …/config``), offsets, delete. The
password is never answered nor logged."""

from __future__ import annotations

import requests

from tests.e2e.serving import serve, wait
from tests.integration.databases import ScratchDb

GATE = 'SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"'
JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"
PASSWORD = "Pg-Src-9931"


def test_a_jdbc_source_posted_to_connectors_loads_tables_named_as_its_topics(tmp_path):
    db = ScratchDb("postgresql")
    role = f"{db.schema}_reader"  # a login of its own, so that its password is unique
    try:
        for table in ("orders", "items"):
            db.run(f"CREATE TABLE {db.name(table)} (id BIGINT PRIMARY KEY, v TEXT)")
        db.run(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        db.run(f"GRANT USAGE ON SCHEMA {db.schema} TO {role}")
        db.run(f"GRANT SELECT ON ALL TABLES IN SCHEMA {db.schema} TO {role}")
        db.run(f"INSERT INTO {db.name('orders')} SELECT g, 'o' || g FROM generate_series(1, 30) g")
        db.run(f"INSERT INTO {db.name('items')} SELECT g, 'i' || g FROM generate_series(1, 7) g")
        with serve(tmp_path / "wh", "/connectors") as server:
            url, http = server.url, server.http

            def sql(statement: str) -> list:
                r = http.post(f"{url}/api/query", json={"sql": statement}, timeout=60)
                assert r.status_code == 200, r.text
                return r.json().get("rows") or []

            def count(table: str) -> tuple:
                found = sql(f"SELECT COUNT(*), COUNT(DISTINCT record) FROM {table}")
                return tuple(found[0])

            sql(GATE)
            config = {
                "connector.class": JDBC,
                "connection.url": db.url,
                "connection.user": role,
                "connection.password": PASSWORD,
                "mode": "incrementing",
                "incrementing.column.name": "id",
                "schema.pattern": db.schema,
                "table.whitelist": f"{db.schema}.orders,{db.schema}.items",
                "topic.prefix": "pg-",
                "tasks.max": "1",
            }
            made = http.post(f"{url}/connectors", json={"name": "pg-src", "config": config})
            assert made.status_code == 201, made.text
            assert made.json()["type"] == "source" and len(made.json()["tasks"]) == 2
            wait(lambda: sql("SHOW TABLES") and count("pg_orders") == (30, 30), 240, "orders")
            wait(lambda: count("pg_items") == (7, 7), 120, "items")
            topics = {r[0] for r in sql("SELECT DISTINCT topic FROM pg_orders")}
            assert topics == {"pg-orders"}

            status = http.get(f"{url}/connectors/pg-src/status").json()
            assert status["type"] == "source" and status["connector"]["state"] == "RUNNING"
            assert http.get(f"{url}/connectors/pg-src/tasks/1/status").json()["state"] == "RUNNING"
            shown = http.get(f"{url}/connectors/pg-src/config").json()
            assert shown["connection.password"] == "<redacted>"
            assert shown["table.whitelist"] == config["table.whitelist"]
            offsets = http.get(f"{url}/connectors/pg-src/offsets").json()["offsets"]
            assert len(offsets) == 2

            # the config sent back as shown keeps its sealed password; more rows, once
            again = http.put(f"{url}/connectors/pg-src/config", json=shown)
            assert again.status_code == 200, again.text
            db.run(
                f"INSERT INTO {db.name('orders')} SELECT g, 'o' || g FROM generate_series(31, 45) g"
            )
            wait(lambda: count("pg_orders") == (45, 45), 240, "the rows inserted later")
            assert count("pg_items") == (7, 7)

            # a class the REST API cannot name tables for, and a router, are refused by name
            routed = {
                **config,
                "transforms": "r",
                "transforms.r.type": ("org.apache.kafka.connect.transforms.RegexRouter"),
                "transforms.r.regex": "(.*)",
                "transforms.r.replacement": "x-$1",
            }
            refused = http.post(f"{url}/connectors", json={"name": "routed", "config": routed})
            assert refused.status_code == 400 and "transforms.r.type" in refused.json()["message"]

            # a user without FILE READ may not have the server sign in as itself (Kinesis
            # without keys: the AWS default chain) nor read its files (a SQLite database)
            sql("CREATE USER root IDENTIFIED BY 'Root-pw-5521'")  # the first user holds all
            sql("CREATE USER kc IDENTIFIED BY 'Kc-pw-5521'")
            sql("GRANT SHOW PIPELINE, CREATE PIPELINE, CREATE, INSERT ON * TO kc")
            kinesis = {
                "connector.class": "io.confluent.connect.kinesis.KinesisSourceConnector",
                "kinesis.stream": "s",
                "kafka.topic": "k",
                "kinesis.region": "us-east-1",
            }
            sqlite = {**config, "connection.url": f"jdbc:sqlite:{tmp_path / 'x.db'}"}
            for cfg in (kinesis, sqlite):
                denied = requests.post(
                    f"{url}/connectors",
                    json={"name": "theirs", "config": cfg},
                    auth=("kc", "Kc-pw-5521"),
                    timeout=60,
                )
                assert denied.status_code == 403, denied.text
                assert "FILE READ" in denied.json()["message"]
            assert http.get(f"{url}/connectors").json() == ["pg-src"]

            assert http.delete(f"{url}/connectors/pg-src").status_code == 204
            assert http.get(f"{url}/connectors").json() == []
            assert count("pg_orders") == (45, 45)  # the tables and rows stay
            for answer in (made.text, again.text, refused.text, str(shown)):
                assert PASSWORD not in answer
        assert "Traceback" not in server.output and PASSWORD not in server.output
    finally:
        db.drop()
        db.run(f"DROP ROLE IF EXISTS {role}")

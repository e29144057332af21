"""Pinot's answers, field by field, as ``sparkpipes serve`` gives them: the controller's
schemas and tables (what ``pinot-admin``-style scripts and pinotdb's SQLAlchemy dialect
read; the shapes of Pinot's ``PinotSchemaRestletResource``, ``PinotTableRestletResource``
and ``PinotTableSchema``) and the broker's answer (``BrokerResponseNative``: its statistics,
``exceptions``, Pinot's column data types and how each type's values are written). The
queries themselves run in ``tests/e2e/test_pinotdb.py``, through pinotdb."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from fastapi.testclient import TestClient

from sparkpipes import Engine
from sparkpipes.errors import AccessDeniedError, NotFoundError, QueryError
from sparkpipes.frontends.singlestore.errors import ParseError
from sparkpipes.server import create_app
from sparkpipes.server.pinot_query import (
    cell,
    code_of,
    failure,
    inferred_type,
    java_timestamp,
    options,
    pinot_type,
)

SCHEMA = {
    "schemaName": "clicks",
    "dimensionFieldSpecs": [
        {"name": "city", "dataType": "STRING"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
    ],
    "metricFieldSpecs": [{"name": "n", "dataType": "INT"}],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "TIMESTAMP",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}
SECRET = "kafka-Secret-41c9"
TABLE = {
    "tableName": "clicks",
    "tableType": "realtime",
    "segmentsConfig": {"timeColumnName": "ts", "schemaName": "clicks", "replication": "1"},
    "tenants": {},
    "tableIndexConfig": {
        "loadMode": "MMAP",
        "streamConfigs": {
            "streamType": "kafka",
            "stream.kafka.consumer.type": "lowlevel",
            "stream.kafka.topic.name": "clicks",
            "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
            "stream.kafka.broker.list": "127.0.0.1:1",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="u" password="{SECRET}";',
        },
    },
    "metadata": {"customConfigs": {}},
}


@pytest.fixture
def client(tmp_path):
    engine = Engine(tmp_path / "wh")
    app = create_app(engine, run=False, local_token="t")
    with TestClient(app, base_url="http://127.0.0.1:8083") as c:
        c.headers["Authorization"] = "Bearer t"
        yield c
    engine.close()


def test_the_controllers_answers_have_pinots_shape(client):
    added = client.post("/schemas", json=SCHEMA)
    assert added.status_code == 200, added.text
    assert added.json() == {"unrecognizedProperties": {}, "status": "clicks successfully added"}
    assert client.get("/schemas").json() == ["clicks"]

    shown = client.get("/schemas/clicks").json()
    assert list(shown)[:2] == ["schemaName", "enableColumnBasedNullHandling"]
    assert shown["enableColumnBasedNullHandling"] is False
    assert shown["dimensionFieldSpecs"][1] == {
        "name": "tags",
        "dataType": "STRING",
        "fieldType": "DIMENSION",
        "singleValueField": False,
    }
    assert shown["metricFieldSpecs"][0]["fieldType"] == "METRIC"
    assert shown["dateTimeFieldSpecs"][0]["fieldType"] == "DATE_TIME"
    assert shown["dateTimeFieldSpecs"][0]["format"] == "1:MILLISECONDS:EPOCH"

    made = client.post("/tables", json=TABLE)
    assert made.status_code == 200, made.text
    body = made.json()
    assert body["status"] == "Table clicks_REALTIME successfully added"
    # Pinot's shape: JSON pointer → value (sparkpipes reports its servers' keys here too)
    assert body["unrecognizedProperties"]["/segmentsConfig/replication"] == "1"
    assert SECRET not in made.text

    assert client.get("/tables").json() == {"tables": ["clicks"]}
    assert client.get("/tables?type=realtime").json() == {"tables": ["clicks_REALTIME"]}
    assert client.get("/tables?type=offline").json() == {"tables": []}
    assert client.get("/tables?type=dimension").json() == {"tables": []}

    for name in ("clicks", "clicks_REALTIME"):
        got = client.get(f"/tables/{name}")
        assert got.status_code == 200 and list(got.json()) == ["REALTIME"], got.text
        config = got.json()["REALTIME"]
        assert config["tableName"] == "clicks_REALTIME" and config["tableType"] == "REALTIME"
        assert config["isDimTable"] is False
        assert SECRET not in got.text
    assert client.get("/tables/clicks?type=realtime").status_code == 200
    offline = client.get("/tables/clicks?type=offline")
    assert offline.status_code == 404
    assert offline.json() == {"code": 404, "error": "Table clicks_OFFLINE does not exist"}
    assert client.get("/tables/clicks_OFFLINE").status_code == 404
    assert client.get("/tables/nope").json() == {"code": 404, "error": "Table nope does not exist"}

    # pinotdb's SQLAlchemy dialect reads the columns here
    schema = client.get("/tables/clicks/schema")
    assert schema.status_code == 200 and schema.json() == shown
    assert client.get("/tables/clicks_REALTIME/schema").json() == shown
    assert client.get("/tables/nope/schema").status_code == 404

    assert client.post("/tables", json=TABLE).status_code == 409
    gone = client.delete("/tables/clicks")
    assert gone.json() == {"status": "Tables: [clicks_REALTIME] deleted"}
    assert client.delete("/schemas/clicks").json() == {"status": "Schema clicks deleted"}
    assert client.get("/schemas/clicks").json()["code"] == 404


def test_a_refused_query_request_is_a_broker_answer(client):
    unsigned = client.post("/query/sql", json={"sql": "SELECT 1"}, headers={"Authorization": ""})
    body = unsigned.json()
    assert unsigned.status_code == 401
    assert body["numServersQueried"] == 0 and body["numServersResponded"] == 0
    (e,) = body["exceptions"]
    assert e["errorCode"] == 180 and e["message"].startswith("AccessDenied: ")
    assert "resultTable" not in body

    missing = client.post("/query/sql", json={"nope": 1})
    assert missing.status_code == 400
    assert missing.json()["exceptions"][0]["errorCode"] == 100


def test_spark_types_become_pinots_column_data_types():
    cases = {
        "int": "INT",
        "smallint": "INT",
        "bigint": "LONG",
        "float": "FLOAT",
        "double": "DOUBLE",
        "decimal(38,18)": "BIG_DECIMAL",
        "boolean": "BOOLEAN",
        "timestamp": "TIMESTAMP",
        "timestamp_ntz": "TIMESTAMP",
        "string": "STRING",
        "varchar(10)": "STRING",
        "date": "STRING",
        "binary": "BYTES",
        "array<string>": "STRING_ARRAY",
        "array<bigint>": "LONG_ARRAY",
        "array<timestamp>": "TIMESTAMP_ARRAY",
        "array<array<int>>": "JSON",
        "map<string,int>": "MAP",
        "struct<a:int,b:string>": "JSON",
        "void": "STRING",
    }
    assert {s: pinot_type(s) for s in cases} == cases
    assert inferred_type([None, 3]) == "LONG"
    assert inferred_type([[None, "a"]]) == "STRING_ARRAY"
    assert inferred_type([None]) == "STRING"
    assert inferred_type([decimal.Decimal("1.5")]) == "BIG_DECIMAL"


def test_values_are_written_as_pinots_broker_writes_them():
    when = dt.datetime(2024, 1, 2, 3, 4, 5)
    assert java_timestamp(when) == "2024-01-02 03:04:05.0"
    assert java_timestamp(when.replace(microsecond=123000)) == "2024-01-02 03:04:05.123"
    aware = dt.datetime(2024, 1, 2, 4, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert java_timestamp(aware) == "2024-01-02 03:04:05.0"
    assert cell(when, "TIMESTAMP") == "2024-01-02 03:04:05.0"
    assert cell([when, None], "TIMESTAMP_ARRAY") == ["2024-01-02 03:04:05.0", None]
    assert cell(decimal.Decimal("1E-20"), "BIG_DECIMAL") == "0.00000000000000000001"
    assert cell(b"\x01\xff", "BYTES") == "01ff"
    assert cell(float("nan"), "DOUBLE") == "NaN"
    assert cell(float("-inf"), "FLOAT") == "-Infinity"
    assert cell(2.5, "DOUBLE") == 2.5 and cell(7, "LONG") == 7 and cell(True, "BOOLEAN") is True
    assert cell(dt.date(2024, 1, 2), "STRING") == "2024-01-02"
    assert cell({"a": 1}, "MAP") == {"a": 1}
    assert cell((1, "x"), "JSON") == '[1,"x"]'
    assert cell(None, "INT") is None


def test_errors_carry_pinots_codes():
    assert code_of(ParseError("bad", 1, 1), running=False) == 150
    assert code_of(AccessDeniedError("SELECT command denied"), running=False) == 180
    assert code_of(NotFoundError("no table"), running=False) == 190
    assert code_of(QueryError("[TABLE_OR_VIEW_NOT_FOUND] t"), running=False) == 190
    assert code_of(QueryError("[UNRESOLVED_COLUMN.WITH_SUGGESTION] x"), running=False) == 710
    assert code_of(QueryError("[CAST_INVALID_INPUT] x"), running=False) == 700
    assert code_of(QueryError("[DIVIDE_BY_ZERO] x"), running=True) == 200
    shape = failure(429, "wait 1 s")
    assert shape["exceptions"] == [{"errorCode": 429, "message": "TooManyRequests: wait 1 s"}]
    assert shape["numRowsResultSet"] == 0 and shape["partialResult"] is True


def test_query_options_are_read_as_pinot_writes_them():
    assert options("useMultistageEngine=true;timeoutMs=5000") == {
        "useMultistageEngine": "true",
        "timeoutMs": "5000",
    }
    assert options(None) == {} and options(";x;") == {}

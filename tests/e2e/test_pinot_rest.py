"""Pinot's controller endpoints on ``sparkpipes serve``, driven over HTTP as Pinot users
drive them (``curl -H 'Content-Type: application/json' -d @schema.json …/schemas``, then
``…/tables``), signed in as the server's owner (no users: the local token): seed 002's
schema-registry Avro config (``KafkaConfluentSchemaRegistryAvroMessageDecoder`` with the
registry's basic auth), rows arriving while the server runs, the config shown back with its
secrets redacted, errors in Pinot's shape, and ``AddTable -controllerHost`` sending the
files to the server (``-authToken``, as pinot-admin takes it). The registry is the stand-in of sparkpipes.testing.registry (no
Confluent-compatible registry server can be installed here), asking for basic auth."""

from __future__ import annotations

import json
import subprocess
import sys

from sparkpipes import Engine
from sparkpipes.testing.registry import Registry, encode
from tests.e2e.serving import serve, wait

JSON = {"Content-Type": "application/json"}
AVRO = {
    "type": "record",
    "name": "transcript",
    "fields": [
        {"name": "studentID", "type": "int"},
        {"name": "firstName", "type": "string"},
        {"name": "score", "type": ["null", "float"], "default": None},
        {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
SCHEMA = {
    "schemaName": "transcript",
    "dimensionFieldSpecs": [
        {"name": "studentID", "dataType": "INT"},
        {"name": "firstName", "dataType": "STRING"},
    ],
    "metricFieldSpecs": [{"name": "score", "dataType": "FLOAT"}],
    "dateTimeFieldSpecs": [
        {
            "name": "timestamp",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}
PASSWORD = "reg-secret-7f3a"


def table(broker, topic, registry_url):
    """Seed 002's SASL_SSL example, the security keys left out (the broker here has no
    SASL or TLS; see README) and the registry's basic auth kept."""
    return {
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
                "stream.kafka.consumer.type": "lowlevel",
                "stream.kafka.topic.name": topic,
                "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
                "stream.kafka.consumer.factory.class.name": "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory",
                "stream.kafka.broker.list": broker.bootstrap,
                "stream.kafka.schema.registry.url": registry_url,
                "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.inputformat.avro.confluent.KafkaConfluentSchemaRegistryAvroMessageDecoder",
                "stream.kafka.decoder.prop.schema.registry.rest.url": registry_url,
                "stream.kafka.decoder.prop.basic.auth.credentials.source": "USER_INFO",
                "stream.kafka.decoder.prop.schema.registry.basic.auth.user.info": f"pinot:{PASSWORD}",
                "realtime.segment.flush.threshold.rows": "0",
                "realtime.segment.flush.threshold.time": "24h",
                "realtime.segment.flush.autotune.initialRows": "3000000",
                "realtime.segment.flush.threshold.segment.size": "500M",
            },
        },
        "metadata": {"customConfigs": {}},
    }


def test_pinot_endpoints_add_a_registry_avro_table_and_load_it(broker, topic, tmp_path):
    wh = tmp_path / "wh"
    with Registry(user_info=f"pinot:{PASSWORD}") as reg:
        sid = reg.register(AVRO)
        records = [
            encode(
                sid,
                AVRO,
                {
                    "studentID": i,
                    "firstName": f"s{i}",
                    "score": i / 2 if i % 5 else None,
                    "timestamp": 1_790_000_000_000 + i,
                },
            )
            for i in range(200)
        ]
        broker.produce(topic, records, partitions=4)
        with serve(wh, "/tables") as server:
            url, port, http = server.url, server.port, server.http
            r = http.post(f"{url}/schemas", data=json.dumps(SCHEMA), headers=JSON, timeout=30)
            assert r.status_code == 200 and r.json()["status"] == "transcript successfully added"
            assert http.get(f"{url}/schemas", timeout=5).json() == ["transcript"]

            # a misspelt key is accepted as Pinot accepts it; the key it misses is named
            bad = table(broker, topic, reg.url)
            streams = bad["tableIndexConfig"]["streamConfigs"]
            streams["stream.kafka.topic.nam"] = streams.pop("stream.kafka.topic.name")
            r = http.post(f"{url}/tables", json=bad, timeout=30)
            assert r.status_code == 400
            assert "did you mean 'stream.kafka.topic.name'" in r.json()["error"]
            assert r.json()["code"] == 400 and PASSWORD not in r.text

            good = table(broker, topic, reg.url)
            good["tableIndexConfig"]["jsonIndexConfigs"] = {"name": {"maxLevels": 2}}
            r = http.post(f"{url}/tables", json=good, timeout=60)
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "Table transcript_REALTIME successfully added"
            # Pinot's shape: JSON pointer → value of each key accepted without effect
            unrecognized = r.json()["unrecognizedProperties"]
            assert unrecognized["/tableIndexConfig/jsonIndexConfigs"] == {"name": {"maxLevels": 2}}
            assert http.get(f"{url}/tables", timeout=5).json() == {"tables": ["transcript"]}
            shown = http.get(f"{url}/tables/transcript", timeout=5)
            streams = shown.json()["REALTIME"]["tableIndexConfig"]["streamConfigs"]
            assert (
                streams["stream.kafka.decoder.prop.schema.registry.basic.auth.user.info"]
                == "<redacted>"
            )
            assert PASSWORD not in shown.text

            def loaded():
                with Engine(wh) as eng:
                    return eng.table_arrow("transcript").num_rows == 200 and eng

            wait(loaded, 180, "200 rows in transcript")
            with Engine(wh) as eng:
                rows = {x["studentID"]: x for x in eng.table_arrow("transcript").to_pylist()}
            assert (
                rows[7]["firstName"] == "s7"
                and rows[7]["score"] == 3.5
                and rows[5]["score"] == 0.0  # null: a FLOAT metric's default null value
            )
            assert rows[7]["timestamp"] == 1_790_000_000_007
            assert reg.refused == 0  # every schema lookup carried the user and password

            assert http.get(f"{url}/tables/nope", timeout=5).status_code == 404
            assert (
                http.post(f"{url}/schemas", data="{nope", headers=JSON, timeout=5).json()["code"]
                == 400
            )
            r = http.delete(f"{url}/tables/transcript", timeout=60)
            assert r.json() == {"status": "Tables: [transcript_REALTIME] deleted"}
            assert http.get(f"{url}/tables", timeout=5).json() == {"tables": []}

            # pinot-admin's AddTable, sending the files to this server as to a controller
            (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
            (tmp_path / "t.json").write_text(json.dumps(table(broker, topic, reg.url)))
            sent = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "sparkpipes",
                    "AddTable",
                    "-schemaFile",
                    str(tmp_path / "s.json"),
                    "-tableConfigFile",
                    str(tmp_path / "t.json"),
                    "-controllerHost",
                    "127.0.0.1",
                    "-controllerPort",
                    str(port),
                    "-exec",
                    "-authToken",
                    f"Bearer {server.token}",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert sent.returncode == 0, sent.stderr
            assert (
                json.loads(sent.stdout)["status"] == "Table transcript_REALTIME successfully added"
            )
    assert PASSWORD not in server.output and "Traceback" not in server.output

"""Two attacks on a real ``sparkpipes serve``, as users make them:

- naming a "plugin class" by the Python path of any module (``this:X``, whose import
  prints the Zen of Python; ``sqlglot.__main__:X``, whose import parses the server's argv
  and exits) in a Pinot stream config (``/tables/validate``, needing only SHOW PIPELINE)
  and in SQL (``LOAD DATA STREAM``, ``LOAD DATA KAFKACONNECT``): refused, nothing imported
  (no Zen in the server's output), the server still up;
- reading a file of the server through Pinot's ``decoder.prop.schema`` (and TLS
  ``*.location`` keys): a user without FILE READ gets 403 naming FILE READ and nothing of
  the file; a user with FILE READ gets one "cannot be used" message for a missing file, a
  JSON secret or a JSON object without "type" (no content, no 500); an inline schema works
  for everyone; a stream plugin's path option (a key that names a file, a value or a URL
  parameter that is a path) and a Kafka Connect config's ``*.location`` need FILE READ too.
"""

from __future__ import annotations

import json
import subprocess

import requests

from tests.e2e.serving import serve

ANA, CY = ("ana", "Ana-pw-5521"), ("cy", "Cy-pw-9034")
SECRET = "sk-live-4f9a77c1e0"
ZEN = "Beautiful is better than ugly"
SCHEMA = {
    "schemaName": "ev",
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "INT"},
        {"name": "name", "dataType": "STRING"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}
AVSC = {
    "type": "record",
    "name": "ev",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "ts", "type": "long"},
    ],
}


def table(stream: dict) -> dict:
    return {
        "tableName": "ev",
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "ev"},
        "tableIndexConfig": {"streamConfigs": stream},
    }


def plugin(class_name: str) -> dict:
    return {
        "streamType": "zz",
        "stream.zz.topic.name": "t",
        "stream.zz.consumer.factory.class.name": class_name,
        "stream.zz.decoder.class.name": "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder",
    }


def avro(schema: str, **more: str) -> dict:
    return {
        "streamType": "kafka",
        "stream.kafka.topic.name": "t",
        "stream.kafka.broker.list": "127.0.0.1:1",
        "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder",
        "stream.kafka.decoder.prop.schema": schema,
        **more,
    }


def _library(tmp_path):
    """A shared library whose constructor writes ``LOADED`` beside it."""
    src = tmp_path / "evil.c"
    src.write_text(
        "#include <stdio.h>\n__attribute__((constructor)) static void hit(void) {"
        f' FILE *f = fopen("{tmp_path}/LOADED", "w"); if (f) fclose(f); }}\n'
    )
    out = tmp_path / "evil.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def validate(session, url, stream):
    return session.post(f"{url}/tables/validate", json={"schema": SCHEMA, "table": table(stream)})


def test_plugin_paths_and_schema_files_are_refused(tmp_path):
    wh = tmp_path / "wh"
    creds = tmp_path / "creds.json"
    creds.write_text(json.dumps({"client_id": "app", "client_secret": SECRET}))
    typeless = tmp_path / "typeless.json"
    typeless.write_text(json.dumps({"name": SECRET}))
    good = tmp_path / "ev.avsc"
    good.write_text(json.dumps(AVSC))
    with serve(wh, "/api/status") as server:
        url, owner = server.url, server.http
        setup = (
            "CREATE TABLE t (a TEXT); CREATE USER adm IDENTIFIED BY 'Adm-pw-7710';"  # the admin
            f"CREATE USER ana IDENTIFIED BY '{ANA[1]}'; CREATE USER cy IDENTIFIED BY '{CY[1]}';"
            "GRANT SHOW PIPELINE ON *.* TO ana; GRANT SHOW PIPELINE ON *.* TO cy;"
            "GRANT FILE READ ON *.* TO cy"
        )
        r = owner.post(f"{url}/api/query", json={"sql": setup})
        assert r.ok, r.text
        ana, cy = requests.Session(), requests.Session()
        ana.auth, cy.auth = ANA, CY

        # 1. a module named as a plugin class is never imported, on any surface
        for name in ("this:X", "sqlglot.__main__:X", "this.X"):
            r = validate(ana, url, plugin(name))
            assert r.status_code == 400, (name, r.status_code, r.text)
            assert "SPARKPIPES_PLUGIN_MODULES" in r.text and "entry-point" in r.text, r.text
            cfg = json.dumps(plugin(name))
            r = owner.post(
                f"{url}/api/query",
                json={
                    "sql": f"CREATE PIPELINE zp AS LOAD DATA STREAM 'zz/t' CONFIG '{cfg}' "
                    "INTO TABLE t FORMAT JSON"
                },
            )
            assert r.status_code == 400 and "SPARKPIPES_PLUGIN_MODULES" in r.text, r.text
            assert owner.get(f"{url}/api/status").ok  # still up
        r = owner.post(
            f"{url}/api/query",
            json={
                "sql": 'SET GLOBAL experimental_features_config = "kafka_connect_enabled=true";'
                "CREATE INFERRED PIPELINE kp AS LOAD DATA KAFKACONNECT 'k' "
                """CONFIG '{"connector.class": "sqlglot.__main__:X"}' FORMAT AVRO"""
            },
        )
        assert r.status_code == 400 and "SPARKPIPES_PLUGIN_MODULES" in r.text, r.text
        assert owner.get(f"{url}/api/status").ok

        # 2. a file of the server by decoder.prop.schema or a TLS location: FILE READ
        for stream in (
            avro(str(creds)),
            avro(str(tmp_path / "missing.avsc")),
            avro(json.dumps(AVSC), **{"ssl.truststore.location": str(creds)}),
            avro(json.dumps(AVSC), **{"ssl.ca.location": str(creds)}),
        ):
            r = validate(ana, url, stream)
            assert r.status_code == 403 and "FILE READ" in r.text, r.text
            assert SECRET not in r.text and "client_id" not in r.text
            r = ana.post(f"{url}/tables", json=table(stream))
            assert r.status_code == 403, r.text  # ana lacks CREATE as well; refused either way
        # with FILE READ: one answer for a secret, a missing file, a JSON object without type
        answers = set()
        for path in (creds, typeless, tmp_path / "missing.avsc", tmp_path):
            r = validate(cy, url, avro(str(path)))
            assert r.status_code == 400, (path, r.status_code, r.text)
            assert SECRET not in r.text and "client_id" not in r.text
            assert "cannot be used as an Avro schema" in r.text, r.text
            answers.add(r.json().get("error", r.text).replace(str(path), "<p>"))
        assert len(answers) == 1, answers
        r = validate(cy, url, avro(json.dumps(AVSC), **{"ssl.truststore.location": str(creds)}))
        assert r.status_code == 400 and SECRET not in r.text and "client_id" not in r.text
        assert validate(cy, url, avro(str(good))).status_code == 200

        # 3. an inline schema needs no FILE READ
        r = validate(ana, url, avro(json.dumps(AVSC)))
        assert r.status_code == 200, r.text
        assert r.json()["decoder"] == "avro"
        r = validate(ana, url, avro(json.dumps({"name": SECRET})))
        assert r.status_code == 400, r.text  # the user's own inline text: no 500

        # the SQL side: a Kafka CONFIG naming a file of the server needs FILE READ
        r = owner.post(
            f"{url}/api/query", json={"sql": "GRANT CREATE PIPELINE, INSERT ON *.* TO ana"}
        )
        assert r.ok, r.text
        kafka = json.dumps({"ssl.ca.location": str(creds)})
        r = ana.post(
            f"{url}/api/query",
            json={
                "sql": f"CREATE PIPELINE sp AS LOAD DATA KAFKA '127.0.0.1:1/t' CONFIG '{kafka}' "
                "SKIP SOURCE CHECK INTO TABLE t FORMAT JSON"
            },
        )
        assert r.status_code == 403 and "FILE READ" in r.text, r.text
        assert owner.get(f"{url}/api/status").ok

        # a library librdkafka would load (OpenSSL providers): refused for everyone, the
        # library never loaded (its constructor would write a file), whatever the list
        evil = _library(tmp_path)
        r = owner.post(
            f"{url}/api/query", json={"sql": "GRANT CREATE PIPELINE, INSERT ON *.* TO cy"}
        )
        assert r.ok, r.text
        for who, providers in ((ana, f"default,{evil}"), (cy, f"default,{evil}"), (cy, str(evil))):
            kafka = json.dumps({"security.protocol": "SSL", "ssl.providers": providers})
            r = who.post(
                f"{url}/api/query",
                json={
                    "sql": f"CREATE PIPELINE lp AS LOAD DATA KAFKA '127.0.0.1:1/t' CONFIG '{kafka}' "
                    "INTO TABLE t FORMAT JSON"
                },
            )
            assert r.status_code in (400, 403), r.text
            assert ("FILE READ" in r.text) if who is ana else ("not allowed" in r.text), r.text
        assert not (tmp_path / "LOADED").exists(), "the server loaded a user's library"

        # 4. a stream plugin's own options and a connector's config: a path is a file
        r = owner.post(
            f"{url}/api/query", json={"sql": "GRANT CREATE, ALTER PIPELINE ON *.* TO ana"}
        )
        assert r.ok, r.text
        redis_url = f"rediss://127.0.0.1:1/0?ssl_ca_certs={creds}"
        zz = {"streamType": "zz", "stream.zz.topic.name": "t"}
        for stream in (
            {"streamType": "redis", "stream.redis.topic.name": "t", "stream.redis.url": redis_url},
            {
                "streamType": "redis",
                "stream.redis.topic.name": "t",
                "stream.redis.url": "rediss://127.0.0.1:1/0?ssl_ca_certs=..%2F..%2Fetc%2Fshadow",
            },
            {**zz, "stream.zz.tls.ca": str(creds)},
            {**zz, "stream.zz.descriptorFile": "ev.desc"},
        ):
            r = validate(ana, url, stream)
            assert r.status_code == 403 and "FILE READ" in r.text, r.text
            assert SECRET not in r.text and str(creds) not in r.text, r.text
        relative = "..%2F" * 12 + str(creds).lstrip("/").replace("/", "%2F")
        for where, value in (
            ("CONFIG", f"rediss://127.0.0.1:1/0?ssl_ca_certs={creds}"),
            ("CONFIG", f"rediss://127.0.0.1:1/0?ssl_ca_certs={relative}"),  # encoded, relative
            ("CREDENTIALS", f"rediss://127.0.0.1:1/0?ssl_ca_certs={creds}"),  # a plugin reads both
            ("CREDENTIALS", "unix:///run/any.sock"),
        ):
            redis = json.dumps({"stream.redis.url": value})
            r = ana.post(
                f"{url}/api/query",
                json={
                    "sql": f"CREATE PIPELINE rp AS LOAD DATA STREAM 'redis/t' {where} '{redis}' "
                    "SKIP SOURCE CHECK INTO TABLE t FORMAT JSON"
                },
            )
            assert r.status_code == 403 and "FILE READ" in r.text, (where, value, r.text)
        connector = {
            "name": "snk",
            "config": {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics": "t",
                "connection.ddlEndpoint": "127.0.0.1:1",
                "consumer.override.ssl.truststore.location": str(creds),
            },
        }
        r = ana.post(f"{url}/connectors", json=connector)
        assert r.status_code == 403 and "FILE READ" in r.text, r.text
        flat = {"name": "snk", "config": None, **connector["config"]}  # read as a flat config
        r = ana.post(f"{url}/connectors", json=flat)
        assert r.status_code == 403 and "FILE READ" in r.text, r.text
        r = ana.put(f"{url}/connectors/snk/config", json=connector["config"])
        assert r.status_code == 403 and "FILE READ" in r.text, r.text
        assert SECRET not in r.text and str(creds) not in r.text
        # a JDBC sink into an SQLite file writes a file of the server: FILE READ is not
        # enough (the catalog is an SQLite file too), and the warehouse is never written
        sqlite_sink = {
            "name": "lite",
            "config": {
                "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                "topics": "t",
                "connection.url": f"jdbc:sqlite:{wh / 'catalog.db'}",
                "auto.create": "true",
            },
        }
        grant = "GRANT CREATE, INSERT, SELECT, CREATE PIPELINE, START PIPELINE ON *.* TO cy"
        assert owner.post(f"{url}/api/query", json={"sql": grant}).ok
        r = cy.post(f"{url}/connectors", json=sqlite_sink)
        assert r.status_code == 403 and "FILE WRITE" in r.text, r.text
        r = owner.post(f"{url}/connectors", json=sqlite_sink)
        assert r.status_code == 400 and "warehouse" in r.text, r.text
        assert owner.get(f"{url}/api/status").ok
    assert ZEN not in server.output and "Traceback" not in server.output
    assert SECRET not in server.output

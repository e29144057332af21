"""CREDENTIALS never show: not in views, logs, errors, SHOW CREATE PIPELINE or the catalog's
definition column."""

from __future__ import annotations

import json
import logging

from sparkpipes.catalog.views import VIEWS
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession

SECRETS = ("Us3r-N4me-x", "P4ss-W0rd-y", "K3y-Pw-z")


def test_credentials_never_appear_anywhere(engine, broker, topic, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    sql = SqlSession(engine)
    creds = json.dumps(
        {"sasl.username": SECRETS[0], "sasl.password": SECRETS[1], "ssl.key.password": SECRETS[2]}
    )
    broker.produce(topic, [json.dumps({"a": 1}), "{broken"], partitions=4)
    seen: list[str] = []
    sql.execute("CREATE TABLE t (a INT)")
    sql.execute(
        f"CREATE PIPELINE good AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        f"CREDENTIALS '{creds}' INTO TABLE t"
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
    assert any("unexpected 'TABEL'" in s and "CREDENTIALS '****" in s for s in seen)
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
    assert engine.catalog.credentials("good")["sasl.password"] == SECRETS[1]

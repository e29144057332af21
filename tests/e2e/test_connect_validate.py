"""``sparkpipes connect validate FILE`` as a Kafka Connect user runs it on the configs they
have (``.properties`` and JSON, sink and source classes): every problem printed under
its key, the same problems ``PUT /connector-plugins/{class}/config/validate`` answers
(one function), exit status 1, no traceback, no password, and no warehouse opened."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sparkpipes.frontends.connect import validate as validation
from sparkpipes.frontends.connect.shape import flat

SINK = (
    "# seed 001, with three mistakes\n"
    "name=s\n"
    "connector.class=com.singlestore.kafka.SingleStoreSinkConnector\n"
    "topics=t\n"
    "connection.ddlEndpoint=127.0.0.1:3306\n"
    "connection.database=db\n"
    "connection.password=Sink-Secret-1\n"
    "topcs=x\n"
    "transforms=unwrap\n"
    "errors.log.enable=true\n"
)
SOURCE = {
    "name": "pg-source",
    "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/db?user=u&password=Source-Secret-2",
        "mode": "bogus",
        "topic.prefix": "pg-",
        "table.whitelist": "orders",
        "pol.interval.ms": "5",
    },
}


def validate(path, *extra, wh):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkpipes",
            "--warehouse",
            str(wh),
            "connect",
            "validate",
            str(path),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )


def problems_of(answer: dict) -> list[str]:
    return [f"{c['value']['name']}: {m}" for c in answer["configs"] for m in c["value"]["errors"]]


def test_every_problem_of_a_file_is_printed_with_its_key_as_the_rest_api_reports_it(tmp_path):
    wh = tmp_path / "wh"
    sink = tmp_path / "sink.properties"
    sink.write_text(SINK)
    source = tmp_path / "source.json"
    source.write_text(json.dumps(SOURCE))
    for path, secret in ((sink, "Sink-Secret-1"), (source, "Source-Secret-2")):
        done = validate(path, wh=wh)
        assert done.returncode == 1, done.stdout + done.stderr
        cfg = flat(path.read_text())
        expected = problems_of(validation.validate(cfg["connector.class"], cfg))
        assert len(expected) >= 2
        printed = done.stdout.splitlines()
        assert [line for line in printed if line in expected] == expected
        assert f"{len(expected)} problems in {path}" in done.stdout
        assert "Traceback" not in done.stderr and secret not in done.stdout + done.stderr
        answer = json.loads(validate(path, "--json", wh=wh).stdout)
        assert problems_of(answer) == expected and secret not in json.dumps(answer)
    assert any(
        line.startswith("topcs: ") and "'topics'" in line
        for line in validate(sink, wh=wh).stdout.splitlines()
    )
    assert "mode: " in validate(source, wh=wh).stdout
    assert not wh.exists()  # nothing opened


def test_a_valid_file_exits_zero_and_reports_the_keys_accepted_as_not_applicable(tmp_path):
    ok = tmp_path / "ok.json"
    ok.write_text(
        json.dumps(
            {
                "name": "ok",
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics": "t",
                "errors.log.enable": "true",
            }
        )
    )
    done = validate(ok, wh=tmp_path / "wh")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "errors.log.enable: accepted, not applicable" in done.stdout


def test_a_file_that_is_not_a_config_is_an_error_without_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    done = validate(bad, wh=tmp_path / "wh")
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
    missing = validate(tmp_path / "nope.json", wh=tmp_path / "wh")
    assert missing.returncode != 0 and "cannot read" in missing.stderr
    assert "Traceback" not in missing.stderr

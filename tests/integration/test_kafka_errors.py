"""Errors a user can act on, against real brokers: nothing listening, a broker that never
answers, a broker that refuses the login (Tansu with ``--authentication``), a missing
topic; checked by CREATE PIPELINE and reported by batches, status and the logs."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest

from sparkpipes.errors import SourceAuthError, SourceError, SourceUnavailableError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.sources.kafka_client import ClientLog
from sparkpipes.testing import EmbeddedBroker

SCHEMA = "a BIGINT"
PASSWORD = "pw-5d1b0c77-canary"


@pytest.fixture(scope="module")
def auth_broker():
    with EmbeddedBroker(authentication=True) as b:
        yield b


@pytest.fixture(autouse=True)
def fresh_client_log():
    """The client-log limiter is process-wide; earlier tests' lines must not hold these back."""
    ClientLog.forget()


@pytest.fixture
def silent_listener():
    """A TCP port that accepts connections and never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    yield f"127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


def test_nothing_listening_fails_fast_with_one_clear_error(engine, caplog, capfd):
    caplog.set_level(logging.DEBUG, logger="sparkpipes")
    engine.create_table("events", SCHEMA)
    engine.create_pipeline(
        "q", source="kafka", location="127.0.0.1:1/events", table="events", max_retries=1
    )
    with pytest.raises(SourceUnavailableError):
        engine.run_batch("q")  # the first batch of a process also starts Spark
    t = time.time()
    with pytest.raises(SourceUnavailableError) as err:
        engine.run_batch("q")
    assert time.time() - t < 3  # a refused connection is not waited out, even retried
    assert str(err.value).startswith(
        "[SP201] cannot reach Kafka at 127.0.0.1:1: Connect to ipv4#127.0.0.1:1 failed: "
        "Connection refused"
    )
    rec = engine.pipeline("q")
    assert rec.state == "Error" and "cannot reach Kafka at 127.0.0.1:1" in rec.last_error
    # librdkafka's own printer is off; its lines come through logging, rate-limited: four
    # clients refused many times each, one line
    out, errs = capfd.readouterr()
    assert "%3|" not in out + errs
    client_lines = [r for r in caplog.records if r.getMessage().startswith("Kafka client:")]
    assert 1 <= len(client_lines) <= 2, [r.getMessage() for r in client_lines]


def test_a_broker_that_never_answers_fails_within_the_connect_timeout(engine, silent_listener):
    engine.create_table("events", SCHEMA)
    engine.create_pipeline(
        "q",
        source="kafka",
        location=f"{silent_listener}/events",
        table="events",
        config={"socket.connection.setup.timeout.ms": 1500},
        max_retries=0,
    )
    t = time.time()
    with pytest.raises(SourceUnavailableError, match=r"within 1\.5 s"):
        engine.run_batch("q")
    assert time.time() - t < 6
    with pytest.raises(Exception, match=r"socket\.connection\.setup\.timeout\.ms must be"):
        engine.create_pipeline(
            "bad",
            source="kafka",
            location=f"{silent_listener}/events",
            table="events",
            config={"socket.connection.setup.timeout.ms": "soon"},
        )


def test_pending_retries_show_in_status_while_running(engine):
    from sparkpipes.cli import status_rows

    engine.create_table("events", SCHEMA)
    engine.create_pipeline(
        "q", source="kafka", location="127.0.0.1:1/events", table="events", max_retries=3
    )
    engine.start("q", run=False)
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def run() -> None:
        try:
            engine.run_batch("q")
        except SourceUnavailableError:
            pass
        done.set()

    threading.Thread(target=run).start()
    while not done.wait(0.02):
        rec = engine.pipeline("q")
        if rec.last_error:
            seen.append((rec.state, rec.last_error))
    assert any(
        state == "Running" and "cannot reach Kafka" in error and "(retry 1/3)" in error
        for state, error in seen
    ), seen
    cols, rows = status_rows(engine)
    (row,) = rows
    assert row[1] == "Error" and row[5] == "unknown"
    assert "cannot reach Kafka" in row[cols.index("Last error")]


def test_a_refused_login_is_reported_as_such_naming_mechanism_and_user(engine, auth_broker):
    engine.create_table("events", SCHEMA)
    sql = SqlSession(engine)
    create = (
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '{auth_broker.bootstrap}/events' "
        """CONFIG '{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"}' """
        + "CREDENTIALS '"
        + json.dumps({"sasl.username": "alice", "sasl.password": PASSWORD})
        + "' INTO TABLE events"
    )
    with pytest.raises(SourceAuthError) as err:  # CREATE PIPELINE asks the broker
        sql.execute(create)
    message = str(err.value)
    assert "refused authentication of user 'alice' with SASL SCRAM-SHA-512" in message
    assert "Broker transport failure" not in message and PASSWORD not in message
    sql.execute(create.replace("INTO TABLE", "SKIP SOURCE CHECK INTO TABLE"))
    t = time.time()
    with pytest.raises(SourceAuthError) as err:
        engine.run_batch("p")
    assert time.time() - t < 10  # terminal: not retried
    assert engine.pipeline("p").state == "Error"
    assert PASSWORD not in engine.pipeline("p").last_error
    assert "user 'alice'" in engine.pipeline("p").last_error


def test_create_pipeline_checks_the_source_unless_told_not_to(engine, broker, topic):
    engine.create_table("events", SCHEMA)
    sql = SqlSession(engine)
    (ok,) = sql.execute(
        f"CREATE PIPELINE good AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE events"
    )
    assert ok.message == (
        f"Query OK, 0 rows affected; topic '{topic}' answered with 4 partitions "
        f"at {broker.bootstrap}"
    )
    with pytest.raises(SourceError, match="topic 'nope' does not exist"):
        sql.execute(
            f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/nope' INTO TABLE events"
        )
    with pytest.raises(Exception, match="table 't1' does not exist"):  # its own mistakes first
        sql.execute("CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:1/x' INTO TABLE t1")
    with pytest.raises(SourceUnavailableError, match=r"cannot reach Kafka at 127\.0\.0\.1:1"):
        sql.execute("CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:1/x' INTO TABLE events")
    assert [p.name for p in engine.pipelines()] == ["good"]
    (ok,) = sql.execute(
        f"CREATE PIPELINE later AS LOAD DATA KAFKA '{broker.bootstrap}/nope' "
        "SKIP SOURCE CHECK INTO TABLE events"
    )
    assert ok.message == "Query OK, 0 rows affected"
    (shown,) = sql.execute("SHOW CREATE PIPELINE later")
    assert "SKIP SOURCE CHECK" not in shown.rows[0][1]  # an instruction, not the definition

"""Pinot's ``CLPLogMessageDecoder`` (``formats.pinot_clp``) on the real broker (Tansu),
through the whole pipeline: the corpus pair that uses it (Pinpoint's exceptionTrace table,
``errorMessage`` CLP-encoded) loads log events, each stored as Pinot stores it: the
logtype, dictionary and encoded variables of CLP's eight-byte encoding, a message without
variables of a kind the column's default null value, and a message that is not JSON in
the errors store with its partition and offset."""

from __future__ import annotations

import json
import time

from confluent_kafka import Producer

from sparkpipes.formats import clp
from tests.integration.test_pinot_corpus_loads import _read, pointed

PAIR = "pinpoint/exceptiontrace-exceptiontrace-common-pinot-exceptionTrace-realtime-table"

#: errorMessage → (logtype, dictionary variables, encoded variables) as Pinot stores them
MESSAGES = {
    # Pinot's CLPLogRecordExtractorTest message (formats/test_clp.py has its vector)
    "Started job_123 on node-987: 4 cores, 8 threads and 51.4% memory used.": (
        "Started \x12 on \x12: \x11 cores, \x11 threads and \x13% memory used.",
        ["job_123", "node-987"],
        [4, 8, 131616],
    ),
    "Connection to 10.0.0.1:5432 refused after 3 attempts": (
        "Connection to \x12:\x11 refused after \x11 attempts",
        ["10.0.0.1"],
        [5432, 3],
    ),
    # no variables: each list column stores its default null value (FieldSpec)
    "Stream closed": ("Stream closed", ["null"], [-(2**63)]),
}


def _event(i: int, message: str | None) -> bytes:
    event = {
        "tenantId": "t",
        "transactionId": f"tx{i}",
        "spanId": i,
        "exceptionId": i,
        "applicationName": "app",
        "agentId": "agent",
        "exceptionDepth": 0,
        "timestamp": int(time.time() * 1000) - i,
    }
    if message is not None:
        event["errorMessage"] = message
    return json.dumps(event).encode()


def test_the_corpus_clp_pair_stores_what_pinot_stores(engine, broker, topic):
    messages = [_event(i, m) for i, m in enumerate(MESSAGES)]
    messages += [b"not json {", _event(9, None)]
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for m in messages:
        p.produce(topic, m, partition=0)
    assert p.flush(30) == 0

    table = pointed(_read(PAIR, "table"), broker.bootstrap, topic)
    out = engine.pinot.add(table, _read(PAIR, "schema"))
    [pipeline] = out["pipelines"]
    engine.run_batches(pipeline, 10, until_idle=True)
    got = {r["transactionId"]: r for r in engine.table_arrow(out["table"]).to_pylist()}

    assert sorted(got) == ["tx0", "tx1", "tx2", "tx9"]
    for i, (message, (logtype, dictionary, encoded)) in enumerate(MESSAGES.items()):
        row = got[f"tx{i}"]
        assert row["errorMessage_logtype"] == logtype
        assert row["errorMessage_dictionaryVars"] == dictionary
        assert row["errorMessage_encodedVars"] == encoded
        if dictionary != ["null"]:  # clpDecode gives the message back
            back = clp.decode_message(logtype.encode(), [d.encode() for d in dictionary], encoded)
            assert back.decode() == message
    # a missing errorMessage: the three columns' default null values
    row = got["tx9"]
    assert row["errorMessage_logtype"] == "null"
    assert row["errorMessage_dictionaryVars"] == ["null"]
    assert row["errorMessage_encodedVars"] == [-(2**63)]
    # the message that is not JSON: the errors store, where it was
    [error] = engine.errors(pipeline)
    assert error["partition"] == "0" and error["offset"] == 3
    assert "invalid JSON" in error["reason"]

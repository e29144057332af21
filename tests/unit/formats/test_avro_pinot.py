"""Pinot's own ``KafkaAvroMessageDecoder`` framing (``formats.avro_pinot``), against a real
HTTP server on 127.0.0.1 serving LinkedIn's schema-repository lookups
(``GET <url>/id=<md5 hex>``, the stand-in of ``sparkpipes.testing.registry``) and messages
built as LinkedIn's encoder writes them (a header byte, the schema's MD5, Avro binary);
and the Pinot config that names it (Apache Pinot's ``sample_realtime_table_config.json``)
lowered onto it."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

from sparkpipes.config import FieldMapping
from sparkpipes.errors import ConfigError, SourceUnavailableError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.avro_pinot import (
    FRAMING,
    FRAMING_OPTION,
    URL_OPTION,
    PinotAvroMessageDecoder,
    repository_urls,
)
from sparkpipes.testing.registry import encode, encode_hashed

V1 = {
    "type": "record",
    "name": "sample",
    "fields": [
        {"name": "dim1", "type": "string"},
        {"name": "percent", "type": "float"},
        {"name": "incomingName", "type": "long"},
    ],
}
V2 = {
    **V1,
    "fields": [*V1["fields"], {"name": "dim2", "type": {"type": "array", "items": "string"}}],
}
COLUMNS = pa.schema(
    [
        ("dim1", pa.string()),
        ("dim2", pa.list_(pa.string())),
        ("percent", pa.float32()),
        ("incomingName", pa.int64()),
    ]
)
MAPPING = tuple(FieldMapping(f.name, (f.name,)) for f in COLUMNS)


def _decoder(url: str) -> PinotAvroMessageDecoder:
    options = {URL_OPTION: url, FRAMING_OPTION: FRAMING}
    dec = build_decoder("avro", COLUMNS, MAPPING, None, options)
    assert isinstance(dec, PinotAvroMessageDecoder)
    return dec


@pytest.fixture
def repo(registry):
    registry.hash_requests.clear()
    registry.hash_status = None
    yield registry
    registry.hash_status = None


def test_messages_of_two_schemas_decode_by_their_hash(repo):
    repo.register_hashed(V1)
    repo.register_hashed(V2)
    a = {"dim1": "a", "percent": 0.5, "incomingName": 18000}
    b = {"dim1": "b", "percent": 1.5, "incomingName": 18001, "dim2": ["x", "y"]}
    # Pinot reads the header byte without looking at it: any value decodes
    payloads = [encode_hashed(V1, a), encode_hashed(V2, b), encode_hashed(V1, a, header=7)]
    dec = _decoder(repo.repository_url)
    out = dec.decode(pa.array(payloads, pa.binary()))
    assert out.errors == ()
    assert out.table.to_pylist() == [
        {"dim1": "a", "dim2": None, "percent": 0.5, "incomingName": 18000},
        {"dim1": "b", "dim2": ["x", "y"], "percent": 1.5, "incomingName": 18001},
        {"dim1": "a", "dim2": None, "percent": 0.5, "incomingName": 18000},
    ]
    # each schema fetched once per task, by the lower-case hex of its hash
    assert sorted(repo.hash_requests) == sorted(set(repo.hash_requests))
    assert len(repo.hash_requests) == 2 and all(len(h) == 32 for h in repo.hash_requests)
    dec.decode(pa.array(payloads, pa.binary()))
    assert len(repo.hash_requests) == 2


def test_empty_messages_give_no_row_and_bad_ones_are_record_errors(repo):
    repo.register_hashed(V1)
    a = {"dim1": "a", "percent": 0.5, "incomingName": 1}
    unknown = {**V1, "name": "other"}
    payloads = [
        b"",  # Pinot's decoder returns null: the row is dropped
        encode_hashed(V1, a),
        encode_hashed(unknown, a),  # a hash the repository does not know
        b"\x00" + b"\x01" * 5,  # shorter than the header
        encode(1, V1, a),  # Confluent's wire format is not this one
        None,
    ]
    out = _decoder(repo.repository_url).decode(pa.array(payloads, pa.binary()))
    assert out.table.column("dim1").to_pylist() == ["a"]
    assert out.kept.to_pylist() == [1]
    reasons = {e.index: e.reason for e in out.errors}
    assert set(reasons) == {2, 3, 4, 5}
    assert "is not in the schema repository at" in reasons[2]
    assert "shorter than its header" in reasons[3]
    assert "null payload" in reasons[5]


def test_a_repository_that_does_not_answer_fails_the_batch(repo):
    repo.register_hashed(V1)
    repo.hash_status = 503
    message = encode_hashed(V1, {"dim1": "a", "percent": 0.5, "incomingName": 1})
    with pytest.raises(SourceUnavailableError, match="HTTP 503"):
        _decoder(repo.repository_url).decode(pa.array([message], pa.binary()))
    # several URLs (Pinot's comma-separated list): the next one that answers serves it
    repo.hash_status = None
    dead = "http://127.0.0.1:9/schemaRegistry"  # the discard port: nothing listens
    out = _decoder(f"{dead},{repo.repository_url}").decode(pa.array([message], pa.binary()))
    assert out.table.column("dim1").to_pylist() == ["a"]


def test_repository_urls_are_checked():
    assert repository_urls("http://a:1/r, http://b:2/r/") == ("http://a:1/r", "http://b:2/r")
    with pytest.raises(ConfigError, match="not an http"):
        repository_urls("ftp://a/r")
    with pytest.raises(ConfigError, match="holds a password"):
        repository_urls("http://u:pw@a/r")
    with pytest.raises(ConfigError, match=r"needs schema\.registry\.rest\.url"):
        repository_urls(" , ")


def test_pinots_sample_config_lowers_onto_this_decoder():
    from sparkpipes.frontends.pinot.lowering import lower
    from sparkpipes.frontends.pinot.model import load_schema, load_table

    corpus = pathlib.Path(__file__).parents[2] / "corpus" / "pinot" / "apache-pinot"
    item = "pinot-tools-src-main-resources-conf-sample-realtime-table-config"
    schema_doc = json.loads((corpus / f"{item}.schema.json").read_text())
    schema_doc["schemaName"] = "sampleTable"  # the corpus pairs it with a placeholder name
    schema = load_schema(schema_doc)
    cfg = load_table(json.loads((corpus / f"{item}.table.json").read_text()), schema)
    spec = lower(schema, cfg)
    assert spec.format.kind == "avro"
    assert dict(spec.format.options) == {
        URL_OPTION: "http://localhost:2222/schemaRegistry",
        FRAMING_OPTION: FRAMING,
        # values converted as Pinot's DataTypeTransformer (formats.pinot_convert)
        "pinot.values": "true",
        "pinot.json.columns": "",
    }
    assert (spec.source.location, spec.source.start) == ("localhost:19092/kafkaTopicName", "latest")

"""Pinot's ``CLPLogMessageDecoder`` (``formats.pinot_clp``): the cases of Pinot's
``CLPLogRecordExtractorTest`` (apache/pinot@210c2951e72:pinot-plugins/pinot-input-format/
pinot-clp-log/src/test/java/org/apache/pinot/plugin/inputformat/clplog/
CLPLogRecordExtractorTest.java) and the rules of ``CLPLogRecordExtractor`` /
``CLPLogRecordExtractorConfig``, on Arrow and record by record."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder, clp
from sparkpipes.formats.pinot_clp import PinotClpDecoder, clp_config, object_text

M1 = "Started job_123 on node-987: 4 cores, 8 threads and 51.4% memory used."
M2 = "Stopped job_123 on node-987: 3 cores, 6 threads and 22.0% memory used."


def _columns(*fields: str) -> list[tuple[str, pa.DataType]]:
    out = []
    for f in fields:
        out += [(f, pa.string()), (f + "_logtype", pa.string())]
        out += [(f + "_dictionaryVars", pa.list_(pa.string()))]
        out += [(f + "_encodedVars", pa.list_(pa.int64()))]
    return out


SCHEMA = pa.schema([*_columns("message1", "message2"), ("n", pa.int32()), ("topic", pa.string())])


def _decode(records, schema=SCHEMA, **props):
    options = {f"decoder.prop.{k}": v for k, v in props.items()}
    dec = build_decoder("pinot-clp", schema, options=options)
    assert isinstance(dec, PinotClpDecoder)
    payloads = [r if isinstance(r, bytes) else json.dumps(r).encode() for r in records]
    out = dec.decode(pa.array(payloads, pa.binary()))
    return out.table.to_pylist(), out.errors


def _decoded(row, field):
    """Pinot's clpDecode of the field's three columns (its test's validateClpEncodedField)."""
    logtype = row[field + "_logtype"].encode("latin-1")
    dictionary = [v.encode("latin-1") for v in row[field + "_dictionaryVars"] or []]
    return clp.decode_message(logtype, dictionary, row[field + "_encodedVars"] or []).decode()


@pytest.mark.parametrize("remove", [True, False])
@pytest.mark.parametrize("slow", [False, True])
def test_pinots_clp_encoding(remove, slow):
    """testCLPEncoding: both fields encoded; the field itself gone only if removed."""
    records = [{"message1": M1, "message2": M2, "n": 1}]
    if slow:  # a value Arrow does not read as text: the chunk goes record by record
        records.append({"message1": 5, "n": 2})
    rows, errors = _decode(
        records, fieldsForClpEncoding="message1,message2", removeProcessedFields=str(remove)
    )
    assert not errors
    row = rows[0]
    assert (row["message1"], row["message2"]) == ((None, None) if remove else (M1, M2))
    assert _decoded(row, "message1") == M1 and _decoded(row, "message2") == M2
    assert (
        row["message1_logtype"]
        == "Started \x12 on \x12: \x11 cores, \x11 threads and \x13% memory used."
    )
    assert row["message1_dictionaryVars"] == ["job_123", "node-987"]
    assert row["message1_encodedVars"] == [4, 8, 131616]
    if slow:  # a number is encoded as its JSON text; no dictionary variable: null
        assert rows[1]["message1_logtype"] == "\x11" and rows[1]["message1_encodedVars"] == [5]
        assert rows[1]["message1_dictionaryVars"] is None
        assert rows[1]["message2_logtype"] is None  # missing: three nulls


def test_empty_names_in_the_field_list_are_skipped():
    """testBadCLPEncodingConfig."""
    rows, _ = _decode(
        [{"message1": M1, "message2": M2}], fieldsForClpEncoding=",message1,,message2,"
    )
    assert _decoded(rows[0], "message1") == M1 and _decoded(rows[0], "message2") == M2


def test_without_fields_nothing_is_encoded():
    """testEmptyCLPEncodingConfig: the fields pass through, no logtype."""
    rows, _ = _decode([{"message1": M1, "message2": M2}])
    assert rows[0]["message1"] == M1 and rows[0]["message1_logtype"] is None
    # removeProcessedFields is not even read without fieldsForClpEncoding
    assert clp_config({"removeProcessedFields": "true"}).remove_processed is False


def test_the_topic_column_holds_the_records_own_value():
    """testPreserveTopicName puts the topic there, but in a table Pinot then reads every
    schema column from the record, that one too."""
    props = {"fieldsForClpEncoding": "message1", "topicNameDestinationColumn": "topic"}
    rows, _ = _decode([{"message1": "x"}, {"message1": "x", "topic": "own"}], **props)
    assert [r["topic"] for r in rows] == [None, "own"]


def test_fields_not_encoded_are_converted_as_by_the_json_decoder():
    rows, errors = _decode([{"message1": M1, "n": "7"}], fieldsForClpEncoding="message1")
    assert not errors and rows[0]["n"] == 7
    rows, errors = _decode([{"message1": M1, "n": "seven"}], fieldsForClpEncoding="message1")
    assert rows == [] and "cannot convert" in errors[0].reason


def test_values_that_are_not_text_are_encoded_as_their_json():
    # objects in the message's key order (a LinkedHashMap), reals as Double.toString
    value = {"b": 1e10, "a": [1.0, "x y"], "c": None, "d": True}
    assert object_text(value) == '{"b":1.0E10,"a":[1.0,"x y"],"c":null,"d":true}'
    props = {"fieldsForClpEncoding": "message1", "removeProcessedFields": "true"}
    rows, _ = _decode([{"message1": value}], **props)
    assert _decoded(rows[0], "message1") == object_text(value)
    # kept, the field is converted as any: an object of several values into a single-value
    # column does not convert (DataTypeTransformer), so the record is a bad record
    _, errors = _decode([{"message1": value}], fieldsForClpEncoding="message1")
    assert "cannot read a single value" in errors[0].reason


def test_unencodable_values():
    props = {"fieldsForClpEncoding": "message1", "unencodableFieldSuffix": "_raw"}
    schema = pa.schema([*_columns("message1"), ("message1_raw", pa.string())])
    bad = "a \x11 placeholder 1"
    rows, _ = _decode([{"message1": bad}, {"message1": M1}], schema, **props)
    # three nulls, the value under the suffix; encodable ones leave the suffix null
    assert rows[0]["message1_logtype"] is None and rows[0]["message1_encodedVars"] is None
    assert rows[0]["message1_raw"] == bad and rows[1]["message1_raw"] is None
    # unencodableFieldError: its own encoding stands in
    rows, _ = _decode([{"message1": bad}], schema, **props, unencodableFieldError="err 42")
    assert rows[0]["message1_logtype"] == "err \x11" and rows[0]["message1_encodedVars"] == [42]
    # more than 1000 variables of a kind (MAX_MULTI_VALUES_PER_ROW)
    rows, _ = _decode([{"message1": " ".join(["1"] * 1001)}], schema, **props)
    assert rows[0]["message1_logtype"] is None and rows[0]["message1_raw"].startswith("1 1")
    rows, _ = _decode([{"message1": " ".join(["1"] * 1000)}], schema, **props)
    assert len(rows[0]["message1_encodedVars"]) == 1000


def test_a_message_that_is_not_a_json_object_is_a_bad_record():
    rows, errors = _decode([b"not json", b"[1]", {"message1": M1}], fieldsForClpEncoding="message1")
    assert len(rows) == 1 and [e.index for e in errors] == [0, 1]
    assert "invalid JSON" in errors[0].reason


def test_columns_declared_with_other_types_are_converted():
    schema = pa.schema([("m_logtype", pa.string()), ("m_encodedVars", pa.list_(pa.int32()))])
    rows, errors = _decode([{"m": "a 5 b 7"}], schema, fieldsForClpEncoding="m")
    assert not errors and rows == [{"m_logtype": "a \x11 b \x11", "m_encodedVars": [5, 7]}]


def test_arrow_and_record_by_record_agree():
    records = [{"message1": f"user{i} took {i}.5 s on host-{i % 3}", "n": i} for i in range(50)]
    records += [{"message1": None}, {"message1": ""}, {"n": 3}]
    props = {"fieldsForClpEncoding": "message1", "removeProcessedFields": "TRUE"}
    fast, _ = _decode(records, **props)
    slow, _ = _decode([*records, {"message1": ["a 1"]}], **props)
    assert fast == slow[:-1]
    assert fast[-3]["message1_logtype"] is None and fast[-2]["message1_logtype"] == ""
    # the first chunk is read on Arrow (no fall back to record by record)
    dec = build_decoder(
        "pinot-clp", SCHEMA, options={f"decoder.prop.{k}": v for k, v in props.items()}
    )
    values = pa.array([json.dumps(r).encode() for r in records], pa.binary())
    assert dec.fast and dec._fast(values).to_pylist() == fast


def test_other_record_extractors_are_refused():
    with pytest.raises(ConfigError, match=r"recordExtractorClass 'x\.Y' is not supported"):
        clp_config({"recordExtractorClass": "x.Y"})
    ok = "org.apache.pinot.plugin.inputformat.clplog.CLPLogRecordExtractor"
    with pytest.raises(ConfigError, match=r"needs decoder\.prop\.recordExtractorConfigClass"):
        clp_config({"recordExtractorClass": ok})
    config = ok + "Config"
    assert clp_config({"recordExtractorClass": ok, "recordExtractorConfigClass": config})

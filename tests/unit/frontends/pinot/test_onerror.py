"""What becomes of a record that cannot load, as Pinot's realtime consumer decides it
(apache/pinot@210c2951e72, ``RealtimeSegmentDataManager.processStreamEvents`` and
``parseStopOnDecodeErrorConfig``): dropped and consumption goes on, whether or not
``continueOnError``; ``stopOnDecodeError: true`` (any case) stops at a message that does not
decode; another value is read as false, with a note."""

import pytest

from sparkpipes.frontends.pinot.lowering import lower
from sparkpipes.frontends.pinot.model import load_schema, load_table
from tests.unit.frontends.pinot.test_model import SCHEMA, TABLE, with_stream
from tests.unit.frontends.pinot.test_streams_lowered import KINESIS

STREAM = TABLE["tableIndexConfig"]["streamConfigs"]


def _lowered(stream, **ingestion):
    schema = load_schema(SCHEMA)
    doc = with_stream(stream)
    doc.setdefault("ingestionConfig", {}).update(ingestion)
    cfg = load_table(doc, schema)
    return cfg, lower(schema, cfg)


@pytest.mark.parametrize("continue_on_error", [False, True])
def test_bad_records_go_to_the_errors_store_and_loading_goes_on(continue_on_error):
    _, spec = _lowered(STREAM, continueOnError=continue_on_error)
    assert spec.format.skip_parser_errors and spec.format.skip_constraint_errors


@pytest.mark.parametrize("stream", [STREAM, KINESIS])
@pytest.mark.parametrize("value", ["true", "TRUE", "True"])
def test_stop_on_decode_error_fails_the_batch_at_a_message_that_does_not_decode(stream, value):
    cfg, spec = _lowered({**stream, "stopOnDecodeError": value})
    assert not spec.format.skip_parser_errors
    assert spec.format.skip_constraint_errors  # a transform's failure still drops the row
    assert "stopOnDecodeError" not in cfg.unrecognized and cfg.notes == ()


@pytest.mark.parametrize("value", ["false", "FALSE"])
def test_stop_on_decode_error_false_is_the_default(value):
    cfg, spec = _lowered({**STREAM, "stopOnDecodeError": value})
    assert spec.format.skip_parser_errors and cfg.notes == ()


def test_another_value_is_read_as_false_with_a_note():
    cfg, spec = _lowered({**STREAM, "stopOnDecodeError": "yes"})
    assert spec.format.skip_parser_errors
    [note] = cfg.notes
    assert "stopOnDecodeError 'yes'" in note and "read as false" in note

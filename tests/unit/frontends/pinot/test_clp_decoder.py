"""A Pinot table config naming ``CLPLogMessageDecoder`` (apache/pinot@210c2951e72,
pinot-plugins/pinot-input-format/pinot-clp-log): read and lowered onto ``FORMAT
pinot-clp`` (``formats.pinot_clp``) with its ``decoder.prop.*`` and the JSON decoder's
options; a record's own value of a transform's column loaded as with the JSON decoder;
another record extractor refused by name."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.formats.pinot_json import CONTINUE_ON_ERROR, JSON_COLUMNS, OWN_SCALAR
from sparkpipes.frontends.pinot.lowering import lower
from sparkpipes.frontends.pinot.model import load_schema, load_table
from tests.unit.frontends.pinot.test_model import SCHEMA, TABLE, with_stream

CLP = "org.apache.pinot.plugin.inputformat.clplog.CLPLogMessageDecoder"
STREAM = {
    **TABLE["tableIndexConfig"]["streamConfigs"],
    "stream.kafka.decoder.class.name": CLP,
    "stream.kafka.decoder.prop.fieldsForClpEncoding": "message",
    "stream.kafka.decoder.prop.removeProcessedFields": "true",
}


def _spec(stream, table=TABLE):
    schema = load_schema(SCHEMA)
    return lower(schema, load_table(with_stream(stream, table), schema))


def test_lowered_onto_pinot_clp_with_its_props():
    spec = _spec(STREAM)
    assert spec.format.kind == "pinot-clp"
    opts = spec.format.options
    assert opts["decoder.prop.fieldsForClpEncoding"] == "message"
    assert opts["decoder.prop.removeProcessedFields"] == "true"
    assert JSON_COLUMNS in opts and CONTINUE_ON_ERROR not in opts


def test_a_transforms_column_takes_the_records_own_value_as_with_json():
    table = {**TABLE, "ingestionConfig": {"continueOnError": True}}
    table["ingestionConfig"]["transformConfigs"] = [
        {"columnName": "uuid", "transformFunction": "concat(name, 'x', '')"}
    ]
    spec = _spec(STREAM, table)
    assert spec.format.options[CONTINUE_ON_ERROR] == "true"
    assert spec.format.options[OWN_SCALAR] == "uuid"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"recordExtractorClass": "com.acme.X"}, r"recordExtractorClass 'com\.acme\.X'"),
        (
            {"recordExtractorClass": CLP.replace("MessageDecoder", "RecordExtractor")},
            r"needs decoder\.prop\.recordExtractorConfigClass",
        ),
    ],
)
def test_another_record_extractor_is_refused(props, message):
    stream = {**STREAM, **{f"stream.kafka.decoder.prop.{k}": v for k, v in props.items()}}
    with pytest.raises(ConfigError, match=message):
        _spec(stream)

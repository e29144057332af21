"""``ingestionConfig.complexTypeConfig`` read as Pinot reads it (apache/pinot@210c2951:
pinot-spi/.../ingestion/ComplexTypeConfig.java, the ComplexTypeTransformer, and the
prefixesToRename check of TableConfigUtils.validateIngestionConfig) and lowered onto the
format's ``nested`` step; and a schema's stream metadata columns without
``metadata.populate``, which Pinot's consumer leaves unfilled but for ``__key``
(StreamDataDecoderImpl puts the record's key there either way)."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest

from sparkpipes.config import NestedSpec, PipelineSpec
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.lowering import lower, table_spec
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.problems import PinotConfigError
from sparkpipes.sources import build_source
from sparkpipes.sources.kafka import KafkaSource

CORPUS = pathlib.Path(__file__).parents[3] / "corpus" / "pinot"
MEETUP = "apache-pinot/stream-meetupRsvpComplexType-meetupRsvpComplexType-realtime-table-config"
DOCKER = "apache-pinot/docker-images-pinot-examples-docker-table-configs-meetupRsvp-realtime-table-config"


def _pair(item):
    table = json.loads((CORPUS / f"{item}.table.json").read_text())
    schema = json.loads((CORPUS / f"{item}.schema.json").read_text())
    return table, schema


def _with_complex(config):
    table, schema = _pair(MEETUP)
    table = copy.deepcopy(table)
    table["ingestionConfig"]["complexTypeConfig"] = config
    return table, schema


def test_the_meetup_example_lowers_onto_dotted_columns_and_an_unnested_array():
    table, schema = _pair(MEETUP)
    s = load_schema(schema)
    cfg = load_table(table, s)
    spec = lower(s, cfg)
    assert spec.format.nested == NestedSpec(("group.group_topics",))
    assert ("group.group_topics.urlkey", ("group.group_topics.urlkey",)) in [
        (m.column, m.path) for m in spec.format.mapping
    ]
    assert "group.group_city" in [c.name for c in table_spec(s, cfg).columns]
    assert "complexTypeConfig" not in " ".join(cfg.unrecognized)
    # the stored definition reads back the same
    assert PipelineSpec.from_json(spec.to_json()).format.nested == spec.format.nested


def test_the_keys_pinot_reads_are_honoured():
    table, schema = _with_complex(
        {
            "fieldsToUnnest": ["group.group_topics"],
            "delimiter": ".",
            "collectionNotUnnestedToJson": "ALL",
            "prefixesToRename": {"payload.": ""},
        }
    )
    s = load_schema(schema)
    nested = lower(s, load_table(table, s)).format.nested
    assert nested == NestedSpec(("group.group_topics",), ".", "ALL", (("payload.", ""),))


def test_every_problem_of_a_complex_type_config_is_reported_at_its_path():
    table, schema = _with_complex(
        {
            "fieldsToUnnest": "group.group_topics",
            "delimiter": "_",
            "collectionNotUnnestedToJson": "NONE",
            "prefixesToRename": {"group.": "g."},
        }
    )
    with pytest.raises(PinotConfigError) as e:
        load_table(table, load_schema(schema))
    where = "ingestionConfig.complexTypeConfig"
    paths = {p for _doc, p, _m in e.value.problems}
    assert {
        f"{where}.fieldsToUnnest",
        f"{where}.delimiter",
        f"{where}.collectionNotUnnestedToJson",
        f"{where}.prefixesToRename",
    } <= paths
    text = str(e.value)
    assert "delimiter '_' is not supported" in text
    assert "collectionNotUnnestedToJson NONE" in text and "is not supported" in text
    # Pinot's TableConfigUtils: "Fields in the schema may not begin with any prefix …"
    assert "Name conflict with field: group.group_city and prefix: group." in text


def test_an_unknown_key_of_it_is_accepted_and_reported():
    table, schema = _with_complex({"fieldsToUnnest": [], "someFutureKey": 1})
    s = load_schema(schema)
    cfg = load_table(table, s)
    assert "ingestionConfig.complexTypeConfig.someFutureKey" in cfg.unrecognized


def test_a_dotted_name_is_allowed_in_a_schema_and_other_odd_names_are_not():
    s = load_schema(
        {
            "schemaName": "s",
            "dimensionFieldSpecs": [{"name": "a.b_c.d", "dataType": "STRING"}],
        }
    )
    assert s.names == ["a.b_c.d"]
    for bad in ("a..b", "a.", ".a", "a b"):
        with pytest.raises(ConfigError, match="may be dotted"):
            load_schema(
                {"schemaName": "s", "dimensionFieldSpecs": [{"name": bad, "dataType": "INT"}]}
            )


def test_metadata_columns_without_populate_are_filled_as_pinot_fills_them():
    # Pinot's KafkaPartitionLevelConsumer puts offset/timestamp metadata and headers only
    # with metadata.populate; StreamDataDecoderImpl puts the key in __key either way
    table, schema = _pair(DOCKER)
    s = load_schema(schema)
    cfg = load_table(table, s)
    assert not cfg.stream.metadata_populate
    [note] = [n for n in cfg.notes if "metadata.populate" in n]
    assert "__metadata$offset, __metadata$recordTimestamp" in note and "__key" not in note
    assert "default null value" in note
    spec = lower(s, cfg)
    assert spec.source.config["record.metadata"] == "key"
    assert not any(m.column.startswith("__") for m in spec.format.mapping)
    source = build_source("kafka", spec.source.location, spec.source.config, {})
    assert isinstance(source, KafkaSource) and source.record_metadata == "key"
    columns = [c.name for c in table_spec(s, cfg).columns]
    assert {"__key", "__metadata$offset", "__metadata$recordTimestamp"} <= set(columns)


def test_with_populate_no_warning_and_every_metadata_column_is_filled():
    table, schema = _pair(DOCKER)
    table = copy.deepcopy(table)
    streams = table["tableIndexConfig"]["streamConfigs"]
    streams["stream.kafka.metadata.populate"] = "true"
    s = load_schema(schema)
    cfg = load_table(table, s)
    assert not [n for n in cfg.notes if "metadata.populate" in n]
    assert lower(s, cfg).source.config["record.metadata"] is True


def test_a_column_read_both_as_a_value_and_as_a_record_is_a_problem_of_the_file():
    table, schema = _pair(MEETUP)
    schema = copy.deepcopy(schema)
    schema["dimensionFieldSpecs"].append({"name": "group.group_topics", "dataType": "JSON"})
    with pytest.raises(ConfigError) as e:
        load_table(table, load_schema(schema))
    assert "'group.group_topics' is read both as a value and as a record" in str(e.value)

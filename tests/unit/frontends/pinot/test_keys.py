"""Pinot's handling of keys (``frontends.pinot.keys``): what only concerns Pinot's servers,
or what Pinot does not know, is accepted, kept and reported as ``unrecognizedProperties``;
what would change the rows loaded and is not implemented is refused by name; every problem
of a file comes at once, each at its JSON path; ``threshold.size`` counts rows."""

import copy

import pytest

from sparkpipes.config.core import REDACTED
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot import keys
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.problems import PinotConfigError, Problems, pointer
from tests.unit.frontends.pinot.test_model import SCHEMA, TABLE, with_stream

STREAM = TABLE["tableIndexConfig"]["streamConfigs"]


def _table(**changes):
    t = copy.deepcopy(TABLE)
    for path, value in changes.items():
        node = t
        *head, last = path.split("__")
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    return t


def test_server_only_and_unknown_keys_are_accepted_kept_and_reported():
    t = _table(
        tableIndexConfig__jsonIndexConfigs={"person": {"maxLevels": 2}},
        tableIndexConfig__multiColumnTextIndexConfig={"columns": ["a"]},
        segmentsConfig__segmentPushFrequency="daily",
        ingestionConfig__batchIngestionConfig={"segmentIngestionType": "APPEND"},
        routing={"instanceSelectorType": "replicaGroup"},
        someFutureKey=1,
    )
    stream = {
        **STREAM,
        "stream.kafka.hlc.zk.connect.string": "zk:2181",
        "stream.kafka.decoder.prop.format": "JSON",
        "stream.kafka.unheard.of": "x",
        "stream.kafka.consumer.prop.some.password": "hunter2",
    }
    t["tableIndexConfig"]["streamConfigs"] = stream
    cfg = load_table(t, load_schema(SCHEMA))
    found = cfg.unrecognized
    for path in (
        "tableIndexConfig.jsonIndexConfigs",
        "tableIndexConfig.multiColumnTextIndexConfig",
        "segmentsConfig.segmentPushFrequency",
        "ingestionConfig.batchIngestionConfig",
        "routing",
        "someFutureKey",
        "tableIndexConfig.streamConfigs.stream.kafka.hlc.zk.connect.string",
        "tableIndexConfig.streamConfigs.stream.kafka.decoder.prop.format",
        "tableIndexConfig.streamConfigs.stream.kafka.unheard.of",
    ):
        assert path in found, path
    # kept with the stored config, secrets redacted there and in the report
    assert cfg.shown()["tableIndexConfig"]["jsonIndexConfigs"] == {"person": {"maxLevels": 2}}
    assert found["tableIndexConfig.streamConfigs.stream.kafka.consumer.prop.some.password"] == (
        REDACTED
    )
    # what is read is not reported
    assert "tableIndexConfig.streamConfigs.stream.kafka.topic.name" not in found
    assert "tableName" not in found


def test_each_not_applicable_key_has_a_reason_and_unknown_ones_say_so():
    assert "index" in keys.reason("tableIndexConfig.jsonIndexConfigs")
    assert "high-level" in keys.reason("streamConfigs.stream.kafka.hlc.zk.connect.string")
    assert keys.reason("someFutureKey").startswith(keys.UNKNOWN)
    assert "did you mean 'tenants'" in keys.reason("tenant", ["tenants", "routing"])
    assert all(reason.strip() for reason in keys.NOT_APPLICABLE.values())
    assert all("not supported" in why for why in keys.REFUSED.values())


def test_the_json_pointer_pinot_names_a_property_by():
    assert pointer("tableIndexConfig.jsonIndexConfigs") == "/tableIndexConfig/jsonIndexConfigs"
    assert pointer("tableIndexConfig.streamConfigs.stream.kafka.hlc.x") == (
        "/tableIndexConfig/streamConfigs/stream.kafka.hlc.x"
    )
    assert pointer("ingestionConfig.streamIngestionConfig.streamConfigMaps[0].a.b") == (
        "/ingestionConfig/streamIngestionConfig/streamConfigMaps/0/a.b"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"ingestionConfig__enrichmentConfigs": [{"enricherType": "generateColumn"}]},
            "ingestionConfig.enrichmentConfigs: enrichmentConfigs is not supported",
        ),
        (
            {"task__taskTypeConfigsMap": {"MergeRollupTask": {"1h.mergeType": "rollup"}}},
            "MergeRollupTask with mergeType rollup .* is not supported",
        ),
    ],
)
def test_keys_that_change_what_is_loaded_are_refused_by_name(change, message):
    with pytest.raises(ConfigError, match=message):
        load_table(_table(**change), load_schema(SCHEMA))


def test_harmless_values_of_refusable_keys_are_accepted():
    cfg = load_table(
        _table(
            tableIndexConfig__aggregateMetrics=False,
            task__taskTypeConfigsMap={"MergeRollupTask": {"1h.mergeType": "concat"}},
        ),
        load_schema(SCHEMA),
    )
    assert "task" in cfg.unrecognized
    # aggregateMetrics is read (frontends.pinot.aggregation): false is no rollup
    assert "tableIndexConfig.aggregateMetrics" not in cfg.unrecognized and cfg.aggregation is None


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (
            # Pinot's CLP log decoder is read (formats.pinot_clp), but not with another
            # record extractor, which would read the records otherwise
            {
                "stream.kafka.decoder.class.name": (
                    "org.apache.pinot.plugin.inputformat.clplog.CLPLogMessageDecoder"
                ),
                "stream.kafka.decoder.prop.fieldsForClpEncoding": "message",
                "stream.kafka.decoder.prop.recordExtractorClass": "com.acme.LogExtractor",
            },
            "recordExtractorClass 'com.acme.LogExtractor' is not supported",
        ),
        (
            # Pinot's own Avro framing is read (formats.avro_pinot), from its repository
            {
                "stream.kafka.decoder.class.name": (
                    "org.apache.pinot.plugin.inputformat.avro.KafkaAvroMessageDecoder"
                )
            },
            "needs stream.kafka.decoder.prop.schema.registry.rest.url",
        ),
    ],
)
def test_stream_keys_that_change_what_is_loaded_are_refused(stream, message):
    with pytest.raises(ConfigError, match=message):
        load_table(with_stream({**STREAM, **stream}))


def test_the_same_topic_twice_is_refused_by_pinots_rule():
    """Several streams load one table (``test_multistream``), but not one topic twice."""
    t = copy.deepcopy(TABLE)
    del t["tableIndexConfig"]["streamConfigs"]
    t["ingestionConfig"] = {"streamIngestionConfig": {"streamConfigMaps": [STREAM, STREAM]}}
    with pytest.raises(ConfigError, match=r"Duplicate topic names found in streamConfigs"):
        load_table(t)


def test_schema_keys_reported_and_refused():
    s = copy.deepcopy(SCHEMA)
    s["dimensionFieldSpecs"][0]["cardinality"] = 1000
    s["dimensionFieldSpecs"][0]["singleValue"] = True  # a misspelling: Pinot ignores it too
    s["description"] = "events"
    loaded = load_schema(s)
    assert set(loaded.unrecognized) == {
        "dimensionFieldSpecs[0].cardinality",
        "dimensionFieldSpecs[0].singleValue",
        "description",
    }
    assert "did you mean 'singleValueField'" in keys.reason(
        "fieldSpec.singleValue", ["singleValueField", "name"]
    )
    s["timeFieldSpec"] = {"incomingGranularitySpec": {}}
    with pytest.raises(
        ConfigError,
        match=r"timeFieldSpec.incomingGranularitySpec: needs name, dataType and timeType",
    ):
        load_schema(s)


def test_every_problem_of_a_file_at_once_each_at_its_json_path():
    t = _table(
        tableType="HYBRID",
        segmentsConfig__retentionTimeUnit="FORTNIGHTS",
        ingestionConfig__complexTypeConfig={"delimiter": "_"},
        ingestionConfig__transformConfigs=[
            {"columnName": "uuid", "transformFunction": "nosuchfn(a)"},
            {"columnName": "count"},
        ],
    )
    t["tableIndexConfig"]["streamConfigs"] = {
        **STREAM,
        "stream.kafka.topic.name": "",
        "stream.kafka.isolation.level": "serializable",
        "stream.kafka.partition.ids": "one",
    }
    with pytest.raises(PinotConfigError) as e:
        load_table(t, load_schema(SCHEMA))
    text = str(e.value.message)
    first, *lines = text.splitlines()
    assert first == "8 problems in the Pinot table config 'events':", text
    assert [p for _doc, p, _m in e.value.problems] == [
        "tableType",
        "tableIndexConfig.streamConfigs",
        "tableIndexConfig.streamConfigs",
        "tableIndexConfig.streamConfigs",
        "ingestionConfig.complexTypeConfig.delimiter",
        "ingestionConfig.transformConfigs[0]",
        "ingestionConfig.transformConfigs[1]",
        "segmentsConfig",
    ]
    assert len(lines) == 8 and all(ln.startswith("  - table config: ") for ln in lines)
    for needle in (
        "tableType must be REALTIME",
        "delimiter '_' is not supported",
        "partition.ids must be partition ids and ranges",
        "needs stream.kafka.topic.name",
        "read_committed or read_uncommitted",
        "unknown transform function 'nosuchfn'",
        "needs columnName and transformFunction",
        "retention needs both retentionTimeUnit and retentionTimeValue",
    ):
        assert needle in text, needle


def test_schema_and_table_problems_together():
    s = copy.deepcopy(SCHEMA)
    s["dimensionFieldSpecs"][0]["dataType"] = "TEXT"
    s["timeFieldSpec"] = {}
    t = _table(tableType="OFFLINE")

    found = Problems("schema")
    load_schema(s, found)
    with pytest.raises(PinotConfigError) as e:
        load_table(t, None, schema_problems=found)
    docs = [d for d, _p, _m in e.value.problems]
    assert docs == ["schema", "schema", "table config"]
    assert e.value.message.startswith(
        "3 problems in the Pinot table config 'events' and its schema"
    )


@pytest.mark.parametrize(
    ("given", "rows"),
    [
        ({"realtime.segment.flush.threshold.size": "50000"}, 50_000),  # rows, Pinot's legacy name
        ({"realtime.segment.flush.threshold.rows": "7"}, 7),
        (
            {
                "realtime.segment.flush.threshold.size.llc": "9",
                "realtime.segment.flush.threshold.rows": "7",
            },
            9,
        ),
        (
            {
                "realtime.segment.flush.threshold.rows.llc": "3",
                "realtime.segment.flush.threshold.size.llc": "9",
            },
            3,
        ),
        ({"realtime.segment.flush.threshold.rows": "0"}, 0),
    ],
)
def test_flush_threshold_size_is_a_row_count(given, rows):
    stream = {k: v for k, v in STREAM.items() if "threshold" not in k}
    flush = load_table(with_stream({**stream, **given})).stream.flush
    assert flush.rows == rows
    assert flush.segment_bytes == 200 * 1024 * 1024  # the byte size is not touched


def test_flush_time_as_pinot_reads_it():
    stream = {k: v for k, v in STREAM.items() if "threshold" not in k}
    got = load_table(with_stream({**stream, "realtime.segment.flush.threshold.time": "1d2h"}))
    assert got.stream.flush.time_ms == 26 * 3_600_000
    # Pinot logs a warning and uses its default for a period it cannot read; so does this
    odd = load_table(with_stream({**stream, "realtime.segment.flush.threshold.time": "1min"}))
    assert odd.stream.flush.time_ms == 6 * 3_600_000
    assert any("1min" in n and "default" in n for n in odd.notes)

"""Several streams into one table (``streamConfigMaps`` with more than one stream config):
each stream checked at its own JSON path, Pinot's own rules for several streams
(``TableConfigUtils.validateStreamConfigMaps``) reported all at once, one pipeline per
stream into the one table named from the table and the stream's index, and Pinot's
partition ids (``index * 10000 + partition``)."""

import copy

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.lowering import lower, lower_all, pipeline_name
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.multistream import (
    PARTITION_PADDING_OFFSET,
    pinot_partition,
    pipeline_names,
)
from tests.unit.frontends.pinot.test_model import SCHEMA, TABLE
from tests.unit.frontends.pinot.test_streams_lowered import KINESIS

STREAM = TABLE["tableIndexConfig"]["streamConfigs"]
WHERE = "ingestionConfig.streamIngestionConfig.streamConfigMaps"


def _table(*streams, **top):
    t = copy.deepcopy(TABLE)
    del t["tableIndexConfig"]["streamConfigs"]
    t["ingestionConfig"] = {"streamIngestionConfig": {"streamConfigMaps": list(streams)}}
    t.update(top)
    return t


def _topic(name, brokers="kafka:9092", **more):
    return {
        **STREAM,
        "stream.kafka.topic.name": name,
        "stream.kafka.broker.list": brokers,
        **more,
    }


def _problems(t, schema=None) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as e:
        load_table(t, schema)
    return e.value.problems


def test_two_topics_on_two_brokers_load_in_order():
    t = load_table(_table(_topic("a"), _topic("b", "other:9093")))
    assert [(s.topic, s.brokers) for s in t.streams] == [("a", "kafka:9092"), ("b", "other:9093")]
    assert t.stream is t.streams[0]


def test_one_stream_keeps_its_one_pipeline_name():
    schema = load_schema(SCHEMA)
    t = load_table(TABLE, schema)
    assert len(t.streams) == 1
    (spec,) = lower_all(schema, t)
    assert spec.name == "events_REALTIME" == pipeline_name("events")
    assert lower(schema, t) == spec


def test_several_streams_lower_into_one_pipeline_each_into_the_table():
    schema = load_schema(SCHEMA)
    t = load_table(
        _table(
            _topic("a"),
            _topic(
                "b",
                "other:9093",
                **{"stream.kafka.consumer.prop.auto.offset.reset": "largest"},
            ),
        ),
        schema,
    )
    specs = lower_all(schema, t)
    assert [s.name for s in specs] == ["events_REALTIME_0", "events_REALTIME_1"]
    assert [s.source.location for s in specs] == ["kafka:9092/a", "other:9093/b"]
    assert [s.source.start for s in specs] == ["earliest", "latest"]
    assert {s.table for s in specs} == {"events"}
    # the rest of the lowering is the table's, the same for every stream
    assert specs[0].format == specs[1].format and specs[0].sink == specs[1].sink
    assert lower(schema, t, index=1) == specs[1]


def test_pipeline_names_cannot_collide_across_tables():
    assert pipeline_names("t", 1) == ("t_REALTIME",)
    assert pipeline_names("t", 3) == ("t_REALTIME_0", "t_REALTIME_1", "t_REALTIME_2")
    # a table named t_REALTIME_0 is raw 't_REALTIME_0', whose pipeline ends in _REALTIME
    assert pipeline_names("t_REALTIME_0", 1) == ("t_REALTIME_0_REALTIME",)


def test_pinot_partition_ids_pad_by_stream_index():
    assert PARTITION_PADDING_OFFSET == 10000
    assert pinot_partition(0, 3, 2) == 3
    assert pinot_partition(1, 3, 2) == 10003
    assert pinot_partition(2, "7", 3) == 20007
    assert pinot_partition(1, 12345, 1) == 12345  # one stream: no translation, as Pinot
    assert pinot_partition(1, "shardId-000000000001", 2) == "shardId-000000000001"


def test_every_problem_of_every_stream_is_reported_at_its_path():
    bad_a = _topic("a", **{"stream.kafka.consumer.prop.auto.offset.reset": "sideways"})
    bad_b = _topic("b")
    del bad_b["stream.kafka.topic.name"]
    paths = [p for _doc, p, _m in _problems(_table(bad_a, _topic("ok"), bad_b))]
    assert any(p.startswith(f"{WHERE}[0]") for p in paths), paths
    assert any(p.startswith(f"{WHERE}[2]") for p in paths), paths
    assert not any(p.startswith(f"{WHERE}[1]") for p in paths), paths


@pytest.mark.parametrize(
    ("streams", "top", "path", "message"),
    [
        (
            [_topic("a"), _topic("a", "other:9093")],
            {},
            f"{WHERE}[1]",
            "Duplicate topic names found in streamConfigs: a",
        ),
        (
            [_topic("a"), _topic("b", **{"realtime.segment.flush.threshold.rows": "1000"})],
            {},
            f"{WHERE}[1]",
            "Segment flush parameters must be consistent across all streamConfigs",
        ),
        (
            [_topic("a"), KINESIS],
            {},
            WHERE,
            "All streamConfigs must have the same stream type",
        ),
        (
            [_topic("a"), _topic("b")],
            {"upsertConfig": {"mode": "FULL"}},
            "upsertConfig",
            "Multiple stream configs are not supported for upsert table",
        ),
    ],
)
def test_pinots_rules_for_several_streams(streams, top, path, message):
    schema = copy.deepcopy(SCHEMA)
    schema["primaryKeyColumns"] = ["uuid"]
    found = _problems(_table(*streams, **top), load_schema(schema))
    assert any(p == path and message in m for _doc, p, m in found), found


def test_pauseless_with_several_streams_is_refused_as_pinot_does():
    t = _table(_topic("a"), _topic("b"))
    t["ingestionConfig"]["streamIngestionConfig"]["pauselessConsumptionEnabled"] = True
    found = _problems(t)
    assert any("pauseless consumption" in m for _d, _p, m in found), found
    # with one stream it is a segment setting, accepted and reported
    one = _table(_topic("a"))
    one["ingestionConfig"]["streamIngestionConfig"]["pauselessConsumptionEnabled"] = True
    assert load_table(one).unrecognized


def test_rules_and_other_problems_come_together():
    t = _table(_topic("a"), _topic("a"), upsertConfig={"mode": "FULL"})
    t["tableType"] = "OFFLINE"
    found = _problems(t)
    paths = {p for _d, p, _m in found}
    assert {"tableType", f"{WHERE}[1]", "upsertConfig"} <= paths, found


def test_dedup_and_decoders_may_differ_as_in_pinot():
    schema = copy.deepcopy(SCHEMA)
    schema["primaryKeyColumns"] = ["uuid"]
    s = load_schema(schema)
    avro = _topic(
        "b",
        **{
            "stream.kafka.decoder.class.name": (
                "org.apache.pinot.plugin.inputformat.avro.confluent."
                "KafkaConfluentSchemaRegistryAvroMessageDecoder"
            ),
            "stream.kafka.decoder.prop.schema.registry.rest.url": "http://127.0.0.1:8081",
        },
    )
    t = load_table(_table(_topic("a"), avro, dedupConfig={"dedupEnabled": True}), s)
    specs = lower_all(s, t)
    assert [p.format.kind for p in specs] == ["pinot-json", "avro"]
    assert {p.sink.write for p in specs} == {"ignore"}

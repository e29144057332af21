"""Transforms of other authors that configs use beside Kafka's: jcustenborder's
``ChangeTopicCase`` (``ChangeTopicCase.java``, Guava's ``CaseFormat``) and Confluent's
``Filter$Value``/``$Key`` (its "Filter (Confluent)" documentation)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.sources.connect.smt import Records
from sparkpipes.sources.connect.smt.jcustenborder import convert
from tests.unit.sources.connect.smt.helpers import keys, one, problems, records, values

CASE = "com.github.jcustenborder.kafka.connect.transform.common.ChangeTopicCase"
FILTER = "io.confluent.connect.transforms.Filter$Value"


@pytest.mark.parametrize(
    "source, text, target, expected",
    [
        # ChangeTopicCaseTest's cases
        ("UPPER_UNDERSCORE", "TOPIC_NAME", "LOWER_CAMEL", "topicName"),
        ("LOWER_CAMEL", "topicName", "UPPER_UNDERSCORE", "TOPIC_NAME"),
        ("LOWER_HYPHEN", "topic-name", "LOWER_UNDERSCORE", "topic_name"),
        # demo-scene's day 12, and Guava's word splitting and re-casing
        ("LOWER_HYPHEN", "day12-sys01", "UPPER_CAMEL", "Day12Sys01"),
        ("UPPER_CAMEL", "TopicName", "LOWER_HYPHEN", "topic-name"),
        ("LOWER_UNDERSCORE", "a__b", "UPPER_CAMEL", "AB"),
        ("LOWER_HYPHEN", "Mixed-CASE", "UPPER_UNDERSCORE", "MIXED_CASE"),
        ("LOWER_CAMEL", "already", "LOWER_CAMEL", "already"),
    ],
)
def test_change_topic_case_converts_as_guava_does(source, text, target, expected):
    assert convert(source, target, text) == expected


def test_change_topic_case_is_a_router_a_sink_resolves_per_topic():
    built = one(CASE, "sink", **{"from": "LOWER_HYPHEN", "to": "UPPER_CAMEL"})
    assert built.route("day12-sys01") == "Day12Sys01"
    out = built.apply(records([{"a": 1}], topics=["orders-eu"]))
    assert out.records.topic.to_pylist() == ["OrdersEu"] and values(out) == [{"a": 1}]


def test_change_topic_case_options_are_its_enum_names_as_written():
    found = problems({"transforms": "c", "transforms.c.type": CASE, "transforms.c.from": "lower"})
    assert {k for k, _ in found} == {"transforms.c.from", "transforms.c.to"}
    assert "'lower' is not a valid value for CaseFormat" in found[0][1]


def _filter(condition: str, kind: str = "include", **more: str):
    return one(FILTER, "sink", **{"filter.condition": condition, "filter.type": kind, **more})


def test_the_demo_scene_filter_keeps_the_stouts():
    out = _filter("$[?(@.product =~ /.*Stout/)]").apply(
        records([{"product": "Yeti Imperial Stout"}, {"product": "Stone IPA"}])
    )
    assert values(out) == [{"product": "Yeti Imperial Stout"}] and not out.refused


def test_exclude_and_the_missing_or_null_behaviour():
    cond = '$.key[?(@.nestedKey == "value1" || @.nestedKey == "value2")]'
    rows = [{"key": {"nestedKey": "value1"}}, {"key": {"nestedKey": "v3"}}, {"other": 1}]
    out = _filter(cond, "exclude").apply(records(rows))
    assert values(out) == [{"key": {"nestedKey": "v3"}, "other": None}]
    (refused,) = out.refused  # fail, the default: the record lacking key fails
    assert refused.index.to_pylist() == [2] and "missing.or.null.behavior fail" in refused.reason
    kept = _filter(cond, "exclude", **{"missing.or.null.behavior": "include"}).apply(records(rows))
    assert len(kept.records) == 2 and not kept.refused
    dropped = _filter(cond, **{"missing.or.null.behavior": "exclude"}).apply(records(rows))
    assert values(dropped) == [{"key": {"nestedKey": "value1"}, "other": None}]


def test_a_tombstone_takes_the_missing_or_null_behaviour():
    built = _filter("$[?(@.a == 1)]", **{"missing.or.null.behavior": "include"})
    out = built.apply(records([{"a": 1}, None, {"a": 2}]))
    assert out.records.index.to_pylist() == [0, 1]


def test_filter_key_reads_the_key():
    built = one(
        "io.confluent.connect.transforms.Filter$Key",
        **{"filter.condition": "$[?(@.region == 'eu')]", "filter.type": "include"},
    )
    out = built.apply(records([{"v": 1}, {"v": 2}], keys=[{"region": "eu"}, {"region": "us"}]))
    assert keys(out) == [{"region": "eu"}]


def test_floats_read_as_java_writes_them_and_timestamps_fail_their_record():
    value = pa.array(
        [{"f": 1.5, "g": 0.1, "t": 0}, {"f": 1e10, "g": 0.25, "t": 0}],
        pa.struct([("f", pa.float64()), ("g", pa.float32()), ("t", pa.timestamp("ms"))]),
    )
    rows = Records(
        key=pa.nulls(2),
        value=value,
        topic=pa.array(["t", "t"]),
        index=pa.array([0, 1], pa.int32()),
    )
    # Double.toString(1.0E10) is "1.0E10", BigDecimal's text "1.0E+10"; Float 0.1f is "0.1"
    out = _filter("$[?(@.f =~ /1\\.0E\\+10/ || @.g =~ /0\\.1/)]").apply(rows)
    assert out.records.index.to_pylist() == [0, 1]
    out = _filter("$[?(@.t > 5)]").apply(rows)
    assert len(out.records) == 0
    assert "compares a timestamp[ms] value" in out.refused[0].reason


def test_conditions_it_cannot_evaluate_exactly_are_refused_when_checked():
    def found(condition: str, **more: str) -> list[str]:
        cfg = {
            "transforms": "f",
            "transforms.f.type": FILTER,
            "transforms.f.filter.condition": condition,
            **{f"transforms.f.{k}": v for k, v in more.items()},
        }
        return [m for _, m in problems(cfg)]

    assert any("has no filter" in m for m in found("$.a.b", **{"filter.type": "include"}))
    assert any("deep scan" in m for m in found("$..a", **{"filter.type": "include"}))
    assert any("filter.type is required" in m for m in found("$[?(@.a)]"))
    bad = found("$[?(@.a)]", **{"filter.type": "include", "missing.or.null.behavior": "skip"})
    assert any("must be one of fail, include, exclude" in m for m in bad)


def test_maps_and_arrays_are_objects_and_arrays_to_the_path():
    value = pa.array(
        [
            {"attrs": [("color", "red")], "tags": ["a"]},
            {"attrs": [("color", "blue"), ("size", "L")], "tags": ["b", "vip"]},
        ],
        pa.struct([("attrs", pa.map_(pa.string(), pa.string())), ("tags", pa.list_(pa.string()))]),
    ).slice(1)
    rows = Records(
        key=pa.nulls(1), value=value, topic=pa.array(["t"]), index=pa.array([1], pa.int32())
    )
    assert len(_filter("$.attrs[?(@.size == 'L')]").apply(rows).records) == 1
    assert len(_filter("$[?(@.tags =~ /vip/)]").apply(rows).records) == 1
    assert len(_filter("$[?(@.attrs.color == 'red')]").apply(rows).records) == 0

"""Filter, routers, header transforms and predicates against Apache Kafka's sources
(Filter.java, RegexRouter.java, TimestampRouter.java, predicates/*.java)."""

from __future__ import annotations

import time

from tests.unit.sources.connect.smt.helpers import chain, one, problems, records, values

P = "org.apache.kafka.connect.transforms."


def test_filter_with_a_predicate_drops_what_it_selects_without_errors():
    c = chain(
        {
            "transforms": "f",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "tomb",
            "predicates": "tomb",
            "predicates.tomb.type": P + "predicates.RecordIsTombstone",
        }
    )
    out = c.apply(records([{"a": 1}, None, {"a": 3}]))
    assert values(out) == [{"a": 1}, {"a": 3}]
    assert out.refused == ()


def test_negate_applies_where_the_predicate_does_not_hold():
    c = chain(
        {
            "transforms": "f",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "orders",
            "transforms.f.negate": "true",
            "predicates": "orders",
            "predicates.orders.type": P + "predicates.TopicNameMatches",
            "predicates.orders.pattern": "orders.*",
        }
    )
    out = c.apply(records([{"a": 1}, {"a": 2}], topics=["orders-1", "users"]))
    assert values(out) == [{"a": 1}]


def test_a_transform_under_a_predicate_keeps_the_others_and_their_order():
    c = chain(
        {
            "transforms": "h",
            "transforms.h.type": P + "HoistField$Value",
            "transforms.h.field": "w",
            "transforms.h.predicate": "u",
            "predicates": "u",
            "predicates.u.type": P + "predicates.TopicNameMatches",
            "predicates.u.pattern": "u",
        }
    )
    out = c.apply(records([{"a": 1}, {"a": 2}, {"a": 3}], topics=["t", "u", "t"]))
    assert values(out) == [{"a": 1}, {"w": {"a": 2}}, {"a": 3}]


def test_regex_router_full_match_and_java_groups():
    # RegexRouter.java: matcher.matches(), then replaceFirst with $1
    out = one("RegexRouter", regex="db-(.*)", replacement="$1_copy").apply(
        records([{}, {}], topics=["db-a", "x-db-b"])
    )
    assert out.records.topic.to_pylist() == ["a_copy", "x-db-b"]


def test_timestamp_router_default_formats_and_missing_timestamp():
    # TimestampRouter.java: ${topic}-${timestamp}, yyyyMMdd; no timestamp -> DataException
    out = one("TimestampRouter").apply(records([{}, {}], timestamps=[1_700_000_000_000, None]))
    assert out.records.topic.to_pylist() == ["t-20231114"]
    assert "Timestamp missing on record" in out.refused[0].reason


def test_headers_insert_drop_and_has_header_key():
    c = chain(
        {
            "transforms": "ins,move,f",
            "transforms.ins.type": P + "InsertHeader",
            "transforms.ins.header": "h",
            "transforms.ins.value.literal": "v",
            "transforms.move.type": P + "HeaderFrom$Value",
            "transforms.move.fields": "secret",
            "transforms.move.headers": "s",
            "transforms.move.operation": "move",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "hasNone",
            "predicates": "hasNone",
            "predicates.hasNone.type": P + "predicates.HasHeaderKey",
            "predicates.hasNone.name": "absent",
        }
    )
    out = c.apply(records([{"a": 1, "secret": "x"}]))
    assert values(out) == [{"a": 1}]
    assert [n for n, _ in out.records.headers] == ["h", "s"]
    out = one("DropHeaders", headers="h").apply(out.records)
    assert [n for n, _ in out.records.headers] == ["s"]


def test_unknown_and_refused_classes_are_named_with_their_key():
    found = problems(
        {
            "transforms": "a,b",
            "transforms.a.type": "com.example.MyTransform",
            "transforms.b.type": "io.debezium.transforms.ByLogicalTableRouter",
        }
    )
    assert [k for k, _ in found] == ["transforms.a.type", "transforms.b.type"]
    assert "com.example.MyTransform is not supported" in found[0][1]
    assert "ByLogicalTableRouter is not supported" in found[1][1]


def test_structure_problems_all_at_once():
    found = problems(
        {
            "transforms": "a, b",
            "transforms.b.type": P + "Filter",
            "transforms.b.predicate": "p",
            "transforms.c.field": "x",
        }
    )
    keys = {k for k, _ in found}
    assert keys == {"transforms", "transforms.b.predicate", "transforms.c.field"}


def test_has_header_key_sees_a_header_set_under_a_predicate_only_where_it_was_set():
    """InsertHeader applied to topic a's records; a Filter on HasHeaderKey then drops
    those and keeps topic b's (Kafka's ConnectHeaders: the header is on a's records)."""
    c = chain(
        {
            "transforms": "ins,f",
            "transforms.ins.type": P + "InsertHeader",
            "transforms.ins.header": "h",
            "transforms.ins.value.literal": "v",
            "transforms.ins.predicate": "onA",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "hasH",
            "predicates": "onA,hasH",
            "predicates.onA.type": P + "predicates.TopicNameMatches",
            "predicates.onA.pattern": "a",
            "predicates.hasH.type": P + "predicates.HasHeaderKey",
            "predicates.hasH.name": "h",
        }
    )
    out = c.apply(records([{"n": 1}, {"n": 2}, {"n": 3}], topics=["a", "b", "a"]))
    assert values(out) == [{"n": 2}]


def test_a_pattern_that_backtracks_runs_in_linear_time_and_java_only_syntax_is_refused():
    """``(a+)+b`` takes Python's ``re`` years on 50 characters while holding the GIL (the
    whole server would stop); users' patterns run on RE2. A backreference, which RE2
    lacks, is refused by name when the config is read."""
    bomb = "(a+)+b"
    c = chain(
        {
            "transforms": "r,f",
            "transforms.r.type": P + "RegexRouter",
            "transforms.r.regex": bomb,
            "transforms.r.replacement": "x",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "m",
            "predicates": "m",
            "predicates.m.type": P + "predicates.TopicNameMatches",
            "predicates.m.pattern": bomb,
        }
    )
    started = time.perf_counter()
    out = c.apply(records([{"n": 1}], topics=["a" * 5000]))
    assert c.route("a" * 5000) == "a" * 5000 and values(out) == [{"n": 1}]
    assert time.perf_counter() - started < 1.0
    found = problems(
        {
            "transforms": "r",
            "transforms.r.type": P + "RegexRouter",
            "transforms.r.regex": r"(a)\1",
            "transforms.r.replacement": "$9",
        }
    )
    assert [k for k, _ in found] == ["transforms.r.regex", "transforms.r.replacement"]

"""Debezium's ExtractNewRecordState, as its documentation describes it, and the sink
connector rules of routers (tables decided per topic)."""

from __future__ import annotations

from tests.unit.sources.connect.smt.helpers import chain, one, problems, records, values

UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
P = "org.apache.kafka.connect.transforms."


def event(op: str, before: dict | None, after: dict | None, **extra: object) -> dict:
    return {
        "before": before,
        "after": after,
        "source": {"db": "inventory", "table": "customers", "ts_ms": 7},
        "op": op,
        "ts_ms": 9,
        **extra,
    }


EVENTS = [
    event("c", None, {"id": 1, "name": "a"}),
    event("u", {"id": 1, "name": "a"}, {"id": 1, "name": "b"}),
    event("d", {"id": 1, "name": "b"}, None),
    None,  # the tombstone Debezium sends after a delete
]


def test_defaults_unwrap_after_and_drop_deletes_and_tombstones():
    out = one(UNWRAP, role="sink").apply(records(EVENTS))
    assert values(out) == [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]
    assert out.records.index.to_pylist() == [0, 1]
    assert not out.refused  # dropped, not refused


def test_rewrite_keeps_deletes_with_deleted_flag_and_tombstones_kept():
    out = one(UNWRAP, role="sink", delete_handling_mode="rewrite", drop_tombstones="false").apply(
        records(EVENTS)
    )
    assert values(out) == [
        {"id": 1, "name": "a", "__deleted": "false"},
        {"id": 1, "name": "b", "__deleted": "false"},
        {"id": 1, "name": "b", "__deleted": "true"},
        None,
    ]


def test_none_turns_deletes_into_tombstones():
    out = one(UNWRAP, role="sink", delete_handling_mode="none").apply(records(EVENTS))
    assert values(out) == [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}, None]


def test_tombstone_handling_mode_sets_both():
    out = one(UNWRAP, role="sink", delete_tombstone_handling_mode="rewrite-with-tombstone").apply(
        records(EVENTS)
    )
    assert [v and v["__deleted"] for v in values(out)] == ["false", "false", "true", None]


def test_add_fields_from_envelope_and_source():
    out = one(UNWRAP, role="sink", add_fields="op,table,source.ts_ms,lsn").apply(
        records(EVENTS[:2])
    )
    assert values(out) == [
        {
            "id": 1,
            "name": "a",
            "__op": "c",
            "__table": "customers",
            "__source_ts_ms": 7,
            "__lsn": None,
        },
        {
            "id": 1,
            "name": "b",
            "__op": "u",
            "__table": "customers",
            "__source_ts_ms": 7,
            "__lsn": None,
        },
    ]


def test_add_headers_and_prefix():
    out = one(
        UNWRAP,
        role="sink",
        add_headers="op",
        add_headers_prefix="dbz_",
        add_fields="op",
        add_fields_prefix="",
    ).apply(records(EVENTS[:1]))
    assert values(out) == [{"id": 1, "name": "a", "op": "c"}]
    assert out.records.header("dbz_op").to_pylist() == ["c"]


def test_not_a_change_event_passes_unchanged():
    out = one(UNWRAP, role="sink").apply(records([{"id": 1}]))
    assert values(out) == [{"id": 1}]


def test_options_checked_by_key():
    found = problems(
        {
            "transforms": "u",
            "transforms.u.type": UNWRAP,
            "transforms.u.delete.handling.mode": "delete",
            "transforms.u.route.by.field": "table",
            "transforms.u.add.fields": "op:operation",
        },
        role="sink",
    )
    assert [k for k, _ in found] == [
        "transforms.u.delete.handling.mode",
        "transforms.u.route.by.field",
        "transforms.u.add.fields",
    ]


def test_unwrap_then_replace_and_insert_field():
    c = chain(
        {
            "transforms": "unwrap,drop,ins",
            "transforms.unwrap.type": UNWRAP,
            "transforms.drop.type": P + "ReplaceField$Value",
            "transforms.drop.exclude": "name",
            "transforms.ins.type": P + "InsertField$Value",
            "transforms.ins.topic.field": "src",
        },
        role="sink",
    )
    assert values(c.apply(records(EVENTS))) == [{"id": 1, "src": "t"}, {"id": 1, "src": "t"}]


def test_sink_routing_is_per_topic():
    c = chain(
        {
            "transforms": "route",
            "transforms.route.type": P + "RegexRouter",
            "transforms.route.regex": r"dbserver1\.inventory\.(.*)",
            "transforms.route.replacement": "$1",
        },
        role="sink",
    )
    assert c.route("dbserver1.inventory.customers") == "customers"
    assert c.route("other") == "other"


def test_sink_routing_under_topic_predicate():
    c = chain(
        {
            "transforms": "route",
            "transforms.route.type": P + "RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.route.replacement": "x_$1",
            "transforms.route.predicate": "isA",
            "transforms.route.negate": "true",
            "predicates": "isA",
            "predicates.isA.type": P + "predicates.TopicNameMatches",
            "predicates.isA.pattern": "a.*",
        },
        role="sink",
    )
    assert c.route("abc") == "abc"
    assert c.route("b") == "x_b"


def test_sink_refuses_timestamp_router_and_record_predicates_on_routers():
    found = problems(
        {
            "transforms": "ts,route",
            "transforms.ts.type": P + "TimestampRouter",
            "transforms.route.type": P + "RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.route.replacement": "$1",
            "transforms.route.predicate": "tomb",
            "predicates": "tomb",
            "predicates.tomb.type": P + "predicates.RecordIsTombstone",
        },
        role="sink",
    )
    assert [k for k, _ in found] == ["transforms.ts.type", "transforms.route.predicate"]
    assert "timestamp" in found[0][1] and "TimestampRouter is not supported" in found[0][1]
    # a source connector keeps them (the router rewrites the topic column)
    assert (
        problems({"transforms": "ts", "transforms.ts.type": P + "TimestampRouter"}, role="source")
        == []
    )

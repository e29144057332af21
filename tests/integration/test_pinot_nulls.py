"""What a Pinot table stores for a field a record leaves out or gives null, and for text
longer than its ``maxLength``, on the real broker — read back as a query of the table
sees it. Values from Pinot's ``FieldSpec`` (default null values, ``DEFAULT_MAX_LENGTH``),
``NullValueTransformer`` and ``SanitizationTransformer``."""

from __future__ import annotations

import time

from tests.integration.test_pinot_tables import load, produce, rows, schema, table_config

DIMS = [
    {"name": "id", "dataType": "INT"},
    {"name": "s", "dataType": "STRING"},
    {"name": "n", "dataType": "INT"},
    {"name": "d", "dataType": "DOUBLE"},
    {"name": "b", "dataType": "BOOLEAN"},
    {"name": "tags", "dataType": "STRING", "singleValueField": False},
    {"name": "city", "dataType": "STRING", "defaultNullValue": "unknown"},
    {"name": "code", "dataType": "STRING", "maxLength": 3, "notNull": True},
    {"name": "long_text", "dataType": "STRING"},
    {"name": "doc", "dataType": "JSON"},
    {"name": "up", "dataType": "STRING", "transformFunction": "upper(name)"},
]
METRICS = [{"name": "m", "dataType": "LONG"}, {"name": "f", "dataType": "FLOAT"}]
RECORDS = [
    (
        None,
        {
            "id": 1,
            "s": "x",
            "n": 5,
            "d": 1.5,
            "b": True,
            "tags": ["a"],
            "m": 3,
            "f": 1.0,
            "code": "ab\u0000cd",
            "long_text": "é" * 600,
            "doc": {"k": "v" * 600},
            "name": "ann",
            "ts": 1_790_000_000_000,
        },
        None,
    ),
    # everything left out, or null, or an empty multi-value list
    (None, {"id": 2, "s": None, "tags": [], "code": "abcdef"}, None),
]


def test_without_null_handling_a_query_sees_pinots_default_values(engine, broker, topic):
    produce(broker, topic, RECORDS)
    before = int(time.time() * 1000)
    load(engine, table_config(broker, topic), schema(DIMS, METRICS))
    got = rows(engine)
    one, two = got[1], got[2]
    assert (one["s"], one["n"], one["tags"], one["city"], one["up"]) == (
        "x",
        5,
        ["a"],
        "unknown",
        "ANN",
    )
    assert one["code"] == "ab"  # cut at the NUL (StringUtil.sanitizeStringValue)
    assert one["long_text"] == "é" * 512  # maxLength 512 by default, trimmed
    assert len(one["doc"]) > 512  # JSON: NO_ACTION unless maxLengthExceedStrategy says
    assert two["s"] == "null" and two["n"] == -(2**31) and two["d"] == float("-inf")
    assert two["b"] is False and two["tags"] == ["null"] and two["city"] == "unknown"
    assert two["m"] == 0 and two["f"] == 0.0  # metrics: 0
    assert two["doc"] == "null" and two["up"] == "null"  # a transform of nothing: the default
    assert two["code"] == "abc"
    # the time column: its default (Long.MIN_VALUE) is not a time, so the load time
    assert before - 60_000 <= two["ts"] <= int(time.time() * 1000) + 60_000


def test_with_null_handling_a_query_sees_null(engine, broker, topic):
    produce(broker, topic, RECORDS)
    t = table_config(broker, topic)
    t["tableIndexConfig"]["nullHandlingEnabled"] = True
    load(engine, t, schema(DIMS, METRICS))
    two = rows(engine)[2]
    for c in ("s", "n", "d", "b", "tags", "m", "f", "doc", "up", "ts"):
        assert two[c] is None, c
    assert two["city"] is None  # with null handling, a null is NULL even with a default
    assert two["code"] == "abc"  # length limits hold all the same


def test_column_based_null_handling_keeps_nulls_but_of_not_null_fields(engine, broker, topic):
    produce(broker, topic, [(None, {"id": 2}, None)])
    s = schema(DIMS, METRICS)
    s["enableColumnBasedNullHandling"] = True
    load(engine, table_config(broker, topic), s)
    two = rows(engine)[2]
    assert two["s"] is None and two["m"] is None
    assert two["code"] == "nul"  # notNull: the default "null", cut to maxLength 3

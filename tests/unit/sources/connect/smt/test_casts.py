"""Cast and TimestampConverter against Apache Kafka's Cast.java / TimestampConverter.java."""

from __future__ import annotations

from tests.unit.sources.connect.smt.helpers import keys, one, problems, records, values


def test_cast_whole_key_and_fields():
    # Cast.java: a single type casts the whole operand; field:type casts top-level fields
    out = one("Cast$Key", spec="INT64").apply(records([{}, {}], keys=["7", "8"]))
    assert keys(out) == [7, 8]
    rows = [{"a": 1.9, "b": 300, "c": "true", "d": 0}]
    out = one("Cast$Value", spec="a:int32,b:int8,c:boolean,d:string").apply(records(rows))
    # float -> int truncates; int8 narrows as Java's byteValue (300 -> 44)
    assert values(out) == [{"a": 1, "b": 44, "c": True, "d": "0"}]


def test_cast_float_to_string_as_java_writes_it():
    # String.valueOf(1.0) is "1.0"
    out = one("Cast$Value", spec="f:string").apply(records([{"f": 1.0}, {"f": 2.5}]))
    assert [v["f"] for v in values(out)] == ["1.0", "2.5"]


def test_cast_unparsable_text_is_refused():
    out = one("Cast$Value", spec="n:int32").apply(records([{"n": "12"}, {"n": "x"}]))
    assert values(out) == [{"n": 12}]
    assert out.refused[0].index.to_pylist() == [1]


def test_cast_bad_type_is_a_problem():
    found = problems(
        {
            "transforms": "c",
            "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value",
            "transforms.c.spec": "a:decimal",
        }
    )
    assert found[0][0] == "transforms.c.spec"


def test_timestamp_converter_to_string_with_a_java_pattern():
    # TimestampConverter.java: SimpleDateFormat in UTC
    out = one(
        "TimestampConverter$Value",
        field="t",
        **{"target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS"},
    ).apply(records([{"t": 1_700_000_000_123}, {"t": None}]))
    assert [v["t"] for v in values(out)] == ["2023-11-14 22:13:20.123", None]


def test_timestamp_converter_string_to_unix_and_date():
    out = one(
        "TimestampConverter$Value",
        field="t",
        **{"target.type": "unix", "format": "yyyy-MM-dd", "unix.precision": "seconds"},
    ).apply(records([{"t": "1970-01-02"}]))
    assert values(out) == [{"t": 86400}]
    out = one("TimestampConverter$Value", field="t", **{"target.type": "Date"}).apply(
        records([{"t": "2024-05-01T10:11:12"}])
    )
    assert values(out) == [{"t": "2024-05-01"}]


def test_timestamp_converter_string_target_needs_a_format():
    found = problems(
        {
            "transforms": "c",
            "transforms.c.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
            "transforms.c.target.type": "string",
        }
    )
    assert [k for k, _ in found] == ["transforms.c.format"]


def test_timestamp_converter_unparsable_text_is_refused():
    out = one(
        "TimestampConverter$Value", field="t", **{"target.type": "unix", "format": "yyyy-MM-dd"}
    ).apply(records([{"t": "2024-01-01"}, {"t": "soon"}]))
    assert len(out.records) == 1 and out.refused[0].index.to_pylist() == [1]


def test_timestamp_text_by_pattern_with_millis_or_as_iso():
    # a pattern with SSS parses fractions; text the pattern does not read is taken as
    # ISO-8601 (how the JDBC source here writes a Timestamp column)
    out = one(
        "TimestampConverter$Value",
        field="t",
        **{"target.type": "unix", "format": "yy-MM-dd HH:mm:ss.SSS"},
    ).apply(records([{"t": "24-01-01 00:00:01.250"}, {"t": "1970-01-01T00:00:02"}]))
    assert [v["t"] for v in values(out)] == [1704067201250, 2000]


def test_the_demo_scene_pattern_with_day_month_and_zone_names():
    """demo-scene's day 8: ``EEE MMM dd HH:mm:ss zzz yyyy`` reads ``java.util.Date``'s
    text (``Thu Dec 10 17:06:59 GMT 2020``) into a Timestamp; a zone name Java would
    look up in its table of every zone's names is refused for its record, with why."""
    out = one(
        "TimestampConverter$Value",
        field="txn_date",
        **{"format": "EEE MMM dd HH:mm:ss zzz yyyy", "target.type": "unix"},
    ).apply(
        records(
            [
                {"txn_date": "Thu Dec 10 17:06:59 GMT 2020"},
                {"txn_date": "Sat Dec 05 16:39:40 UTC 2020"},
                {"txn_date": "Sun Dec 13 20:30:21 PST 2020"},
                {"txn_date": "Wed Dec 09 06:18:31 GMT+01:00 2020"},
            ]
        )
    )
    assert [v["txn_date"] for v in values(out)] == [
        1607620019000,
        1607186380000,
        1607491111000,
    ]
    (refused,) = out.refused
    assert refused.index.to_pylist() == [2]
    assert "time-zone name other than GMT or UTC" in refused.reason


def test_names_are_written_in_english_and_utc():
    out = one(
        "TimestampConverter$Value",
        field="t",
        **{"target.type": "string", "format": "EEEE, d MMMM yyyy HH:mm zzz (EEE MMM, z)"},
    ).apply(records([{"t": 1607620019000}]))
    assert values(out) == [{"t": "Thursday, 10 December 2020 17:06 UTC (Thu Dec, UTC)"}]

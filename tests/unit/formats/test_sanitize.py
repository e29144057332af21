"""Null fills and length limits on Arrow columns, with the values Pinot's
``SanitizationTransformerUtils`` / ``StringUtil.sanitizeStringValue`` give."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from sparkpipes.config.tables import MaxLength, NullFill, ValueRules
from sparkpipes.formats.rules import apply_rules
from sparkpipes.formats.sanitize import fill_nulls, fill_scalar, fit_length


def test_fill_nulls_and_empty_lists():
    assert fill_nulls(
        pa.array([1, None], pa.int32()), pa.scalar(-(2**31), pa.int32())
    ).to_pylist() == [
        1,
        -(2**31),
    ]
    tags = pa.array([["a"], None, []], pa.list_(pa.string()))
    got = fill_nulls(tags, fill_scalar(NullFill("null"), tags.type))
    assert got.to_pylist() == [["a"], ["null"], ["null"]]  # an empty MV value is null in Pinot
    kept = fill_nulls(tags, fill_scalar(NullFill(None), tags.type))  # null handling: NULL
    assert kept.to_pylist() == [["a"], None, None]


def test_fill_of_the_load_time():
    now = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
    ms = int(now.timestamp() * 1000)
    assert fill_scalar(NullFill(now=True, unit_ms=1), pa.int64(), now).as_py() == ms
    assert (
        fill_scalar(NullFill(now=True, unit_ms=86_400_000), pa.int32(), now).as_py()
        == ms // 86_400_000
    )
    assert (
        fill_scalar(NullFill(now=True, strftime="%Y-%m-%d"), pa.string(), now).as_py()
        == "2024-05-06"
    )


def test_strings_are_trimmed_and_cut_at_nul():
    values = pa.array(["abcdef", "ab\0cdef", "abc", None, "a\0"])
    got, why = fit_length(values, MaxLength(4), "s", None)
    # StringUtil.sanitizeStringValue: substring(0, min(indexOf('\0'), maxLength))
    assert got.to_pylist() == ["abcd", "ab", "abc", None, "a"] and why is None
    got, _ = fit_length(values, MaxLength(4, "NO_ACTION"), "s", None)
    assert got.to_pylist() == ["abcdef", "ab", "abc", None, "a"]  # only a NUL cuts
    got, _ = fit_length(values, MaxLength(4, "SUBSTITUTE_DEFAULT_VALUE"), "s", pa.scalar("null"))
    assert got.to_pylist() == ["null", "null", "abc", None, "null"]
    got, why = fit_length(values, MaxLength(4, "ERROR"), "s", None)
    assert why.to_pylist() == [
        "column 's' is longer than its maxLength 4",
        "column 's' holds a NUL character",
        None,
        None,
        "column 's' holds a NUL character",
    ]


def test_length_is_counted_in_utf16_units_as_java_counts():
    values = pa.array(["😀😀x", "ab😀", "é" * 5])
    got, _ = fit_length(values, MaxLength(3), "s", None)
    # "😀" is two UTF-16 units: cutting after 3 leaves half a pair, which Java writes as '?'
    assert got.to_pylist() == ["😀?", "ab?", "ééé"]
    got, _ = fit_length(values, MaxLength(4), "s", None)
    assert got.to_pylist() == ["😀😀", "ab😀", "éééé"]


def test_bytes_and_lists():
    got, _ = fit_length(pa.array([b"abcdef", b"ab"]), MaxLength(3), "y", None)
    assert got.to_pylist() == [b"abc", b"ab"]
    tags = pa.array([["abcdef", "x"], None, ["yy"]], pa.list_(pa.string()))
    got, why = fit_length(tags.slice(0), MaxLength(2), "tags", None)
    assert got.to_pylist() == [["ab", "x"], None, ["yy"]]
    _, why = fit_length(tags, MaxLength(2, "ERROR"), "tags", None)
    assert why.to_pylist() == ["column 'tags' is longer than its maxLength 2", None, None]


def test_rules_fill_then_fit_and_refuse():
    table = pa.table(
        {"s": pa.array([None, "abcdef", "ok"]), "n": pa.array([None, 1, 2], pa.int64())}
    )
    rules = ValueRules(
        fills=(("s", NullFill("null")), ("n", NullFill("0"))),
        lengths=(("s", MaxLength(4, "ERROR", "null")),),
    )
    out = apply_rules(table, pa.array([0, 1, 2]), rules)
    assert out.table.to_pylist() == [{"s": "null", "n": 0}, {"s": "ok", "n": 2}]
    assert [(e.index, e.reason) for e in out.errors] == [
        (1, "column 's' is longer than its maxLength 4")
    ]

"""Jayway JsonPath's filters as Confluent's Filter uses them, against json-path/JsonPath's
``PredicatePathToken``, ``PropertyPathToken``, ``EvaluatorFactory`` and ``ValueNodes``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sparkpipes.sources.connect.smt.jsonpath import (
    Missing,
    NotComparable,
    Opaque,
    Unsupported,
    compile_path,
    matches,
)


def _doc(v):
    """A JSON value as the transform hands it over: numbers as Decimals."""
    if isinstance(v, dict):
        return {k: _doc(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_doc(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return Decimal(str(v))
    return v


def hit(path: str, doc) -> bool:
    return matches(compile_path(path), _doc(doc))


def test_a_filter_on_an_object_tests_the_object_and_on_an_array_each_element():
    assert hit("$[?(@.product =~ /.*Stout/)]", {"product": "Yeti Imperial Stout"})
    assert not hit("$[?(@.product =~ /Stout/)]", {"product": "Yeti Imperial Stout"})  # whole
    cond = '$.key[?(@.nestedKey == "value1" || @.nestedKey == "value2")]'
    assert hit(cond, {"key": {"nestedKey": "value2"}})
    assert not hit(cond, {"key": {"nestedKey": "value3"}})
    assert hit("$.items[?(@.qty > 5)]", {"items": [{"qty": 1}, {"qty": 7}]})
    assert not hit("$.items[?(@.qty > 5)]", {"items": [{"qty": 1}]})
    assert not hit("$.items[?(@.qty > 5)]", {"items": []})


def test_a_property_missing_before_the_filter_is_path_not_found():
    with pytest.raises(Missing):
        hit("$.key[?(@.a == 1)]", {"other": 1})
    with pytest.raises(Missing):
        hit("$.key.deeper[?(@.a == 1)]", {"key": "text"})
    with pytest.raises(Missing):
        hit("$.key[?(@.a == 1)]", {"key": None})  # null where the filter needs an object
    with pytest.raises(NotComparable):
        hit("$.key[?(@.a == 1)]", {"key": 5})  # Jayway: filter applied to a primitive


def test_inside_a_filter_a_missing_field_is_undefined():
    assert not hit("$[?(@.a == null)]", {"b": 1})
    assert hit("$[?(@.a == null)]", {"a": None})
    assert hit("$[?(@.a != 'x')]", {"b": 1})  # != is the negation of ==
    assert not hit("$[?(@.a < 5)]", {"b": 1})
    assert hit("$[?(@.a =~ /.*/)]", {"b": 1})  # the input of a missing value is ""
    assert not hit("$.items[?(@.x == 1)].y", {"items": [{"x": 2}]})  # after a filter: ignored


def test_text_and_numbers_compare_as_jayway_value_nodes():
    assert hit("$[?(@.n == 1)]", {"n": 1.0})  # BigDecimal compareTo
    assert hit("$[?(@.n == '1')]", {"n": 1})  # NumberNode equals a StringNode's number
    assert hit("$[?(@.s == 7)]", {"s": "7"})  # StringNode equals a number's text …
    assert not hit("$[?(@.s == 7)]", {"s": "7.0"})  # … compared as text
    assert not hit("$[?(@.s < 10)]", {"s": "5"})  # < only between two numbers or two texts
    assert hit("$[?(@.s < 'b')]", {"s": "a"})
    assert hit("$[?(@.n >= -2.5)]", {"n": -2})
    assert not hit("$[?(@.b == 'true')]", {"b": True})
    assert hit("$[?(@.b == true)]", {"b": True})


def test_regex_input_of_numbers_booleans_and_arrays():
    assert hit("$[?(@.n =~ /1\\.50/)]", {"n": 1.50}) is False  # a double's text is 1.5
    assert hit("$[?(@.n =~ /1\\.5/)]", {"n": 1.5})
    assert hit("$[?(@.b =~ /tr.e/)]", {"b": True})
    assert hit("$[?(@.tags =~ /b.*/i)]", {"tags": ["a", "Bee"]})  # any element, flag i
    assert not hit("$[?(@.tags =~ /c/)]", {"tags": ["a", "b"]})


def test_existence_logic_and_the_root_inside_a_filter():
    assert hit("$[?(@.a)]", {"a": None})  # present, even null
    assert not hit("$[?(@.a)]", {"b": 1})
    assert hit("$[?(!@.a)]", {"b": 1})
    assert hit("$.items[?(@.v == $.want)]", {"want": "x", "items": [{"v": "y"}, {"v": "x"}]})
    assert hit("$[?(@.a == 1 && (@.b == 2 || @.c == 3))]", {"a": 1, "c": 3})
    assert not hit("$[?(!(@.a == 1))]", {"a": 1})
    assert hit("$['odd key'][?(@[0] == 'x')]", {"odd key": {"0": "no"}}) is False


def test_values_whose_json_form_is_unknown_fail_the_record():
    with pytest.raises(NotComparable):
        hit("$[?(@.when > 5)]", {"when": Opaque("timestamp[ms]")})
    assert hit("$[?(@.other == 1)]", {"other": 1, "when": Opaque("timestamp[ms]")})


@pytest.mark.parametrize(
    "path, construct",
    [
        ("$..a[?(@.b)]", "deep scan"),
        ("$.*[?(@.b)]", "wildcard"),
        ("$[*][?(@.b)]", "wildcard"),
        ("$.a[0:2][?(@.b)]", "slices"),
        ("$['a','b'][?(@.b)]", "several properties"),
        ("$[?(@.a in ['x'])]", "operator 'in'"),
        ("$[?(@.a size 2)]", "operator 'size'"),
        ('$[?(@.a == {"x": 1})]', "JSON literals"),
        ("$[?(@.a.length() > 1)]", "function length()"),
        ("$[?(@.a =~ /x/x)]", "flag 'x'"),
        ("$[?(@.a[?(@.b)])]", "a filter inside a filter"),
    ],
)
def test_other_constructs_are_refused_by_name(path, construct):
    with pytest.raises(Unsupported, match=construct):
        compile_path(path)


def test_what_is_no_json_path_is_an_error():
    for path in ("a.b", "$[?(@.a ==)]", "$[?(@.a == 'x)]", "$[?(@.a == 1e)]"):
        with pytest.raises(ValueError):
            compile_path(path)

"""The structure of a connector's transform chain (Kafka Connect's ConnectorConfig:
``transforms``, ``transforms.<alias>.type``, ``.predicate``, ``.negate``,
``predicates``), parsed once into a frozen TransformChain."""

from __future__ import annotations

import dataclasses

import pytest

from sparkpipes.config.transforms import is_transform_key, parse_chain

P = "org.apache.kafka.connect.transforms."


def test_aliases_in_order_with_their_options_trimmed_as_a_list():
    chain, problems = parse_chain(
        {
            "transforms": " b , a,",
            "transforms.a.type": P + "Filter",
            "transforms.a.predicate": "p",
            "transforms.a.negate": "true",
            "transforms.b.type": " " + P + "HoistField$Value ",
            "transforms.b.field": "f",
            "predicates": "p",
            "predicates.p.type": P + "predicates.RecordIsTombstone",
        }
    )
    assert problems == []
    assert [s.alias for s in chain.steps] == ["b", "a"]
    b, a = chain.steps
    assert b.type == P + "HoistField$Value" and dict(b.options) == {"field": "f"}
    assert (a.predicate, a.negate, dict(a.options)) == ("p", True, {})
    assert chain.predicate("p").type.endswith("RecordIsTombstone")
    with pytest.raises(dataclasses.FrozenInstanceError):
        chain.steps = ()  # type: ignore[misc]


def test_an_alias_may_hold_dots():
    chain, problems = parse_chain({"transforms": "a.b", "transforms.a.b.type": P + "Filter"})
    assert problems == [] and chain.steps[0].alias == "a.b"


def test_every_structural_problem_is_named_by_its_key():
    _, problems = parse_chain(
        {
            "transforms": "a,b",
            "transforms.b.type": P + "Filter",
            "transforms.b.negate": "maybe",
            "transforms.b.predicate": "nope",
            "transforms.zz.type": P + "Filter",
            "predicates": "q",
        }
    )
    keys = sorted(k for k, _ in problems)
    assert keys == [
        "predicates",
        "transforms",
        "transforms.b.negate",
        "transforms.b.predicate",
        "transforms.zz.type",
    ]


def test_no_transforms_is_an_empty_chain():
    chain, problems = parse_chain({"name": "x"})
    assert not chain and problems == []


def test_transform_keys():
    assert is_transform_key("transforms") and is_transform_key("predicates.p.type")
    assert not is_transform_key("transforms_x") and not is_transform_key("name")


def test_negate_without_a_predicate_is_refused_as_connect_does():
    """ConnectorConfig.validateProps: "Config '…negate' was provided but there is no config
    '…predicate'" (a Filter would otherwise drop every record)."""
    _, problems = parse_chain(
        {"transforms": "f", "transforms.f.type": P + "Filter", "transforms.f.negate": "true"}
    )
    assert [k for k, _ in problems] == ["transforms.f.negate"]
    assert "there is no config 'transforms.f.predicate'" in problems[0][1]

"""A KAFKACONNECT pipeline's CONFIG with transforms: checked once when the source is
built (every problem at once, each under its key, as validate lists them), the chain
travelling with the source into the tasks, errors.tolerance honoured only with one."""

from __future__ import annotations

import pickle

import pytest

from sparkpipes.frontends.connect.validate import problems, validate
from sparkpipes.sources.connect import framework
from sparkpipes.sources.connect.source import KafkaConnectSource

P = "org.apache.kafka.connect.transforms."
BASE = {
    "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
    "connection.url": "jdbc:postgresql://127.0.0.1:5432/db?user=u&password=s3cret",
    "mode": "incrementing",
    "incrementing.column.name": "id",
}


def test_transform_problems_come_with_the_connectors_own():
    found, _ = problems(
        {
            **BASE,
            "mode": "sideways",
            "transforms": "a,b",
            "transforms.a.type": "com.acme.Shout",
            "transforms.b.type": P + "Cast$Value",
            "transforms.b.spec": "x:decimal",
        }
    )
    keys = {k for k, _ in found}
    assert {"mode", "transforms.a.type", "transforms.b.spec"} <= keys
    assert "s3cret" not in " ".join(m for _, m in found)


def test_a_missing_required_option_is_shown_under_its_own_key():
    answer = validate(
        BASE["connector.class"],
        {**BASE, "transforms": "k", "transforms.k.type": P + "ExtractField$Key"},
    )
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"]}
    assert errors["transforms.k.field"]
    assert "s3cret" not in str(answer)


def test_the_chain_travels_with_the_source_and_tolerance_is_honoured():
    src = KafkaConnectSource(
        "jdbc",
        {
            **BASE,
            "errors.tolerance": "all",
            "transforms": "f",
            "transforms.f.type": P + "Filter",
        },
        {},
    )
    assert src.chain is not None and src.tolerate
    assert "errors.tolerance" not in src.not_applicable
    again = pickle.loads(pickle.dumps(src))
    assert len(again.chain.steps) == 1
    plain = KafkaConnectSource("jdbc", {**BASE, "errors.tolerance": "all"}, {})
    assert plain.chain is None and "errors.tolerance" in plain.not_applicable


def test_transforms_are_no_refused_worker_key_for_either_role():
    # sink connectors run their chain in the decoding tasks (formats.connect)
    assert framework.refusal("transforms", framework.SINK) is None
    assert framework.refusal("transforms.x.type", framework.SINK) is None
    assert framework.refusal("transforms", framework.SOURCE) is None


def test_a_bad_tolerance_with_transforms_is_named():
    with pytest.raises(framework.ConnectConfigError) as caught:
        KafkaConnectSource(
            "jdbc",
            {
                **BASE,
                "errors.tolerance": "some",
                "transforms": "f",
                "transforms.f.type": P + "Filter",
            },
            {},
        )
    assert "errors.tolerance" in {k for k, _ in caught.value.problems}

"""A sink connector's Single Message Transforms as its config gives them: checked with
every other key (each problem under its key), routers deciding the tables per topic, and
the pipelines' format carrying the chain (``frontends.connect.transformed``)."""

from __future__ import annotations

import json

import pytest

from sparkpipes.config import PipelineSpec, SinkSpec
from sparkpipes.config.parts import BatchSpec, SourceSpec
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect.model import load
from sparkpipes.frontends.connect.tables import JSON_LOGICAL as _LOGICAL
from sparkpipes.frontends.connect.tables import JSON_TYPES as _TYPES
from sparkpipes.frontends.connect.transformed import fields_after, format_of, json_hints
from sparkpipes.sources.connect.framework import ConnectConfigError
from tests.unit.formats.test_connect import EVENTS, envelope, fetched

P = "org.apache.kafka.connect.transforms."
BASE = {
    "name": "dbz",
    "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
    "topics": "dbserver1.inventory.customers",
}
CHAIN = {
    "transforms": "unwrap,route,drop,insert",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.route.type": P + "RegexRouter",
    "transforms.route.regex": r"([^.]+)\.([^.]+)\.([^.]+)",
    "transforms.route.replacement": "$3",
    "transforms.drop.type": P + "ReplaceField$Value",
    "transforms.drop.exclude": "name",
    "transforms.insert.type": P + "InsertField$Value",
    "transforms.insert.topic.field": "src",
}


def test_a_chain_is_accepted_and_routes_the_table():
    cfg = load({**BASE, **CHAIN, "singlestore.tableName.customers": "people"})
    assert cfg.routed("dbserver1.inventory.customers") == "customers"
    assert cfg.table_of("dbserver1.inventory.customers") == "people"
    assert dict(cfg.transforms) == CHAIN
    assert cfg.raw["transforms"] == CHAIN["transforms"]  # shown back as given


def test_every_problem_at_once_each_under_its_key():
    with pytest.raises(ConnectConfigError) as caught:
        load(
            {
                **BASE,
                "transforms": "ts,bad,x",
                "transforms.ts.type": P + "TimestampRouter",
                "transforms.bad.type": P + "ReplaceField$Value",
                "transforms.bad.renames": "a-b",
                "transforms.x.type": "com.example.Mine",
                "toppics": "x",
            }
        )
    keys = [k for k, _ in caught.value.problems]
    assert keys == [
        "transforms.ts.type",
        "transforms.bad.renames",
        "transforms.x.type",
        "toppics",
    ]
    assert "TimestampRouter is not supported" in caught.value.message


def test_the_format_carries_the_chain_and_survives_storage():
    cfg = load({**BASE, **CHAIN})
    fmt = format_of(cfg, "dbserver1.inventory.customers", ["id", "src"], {})
    assert fmt.connect is not None and fmt.connect.converter == "json"
    assert fmt.connect.chain.steps[0].alias == "unwrap"
    spec = PipelineSpec(
        name="p",
        source=SourceSpec(
            kind="kafka", location="127.0.0.1:9092/t", config={"record.metadata": True}
        ),
        sink=SinkSpec(table="customers"),
        format=fmt,
        batch=BatchSpec(),
    )
    again = PipelineSpec.from_json(spec.to_json())
    assert again.format.connect == fmt.connect
    assert again.format.connect.chain == fmt.connect.chain
    plain = spec.replace(format=fmt.__class__(kind="json"))
    assert "connect" not in plain.to_json()["format"]  # as stored before it existed


def test_a_created_table_has_the_transformed_columns():
    cfg = load({**BASE, **CHAIN})
    hints = json_hints(json.loads(EVENTS[0])["schema"], _TYPES, _LOGICAL)
    fields = fields_after(cfg, "dbserver1.inventory.customers", "customers", fetched(EVENTS), hints)
    # name excluded, src inserted; id INT (the schema's int32), ts a TIMESTAMP
    assert fields == [
        ("id", ("Integer", "INT"), False),
        ("ts", ("DateTime", "TIMESTAMP"), False),
        ("src", ("Text", "STRING"), True),
    ]


def test_no_record_through_the_chain_names_why():
    cfg = load({**BASE, **CHAIN})
    with pytest.raises(ConfigError, match="none of the first 1 records"):
        fields_after(
            cfg,
            "t",
            "customers",
            fetched([envelope({"op": "d", "after": None, "before": {"id": 1}})]),
            {},
        )

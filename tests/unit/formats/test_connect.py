"""Kafka records decoded as a Kafka Connect sink task sees them, through its transforms,
then mapped to the table's columns (``formats.connect``)."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from sparkpipes.config import FieldMapping
from sparkpipes.config.transforms import ConnectRecords
from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder
from sparkpipes.sources.base import HEADERS_TYPE, Fetched

P = "org.apache.kafka.connect.transforms."
UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("src", pa.string()),
        pa.field("__deleted", pa.string()),
    ]
)


def decoder(config: dict[str, str], *, converter: str = "json", schemas: bool = True):
    records = ConnectRecords(converter, "db.inv.customers", schemas, tuple(config.items()))
    return build_decoder(
        "json", SCHEMA, tuple(FieldMapping(f.name, (f.name,)) for f in SCHEMA), connect=records
    )


def envelope(payload: object) -> bytes:
    schema = {
        "type": "struct",
        "name": "x.Envelope",
        "fields": [
            {"field": "before", "type": "struct", "optional": True, "fields": []},
            {
                "field": "after",
                "type": "struct",
                "optional": True,
                "fields": [
                    {"field": "id", "type": "int32"},
                    {"field": "name", "type": "string", "optional": True},
                    {
                        "field": "ts",
                        "type": "int64",
                        "name": "org.apache.kafka.connect.data.Timestamp",
                    },
                ],
            },
            {"field": "op", "type": "string"},
        ],
    }
    return json.dumps({"schema": schema, "payload": payload}).encode()


def fetched(values: list[bytes | None], headers: list[list[tuple[str, bytes]]] | None = None):
    n = len(values)
    return Fetched(
        values=pa.array(values, pa.binary()),
        positions=pa.array(range(100, 100 + n), pa.int64()),
        keys=pa.array([b'{"id": 1}'] * n, pa.binary()),
        timestamps=pa.array([1_700_000_000_000 + i for i in range(n)], pa.int64()),
        headers=pa.array(
            [[{"key": k, "value": v} for k, v in h] for h in headers or [[]] * n], HEADERS_TYPE
        ),
    )


EVENTS = [
    envelope({"before": None, "after": {"id": 1, "name": "a", "ts": 86_400_000}, "op": "c"}),
    envelope(
        {
            "before": {"id": 1, "name": "a", "ts": 0},
            "after": {"id": 1, "name": "b", "ts": 0},
            "op": "u",
        }
    ),
    envelope({"before": {"id": 1, "name": "b", "ts": 0}, "after": None, "op": "d"}),
    None,
]
CHAIN = {
    "transforms": "unwrap,drop,insert",
    "transforms.unwrap.type": UNWRAP,
    "transforms.drop.type": P + "ReplaceField$Value",
    "transforms.drop.exclude": "name",
    "transforms.insert.type": P + "InsertField$Value",
    "transforms.insert.topic.field": "src",
}


def test_debezium_events_unwrapped_transformed_and_mapped():
    out = decoder(CHAIN).decode_fetched(fetched(EVENTS), "0")
    assert not out.errors
    assert out.kept.to_pylist() == [0, 1]  # the delete and the tombstone dropped
    rows = out.table.to_pylist()
    assert [(r["id"], r["name"], r["src"]) for r in rows] == [
        (1, None, "db.inv.customers"),
        (1, None, "db.inv.customers"),
    ]
    assert rows[0]["ts"].isoformat() == "1970-01-02T00:00:00+00:00"  # Connect's Timestamp


def test_rewrite_loads_deletes_flagged_and_tombstones_are_errors():
    cfg = {
        **CHAIN,
        "transforms.unwrap.delete.handling.mode": "rewrite",
        "transforms.unwrap.drop.tombstones": "false",
    }
    out = decoder(cfg).decode_fetched(fetched(EVENTS), "0")
    assert [r["__deleted"] for r in out.table.to_pylist()] == ["false", "false", "true"]
    assert [(e.index, "tombstone" in e.reason) for e in out.errors] == [(3, True)]


def test_records_without_envelope_are_refused_with_connects_message():
    out = decoder(
        {
            "transforms": "f",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "no",
            "predicates": "no",
            "predicates.no.type": P + "predicates.HasHeaderKey",
            "predicates.no.name": "nope",
        }
    ).decode_fetched(fetched([b'{"id": 1}', b"not json", envelope({"id": 2})]), "0")
    assert out.table.column("id").to_pylist() == [2]
    assert [e.index for e in out.errors] == [0, 1]
    assert "schemas.enable" in out.errors[0].reason


def test_plain_json_with_offset_partition_timestamp_and_headers():
    cfg = {
        "transforms": "ins,hdr",
        "transforms.ins.type": P + "InsertField$Value",
        "transforms.ins.offset.field": "name",
        "transforms.ins.timestamp.field": "ts",
        "transforms.hdr.type": P + "Filter",
        "transforms.hdr.predicate": "h",
        "predicates": "h",
        "predicates.h.type": P + "predicates.HasHeaderKey",
        "predicates.h.name": "skip",
    }
    values = [b'{"id": 5}', b'{"id": 6}', b'{"id": 7}']
    headers = [[], [("other", b"1")], [("skip", None), ("other", b"2")]]
    out = decoder(cfg, schemas=False).decode_fetched(fetched(values, headers=headers), "3")
    rows = out.table.to_pylist()
    # the record with a `skip` header (without a value: present) is filtered, per record
    assert [(r["id"], r["name"]) for r in rows] == [(5, "100"), (6, "101")]
    assert rows[1]["ts"].timestamp() == 1_700_000_000.001
    assert not out.errors and out.kept.to_pylist() == [0, 1]


def test_avro_values_through_the_chain():
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
    }
    parsed = fastavro.parse_schema(schema)

    def avro(rec: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, rec)
        return out.getvalue()

    records = ConnectRecords(
        "avro",
        "t",
        True,
        (
            ("transforms", "mask"),
            ("transforms.mask.type", P + "MaskField$Value"),
            ("transforms.mask.fields", "name"),
        ),
    )
    dec = build_decoder(
        "avro",
        SCHEMA,
        tuple(FieldMapping(f.name, (f.name,)) for f in SCHEMA),
        options={"schema": json.dumps(schema)},
        connect=records,
    )
    out = dec.decode_fetched(fetched([avro({"id": 1, "name": "a"}), b"\xff"]), "0")
    assert [(r["id"], r["name"]) for r in out.table.to_pylist()] == [(1, "")]
    assert [e.index for e in out.errors] == [1]


def test_a_refused_record_names_the_transform():
    cfg = {
        "transforms": "x",
        "transforms.x.type": P + "ExtractField$Value",
        "transforms.x.field": "missing",
    }
    out = decoder(cfg, schemas=False).decode_fetched(fetched([b'{"id": 5}']), "0")
    assert out.table.num_rows == 0
    assert "transform 'x'" in out.errors[0].reason and "Unknown field" in out.errors[0].reason


def test_chain_problems_fail_the_build():
    with pytest.raises(ConfigError, match="TimestampRouter"):
        decoder({"transforms": "t", "transforms.t.type": P + "TimestampRouter"})


def test_a_value_that_is_no_struct_needs_a_table_of_one_column():
    cfg = {
        "transforms": "x",
        "transforms.x.type": P + "ExtractField$Value",
        "transforms.x.field": "id",
    }
    out = decoder(cfg, schemas=False).decode_fetched(fetched([b'{"id": 5}']), "0")
    assert out.table.num_rows == 0 and "not a struct" in out.errors[0].reason
    one = pa.schema([pa.field("data", pa.string())])
    records = ConnectRecords("json", "t", False, tuple(cfg.items()))
    dec = build_decoder("json", one, (), connect=records)
    assert dec.decode_fetched(fetched([b'{"id": 5}']), "0").table.to_pylist() == [{"data": "5"}]

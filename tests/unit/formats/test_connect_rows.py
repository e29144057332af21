"""Rows of Kafka Connect records as Confluent's JDBC sink makes them (``formats.
connect_rows``, through ``formats.connect``): the primary key from the record key or the
Kafka coordinates, tombstones as deletes, and the records its task refuses — with the
messages of ``RecordValidator`` and ``FieldsMetadata`` (confluentinc/kafka-connect-jdbc)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkpipes.config import FieldMapping
from sparkpipes.config.transforms import ConnectRecords, RecordRows
from sparkpipes.errors import DecodeError
from sparkpipes.formats import build_decoder
from sparkpipes.sources.base import Fetched

MARK = "@__connect_delete"
VALUE = {
    "type": "struct",
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": False},
    ],
}
KEY = {"type": "struct", "fields": [{"field": "id", "type": "int64", "optional": False}]}


def value(i: int, name: str, **more: object) -> bytes:
    return json.dumps({"schema": VALUE, "payload": {"id": i, "name": name, **more}}).encode()


def key(i: int) -> bytes:
    return json.dumps({"schema": KEY, "payload": {"id": i}}).encode()


def fetched(records: list[tuple[bytes | None, bytes | None]]) -> Fetched:
    n = len(records)
    return Fetched(
        values=pa.array([v for _, v in records], pa.binary()),
        positions=pa.array(range(10, 10 + n), pa.int64()),
        keys=pa.array([k for k, _ in records], pa.binary()),
        timestamps=pa.array([1_700_000_000_000] * n, pa.int64()),
    )


def decoder(rows: RecordRows, columns: dict[str, pa.DataType], *, converter: str = "json"):
    schema = pa.schema([pa.field(c, t) for c, t in columns.items()])
    mapping = tuple(FieldMapping(c, (c,)) for c in columns)
    records = ConnectRecords(converter, "orders", True, (), rows)
    return build_decoder("json", schema, mapping, connect=records)


def rows(**kw: object) -> RecordRows:
    return RecordRows(connector="sink", table="orders", **kw)  # type: ignore[arg-type]


def test_a_struct_key_gives_the_key_columns_and_a_tombstone_deletes_it():
    d = decoder(
        rows(pk_mode="record_key", pk_fields=("id",), deletes=MARK),
        {"id": pa.int64(), "name": pa.string(), MARK: pa.string()},
    )
    out = d.decode_fetched(fetched([(key(1), value(99, "a")), (key(2), None)]), "0")
    assert not out.errors
    got = out.table.to_pylist()
    # the key's id wins over the value's field of that name (FieldsMetadata)
    assert got[0] == {"id": 1, "name": "a", MARK: None}
    assert got[1]["id"] == 2 and got[1][MARK] == "true"
    assert got[1]["name"] == ""  # a placeholder: a delete is written by its key only


def test_a_primitive_key_is_the_one_column_named():
    d = decoder(
        rows(pk_mode="record_key", pk_fields=("k",), key_converter="string"),
        {"k": pa.string(), "id": pa.int64(), "name": pa.string()},
    )
    out = d.decode_fetched(fetched([(b"key-1", value(1, "a"))]), "0")
    assert out.table.to_pylist() == [{"k": "key-1", "id": 1, "name": "a"}]


def test_kafka_coordinates_are_the_key():
    names = ("__connect_topic", "__connect_partition", "__connect_offset")
    d = decoder(
        rows(pk_mode="kafka", pk_fields=names),
        {**dict.fromkeys(names[:1], pa.string()), names[1]: pa.int32(), names[2]: pa.int64()}
        | {"id": pa.int64(), "name": pa.string()},
    )
    out = d.decode_fetched(fetched([(None, value(1, "a"))]), "3")
    assert out.table.to_pylist() == [
        {
            "__connect_topic": "orders",
            "__connect_partition": 3,
            "__connect_offset": 10,
            "id": 1,
            "name": "a",
        }
    ]


@pytest.mark.parametrize(
    ("settings", "records", "words"),
    [
        (
            {"pk_mode": "record_value", "pk_fields": ("id",)},
            [(None, value(1, "a")), (None, None)],
            "Sink connector 'sink' is configured with 'delete.enabled=false' and "
            "'pk.mode=record_value' and therefore requires records with a non-null Struct or "
            "String value and non-null Struct or String schema, but found record at "
            "(topic='orders',partition=0,offset=11,",
        ),
        (
            {"pk_mode": "record_key", "pk_fields": ("id",), "deletes": MARK},
            [(None, None)],
            "requires records with a non-null key and non-null Struct or primitive key schema",
        ),
        (
            {"pk_mode": "record_key", "pk_fields": ("nope",)},
            [(key(1), value(1, "a"))],
            "PK mode for table 'orders' is RECORD_KEY with configured PK fields [nope], but "
            "record key schema does not contain field: nope",
        ),
        (
            {"pk_mode": "record_key", "pk_fields": ("a", "b"), "key_converter": "string"},
            [(b"k", value(1, "a"))],
            "Need exactly one PK column defined since the key schema for records is a "
            "primitive type, defined columns are: [a, b]",
        ),
    ],
)
def test_records_the_connector_cannot_write_fail_the_batch(settings, records, words):
    d = decoder(rows(**settings), {"id": pa.int64(), "name": pa.string()})
    with pytest.raises(DecodeError) as e:
        d.decode_fetched(fetched(records), "0")
    assert words in e.value.message


def test_a_field_the_table_lacks_rejects_its_record_never_silently():
    d = decoder(rows(), {"id": pa.int64(), "name": pa.string()})
    out = d.decode_fetched(
        fetched([(None, value(1, "a")), (None, value(2, "b", note="x")), (None, value(3, "c"))]),
        "0",
    )
    assert [r["id"] for r in out.table.to_pylist()] == [1, 3]
    assert [(e.index, e.reason) for e in out.errors] == [
        (1, "Table orders is missing fields (note) and auto-evolution is disabled")
    ]
    listed = decoder(rows(fields=("id", "name")), {"id": pa.int64(), "name": pa.string()})
    out = listed.decode_fetched(fetched([(None, value(2, "b", note="x"))]), "0")
    assert not out.errors  # a field fields.whitelist leaves out is not written anyway


def test_a_long_converter_key_is_read_as_kafka_serialized_it():
    """``org.apache.kafka.connect.converters.LongConverter``: 8 bytes, big-endian; another
    size is refused with its deserializer's message."""
    d = decoder(
        rows(pk_mode="record_key", pk_fields=("k",), key_converter="long"),
        {"k": pa.int64(), "id": pa.int64(), "name": pa.string()},
    )
    out = d.decode_fetched(
        fetched([((2**40 + 7).to_bytes(8, "big"), value(1, "a")), (b"\x01", value(2, "b"))]), "0"
    )
    assert out.table.to_pylist() == [{"k": 2**40 + 7, "id": 1, "name": "a"}]
    assert [e.index for e in out.errors] == [1]
    assert "Size of data received by LongDeserializer is not 8" in out.errors[0].reason

"""A schema registry's answers are not trusted (security review R20): a Protobuf schema's
reference chain that nests without end, cycles or names too many schemas, and an Avro
schema nested deeper than anything recurses over, or whose arrays' items take no bytes,
are bad records naming the schema id, never a RecursionError that fails the batch. Run
against the stand-in registry of ``sparkpipes.testing.registry`` on 127.0.0.1."""

from __future__ import annotations

import base64
import io

import fastavro
import pyarrow as pa
from google.protobuf import descriptor_pb2

from sparkpipes.formats import build_decoder
from sparkpipes.formats.confluent import MAX_REFERENCE_DEPTH, MAX_REFERENCES
from sparkpipes.testing.registry import framed

INT32 = descriptor_pb2.FieldDescriptorProto.TYPE_INT32
COLUMNS = pa.schema([("x", pa.int32())])


def _file(name: str, imports: list[str]) -> str:
    """A serialized ``FileDescriptorProto`` named ``name`` with one message (``x``, an
    int32) importing ``imports``, as the registry answers ``format=serialized``."""
    proto = descriptor_pb2.FileDescriptorProto(name=name, package=name.split(".")[0])
    proto.syntax = "proto3"
    message = proto.message_type.add(name="M")
    message.field.add(name="x", number=1, type=INT32)
    proto.dependency.extend(imports)
    return base64.b64encode(proto.SerializeToString()).decode()


def _ref(name: str) -> dict:
    return {"name": f"{name}.proto", "subject": f"{name}-value", "version": 1}


def _register(registry, name: str, refs: list[str]) -> int:
    return registry.register_typed(
        _file(f"{name}.proto", [f"{r}.proto" for r in refs]),
        "PROTOBUF",
        references=[_ref(r) for r in refs],
        subject=f"{name}-value",
    )


def _decode(registry, sid: int):
    dec = build_decoder(
        "protobuf-registry", COLUMNS, (), None, {"schema.registry.url": registry.url}
    )
    body = b"\x08\x07"  # x = 7
    return dec.decode(pa.array([framed(sid, body, (0,)), framed(sid, body, (0,))]))


def test_a_reference_chain_deeper_than_the_bound_is_a_bad_record(registry):
    prefix = f"deep{id(registry) % 1000}"
    names = [f"{prefix}c{i}" for i in range(MAX_REFERENCE_DEPTH + 5)]
    for i, name in reversed(list(enumerate(names))):
        _register(registry, name, names[i + 1 : i + 2])
    root = _register(registry, f"{prefix}root", names[:1])
    got = _decode(registry, root)
    assert got.table.num_rows == 0 and [e.index for e in got.errors] == [0, 1]
    assert f"schema id {root}: its references nest deeper than {MAX_REFERENCE_DEPTH}" in (
        got.errors[0].reason
    )


def test_a_shallow_chain_within_the_bound_still_loads(registry):
    names = ["okc0", "okc1", "okc2"]
    for i, name in reversed(list(enumerate(names))):
        _register(registry, name, names[i + 1 : i + 2])
    got = _decode(registry, _register(registry, "okroot", names[:1]))
    assert got.table.to_pylist() == [{"x": 7}, {"x": 7}] and not got.errors


def test_a_reference_cycle_is_a_bad_record_naming_it(registry):
    _register(registry, "cyca", ["cycb"])
    _register(registry, "cycb", ["cyca"])
    root = _register(registry, "cycroot", ["cyca"])
    got = _decode(registry, root)
    assert got.table.num_rows == 0
    assert (
        f"schema id {root}: its references form a cycle (cyca.proto -> cycb.proto -> cyca.proto)"
        in got.errors[0].reason
    )


def test_too_many_references_in_all_is_a_bad_record(registry):
    """Each reference is a request to the registry: a schema that fans out to more than
    the bound is refused before it asks for them all."""
    leaves = [f"fan{i}" for i in range(MAX_REFERENCES + 1)]
    for leaf in leaves:
        _register(registry, leaf, [])
    root = _register(registry, "fanroot", leaves)
    got = _decode(registry, root)
    assert f"references more than {MAX_REFERENCES} schemas" in got.errors[0].reason


def _avro_decoder(registry):
    return build_decoder(
        "avro", pa.schema([("id", pa.int64())]), (), None, {"schema.registry.url": registry.url}
    )


def test_an_avro_schema_nested_past_the_bound_is_a_bad_record_not_a_recursion_error(registry):
    deep = '{"type":"record","name":"r","fields":[{"name":"id","type":' * 2000
    sid = registry.register_typed(deep + '"long"' + "}]}" * 2000, "AVRO")
    got = _avro_decoder(registry).decode(pa.array([framed(sid, b"\x02")]))
    assert got.table.num_rows == 0
    assert f"schema id {sid} of the schema registry" in got.errors[0].reason
    assert "nests deeper than 256 levels" in got.errors[0].reason


def test_an_avro_schema_with_an_array_of_nulls_is_a_bad_record(registry):
    """Two bytes would claim billions of nulls (``0x80 … 0x01``), decoded one by one."""
    schema = {
        "type": "record",
        "name": "nulls",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "xs", "type": {"type": "array", "items": "null"}},
        ],
    }
    sid = registry.register(schema)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), {"id": 1, "xs": []})
    got = _avro_decoder(registry).decode(pa.array([framed(sid, body.getvalue())]))
    assert got.table.num_rows == 0
    assert "array value.xs holds items encoded in zero bytes" in got.errors[0].reason

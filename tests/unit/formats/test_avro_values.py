"""FORMAT AVRO from SingleStore SQL: each documented rule of extracting and converting Avro
values, for object container files (the framing and the columnar decoder) and for Avro
messages (the stream decoder). Sources:

- EXTRACT: https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/extracting-and-converting-avro-values
- EXAMPLES: https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/load-avro-files-examples
"""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from sparkpipes.config import FieldMapping
from sparkpipes.formats import build_decoder
from sparkpipes.formats.avro import AvroMessageDecoder


def load_file(schema: dict, records: list[dict], columns: dict, mapping: list) -> tuple:
    """Rows and errors of an Avro object container file loaded as SingleStore SQL maps it
    (``mapping``: (column, path) or (column, path, on_missing, default))."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records)
    buf.seek(0)
    maps = [FieldMapping(m[0], m[1], *(m[2:] or ("error",))) for m in mapping]
    dec = build_decoder("avro", pa.schema(list(columns.items())), maps, text_values=True)
    rows, errors = [], []
    for frame in dec.framing().frames(buf, 0, None, final=True, align=False):
        d = dec.decode_table(frame.table)
        rows += d.table.to_pylist()
        errors += [(e.index, e.reason) for e in d.errors]
    return rows, errors


EXAMPLE_1 = {
    "type": "record",
    "name": "data",
    "fields": [{"name": "id", "type": "long"}, {"name": "payload", "type": ["null", "string"]}],
}


def test_example_1_a_union_branch_and_the_whole_record_as_json():
    """EXAMPLES, Example 1: ``payload <- %::payload::string`` is the string branch (NULL
    where the union holds null) and ``input_record <- %`` the record's Avro JSON encoding,
    a union as ``{"string": …}``."""
    records = [
        {"id": 1, "payload": "first"},
        {"id": 1, "payload": "second"},
        {"id": 1, "payload": None},
    ]
    rows, errors = load_file(
        EXAMPLE_1,
        records,
        {"payload": pa.string(), "input_record": pa.string()},
        [("payload", ("payload", "string")), ("input_record", ())],
    )
    assert errors == []
    assert rows == [
        {"payload": "first", "input_record": '{"id":1,"payload":{"string":"first"}}'},
        {"payload": "second", "input_record": '{"id":1,"payload":{"string":"second"}}'},
        {"payload": None, "input_record": '{"id":1,"payload":null}'},
    ]


UNION = {
    "type": "record",
    "name": "r",
    "fields": [
        {
            "name": "u",
            "type": [
                "int",
                {
                    "type": "record",
                    "name": "a",
                    "namespace": "n",
                    "fields": [{"name": "f1", "type": "int"}],
                },
            ],
        }
    ],
}


def test_union_branches_by_fullname_and_type_name():
    """EXTRACT: ``%::`n.a`::f1`` and ``n.a::f1`` extract 1 from ``{"n.a":{"f1":1}}`` and
    null from ``{"int":2}``; ``%::int`` extracts 2 from the second and null from the
    first (here one level down, under field ``u``)."""
    rows, errors = load_file(
        UNION,
        [{"u": {"f1": 1}}, {"u": 2}],
        {"f1": pa.int32(), "i": pa.int32(), "whole": pa.string()},
        [("f1", ("u", "n.a", "f1")), ("i", ("u", "int")), ("whole", ("u",))],
    )
    assert errors == []
    assert rows == [
        {"f1": 1, "i": None, "whole": '{"n.a":{"f1":1}}'},
        {"f1": None, "i": 2, "whole": '{"int":2}'},
    ]


def test_a_missing_field_or_branch_is_an_error_for_every_record_unless_default():
    """EXTRACT: a record whose schema has no field of the path's next name, or a union
    without such a branch, makes LOAD DATA terminate with an error: each record is an
    error naming it (PIPELINES_ERRORS under SKIP PARSER ERRORS, else the batch fails);
    ``DEFAULT`` gives records without the path a value."""
    columns = {"a": pa.string()}
    _, errors = load_file(EXAMPLE_1, [{"id": 1, "payload": "x"}], columns, [("a", ("nope",))])
    assert errors == [(0, errors[0][1])]
    assert "has no field 'nope'" in errors[0][1]
    _, errors = load_file(
        EXAMPLE_1, [{"id": 1, "payload": "x"}], columns, [("a", ("payload", "int"))]
    )
    assert "has no branch 'int'" in errors[0][1] and "null, string" in errors[0][1]
    rows, errors = load_file(
        EXAMPLE_1, [{"id": 1, "payload": "x"}], columns, [("a", ("nope",), "default", "d")]
    )
    assert (rows, errors) == ([{"a": "d"}], [])


def test_a_field_of_a_nullable_record_needs_its_branch():
    """EXTRACT: names under a union are branch names, so a field of a ``["null", record]``
    union is reached through the record's name (a path without it is an error)."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {
                "name": "addr",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "addr_t",
                        "fields": [{"name": "city", "type": "string"}],
                    },
                ],
            }
        ],
    }
    recs = [{"addr": {"city": "Oslo"}}, {"addr": None}]
    rows, errors = load_file(schema, recs, {"c": pa.string()}, [("c", ("addr", "addr_t", "city"))])
    assert (rows, errors) == ([{"c": "Oslo"}, {"c": None}], [])
    _, errors = load_file(schema, recs, {"c": pa.string()}, [("c", ("addr", "city"))])
    assert len(errors) == 2 and "has no branch 'city'" in errors[0][1]


def test_arrays_and_maps_are_not_indexed_by_paths():
    """EXTRACT: a subvalue path may not extract elements of arrays or maps."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "tags", "type": {"type": "array", "items": "string"}}],
    }
    _, errors = load_file(schema, [{"tags": ["a"]}], {"t": pa.string()}, [("t", ("tags", "0"))])
    assert "not elements of arrays or maps" in errors[0][1]


PRIMITIVES = {
    "type": "record",
    "name": "p",
    "fields": [
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "e", "type": {"type": "enum", "name": "color", "symbols": ["RED", "GREEN"]}},
        {"name": "by", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "two", "size": 2}},
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {"name": "arr", "type": {"type": "array", "items": ["null", "int"]}},
    ],
}
ONE = {
    "b": True,
    "i": -7,
    "l": 2**40,
    "f": 1.1,
    "d": 0.1,
    "s": "héllo",
    "e": "GREEN",
    "by": b"ab",
    "fx": b"\x00\xff",
    "m": {"k": 1},
    "arr": [1, None],
}


def test_each_avro_type_converts_as_if_from_a_sql_string():
    """EXTRACT, Converting Avro Values: boolean is 1/0, int/long and float/double their
    text (a float the shortest that reads back as the same FLOAT), string and enum their
    text, bytes/fixed verbatim, map/array their JSON encoding (a union inside as
    ``{"int": 1}``, bytes as code points)."""
    names = [f["name"] for f in PRIMITIVES["fields"]]
    rows, errors = load_file(
        PRIMITIVES,
        [ONE],
        {n: pa.string() for n in names if n != "fx"} | {"fx": pa.binary()},
        [(n, (n,)) for n in names],
    )
    assert errors == []
    assert rows == [
        {
            "b": "1",
            "i": "-7",
            "l": str(2**40),
            "f": "1.1",
            "d": "0.1",
            "s": "héllo",
            "e": "GREEN",
            "by": "ab",
            "fx": b"\x00\xff",
            "m": '{"k":1}',
            "arr": '[{"int":1},null]',
        }
    ]
    whole, _ = load_file(PRIMITIVES, [ONE], {"w": pa.string()}, [("w", ())])
    assert json.loads(whole[0]["w"])["fx"] == "\u0000\u00ff"


def test_text_then_the_column_type_booleans_into_numbers_and_non_finite_floats():
    """EXTRACT: the converted text then converts to the column's type (``1`` into an INT
    from a boolean); a float that is not finite is NULL."""
    rows, errors = load_file(
        PRIMITIVES,
        [ONE | {"d": float("nan"), "f": float("inf"), "b": False}],
        {"b": pa.int32(), "d": pa.float64(), "f": pa.float32(), "l": pa.int64()},
        [("b", ("b",)), ("d", ("d",)), ("f", ("f",)), ("l", ("l",))],
    )
    assert errors == []
    assert rows == [{"b": 0, "d": None, "f": None, "l": 2**40}]


LOGICAL = {
    "type": "record",
    "name": "lg",
    "fields": [
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
        },
    ],
}
LOGICAL_ONE = {
    "day": dt.date(1970, 1, 11),
    "ts": dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC),
    "us": dt.datetime(1970, 1, 1, 0, 0, 0, 7, tzinfo=dt.UTC),
    "amount": Decimal("-1.25"),
}


def test_logical_types_convert_as_their_underlying_type():
    """EXTRACT: the conversion table lists Avro's own types; a logical type's value
    converts as its underlying type (a date its day number, a timestamp its count of
    milli- or microseconds, a decimal its unscaled two's-complement bytes)."""
    rows, errors = load_file(
        LOGICAL,
        [LOGICAL_ONE],
        {"day": pa.int32(), "ts": pa.int64(), "us": pa.int64(), "amount": pa.binary()},
        [(n, (n,)) for n in ("day", "ts", "us", "amount")],
    )
    assert errors == []
    assert rows == [
        {"day": 10, "ts": 1500, "us": 7, "amount": (-125).to_bytes(1, "big", signed=True)}
    ]


def test_a_number_a_datetime_column_cannot_hold_is_an_error_never_null():
    """A timestamp-millis's number into a DATETIME column is a record error naming the
    value, not a silent NULL (MySQL's assignment refuses such text too)."""
    rows, errors = load_file(LOGICAL, [LOGICAL_ONE], {"ts": pa.timestamp("us")}, [("ts", ("ts",))])
    assert rows == [] and "cannot convert '1500'" in errors[0][1]


def test_a_union_of_int_and_long_is_refused_by_name():
    """A union whose decoded value does not say its branch (int and long) is refused,
    never guessed."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "n", "type": ["int", "long"]}]}
    _, errors = load_file(schema, [{"n": 1}], {"n": pa.string()}, [("n", ("n", "int"))])
    assert "union of int and long" in errors[0][1] and "not supported" in errors[0][1]


def test_avro_messages_convert_as_files_do():
    """The same rules for Avro messages (``FORMAT AVRO SCHEMA '…'`` on a stream): branch
    paths, ``%``, booleans as 1/0, a missing field a record error."""
    dec = AvroMessageDecoder(
        pa.schema([("payload", pa.string()), ("rec", pa.string()), ("id", pa.int64())]),
        [
            FieldMapping("payload", ("payload", "string"), "error"),
            FieldMapping("rec", (), "error"),
            FieldMapping("id", ("id",), "error"),
        ],
        options={"schema": json.dumps(EXAMPLE_1)},
        text_values=True,
    )
    parsed = fastavro.parse_schema(EXAMPLE_1)

    def raw(rec: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, rec)
        return out.getvalue()

    values = pa.array([raw({"id": 3, "payload": "x"}), raw({"id": 4, "payload": None})])
    d = dec.decode(values)
    assert d.errors == ()
    assert d.table.to_pylist() == [
        {"payload": "x", "rec": '{"id":3,"payload":{"string":"x"}}', "id": 3},
        {"payload": None, "rec": '{"id":4,"payload":null}', "id": 4},
    ]
    bad = AvroMessageDecoder(
        pa.schema([("x", pa.string())]),
        [FieldMapping("x", ("nope",), "error")],
        options={"schema": json.dumps(EXAMPLE_1)},
        text_values=True,
    )
    d = bad.decode(values)
    assert len(d.errors) == 2 and "has no field 'nope'" in d.errors[0].reason


def test_the_python_api_keeps_typed_values():
    """Without SingleStore's reading (pipelines from the Python API), Avro values keep
    their types, as before."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(EXAMPLE_1), [{"id": 1, "payload": "x"}])
    buf.seek(0)
    dec = build_decoder(
        "avro", pa.schema([("payload", pa.string())]), [FieldMapping("payload", ("payload",))]
    )
    frames = list(dec.framing().frames(buf, 0, None, final=True, align=False))
    assert dec.decode_table(frames[0].table).table.to_pylist() == [{"payload": "x"}]


@pytest.mark.parametrize("kind", ["float", "double"])
def test_float_text_reads_back_the_same(kind):
    """EXTRACT: float/double convert to text that reads back without loss."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "v", "type": kind}]}
    rows, _ = load_file(schema, [{"v": 3.0000001}], {"v": pa.string()}, [("v", ("v",))])
    text = rows[0]["v"]
    assert float(text) == (
        float(pa.scalar(3.0000001, pa.float32()).as_py()) if kind == "float" else 3.0000001
    )


def test_a_namespaced_branch_goes_by_its_fullname_only():
    """EXTRACT: path components naming union branches must use the two-part fullname of
    the branch's type if it is in a namespace: ``u::a::f1`` names no branch of
    ``["int", n.a]``."""
    _, errors = load_file(UNION, [{"u": 2}], {"f1": pa.int32()}, [("f1", ("u", "a", "f1"))])
    assert "has no branch 'a'" in errors[0][1] and "int, n.a" in errors[0][1]


def test_singlestores_own_demo_reads_a_timestamp_millis_as_its_number():
    """SingleStore's logistics demo (tests/corpus/singlestore/field.yaml,
    field-singlestore-logistics-sim-create-pipeline-1, from
    github:singlestore-labs/singlestore-logistics-sim schema.sql) loads
    ``@received <- Received`` of a ``timestamp-millis`` and then computes
    ``DATE_ADD(FROM_UNIXTIME(0), INTERVAL (@received / 1000) SECOND)``: the variable holds
    the milliseconds, the logical type not applied; a ``uuid`` string and an enum are
    their text."""
    schema = {
        "type": "record",
        "name": "Package",
        "fields": [
            {"name": "PackageID", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "Received", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {
                "name": "Method",
                "type": {"name": "Method", "type": "enum", "symbols": ["standard", "express"]},
            },
        ],
    }
    rec = {
        "PackageID": "0b5c1bd2-6a4e-4a4b-9d35-1f0b1c2d3e4f",
        "Received": dt.datetime(2026, 1, 1, 0, 0, 1, tzinfo=dt.UTC),
        "Method": "express",
    }
    rows, errors = load_file(
        schema,
        [rec],
        {"packageid": pa.string(), "@received": pa.string(), "method": pa.string()},
        [("packageid", ("PackageID",)), ("@received", ("Received",)), ("method", ("Method",))],
    )
    assert errors == []
    assert rows == [
        {
            "packageid": "0b5c1bd2-6a4e-4a4b-9d35-1f0b1c2d3e4f",
            "@received": str(int(rec["Received"].timestamp() * 1000)),
            "method": "express",
        }
    ]


def test_a_column_without_a_mapping_is_its_field_in_any_case():
    """A column no mapping names reads the field of its name, whatever its case (SQL's
    names are not case-sensitive); a mapped path is Avro's name exactly (EXTRACT: a
    record without the field is an error)."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "Id", "type": "long"}]}
    rows, errors = load_file(schema, [{"Id": 5}], {"id": pa.int64()}, [])
    assert (rows, errors) == ([{"id": 5}], [])
    _, errors = load_file(schema, [{"Id": 5}], {"id": pa.int64()}, [("id", ("id",))])
    assert "has no field 'id'" in errors[0][1]


def test_a_raw_avro_stream_file_with_schema_is_framed_by_records():
    """EXAMPLES, Example 2: a file of raw binary Avro values with ``SCHEMA '…'`` is cut
    record by record (never into lines: the bytes may hold newlines); a file with
    ``SCHEMA REGISTRY`` is refused, naming it."""
    dec = AvroMessageDecoder(
        pa.schema([("payload", pa.string())]),
        [FieldMapping("payload", ("payload", "string"), "error")],
        options={"schema": json.dumps(EXAMPLE_1)},
        text_values=True,
    )
    parsed = fastavro.parse_schema(EXAMPLE_1)
    out = io.BytesIO()
    for rec in ({"id": 10, "payload": "a\nb"}, {"id": 2, "payload": None}):
        fastavro.schemaless_writer(out, parsed, rec)
    out.seek(0)
    frames = list(dec.framing().frames(out, 0, None, final=True, align=False))
    assert [f.positions.to_pylist() for f in frames] == [[0, 6]]
    d = dec.decode(frames[0].values)
    assert d.table.to_pylist() == [{"payload": "a\nb"}, {"payload": None}]
    registry = AvroMessageDecoder(
        pa.schema([("x", pa.string())]), options={"schema.registry.url": "http://127.0.0.1:1"}
    )
    with pytest.raises(Exception, match=r"SCHEMA REGISTRY reads Kafka messages"):
        registry.framing()

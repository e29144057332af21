"""``formats.nested``: nested records flattened into dotted columns and arrays unnested into
rows, checked against what Pinot's ``ComplexTypeTransformer`` makes of the same records
(apache/pinot@210c2951, pinot-segment-local/src/main/java/org/apache/pinot/segment/local/
recordtransformer/ComplexTypeTransformer.java, and its ComplexTypeTransformerTest.java; the
cases below follow that test's records, read through our JSON decoder)."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from sparkpipes.config import FieldMapping, NestedSpec
from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.nested import explode


def _decode(columns, records, spec, fmt="json"):
    schema = pa.schema(columns)
    mapping = [FieldMapping(f.name, (f.name.lstrip("@"),)) for f in schema]
    decoder = build_decoder(fmt, schema, mapping, nested=spec)
    values = pa.array(
        [r if isinstance(r, bytes) else json.dumps(r).encode() for r in records], pa.binary()
    )
    return decoder.decode(values)


def test_records_flatten_into_dotted_columns():
    # ComplexTypeTransformerTest.testFlattenMap: {"a":1, "map1":{"b":"v","im1":{"aa":2,…}},
    # "map2":{"c":3}} → a, map1.b, map1.im1.aa, map1.im1.bb, map2.c
    rec = {"a": 1, "map1": {"b": "v", "im1": {"aa": 2, "bb": "u"}}, "map2": {"c": 3}}
    cols = [
        ("a", pa.int64()),
        ("map1.b", pa.string()),
        ("map1.im1.aa", pa.int32()),
        ("map1.im1.bb", pa.string()),
        ("map2.c", pa.int32()),
    ]
    out = _decode(cols, [rec, {"a": 2}], NestedSpec())
    assert out.table.to_pylist() == [
        {"a": 1, "map1.b": "v", "map1.im1.aa": 2, "map1.im1.bb": "u", "map2.c": 3},
        {"a": 2, "map1.b": None, "map1.im1.aa": None, "map1.im1.bb": None, "map2.c": None},
    ]
    assert out.kept.to_pylist() == [0, 1] and out.errors == ()


def test_an_array_unnests_into_one_row_per_element():
    # testUnnestCollection, root level: {"array":[{"a":"v1"},{"a":"v2"}]} → two rows with
    # array.a v1 and v2; the record's other fields repeat in each
    rec = {"id": 7, "array": [{"a": "v1"}, {"a": "v2"}]}
    out = _decode([("id", pa.int64()), ("array.a", pa.string())], [rec], NestedSpec(("array",)))
    assert out.table.to_pylist() == [{"id": 7, "array.a": "v1"}, {"id": 7, "array.a": "v2"}]
    assert out.kept.to_pylist() == [0, 0]


def test_sibling_arrays_unnest_into_their_cross_product():
    # testUnnestCollection, sibling collections: array by array2 → four rows, array's first
    rec = {"array": [{"a": "v1"}, {"a": "v2"}], "array2": [{"b": "v3"}, {"b": "v4"}]}
    cols = [("array.a", pa.string()), ("array2.b", pa.string())]
    out = _decode(cols, [rec], NestedSpec(("array2", "array")))
    assert [(r["array.a"], r["array2.b"]) for r in out.table.to_pylist()] == [
        ("v1", "v3"),
        ("v1", "v4"),
        ("v2", "v3"),
        ("v2", "v4"),
    ]


def test_a_nested_array_unnests_under_its_parent():
    # testUnnestCollection, nested collection: {"array":[{"a":"v1","array":[{"b":"v3"},
    # {"b":"v4"}]},{"a":"v2","array":[]}]} with array and array.array unnested: v1 once
    # per inner element, v2 kept as one row (an empty array keeps its record)
    rec = {"array": [{"a": "v1", "array": [{"b": "v3"}, {"b": "v4"}]}, {"a": "v2", "array": []}]}
    cols = [("array.a", pa.string()), ("array.array.b", pa.string())]
    out = _decode(cols, [rec], NestedSpec(("array", "array.array")))
    assert out.table.to_pylist() == [
        {"array.a": "v1", "array.array.b": "v3"},
        {"array.a": "v1", "array.array.b": "v4"},
        {"array.a": "v2", "array.array.b": None},
    ]


def test_a_primitive_element_is_the_column_of_the_array():
    # unnestCollection: an element that is not a map is put under the array's own name
    rec = {"k": "x", "tags": ["a", "b", "c"]}
    out = _decode(
        [("k", pa.string()), ("tags", pa.string())], [rec, {"k": "y"}], NestedSpec(("tags",))
    )
    assert out.table.to_pylist() == [
        {"k": "x", "tags": "a"},
        {"k": "x", "tags": "b"},
        {"k": "x", "tags": "c"},
        {"k": "y", "tags": None},  # no array: the record as it is
    ]
    assert out.kept.to_pylist() == [0, 0, 0, 1]


def test_arrays_not_unnested_become_json_text_or_stay_multi_value():
    # testConvertCollectionToString: NON_PRIMITIVE turns an array of maps into its JSON
    # text and keeps an array of primitives (a multi-value column); ALL turns both into
    # text (in a multi-value column, the text is its one value, as Pinot stores a string
    # in a multi-value column)
    rec = {"objs": [{"x": 1}, {"x": 2}], "nums": [1, 2]}
    cols = [("objs", pa.string()), ("nums", pa.list_(pa.int64()))]
    out = _decode(cols, [rec], NestedSpec())
    assert out.table.to_pylist() == [{"objs": '[{"x":1},{"x":2}]', "nums": [1, 2]}]
    cols = [("objs", pa.string()), ("nums", pa.list_(pa.string()))]
    out = _decode(cols, [rec, {}], NestedSpec(collections="ALL"))
    assert out.table.to_pylist() == [
        {"objs": '[{"x":1},{"x":2}]', "nums": ["[1,2]"]},
        {"objs": None, "nums": None},
    ]


def test_prefixes_are_renamed_and_a_clash_is_the_records_error():
    # testPrefixesToRename: {"map1.": ""} strips the prefix; renamePrefixes: a renamed
    # field landing on a field the record has is "Name conflict after attempting to rename"
    spec = NestedSpec(renames=(("map1.", ""),))
    cols = [("b", pa.string()), ("id", pa.int64())]
    ok = {"id": 1, "map1": {"b": "v"}}
    clash = {"id": 2, "b": "w", "map1": {"b": "v"}}
    out = _decode(cols, [ok, clash, {"id": 3, "b": "top"}], spec)
    assert out.table.to_pylist() == [{"b": "v", "id": 1}, {"b": "top", "id": 3}]
    assert out.kept.to_pylist() == [0, 2]
    assert [e.index for e in out.errors] == [1]
    assert "Name conflict after attempting to rename field map1.b to b" in out.errors[0].reason


def test_every_row_of_a_record_with_an_error_goes():
    # a record is all its rows or one error: one element's clash takes the whole record
    spec = NestedSpec(("arr",), renames=(("arr.", ""),))
    rec = {"x": "top", "arr": [{"y": 1}, {"x": "clash"}]}
    out = _decode([("x", pa.string()), ("y", pa.int64())], [rec, {"x": "alone"}], spec)
    assert out.table.to_pylist() == [{"x": "alone", "y": None}]
    assert [e.index for e in out.errors] == [0]


def test_a_record_that_does_not_decode_is_an_error_of_its_index():
    out = _decode([("a.b", pa.string())], [{"a": {"b": "x"}}, b"not json"], NestedSpec())
    assert out.table.to_pylist() == [{"a.b": "x"}]
    assert [e.index for e in out.errors] == [1]


def test_a_variable_reads_the_same_field_as_text():
    out = _decode([("g.id", pa.int64()), ("@g.id", pa.string())], [{"g": {"id": 5}}], NestedSpec())
    assert out.table.to_pylist() == [{"g.id": 5, "@g.id": "5"}]


def test_explode_keeps_empty_and_null_arrays_as_one_row():
    lists = pa.array([[1, 2], [], None, [3]], pa.list_(pa.int64())).slice(0)
    parent, elems = explode(lists)
    assert parent.to_pylist() == [0, 0, 1, 2, 3]
    assert elems.to_pylist() == [1, 2, None, None, 3]
    parent, elems = explode(lists.slice(1))
    assert parent.to_pylist() == [0, 1, 2] and elems.to_pylist() == [None, None, 3]


def test_a_name_that_is_both_a_value_and_a_record_is_refused():
    with pytest.raises(ConfigError, match="both as a value and as a record"):
        _decode([("a", pa.string()), ("a.b", pa.string())], [], NestedSpec())


def test_avro_records_flatten_and_unnest_the_same_way():
    # the ingest-avro recipe's shape (a person record with nested records and arrays), in
    # bare Avro: records are dicts, arrays lists, as fastavro reads them
    schema = {
        "type": "record",
        "name": "P",
        "fields": [
            {
                "name": "person",
                "type": {
                    "type": "record",
                    "name": "Person",
                    "fields": [
                        {"name": "id", "type": "string"},
                        {
                            "name": "address",
                            "type": {
                                "type": "record",
                                "name": "A",
                                "fields": [{"name": "city", "type": "string"}],
                            },
                        },
                        {"name": "interests", "type": {"type": "array", "items": "string"}},
                        {
                            "name": "jobs",
                            "type": {
                                "type": "array",
                                "items": {
                                    "type": "record",
                                    "name": "J",
                                    "fields": [{"name": "company", "type": "string"}],
                                },
                            },
                        },
                    ],
                },
            }
        ],
    }
    parsed = fastavro.parse_schema(schema)

    def avro(rec):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, rec)
        return buf.getvalue()

    rec = {
        "person": {
            "id": "p1",
            "address": {"city": "Oslo"},
            "interests": ["chess", "go"],
            "jobs": [{"company": "a"}, {"company": "b"}],
        }
    }
    cols = [
        pa.field("person.id", pa.string()),
        pa.field("person.address.city", pa.string()),
        pa.field("person.interests", pa.list_(pa.string())),
        pa.field("person.jobs.company", pa.string()),
    ]
    decoder = build_decoder(
        "avro",
        pa.schema(cols),
        [FieldMapping(f.name, (f.name,)) for f in cols],
        options={"schema": json.dumps(schema)},
        nested=NestedSpec(("person.jobs",)),
    )
    out = decoder.decode(pa.array([avro(rec)], pa.binary()))
    assert out.table.to_pylist() == [
        {
            "person.id": "p1",
            "person.address.city": "Oslo",
            "person.interests": ["chess", "go"],
            "person.jobs.company": c,
        }
        for c in ("a", "b")
    ]


def test_well_formed_records_never_take_the_record_by_record_path():
    # the whole chunk through pyarrow.json, then Arrow flattening and take(): no Python
    # object per record (an unnested primitive into a multi-value column: its one value)
    cols = [
        pa.field("g.topics.key", pa.string()),
        pa.field("g.city", pa.string()),
        pa.field("id", pa.int64()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("@id", pa.string()),
    ]
    decoder = build_decoder(
        "json",
        pa.schema(cols),
        [FieldMapping(f.name, (f.name.lstrip("@"),)) for f in cols],
        nested=NestedSpec(("g.topics", "tags")),
    )

    def record_by_record(raw):
        raise AssertionError("the slow path was taken")

    decoder.inner._parse_one = record_by_record
    recs = [
        {
            "id": i,
            "tags": ["a", "b"],
            "g": {"city": "X", "topics": [{"key": f"k{j}"} for j in range(i)]},
        }
        for i in range(3)
    ]
    out = decoder.decode(pa.array([json.dumps(r).encode() for r in recs], pa.binary()))
    got = [(r["id"], r["g.topics.key"], r["tags"], r["@id"]) for r in out.table.to_pylist()]
    assert got == [
        (0, None, ["a"], "0"),
        (0, None, ["b"], "0"),
        (1, "k0", ["a"], "1"),
        (1, "k0", ["b"], "1"),
        (2, "k0", ["a"], "2"),
        (2, "k0", ["b"], "2"),
        (2, "k1", ["a"], "2"),
        (2, "k1", ["b"], "2"),
    ]
    assert out.kept.to_pylist() == [0, 0, 1, 1, 2, 2, 2, 2]

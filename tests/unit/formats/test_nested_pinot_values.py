"""Under a ``complexTypeConfig`` each flattened field and each unnested element is
converted as Pinot converts a column's value (issue 34). Expected values are Pinot's, from
its source at apache/pinot@210c2951e72:

- ``RecordTransformerUtils.getTransformers``: ``ComplexTypeTransformer`` first, then
  ``ExpressionTransformer``, ``DataTypeTransformer``, ``SpecialValueTransformer``,
  ``NullValueTransformer`` on every row it makes;
- ``ComplexTypeTransformer.flattenMap`` puts each leaf of a map under its dotted name as
  the record gave it (an array of primitives stays an array under ``NON_PRIMITIVE``);
  ``unnestCollection`` makes one row per element, ``putValue(column, element)`` for a
  primitive one, and keeps a record whose value is not a collection as it is;
- ``DataTypeTransformer.transform`` → ``DataTypeTransformerUtils.transformValue``:
  ``standardize`` (a list of one is its value), then ``PinotDataType.convert``
  (``DOUBLE.toInt`` ``Number.intValue``, ``STRING.toBytes`` hex, ``STRING.toBoolean``
  ``BooleanUtils.toBoolean``); a value that throws is null under ``continueOnError``
  (``record.putValue(column, null)``), else the exception drops the record;
- ``SpecialValueTransformer``: NaN → null, ``-0.0`` → ``0.0``.
"""

from __future__ import annotations

import datetime as dt
import json
import math

import pyarrow as pa

from sparkpipes.config import FieldMapping, NestedSpec
from sparkpipes.formats import build_decoder

COLS = [
    pa.field("id", pa.int64()),
    pa.field("g.i", pa.int32()),
    pa.field("g.s", pa.string()),
    pa.field("g.by", pa.binary()),
    pa.field("g.b", pa.bool_()),
    pa.field("g.d", pa.float64()),
    pa.field("g.ts", pa.timestamp("us", tz="UTC")),
    pa.field("g.mi", pa.list_(pa.int32())),
    pa.field("g.items.n", pa.int64()),
    pa.field("g.items.name", pa.string()),
    pa.field("nums", pa.int32()),
]
UNNEST = NestedSpec(("g.items", "nums"))


def _decoder(cols=COLS, spec=UNNEST, **options):
    schema = pa.schema(cols)
    mapping = [FieldMapping(f.name, (f.name.lstrip("@"),)) for f in schema]
    return build_decoder("pinot-json", schema, mapping, options=options, nested=spec)


def _decode(records, cols=COLS, spec=UNNEST, **options):
    out = _decoder(cols, spec, **options).decode(
        pa.array([json.dumps(r).encode() for r in records], pa.binary())
    )
    return out.table.to_pylist(), out.errors, out.kept.to_pylist()


def test_flattened_fields_convert_by_pinots_rules():
    rec = {
        "id": "7",
        "g": {
            "i": 2.7,  # DOUBLE.toInt: 2
            "s": ["x"],  # standardize: the one element
            "by": "00ab",  # STRING.toBytes: hex
            "b": "TRUE",  # BooleanUtils.toBoolean
            "d": "NaN",  # NaN → null
            "ts": "2024-01-02 03:04:05",  # Timestamp.valueOf
            "mi": 5,  # a single value into a multi-value column
        },
    }
    [row], errors, _ = _decode([rec])
    assert not errors
    assert row["id"] == 7 and row["g.i"] == 2 and row["g.s"] == "x"
    assert row["g.by"] == b"\x00\xab" and row["g.b"] is True and row["g.d"] is None
    assert row["g.ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert row["g.mi"] == [5]


def test_unnested_elements_convert_one_by_one():
    # each element is a row's value: "3" → 3, 2.9 → 2, a null element a row with null
    rec = {"id": 1, "nums": ["3", 2.9, None], "g": {"items": [{"n": "10", "name": 5}]}}
    rows, errors, kept = _decode([rec])
    assert not errors and kept == [0, 0, 0]
    assert [r["nums"] for r in rows] == [3, 2, None]
    assert {(r["g.items.n"], r["g.items.name"]) for r in rows} == {(10, "5")}


def test_an_array_to_unnest_given_one_value_is_that_value():
    # unnestCollection keeps a record whose value is not a collection as it is
    [row], errors, _ = _decode([{"id": 1, "nums": 4.5}])
    assert not errors and row["nums"] == 4


def test_a_value_that_does_not_convert_drops_the_record_or_is_null_under_continue_on_error():
    recs = [{"id": 1, "g": {"i": "abc", "s": "kept"}}, {"id": 2, "g": {"i": 3}}]
    rows, errors, kept = _decode(recs)
    assert kept == [1] and [r["g.i"] for r in rows] == [3]
    assert [e.index for e in errors] == [0] and "column 'g.i'" in errors[0].reason
    rows, errors, kept = _decode(recs, **{"pinot.continue.on.error": "true"})
    assert not errors and kept == [0, 1]
    assert [(r["g.i"], r["g.s"]) for r in rows] == [(None, "kept"), (3, None)]


def test_an_unnested_element_that_does_not_convert_is_null_under_continue_on_error():
    rec = {"id": 1, "nums": [1, "x", 3]}
    rows, errors, _ = _decode([rec], **{"pinot.continue.on.error": "true"})
    assert not errors and [r["nums"] for r in rows] == [1, None, 3]
    rows, errors, _ = _decode([rec])
    assert rows == [] and [e.index for e in errors] == [0]


def test_json_columns_inside_a_record_are_written_as_pinot_writes_json():
    cols = [pa.field("g.j", pa.string()), pa.field("g.k", pa.string())]
    [row], errors, _ = _decode(
        [{"g": {"j": "plain", "k": [1]}}],
        cols,
        NestedSpec(),
        **{"pinot.json.columns": "g.j"},
    )
    assert not errors and row == {"g.j": '"plain"', "g.k": "1"}


def test_well_formed_nested_records_convert_on_the_fast_path():
    # Arrow's strict reading is Pinot's conversion where it succeeds; -0.0 is made 0.0,
    # epoch millis a TIMESTAMP and hex text bytes, on Arrow
    decoder = _decoder()

    def record_by_record(raw):
        raise AssertionError("the slow path was taken")

    decoder.inner._parse_one = record_by_record
    recs = [
        {
            "id": i,
            "nums": [i, i + 1],
            "g": {
                "i": i,
                "s": "x",
                "by": "0a0b",
                "b": True,
                "d": -0.0,
                "ts": 1700000000000 + i,
                "mi": [1, 2],
                "items": [{"n": i, "name": "a"}],
            },
        }
        for i in range(2)
    ]
    out = decoder.decode(pa.array([json.dumps(r).encode() for r in recs], pa.binary()))
    rows = out.table.to_pylist()
    assert out.kept.to_pylist() == [0, 0, 1, 1] and not out.errors
    assert [r["nums"] for r in rows] == [0, 1, 1, 2]
    assert all(math.copysign(1, r["g.d"]) == 1 for r in rows)
    assert rows[2]["g.ts"] == dt.datetime.fromtimestamp(1700000000.001, dt.UTC)
    assert rows[0]["g.by"] == b"\x0a\x0b" and rows[0]["g.mi"] == [1, 2]


def test_a_chunk_pinot_reads_otherwise_falls_back_to_pinots_conversion_record_by_record():
    # 2.7 into an INT fails Arrow's reading: the chunk goes record by record, converted
    recs = [{"id": 1, "g": {"i": 1}}, {"id": 2, "g": {"i": 2.7, "d": -0.0}}]
    rows, errors, _ = _decode(recs)
    assert not errors and [r["g.i"] for r in rows] == [1, 2]
    assert math.copysign(1, rows[1]["g.d"]) == 1


def test_variables_still_read_the_records_text():
    cols = [pa.field("g.i", pa.int32()), pa.field("@g.o", pa.string())]
    [row], errors, _ = _decode([{"g": {"i": 2.5, "o": {"a": [1]}}}], cols, NestedSpec())
    assert not errors and row == {"g.i": 2, "@g.o": '{"a":[1]}'}

"""JSON text columns to Arrow and back: what a connector's records look like after a
transform that changes nothing."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkpipes.sources.connect.smt import jsontext


def test_round_trip_keeps_values_and_field_order():
    rows = [
        {
            "id": 1,
            "s": 'a "q"\n\\',
            "f": 1.5,
            "b": True,
            "n": None,
            "t": "2024-01-01T10:00:00",
            "l": [1, 2],
            "o": {"x": "y"},
        },
        {
            "id": 2,
            "s": "é\u0001",
            "f": None,
            "b": False,
            "n": None,
            "t": "2024-01-02T10:00:00",
            "l": [],
            "o": None,
        },
    ]
    back = jsontext.dump(jsontext.parse(pa.array([json.dumps(r) for r in rows])))
    assert [json.loads(t) for t in back.to_pylist()] == rows
    assert list(json.loads(back[0].as_py())) == list(rows[0])


def test_scalars_nulls_and_mixed_types_read():
    col = jsontext.parse(pa.array(["1", "null", "3"]))
    assert col.to_pylist() == [1, None, 3]
    with pytest.raises(jsontext.MixedTypes):
        jsontext.parse(pa.array(['{"a": 1}', '{"a": "x"}']))


def test_verbatim_json_is_written_as_it_is():
    col = jsontext.verbatim(pa.array(['{"b":1}', '{"a":{"w":2}}']))
    assert jsontext.dump(col).to_pylist() == ['{"b":1}', '{"a":{"w":2}}']

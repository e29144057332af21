"""A table's value rules on a chunk of rows in the tasks: ENUM / SET values stored as
their members (SingleStore: "an invalid value is inserted as an empty string"), and rows
whose GEOGRAPHY or VECTOR value does not fit named by their record index."""

import pyarrow as pa

from sparkpipes.config.tables import Choices, ValueRules
from sparkpipes.formats.rules import apply_rules, choose, vector_problems


def test_enum_and_set_values_are_stored_as_their_members():
    table = pa.table(
        {
            "e": ["Express", "standard ", "overnight", None],
            "s": ["c,A,a,x", "", "B", None],
        }
    )
    got = choose(
        table,
        {"e": Choices(("standard", "express")), "s": Choices(("a", "b", "c"), many=True)},
    )
    assert got.column("e").to_pylist() == ["express", "standard", "", None]
    assert got.column("s").to_pylist() == ["a,c", "", "b", None]


def test_a_vector_of_another_size_or_with_a_null_element_is_named():
    values = pa.array([[1.0, 2.0, 3.0], [1.0], None, [1.0, None, 2.0]], pa.list_(pa.float32()))
    assert vector_problems(values, 3, "v").to_pylist() == [
        None,
        "column 'v' is VECTOR(3); the value has 1 elements",
        None,
        "column 'v' is VECTOR(3); the value has a NULL element",
    ]


def test_rows_that_do_not_fit_are_record_errors_by_their_kept_index():
    table = pa.table(
        {
            "id": [0, 1, 2, 3],
            "g": ["POINT(1 2)", "POINT(1 95)", "LINESTRING(0 0, 1 1)", None],
            "v": pa.array([[1, 2], [1, 2], [1], [3, 4]], pa.list_(pa.int16())),
        }
    )
    rules = ValueRules(geography=(("g", "GEOGRAPHYPOINT"),), vectors=(("v", 2),))
    checked = apply_rules(table, pa.array([10, 11, 12, 13], pa.int32()), rules)
    assert checked.table.column("id").to_pylist() == [0, 3]
    assert checked.table.column("g").to_pylist() == ["POINT(1.00000000 2.00000000)", None]
    assert [e.index for e in checked.errors] == [11, 12]
    assert "GEOGRAPHYPOINT" in checked.errors[1].reason  # the first column a row breaks

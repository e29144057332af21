"""Field transforms against Apache Kafka's documented behaviour (connect/transforms
sources of Kafka 3.x/4.x, cited per test; the values "with schema", as a JDBC source's
records are)."""

from __future__ import annotations

from tests.unit.sources.connect.smt.helpers import keys, one, problems, records, values

ROWS = [{"id": 1, "name": "a", "city": "x"}, {"id": 2, "name": "b", "city": None}]


def test_value_to_key_builds_a_struct_key_of_the_fields():
    # ValueToKey.java applyWithSchema: key = Struct of `fields`, in that order
    out = one("ValueToKey", fields="name,id").apply(records(ROWS))
    assert keys(out) == [{"name": "a", "id": 1}, {"name": "b", "id": 2}]
    assert values(out) == ROWS


def test_value_to_key_refuses_a_field_the_value_lacks():
    # ValueToKey.java: DataException("Field does not exist: " + field)
    out = one("ValueToKey", fields="nope").apply(records(ROWS))
    assert len(out.records) == 0
    (refused,) = out.refused
    assert refused.index.to_pylist() == [0, 1]
    assert "Field does not exist: nope" in refused.reason


def test_value_to_key_needs_fields():
    # ValueToKey.java: fields has NO_DEFAULT_VALUE and a NonEmptyListValidator
    found = problems(
        {"transforms": "k", "transforms.k.type": "org.apache.kafka.connect.transforms.ValueToKey"}
    )
    assert [k for k, _ in found] == ["transforms.k.fields"]


def test_extract_field_key_and_value():
    # ExtractField.java: the operand becomes its field; a null operand passes as null
    out = one("ExtractField$Value", field="name").apply(records([*ROWS, None]))
    assert values(out) == ["a", "b", None]
    out = one("ExtractField$Key", field="id").apply(records(ROWS, keys=[{"id": 7}, {"id": 8}]))
    assert keys(out) == [7, 8]


def test_extract_field_unknown_field_is_refused():
    # ExtractField.java: IllegalArgumentException("Unknown field: " + originalPath)
    out = one("ExtractField$Value", field="zip").apply(records(ROWS))
    assert "Unknown field: zip" in out.refused[0].reason


def test_replace_field_include_exclude_renames_keep_order():
    # ReplaceField.java: exclude takes precedence over include; renames old:new
    out = one(
        "ReplaceField$Value", include="id,city,name", exclude="name", renames="city:town"
    ).apply(records(ROWS))
    assert values(out) == [{"id": 1, "town": "x"}, {"id": 2, "town": None}]


def test_replace_field_old_whitelist_and_blacklist_names():
    # Kafka before 2.7 (and Confluent's docs) named include/exclude whitelist/blacklist
    out = one("ReplaceField$Value", whitelist="id,name", blacklist="name").apply(records(ROWS))
    assert values(out) == [{"id": 1}, {"id": 2}]


def test_replace_field_bad_rename_is_a_problem():
    # ReplaceField.java parseRenameMappings: "Invalid rename mapping"
    found = problems(
        {
            "transforms": "r",
            "transforms.r.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
            "transforms.r.renames": "a:b:c",
        }
    )
    assert found[0][0] == "transforms.r.renames"


def test_insert_field_topic_static_timestamp_partition():
    # InsertField.java applyWithSchema: fields appended; a missing partition/timestamp
    # leaves the optional field null; the timestamp is a Connect Timestamp
    out = one(
        "InsertField$Value",
        **{
            "topic.field": "tp",
            "partition.field": "pt",
            "timestamp.field": "ts",
            "static.field": "src",
            "static.value": "db",
        },
    ).apply(records(ROWS, timestamps=[0, None]))
    first, second = values(out)
    assert first == {
        **ROWS[0],
        "tp": "t",
        "pt": None,
        "ts": "1970-01-01T00:00:00.000Z",
        "src": "db",
    }
    assert second["ts"] is None


def test_insert_field_passes_a_tombstone_unchanged():
    # InsertField.java apply: operatingValue(record) == null -> the record as is
    out = one("InsertField$Value", **{"topic.field": "tp"}).apply(records([ROWS[0], None]))
    assert values(out) == [{**ROWS[0], "tp": "t"}, None]


def test_insert_field_offset_is_for_sink_connectors_only():
    # InsertField.java: offset.field needs requireSinkRecord -> every source record fails
    cfg = {
        "transforms": "o",
        "transforms.o.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.o.offset.field": "off",
    }
    assert [k for k, _ in problems(cfg)] == ["transforms.o.offset.field"]
    assert problems(cfg, role="sink") == []


def test_insert_field_required_without_value_is_refused():
    # InsertField.java: "name!" is a required field; Struct validation refuses a null
    out = one("InsertField$Value", **{"timestamp.field": "ts!"}).apply(
        records(ROWS, timestamps=[5, None])
    )
    assert len(out.records) == 1 and out.refused[0].index.to_pylist() == [1]


def test_mask_field_empty_values_and_replacement():
    # MaskField.java: the type's "null value" (0, "", false) or `replacement`; null stays
    out = one("MaskField$Value", fields="id,city").apply(records(ROWS))
    assert values(out) == [{"id": 0, "name": "a", "city": ""}, {"id": 0, "name": "b", "city": None}]
    out = one("MaskField$Value", fields="city", replacement="***").apply(records(ROWS))
    assert [v["city"] for v in values(out)] == ["***", None]


def test_hoist_field_wraps_the_value():
    # HoistField.java: Struct with the one field `field`
    out = one("HoistField$Value", field="line").apply(records(["a", "b"]))
    assert values(out) == [{"line": "a"}, {"line": "b"}]


def test_flatten_joins_nested_names_with_the_delimiter():
    # Flatten.java: default delimiter "."
    out = one("Flatten$Value", delimiter="_").apply(
        records([{"a": {"b": 1, "c": {"d": "x"}}, "e": 2}])
    )
    assert values(out) == [{"a_b": 1, "a_c_d": "x", "e": 2}]


def test_set_schema_metadata_changes_no_row():
    out = one("SetSchemaMetadata$Value", **{"schema.name": "a.B", "schema.version": "4"}).apply(
        records(ROWS)
    )
    assert values(out) == ROWS


def test_an_unknown_option_is_named():
    found = problems(
        {
            "transforms": "h",
            "transforms.h.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.h.field": "f",
            "transforms.h.feild": "g",
        }
    )
    assert [k for k, _ in found] == ["transforms.h.feild"]

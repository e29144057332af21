"""The table INFER PIPELINE infers from what a source holds, by SingleStore's documented
rules (schema-and-pipeline-inference: CSV header detection with IGNORE and
HEADER_DETECTION; the default format CSV; TEXT in utf8mb4 / utf8mb4_bin), and the pipeline
that loads it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.engine.sampling import Sample
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import parse_one
from sparkpipes.frontends.singlestore.inferred import (
    BIGINT,
    DATE,
    DATETIME,
    DOUBLE,
    JSON,
    TEXT,
    infer,
    pipeline_of,
    table_sql,
)


def _load(sql: str):
    return parse_one(sql).pipeline


def _csv(*lines: str, clauses: str = ""):
    s = _load(f"INFER PIPELINE AS LOAD DATA FS '/in/*.csv' {clauses}")
    return s, infer(s, Sample("files", records=tuple(line.encode() for line in lines)))


def test_a_text_first_line_before_a_line_of_numbers_is_the_header():
    s, got = _csv("id,name,score,day,at", "1,a,2.5,2024-01-02,2024-01-02 10:00:00", "2,b,3,,")
    assert got.header
    assert [(c.name, c.type, c.nullable) for c in got.columns] == [
        ("id", BIGINT, True),
        ("name", TEXT, True),
        ("score", DOUBLE, True),
        ("day", DATE, True),
        ("at", DATETIME, True),
    ]
    made = pipeline_of(s, "p", "t", got)
    assert made.ignore_lines == 1 and [c.name for c in made.columns] == [
        "id",
        "name",
        "score",
        "day",
        "at",
    ]
    assert (made.fields.terminated_by, made.fields.enclosed_by, made.format) == (",", '"', "CSV")


def test_all_text_lines_or_a_first_line_with_a_number_have_no_header():
    for lines in (("a,b", "c,d"), ("1,x", "2,y")):
        _, got = _csv(*lines)
        assert not got.header
        assert [c.name for c in got.columns] == ["col0", "col1"]


def test_header_detection_on_takes_a_text_first_line_and_off_never_does():
    _, on = _csv("a,b", "c,d", clauses="HEADER_DETECTION ON")
    assert on.header and [c.name for c in on.columns] == ["a", "b"]
    _, off = _csv("a,b", "1,2", clauses="HEADER_DETECTION OFF")
    assert not off.header and [c.type for c in off.columns] == [TEXT, TEXT]


def test_ignore_lines_are_skipped_before_the_header_and_the_pipeline_ignores_both():
    s = _load("INFER PIPELINE AS LOAD DATA FS '/in/*.csv' IGNORE 2 LINES")
    got = infer(s, Sample("f", records=(b"n", b"1")))  # the source skipped the 2 lines
    assert pipeline_of(s, "p", "t", got).ignore_lines == 3


def test_the_delimiter_that_cuts_every_line_alike_and_given_fields_as_given():
    _, tabs = _csv("a\tb\tc", "1\t2\t3")
    assert tabs.fields.terminated_by == "\t" and len(tabs.columns) == 3
    _, semi = _csv("a;b", "1;2", clauses="FIELDS TERMINATED BY ';' ENCLOSED BY ''")
    assert semi.fields.enclosed_by == "" and [c.type for c in semi.columns] == [BIGINT, BIGINT]


def test_names_repeated_in_the_header_are_made_unique():
    _, got = _csv("a,b,A", "1,2,3")
    assert [c.name for c in got.columns] == ["a", "b", "A_1"]


def test_shorter_lines_make_trailing_nullcols():
    s, got = _csv("a,b,c", "1,2,3", "4,5")
    assert pipeline_of(s, "p", "t", got).trailing_nullcols


def test_json_keys_types_and_keys_some_records_lack():
    s = _load("INFER PIPELINE AS LOAD DATA FS '/in/*.json' FORMAT JSON")
    got = infer(
        s,
        Sample(
            "f",
            records=(b'{"a": 1, "b": "x", "c": {"d": 1}, "e": 1}', b'{"a": 2, "b": 3, "e": 2.5}'),
        ),
    )
    assert [(c.name, c.type, c.missing) for c in got.columns] == [
        ("a", BIGINT, False),
        ("b", TEXT, False),  # a string and a number: text
        ("c", JSON, True),
        ("e", DOUBLE, False),
    ]
    made = pipeline_of(s, "p", "t", got)
    assert made.to_sql().endswith("FORMAT JSON (a <- a, b <- b, c <- c DEFAULT NULL, e <- e)")
    with pytest.raises(ConfigError, match="record 1 is not a JSON object"):
        infer(s, Sample("f", records=(b"[1]",)))


def test_avro_fields_unions_and_logical_types_as_singlestore_loads_them():
    s = _load("INFER PIPELINE AS LOAD DATA FS '/in/*.avro' FORMAT AVRO")
    schema = {
        "type": "record",
        "name": "Book",
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "note", "type": ["null", "string"]},
            {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["a", "b"]}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "either", "type": ["int", "string"]},
        ],
    }
    got = infer(s, Sample("f", avro_schema=schema))
    assert [(c.name, c.type, c.nullable, c.path) for c in got.columns] == [
        ("id", "int(11)", False, ("id",)),
        ("at", BIGINT, False, ("at",)),
        ("note", TEXT, True, ("note", "string")),
        ("kind", "ENUM('a', 'b') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", False, ("kind",)),
        ("tags", JSON, False, ("tags",)),
        ("either", JSON, False, ("either",)),
    ]
    made = pipeline_of(s, "p", "t", got).to_sql()
    assert "FORMAT AVRO (id <- %::id, at <- %::at, note <- %::note::string" in made
    (table,) = [parse_one(table_sql("t", got))]  # the DDL is the dialect's
    assert [c.name for c in table.columns] == ["id", "at", "note", "kind", "tags", "either"]


def test_parquet_columns_and_nested_ones_refused_by_name():
    s = _load("INFER TABLE AS LOAD DATA FS '/in/*.parquet' FORMAT PARQUET")
    schema = pa.schema(
        [
            pa.field("a", pa.int32(), nullable=False),
            pa.field("t", pa.timestamp("us")),
            pa.field("d", pa.decimal128(10, 2)),
        ]
    )
    got = infer(s, Sample("f", parquet_schema=schema))
    assert [(c.type, c.nullable) for c in got.columns] == [
        ("int(11)", False),
        (DATETIME, True),
        ("decimal(10,2)", True),
    ]
    nested = pa.schema([pa.field("s", pa.struct([("x", pa.int32())]))])
    with pytest.raises(ConfigError, match="Parquet column 's'"):
        infer(s, Sample("f", parquet_schema=nested))

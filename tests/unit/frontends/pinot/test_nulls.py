"""Pinot's default null values and length limits, as its code states them
(``FieldSpec.DEFAULT_*_NULL_VALUE_OF_*``, ``DEFAULT_MAX_LENGTH``,
``getEffectiveMaxLengthExceedStrategy``, ``NullValueTransformerUtils``,
``MutableSegmentImpl.isNullable``)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from sparkpipes.config.tables import MaxLength, NullFill, TableSpec, ValueRules
from sparkpipes.errors import ConfigError
from sparkpipes.formats.sanitize import fill_scalar
from sparkpipes.frontends.pinot.lowering import table_spec
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.nulls import default_text, max_length

FIELDS = {
    "dimensionFieldSpecs": [
        {"name": "i", "dataType": "INT"},
        {"name": "l", "dataType": "LONG"},
        {"name": "f", "dataType": "FLOAT"},
        {"name": "d", "dataType": "DOUBLE"},
        {"name": "b", "dataType": "BOOLEAN"},
        {"name": "t", "dataType": "TIMESTAMP"},
        {"name": "s", "dataType": "STRING"},
        {"name": "j", "dataType": "JSON"},
        {"name": "y", "dataType": "BYTES"},
        {"name": "bd", "dataType": "BIG_DECIMAL"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
        {"name": "given", "dataType": "INT", "defaultNullValue": 7},
        {"name": "kept", "dataType": "STRING", "notNull": True},
        {"name": "short", "dataType": "STRING", "maxLength": 3},
    ],
    "metricFieldSpecs": [
        {"name": "mi", "dataType": "INT"},
        {"name": "ml", "dataType": "LONG"},
        {"name": "mf", "dataType": "FLOAT"},
        {"name": "md", "dataType": "DOUBLE"},
        {"name": "my", "dataType": "BYTES"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        },
        {
            "name": "day",
            "dataType": "STRING",
            "format": "1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd",
            "granularity": "1:DAYS",
        },
    ],
}
TABLE = {
    "tableName": "n",
    "tableType": "REALTIME",
    "segmentsConfig": {"timeColumnName": "ts", "schemaName": "n"},
    "tableIndexConfig": {
        "streamConfigs": {
            "streamType": "kafka",
            "stream.kafka.topic.name": "n",
            "stream.kafka.broker.list": "127.0.0.1:9092",
            "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        }
    },
}


def spec(schema_extra=None, index_extra=None) -> TableSpec:
    schema = load_schema({"schemaName": "n", **FIELDS, **(schema_extra or {})})
    index = {**TABLE["tableIndexConfig"], **(index_extra or {})}
    return table_spec(schema, load_table({**TABLE, "tableIndexConfig": index}, schema))


def values(t: TableSpec) -> dict:
    fields = {c.name: c for c in t.columns}
    schema = pa.schema([pa.field(c.name, _arrow(c.type)) for c in t.columns])
    return (
        {c: fill_scalar(f, schema.field(c).type).as_py() for c, f in t.rules.fills if not f.now}
        | {c: "now" for c, f in t.rules.fills if f.now}
        | {"_": fields}
    )


def _arrow(ddl: str) -> pa.DataType:
    base = {
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
        "STRING": pa.string(),
        "BINARY": pa.binary(),
        "DECIMAL(38,18)": pa.decimal128(38, 18),
    }
    if ddl.startswith("ARRAY<"):
        return pa.list_(base[ddl[6:-1]])
    return base[ddl]


def test_without_null_handling_a_null_is_pinots_default_of_the_field():
    got = values(spec())
    assert got["i"] == -(2**31) and got["l"] == -(2**63)  # Integer / Long.MIN_VALUE
    assert got["f"] == float("-inf") == got["d"]  # Float / Double.NEGATIVE_INFINITY
    schema = load_schema({"schemaName": "n", **FIELDS})
    assert default_text(schema.field("f")) == "-inf" == default_text(schema.field("d"))
    assert got["b"] is False and got["bd"] == 0
    assert got["t"] == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)  # 0L
    assert got["s"] == "null" and got["j"] == "null" and got["y"] == b""
    assert got["tags"] == ["null"]  # a multi-value field: an array of the one default
    assert got["given"] == 7
    assert got["mi"] == 0 and got["ml"] == 0 and got["mf"] == 0.0 and got["md"] == 0.0
    assert got["my"] == b""
    # the time column: its default (Long.MIN_VALUE) is no time in 1971-2071, so the load time
    assert got["ts"] == "now"
    assert got["day"] == "null"  # not the time column: its default as it is


def test_the_time_column_keeps_a_default_within_1971_to_2071():
    fields = [dict(f) for f in FIELDS["dateTimeFieldSpecs"]]
    fields[0]["defaultNullValue"] = 1_600_000_000_000
    t = spec({"dateTimeFieldSpecs": fields})
    assert dict(t.rules.fills)["ts"] == NullFill("1600000000000")
    fields[0]["defaultNullValue"] = 0  # 1970: out of range
    t = spec({"dateTimeFieldSpecs": fields})
    assert dict(t.rules.fills)["ts"] == NullFill(now=True, unit_ms=1)


def test_with_null_handling_a_null_stays_null():
    t = spec(index_extra={"nullHandlingEnabled": True})
    # every column keeps its nulls (Pinot's null vector); an empty multi-value list is null
    assert dict(t.rules.fills) == {"tags": NullFill(None)}
    assert dict(t.rules.lengths)["s"] == MaxLength(512, "TRIM_LENGTH", "null")
    # column-based: all but the notNull fields
    t = spec({"enableColumnBasedNullHandling": True})
    assert dict(t.rules.fills) == {"kept": NullFill("null"), "tags": NullFill(None)}
    assert [c.name for c in t.columns if c.not_null] == ["kept"]


def test_string_max_length_and_strategies():
    t = spec()
    lengths = dict(t.rules.lengths)
    assert lengths["s"].limit == 512 and lengths["s"].exceed == "TRIM_LENGTH"  # DEFAULT_MAX_LENGTH
    assert lengths["short"].limit == 3
    assert "j" not in lengths and "y" not in lengths  # JSON / BYTES: NO_ACTION by default
    assert "i" not in lengths
    schema = load_schema(
        {
            "schemaName": "n",
            "dimensionFieldSpecs": [
                {
                    "name": "j",
                    "dataType": "JSON",
                    "maxLength": 10,
                    "maxLengthExceedStrategy": "ERROR",
                },
                {"name": "y", "dataType": "BYTES", "maxLengthExceedStrategy": "trim_length"},
            ],
        }
    )
    assert max_length(schema.field("j")) == MaxLength(10, "ERROR", "null")
    assert max_length(schema.field("y")) == MaxLength(512, "TRIM_LENGTH", "")


def test_bad_values_are_errors_naming_the_key():
    with pytest.raises(ConfigError, match="maxLength must be a positive"):
        load_schema(
            {
                "schemaName": "n",
                "dimensionFieldSpecs": [{"name": "s", "dataType": "STRING", "maxLength": 0}],
            }
        )
    with pytest.raises(ConfigError, match="maxLengthExceedStrategy 'CUT' is not one of"):
        load_schema(
            {
                "schemaName": "n",
                "dimensionFieldSpecs": [
                    {"name": "s", "dataType": "STRING", "maxLengthExceedStrategy": "CUT"}
                ],
            }
        )
    schema = load_schema(
        {
            "schemaName": "n",
            "dimensionFieldSpecs": [{"name": "i", "dataType": "INT", "defaultNullValue": "x"}],
        }
    )
    with pytest.raises(ConfigError, match="defaultNullValue 'x' is not a INT value"):
        default_text(schema.field("i"))


def test_defaults_are_read_as_pinot_converts_them():
    def text(dtype, value):
        schema = load_schema(
            {
                "schemaName": "n",
                "dimensionFieldSpecs": [
                    {"name": "c", "dataType": dtype, "defaultNullValue": value}
                ],
            }
        )
        return default_text(schema.field("c"))

    assert text("BOOLEAN", "1") == "true" and text("BOOLEAN", "yes") == "false"  # BooleanUtils
    assert text("BOOLEAN", True) == "true"
    assert text("TIMESTAMP", 86_400_000) == "1970-01-02T00:00:00.000000Z"  # epoch millis
    assert text("TIMESTAMP", "2020-01-01 10:00:00") == "2020-01-01T10:00:00.000000Z"
    assert text("BYTES", "0A0b") == "0a0b"  # hex
    assert text("DOUBLE", "-Infinity") == "-inf"
    assert text("BIG_DECIMAL", "1.50") == "1.50"


def test_the_rules_are_kept_with_the_table():
    t = spec()
    assert ValueRules.from_options(t.options()) == t.rules


def test_a_time_pattern_the_load_time_cannot_be_written_in_is_refused_by_name():
    fields = [dict(f) for f in FIELDS["dateTimeFieldSpecs"]]
    fields[1]["format"] = "1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS"
    table = {**TABLE, "segmentsConfig": {"timeColumnName": "day", "schemaName": "n"}}
    schema = load_schema({"schemaName": "n", **FIELDS, "dateTimeFieldSpecs": fields})
    with pytest.raises(ConfigError, match=r"field 'day': .*'SSS'"):
        table_spec(schema, load_table(table, schema))
    fields[1]["defaultNullValue"] = "2020-01-01 00:00:00.000"  # a valid time: it is kept
    schema = load_schema({"schemaName": "n", **FIELDS, "dateTimeFieldSpecs": fields})
    kept = table_spec(schema, load_table(table, schema))
    assert dict(kept.rules.fills)["day"] == NullFill("2020-01-01 00:00:00.000")

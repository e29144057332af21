"""Transforms reading what other transforms make (``frontends.pinot.chain``), as Pinot's
``ExpressionTransformer`` runs them: in the order they read each other (whatever order
the config lists them in), skipping a transform whose column the record already has a
non-null value for, with the filter after them; a cycle refused by name, as Pinot refuses
it. Rows are computed by the engine's own ingest-time SQL (``engine.batch.transform``) in
a real Spark session, over what the decoder hands it (pipeline variables as text)."""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pytest

from sparkpipes.frontends.pinot.chain import ChainError, resolve
from sparkpipes.frontends.pinot.expr import MAX_SQL, Budget, TooLarge, translate
from sparkpipes.frontends.pinot.lowering import lower, table_spec
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.problems import PinotConfigError

TS = 1644586485807  # 2022-02-11T13:34:45.807Z

SCHEMA = {
    "schemaName": "people",
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "INT"},
        {"name": "greeting", "dataType": "STRING"},
        {"name": "fullName", "dataType": "STRING"},
        # a schema field's own transform reading a transformConfig's column
        {"name": "shout", "dataType": "STRING", "transformFunction": "upper(greeting)"},
        {"name": "day", "dataType": "STRING"},
        {"name": "point", "dataType": "BYTES"},
        {"name": "wkt", "dataType": "STRING"},
    ],
    "dateTimeFieldSpecs": [
        {
            "name": "ts",
            "dataType": "LONG",
            "format": "1:MILLISECONDS:EPOCH",
            "granularity": "1:MILLISECONDS",
        }
    ],
}
STREAM = {
    "streamType": "kafka",
    "stream.kafka.topic.name": "people",
    "stream.kafka.broker.list": "127.0.0.1:9092",
    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
}
TABLE = {
    "tableName": "people",
    "tableType": "REALTIME",
    "segmentsConfig": {"timeColumnName": "ts", "schemaName": "people"},
    "tableIndexConfig": {"streamConfigs": STREAM},
    "ingestionConfig": {
        "transformConfigs": [
            # listed before what it reads: Pinot sorts them, so the order here is no matter
            {"columnName": "greeting", "transformFunction": "concat('hi', fullName, ' ')"},
            {"columnName": "fullName", "transformFunction": "concat(first, last, ' ')"},
            # an intermediate (no schema column) another transform reads, as the newest
            # Pinot allows: parsed once, then read
            {"columnName": "secs", "transformFunction": "toEpochSeconds(ts)"},
            {"columnName": "day", "transformFunction": "toDateTime(secs * 1000, 'yyyy-MM-dd')"},
            # a geospatial function of another geospatial transform's bytes
            {"columnName": "wkt", "transformFunction": "ST_AsText(point)"},
            {"columnName": "point", "transformFunction": "stPoint(lon, lat)"},
        ],
        # Pinot filters after the transforms: a made column is read as made
        "filterConfig": {"filterFunction": "strcmp(shout, 'HI MALLORY X') = 0"},
    },
}


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _rows(
    spark, table: Mapping, schema_doc: Mapping, records: Sequence[Mapping], *, check: bool = False
) -> list[dict]:
    """The rows ``records`` become: what the pipeline's decoder hands over (each mapped
    column, each variable as text), through the pipeline's SET, WHERE and the table's
    null values; with ``check``, its rejects too (each row's reason in REJECT_COLUMN)."""
    from sparkpipes.engine.batch.transform import Transform, apply
    from sparkpipes.engine.schema import to_arrow, to_spark
    from sparkpipes.formats import build_decoder

    schema = load_schema(schema_doc)
    cfg = load_table(table, schema)
    spec = lower(schema, cfg)
    tspec = table_spec(schema, cfg)
    target, _ = to_arrow(tspec.schema)
    fields = [
        pa.field(m.column, pa.string() if m.is_variable else target.field(m.column).type)
        for m in spec.format.mapping
    ]
    decoder = build_decoder(
        spec.format.kind,
        pa.schema(fields),
        spec.format.mapping,
        options=spec.format.decoder_options(),
        nested=spec.format.nested,
    )
    decoded = decoder.decode(pa.array([json.dumps(r).encode() for r in records], pa.binary()))
    assert not decoded.errors, decoded.errors
    staged = decoded.table
    rows = [tuple(r.values()) for r in staged.to_pylist()]
    t = spec.transform
    out = apply(
        spark.createDataFrame(rows, to_spark(staged.schema)),
        Transform(
            t.assignments,
            t.where,
            functions=t.functions,
            rules=tspec.rules,
            rejects=t.rejects if check else (),
        ),
        target,
        check=check,
    )
    return sorted((r.asDict() for r in out.collect()), key=lambda r: r["id"])


def _point(x: float, y: float) -> bytes:
    return b"\x00" + struct.pack(">dd", x, y)  # Pinot's GeometrySerializer: a geometry point


def test_transforms_read_what_other_transforms_make_as_pinot_orders_them(spark):
    records = [
        {"id": 1, "first": "ada", "last": "lovelace", "ts": TS, "lon": 1.0, "lat": 2.0},
        # the record's own fullName wins: Pinot skips that transform, and greeting (and
        # shout after it) reads the record's value
        {"id": 2, "first": "x", "last": "y", "fullName": "Grace Hopper", "ts": TS},
        # a null is no value: the transform runs
        {"id": 3, "first": "alan", "last": "turing", "fullName": None, "ts": 0},
        # dropped by the filter, which reads the chain's last column
        {"id": 4, "first": "mallory", "last": "x", "ts": TS},
    ]
    got = _rows(spark, TABLE, SCHEMA, records)
    assert [r["id"] for r in got] == [1, 2, 3]
    one, two, three = got
    assert (one["fullName"], one["greeting"], one["shout"]) == (
        "ada lovelace",
        "hi ada lovelace",
        "HI ADA LOVELACE",
    )
    assert (two["fullName"], two["greeting"], two["shout"]) == (
        "Grace Hopper",
        "hi Grace Hopper",
        "HI GRACE HOPPER",
    )
    assert three["greeting"] == "hi alan turing"
    # the intermediate's value reaches day; it is no column of the table
    assert (one["day"], three["day"]) == ("2022-02-11", "1970-01-01")
    assert "secs" not in one
    # the point's bytes, and its text read from them
    assert (one["point"], one["wkt"]) == (_point(1.0, 2.0), "POINT (1 2)")
    # no coordinates: no point, so each column's default null value (Pinot's with
    # continueOnError), the text one's included
    assert (two["point"], two["wkt"]) == (b"", "null")


def test_a_record_value_of_a_made_column_wins_in_its_own_type(spark):
    """The record's own value is converted as Pinot's ``DataTypeTransformer`` converts
    any value into the column's type (``ExpressionTransformer`` keeps it, and the
    conversion runs after it, apache/pinot@210c2951e72 ``RecordTransformerUtils``): epoch
    millis (a long: ``LONG.toTimestamp``) or ISO text into a TIMESTAMP, a real into a LONG
    truncated, a single value into a multi-value column as its one element."""
    schema = {
        "schemaName": "people",
        "dimensionFieldSpecs": [
            {"name": "id", "dataType": "INT"},
            {"name": "at", "dataType": "TIMESTAMP"},
            {"name": "n", "dataType": "LONG"},
            {"name": "tags", "dataType": "STRING", "singleValueField": False},
        ],
        "dateTimeFieldSpecs": SCHEMA["dateTimeFieldSpecs"],
    }
    table = copy.deepcopy(TABLE)
    table["ingestionConfig"] = {
        "transformConfigs": [
            {"columnName": "at", "transformFunction": "ts + 1000"},
            {"columnName": "n", "transformFunction": "toEpochSeconds(ts)"},
            {"columnName": "tags", "transformFunction": "split(csv, ',')"},
        ]
    }
    records = [
        {"id": 1, "ts": TS, "csv": "a,b"},
        {"id": 2, "ts": TS, "at": TS - 5000, "n": 7.9, "tags": ["x"], "csv": "a,b"},
        {"id": 3, "ts": TS, "at": "2024-01-02T03:04:05Z", "tags": "solo"},
    ]
    one, two, three = _rows(spark, table, schema, records)
    assert int(one["at"].timestamp() * 1000) == TS + 1000
    assert (one["n"], one["tags"]) == (TS // 1000, ["a", "b"])
    assert int(two["at"].timestamp() * 1000) == TS - 5000
    assert (two["n"], two["tags"]) == (7, ["x"])
    assert three["at"].isoformat().startswith("2024-01-02T03:04:05")
    assert three["tags"] == ["solo"]  # a single value into a multi-value column: one element


def test_a_record_array_or_object_of_a_made_column_gives_way_to_the_transform(spark):
    """Pinot keeps a record's own value of a transform's column only when it is a scalar:
    over an array or object it runs the transform and stores its value unless that is an
    array or object too (apache/pinot@210c2951e72 ``ExpressionTransformer.transform``,
    lines 200-218, ``isTypeCompatible``). A null result replaces it too."""
    schema = {
        "schemaName": "people",
        "dimensionFieldSpecs": [
            {"name": "id", "dataType": "INT"},
            {"name": "name", "dataType": "STRING"},
            {"name": "up", "dataType": "STRING"},
            {"name": "n", "dataType": "LONG"},
            {"name": "tags", "dataType": "STRING", "singleValueField": False},
        ],
        "dateTimeFieldSpecs": SCHEMA["dateTimeFieldSpecs"],
    }
    table = copy.deepcopy(TABLE)
    table["ingestionConfig"] = {
        "transformConfigs": [
            {"columnName": "up", "transformFunction": "upper(name)"},
            {"columnName": "n", "transformFunction": "toEpochSeconds(ts)"},
            {"columnName": "tags", "transformFunction": "split(csv, ',')"},
        ]
    }
    records = [
        {"id": 1, "ts": TS, "name": "bob", "up": ["x"], "n": [7], "tags": ["x"], "csv": "a"},
        {"id": 2, "ts": TS, "name": "bob", "up": {"k": "v"}, "n": {"k": 7}, "csv": "a"},
        {"id": 3, "ts": TS, "up": ["x", "y"], "n": 7, "csv": "a"},
        {"id": 4, "ts": TS, "name": "bob", "up": "own", "n": 7, "csv": "a"},
    ]
    one, two, three, four = _rows(spark, table, schema, records)
    assert (one["up"], one["n"], one["tags"]) == ("BOB", TS // 1000, ["x"])  # arrays: own
    assert (two["up"], two["n"]) == ("BOB", TS // 1000)
    assert (three["up"], three["n"]) == ("null", 7)  # upper(null): null, the default
    assert (four["up"], four["n"]) == ("own", 7)  # scalars: the record's own
    # a chunk the Arrow path could read (no bad record) gives the same rows
    assert _rows(spark, table, schema, [records[0], records[3]]) == [one, four]


def _problems(table: Mapping, schema_doc: Mapping) -> list[tuple[str, str]]:
    with pytest.raises(PinotConfigError) as e:
        load_table(table, load_schema(schema_doc))
    return [(path, message) for _doc, path, message in e.value.problems]


def _with(transforms: list[dict], schema_transform: str | None = None) -> tuple[dict, dict]:
    table = copy.deepcopy(TABLE)
    table["ingestionConfig"] = {"transformConfigs": transforms}
    schema = copy.deepcopy(SCHEMA)
    schema["dimensionFieldSpecs"][3]["transformFunction"] = schema_transform or "upper(greeting)"
    return table, schema


def test_a_cycle_is_refused_by_name_as_pinot_refuses_it():
    table, schema = _with(
        [
            {"columnName": "greeting", "transformFunction": "concat('hi', fullName, ' ')"},
            {"columnName": "fullName", "transformFunction": "lower(shout)"},
        ]
    )
    [(path, message)] = _problems(table, schema)
    assert path == "ingestionConfig.transformConfigs[0]"
    assert "greeting → fullName → shout → greeting read each other in a cycle" in message
    assert (
        "Expression cycle found for column 'greeting' in Ingestion Transform Function "
        "definitions." in message
    )
    with pytest.raises(ChainError, match="a → b → a read each other in a cycle"):
        resolve({"a": "upper(b)", "b": "lower(a)"})
    assert set(resolve({"a": "upper(b)", "b": "lower(c)"})) == {"a", "b"}


def _doubling(depth: int) -> dict[str, str]:
    """Transforms ``c0`` … ``c<depth>``, each reading the one before twice: written out,
    each is twice the size of the one before."""
    transforms = {"c0": "upper(x)"}
    for i in range(1, depth + 1):
        transforms[f"c{i}"] = f"concat(c{i - 1}, c{i - 1}, '-')"
    return transforms


def test_a_chain_written_out_too_large_is_refused_at_its_path():
    """Each reading repeats what it reads: 30 transforms each reading the one before twice
    would be 2**30 times the first; refused before it is built whole."""
    transforms = _doubling(29)
    with pytest.raises(ChainError, match=f"over {MAX_SQL:,} characters") as e:
        resolve(transforms)
    assert e.value.column.startswith("c")
    table, schema = _with(
        [{"columnName": c, "transformFunction": f} for c, f in transforms.items()]
    )
    schema["dimensionFieldSpecs"].append({"name": "c29", "dataType": "STRING"})
    [(path, message)] = _problems(table, schema)
    assert path.startswith("ingestionConfig.transformConfigs[") and "characters" in message
    # a filter reading one transform many times is bounded the same way, at its own path
    table, schema = _with(
        [{"columnName": f"c{i}", "transformFunction": transforms[f"c{i}"]} for i in range(9)]
    )
    schema["dimensionFieldSpecs"].append({"name": "c8", "dataType": "STRING"})
    table["ingestionConfig"]["filterConfig"] = {
        "filterFunction": " OR ".join(["strcmp(c8, 'x') = 0"] * 40)
    }
    [(path, message)] = _problems(table, schema)
    assert path == "ingestionConfig.filterConfig.filterFunction" and "characters" in message


def test_the_sql_of_a_table_is_bounded_across_its_transforms():
    """A doubling chain ten deep read by 400 columns (25 KB of JSON) would write some 50 MB
    of SQL if each transform were bounded alone (each reader is 125 KB).
    The table's transforms share one budget, so it is refused at the first reader past
    it, and what an accepted table lowers to stays within the budget."""
    chain = _doubling(10)
    readers = {f"d{j}": "lower(c10)" for j in range(400)}
    table, schema = _with(
        [{"columnName": c, "transformFunction": f} for c, f in {**chain, **readers}.items()]
    )
    assert len(json.dumps(table)) < 25_000
    schema["dimensionFieldSpecs"] += [{"name": c, "dataType": "STRING"} for c in readers]
    [(path, message)] = _problems(table, schema)
    first = next(i for i, c in enumerate({**chain, **readers}) if c.startswith("d"))
    assert path.startswith("ingestionConfig.transformConfigs[")
    assert first < int(path.split("[")[1].rstrip("]")) < first + 10  # refused early
    assert f"over {MAX_SQL:,} characters" in message and "transform of column 'd" in message
    # as many readers as fit: accepted, and the lowered SQL is within the budget
    table["ingestionConfig"]["transformConfigs"] = table["ingestionConfig"]["transformConfigs"][
        : first + 4
    ]
    loaded = load_schema(schema)
    spec = lower(loaded, load_table(table, loaded))
    assert sum(len(sql) for _c, sql in spec.transform.assignments) < MAX_SQL


def test_what_aggregations_read_shares_the_tables_budget():
    """Each metric reading a transform's field writes that transform in again."""
    transforms = _doubling(11)  # c11: some 250 KB of SQL, c0 … c11 twice that
    table = {
        "tableName": "sales",
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "sales"},
        "tableIndexConfig": {"streamConfigs": STREAM, "noDictionaryColumns": ["a", "b", "c"]},
        "ingestionConfig": {
            "transformConfigs": [
                {"columnName": c, "transformFunction": f} for c, f in transforms.items()
            ],
            "aggregationConfigs": [
                {"columnName": m, "aggregationFunction": "COUNT(c11)"} for m in "abc"
            ],
        },
    }
    schema = {
        "schemaName": "sales",
        "dimensionFieldSpecs": [{"name": "shop", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": m, "dataType": "LONG"} for m in "abc"],
        "dateTimeFieldSpecs": SCHEMA["dateTimeFieldSpecs"],
    }
    [(path, message)] = _problems(table, schema)
    # the transforms fit; the second or third metric reading c11 again does not
    assert path in (
        "ingestionConfig.aggregationConfigs[1]",
        "ingestionConfig.aggregationConfigs[2]",
    )
    assert message.startswith("source field 'c11' of an aggregation: written out")


def test_nested_functions_that_repeat_their_argument_are_bounded():
    """``jsonFormat`` writes its argument 4 times: nested 12 deep, 145 characters would be
    some 800 MB of SQL; refused as it grows past the budget, at the transform's path.
    A CASE writes its subject again in each WHEN, bounded the same way."""
    nested = "x"
    for _ in range(12):
        nested = f"jsonFormat({nested})"
    table, schema = _with([{"columnName": "greeting", "transformFunction": nested}])
    [(path, message)] = _problems(table, schema)
    assert path == "ingestionConfig.transformConfigs[0]" and "characters" in message
    subject = "jsonFormat(jsonFormat(x))"
    case = f"CASE {subject} " + " ".join(f"WHEN '{i}' THEN {i}" for i in range(100)) + " END"
    assert translate(case, where="w", budget=Budget(limit=100_000)).sql
    with pytest.raises(TooLarge, match="w: written out as Spark SQL"):
        translate(case, where="w", budget=Budget(limit=50_000))


def _schema_problems(schema_doc: Mapping) -> list[tuple[str, str]]:
    with pytest.raises(PinotConfigError) as e:
        load_schema(schema_doc)
    return [(path, message) for _doc, path, message in e.value.problems]


def test_a_schemas_own_transforms_follow_pinots_schema_rule():
    """Pinot's ``SchemaUtils.validate``: a field's own transformFunction may not read its
    own column, nor a column another field's transformFunction makes. The same chain as
    transformConfigs is accepted (TABLE: a schema field reading a transformConfig's
    column too), as Pinot accepts it."""
    schema = copy.deepcopy(SCHEMA)
    schema["dimensionFieldSpecs"][3]["transformFunction"] = "upper(shout)"
    [(path, message)] = _schema_problems(schema)
    assert path == "dimensionFieldSpecs[3].transformFunction"
    assert "column 'shout' reads its own column" in message and "cycle" not in message
    assert (
        "The arguments of transform function upper(shout) should not contain the "
        "destination column shout" in message
    )
    schema["dimensionFieldSpecs"][1]["transformFunction"] = "concat('hi', fullName, ' ')"
    schema["dimensionFieldSpecs"][2]["transformFunction"] = "concat(first, last, ' ')"
    schema["dimensionFieldSpecs"][3]["transformFunction"] = "upper(greeting)"
    problems = _schema_problems(schema)
    assert [p for p, _m in problems] == [
        "dimensionFieldSpecs[1].transformFunction",
        "dimensionFieldSpecs[3].transformFunction",
    ]
    assert (
        "Columns: [fullName] are a result of transformations, and cannot be used as "
        "arguments to other transform functions" in problems[0][1]
    )
    assert "Columns: [greeting]" in problems[1][1] and "transformConfigs" in problems[1][1]
    # as transformConfigs (the fields' own moved there), the same chain is accepted
    schema = copy.deepcopy(SCHEMA)
    del schema["dimensionFieldSpecs"][3]["transformFunction"]
    table = copy.deepcopy(TABLE)
    table["ingestionConfig"]["transformConfigs"].append(
        {"columnName": "shout", "transformFunction": "upper(greeting)"}
    )
    loaded = load_schema(schema)
    assert dict(load_table(table, loaded).transforms)["shout"] == "upper(greeting)"


def test_a_time_specs_own_conversion_is_no_transform_of_the_rule():
    """A legacy timeFieldSpec whose specs differ is filled by Pinot's time converter, not
    a transformFunction: Pinot's schema rule does not count it, so a field's own
    transform may read the column it makes, and reads the converted value."""
    schema = {
        "schemaName": "people",
        "dimensionFieldSpecs": [
            {"name": "id", "dataType": "INT"},
            {"name": "label", "dataType": "STRING", "transformFunction": "concat(hours, 'h', '')"},
        ],
        "timeFieldSpec": {
            "incomingGranularitySpec": {"name": "days", "dataType": "LONG", "timeType": "DAYS"},
            "outgoingGranularitySpec": {"name": "hours", "dataType": "LONG", "timeType": "HOURS"},
        },
    }
    loaded = load_schema(schema)
    table = copy.deepcopy(TABLE)
    table["segmentsConfig"]["timeColumnName"] = "hours"
    table["ingestionConfig"] = {}
    sql = dict(lower(loaded, load_table(table, loaded)).transform.assignments)["label"]
    assert "`@days`" in sql
    # given as the time spec's own transformFunction, it counts
    schema["timeFieldSpec"]["transformFunction"] = "fromEpochDays(days) / 3600000"
    [(path, message)] = _schema_problems(schema)
    assert path == "dimensionFieldSpecs[1].transformFunction" and "Columns: [hours]" in message


def test_pinots_other_rules_for_transforms_each_at_its_path():
    table, schema = _with(
        [
            {"columnName": "greeting", "transformFunction": "upper(greeting)"},
            {"columnName": "fullName", "transformFunction": "concat(first, last, ' ')"},
            {"columnName": "fullName", "transformFunction": "upper(first)"},
            {"columnName": "nowhere", "transformFunction": "upper(first)"},
        ]
    )
    problems = _problems(table, schema)
    assert [p for p, _m in problems] == [
        "ingestionConfig.transformConfigs[0]",
        "ingestionConfig.transformConfigs[2]",
        "ingestionConfig.transformConfigs[3]",
    ]
    own, twice, nowhere = (m for _p, m in problems)
    assert (
        "Arguments of a transform function '[greeting]' cannot contain the destination "
        "column 'greeting'" in own
    )
    assert "Duplicate transform config found for column 'fullName'" in twice
    assert "has a transform at ingestionConfig.transformConfigs[1] already" in twice
    assert "schema 'people' has no column 'nowhere', and no transform" in nowhere
    assert "be consumed as the input of another transform function" in nowhere


def test_an_aggregation_reads_a_source_made_from_another_transform():
    table = {
        "tableName": "sales",
        "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": "sales"},
        "tableIndexConfig": {"streamConfigs": STREAM, "noDictionaryColumns": ["cents"]},
        "ingestionConfig": {
            "transformConfigs": [
                {"columnName": "price", "transformFunction": "jsonPathDouble(payload, '$.price')"},
                {"columnName": "price_cents", "transformFunction": "price * 100"},
            ],
            "aggregationConfigs": [
                {"columnName": "cents", "aggregationFunction": "SUM(price_cents)"}
            ],
        },
    }
    schema = {
        "schemaName": "sales",
        "dimensionFieldSpecs": [{"name": "shop", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "cents", "dataType": "DOUBLE"}],
        "dateTimeFieldSpecs": SCHEMA["dateTimeFieldSpecs"],
    }
    loaded = load_schema(schema)
    spec = lower(loaded, load_table(table, loaded))
    sql = dict(spec.transform.assignments)["cents"]
    assert "`@price_cents`" in sql and "`@price`" in sql and "`@payload`" in sql


def test_a_transforms_value_is_converted_into_its_column_as_pinot_converts_it(spark):
    """``DataTypeTransformer`` runs after ``ExpressionTransformer``
    (apache/pinot@210c2951e72 ``RecordTransformerUtils.getTransformers``), so a transform's
    value is converted by ``PinotDataType``: a double into an INT truncated
    (``DOUBLE.toInt``: ``Number.intValue``), text into BYTES as hex
    (``STRING.toBytes``); the record's own value of the column still wins."""
    schema = {
        "schemaName": "people",
        "dimensionFieldSpecs": [
            {"name": "id", "dataType": "INT"},
            {"name": "third", "dataType": "INT"},
            {"name": "raw", "dataType": "BYTES"},
        ],
        "dateTimeFieldSpecs": SCHEMA["dateTimeFieldSpecs"],
    }
    table = copy.deepcopy(TABLE)
    table["ingestionConfig"] = {
        "transformConfigs": [
            {"columnName": "third", "transformFunction": "id / 3"},
            {"columnName": "raw", "transformFunction": "lower(hx)"},
        ]
    }
    records = [
        {"id": 8, "ts": TS, "hx": "0A0B"},
        {"id": 9, "ts": TS, "hx": "0A0B", "third": "41", "raw": "ff"},
    ]
    one, two = _rows(spark, table, schema, records)
    assert (one["third"], one["raw"]) == (2, b"\x0a\x0b")
    assert (two["third"], two["raw"]) == (41, b"\xff")

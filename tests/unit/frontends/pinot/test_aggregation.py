"""Pinot's ingestion-time aggregation (``frontends.pinot.aggregation``):
``aggregationConfigs`` and ``aggregateMetrics`` parsed once, checked by Pinot's own rules
(``TableConfigUtils.validateMetricsAggregation``) with every problem at its JSON path, the
functions that map cleanly lowered into the sink's write mode ``aggregate``, the others
refused by name."""

from __future__ import annotations

import json
import pathlib

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.aggregation import normalized
from sparkpipes.frontends.pinot.lowering import lower, table_spec
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.pinot.problems import PinotConfigError
from sparkpipes.sinks.delta.upsert import Upsert

CORPUS = pathlib.Path(__file__).parents[3] / "corpus" / "pinot"
SALES = "apache-pinot/stream-dailySales-dailySales-realtime-table-config"
INSPECTOR = (
    "pinpoint/inspector-module-inspector-collector-pinot-inspector-stat-application-realtime-table"
)
MEMORY = "apache-pinot/pinot-controller-memory-estimation-table-config-for-upsert"


def _pair(item: str) -> tuple[dict, dict]:
    table = json.loads((CORPUS / f"{item}.table.json").read_text())
    schema = json.loads((CORPUS / f"{item}.schema.json").read_text())
    return table, schema


def _sales(**ingestion) -> tuple[dict, dict]:
    table, schema = _pair(SALES)
    table["ingestionConfig"].update(ingestion)
    return table, schema


def _problems(table: dict, schema: dict) -> list[tuple[str, str]]:
    with pytest.raises(PinotConfigError) as e:
        load_table(table, load_schema(schema))
    return [(path, message) for _doc, path, message in e.value.problems]


def test_daily_sales_rolls_up_sum_and_count_into_the_aggregate_write_mode():
    table, schema_doc = _pair(SALES)
    schema = load_schema(schema_doc)
    cfg = load_table(table, schema)
    assert [(m.column, m.function, m.source) for m in cfg.aggregation.metrics] == [
        ("total_sales", "SUM", "price"),
        ("sales_count", "COUNT", None),
    ]
    spec = lower(schema, cfg)
    assert spec.sink.write == "aggregate"
    assert spec.sink.config == {"aggregate": {"total_sales": "SUM", "sales_count": "SUM"}}
    assigned = dict(spec.transform.assignments)
    assert assigned["total_sales"] == "`@price`" and assigned["sales_count"] == "1"
    loaded = {m.column for m in spec.format.mapping}
    assert "@price" in loaded and "total_sales" not in loaded and "sales_count" not in loaded
    # an aggregated metric is never null-filled per record: a missing source is skipped
    columns = {c.name: c for c in table_spec(schema, cfg).columns}
    assert columns["total_sales"].fill is None and not columns["total_sales"].not_null
    assert columns["product_name"].fill is not None  # dimensions are filled, as Pinot's key


def test_sum_min_max_count_of_one_field_and_a_transform_making_the_source():
    table, schema_doc = _pair(INSPECTOR)
    # its own transform (DATETIME_CONVERT: test_datetime_convert.py) replaced by one making
    # the source field of the aggregations
    table["ingestionConfig"]["transformConfigs"] = [
        {"columnName": "fieldValue", "transformFunction": "times(raw, 2)"}
    ]
    schema = load_schema(schema_doc)
    cfg = load_table(table, schema)
    spec = lower(schema, cfg)
    assert spec.sink.config["aggregate"] == {
        "sumFieldValue": "SUM",
        "minFieldValue": "MIN",
        "maxFieldValue": "MAX",
        "countFieldValue": "SUM",
    }
    assigned = dict(spec.transform.assignments)
    assert "@raw" in assigned["sumFieldValue"] and "fieldValue" not in assigned
    assert assigned["countFieldValue"] == "1"
    assert "@raw" in {m.column for m in spec.format.mapping}


def test_count_of_a_field_counts_the_records_that_have_it():
    table, schema = _sales(
        aggregationConfigs=[
            {"columnName": "total_sales", "aggregationFunction": "sum(price)"},
            {"columnName": "sales_count", "aggregationFunction": "COUNT(price)"},
        ]
    )
    s = load_schema(schema)
    spec = lower(s, load_table(table, s))
    assert dict(spec.transform.assignments)["sales_count"] == (
        "CASE WHEN `@price` IS NULL THEN 0 ELSE 1 END"
    )


def test_a_fraction_into_an_integer_metric_is_cut_as_pinot_cuts_it():
    table, schema = _sales()
    schema["metricFieldSpecs"][1]["dataType"] = "LONG"  # total_sales
    s = load_schema(schema)
    sql = dict(lower(s, load_table(table, s)).transform.assignments)["total_sales"]
    assert sql == (
        "coalesce(CAST(CAST(try_cast(`@price` AS DOUBLE) AS BIGINT) AS STRING), "
        "CAST(`@price` AS STRING))"
    )


def test_aggregate_metrics_sums_every_metric_as_loaded():
    table, schema_doc = _pair(SALES)
    del table["ingestionConfig"]["aggregationConfigs"]
    table["tableIndexConfig"]["aggregateMetrics"] = "true"
    schema = load_schema(schema_doc)
    cfg = load_table(table, schema)
    assert cfg.aggregation.own_fields and cfg.aggregation.sources == frozenset()
    spec = lower(schema, cfg)
    assert spec.sink.config == {"aggregate": {"sales_count": "SUM", "total_sales": "SUM"}}
    # the metrics load from their own fields and are filled as any field (Pinot sums that)
    assert {"sales_count", "total_sales"} <= {m.column for m in spec.format.mapping}
    columns = {c.name: c for c in table_spec(schema, cfg).columns}
    assert columns["total_sales"].fill is not None


def test_aggregate_metrics_needs_a_boolean_and_numeric_metrics():
    table, schema = _pair(SALES)
    del table["ingestionConfig"]["aggregationConfigs"]
    table["tableIndexConfig"]["aggregateMetrics"] = "yes"
    assert _problems(table, schema) == [
        ("tableIndexConfig.aggregateMetrics", "aggregateMetrics must be true or false")
    ]
    table["tableIndexConfig"]["aggregateMetrics"] = True
    schema["metricFieldSpecs"][1]["dataType"] = "BIG_DECIMAL"
    assert _problems(table, schema) == [
        (
            "tableIndexConfig.aggregateMetrics",
            "aggregateMetrics sums INT, LONG, FLOAT and DOUBLE metrics; 'total_sales' is "
            "BIG_DECIMAL (Pinot fails its rows)",
        )
    ]


def test_pinots_rules_are_checked_all_at_once_each_at_its_json_path():
    table, schema = _pair(MEMORY)
    problems = [p for p in _problems(table, schema) if p[0] == "tableIndexConfig.aggregateMetrics"]
    messages = [m for _p, m in problems]
    assert "Metrics aggregation and upsert cannot be enabled together" in messages
    assert (
        "Metrics aggregation cannot be enabled with multi-value dimension column: colIntMV"
        in messages
    )
    assert any(
        m.startswith("Metric column: colDoubleMetric must be a no-dictionary") for m in messages
    )
    assert len(messages) == 8  # upsert, five multi-value dimensions, two dictionary metrics


@pytest.mark.parametrize(
    ("configs", "path", "message"),
    [
        (
            [{"columnName": "total_sales", "aggregationFunction": "DISTINCT_COUNT_HLL(price, 12)"}],
            "[0].aggregationFunction",
            "aggregation function DISTINCT_COUNT_HLL (column 'total_sales') is not supported: "
            "its value is Pinot's serialized HyperLogLog",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "AVG(price)"}],
            "[0].aggregationFunction",
            "AVG (column 'total_sales') is not supported",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "PERCENTILEEST95(price)"}],
            "[0].aggregationFunction",
            "is not supported: its value is Pinot's serialized QuantileDigest",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "MEDIAN(price)"}],
            "[0].aggregationFunction",
            "'MEDIAN' is not an aggregation function of Pinot's ingestion aggregation",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "SUMPRECISION(price, 20)"}],
            "[0].aggregationFunction",
            "SUMPRECISION of column 'total_sales' needs a metric of type BIG_DECIMAL",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "SUM(product_name)"}],
            "[0].aggregationFunction",
            "the source 'product_name' of column 'total_sales' is a column of the schema",
        ),
        (
            [{"columnName": "product_name", "aggregationFunction": "MAX(price)"}],
            "[0].columnName",
            "The destination column 'product_name' of the aggregation function must be a metric",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "SUM(1)"}],
            "[0].aggregationFunction",
            "First argument of aggregation function: SUM must be identifier",
        ),
        (
            [{"columnName": "total_sales", "aggregationFunction": "SUM(price, 2)"}],
            "[0].aggregationFunction",
            "SUM of column 'total_sales' takes 1 to 1 arguments",
        ),
    ],
)
def test_each_function_maps_cleanly_or_is_refused_by_name(configs, path, message):
    configs = [*configs, {"columnName": "sales_count", "aggregationFunction": "COUNT(*)"}]
    table, schema = _sales(aggregationConfigs=configs)
    problems = _problems(table, schema)
    where = f"ingestionConfig.aggregationConfigs{path}"
    assert any(p == where and message in m for p, m in problems), problems


def test_every_metric_aggregated_once_and_not_both_forms():
    table, schema = _sales(
        aggregationConfigs=[
            {"columnName": "sales_count", "aggregationFunction": "COUNT(*)"},
            {"columnName": "sales_count", "aggregationFunction": "SUM(n)"},
        ]
    )
    table["tableIndexConfig"]["aggregateMetrics"] = True
    table["dedupConfig"] = {"dedupEnabled": True}
    problems = _problems(table, schema)
    messages = [m for _p, m in problems]
    assert "Duplicate aggregation config found for column 'sales_count'" in messages
    assert "all metric columns must be aggregated (not aggregated: total_sales)" in messages
    assert (
        "Metrics aggregation cannot be enabled in the Indexing Config and Ingestion Config at "
        "the same time" in messages
    )
    assert "Metrics aggregation and dedup cannot be enabled together" in messages


def test_a_metric_with_a_dictionary_is_refused_as_pinot_refuses_it():
    table, schema = _sales()
    table["tableIndexConfig"]["noDictionaryColumns"] = ["sales_count"]
    problems = _problems(table, schema)
    assert problems == [
        (
            "ingestionConfig.aggregationConfigs",
            "Metric column: total_sales must be a no-dictionary column when metrics aggregation "
            "is enabled (list it in tableIndexConfig.noDictionaryColumns)",
        )
    ]
    # a fieldConfigList entry with RAW encoding is without a dictionary too
    table["fieldConfigList"] = [{"name": "total_sales", "encodingType": "RAW"}]
    assert load_table(table, load_schema(schema)).aggregation is not None


def test_function_names_are_matched_as_pinot_matches_them():
    assert normalized("distinct_count_hll") == "DISTINCTCOUNTHLL"
    assert normalized("Sum") == "SUM"


def test_the_sink_aggregates_by_every_column_not_aggregated():
    u = Upsert.of((), "aggregate", {"aggregate": {"m": "SUM", "lo": "MIN"}}, ["d", "t", "m", "lo"])
    assert u.keys == ("d", "t")
    assert u.predicate() == (
        "(t.`d` IS NOT DISTINCT FROM s.`d`) AND (t.`t` IS NOT DISTINCT FROM s.`t`)"
    )
    for bad, message in [
        ({"aggregate": {"m": "AVG"}}, "aggregate function 'AVG' of column 'm' is not one of"),
        ({"aggregate": {"x": "SUM"}}, "aggregate names column 'x', which the table lacks"),
        ({"aggregate": {"d": "SUM", "t": "SUM", "m": "SUM", "lo": "SUM"}}, "not aggregated"),
        ({"aggregate": {"m": "SUM"}, "delete": "d"}, "the one sink option 'aggregate'"),
    ]:
        with pytest.raises(ConfigError, match=message):
            Upsert.of((), "aggregate", bad, ["d", "t", "m", "lo"])

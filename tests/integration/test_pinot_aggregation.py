"""Pinot's ingestion-time aggregation on the real broker: ``aggregationConfigs`` roll the
rows of equal dimension and time values up into one, SUM / MIN / MAX / COUNT as Pinot's
value aggregators compute them, and a later batch's rows are combined with the rows the
table holds, in that batch's one commit — a batch committed twice (a retry) counts once."""

from __future__ import annotations

from tests.integration.test_pinot_tables import load, produce, schema, table_config

DIMS = [{"name": "city", "dataType": "STRING"}]
METRICS = [
    {"name": "total", "dataType": "DOUBLE"},
    {"name": "lo", "dataType": "DOUBLE"},
    {"name": "hi", "dataType": "DOUBLE"},
    {"name": "n", "dataType": "LONG"},
    {"name": "priced", "dataType": "INT"},
]
AGGREGATIONS = [
    {"columnName": "total", "aggregationFunction": "SUM(price)"},
    {"columnName": "lo", "aggregationFunction": "MIN(price)"},
    {"columnName": "hi", "aggregationFunction": "MAX(price)"},
    {"columnName": "n", "aggregationFunction": "COUNT(*)"},
    {"columnName": "priced", "aggregationFunction": "COUNT(price)"},
]
INF = float("inf")


def _record(city, ts, price=None):
    value = {"ts": ts} if city is None else {"city": city, "ts": ts}
    if price is not None:
        value["price"] = price
    return (None, value, None)


def _rolled(engine):
    """(city, ts) → (total, lo, hi, n, priced): one row per group, as a query sees it."""
    got = engine.table_arrow("t").to_pylist()
    out = {(r["city"], r["ts"]): (r["total"], r["lo"], r["hi"], r["n"], r["priced"]) for r in got}
    assert len(out) == len(got), got  # one row per dimension and time combination
    return out


def test_rollup_across_batches_is_what_pinot_holds_and_a_retried_batch_counts_once(
    engine, broker, topic
):
    t = table_config(broker, topic)
    t["tableIndexConfig"]["noDictionaryColumns"] = [m["name"] for m in METRICS]
    t["ingestionConfig"] = {"aggregationConfigs": AGGREGATIONS}
    t["tableIndexConfig"]["nullHandlingEnabled"] = True  # a record without a city: NULL
    produce(
        broker,
        topic,
        [
            _record("a", 1000, 2.5),
            _record("a", 1000, 4),
            _record("b", 1000, 1),
            _record("a", 2000, 7),
            _record("b", 1000),  # no price: counted by COUNT(*), skipped by the others
            _record("d", 1000),  # a group without a price: Pinot's start values
            _record(None, 1000, 1),
        ],
    )
    load(engine, t, schema(DIMS, METRICS))
    assert _rolled(engine) == {
        ("a", 1000): (6.5, 2.5, 4.0, 2, 2),
        ("b", 1000): (1.0, 1.0, 1.0, 2, 1),
        ("a", 2000): (7.0, 7.0, 7.0, 1, 1),
        ("d", 1000): (0.0, INF, -INF, 1, 0),
        (None, 1000): (1.0, 1.0, 1.0, 1, 1),
    }

    # the next batch meets the stored rows: SUM and COUNT add, MIN and MAX compare
    produce(
        broker,
        topic,
        [
            _record("a", 1000, 10),
            _record("b", 1000, -3),
            _record("c", 1000, 5),
            _record("d", 1000, 4),
            _record(None, 1000, 2),  # NULL meets the stored NULL
        ],
    )
    runner = engine._runner("t_REALTIME")
    plan = runner.plan()
    assert runner.commit(runner.extract(plan)).state == "Succeeded"
    # the same batch again (a retry, as after a failure once its commit was made): the
    # table's app transaction says it is there, so nothing is merged twice
    assert runner.commit(runner.extract(plan, attempt=2), attempt=2).state == "Replayed"
    engine.run_batches("t_REALTIME", 5, until_idle=True)
    assert _rolled(engine) == {
        ("a", 1000): (16.5, 2.5, 10.0, 3, 3),
        ("b", 1000): (-2.0, -3.0, 1.0, 3, 2),
        ("a", 2000): (7.0, 7.0, 7.0, 1, 1),
        ("c", 1000): (5.0, 5.0, 5.0, 1, 1),
        ("d", 1000): (4.0, 4.0, 4.0, 2, 1),
        (None, 1000): (3.0, 1.0, 2.0, 2, 2),
    }


def test_aggregate_metrics_sums_every_metric_over_equal_dimensions(engine, broker, topic):
    t = table_config(broker, topic)
    t["tableIndexConfig"]["aggregateMetrics"] = True
    t["tableIndexConfig"]["noDictionaryColumns"] = ["clicks", "spend"]
    metrics = [{"name": "clicks", "dataType": "LONG"}, {"name": "spend", "dataType": "DOUBLE"}]
    produce(
        broker,
        topic,
        [
            (None, {"city": "a", "ts": 1, "clicks": 2, "spend": 1.5}, None),
            (None, {"city": "a", "ts": 1, "clicks": 3}, None),  # spend: its default, 0
            (None, {"city": "b", "ts": 1, "clicks": 1, "spend": 2.0}, None),
        ],
    )
    load(engine, t, schema(DIMS, metrics))
    produce(broker, topic, [(None, {"city": "a", "ts": 1, "clicks": 5, "spend": 1.0}, None)])
    engine.run_batches("t_REALTIME", 5, until_idle=True)
    got = {
        (r["city"], r["ts"]): (r["clicks"], r["spend"]) for r in engine.table_arrow("t").to_pylist()
    }
    assert got == {("a", 1): (10, 2.5), ("b", 1): (1, 2.0)}

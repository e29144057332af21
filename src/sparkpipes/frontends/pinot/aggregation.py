"""Pinot's ingestion-time aggregation, checked into a frozen :class:`IngestionAggregation`:
``ingestionConfig.aggregationConfigs`` (``{"columnName": "total", "aggregationFunction":
"SUM(price)"}``) and the older ``tableIndexConfig.aggregateMetrics: true`` (every metric
the SUM of its own field).

What Pinot does (``MutableSegmentImpl``, ``ValueAggregatorFactory``): rows with equal
values of every dimension and dateTime column share one row, whose metrics are their
aggregates; a missing source value is skipped (the first row of a key holds the
function's start: SUM 0, COUNT 0, MIN +Infinity, MAX -Infinity); ``COUNT(*)`` counts
rows. Pinot does this within a consuming segment; here the row is also combined with the
row the table holds for the same values, in the batch's one commit (the sink's write mode
``aggregate``, ``sinks.delta.aggregates``).

The rules Pinot's controller checks (``TableConfigUtils.validateMetricsAggregation``) are
checked here with its words: not both forms, no upsert or dedup, single-value dimensions
and metrics, metrics without a dictionary, every metric aggregated, each destination a
metric aggregated once, functions with the arguments they take. Pinot's documentation
adds that a source must not be a schema column. :data:`FUNCTIONS` holds what maps onto
the table's numbers; :data:`REFUSED` the functions whose values are Pinot's serialized
sketches and pairs, refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkpipes.frontends.pinot.problems import Problems

if TYPE_CHECKING:
    from sparkpipes.frontends.pinot.schema import PinotSchema

_NUMBERS = ("INT", "LONG", "FLOAT", "DOUBLE")


@dataclass(frozen=True)
class Function:
    """A Pinot aggregation function that maps onto the table's numbers: the sink's
    aggregate (``sinks.delta.aggregates.AGGREGATES``), each row's value from the SQL of
    its source (None: ``*``), how many arguments it takes, the destination types; whether
    a fraction into an INT or LONG metric is cut (Pinot keeps those as its aggregate, a
    double, cast to the column's type)."""

    sink: str
    value: Callable[[str | None], str]
    arguments: tuple[int, int] = (1, 1)
    types: tuple[str, ...] = _NUMBERS
    cuts: bool = True


def _source(sql: str | None) -> str:
    return sql or "NULL"


#: Pinot's name (upper case, no underscores) → how it is computed here
FUNCTIONS: dict[str, Function] = {
    "SUM": Function("SUM", _source),
    "MIN": Function("MIN", _source),
    "MAX": Function("MAX", _source),
    # each row counts 1 (COUNT(*)) or 1 when its value is there; the counts are summed
    "COUNT": Function(
        "SUM",
        lambda v: "1" if v is None else f"CASE WHEN {v} IS NULL THEN 0 ELSE 1 END",
        cuts=False,
    ),
    # SUMPRECISION(col, precision[, scale]): a BIG_DECIMAL sum (Pinot does not round it)
    "SUMPRECISION": Function("SUM", _source, (2, 3), ("BIG_DECIMAL",), cuts=False),
}


def per_record(function: str, source: str | None, data_type: str) -> str:
    """The Spark SQL of one record's value of a metric ``function`` aggregates, from the
    SQL of its ``source`` field (None: ``*``) into a metric of Pinot ``data_type``. A
    fraction into an INT or LONG metric is cut toward zero, as Pinot's cast of its running
    aggregate cuts it (the same unless a group mixes signs); text that is no number is
    left to the column's checked cast, a record error as in Pinot."""
    fn = FUNCTIONS[function]
    if source is not None and fn.cuts and data_type in ("INT", "LONG"):
        cut = f"CAST(CAST(try_cast({source} AS DOUBLE) AS BIGINT) AS STRING)"
        source = f"coalesce({cut}, CAST({source} AS STRING))"
    return fn.value(source)


_SKETCH = "its value is Pinot's serialized {} in a BYTES column, which only Pinot reads"
_MV = "it reads a multi-value field, and a rolled-up table has single-value columns"
#: functions Pinot has for ingestion aggregation that are refused here, and why
REFUSED: dict[str, str] = {
    **dict.fromkeys(("DISTINCTCOUNTHLL", "DISTINCTCOUNTRAWHLL"), _SKETCH.format("HyperLogLog")),
    **dict.fromkeys(
        ("DISTINCTCOUNTHLLPLUS", "DISTINCTCOUNTRAWHLLPLUS"), _SKETCH.format("HyperLogLogPlus")
    ),
    **dict.fromkeys(("DISTINCTCOUNTULL", "DISTINCTCOUNTRAWULL"), _SKETCH.format("UltraLogLog")),
    **dict.fromkeys(
        ("DISTINCTCOUNTTHETASKETCH", "DISTINCTCOUNTRAWTHETASKETCH"), _SKETCH.format("Theta sketch")
    ),
    **dict.fromkeys(
        (
            "DISTINCTCOUNTTUPLESKETCH",
            "DISTINCTCOUNTRAWINTEGERSUMTUPLESKETCH",
            "AVGVALUEINTEGERSUMTUPLESKETCH",
            "SUMVALUESINTEGERSUMTUPLESKETCH",
        ),
        _SKETCH.format("Tuple sketch"),
    ),
    **dict.fromkeys(
        ("DISTINCTCOUNTCPCSKETCH", "DISTINCTCOUNTRAWCPCSKETCH"), _SKETCH.format("CPC sketch")
    ),
    "DISTINCTCOUNTBITMAP": _SKETCH.format("RoaringBitmap"),
    "AVG": _SKETCH.format("AvgPair (sum and count)"),
    "MINMAXRANGE": _SKETCH.format("MinMaxRangePair"),
    "PERCENTILE": _SKETCH.format("QuantileDigest or TDigest"),
    **dict.fromkeys(("SUMMV", "COUNTMV", "AVGMV"), _MV),
}


@dataclass(frozen=True)
class MetricAggregation:
    """One metric column: ``function`` (Pinot's name, upper case, no underscores) of the
    record field ``source`` (None: ``COUNT(*)``)."""

    column: str
    function: str
    source: str | None


@dataclass(frozen=True)
class IngestionAggregation:
    """The metrics aggregated; ``own_fields``: ``aggregateMetrics``, each metric the SUM of
    its own field (loaded and null-filled as any field), not of another record field."""

    metrics: tuple[MetricAggregation, ...]
    own_fields: bool = False

    @property
    def sources(self) -> frozenset[str]:
        """The record fields the aggregations read (not columns of the table)."""
        if self.own_fields:
            return frozenset()
        return frozenset(m.source for m in self.metrics if m.source is not None)

    def sink_functions(self) -> dict[str, str]:
        """Column → the sink's aggregate (``SinkSpec.config["aggregate"]``)."""
        return {m.column: FUNCTIONS[m.function].sink for m in self.metrics}


def normalized(name: str) -> str:
    """A function name as Pinot matches it: upper case, without ``_`` and ``$``."""
    return name.replace("_", "").replace("$", "").upper()


_CALL = re.compile(r"\s*([A-Za-z_$][A-Za-z0-9_$]*)\s*\((.*)\)\s*", re.S)
_IDENTIFIER = re.compile(r'[A-Za-z_$][A-Za-z0-9_$.]*|"(?:[^"]|"")+"|`[^`]+`')


def _is_true(v: Any) -> bool:
    return v is True or str(v).lower() == "true"


def aggregation_config(
    index: Mapping[str, Any],
    ingestion: Mapping[str, Any],
    raw: Mapping[str, Any],
    schema: PinotSchema | None,
    *,
    upsert: bool,
    dedup: bool,
    found: Problems,
) -> IngestionAggregation | None:
    """The table's ingestion aggregation (None without one); every problem goes to
    ``found`` at its JSON path."""
    flag = index.get("aggregateMetrics", False)
    if flag not in (True, False, "true", "false"):
        found.add("tableIndexConfig.aggregateMetrics", "aggregateMetrics must be true or false")
    legacy = _is_true(flag)
    configs = ingestion.get("aggregationConfigs")
    where = "ingestionConfig.aggregationConfigs"
    if configs is not None and not isinstance(configs, list):
        found.add(where, f"{where} must be a list")
        configs = None
    if not legacy and not configs:
        return None
    at = "tableIndexConfig.aggregateMetrics" if legacy else where
    if legacy and configs:
        found.add(
            at,
            "Metrics aggregation cannot be enabled in the Indexing Config and Ingestion "
            "Config at the same time",
        )
    if upsert:
        found.add(at, "Metrics aggregation and upsert cannot be enabled together")
    if dedup:
        found.add(at, "Metrics aggregation and dedup cannot be enabled together")
    if schema is not None:
        _check_columns(index, raw, schema, at, found)
    if legacy and not configs:
        metrics = schema.fields if schema is not None else ()
        for f in metrics:
            if f.role == "metric" and f.data_type not in _NUMBERS:
                found.add(
                    at,
                    f"aggregateMetrics sums INT, LONG, FLOAT and DOUBLE metrics; '{f.name}' "
                    f"is {f.data_type} (Pinot fails its rows)",
                )
        return IngestionAggregation(
            tuple(MetricAggregation(f.name, "SUM", f.name) for f in metrics if f.role == "metric"),
            own_fields=True,
        )
    out = [m for i, c in enumerate(configs or []) if (m := _one(c, f"{where}[{i}]", schema, found))]
    columns = [m.column for m in out]
    for c in sorted({c for c in columns if columns.count(c) > 1}):
        found.add(where, f"Duplicate aggregation config found for column '{c}'")
    if schema is not None:
        missing = [f.name for f in schema.fields if f.role == "metric" and f.name not in columns]
        if missing:
            found.add(
                where,
                f"all metric columns must be aggregated (not aggregated: {', '.join(missing)})",
            )
    return IngestionAggregation(tuple(out))


def _check_columns(
    index: Mapping[str, Any], raw: Mapping[str, Any], schema: PinotSchema, at: str, found: Problems
) -> None:
    raw_columns = _no_dictionary(index, raw)
    for f in schema.fields:
        role = {"metric": "metric", "dimension": "dimension"}.get(f.role)
        if role and not f.single_value:
            found.add(
                at,
                f"Metrics aggregation cannot be enabled with multi-value {role} column: {f.name}",
            )
        if f.role == "metric" and f.name not in raw_columns:
            found.add(
                at,
                f"Metric column: {f.name} must be a no-dictionary column when metrics "
                "aggregation is enabled (list it in tableIndexConfig.noDictionaryColumns)",
            )


def _no_dictionary(index: Mapping[str, Any], raw: Mapping[str, Any]) -> set[str]:
    """The columns Pinot keeps without a dictionary: ``noDictionaryColumns``,
    ``noDictionaryConfig``, a ``fieldConfigList`` entry with ``encodingType`` RAW or its
    dictionary index disabled."""
    out = {str(c) for c in index.get("noDictionaryColumns") or () if isinstance(c, str)}
    config = index.get("noDictionaryConfig")
    out |= {str(c) for c in config} if isinstance(config, Mapping) else set()
    fields = raw.get("fieldConfigList")
    for fc in fields if isinstance(fields, list) else ():
        if not isinstance(fc, Mapping) or not isinstance(fc.get("name"), str):
            continue
        indexes = fc.get("indexes") if isinstance(fc.get("indexes"), Mapping) else {}
        dictionary = indexes.get("dictionary") if isinstance(indexes, Mapping) else None
        if str(fc.get("encodingType", "")).upper() == "RAW" or (
            isinstance(dictionary, Mapping) and _is_true(dictionary.get("disabled"))
        ):
            out.add(fc["name"])
    return out


def _one(
    c: Any, where: str, schema: PinotSchema | None, found: Problems
) -> MetricAggregation | None:
    """One ``aggregationConfigs`` entry, checked (None when it has a problem)."""
    if not isinstance(c, Mapping):
        found.add(where, f"{where} must be an object with columnName and aggregationFunction")
        return None
    found.sort(c, ("columnName", "aggregationFunction"), "aggregationConfig", where)
    column, text = c.get("columnName"), c.get("aggregationFunction")
    if not isinstance(column, str) or not isinstance(text, str) or not column or not text:
        found.add(where, "columnName/aggregationFunction cannot be null in AggregationConfig")
        return None
    spec = None
    if schema is not None:
        spec = next((f for f in schema.fields if f.name == column), None)
        if spec is None:
            found.add(
                f"{where}.columnName",
                f"The destination column '{column}' of the aggregation function must be "
                f"present in the schema '{schema.name}'",
            )
            return None
        if spec.role != "metric":
            found.add(
                f"{where}.columnName",
                f"The destination column '{column}' of the aggregation function must be a "
                "metric column",
            )
            return None
    at = f"{where}.aggregationFunction"
    call = _CALL.fullmatch(text)
    if call is None:
        found.add(at, f"Invalid aggregation function '{text}' for column '{column}'")
        return None
    name = normalized(call.group(1))
    args = [a.strip() for a in call.group(2).split(",")] if call.group(2).strip() else []
    fn = FUNCTIONS.get(name)
    if fn is None:
        why = REFUSED.get("PERCENTILE" if name.startswith("PERCENTILE") else name)
        found.add(
            at,
            f"aggregation function {call.group(1).upper()} (column '{column}') is not "
            f"supported: {why}"
            if why
            else f"'{call.group(1)}' is not an aggregation function of Pinot's ingestion "
            f"aggregation (supported: {', '.join(FUNCTIONS)})",
        )
        return None
    low, high = fn.arguments
    if not low <= len(args) <= high:
        found.add(at, f"{name} of column '{column}' takes {low} to {high} arguments: {text}")
        return None
    if any(not a.isdigit() for a in args[1:]):
        found.add(at, f"the arguments of {name} after the first must be numbers: {text}")
        return None
    source = _identifier(args[0]) if args else None
    if source is None and not (name == "COUNT" and args == ["*"]):
        found.add(at, f"First argument of aggregation function: {name} must be identifier: {text}")
        return None
    if spec is not None and spec.data_type not in fn.types:
        found.add(
            at,
            f"{name} of column '{column}' needs a metric of type {' or '.join(fn.types)}, "
            f"not {spec.data_type}",
        )
        return None
    if schema is not None and source is not None and source in schema.names:
        found.add(
            at,
            f"the source '{source}' of column '{column}' is a column of the schema; Pinot "
            "requires an aggregation's source field not to be one",
        )
        return None
    return MetricAggregation(column, name, source)


def _identifier(arg: str) -> str | None:
    if not _IDENTIFIER.fullmatch(arg):
        return None
    if arg[0] in '"`':
        return arg[1:-1].replace('""', '"')
    return arg

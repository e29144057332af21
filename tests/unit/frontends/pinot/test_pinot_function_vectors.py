"""Pinot ingestion expressions against **Pinot's own test vectors**: the input / expected
values of Pinot's function tests (``tests/corpus/pinot/functions/*.yaml``, each case with
its source file, commit and test method), computed by a real Spark session over a record's
text fields, as a pipeline computes them.

A case is one of:

* a value: ``translate(expr)`` evaluated over ``record`` must be Pinot's ``expected``, of
  Pinot's Java ``type`` (a number Pinot returns as a ``double`` must be a DOUBLE here, not a
  BIGINT: a STRING column would hold ``3.0`` in Pinot, ``3`` here). A record field that is
  passed through unchanged is text; it must then be Java's text of the value.
* ``error``: Pinot's function throws for this input, so Pinot's evaluator fails the
  record; sparkpipes gives NULL (a value that does not convert is NULL, never another
  value), and the translation's ``fails`` is true for the record (the lowering rejects
  it, as Pinot drops it). Every value case's ``fails`` is false: a record Pinot loads is
  never rejected.
* ``refused``: a function (or type) sparkpipes does not support; ``translate`` must refuse
  the expression with a ConfigError naming it, never accept it with another value.
"""

from __future__ import annotations

import functools
import json
import math
import pathlib
from decimal import Decimal
from typing import Any

import pytest
import yaml

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import translate

CORPUS = pathlib.Path(__file__).parents[3] / "corpus" / "pinot" / "functions"
WHERE = "transformConfigs[0] (column 'out')"


def _load() -> list[tuple[str, int, dict[str, Any]]]:
    cases = []
    for path in sorted(CORPUS.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for i, c in enumerate(doc["cases"]):
            cases.append((path.name, i, c))
    return cases


CASES = _load()
_IDS = [f"{f.removesuffix('.yaml')}[{i}]:{c['expr'][:60]}" for f, i, c in CASES]


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def _java_text(value: Any) -> str:
    """Java's ``String.valueOf`` of a scalar Pinot value (as a STRING column holds it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    return str(value)


def _same(got: Any, want: Any, kind: str, text: bool) -> bool:
    """Whether ``got`` (from Spark) is Pinot's ``want`` of Java type ``kind``; ``text``:
    the result is a record field's text passed through."""
    if want is None:
        return got is None
    if got is None:
        return False
    if kind == "array":
        if isinstance(got, str):
            got = json.loads(got)
        if not isinstance(got, list) or len(got) != len(want):
            return False
        return all(_element(g, w) for g, w in zip(got, want))
    if kind == "bytes":
        return isinstance(got, bytes | bytearray) and bytes(got).hex() == want
    if text and isinstance(got, str) and kind != "string":
        return got == _java_text(want)
    if kind in ("double", "float"):
        if not isinstance(got, float):
            return False
        if math.isnan(want) or math.isinf(want):
            return _java_text(got) == _java_text(want)
        return got == pytest.approx(want, rel=1e-6 if kind == "float" else 1e-12)
    if kind in ("int", "long"):
        return type(got) is int and got == want
    if kind == "big_decimal":
        return isinstance(got, Decimal) and got == Decimal(str(want))
    if kind == "boolean":
        return got is want
    return isinstance(got, str) and got == want


def _element(got: Any, want: Any) -> bool:
    """An element of an array result: a scalar as Java's text of it, a nested list or map
    (Pinot's List / Map element) as the same JSON."""
    if isinstance(want, list | dict):
        try:
            return json.loads(got) == want
        except (TypeError, ValueError):
            return False
    return got == _java_text(want)


def _evaluate(spark, sqls: list[str], records: list[dict[str, str | None]]) -> list[Any]:
    """The value of ``sqls[i]`` over ``records[i]``, for every i, in one Spark job: one row
    per case (fields it lacks are NULL), each SQL evaluated on every row, the diagonal kept."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    names = sorted({n for r in records for n in r})
    schema = StructType(
        [StructField("#", IntegerType())] + [StructField("@" + n, StringType()) for n in names]
    )
    rows = [(i, *(r.get(n) for n in names)) for i, r in enumerate(records)]
    df = spark.createDataFrame(rows, schema)
    picked = [f"CASE WHEN `#` = {i} THEN ({s}) END AS `c{i}`" for i, s in enumerate(sqls)]
    out = {r["#"]: r for r in df.selectExpr("`#`", *picked).collect()}
    return [out[i][f"c{i}"] for i in range(len(sqls))]


@functools.cache
def _values(spark: Any, name: str) -> dict[int, Any]:
    """The values sparkpipes computes for the evaluated cases of one corpus file."""
    todo, refused = [], {}
    for f, i, c in CASES:
        if f == name and "refused" not in c:
            try:
                todo.append((i, c, translate(c["expr"], where=WHERE)))
            except ConfigError as e:  # the case fails with it
                refused[i] = e
    records = [c["record"] for _, c, _ in todo]
    got = _evaluate(spark, [e.sql for _, _, e in todo], records)
    fails = _evaluate(
        spark, [f"coalesce(({e.fails or 'false'}), false)" for _, _, e in todo], records
    )
    values: dict[int, Any] = {
        i: (g, e.type, f) for (i, _, e), g, f in zip(todo, got, fails, strict=True)
    }
    return {**values, **refused}


@pytest.mark.parametrize(("name", "index", "case"), CASES, ids=_IDS)
def test_pinot_vector(spark, name, index, case):
    where = f"{case['test']} in {name}: {case['expr']!r} over {case['record']}"
    if "refused" in case:
        with pytest.raises(ConfigError) as e:
            translate(case["expr"], where=WHERE)
        message = e.value.message
        assert message.startswith(WHERE), message
        assert case["refused"].lower() in message.lower(), (where, message)
        return
    value = _values(spark, name)[index]
    if isinstance(value, ConfigError):
        pytest.fail(f"{where}: refused, Pinot gives {case.get('expected')!r}: {value}")
    got, kind, fails = value
    want = None if "error" in case else case["expected"]
    text = kind in (None, "STRING")
    assert _same(got, want, case["type"], text), f"{where}: got {got!r}, Pinot {want!r}"
    # Pinot throws exactly for the error cases: those records are rejected, no others
    assert fails is ("error" in case), f"{where}: fails is {fails}, Pinot throws: {'error' in case}"


def test_every_case_names_its_source():
    for name, _, case in CASES:
        assert {"test", "expr", "record", "type"} <= set(case), (name, case)
    for path in CORPUS.glob("*.yaml"):
        source = yaml.safe_load(path.read_text())["source"]
        assert source["repo"] == "apache/pinot" and len(source["commit"]) == 40, path

"""Running a checked query of the JVM-free path (``quick``): DataFusion (``deltalake``'s
``QueryBuilder``) executes the SQL ``quick_plan`` wrote, and its columns become the rows
Spark would return, with the same Python values (a decimal average recomputed as Spark
rounds it, decimals as PySpark hands them over). A result type that would not deliver them
raises ``_Fallback``. Imports pyarrow and deltalake on use only.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sparkpipes.frontends.singlestore.quick_values import _T, _delivers, _Fallback, _Item
from sparkpipes.frontends.singlestore.results import Result


def run(delta: Any, items: list[_Item], sql: str) -> Result:
    """The result of ``sql`` over table ``q`` (the Delta snapshot ``delta``), one column per
    select-list item of ``items``."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    reader = QueryBuilder().register("q", delta).execute(sql)
    table = pa.RecordBatchReader.from_stream(reader).read_all()
    columns = []
    for k, item in enumerate(items):
        e = item.e
        if e.avg_of is not None:
            total, n = table.column(f"c{k}"), table.column(f"n{k}")
            if not _delivers(total.type, _T("dec", e.t.p + 6, e.t.s - 4)):
                raise _Fallback
            values = [
                _as_spark(_spark_avg(v, c, e.t.s))
                for v, c in zip(total.to_pylist(), n.to_pylist(), strict=True)
            ]
        else:
            col = table.column(f"c{k}")
            if not _delivers(col.type, e.t):
                raise _Fallback
            values = col.to_pylist()
        if e.t.kind == "dec":
            values = [_as_spark(v) for v in values]
        columns.append(values)
    rows = list(zip(*columns, strict=True)) if table.num_rows else []
    return Result([i.name for i in items], rows)


def _spark_avg(total: Decimal | None, n: int, scale: int) -> Decimal | None:
    """Spark's avg of a DECIMAL column from its sum and count: the quotient rounded half up
    to 38 places, then to ``scale`` (of Spark's result type, the column's scale + 4)."""
    if total is None or not n:
        return None
    sign, digits, exponent = total.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    q38 = _div_half_up(unscaled * 10 ** (38 + int(exponent)), n)
    q = _div_half_up(q38, 10 ** (38 - scale))
    return Decimal(f"{q}E-{scale}")


def _as_spark(v: Decimal | None) -> Decimal | None:
    """``v`` as PySpark hands it over: through Java's engineering notation, so 1E-20 of a
    DECIMAL(38, 20) arrives as Decimal('1.0E-20') (equal, but printed differently)."""
    if v is None or "E" not in str(v):
        return v
    return Decimal(v.to_eng_string())


def _div_half_up(a: int, b: int) -> int:
    q, r = divmod(abs(a), b)
    if 2 * r >= b:
        q += 1
    return q if a >= 0 else -q

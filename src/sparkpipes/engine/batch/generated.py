"""``AUTO_INCREMENT`` values: a row that gives the column no value (NULL, 0, or a load
that does not name the column) gets the next one, as in SingleStore and MySQL.

Values come from the table's counter in the catalog (``Tables.reserve_ids``): one range
per batch or INSERT, reserved just before its rows are written, so engines sharing the
catalog never hand out the same value. Values are unique and rise from batch to batch,
but are not consecutive: a batch that fails after reserving leaves a gap, as SingleStore's
aggregators do. A value a row gives itself moves the counter past it (MySQL's rule; a
SingleStore sharded table waits for ``AGGREGATOR SYNC AUTO_INCREMENT``), so a later
generated value never repeats one that was loaded.

Numbering is one Spark job that counts the rows without a value, then a window in the
rows' order (their source partition and offset for a pipeline), so a batch run again
numbers the same rows the same way within its range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sparkpipes.catalog import TableRecord
from sparkpipes.errors import ConfigError

#: the first value each integer type cannot hold
_LIMITS = {"byte": 1 << 7, "short": 1 << 15, "integer": 1 << 31, "long": 1 << 63}
#: (count, at_least) → the first of ``count`` new values, none below ``at_least``
Reserve = Callable[[int, int], int]


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Generated:
    """The ``AUTO_INCREMENT`` column of a table and where its values come from."""

    column: str
    reserve: Reserve = field(compare=False)

    @classmethod
    def of(
        cls, table: TableRecord, reserve_ids: Callable[[str, int, int], int] | None
    ) -> Generated | None:
        """The table's ``AUTO_INCREMENT`` column, numbered from ``reserve_ids`` (the
        catalog's ``Tables.reserve_ids``) from its ``AUTO_INCREMENT = n`` on; or None."""
        if not table.auto_increment or reserve_ids is None:
            return None
        name, start = table.name, table.auto_increment_start
        return cls(
            table.auto_increment[0],
            lambda count, at_least: reserve_ids(name, count, max(at_least, start)),
        )

    def fill(self, df, order: Sequence[str]):
        """``df`` with a new value in :attr:`column` for each row without one; ``order``
        names the columns that order the rows (the numbering follows it; without, the
        order the rows are read in)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        value = F.col(_q(self.column))
        need = value.isNull() | (value == 0)
        got = df.select(
            F.count(F.when(need, 1)).alias("n"), F.max(F.when(~need, value)).alias("top")
        ).first()
        top = None if not got or got["top"] is None else int(got["top"])
        limit = _LIMITS.get(df.schema[self.column].dataType.typeName(), 1 << 63)
        n = int(got["n"]) if got else 0
        try:
            if not n:
                if top is not None:  # a value a row gave moves the counter past it
                    self.reserve(0, min(top + 1, limit - 1))
                return df
            if top is not None and top >= limit - 1:
                raise OverflowError
            start = self.reserve(n, 1 if top is None else top + 1)
        except OverflowError:
            start = limit
        if start + n - 1 >= limit:
            raise ConfigError(
                f"AUTO_INCREMENT column '{self.column}' is out of range: no value is left "
                f"for {n} row(s)"
            )
        kind = df.schema[self.column].dataType.simpleString()
        by = [F.col(_q(c)) for c in order] or [F.monotonically_increasing_id()]
        window = Window.partitionBy(need).orderBy(*by)
        numbered = (F.lit(start - 1) + F.row_number().over(window)).cast(kind)
        return df.withColumn(self.column, F.when(need, numbered).otherwise(value))

"""How much Spark SQL the Pinot expressions of one table may come to (:class:`Budget`).

Translating a Pinot expression can write its parts more than once: a reading of another
transform writes that transform's SQL in (:mod:`~sparkpipes.frontends.pinot.chain`), and
some functions write an argument several times (``jsonFormat`` 4 times). Nested, that
grows with each level, so a few hundred characters of config could make gigabytes of SQL
for Spark's parser and the catalog, which stores it as the pipeline's definition.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkpipes.errors import ConfigError

#: the most characters of Spark SQL the expressions of one table may come to: every
#: transform, the filter and what the aggregations read, together; a thousand times what
#: the largest table of the corpus needs (``tests/corpus/pinot``: under 1,000)
MAX_SQL = 1_000_000


class TooLarge(ConfigError):
    """Expressions that would come to more than their :class:`Budget` of SQL."""


@dataclass
class Budget:
    """The characters of Spark SQL the expressions of one table may still come to.

    One budget is shared by every expression of a table (``expr.translate`` /
    ``expr.filter_sql`` with ``budget``): bounding each alone would let a table of many
    expressions each reading one large transform grow with their number. The parser checks
    each part as it builds it, so an expression is refused before it is built whole."""

    limit: int = MAX_SQL
    used: int = 0

    def check(self, size: int, where: str) -> None:
        """Raise :class:`TooLarge` if ``size`` more characters would exceed the limit."""
        if self.used + size > self.limit:
            raise TooLarge(
                f"{where}: written out as Spark SQL, with the transforms it reads written in "
                "(Pinot computes them first) and each function's arguments as often as the "
                f"function uses them, the table's expressions would come to over "
                f"{self.limit:,} characters; read the record's fields instead of large "
                "transforms where you can, and nest fewer functions"
            )

    def spend(self, size: int, where: str) -> None:
        """Count ``size`` characters of a finished expression (or a computed call's)."""
        self.check(size, where)
        self.used += size

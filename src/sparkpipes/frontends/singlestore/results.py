"""What running a statement answers: rows and/or a status message."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """Rows (``columns`` + ``rows``) and/or a status ``message``."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    message: str | None = None
    #: a query's rows as they come from Spark, partition by partition, when the session
    #: streams (``rows`` is then empty); iterating raises QueryError if the query fails
    stream: Iterator[tuple[Any, ...]] | None = None
    #: with ``stream``: each column's Spark type (``bigint``, ``string`` …), known before
    #: the first row
    types: list[str] | None = None

    @property
    def has_rows(self) -> bool:
        return bool(self.columns)


def ok(n: int = 0, what: str = "row") -> Result:
    return Result(message=f"Query OK, {n} {what}{'' if n == 1 else 's'} affected")

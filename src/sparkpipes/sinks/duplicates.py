"""The rows ``SKIP DUPLICATE KEY ERRORS`` skips, as rows of the errors store, alike for
every sink that loads such a pipeline (Delta's MERGE, ``delta.merge``; a database's
transaction, ``database_duplicates``).

SingleStore skips a row whose key the table (or an earlier row of the batch) holds, and
lists it, as each row a ``SKIP … ERRORS`` skipped, in ``information_schema
.PIPELINES_ERRORS`` (its ``Warning`` rows: an error that did not stop the pipeline;
``LOAD_DATA_ERRORS`` documents the same for ``LOAD DATA``): here with its source
partition and offset and MySQL's ``Duplicate entry`` message. ``IGNORE`` and ``REPLACE``
list nothing, as SingleStore's do (they do not skip a row as an error: ``IGNORE`` keeps
the stored row as MySQL's ``INSERT IGNORE`` does, ``REPLACE`` replaces it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkpipes.errors import DuplicateKeyError

#: skipped duplicates a batch reports one by one (the rest are counted)
MAX_REPORTED = 10_000
#: why a row was skipped
TWICE = "twice in the batch"
THERE = "in the table already"


def skipped_row(partition: Any, offset: Any, key: str, where: str, table: str) -> dict[str, Any]:
    """One skipped row as a row of the errors store (``key``: its key's values joined by
    ``-``, as MySQL's ``Duplicate entry`` writes a composite key)."""
    return {
        "partition": str(partition),
        "offset": offset,
        "code": DuplicateKeyError.code,
        "kind": DuplicateKeyError.kind,
        "reason": f"Duplicate entry '{key}' for key 'PRIMARY' of table '{table}' ({where}): "
        "the row is skipped (SKIP DUPLICATE KEY ERRORS)",
        "excerpt": None,
    }


def key_text(values: Sequence[Any]) -> str:
    return "-".join(str(v) for v in values)


def capped(rows: list[dict[str, Any]], total: int, table: str) -> list[dict[str, Any]]:
    """``rows`` (the first of ``total`` skipped rows, at least :data:`MAX_REPORTED` + 1 of
    them when there are more) with at most :data:`MAX_REPORTED` listed one by one: the
    last row listed then counts the rest."""
    if total <= MAX_REPORTED:
        return rows
    out = rows[: MAX_REPORTED + 1]
    more = total - MAX_REPORTED
    out[-1] = {
        **out[-1],
        "reason": f"{more} more rows were skipped as duplicate keys of table '{table}' "
        f"(SKIP DUPLICATE KEY ERRORS); the first {MAX_REPORTED} are listed",
    }
    return out

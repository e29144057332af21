"""Table maintenance beside running pipelines: compaction of small files and time-based
retention, each one delta-rs commit.

Neither touches a pipeline's app transaction or commit info, so where a pipeline resumes
is unchanged, and each is atomic: a reader sees the files before or after it, never a
row twice or not at all. Pipelines keep loading meanwhile; a pipeline's append and these
commits do not conflict (delta-rs rebases whichever comes second), and one that does (an
upsert's MERGE that read a file being compacted) is started again by its own side from a
fresh snapshot — here up to ``COMMIT_ATTEMPTS`` times.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from sparkpipes.errors import SinkError
from sparkpipes.sinks.delta import COMMIT_ATTEMPTS, CONFLICT_PAUSE_S, CommitConflict

log = logging.getLogger("sparkpipes.maintenance")
_T = TypeVar("_T")


def retrying(what: str, commit: Callable[[], _T]) -> _T:
    """``commit()`` (which reads a fresh snapshot each call), again after a conflict with
    another writer, up to ``COMMIT_ATTEMPTS`` times; any other failure is a SinkError
    naming ``what``."""
    from deltalake.exceptions import CommitFailedError

    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            return commit()
        except CommitFailedError as e:
            if attempt == COMMIT_ATTEMPTS:
                raise CommitConflict(
                    f"{what} conflicted with other writers {attempt} times: {e}"
                ) from None
            time.sleep(CONFLICT_PAUSE_S * 2 ** (attempt - 1))
        except SinkError:
            raise
        except Exception as e:  # delta-rs raises its own and Rust panics
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SinkError(f"{what} failed: {first}") from None
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class CompactionPolicy:
    """When a table's small files are bin-packed into bigger ones (Pinot's segment flush
    thresholds): when the small files hold ``rows`` rows (``rows`` > 0), else
    ``target_bytes`` of data, or when the oldest of them is ``max_age_ms`` old. A file is
    small below half the target. ``min_files`` small files at the least."""

    target_bytes: int
    rows: int = 0
    max_age_ms: int | None = None
    min_files: int = 2


def _small_files(dt: Any, policy: CompactionPolicy) -> tuple[list[dict[str, Any]], int]:
    """The table's small files (path, size, rows, modification time) and the target
    file size in bytes."""
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    if not actions:
        return [], policy.target_bytes
    target = policy.target_bytes
    if policy.rows:
        rows = sum(a["num_records"] or 0 for a in actions) or 1
        per_row = sum(a["size_bytes"] for a in actions) / rows
        target = max(1, min(target, int(per_row * policy.rows)))
    return [a for a in actions if a["size_bytes"] < target / 2], target


def compaction_due(dt: Any, policy: CompactionPolicy, now_ms: int | None = None) -> bool:
    small, target = _small_files(dt, policy)
    if len(small) < policy.min_files:
        return False
    if policy.rows and sum(a["num_records"] or 0 for a in small) >= policy.rows:
        return True
    if sum(a["size_bytes"] for a in small) >= target:
        return True
    if policy.max_age_ms is not None:
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        oldest = min(_millis(a["modification_time"]) for a in small)
        return now_ms - oldest >= policy.max_age_ms
    return False


def _millis(value: Any) -> int:
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    return int(value)


def compact(
    location: str, name: str, policy: CompactionPolicy, *, force: bool = False
) -> dict[str, Any] | None:
    """Bin-pack the table's small files when the policy says so (or ``force``); delta-rs's
    metrics, or None when nothing was due."""
    from deltalake import CommitProperties, DeltaTable

    def once() -> dict[str, Any] | None:
        dt = DeltaTable(location)
        if not force and not compaction_due(dt, policy):
            return None
        _, target = _small_files(dt, policy)
        return dt.optimize.compact(
            target_size=max(target, 1024),
            commit_properties=CommitProperties(custom_metadata={"sparkpipes.op": "COMPACT"}),
        )

    started = time.monotonic()
    metrics = retrying(f"compacting table '{name}'", once)
    if metrics and metrics.get("numFilesRemoved"):
        log.info(
            "table %s compacted: %d files into %d in %.1fs",
            name,
            metrics.get("numFilesRemoved", 0),
            metrics.get("numFilesAdded", 0),
            time.monotonic() - started,
        )
    return metrics


def expire(location: str, name: str, predicate: str) -> int:
    """Delete the rows matching ``predicate`` (delta-rs SQL); the number deleted."""
    from deltalake import CommitProperties, DeltaTable

    def once() -> int:
        dt = DeltaTable(location)
        metrics = dt.delete(
            predicate,
            commit_properties=CommitProperties(custom_metadata={"sparkpipes.op": "RETENTION"}),
        )
        return int(metrics.get("num_deleted_rows") or 0)

    deleted = retrying(f"deleting expired rows of table '{name}'", once)
    if deleted:
        log.info("table %s: %d rows past retention deleted", name, deleted)
    return deleted

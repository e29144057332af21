"""Table maintenance beside running pipelines: compaction of small files, time-based
retention, vacuum of unreferenced files; each one delta-rs commit (vacuum: its START and
END commits).

None touches a pipeline's app transaction or commit info, so where a pipeline resumes
is unchanged, and each is atomic: a reader sees the files before or after it, never a
row twice or not at all. Pipelines keep loading meanwhile; a pipeline's append and these
commits do not conflict (delta-rs rebases whichever comes second), and one that does (an
upsert's MERGE that read a file being compacted) is started again by its own side from a
fresh snapshot (``commits.retrying``).

Vacuum can never delete a committed file. It deletes files of the table directory that
the snapshot it reads does not reference and that are older than the retention (at least
``MIN_RETAIN_HOURS``): files compaction replaced (by the time they were replaced) and
files of attempts that never committed (by their modification time); ``_``-prefixed
directories (the log, pipelines' staging) are not its business. A file committed after
vacuum read its snapshot was written by a batch that commits only files younger than
``sinks.delta.MAX_UNCOMMITTED_AGE_S`` (half the least retention; an older attempt is
loaded again instead), so it is too young for vacuum to touch. Readers of an older
snapshot (a query planned before a compaction) keep their files for the retention.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from sparkpipes.errors import ConfigError
from sparkpipes.sinks.delta.commits import retrying
from sparkpipes.sinks.delta.log import last_checkpoint, log_dir
from sparkpipes.sinks.delta.sink import MAX_UNCOMMITTED_AGE_S
from sparkpipes.util.sparkfiles import remote

log = logging.getLogger("sparkpipes.maintenance")
_T = TypeVar("_T")

#: the least retention a vacuum accepts: twice the age past which a batch's files are
#: never committed (``MAX_UNCOMMITTED_AGE_S``)
MIN_RETAIN_HOURS = 1
assert MIN_RETAIN_HOURS * 3600 >= 2 * MAX_UNCOMMITTED_AGE_S
#: where pipelines stage files inside a table directory (``engine.assembly``)
STAGING_DIR = "_sparkpipes_staging"


#: sizes of one compaction tier are within this factor of one another
TIER_RATIO = 16
#: the smallest tier's bin size: files below half of it are one tier
MIN_TIER_BYTES = 32 * 1024


@dataclass(frozen=True)
class CompactionPolicy:
    """When a table's small files are bin-packed into bigger ones (Pinot's segment flush
    thresholds): when the small files hold ``rows`` rows (``rows`` > 0), else
    ``target_bytes`` of data, or when the oldest of them is ``max_age_ms`` old, or when
    ``files`` small files are of one size tier. A file is small below half the target.
    ``min_files`` small files at the least.

    Tiers keep a file from being rewritten every round: delta-rs bin-packs every file
    below the size it packs to, so packing to the target each time ``files`` small
    files piled up would rewrite the growing packed file with each handful of new ones
    (in a steady pipeline, the whole table every few seconds until it reaches half the
    target), and vacuum keeps every rewritten copy for its retention. Instead the bins
    are ``TIER_RATIO`` times apart (the target, a sixteenth of it, … down to
    ``MIN_TIER_BYTES``); when ``files`` files of a tier (above half the bin below, up
    to half its own) piled up, every file up to its bin size is packed (the largest such
    tier's), into files that belong to the tiers above, so each row is rewritten about
    once per tier."""

    target_bytes: int
    rows: int = 0
    max_age_ms: int | None = None
    min_files: int = 2
    #: due as soon as this many small files are of one tier (0: only by the thresholds above)
    files: int = 0


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


def compaction_due(dt: Any, policy: CompactionPolicy, now_ms: int | None = None) -> int | None:
    """The size to bin-pack the table's files to when compaction is due, else None."""
    small, target = _small_files(dt, policy)
    if len(small) < policy.min_files:
        return None
    if policy.files:
        crowded = _crowded_tier(small, target, policy.files)
        if crowded is not None:
            return crowded
    if policy.rows and sum(a["num_records"] or 0 for a in small) >= policy.rows:
        return target
    if sum(a["size_bytes"] for a in small) >= target:
        return target
    if policy.max_age_ms is not None:
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        oldest = min(_millis(a["modification_time"]) for a in small)
        if now_ms - oldest >= policy.max_age_ms:
            return target
    return None


def tiers(target: int) -> list[int]:
    """The bin sizes of the compaction tiers, smallest first (:class:`CompactionPolicy`)."""
    sizes = [target]
    while sizes[-1] // TIER_RATIO >= MIN_TIER_BYTES:
        sizes.append(sizes[-1] // TIER_RATIO)
    return sizes[::-1]


def _crowded_tier(small: list[dict[str, Any]], target: int, files: int) -> int | None:
    """The bin size of the largest tier holding ``files`` small files, or None. Packing
    at a bin size takes every file up to it, so the tiers below go along; the smallest
    one first would starve the others while batch files keep coming."""
    crowded, below = None, 0.0
    for size in tiers(target):
        if sum(1 for a in small if below < a["size_bytes"] <= size / 2) >= files:
            crowded = size
        below = size / 2
    return crowded


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
        target = _small_files(dt, policy)[1] if force else compaction_due(dt, policy)
        if target is None:
            return None
        return dt.optimize.compact(
            target_size=max(target, 1024),
            commit_properties=CommitProperties(custom_metadata={"sparkpipes.op": "COMPACT"}),
        )

    started = time.monotonic()
    metrics = retrying(f"compacting table '{name}'", lambda _: once())
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

    deleted = retrying(f"deleting expired rows of table '{name}'", lambda _: once())
    if deleted:
        log.info("table %s: %d rows past retention deleted", name, deleted)
    return deleted


def vacuum(location: str, name: str, retain_hours: int, *, dry_run: bool = False) -> list[str]:
    """Delete the table's data files that no commit references any more and that are
    older than ``retain_hours`` (see the module docstring for why a committed file is
    never among them); the files deleted (or, with ``dry_run``, that would be). Nothing
    to delete makes no commit."""
    from deltalake import CommitProperties, DeltaTable

    if retain_hours < MIN_RETAIN_HOURS:
        raise ConfigError(
            f"VACUUM keeps unreferenced files at least {MIN_RETAIN_HOURS} hour(s) (a batch "
            f"being written may own them); got RETAIN {retain_hours} HOURS"
        )

    def once(dry: bool) -> list[str]:
        return list(
            DeltaTable(location).vacuum(
                retention_hours=retain_hours,
                dry_run=dry,
                enforce_retention_duration=False,
                full=True,
                commit_properties=CommitProperties(custom_metadata={"sparkpipes.op": "VACUUM"}),
            )
        )

    doomed = retrying(f"vacuuming table '{name}'", lambda _: once(True))
    if dry_run or not doomed:
        return doomed
    deleted = retrying(f"vacuuming table '{name}'", lambda _: once(False))
    log.info("table %s vacuumed: %d unreferenced files deleted", name, len(deleted))
    return deleted


def clear_staging(location: str, retain_hours: int) -> int:
    """Remove pipelines' staging directories of a local table older than
    ``retain_hours`` (left by attempts that crashed; a live attempt's are minutes old);
    how many were removed."""
    import os
    import shutil

    root = os.path.join(location, STAGING_DIR)
    if remote(location) or not os.path.isdir(root):
        return 0
    edge = time.time() - max(retain_hours, MIN_RETAIN_HOURS) * 3600
    removed = 0
    for pipeline in os.scandir(root):
        for attempt in os.scandir(pipeline.path) if pipeline.is_dir() else ():
            newest = (
                max(
                    (e.stat().st_mtime for e in os.scandir(attempt.path)),
                    default=attempt.stat().st_mtime,
                )
                if attempt.is_dir()
                else attempt.stat().st_mtime
            )
            if newest < edge:
                shutil.rmtree(attempt.path, ignore_errors=True)
                removed += 1
    return removed


@dataclass(frozen=True)
class Layout:
    """A table's current files, for ``SHOW TABLE STATUS`` and the maintainer."""

    version: int
    files: int
    small_files: int
    bytes: int
    rows: int
    checkpoint: int | None  # the version of the last checkpoint

    @staticmethod
    def of(location: str, target_bytes: int) -> Layout:
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        dt = DeltaTable(location)
        actions = pa.table(dt.get_add_actions(flatten=True))
        sizes = actions.column("size_bytes") if actions.num_rows else pa.array([], pa.int64())
        rows = actions.column("num_records") if actions.num_rows else pa.array([], pa.int64())
        small = pc.sum(pc.less(sizes, target_bytes / 2)).as_py() or 0
        return Layout(
            version=dt.version(),
            files=actions.num_rows,
            small_files=int(small),
            bytes=int(pc.sum(sizes).as_py() or 0),
            rows=int(pc.sum(rows).as_py() or 0),
            checkpoint=last_checkpoint(location),
        )

    @staticmethod
    def version_of(location: str) -> int:
        from deltalake import DeltaTable

        return DeltaTable(location).version()


#: commits looked for one by one by :func:`newest_version` before it loads the table
PROBE_COMMITS = 50


def newest_version(location: str, known: int | None = None) -> int:
    """The table's newest version. From ``known`` (a version it had) the commits after
    it are looked for one by one, a file status each (versions are consecutive and a log
    is trimmed from its old end only), which costs next to nothing while none came; the
    table is loaded when there is no ``known`` or many came."""
    if known is not None:
        from pyarrow import fs

        filesystem, logs = log_dir(location)
        version = known
        for _ in range(PROBE_COMMITS):
            info = filesystem.get_file_info(f"{logs}/{version + 1:020d}.json")
            if info.type == fs.FileType.NotFound:
                return version
            version += 1
    return Layout.version_of(location)


#: log entries younger than this are never trimmed: a reader that listed the log has this
#: long to read what it listed (with a checkpoint every few seconds, the versions kept
#: by ``trim_log``'s other rules may span less)
LOG_MIN_AGE_S = 10
_LOG_ENTRY = re.compile(r"^(\d{20})\.(json|crc|checkpoint(\.\d+\.\d+)?\.parquet)$")


@dataclass(frozen=True)
class Trimmed:
    removed: int  # log entries deleted
    young: int  # entries old enough in versions but younger than the minimum age: kept


def trim_log(location: str, keep_commits: int, *, min_age_s: float | None = None) -> Trimmed:
    """Delete the table's log entries (commits, checkpoints) more than ``keep_commits``
    versions older than its last checkpoint, before the checkpoint preceding it, and older
    than ``min_age_s``; how many, and how many were kept for their age only.

    Opening a table reads its last checkpoint and the commits after it only, but lists the
    whole log directory first: on a local or shared file system that listing costs about
    13 us per entry (20,000 entries: 0.25 s, for every commit and restart), so a log kept
    for Delta's default 30 days slows a busy table down without bound. Versions before the
    last checkpoint are needed only for time travel, which sparkpipes does not offer, and
    for the commit info of a pipeline's last batch when the catalog lost it (the caller
    does not trim while a pipeline's catalog and table disagree)."""
    from pyarrow import fs

    checkpoint = last_checkpoint(location)
    if checkpoint is None:
        return Trimmed(0, 0)
    filesystem, logs = log_dir(location)
    entries = [
        (int(m.group(1)), m.group(2), info)
        for info in filesystem.get_file_info(fs.FileSelector(logs))
        if info.type == fs.FileType.File and (m := _LOG_ENTRY.match(info.base_name))
    ]
    # a reader that read _last_checkpoint just before the last one was written opens the
    # one before it: that one and the commits after it stay
    before = [v for v, kind, _ in entries if kind.startswith("checkpoint") and v < checkpoint]
    edge = min(checkpoint - max(keep_commits, 1), max(before, default=-1))
    young = time.time() - (LOG_MIN_AGE_S if min_age_s is None else min_age_s)
    doomed, kept = [], 0
    for version, _, info in entries:
        if version >= edge:
            continue
        if info.mtime is not None and info.mtime.timestamp() > young:
            kept += 1
            continue
        doomed.append(info.path)
    for path in doomed:
        try:
            filesystem.delete_file(path)
        except FileNotFoundError:
            pass
    if doomed:
        log.info(
            "table log of %s: %d entries before version %d removed", location, len(doomed), edge
        )
    return Trimmed(len(doomed), kept)

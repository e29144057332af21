"""Keeping tables and the catalog healthy over months of batches.

Every batch adds a data file per task and a commit to its table, failed attempts can
leave files no commit references, and the catalog records every batch. Left alone, a
table's snapshot (and with it each commit, restart and query) grows with its age. The
:class:`Housekeeper` runs beside the scheduler of every engine that runs pipelines, one
round every ``table_maintenance_interval_ms``:

1. per table, under the table's maintenance lease (one engine at a time among those
   sharing the catalog): Pinot tables get their own retention and flush thresholds
   (``PinotTables.maintain``); other tables are **compacted** once they have
   ``table_compaction_min_files`` files of one size tier smaller than half of
   ``table_target_file_bytes`` (bin-packed into bigger files, one commit; tiers keep a
   packed file from being rewritten each round: ``maintenance.CompactionPolicy``);
   the **log** is trimmed to ``table_log_retention_commits`` commits before its last
   checkpoint (``maintenance.trim_log`` says why); every ``table_vacuum_interval_ms`` a
   table is **vacuumed** (unreferenced files older than ``table_vacuum_retain_hours``
   deleted; ``engine.maintenance`` says why a committed file never is) and stale staging
   directories of crashed attempts go; a table with no commit since a round that left
   it nothing to compact or trim is not read for those (one file status tells);
2. every pipeline's history is pruned (``catalog.history``).

Delta **checkpoints** are written as part of a commit: a pipeline's (and ``INSERT``'s)
when re-reading the log since the last one has cost what writing one does, at the latest
every ``delta.checkpointInterval`` commits (``sinks.checkpoints``); other commits (MERGE,
compaction) by delta-rs, every ``delta.checkpointInterval`` commits. A new table takes
``table_checkpoint_interval``.
Each operation is recorded (``information_schema.TABLE_MAINTENANCE``); ``OPTIMIZE
TABLE`` and ``VACUUM`` run the same operations on demand. A failure is logged and
recorded, and the next round tries again; none affects a pipeline's batches.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sparkpipes.catalog import PipelineRecord, TableRecord
from sparkpipes.engine import variables
from sparkpipes.engine.batch.protocol import app_id
from sparkpipes.engine.runtime import Runtime
from sparkpipes.errors import SparkpipesError
from sparkpipes.sinks.delta.maintenance import (
    CompactionPolicy,
    Layout,
    clear_staging,
    compact,
    newest_version,
    trim_log,
    vacuum,
)

log = logging.getLogger("sparkpipes.maintenance")

#: how long one engine may hold a table's maintenance lease unrenewed
LEASE_TTL_S = 600.0


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _total_size(stats: Any) -> int | None:
    """``totalSize`` of delta-rs's file statistics (a JSON text or a dict)."""
    import json

    try:
        d = json.loads(stats) if isinstance(stats, str) else stats
        return int(d["totalSize"])
    except (TypeError, ValueError, KeyError):
        return None


def lease_key(table: str) -> str:
    """The lease row of a table's maintenance (leases are keyed by at most 64 chars)."""
    return "table:" + hashlib.sha1(table.encode()).hexdigest()


class Housekeeper:
    """Table maintenance and history pruning for one engine (see the module docstring).

    ``own`` maintains one of the tables a front end maintains itself (a Pinot table: its
    retention and flush thresholds); ``own_names`` lists those tables."""

    def __init__(
        self,
        rt: Runtime,
        holder: str,
        *,
        own: Callable[[str], Mapping[str, Any]] | None = None,
        own_names: Callable[[], list[str]] = list,
    ) -> None:
        self.rt = rt
        self.holder = holder
        self._own = own
        self._own_names = own_names
        #: table → (what its upkeep depends on, the version, settled): see _settled
        self._seen: dict[str, tuple[tuple, int, bool]] = {}
        #: table → its last vacuum, as read from the catalog at its last round
        self._vacuumed: dict[str, dt.datetime | None] = {}

    # -- the background rounds ---------------------------------------------------------
    def run(self, halt: threading.Event) -> None:
        """Rounds until ``halt`` is set; the interval is read again after each round."""
        while not halt.wait(self._values()["table_maintenance_interval_ms"] / 1000 or 60.0):
            try:
                self.round()
            except Exception as e:  # the next round tries again
                log.warning("table maintenance: %s", e)

    def round(self) -> dict[str, dict[str, Any]]:
        """One pass: every table whose maintenance lease this engine gets, then the
        pipelines' history. Per table, what was done."""
        values = self._values()
        own = set(self._own_names()) if self._own else set()
        out: dict[str, dict[str, Any]] = {}
        pipelines = self.rt.catalog.pipelines.states()  # once a round: no definitions
        loaders: dict[str, list[PipelineRecord]] = {}
        for p in pipelines:
            loaders.setdefault(p.table, []).append(p)
        for rec in self.rt.catalog.tables.all():
            if rec.name not in own and self._nothing_due(rec, values):
                continue  # no lease taken: a quiet table costs a file status
            with self._lease(rec.name) as held:
                if not held:
                    continue
                try:
                    out[rec.name] = self._maintain(
                        rec, values, own=rec.name in own, loaders=loaders.get(rec.name, [])
                    )
                except SparkpipesError as e:
                    log.warning("maintaining table %s: %s", rec.name, e.message)
        self.prune(values, {p.id for p in pipelines})
        return out

    def _maintain(
        self,
        rec: TableRecord,
        values: Mapping[str, Any],
        *,
        own: bool,
        loaders: list[PipelineRecord] | None = None,
    ) -> dict:
        done: dict[str, Any] = {}
        own = own and self._own is not None
        quiet = not own and self._settled(rec, values)
        if own:
            started = time.monotonic()
            done.update(self._own(rec.name))
            if done.get("compacted") or done.get("expired"):
                self._record(
                    rec.name,
                    "COMPACT",
                    "auto",
                    started,
                    files_removed=done.get("compacted", 0),
                    rows_affected=done.get("expired", 0),
                )
        elif not quiet and values["table_compaction_min_files"] > 0:
            metrics = self.optimize(rec, trigger="auto", force=False, values=values)
            done["compacted"] = (metrics or {}).get("numFilesRemoved", 0)
        if not quiet and self._consistent(rec, loaders):
            trimmed = trim_log(rec.location, values["table_log_retention_commits"])
            done["log_trimmed"] = trimmed.removed
            if not own and not trimmed.young and not done.get("compacted"):
                self._settle(rec.name)
        every = values["table_vacuum_interval_ms"]
        if every > 0:
            # a new table is first vacuumed an interval after it was made: hundreds of
            # tables made at once are not all vacuumed, with nothing to delete, at once
            last = self.rt.catalog.history.last_done(rec.name, "VACUUM") or rec.created_at
            self._vacuumed[rec.name] = last
            if last is None or (_now() - last).total_seconds() * 1000 >= every:
                retain = values["table_vacuum_retain_hours"]
                done["vacuumed"] = len(self.vacuum(rec, trigger="auto", retain_hours=retain))
                clear_staging(rec.location, retain)
                self._vacuumed[rec.name] = _now()
        return done

    def prune(
        self, values: Mapping[str, Any] | None = None, pipeline_ids: set[str] | None = None
    ) -> int:
        """Prune every pipeline's batch and error history to the variables' retention
        (``pipeline_ids``: the pipelines' ids, when the caller has read them)."""
        values = values or self._values()
        keep = max(1, values["pipelines_batches_metadata_to_keep"])
        before = _now() - dt.timedelta(minutes=values["pipelines_errors_retention_minutes"])
        if pipeline_ids is None:
            pipeline_ids = {p.id for p in self.rt.catalog.pipelines.states()}
        deleted = 0
        due = self.rt.catalog.history.due(keep_batches=keep, errors_before=before)
        for pid in sorted(due & pipeline_ids):
            deleted += self.rt.catalog.history.prune(pid, keep_batches=keep, errors_before=before)
        return deleted

    # -- operations (also OPTIMIZE TABLE and VACUUM) ------------------------------------
    def optimize(
        self,
        rec: TableRecord,
        *,
        trigger: str,
        force: bool,
        values: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Bin-pack the table's small files when due (``force``: whenever there are two);
        delta-rs's metrics, or None when nothing was done."""
        values = values or self._values()
        policy = CompactionPolicy(
            target_bytes=max(1024, values["table_target_file_bytes"]),
            files=max(2, values["table_compaction_min_files"]),
        )
        started = time.monotonic()
        try:
            metrics = compact(rec.location, rec.name, policy, force=force)
        except SparkpipesError as e:
            self._record(rec.name, "COMPACT", trigger, started, error=e.message)
            raise
        if metrics and metrics.get("numFilesRemoved"):
            self._record(
                rec.name,
                "COMPACT",
                trigger,
                started,
                files_removed=metrics.get("numFilesRemoved", 0),
                files_added=metrics.get("numFilesAdded", 0),
                bytes_removed=_total_size(metrics.get("filesRemoved")),
                bytes_added=_total_size(metrics.get("filesAdded")),
            )
            return metrics
        return None

    def vacuum(
        self,
        rec: TableRecord,
        *,
        trigger: str,
        retain_hours: int | None = None,
        dry_run: bool = False,
    ) -> list[str]:
        """Delete the table's unreferenced files older than ``retain_hours`` (default:
        ``table_vacuum_retain_hours``); the files deleted (with ``dry_run``: to be)."""
        hours = (
            retain_hours
            if retain_hours is not None
            else self._values()["table_vacuum_retain_hours"]
        )
        started = time.monotonic()
        try:
            files = vacuum(rec.location, rec.name, hours, dry_run=dry_run)
        except SparkpipesError as e:
            if not dry_run:
                self._record(rec.name, "VACUUM", trigger, started, error=e.message)
            raise
        if not dry_run:
            self._record(rec.name, "VACUUM", trigger, started, files_removed=len(files))
        return files

    def layout(self, rec: TableRecord) -> Layout:
        return Layout.of(rec.location, max(1024, self._values()["table_target_file_bytes"]))

    # -- internals ---------------------------------------------------------------------
    def _settled(self, rec: TableRecord, values: Mapping[str, Any]) -> bool:
        """Whether compaction and log trimming can be left out this round: no commit came
        since a round that found nothing left for them (settled), under the same
        variables. Costs one file status while the table is quiet, so an idle table's
        rounds read neither its snapshot nor its log."""
        key = (
            rec.location,
            rec.created_at,
            values["table_compaction_min_files"],
            values["table_target_file_bytes"],
            values["table_log_retention_commits"],
        )
        seen = self._seen.get(rec.name)
        known = seen[1] if seen is not None and seen[0] == key else None
        version = newest_version(rec.location, known)
        if version != known:
            self._seen[rec.name] = (key, version, False)
            return False
        return seen is not None and seen[2]

    def _nothing_due(self, rec: TableRecord, values: Mapping[str, Any]) -> bool:
        """Whether a round has nothing to do for the table, as far as this engine knows
        without its lease: settled (:meth:`_settled`) and vacuumed within the interval
        when it last looked (another engine's vacuum only makes it due later)."""
        if not self._settled(rec, values):
            return False
        every = values["table_vacuum_interval_ms"]
        if every <= 0:
            return True
        if rec.name not in self._vacuumed:
            return False
        last = self._vacuumed[rec.name]
        return last is not None and (_now() - last).total_seconds() * 1000 < every

    def _settle(self, table: str) -> None:
        key, version, _ = self._seen[table]
        self._seen[table] = (key, version, True)

    def _consistent(self, rec: TableRecord, loaders: list[PipelineRecord] | None = None) -> bool:
        """Whether the catalog records the last batch every pipeline loading the table
        (``loaders``; read here when not given) committed to it: a pipeline whose last
        commit the catalog missed (a crash right after it) needs that commit's info in
        the log to resume."""
        from deltalake import DeltaTable

        if loaders is None:
            loaders = [p for p in self.rt.catalog.pipelines.states() if p.table == rec.name]
        if not loaders:
            return True
        dt = DeltaTable(rec.location)
        for p in loaders:
            version = dt.transaction_version(app_id(p.id))
            last = self.rt.catalog.batches.last_succeeded(p.id)
            if version is not None and (last is None or last[0] != version):
                log.info("table %s: log kept whole until pipeline %s resumes", rec.name, p.name)
                return False
        return True

    def _values(self) -> dict[str, Any]:
        return variables.resolve(self.rt.catalog.variables.all())

    @contextmanager
    def _lease(self, table: str) -> Iterator[bool]:
        key = lease_key(table)
        token = self.rt.catalog.leases.acquire(key, self.holder, LEASE_TTL_S)
        try:
            yield token is not None
        finally:
            if token is not None:
                self.rt.catalog.leases.release(key, self.holder, token)

    def _record(
        self, table: str, operation: str, trigger: str, started: float, **values: Any
    ) -> None:
        took = time.monotonic() - started
        try:
            version = Layout.version_of(self.rt.catalog.tables.get(table).location)
        except Exception:  # the table may be gone; the record still says what happened
            version = None
        self.rt.catalog.history.record(
            table_name=table,
            operation=operation,
            trigger=trigger,
            engine=self.holder,
            started_at=_now() - dt.timedelta(seconds=took),
            duration_ms=int(took * 1000),
            table_version=version,
            **values,
        )

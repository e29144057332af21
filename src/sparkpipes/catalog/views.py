"""``information_schema`` views: functions returning Arrow tables with declared schemas.

Each view has a fixed schema (declared below, so an empty view still has its columns)
and is built from the catalog, plus — for the offset views — a per-pipeline snapshot of
source offsets that the engine supplies (the catalog itself never talks to a source).
Offsets are shown as JSON text, since they need not be integers. Credentials never
appear: definitions come from the catalog's redacted copy.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.catalog.pipelines import PipelineRecord
from sparkpipes.catalog.states import BatchState
from sparkpipes.catalog.store import Catalog

DATABASE = "sparkpipes"
TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class PartitionOffsets:
    """What the engine knows of one source partition of a pipeline, for the offset views."""

    partition: str
    key: Mapping[str, Any]  # the partition as JSON, e.g. {"topic": "t", "partition": 0}
    committed: Any
    earliest: Any = None
    latest: Any = None
    lag: int | None = None
    size: int | None = None  # bytes, for files
    task: int | None = None  # the task that reads it, where the source groups partitions


OffsetsFn = Callable[[PipelineRecord], Sequence[PartitionOffsets]]

BATCH_KEY = [("BATCH_ID", pa.int64()), ("BATCH_ATTEMPT", pa.int32()), ("BATCH_STATE", pa.string())]


def _view(fields: list[tuple[str, pa.DataType]]) -> pa.Schema:
    """Every view starts with DATABASE_NAME and PIPELINE_NAME."""
    return pa.schema([("DATABASE_NAME", pa.string()), ("PIPELINE_NAME", pa.string()), *fields])


SCHEMAS: dict[str, pa.Schema] = {
    "PIPELINES": _view(
        [
            ("PIPELINE_ID", pa.string()),
            ("STATE", pa.string()),
            ("SOURCE_TYPE", pa.string()),
            ("TABLE_NAME", pa.string()),
            ("CONFIG_JSON", pa.string()),
            ("LAST_ERROR", pa.string()),
            ("CREATED_AT", TS),
            ("UPDATED_AT", TS),
        ]
    ),
    "PIPELINES_BATCHES_SUMMARY": _view(
        [
            *BATCH_KEY,
            ("BATCH_ROWS_WRITTEN", pa.int64()),
            ("BATCH_BYTES_READ", pa.int64()),
            ("BATCH_ERRORS", pa.int64()),
            ("BATCH_TIME", pa.float64()),
            ("ROWS_PER_SEC", pa.float64()),
            ("BATCH_PARTITIONS", pa.int32()),
            ("BATCH_START_TIME", TS),
            ("BATCH_END_TIME", TS),
            ("BATCH_ERROR", pa.string()),
            # SingleStore's names, so that its dashboards' queries run
            ("START_TIME", TS),
            ("ROWS_STREAMED", pa.int64()),
            ("NUM_PARTITIONS", pa.int64()),
            ("NUM_PARTITIONS_FINISHED", pa.int64()),
            ("MB_STREAMED", pa.float64()),
            ("MB_PER_SEC", pa.float64()),
            ("EXTRACTOR_WAIT_TIME", pa.float64()),
            ("TRANSFORM_WAIT_TIME", pa.float64()),
        ]
    ),
    "PIPELINES_BATCHES": _view(
        [
            *BATCH_KEY,
            ("BATCH_SOURCE_PARTITION_ID", pa.string()),
            ("BATCH_EARLIEST_OFFSET", pa.string()),
            ("BATCH_LATEST_OFFSET", pa.string()),
            ("BATCH_ROWS_WRITTEN", pa.int64()),
            ("BATCH_RECORDS_READ", pa.int64()),
            ("BATCH_PARTITION_TIME", pa.float64()),
            ("BATCH_START_TIME", TS),
        ]
    ),
    "PIPELINES_OFFSETS": _view(
        [
            ("SOURCE_TYPE", pa.string()),
            ("SOURCE_PARTITION_ID", pa.string()),
            ("EARLIEST_OFFSET", pa.string()),
            ("LATEST_OFFSET", pa.string()),
            ("COMMITTED_OFFSET", pa.string()),
            ("LAG", pa.int64()),
        ]
    ),
    "PIPELINES_SOURCE_OFFSETS": _view(
        [
            ("TASK_ID", pa.int32()),
            ("KEY", pa.string()),
            ("VALUE", pa.string()),
        ]
    ),
    "PIPELINES_ERRORS": _view(
        [
            ("BATCH_ID", pa.int64()),
            ("ERROR_UNIX_TIMESTAMP", pa.float64()),
            ("ERROR_TYPE", pa.string()),
            ("ERROR_CODE", pa.string()),
            ("ERROR_MESSAGE", pa.string()),
            ("BATCH_SOURCE_PARTITION_ID", pa.string()),
            ("BATCH_OFFSET", pa.string()),
            ("LOAD_DATA_LINE", pa.string()),
        ]
    ),
    "PIPELINES_FILES": _view(
        [
            ("SOURCE_TYPE", pa.string()),
            ("FILE_NAME", pa.string()),
            ("FILE_SIZE", pa.int64()),
            ("FILE_STATE", pa.string()),
            ("FILE_OFFSET", pa.string()),
            ("BATCH_ID", pa.int64()),
            ("FILE_ERROR", pa.string()),
        ]
    ),
}
SCHEMAS["PIPELINES_CURSORS"] = SCHEMAS["PIPELINES_OFFSETS"]
SCHEMAS["TABLE_MAINTENANCE"] = pa.schema(
    [
        ("DATABASE_NAME", pa.string()),
        ("TABLE_NAME", pa.string()),
        ("OPERATION", pa.string()),
        ("TRIGGER", pa.string()),
        ("ENGINE", pa.string()),
        ("START_TIME", TS),
        ("DURATION_MS", pa.int64()),
        ("FILES_REMOVED", pa.int64()),
        ("FILES_ADDED", pa.int64()),
        ("BYTES_REMOVED", pa.int64()),
        ("BYTES_ADDED", pa.int64()),
        ("ROWS_AFFECTED", pa.int64()),
        ("TABLE_VERSION", pa.int64()),
        ("ERROR", pa.string()),
    ]
)


def _j(v: Any) -> str | None:
    return None if v is None else json.dumps(v, sort_keys=True)


def _utc(t: dt.datetime | None) -> dt.datetime | None:
    return None if t is None else t.replace(tzinfo=dt.UTC)


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[name])


def pipelines(cat: Catalog) -> pa.Table:
    database = cat.database.name()
    rows = []
    for p in cat.pipelines.all():
        config = json.loads(json.dumps(p.definition))
        config.get("source", {}).pop("credentials", None)
        rows.append(
            {
                "DATABASE_NAME": database,
                "PIPELINE_NAME": p.name,
                "PIPELINE_ID": p.id,
                "STATE": p.state,
                "SOURCE_TYPE": p.source.upper(),
                "TABLE_NAME": p.table,
                "CONFIG_JSON": json.dumps(config, sort_keys=True),
                "LAST_ERROR": p.last_error,
                "CREATED_AT": _utc(p.created_at),
                "UPDATED_AT": _utc(p.updated_at),
            }
        )
    return _table("PIPELINES", rows)


def _names(cat: Catalog) -> dict[str, str]:
    return {p.id: p.name for p in cat.pipelines.all()}


def batches_summary(cat: Catalog) -> pa.Table:
    database = cat.database.name()
    names = _names(cat)
    rows = []
    for b in cat.batches.list():
        if b["pipeline_id"] not in names:
            continue
        secs = (b["duration_ms"] or 0) / 1000
        rows.append(
            {
                "DATABASE_NAME": database,
                "PIPELINE_NAME": names[b["pipeline_id"]],
                "BATCH_ID": b["batch_id"],
                "BATCH_ATTEMPT": b["attempt"],
                "BATCH_STATE": b["state"],
                "BATCH_ROWS_WRITTEN": b["rows"],
                "BATCH_BYTES_READ": b["bytes"],
                "BATCH_ERRORS": b["errors"],
                "BATCH_TIME": secs,
                "ROWS_PER_SEC": b["rows"] / secs if secs > 0 else None,
                "BATCH_PARTITIONS": len(b["partitions"]),
                "BATCH_START_TIME": _utc(b["started_at"]),
                "BATCH_END_TIME": _utc(b["finished_at"]),
                "BATCH_ERROR": b["error"],
                **_singlestore_summary(b, secs),
            }
        )
    return _table("PIPELINES_BATCHES_SUMMARY", rows)


def _singlestore_summary(b: dict[str, Any], secs: float) -> dict[str, Any]:
    """SingleStore's columns of a batch: rows and megabytes (2**20 bytes) extracted, the
    partitions and those finished (all, once the batch ended well; unknown otherwise).
    Nothing waits on an extractor or a transform program here: those times are NULL."""
    read = [p.get("read") for p in b["partitions"]]
    streamed = sum(read) if all(r is not None for r in read) else None
    mb = b["bytes"] / 2**20
    done = b["state"] in (BatchState.SUCCEEDED, BatchState.NO_DATA)
    return {
        "START_TIME": _utc(b["started_at"]),
        "ROWS_STREAMED": streamed,
        "NUM_PARTITIONS": len(b["partitions"]),
        "NUM_PARTITIONS_FINISHED": len(b["partitions"]) if done else None,
        "MB_STREAMED": mb,
        "MB_PER_SEC": mb / secs if secs > 0 else None,
        "EXTRACTOR_WAIT_TIME": None,
        "TRANSFORM_WAIT_TIME": None,
    }


def batches(cat: Catalog) -> pa.Table:
    database = cat.database.name()
    names = _names(cat)
    rows = []
    for b in cat.batches.list():
        if b["pipeline_id"] not in names:
            continue
        for part in b["partitions"]:
            rows.append(
                {
                    "DATABASE_NAME": database,
                    "PIPELINE_NAME": names[b["pipeline_id"]],
                    "BATCH_ID": b["batch_id"],
                    "BATCH_ATTEMPT": b["attempt"],
                    "BATCH_STATE": b["state"],
                    "BATCH_SOURCE_PARTITION_ID": part["partition"],
                    "BATCH_EARLIEST_OFFSET": _j(part.get("start")),
                    "BATCH_LATEST_OFFSET": _j(part.get("end")),
                    "BATCH_ROWS_WRITTEN": part.get("rows"),
                    "BATCH_RECORDS_READ": part.get("read"),
                    "BATCH_PARTITION_TIME": part.get("seconds"),
                    "BATCH_START_TIME": _utc(b["started_at"]),
                }
            )
    return _table("PIPELINES_BATCHES", rows)


def errors(cat: Catalog) -> pa.Table:
    database = cat.database.name()
    names = _names(cat)
    rows = [
        {
            "DATABASE_NAME": database,
            "PIPELINE_NAME": names.get(e["pipeline_id"], e["pipeline_name"]),
            "BATCH_ID": e["batch_id"],
            "ERROR_UNIX_TIMESTAMP": _utc(e["created_at"]).timestamp(),
            "ERROR_TYPE": e["kind"],
            "ERROR_CODE": e["code"],
            "ERROR_MESSAGE": e["reason"],
            "BATCH_SOURCE_PARTITION_ID": e["partition"],
            "BATCH_OFFSET": _j(e["offset"]),
            "LOAD_DATA_LINE": e["excerpt"],
        }
        for e in cat.batches.errors()
        if e["pipeline_id"] in names
    ]
    return _table("PIPELINES_ERRORS", rows)


def offsets(cat: Catalog, snapshot: OffsetsFn, name: str = "PIPELINES_OFFSETS") -> pa.Table:
    database = cat.database.name()
    rows = []
    for p in cat.pipelines.all():
        for o in snapshot(p):
            rows.append(
                {
                    "DATABASE_NAME": database,
                    "PIPELINE_NAME": p.name,
                    "SOURCE_TYPE": p.source.upper(),
                    "SOURCE_PARTITION_ID": o.partition,
                    "EARLIEST_OFFSET": _j(o.earliest),
                    "LATEST_OFFSET": _j(o.latest),
                    "COMMITTED_OFFSET": _j(o.committed),
                    "LAG": o.lag,
                }
            )
    return _table(name, rows)


def source_offsets(cat: Catalog, snapshot: OffsetsFn) -> pa.Table:
    database = cat.database.name()
    rows = []
    for p in cat.pipelines.all():
        for task, o in enumerate(snapshot(p)):
            if o.committed is None:
                continue
            value = o.committed if isinstance(o.committed, dict) else {"offset": o.committed}
            rows.append(
                {
                    "DATABASE_NAME": database,
                    "PIPELINE_NAME": p.name,
                    "TASK_ID": task if o.task is None else o.task,
                    "KEY": json.dumps(dict(o.key), sort_keys=True, separators=(",", ":")),
                    "VALUE": json.dumps(value, sort_keys=True, separators=(",", ":")),
                }
            )
    return _table("PIPELINES_SOURCE_OFFSETS", rows)


def files(cat: Catalog, snapshot: OffsetsFn, lists_files: Callable[[PipelineRecord], bool]):
    """Every object of every file pipeline: Unloaded, Loading (a file that grew since
    part of it was loaded), Loaded or Skipped (it could not be read to its end under
    SKIP PARSER ERRORS; FILE_ERROR says why), with the batch that last loaded from it."""
    database = cat.database.name()
    rows = []
    for p in cat.pipelines.all():
        if not lists_files(p):
            continue
        last: dict[str, int] = {}
        for b in cat.batches.list(p.id):
            if b["state"] in BatchState.committed():
                for part in b["partitions"]:
                    last[part["partition"]] = b["batch_id"]
        for o in snapshot(p):
            committed = o.committed
            skipped = isinstance(committed, dict) and "skipped" in committed
            if skipped:
                state = "Skipped"
            elif committed is not None and o.latest in (None, committed):
                state = "Loaded"  # (None: loaded, and gone from the store since)
            elif committed in (None, o.earliest):
                state = "Unloaded"
            else:
                state = "Loading"
            rows.append(
                {
                    "DATABASE_NAME": database,
                    "PIPELINE_NAME": p.name,
                    "SOURCE_TYPE": p.source.upper(),
                    "FILE_NAME": o.partition,
                    "FILE_SIZE": o.size,
                    "FILE_STATE": state,
                    "FILE_OFFSET": _j(committed),
                    "BATCH_ID": None if state == "Unloaded" else last.get(o.partition),
                    "FILE_ERROR": committed["skipped"] if skipped else None,
                }
            )
    return _table("PIPELINES_FILES", rows)


def maintenance(cat: Catalog) -> pa.Table:
    """Compactions, vacuums and retention runs of every table, oldest first (the newest
    ``catalog.history.MAINTENANCE_TO_KEEP`` per table)."""
    database = cat.database.name()
    rows = [
        {
            "DATABASE_NAME": database,
            "TABLE_NAME": m["table_name"],
            "OPERATION": m["operation"],
            "TRIGGER": m["trigger"],
            "ENGINE": m["engine"],
            "START_TIME": _utc(m["started_at"]),
            "DURATION_MS": m["duration_ms"],
            "FILES_REMOVED": m["files_removed"],
            "FILES_ADDED": m["files_added"],
            "BYTES_REMOVED": m["bytes_removed"],
            "BYTES_ADDED": m["bytes_added"],
            "ROWS_AFFECTED": m["rows_affected"],
            "TABLE_VERSION": m["table_version"],
            "ERROR": m["error"],
        }
        for m in cat.history.maintenance()
    ]
    return _table("TABLE_MAINTENANCE", rows)


def build(
    cat: Catalog,
    view: str,
    snapshot: OffsetsFn,
    lists_files: Callable[[PipelineRecord], bool] = lambda p: False,
) -> pa.Table:
    """One view by its (case-insensitive) name. ``snapshot`` gives a pipeline's source
    offsets, ``lists_files`` whether its source's partitions are files (the engine
    answers both; the catalog never talks to a source)."""
    v = view.upper()
    builders: dict[str, Callable[[], pa.Table]] = {
        "PIPELINES": lambda: pipelines(cat),
        "PIPELINES_BATCHES": lambda: batches(cat),
        "PIPELINES_BATCHES_SUMMARY": lambda: batches_summary(cat),
        "PIPELINES_ERRORS": lambda: errors(cat),
        "PIPELINES_OFFSETS": lambda: offsets(cat, snapshot),
        "PIPELINES_CURSORS": lambda: offsets(cat, snapshot, "PIPELINES_CURSORS"),
        "PIPELINES_SOURCE_OFFSETS": lambda: source_offsets(cat, snapshot),
        "PIPELINES_FILES": lambda: files(cat, snapshot, lists_files),
        "TABLE_MAINTENANCE": lambda: maintenance(cat),
    }
    return builders[v]()


VIEWS = tuple(SCHEMAS)

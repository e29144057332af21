"""The manifest of a procedure batch (``sinks.procedure``): what each table of the batch
takes — its files — and **how** it takes them, written durably before the first table
commits, so that a recovery finishes a half-committed batch exactly as the batch was
staged.

How a table takes the batch (:class:`TableCommit`) is the procedure's at staging time:
the table's location and schema, the schema of the files staged for its MERGE, the
MERGE's mode, match columns and ``ON DUPLICATE KEY UPDATE`` assignments. A procedure
replaced between the staging and a recovery (``CREATE OR REPLACE PROCEDURE`` after a
crash) may write the table another way, or not at all: the staged files fit only the
way they were made, and the batch's other tables committed them that way.

Manifests written before the way was recorded (no ``commit`` entry) are finished the way
the current procedure writes the table, as before.

Once every table holds the batch, its manifest is marked done (:func:`mark_done`): it
keeps the batch and its end offsets, no table, so that no recovery opens the tables
again (one may have been dropped since the procedure stopped writing it).
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.sinks.delta.upsert import Upsert

#: how a temporary manifest's name ends; one older than STALE_TMP_S is a crash's leftover
#: (a manifest is renamed into place as soon as it is written)
TMP = ".tmp"
STALE_TMP_S = 600.0


def _schema_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _schema_of(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


@dataclass(frozen=True)
class TableCommit:
    """How one table takes a procedure batch: data files appended (``upsert`` None), or
    files staged with ``staged_schema`` merged as ``upsert`` says."""

    location: str
    schema: pa.Schema
    staged_schema: pa.Schema | None = None
    upsert: Upsert | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"location": self.location, "schema": _schema_text(self.schema)}
        if self.staged_schema is not None:
            out["staged_schema"] = _schema_text(self.staged_schema)
        if self.upsert is not None:
            out["upsert"] = {
                "mode": self.upsert.mode,
                "keys": list(self.upsert.keys),
                "update": [list(a) for a in self.upsert.update],
            }
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TableCommit:
        staged = d.get("staged_schema")
        up = d.get("upsert")
        upsert = None
        if up is not None:
            update = tuple((str(c), str(e)) for c, e in up.get("update") or ())
            upsert = Upsert(tuple(up["keys"]), str(up["mode"]), update=update)
        return cls(
            str(d["location"]),
            _schema_of(d["schema"]),
            _schema_of(staged) if staged else None,
            upsert,
        )


def manifest_path(root: str, batch_id: int) -> str:
    return os.path.join(root, f"batch-{batch_id:08d}.json")


def write_manifest(root: str, doc: Mapping[str, Any]) -> None:
    """``doc`` as the manifest of batch ``doc["batch"]`` under ``root``, durably: written
    whole to a temporary file, synced, renamed over any earlier attempt's, and the
    directory synced, so that the rename itself survives a crash of the machine."""
    made = not os.path.isdir(root)
    os.makedirs(root, exist_ok=True)
    if made:
        _sync_dir(os.path.dirname(os.path.abspath(root)))
    path = manifest_path(root, int(doc["batch"]))
    tmp = f"{path}.{uuid.uuid4().hex}{TMP}"
    with open(tmp, "w") as f:
        json.dump(doc, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _sync_dir(root)


def mark_done(root: str, doc: Mapping[str, Any]) -> None:
    """Every table of ``doc``'s batch holds it: its manifest keeps the batch, its pipeline
    and end offsets, and ``done``, and no table to open again."""
    keep = ("batch", "pipeline", "offsets", "extra")
    write_manifest(root, {**{k: doc[k] for k in keep if k in doc}, "done": True, "tables": []})


def manifest_batches(root: str) -> list[int]:
    """The batches with a manifest under ``root``, newest first; temporary files a crash
    left behind (older than :data:`STALE_TMP_S`) are removed on the way."""
    if not os.path.isdir(root):
        return []
    numbers = []
    for name in os.listdir(root):
        if name.endswith(TMP):
            _remove_stale(os.path.join(root, name))
        elif name.startswith("batch-") and name.endswith(".json"):
            number = name.removeprefix("batch-").removesuffix(".json")
            if number.isdigit():
                numbers.append(int(number))
    return sorted(numbers, reverse=True)


def read_manifest(root: str, batch_id: int) -> dict[str, Any] | None:
    """The manifest of ``batch_id``, or None if it is gone (removed meanwhile)."""
    try:
        with open(manifest_path(root, batch_id)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def newest_manifest(root: str) -> dict[str, Any] | None:
    """The manifest of the last batch a commit was begun for (older ones are removed when
    a batch commits), or None."""
    for batch_id in manifest_batches(root):
        doc = read_manifest(root, batch_id)
        if doc is not None:
            return doc
    return None


def _remove_stale(path: str) -> None:
    try:
        if time.time() - os.stat(path).st_mtime > STALE_TMP_S:
            os.remove(path)
    except FileNotFoundError:
        pass  # renamed or removed by its writer meanwhile


def _sync_dir(path: str) -> None:
    """fsync a directory, so that a rename or a new entry in it is durable; a file system
    that cannot sync a directory (not a local one) is left to its own guarantees."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

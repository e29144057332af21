"""A procedure batch's manifest keeps how each table takes the batch (location, schema,
staged schema, MERGE mode, match columns, assignments) exactly, and the newest manifest
is the last batch a commit was begun for; its rename is made durable (the directory is
synced), a done batch's manifest keeps no table, and a crash's temporary files go."""

from __future__ import annotations

import os
import stat
import time

import pyarrow as pa

from sparkpipes.sinks.delta.upsert import Upsert, change_schema
from sparkpipes.sinks.procedure_manifest import (
    STALE_TMP_S,
    TableCommit,
    manifest_path,
    mark_done,
    newest_manifest,
    write_manifest,
)

SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string(), nullable=False),
        ("n", pa.int64()),
        ("amount", pa.decimal128(12, 2)),
        ("at", pa.timestamp("us")),
        ("tags", pa.list_(pa.string())),
    ]
)


def test_how_a_table_takes_a_batch_survives_the_manifest():
    ways = [
        TableCommit("/w/tables/a", SCHEMA),
        TableCommit("/w/tables/b", SCHEMA, SCHEMA, Upsert(("kind",), "replace")),
        TableCommit(
            "/w/tables/c",
            SCHEMA,
            SCHEMA,
            Upsert(("kind",), "update", update=(("n", "s.`n` + r.`n`"),)),
        ),
        TableCommit(
            "/w/tables/d", SCHEMA, change_schema(SCHEMA, ("kind",)), Upsert(("kind",), "changes")
        ),
    ]
    for way in ways:
        back = TableCommit.from_dict(way.to_dict())
        assert back == way
        assert back.schema.equals(way.schema, check_metadata=True)


def test_the_newest_manifest_is_the_last_batch_begun(tmp_path):
    root = str(tmp_path / "m")
    assert newest_manifest(root) is None
    for batch in (8, 9, 10):
        write_manifest(root, {"batch": batch, "tables": []})
    (tmp_path / "m" / "batch-00000011.json.abc.tmp").write_text("{")  # a torn write
    assert newest_manifest(root) == {"batch": 10, "tables": []}
    assert manifest_path(root, 10).endswith("batch-00000010.json")


def test_the_rename_is_made_durable_by_syncing_the_directory(tmp_path, monkeypatch):
    synced: list[tuple[bool, str]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append((stat.S_ISDIR(os.fstat(fd).st_mode), os.path.realpath(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    root = tmp_path / "m"
    write_manifest(str(root), {"batch": 3, "tables": []})
    assert synced[-1] == (True, os.path.realpath(root))  # after the file itself
    assert (False, os.path.realpath(manifest_path(str(root), 3))) not in synced  # a temp name
    assert any(not is_dir for is_dir, _ in synced)


def test_a_crashs_temporary_files_are_removed_when_read(tmp_path):
    root = tmp_path / "m"
    write_manifest(str(root), {"batch": 4, "tables": []})
    stale = root / "batch-00000005.json.abc.tmp"
    fresh = root / "batch-00000005.json.def.tmp"  # another writer's, being written
    stale.write_text("{")
    fresh.write_text("{")
    old = time.time() - STALE_TMP_S - 60
    os.utime(stale, (old, old))
    assert newest_manifest(str(root)) == {"batch": 4, "tables": []}
    assert not stale.exists() and fresh.exists()


def test_a_done_manifest_keeps_the_offsets_and_no_table(tmp_path):
    root = str(tmp_path / "m")
    doc = {"batch": 7, "pipeline": "p", "offsets": {"a": 1}, "extra": {}, "tables": [{"t": 1}]}
    write_manifest(root, doc)
    mark_done(root, doc)
    assert newest_manifest(root) == {
        "batch": 7,
        "pipeline": "p",
        "offsets": {"a": 1},
        "extra": {},
        "done": True,
        "tables": [],
    }

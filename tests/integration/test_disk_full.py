"""A warehouse whose disk fills mid-batch: a small tmpfs, mounted for the test (the tests
run as root, as CI does here), holds the catalog and the Delta tables.

Where the space runs out, and what must hold each time:

* while the tasks write the batch's Parquet files (the disk fills as data arrives): the
  batch fails closed with a ``StorageFullError`` naming the file, is retried a bounded
  number of times, then the pipeline is ``Error`` with the error recorded
  (last_error, information_schema.PIPELINES_ERRORS);
* while the driver writes the Delta commit (data files written, no room for the log);
* with no byte left at all (the data files fail, and so do the catalog's writes);
* while the catalog records a batch the Delta commit already published;
* while the ingest-time SQL job (a computed column) writes the table's files.

The second, fourth and fifth step through the commit protocol (``Engine._runner``) to
fill the disk between two of its steps. Each time the table stays readable with exactly
the committed rows, the committed offsets do not move, the Delta log references no file
of the failed attempt, and the attempt's files are removed (they would otherwise eat the
space the retries need; only a crash leaves such unreferenced files). Once space
returns, the pipeline resumes and every record is in the table exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkpipes import Engine
from sparkpipes.errors import CatalogError, SinkError, SparkpipesError, StorageFullError

NO_SPACE = "No space left on device"


@pytest.fixture
def small_disk(tmp_path):
    """A 32 MB tmpfs; the test fails (never skips) when it cannot be mounted."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, (
        f"cannot mount a tmpfs on {mnt} (the disk-full test needs root): {done.stderr.strip()}"
    )
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(disk: Path, leave: int = 0) -> None:
    """Allocate a ballast file until only ``leave`` bytes are free."""
    with open(disk / "ballast", "ab") as f:
        os.posix_fallocate(f.fileno(), f.tell(), max(0, free_bytes(disk) - leave) or 1)
    assert free_bytes(disk) <= leave


def unfill(disk: Path) -> None:
    (disk / "ballast").unlink()


class Topic:
    """Produces rows ``{"id", "pad"}`` round-robin over 4 partitions and keeps count: a
    random pad, so that Parquet cannot compress the batch small."""

    def __init__(self, broker, name: str) -> None:
        self.broker, self.name = broker, name
        self.next_id = 0
        self.ends = {str(p): 0 for p in range(4)}

    def produce(self, n: int) -> None:
        start, self.next_id = self.next_id, self.next_id + n
        rows = [
            json.dumps({"id": i, "pad": os.urandom(100).hex()}) for i in range(start, n + start)
        ]
        self.broker.produce(self.name, rows, partitions=4)
        for i in range(n):
            self.ends[str(i % 4)] += 1


def ids(eng: Engine) -> list[int]:
    return sorted(eng.table_arrow("events").column("id").to_pylist())


class TableFiles:
    """The Delta table as it is on disk: log entries, data files, referenced data files."""

    def __init__(self, eng: Engine) -> None:
        self.location = Path(eng.catalog.tables.get("events").location)
        table = DeltaTable(str(self.location))
        self.version = table.version()
        self.referenced = {os.path.basename(u) for u in table.file_uris()}
        self.log = sorted(p.name for p in (self.location / "_delta_log").iterdir())
        self.data = {p.name for p in self.location.rglob("*.parquet")}

    def of_batch(self, batch: int) -> set[str]:
        return {f for f in self.data if f.startswith(f"part-b{batch:08d}-")}


def assert_clear(err: SparkpipesError, *needles: str) -> None:
    """What a front end prints for the error: one line, with what and where."""
    text = str(err)
    assert len(text.splitlines()) == 1 and "Traceback" not in text and "\x1b" not in text, text
    for needle in needles:
        assert needle in text, text


def assert_intact(eng: Engine, before: TableFiles, rows: list[int], offsets: dict) -> None:
    """The table reads exactly the committed rows, at the committed version and offsets,
    and the failed attempt left no data file or log entry behind."""
    assert ids(eng) == rows
    assert eng.offsets("p") == offsets
    now = TableFiles(eng)
    assert (now.version, now.log, now.referenced) == (before.version, before.log, before.referenced)
    assert now.data == before.data, f"files of the failed attempt left: {now.data - before.data}"


def catalog_ok(warehouse: Path) -> None:
    with contextlib.closing(sqlite3.connect(warehouse / "catalog.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_disk_full_mid_batch_fails_closed_and_resumes_exactly_once(small_disk, broker, topic):
    src = Topic(broker, topic)
    warehouse = small_disk / "warehouse"
    eng = Engine(warehouse)
    try:
        eng.create_table("events", "id BIGINT, pad STRING")
        eng.create_pipeline(
            "p",
            source="kafka",
            location=f"{broker.bootstrap}/{topic}",
            table="events",
            max_retries=2,
        )
        src.produce(1000)
        eng.run_batch("p")
        committed = eng.offsets("p")
        assert ids(eng) == list(range(1000)) and committed == src.ends
        before = TableFiles(eng)

        # 1. the tasks' Parquet writes: ~4 MB of data, 1 MB of room
        src.produce(20_000)
        fill(small_disk, leave=1 << 20)
        with pytest.raises(StorageFullError) as failed:
            eng.run_batch("p")  # retried twice (the disk may free up), then Error
        err = failed.value
        assert err.transient and isinstance(err, SinkError) and err.batch == 2
        assert_clear(err, "[SP402] cannot write a data file of table 'events'", NO_SPACE)
        assert str(before.location) in err.message  # names the file it could not write
        assert_intact(eng, before, list(range(1000)), committed)
        assert free_bytes(small_disk) >= (1 << 20) - (256 << 10)  # the attempts' files went
        rec = eng.pipeline("p")
        assert rec.state == "Error" and rec.last_error == str(err)
        attempts = [(b["batch_id"], b["attempt"], b["state"]) for b in eng.batches("p")]
        assert attempts == [(1, 1, "Succeeded")] + [(2, a, "Failed") for a in (1, 2, 3)]
        (stored,) = eng.information_schema("PIPELINES_ERRORS").to_pylist()
        assert (stored["PIPELINE_NAME"], stored["BATCH_ID"]) == ("p", 2)
        assert (stored["ERROR_TYPE"], stored["ERROR_CODE"]) == ("sink", "SP402")
        assert NO_SPACE in stored["ERROR_MESSAGE"]
        catalog_ok(warehouse)

        # 2. the Delta commit: the batch's files are written, then not a byte is left
        unfill(small_disk)
        runner = eng._runner("p")
        written = runner.extract(runner.plan())
        assert written.rows == 20_000 and len(written.staged) == 4
        fill(small_disk)
        with pytest.raises(StorageFullError) as failed:
            runner.commit(written)
        assert_clear(failed.value, "commit to Delta table 'events' failed", NO_SPACE, "_delta_log")
        assert_intact(eng, before, list(range(1000)), committed)  # no log entry, files gone
        # the catalog is on the same disk: removing the attempt's files first made room
        # to record the failure
        (stored,) = eng.information_schema("PIPELINES_ERRORS").to_pylist()
        assert stored["ERROR_CODE"] == "SP402" and "_delta_log" in stored["ERROR_MESSAGE"]

        # 3. no byte left for anything: the data files fail, then the catalog's writes do
        # (recording the failure, the retry, the state): what is raised is the data file's
        # error or, when even the retry cannot be recorded, the catalog's; either says why
        fill(small_disk)  # again: the failed commit gave the space of its files back
        rec = eng.pipeline("p")
        with pytest.raises(SparkpipesError) as failed:
            eng.run_batch("p")
        assert isinstance(failed.value, StorageFullError | CatalogError)
        assert_clear(failed.value)
        assert re.search(
            f"{NO_SPACE}|catalog sqlite:.* failed: database or disk is full", str(failed.value)
        )
        assert_intact(eng, before, list(range(1000)), committed)
        assert eng.pipeline("p") == rec  # as it was: the catalog could take no write
        catalog_ok(warehouse)

        # 4. the catalog, after the Delta commit published the batch: the history row is
        # lost, the batch is not (the table, not the catalog, says where to resume)
        unfill(small_disk)
        runner = eng._runner("p")
        written = runner.extract(runner.plan())
        publish = runner.sink.commit

        def publish_then_fill(*args):
            done = publish(*args)
            fill(small_disk)
            return done

        runner.sink.commit = publish_then_fill
        with pytest.raises(
            CatalogError, match=r"catalog sqlite:.* failed: database or disk is full"
        ):
            runner.commit(written)
        runner.sink.commit = publish
        assert ids(eng) == list(range(21_000))
        assert eng.offsets("p") == src.ends == written.ends
        assert TableFiles(eng).version == before.version + 1
        catalog_ok(warehouse)

        # 5. space returns: resume with more data; every record exactly once
        unfill(small_disk)
        src.produce(5000)
        eng.start("p", run=False)
        results = eng.run_batches("p", 20, until_idle=True)
        assert results[-1].state == "NoData"
        assert ids(eng) == list(range(26_000))
        assert eng.offsets("p") == src.ends
        rec = eng.pipeline("p")
        assert (rec.state, rec.last_error) == ("Running", None)
        done = [b["batch_id"] for b in eng.batches("p") if b["state"] == "Succeeded"]
        assert done == [1, 3]  # batch 2's row is the one step 4 could not write
        after = TableFiles(eng)
        assert after.data == after.referenced  # not one orphan Parquet file
        catalog_ok(warehouse)
    finally:
        eng.close()


def test_disk_full_in_the_ingest_sql_job(small_disk, broker, topic):
    """A table with a computed column: the tasks stage what they decode, then one Spark
    job applies the SQL and writes the table's files. The disk fills during that job."""
    src = Topic(broker, topic)
    eng = Engine(small_disk / "warehouse")
    try:
        eng.create_table(
            "events", "id BIGINT, pad STRING, twice BIGINT", computed={"twice": "id * 2"}
        )
        eng.create_pipeline(
            "p",
            source="kafka",
            location=f"{broker.bootstrap}/{topic}",
            table="events",
            max_retries=0,
        )
        src.produce(1000)
        eng.run_batch("p")
        committed = eng.offsets("p")
        before = TableFiles(eng)

        src.produce(4000)
        runner = eng._runner("p")
        refine = runner.sink.finish

        def fill_then_refine(*args):
            fill(small_disk)
            return refine(*args)

        runner.sink.finish = fill_then_refine
        with pytest.raises(StorageFullError) as failed:
            runner.extract(runner.plan())
        runner.sink.finish = refine
        assert_clear(failed.value, "cannot write a data file of table 'events'", NO_SPACE)
        assert failed.value.transient  # a full disk, not a schema problem
        assert_intact(eng, before, list(range(1000)), committed)

        unfill(small_disk)
        eng.run_batches("p", 10, until_idle=True)
        table = eng.table_arrow("events")
        assert ids(eng) == list(range(5000))
        assert table.column("twice").to_pylist() == [2 * i for i in table.column("id").to_pylist()]
        assert eng.offsets("p") == src.ends
        after = TableFiles(eng)
        assert after.data == after.referenced
        staging = after.location / "_sparkpipes_staging"
        assert not staging.exists() or not any(p.is_file() for p in staging.rglob("*"))
    finally:
        eng.close()

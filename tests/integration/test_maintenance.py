"""Table maintenance beside a loading pipeline: compaction in the background, checkpoints,
vacuum of unreferenced files, history pruning, and the statements that show and drive
them (real broker, Spark, Delta)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from deltalake import DeltaTable

from sparkpipes.engine.housekeeping import lease_key
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)
    return lambda text: session.execute(text)[-1]


def test_background_maintenance_while_a_pipeline_loads(engine, sql, broker, topic, monkeypatch):
    """Many small batches while the housekeeper runs every 100 ms and a reader reads:
    every snapshot holds each row once and none goes missing, the table's files stay
    bounded, checkpoints are written, the log is trimmed, the batch history is pruned to
    its retention and the rows loaded still add up."""
    from sparkpipes.sinks.delta import maintenance

    monkeypatch.setattr(maintenance, "LOG_MIN_AGE_S", 0)
    for name, value in (
        ("table_maintenance_interval_ms", 100),
        ("table_compaction_min_files", 8),
        ("table_checkpoint_interval", 10),
        ("table_log_retention_commits", 5),
        ("pipelines_batches_metadata_to_keep", 20),
    ):
        sql(f"SET GLOBAL {name} = {value}")
    total = 640
    broker.produce(topic, [json.dumps({"id": i}) for i in range(total)], partitions=4)
    sql("CREATE TABLE ev (id BIGINT)")
    sql(
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "BATCH_INTERVAL 0 MAX_OFFSETS_PER_BATCH_PARTITION 2 INTO TABLE ev FORMAT JSON (id <- id)"
    )
    location = engine.catalog.tables.get("ev").location
    seen: list[tuple[int, int]] = []
    failures: list[str] = []
    halt = threading.Event()

    def reader() -> None:
        while not halt.is_set():
            try:
                table = DeltaTable(location).to_pyarrow_table(columns=["id"])
            except Exception as e:  # a reader must always be able to read
                failures.append(repr(e))
                continue
            ids = table.column("id").to_pylist()
            seen.append((len(ids), len(set(ids))))
            time.sleep(0.02)

    threads = [
        threading.Thread(target=reader),
        threading.Thread(target=engine.housekeeper.run, args=(halt,)),
    ]
    for t in threads:
        t.start()
    most_files = 0
    try:
        for _ in range(20):
            done = engine.run_batches("p", 5)
            most_files = max(most_files, len(DeltaTable(location).file_uris()))
            if done and done[-1].rows == 0:
                break
    finally:
        halt.set()
        for t in threads:
            t.join()
    engine.housekeeper.round()

    ids = engine.table_arrow("ev").column("id").to_pylist()
    assert sorted(ids) == list(range(total))
    assert not failures, failures[:3]
    assert seen and all(n == distinct for n, distinct in seen)  # no row twice
    assert [n for n, _ in seen] == sorted(n for n, _ in seen)  # none goes missing
    # 80 batches of 4 files; compaction at 8 small files, every 100 ms
    assert most_files <= 40, most_files
    status = dict(zip(sql("SHOW TABLE STATUS").columns, sql("SHOW TABLE STATUS").rows[0]))
    assert status["Files"] <= 8 and status["Rows"] == total
    assert status["Checkpoint"] is not None
    assert status["Checkpoint"] >= status["Version"] - 10
    assert status["Last_compaction"] is not None
    done = sql(
        "SELECT OPERATION, TRIGGER, count(*), sum(FILES_REMOVED) "
        "FROM information_schema.TABLE_MAINTENANCE GROUP BY OPERATION, TRIGGER"
    ).rows
    compact = [r for r in done if r[0] == "COMPACT"]
    assert compact and compact[0][1] == "auto" and compact[0][3] > 80
    kept = sql("SELECT count(DISTINCT BATCH_ID) FROM information_schema.PIPELINES_BATCHES").rows
    assert kept == [(20,)]
    pipeline = engine.catalog.pipelines.get("p")
    assert engine.catalog.batches.loaded(pipeline.id)[0] == total
    # the log holds the last checkpoint and a few commits before it
    versions = sorted(
        int(f[:20]) for f in os.listdir(os.path.join(location, "_delta_log")) if f[:20].isdigit()
    )
    assert versions[0] >= status["Checkpoint"] - 10 and versions[-1] == status["Version"]
    # where the pipeline resumes is the table's, untouched by maintenance: nothing new
    assert engine.run_batches("p", 1)[0].rows == 0
    # while the catalog misses the pipeline's last commit (a crash right after it), the
    # log is kept whole: resuming then needs that commit's offsets from it
    sql("SET GLOBAL table_checkpoint_interval = 100")
    broker.produce(topic, [json.dumps({"id": total + i}) for i in range(8)], partitions=4)
    assert engine.run_batches("p", 1)[0].rows == 8
    last = engine.catalog.batches.last_succeeded(pipeline.id)
    engine.catalog.batches.record(
        pipeline_id=pipeline.id,
        pipeline_name="p",
        batch_id=last[0] + 1,
        attempt=1,
        state="Succeeded",
        started_at=engine.catalog.batches.list(pipeline.id, last=1)[0]["started_at"],
        offsets=last[1],
    )
    before = sorted(os.listdir(os.path.join(location, "_delta_log")))
    sql("SET GLOBAL table_log_retention_commits = 1")
    engine.housekeeper.round()
    after = sorted(os.listdir(os.path.join(location, "_delta_log")))
    assert set(before) <= set(after)  # nothing trimmed (a compaction may add a commit)


def test_vacuum_deletes_only_unreferenced_old_files(engine, sql, tmp_path):
    """Orphans of crashed attempts older than the retention go, with stale staging
    directories; committed files stay however old, and so do young orphans (a batch in
    flight may own them). Below one hour of retention VACUUM refuses."""
    sql("CREATE TABLE v (id BIGINT, KEY (id))")
    for i in range(6):
        sql(f"INSERT INTO v VALUES ({i}), ({i + 100})")
    location = engine.catalog.tables.get("v").location
    two_hours_ago = time.time() - 7200

    def aged(path: str) -> str:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"PAR1")
        os.utime(path, (two_hours_ago, two_hours_ago))
        return path

    for f in os.listdir(location):  # committed files, however old, are never vacuumed
        if f.endswith(".parquet"):
            os.utime(os.path.join(location, f), (two_hours_ago, two_hours_ago))
    old_orphan = aged(os.path.join(location, "part-b00000007-t0-dead.snappy.parquet"))
    young_orphan = os.path.join(location, "part-b00000008-t0-live.snappy.parquet")
    with open(young_orphan, "wb") as f:
        f.write(b"PAR1")
    stale = aged(os.path.join(location, "_sparkpipes_staging", "pid", "attempt1", "x.parquet"))
    live = os.path.join(location, "_sparkpipes_staging", "pid", "attempt2", "y.parquet")
    os.makedirs(os.path.dirname(live))
    with open(live, "wb") as f:
        f.write(b"PAR1")

    assert sql("VACUUM v RETAIN 1 HOURS DRY RUN").rows == [(os.path.basename(old_orphan),)]
    assert os.path.exists(old_orphan)
    with pytest.raises(ConfigError, match=r"at least 1 hour\(s\).*RETAIN 0 HOURS"):
        sql("VACUUM v RETAIN 0 HOURS")

    # OPTIMIZE TABLE … FULL: compacted and clustered by the key; the replaced files are
    # unreferenced now but were replaced just now: kept for the retention
    msg = sql("OPTIMIZE TABLE v FULL").rows[0]
    assert msg[:3] == ("v", "optimize", "status") and "12 files compacted into 1" in msg[3]
    replaced = DeltaTable(location).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=True, full=True
    )
    assert len(replaced) >= 12

    engine.set_variable("table_vacuum_interval_ms", 1)
    engine.set_variable("table_vacuum_retain_hours", 1)
    engine.housekeeper.round()
    assert not os.path.exists(old_orphan) and not os.path.exists(os.path.dirname(stale))
    assert os.path.exists(young_orphan) and os.path.exists(live)
    assert sorted(r[0] for r in sql("SELECT id FROM v").rows) == sorted(
        [i for i in range(6)] + [i + 100 for i in range(6)]
    )
    for uri in DeltaTable(location).file_uris():
        assert os.path.exists(uri.removeprefix("file://"))
    ops = sql(
        "SELECT OPERATION, TRIGGER, FILES_REMOVED FROM information_schema.TABLE_MAINTENANCE "
        "WHERE TABLE_NAME = 'v' ORDER BY START_TIME"
    ).rows
    assert ("COMPACT", "user", 12) in [tuple(r) for r in ops]
    assert ("VACUUM", "auto", 1) in [tuple(r) for r in ops]
    # another engine holding the table's maintenance lease: this one leaves the table be
    engine.catalog.leases.acquire(lease_key("v"), "another-engine", 60)
    assert "v" not in engine.housekeeper.round()


def test_a_quiet_table_is_not_read_again_until_a_commit_or_a_setting_changes(engine, sql):
    """An idle table costs the housekeeper one file status per round: once a round found
    nothing to compact or trim, later rounds skip both (what a round did per table says
    whether it looked) until the table gets a commit (then small files are compacted as
    before) or a maintenance variable changes."""
    engine.set_variable("table_compaction_min_files", 4)
    sql("CREATE TABLE q (id BIGINT)")
    location = engine.catalog.tables.get("q").location
    for i in range(3):
        sql(f"INSERT INTO q VALUES ({i})")

    def round_looked() -> bool:
        return "compacted" in engine.housekeeper.round().get("q", {})

    assert round_looked()  # 3 small files: not due; settled
    assert not round_looked() and not round_looked()
    sql("INSERT INTO q VALUES (3)")  # a commit: the 4th small file
    assert round_looked()
    assert len(DeltaTable(location).file_uris()) == 1  # compacted
    assert round_looked()  # its own commit moved the table: looked at once more
    assert not round_looked()
    engine.set_variable("table_compaction_min_files", 2)
    assert round_looked()
    assert sorted(r[0] for r in sql("SELECT id FROM q").rows) == [0, 1, 2, 3]

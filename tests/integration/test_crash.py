"""Crash test: exactly once under SIGKILL at random moments and at every commit-protocol step.

A child process (``crash_child.py``) runs pipeline ``p`` (Kafka topic -> Delta table
``events``, provenance columns on) while a producer thread writes 100,000 JSON records with
unique ids, id ``i`` to partition ``i % 4``. The test kills the child's process group (the
Python driver, the Spark JVM and its Python workers) 16 times and restarts it each time:

* 4 times the child kills itself at a crash point of the commit protocol
  (``SPARKPIPES_CRASH_AT=<point>:<n>``, n random in 1..3), once per point;
* 12 times the test SIGKILLs the group 1.5-6 s (random) after the child's first batch.

Each child is started ahead, while the one before it still runs, and waits in standby with
its SparkSession up (see ``crash_child.py``); it opens the warehouse only when the test lets
it go, after the kill of the one before. After each kill the test waits until no process of
the group is left, then checks, without Spark,
that the table holds each Kafka (partition, offset) below the committed end offsets exactly
once and nothing else, and that the kill left the table and the catalog where that crash
point must leave them. Finally it lets the child run until it finds nothing new and checks
that every id is in the table exactly once, at the partition and offset the broker
acknowledged for it, and that committed offsets never decrease from batch to batch.

Replay a failure with ``SPARKPIPES_CRASH_SEED=<seed>`` (printed at the start and in every
assertion message): the seed fixes the schedule (crash points and their n, kill delays,
producer chunk sizes and pauses); process timing still varies from run to run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sparkpipes.engine.faults import POINTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

CHILD = Path(__file__).with_name("crash_child.py")
TABLE, PIPELINE = "events", "p"
PART_COL, OFFSET_COL = "__source_partition", "__source_offset"

N_RECORDS = 100_000
PARTITIONS = 4
CORES = 2  # the children's local[2]
INITIAL_RECORDS = 40_000  # produced before the first start: 10,000 per partition of backlog
MAX_OFFSETS = 3_000  # the child pipeline's max_offsets_per_batch_partition
STANDBY_TIMEOUT_S = 240.0
RUN_SECONDS = 10.0  # first guess of one start-batch-kill cycle; then measured
CHUNK = (25, 400)  # records per producer chunk: small, so that nearly every batch commits
RANDOM_KILLS = 12
POINT_SLOTS = 8  # crash-point runs are among the first runs, while records still arrive
KILL_DELAY_S = (1.5, 6.0)

FIRST_BATCH_TIMEOUT_S = 180.0
CRASH_POINT_TIMEOUT_S = 240.0
GROUP_GONE_TIMEOUT_S = 60.0
PRODUCER_TIMEOUT_S = 400.0
FINAL_TIMEOUT_S = 420.0


# -- the producer ------------------------------------------------------------------------
class RecordProducer:
    """Writes ids 0..N_RECORDS-1 once each (idempotent producer), id ``i`` to partition
    ``i % PARTITIONS``, and keeps the (partition, offset) the broker acknowledged for each."""

    def __init__(self, bootstrap: str, topic: str, rng: random.Random) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.rng = rng
        self.placement: dict[int, tuple[str, int]] = {}
        self.failures: list[str] = []
        self.error: BaseException | None = None
        self.next_id = 0
        self.chunks = 0
        self.finished_at = 0.0
        self.target_end = time.time() + 300.0  # when to be done: moved by the kill loop
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "log_level": 3,
            }
        )
        self._thread = threading.Thread(target=self._run, name="crash-producer", daemon=True)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.failures.append(str(err))
            return
        self.placement[json.loads(msg.value())["id"]] = (str(msg.partition()), msg.offset())

    def produce(self, count: int) -> None:
        """Produce the next ``count`` ids and wait until the broker acknowledged them."""
        end = min(self.next_id + count, N_RECORDS)
        for i in range(self.next_id, end):
            value = json.dumps({"id": i, "payload": f"record-{i}-" + "x" * (i % 64)})
            while True:
                try:
                    self._producer.produce(
                        self.topic,
                        value.encode(),
                        partition=i % PARTITIONS,
                        on_delivery=self._delivered,
                    )
                    break
                except BufferError:
                    self._producer.poll(0.05)
            if i % 1000 == 0:
                self._producer.poll(0)
        left = self._producer.flush(60)
        if left or self.failures:
            raise RuntimeError(f"{left} records undelivered, failures: {self.failures[:5]}")
        self.next_id = end
        self.chunks += 1

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            while self.next_id < N_RECORDS and not self._stop.is_set():
                self.produce(self.rng.randint(*CHUNK))
                # spread the chunks left until target_end: records arrive during every run
                chunks_left = max((N_RECORDS - self.next_id) / (sum(CHUNK) / 2), 1)
                pause = max(self.target_end - time.time(), 0) / chunks_left
                self._stop.wait(min(pause * self.rng.uniform(0.5, 1.5), 5))
            self.finished_at = time.time()
        except BaseException as e:
            self.error = e

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(90)


# -- what the warehouse holds (read without Spark, with no child running) ------------------
@dataclass
class State:
    version: int = 0  # the pipeline's last batch committed in the table (0: none)
    offsets: dict[str, int] = field(default_factory=dict)  # that batch's end offsets
    catalog: dict[int, dict[str, Any]] = field(default_factory=dict)  # Succeeded rows
    files: set[str] = field(default_factory=set)  # Parquet files in the table directory
    referenced: set[str] = field(default_factory=set)  # files of the current snapshot
    ids: list[int] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    offs: list[int] = field(default_factory=list)
    location: str = ""
    app_id: str = ""

    @property
    def orphans(self) -> set[str]:
        return self.files - self.referenced


def read_state(warehouse: Path) -> State:
    if not (warehouse / "catalog.db").exists():
        return State()
    from deltalake import DeltaTable

    from sparkpipes.catalog import Catalog
    from sparkpipes.sinks import DeltaSink

    catalog = Catalog(f"sqlite:///{warehouse / 'catalog.db'}")
    try:
        if TABLE not in [t.name for t in catalog.tables.all()] or PIPELINE not in [
            p.name for p in catalog.pipelines.all()
        ]:
            return State()
        rec = catalog.tables.get(TABLE)
        pipeline_id = catalog.pipelines.get(PIPELINE).id
        rows = catalog.batches.list(pipeline_id)
    finally:
        catalog.close()
    app_id = f"sparkpipes:{pipeline_id}"
    committed = DeltaSink(rec.location, rec.schema, TABLE).committed(app_id)  # no catalog hint
    dt = DeltaTable(rec.location)
    t = dt.to_pyarrow_table(columns=["id", PART_COL, OFFSET_COL])
    return State(
        version=committed.batch_id if committed else 0,
        offsets=dict(committed.offsets) if committed else {},
        catalog={r["batch_id"]: r for r in rows if r["state"] == "Succeeded"},
        files={p.name for p in Path(rec.location).glob("*.parquet")},
        referenced={os.path.basename(u) for u in dt.file_uris()},
        ids=t.column("id").to_pylist(),
        parts=t.column(PART_COL).to_pylist(),
        offs=t.column(OFFSET_COL).to_pylist(),
        location=rec.location,
        app_id=app_id,
    )


def table_problems(s: State) -> list[str]:
    """The table must hold each (partition, offset) below the committed ends exactly once."""
    problems = []
    if len(s.ids) != sum(s.offsets.values()):
        problems.append(
            f"{len(s.ids)} rows but the committed offsets {s.offsets} account for "
            f"{sum(s.offsets.values())}"
        )
    dup_ids = sorted(i for i, c in Counter(s.ids).items() if c > 1)
    if dup_ids:
        problems.append(f"{len(dup_ids)} ids more than once, e.g. {dup_ids[:20]}")
    wrong = [(i, p) for i, p in zip(s.ids, s.parts) if str(i % PARTITIONS) != p]
    if wrong:
        problems.append(f"{len(wrong)} ids in the wrong partition, e.g. {wrong[:10]}")
    by_part: dict[str, Counter] = {}
    for p, o in zip(s.parts, s.offs):
        by_part.setdefault(p, Counter())[o] += 1
    for p in sorted(set(by_part) | set(s.offsets)):
        seen = by_part.get(p, Counter())
        end = s.offsets.get(p, 0)
        dups = sorted(o for o, c in seen.items() if c > 1)
        missing = sorted(set(range(end)) - set(seen))
        beyond = sorted(o for o in seen if not 0 <= o < end)
        if dups or missing or beyond:
            problems.append(
                f"partition {p} (committed end {end}): offsets twice {dups[:20]} "
                f"({len(dups)}), missing {missing[:20]} ({len(missing)}), beyond the end "
                f"{beyond[:20]} ({len(beyond)})"
            )
    return problems


def table_history(s: State) -> list[tuple[int, int, dict[str, int]]]:
    """(version, batch id, end offsets) of every commit of the pipeline, oldest first."""
    from deltalake import DeltaTable

    out = [
        (h["version"], int(h["sparkpipes.batch"]), json.loads(h["sparkpipes.offsets"]))
        for h in DeltaTable(s.location).history()
        if h.get("sparkpipes.pipeline") == s.app_id
    ]
    return sorted(out, key=lambda x: x[0])


def batch_of(file_name: str) -> int:
    """Batch id in a data file name: part-b{batch:08d}-p{partition}-{seq}-{uuid}.parquet."""
    return int(file_name.split("-")[1][1:])


def decreases(seq: list[tuple[int, dict[str, int]]]) -> list[str]:
    """Where a partition's offset goes down from one (batch id, offsets) to the next."""
    out, last = [], {}
    for batch, offsets in seq:
        for p, o in offsets.items():
            if p in last and o < last[p][1]:
                out.append(f"partition {p}: {last[p][1]} at batch {last[p][0]} -> {o} at {batch}")
            last[p] = (batch, o)
        for p in set(last) - set(offsets):
            out.append(f"partition {p} vanished from the offsets at batch {batch}")
    return out


# -- the child ---------------------------------------------------------------------------
@dataclass
class Run:
    index: int
    kind: str  # a crash point, "random" or "final"
    param: float  # crash point: its n; random: seconds after the first batch
    proc: subprocess.Popen
    log: Path
    before: State
    t0: float
    lines: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    first_batch: threading.Event = field(default_factory=threading.Event)
    standby: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None
    after: State | None = None
    outcome: str = ""
    seconds: float = 0.0

    @property
    def batches(self) -> list[dict[str, Any]]:
        return [x for x in self.lines if x.get("event") == "batch"]

    @property
    def committed(self) -> list[dict[str, Any]]:
        return [x for x in self.batches if x["state"] != "NoData"]

    def stderr_tail(self, n: int = 25) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                d = json.loads(line)
            except ValueError:
                self.raw.append(line.rstrip())
                continue
            self.lines.append(d)
            if d.get("event") == "standby":
                self.standby.set()
            if d.get("event") == "batch":
                self.first_batch.set()


def launch_child(index: int, kind: str, param: float, args: list[str], tmp: Path) -> Run:
    """Start a child in standby: its Spark up, the warehouse not opened (see ``go``)."""
    env = {k: v for k, v in os.environ.items() if k != "SPARKPIPES_CRASH_AT"}
    env.update(
        PYTHONUNBUFFERED="1",
        CRASH_CHILD_STANDBY="1",
        SPARK_LOCAL_DIRS=str(tmp / "spark-local"),
        CRASH_CHILD_MAX_OFFSETS=str(MAX_OFFSETS),
    )
    if kind in POINTS:
        env["SPARKPIPES_CRASH_AT"] = f"{kind}:{int(param)}"
    log = tmp / "logs" / f"run-{index:02d}-{kind}.err"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=tmp,
            env=env,
            start_new_session=True,  # a process-group leader: the JVM joins its group
        )
    run = Run(index, kind, param, proc, log, State(), time.time())
    run.reader = threading.Thread(target=run.read, name=f"crash-child-{index}", daemon=True)
    run.reader.start()
    return run


def go(run: Run, before: State, where: str) -> None:
    """Let a child in standby open the warehouse (in the state ``before``) and run."""
    deadline = time.time() + STANDBY_TIMEOUT_S
    while not run.standby.wait(0.2):
        assert run.proc.poll() is None and time.time() < deadline, (
            f"{where}: the child never got to standby (exit {run.proc.poll()}):\n"
            f"{run.stderr_tail()}"
        )
    assert run.proc.stdin is not None
    run.before, run.t0 = before, time.time()
    run.proc.stdin.write("go\n")
    run.proc.stdin.close()


def stop_child(run: Run | None) -> None:
    if run is not None:
        kill_group(run.proc.pid)
        try:
            run.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass


def group_members(pgid: int) -> list[str]:
    import psutil

    out = []
    for p in psutil.process_iter(["name", "status"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid}:{p.info['name']}")
        except (OSError, psutil.Error):
            continue
    return out


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def wait_group_gone(pgid: int, tag: str) -> None:
    deadline = time.time() + GROUP_GONE_TIMEOUT_S
    while members := group_members(pgid):
        assert time.time() < deadline, f"{tag}: process group {pgid} still has {members}"
        time.sleep(0.1)


def make_schedule(rng: random.Random) -> list[tuple[str, float]]:
    """One run per kill: each crash point once (after_write first, while the initial backlog
    guarantees its batch has records to write), the rest random-moment kills."""
    kinds = ["random"] * (RANDOM_KILLS + len(POINTS))
    kinds[0] = "after_write"
    others = [p for p in POINTS if p != "after_write"]
    rng.shuffle(others)
    for slot, point in zip(sorted(rng.sample(range(1, POINT_SLOTS), len(others))), others):
        kinds[slot] = point
    return [
        (k, float(rng.randint(1, 3)) if k in POINTS else rng.uniform(*KILL_DELAY_S)) for k in kinds
    ]


# -- checks of one run -------------------------------------------------------------------
def check_run(run: Run, tag: str) -> None:
    """What a run left behind must match how it ended; see the module docstring."""
    b, a = run.before, run.after
    assert a is not None
    where = f"{tag} run {run.index} ({run.kind} {run.param:g}; stderr {run.log})"
    problems = table_problems(a)
    assert not problems, f"{where}: table inconsistent after the run: {problems}"

    # every batch continues from what the table had committed before it
    expected = b.version + 1
    for line in run.batches:
        assert line["batch_id"] == expected, (
            f"{where}: child ran batch {line['batch_id']}, expected {expected}: {line}"
        )
        if line["state"] != "NoData":
            expected += 1
    c = len(run.committed)
    n = int(run.param)
    new_orphans = a.orphans - b.orphans
    in_flight = a.version + 1
    strays = sorted(f for f in new_orphans if batch_of(f) != in_flight)
    assert not strays, f"{where}: unreferenced files of batches not in flight: {strays}"

    if run.kind in ("after_plan", "after_write"):
        assert len(run.batches) == n - 1, (
            f"{where}: expected {n - 1} batches before the crash, got {len(run.batches)}"
        )
        assert a.version == b.version + c, (
            f"{where}: table at batch {a.version}, expected {b.version} + {c} committed"
        )
        if run.kind == "after_plan":
            assert not new_orphans, f"{where}: files written before the write step: {new_orphans}"
        else:
            tasks = min(PARTITIONS, CORES)  # the partitions share the cores' tasks
            assert len(new_orphans) == tasks, (
                f"{where}: batch {in_flight} read the backlog of every partition in {tasks} "
                f"tasks, so it should have left {tasks} uncommitted files, found "
                f"{sorted(new_orphans)}"
            )
        run.outcome = f"batch {in_flight} not committed, {len(new_orphans)} files left unreferenced"
    elif run.kind in ("after_commit", "after_record"):
        assert c == n - 1, f"{where}: expected {n - 1} committed batches before, got {c}"
        assert a.version == b.version + n, (
            f"{where}: table at batch {a.version}, expected {b.version} + {n}"
        )
        assert not new_orphans, f"{where}: unreferenced files {sorted(new_orphans)}"
        if run.kind == "after_commit":
            assert a.version not in a.catalog, (
                f"{where}: catalog recorded batch {a.version} though the crash came before"
            )
            if n > 1:
                assert a.version - 1 in a.catalog, f"{where}: batch {a.version - 1} unrecorded"
            run.outcome = f"batch {a.version} committed, not in the catalog"
        else:
            row = a.catalog.get(a.version)
            assert row is not None and row["offsets"] == a.offsets, (
                f"{where}: catalog row of batch {a.version} is {row}, table has {a.offsets}"
            )
            run.outcome = f"batch {a.version} committed and recorded"
    elif run.kind == "random":
        if a.version == b.version + c:
            run.outcome = "files written, not committed" if new_orphans else "no files written"
        elif a.version == b.version + c + 1:
            run.outcome = (
                "after commit, before record"
                if a.version not in a.catalog
                else "after record, before the line"
            )
        else:
            pytest.fail(f"{where}: table at batch {a.version}, {b.version} before, {c} lines")


# -- the test ----------------------------------------------------------------------------
def test_crash_exactly_once(broker, tmp_path):
    seed = int(os.environ.get("SPARKPIPES_CRASH_SEED", random.randrange(2**32)))
    tag = f"[SPARKPIPES_CRASH_SEED={seed}]"
    rng = random.Random(seed)
    schedule = make_schedule(rng)
    print(f"\ncrash test {tag}: {len(schedule)} kills, schedule {schedule[:8]} ...", flush=True)
    started = time.time()

    topic = f"crash_{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    warehouse = tmp_path / "warehouse"
    (tmp_path / "logs").mkdir()
    args = [str(warehouse), broker.bootstrap, topic]
    producer = RecordProducer(broker.bootstrap, topic, random.Random(rng.getrandbits(64)))
    runs: list[Run] = []
    current: Run | None = None
    pending: Run | None = launch_child(0, *schedule[0], args, tmp_path)
    try:
        producer.produce(INITIAL_RECORDS)
        producer.target_end = time.time() + RUN_SECONDS * (len(schedule) - 1)
        producer.start()

        loop_started = time.time()
        for index, (kind, param) in enumerate(schedule):
            where = f"{tag} run {index} ({kind} {param:g})"
            current = run = pending
            assert run is not None
            go(run, read_state(warehouse), where)
            # the next child starts its Spark while this one runs; it waits for its go
            following = schedule[index + 1] if index + 1 < len(schedule) else ("final", 0.0)
            pending = launch_child(index + 1, *following, args, tmp_path)
            if kind == "random":
                deadline = time.time() + FIRST_BATCH_TIMEOUT_S
                while not run.first_batch.wait(0.2):
                    assert run.proc.poll() is None and time.time() < deadline, (
                        f"{where}: no batch from the child (exit {run.proc.poll()}):\n"
                        f"{run.stderr_tail()}"
                    )
                time.sleep(param)
                assert run.proc.poll() is None, (
                    f"{where}: child exited by itself ({run.proc.returncode}):\n{run.stderr_tail()}"
                )
                kill_group(run.proc.pid)
            try:
                rc = run.proc.wait(CRASH_POINT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{where}: child did not reach its crash point:\n{run.stderr_tail()}")
            assert rc == -signal.SIGKILL, (
                f"{where}: child ended with {rc}, not SIGKILL:\n{run.stderr_tail()}"
            )
            wait_group_gone(run.proc.pid, where)  # no JVM left holding files
            run.reader.join(30)
            current = None
            run.seconds = time.time() - run.t0
            run.after = read_state(warehouse)
            runs.append(run)
            average = (time.time() - loop_started) / len(runs)  # a cycle, standby included
            producer.target_end = time.time() + average * (len(schedule) - index - 2)
            check_run(run, tag)
            print(
                f"run {index:2d} {kind:12s} {param:5.2f}: {run.seconds:5.1f}s, "
                f"{len(run.batches):3d} batches ({len(run.committed)} committed), table at "
                f"batch {run.after.version} with {len(run.after.ids)} rows; {run.outcome}",
                flush=True,
            )

        assert producer.join(PRODUCER_TIMEOUT_S), f"{tag}: producer did not finish"
        assert producer.error is None, f"{tag}: producer failed: {producer.error!r}"
        (warehouse / "done").touch()
        current = final = pending
        pending = None
        assert final is not None
        go(final, runs[-1].after, f"{tag} final run")
        try:
            rc = final.proc.wait(FINAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{tag}: final run did not finish:\n{final.stderr_tail()}")
        assert rc == 0, f"{tag}: final run exited {rc}:\n{final.stderr_tail()}"
        wait_group_gone(final.proc.pid, f"{tag} final run")
        final.reader.join(30)
        current = None
        final.seconds = time.time() - final.t0
        final.after = read_state(warehouse)
        runs.append(final)
        check_run(final, tag)
    finally:
        stop_child(current)  # a check failed while a child ran: leave nothing behind
        stop_child(pending)
        producer.stop()

    # -- every id exactly once -----------------------------------------------------------
    from sparkpipes import Engine

    eng = Engine(warehouse, spark_master="local[2]")
    try:
        table = eng.table_arrow(TABLE)
        catalog_rows = eng.batches(PIPELINE)
    finally:
        eng.close()
    ids = table.column("id").to_pylist()
    parts = table.column(PART_COL).to_pylist()
    offs = table.column(OFFSET_COL).to_pylist()
    counts = Counter(ids)
    missing = sorted(set(range(N_RECORDS)) - set(counts))
    dups = sorted(i for i, c in counts.items() if c > 1)
    extra = sorted(i for i in counts if not 0 <= i < N_RECORDS)
    assert not missing and not dups and not extra and len(ids) == N_RECORDS, (
        f"{tag}: {len(ids)} rows for {N_RECORDS} ids; missing {len(missing)} {missing[:30]}; "
        f"duplicated {len(dups)} {dups[:30]}; unknown {extra[:30]}"
    )
    pairs = Counter(zip(parts, offs))
    twice = sorted(k for k, c in pairs.items() if c > 1)
    assert not twice, f"{tag}: (partition, offset) more than once: {twice[:30]}"
    assert len(producer.placement) == N_RECORDS, f"{tag}: {len(producer.placement)} acked"
    misplaced = [
        (i, (p, o), producer.placement[i])
        for i, p, o in zip(ids, parts, offs)
        if producer.placement[i] != (p, o)
    ]
    assert not misplaced, (
        f"{tag}: rows whose provenance is not where the broker put the id "
        f"(id, table, broker): {misplaced[:20]}"
    )
    state = final.after
    assert not table_problems(state), f"{tag}: {table_problems(state)}"

    # -- committed offsets --------------------------------------------------------------
    per_partition = {str(p): N_RECORDS // PARTITIONS for p in range(PARTITIONS)}
    finished = [x for x in final.lines if x.get("event") == "finished"]
    assert finished and finished[-1]["offsets"] == per_partition, (
        f"{tag}: eng.offsets('p') at the end is {finished}, expected {per_partition}"
    )
    assert state.offsets == per_partition and sum(state.offsets.values()) == N_RECORDS, (
        f"{tag}: table's committed offsets {state.offsets}"
    )
    history = table_history(state)
    batch_ids = [b for _, b, _ in history]
    assert batch_ids == list(range(1, state.version + 1)), (
        f"{tag}: committed batch ids in version order are not 1..{state.version} once each: "
        f"{[b for b, c in Counter(batch_ids).items() if c > 1]} twice, order {batch_ids[:50]}"
    )
    committed_offsets = {b: o for _, b, o in history}
    down = decreases([(b, o) for _, b, o in history])
    assert not down, f"{tag}: committed offsets decrease in the table's log: {down[:10]}"

    succeeded = sorted(
        (r for r in catalog_rows if r["state"] == "Succeeded"), key=lambda r: r["batch_id"]
    )
    down = decreases([(r["batch_id"], r["offsets"]) for r in succeeded])
    assert not down, f"{tag}: offsets decrease in eng.batches('p'): {down[:10]}"
    differ = [
        (r["batch_id"], r["offsets"], committed_offsets.get(r["batch_id"]))
        for r in succeeded
        if r["offsets"] != committed_offsets.get(r["batch_id"])
    ]
    assert not differ, f"{tag}: catalog rows that differ from the table's log: {differ[:10]}"
    unrecorded = sorted(set(committed_offsets) - {r["batch_id"] for r in succeeded})
    explained = {
        r.after.version
        for r in runs
        if r.kind == "after_commit" or r.outcome == "after commit, before record"
    }
    assert set(unrecorded) <= explained, (
        f"{tag}: committed batches missing from the catalog {unrecorded}; only {explained} "
        "were killed between commit and record"
    )
    lines = [x for r in runs for x in r.batches]
    down = decreases([(x["batch_id"], x["offsets"]) for x in lines])
    assert not down, f"{tag}: offsets the child reported go down: {down[:10]}"
    wrong = [
        (x["batch_id"], x["offsets"], committed_offsets.get(x["batch_id"]))
        for x in lines
        if x["state"] != "NoData" and x["offsets"] != committed_offsets.get(x["batch_id"])
    ]
    assert not wrong, f"{tag}: reported batches that differ from what was committed: {wrong}"

    # -- the kills ------------------------------------------------------------------------
    kinds = Counter(r.kind for r in runs if r.kind != "final")
    assert all(kinds[p] >= 1 for p in POINTS) and kinds["random"] >= RANDOM_KILLS, (
        f"{tag}: kills {dict(kinds)}"
    )
    outcomes = Counter(r.outcome for r in runs if r.kind == "random")
    orphans = sorted(state.orphans)
    print(
        f"\ncrash test {tag} passed in {time.time() - started:.0f}s "
        f"(producer done after {producer.finished_at - started:.0f}s, final run "
        f"{final.seconds:.0f}s): "
        f"{sum(kinds.values())} kills {dict(kinds)}; random kills {dict(outcomes)}; "
        f"{state.version} batches committed, {len(unrecorded)} unrecorded in the catalog; "
        f"{len(orphans)} unreferenced files of {len({batch_of(f) for f in orphans})} killed "
        f"batches; {sum(len(r.batches) for r in runs)} batch lines",
        flush=True,
    )

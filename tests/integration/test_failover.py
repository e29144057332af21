"""Two ``sparkpipes run`` engines on one PostgreSQL catalog and one warehouse, as users run
them for failover: a Kafka pipeline loads while records keep arriving.

- **Failover**: whichever engine holds the pipeline's lease is SIGKILLed, 10 times at
  random moments (a new engine is started in its place each time); the other takes over
  within the lease's time-to-live plus a batch interval (plus the time a batch takes on
  this 2-core machine, which also starts the replacement's JVM).
- **Zombie**: the holder is SIGSTOPped past its lease's expiry; the other takes over; the
  stopped one is let go on (SIGCONT): it notices it lost the lease and commits nothing.

At the end every record is in the table exactly once, no batch id was committed twice and
each commit's engine held the lease's newest token at the time (the table's log says)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from deltalake import DeltaTable

from sparkpipes.catalog import Catalog
from tests.e2e import serving
from tests.integration.databases import pg_database

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

TTL_S = 3.0
INTERVAL_MS = 200
KILLS = 10
#: the takeover's allowance beyond TTL + interval: the lease poll (TTL/4) and one batch,
#: on 2 cores shared with the replacement engine's start
SLACK_S = 8.0
CLI = (sys.executable, "-m", "sparkpipes")


class Run:
    """``sparkpipes run`` in its own process; its stderr kept."""

    def __init__(self, warehouse, url: str, env: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [*CLI, "--warehouse", str(warehouse), "--catalog-url", url, "run"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def engine_id(self) -> str | None:
        for line in self.lines:
            if line.startswith("sparkpipes run: engine ") and line.rstrip().endswith(" ready"):
                return line.split()[3]
        return None

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)


def wait(check, timeout_s: float, what: str):
    return serving.wait(check, timeout_s, what, every=0.1)


def commits(location: str) -> list[dict]:
    """The table's commits of batches, oldest first, with their metadata."""
    out = []
    for h in DeltaTable(location).history():
        if "sparkpipes.batch" in h:
            out.append(h)
    return sorted(out, key=lambda h: h["version"])


def test_failover_between_two_engines_and_a_zombie_commits_nothing(broker, topic, tmp_path):
    env = {
        **os.environ,
        "SPARKPIPES_SECRET_KEY": "failover test passphrase",
        "SPARKPIPES_SPARK_MASTER": "local[1]",
    }
    warehouse = tmp_path / "wh"
    with pg_database() as url:
        setup = (
            f"SET GLOBAL pipelines_lease_ttl_ms = {int(TTL_S * 1000)};"
            # the audit below reads every commit of the run: the log is kept whole
            "SET GLOBAL table_log_retention_commits = 1000000;"
            "CREATE TABLE t (id BIGINT);"
            f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f"BATCH_INTERVAL {INTERVAL_MS} INTO TABLE t FORMAT JSON; START PIPELINE p"
        )
        out = subprocess.run(
            [*CLI, "--warehouse", str(warehouse), "--catalog-url", url, "sql", "-e", setup],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        catalog = Catalog(url)
        pid = catalog.pipelines.get("p").id
        location = catalog.tables.get("t").location

        sent = 0
        stop = threading.Event()

        def produce() -> None:
            nonlocal sent
            while not stop.is_set():
                batch = [json.dumps({"id": i}) for i in range(sent, sent + 40)]
                broker.produce(topic, batch, partitions=4)
                sent += len(batch)
                stop.wait(0.1)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        engines = [Run(warehouse, url, env), Run(warehouse, url, env)]

        def holder() -> Run | None:
            lease = catalog.leases.all().get(pid)
            if lease is None or not lease.held:
                return None
            return next((e for e in engines if e.engine_id == lease.holder), None)

        def committed_by(engine: Run, after: float) -> dict | None:
            return next(
                (
                    c
                    for c in commits(location)
                    if c.get("sparkpipes.engine") == engine.engine_id
                    and c["timestamp"] / 1000 > after
                ),
                None,
            )

        rng = random.Random(7)
        takeovers: list[float] = []
        try:
            for _ in range(KILLS + 1):
                wait(lambda es=engines: all(e.engine_id for e in es), 240, "both engines ready")
                victim = wait(holder, 60, "a lease holder")
                wait(lambda v=victim: committed_by(v, 0), 60, "a commit by the holder")
                if len(takeovers) == KILLS:
                    break
                time.sleep(rng.uniform(0.1, 2.0))
                victim.proc.send_signal(signal.SIGKILL)
                killed_at = time.time()
                victim.proc.wait(30)
                survivor = next(e for e in engines if e is not victim)
                engines = [survivor, Run(warehouse, url, env)]
                first = wait(
                    lambda s=survivor, t=killed_at: committed_by(s, t), 120, "the survivor's commit"
                )
                takeovers.append(first["timestamp"] / 1000 - killed_at)
                assert takeovers[-1] <= TTL_S + INTERVAL_MS / 1000 + SLACK_S, takeovers

            # the zombie: stopped past its lease, then let go on
            zombie = holder()
            assert zombie is not None
            other = next(e for e in engines if e is not zombie)
            zombie.proc.send_signal(signal.SIGSTOP)
            stopped_at = time.time()
            wait(lambda: committed_by(other, stopped_at), 120, "the other engine's takeover")
            shown = subprocess.run(
                [*CLI, "--warehouse", str(warehouse), "--catalog-url", url, "status"],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            ).stdout
            assert other.engine_id in shown and zombie.engine_id not in shown, shown
            time.sleep(1.0)
            zombie.proc.send_signal(signal.SIGCONT)
            resumed_at = time.time()
            wait(lambda: zombie.said("lost the lease"), 60, "the zombie to notice")
            time.sleep(TTL_S)
            late = [
                c
                for c in commits(location)
                if c.get("sparkpipes.engine") == zombie.engine_id
                and c["timestamp"] / 1000 > stopped_at
            ]
            assert not late, f"the zombie committed after its lease was taken: {late}"
            assert zombie.proc.poll() is None  # it goes on, waiting for the lease

            stop.set()
            producer.join()
            total = sent

            def loaded() -> bool:
                return DeltaTable(location).to_pyarrow_table(columns=["id"]).num_rows >= total

            wait(loaded, 180, "every record")
        finally:
            stop.set()
            for e in engines:
                if e.proc.poll() is None:
                    e.proc.send_signal(signal.SIGCONT)
                    e.proc.send_signal(signal.SIGTERM)
            for e in engines:
                try:
                    e.proc.wait(120)
                except subprocess.TimeoutExpired:
                    e.proc.kill()
            catalog.close()

        ids = sorted(DeltaTable(location).to_pyarrow_table(columns=["id"]).column("id").to_pylist())
        assert ids == list(range(total)), "a record is missing or loaded twice"
        log = commits(location)
        batch_ids = [int(c["sparkpipes.batch"]) for c in log]
        assert len(batch_ids) == len(set(batch_ids)), "a batch id was committed twice"
        tokens = [int(c["sparkpipes.lease"]) for c in log]
        assert tokens == sorted(tokens), "a commit under an older lease after a newer one"
        assert len({c["sparkpipes.engine"] for c in log}) >= KILLS + 1
        assert resumed_at > stopped_at
        print(
            f"takeover after a kill: max {max(takeovers):.1f} s, mean "
            f"{sum(takeovers) / len(takeovers):.1f} s over {len(takeovers)} kills"
        )

"""The README's main command, as a user runs it (minus the bootstrap, which CI runs)."""

from __future__ import annotations

import os
import subprocess
import sys


def run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )


def test_quickstart_loads_every_event_and_leaves_the_warehouse(tmp_path):
    wh = tmp_path / "wh"
    p = run("quickstart", "--warehouse", str(wh), "--events", "20000", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "CREATE PIPELINE events_pipeline AS" in out
    assert "all 20,000 events loaded" in out
    assert "| events | distinct_uuids |" in out and "| 20000  | 20000          |" in out
    assert "ingested" in out and "lag" in out
    assert (wh / "catalog.db").exists()
    # the warehouse stays usable from `sparkpipes sql`
    q = run("--warehouse", str(wh), "sql", "-e", "SELECT count(*) FROM events", cwd=tmp_path)
    assert q.returncode == 0 and "| 20000    |" in q.stdout


def test_user_errors_print_one_line_without_traceback(tmp_path):
    p = run("--catalog-url", "nosuchdb://x", "quickstart", "--events", "1", cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.startswith("error: [SP500] cannot open catalog nosuchdb://x")
    assert "Traceback" not in p.stderr
    p = run("--help", cwd=tmp_path)
    assert p.returncode == 0 and "quickstart" in p.stdout

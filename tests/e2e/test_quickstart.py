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
    p = run("--warehouse", str(tmp_path / "wh"), "quickstart", "--events", "3000", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Produced 3000 events to topic 'events'" in p.stdout
    assert "Table 'events' has 3000 rows" in p.stdout
    assert '"0": 750' in p.stdout
    assert (tmp_path / "wh" / "catalog.db").exists()
    assert (tmp_path / "wh" / "tables" / "events" / "_delta_log").is_dir()


def test_user_errors_print_one_line_without_traceback(tmp_path):
    p = run("--catalog-url", "nosuchdb://x", "quickstart", "--events", "1", cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.startswith("error: [SP500] cannot open catalog nosuchdb://x")
    assert "Traceback" not in p.stderr
    p = run("--help", cwd=tmp_path)
    assert p.returncode == 0 and "quickstart" in p.stdout

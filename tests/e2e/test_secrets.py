"""A canary secret given as CREDENTIALS (and by mistake in CONFIG) appears nowhere: not
in any file under the warehouse (the catalog's raw bytes included), the shell history,
the output of any command or the logs. Files are owner-only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_shell import Tty

CANARY = "canary-7Qx9-zz-secret"


def test_a_canary_secret_is_nowhere_at_rest_or_in_output(tmp_path, broker, topic):
    wh, home = tmp_path / "wh", tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "SPARKPIPES_SPARK_MASTER": "local[1]",
        "SPARKPIPES_LOG_LEVEL": "DEBUG",
        "TERM": "dumb",
    }
    env.pop("SPARKPIPES_SECRET_KEY", None)  # the warehouse's own key file

    def cli(*args: str) -> str:
        p = subprocess.run(
            [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        return p.stdout + p.stderr

    create = (
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        f'CREDENTIALS \'{{"sasl.username": "u", "sasl.password": "{CANARY}"}}\' '
        "INTO TABLE t"
    )
    seen = [
        cli("sql", "--echo", "-e", f"CREATE TABLE t (a BIGINT); {create}; SHOW CREATE PIPELINE p;"),
        cli("sql", "-e", "SELECT * FROM information_schema.PIPELINES; SHOW PIPELINES"),
        cli(  # an error echoes the statement it is about
            "sql",
            "--echo",
            "-e",
            create.replace("CREATE PIPELINE p", "CREATE PIPELINE bad").replace(
                "INTO", "CONFIG '{\"nope\": 1}' INTO"
            ),
        ),
        cli("status"),
    ]
    sh = Tty([sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), "sql"], env)
    try:
        sh.expect("sparkpipes> ")
        sh.send(create.replace("PIPELINE p AS", "PIPELINE q AS\n") + ";")  # two lines
        sh.expect("Query OK")
        sh.expect("sparkpipes> ")  # Ctrl-D quits at an empty prompt
        os.write(sh.master, b"\x04")
        assert sh.proc.wait(60) == 0
    finally:
        if sh.proc.poll() is None:
            sh.proc.kill()
    # what the terminal shows after the statement the user typed (and saw) as they typed it
    seen.append(sh.out.decode(errors="replace").split("Query OK", 1)[1])
    assert "Query OK" in seen[0] and "<redacted>" in seen[0]
    assert "unknown or unsupported Kafka option 'nope'" in seen[2]

    files = [p for p in wh.rglob("*") if p.is_file()] + [home / ".sparkpipes_history"]
    assert (wh / "catalog.db") in files and (wh / "secret.key") in files
    for f in files:
        assert CANARY.encode() not in f.read_bytes(), f"the canary is in {f}"
    for text in seen:
        assert CANARY not in text
    history = (home / ".sparkpipes_history").read_text()
    assert "CREATE PIPELINE q" in history and "<redacted>" not in history and "****" in history
    for f in (wh / "catalog.db", wh / "secret.key", home / ".sparkpipes_history"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert stat.S_IMODE(wh.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in Path(wh).rglob("*"))

    # the engine can still read the secret to connect with
    from sparkpipes.catalog import Catalog

    cat = Catalog(f"sqlite:///{wh / 'catalog.db'}")
    try:
        assert cat.credentials("p")["sasl.password"] == CANARY
    finally:
        cat.close()

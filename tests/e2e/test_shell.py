"""The interactive `sparkpipes sql` shell, driven through a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time


class Tty:
    def __init__(self, args, env):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.out = b""
        self.seen = 0

    def expect(self, text: str, timeout: float = 120) -> str:
        """Wait until ``text`` appears in output not yet consumed by an earlier expect."""
        deadline = time.time() + timeout
        while text.encode() not in self.out[self.seen :]:
            left = deadline - time.time()
            if left <= 0:
                screen = self.out.decode(errors="replace")[-2000:]
                raise AssertionError(f"did not see {text!r}; screen:\n{screen}")
            ready, _, _ = select.select([self.master], [], [], min(left, 1))
            if ready:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    break
        self.seen = self.out.index(text.encode(), self.seen) + len(text)
        return self.out.decode(errors="replace")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())


def test_multi_line_statements_errors_and_history(tmp_path):
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "SPARKPIPES_SPARK_MASTER": "local[2]",
        "TERM": "dumb",
    }
    sh = Tty([sys.executable, "-m", "sparkpipes", "--warehouse", str(tmp_path / "wh"), "sql"], env)
    try:
        sh.expect("sparkpipes> ")
        sh.send("CREATE TABLE t (a INT,")
        sh.expect("-> ")
        sh.send("  b TEXT);")
        sh.expect("Query OK")
        sh.send("INSERT INTO t VALUES (1, 'x;y'), (2, 'z');")
        sh.expect("2 rows affected")
        sh.send("SELECT a, b FROM t")
        sh.send("ORDER BY a;")
        screen = sh.expect("2 rows in set")
        assert "| 1 | x;y |" in screen and "| 2 | z   |" in screen
        sh.send("SELEC 1;")
        screen = sh.expect("syntax error")
        (tmp_path / "in.json").write_text('{"a": 1, "b": "p"}\n{"a": 2, "b": "q"}\n')
        sh.send(
            f"CREATE PIPELINE fp AS LOAD DATA FS '{tmp_path}/in.json' INTO TABLE t FORMAT JSON;"
        )
        sh.expect("Query OK")
        sh.send("START PIPELINE fp FOREGROUND;")
        sh.expect("batch 1: 2 rows in")  # progress while it runs
        sh.expect("Query OK, 2 rows loaded in 1 batch (2 run)")  # the idle one loads nothing
        sh.send("SHOW TABLES;")
        screen = sh.expect("1 row in set")
        assert "Traceback" not in screen
        sh.expect("sparkpipes> ")
        os.write(sh.master, b"\x04")  # Ctrl-D
        assert sh.proc.wait(60) == 0
    finally:
        if sh.proc.poll() is None:
            sh.proc.kill()
        os.close(sh.master)
    history = (tmp_path / ".sparkpipes_history").read_text()
    assert "SHOW TABLES;" in history

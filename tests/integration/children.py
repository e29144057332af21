"""Child processes for crash tests: a Python snippet run in its own process group (so a
SIGKILL takes its Spark JVM and workers too), optionally told to kill itself at a step of
the commit protocol (``SPARKPIPES_CRASH_AT``, see ``sparkpipes.engine.faults``)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

#: Child code that starts the child's SparkSession and warms it up (what ``sparkpipes run``
#: does at start) before it touches anything of the test, then waits for its go: put it at
#: the start of a snippet run with ``spawn_standby``. The session is the one an
#: ``Engine(spark_master="local[2]")`` built later in the child gets.
STANDBY = """
import sys
from sparkpipes.engine.spark.session import build_session, warm_up
warm_up(build_session("local[2]"))
print("standby", flush=True)
if sys.stdin.readline().strip() != "go":
    sys.exit(0)
"""


def spawn(code: str, *args: object, crash_at: str | None = None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("SPARKPIPES_CRASH_AT", None)
    if crash_at:
        env["SPARKPIPES_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def spawn_standby(code: str, *args: object, crash_at: str | None = None) -> subprocess.Popen:
    """``spawn`` a child whose code starts with ``STANDBY``: it starts its Spark at once
    and goes on only at ``go``. A test starts the next child that way while the current
    one runs, so that a restart after a kill does not wait for a JVM to start."""
    env = dict(os.environ)
    env.pop("SPARKPIPES_CRASH_AT", None)
    if crash_at:
        env["SPARKPIPES_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [sys.executable, "-c", STANDBY + code, *map(str, args)],
        env=env,
        start_new_session=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def go(proc: subprocess.Popen, timeout: float = 240) -> subprocess.Popen:
    """Wait until a ``spawn_standby`` child is in standby, then let it go on."""
    assert proc.stdout is not None and proc.stdin is not None
    deadline = time.time() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.time()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("the child never got to standby")
        chunk = os.read(proc.stdout.fileno(), 64)
        if not chunk:
            _, err = proc.communicate(timeout=30)
            raise AssertionError(f"the child died before standby:\n{err.decode()[-3000:]}")
        line += chunk
    assert line == b"standby\n", line
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    return proc


def finish(proc: subprocess.Popen, *, kill_after: float | None = None, timeout: float = 240) -> int:
    """Wait for the child (SIGKILLing its group after ``kill_after`` seconds, if given),
    then make sure nothing of it is left; its exit code. A child that failed other than by
    SIGKILL is an error showing the end of its stderr."""
    try:
        if kill_after is not None:
            try:
                proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the Spark JVM and workers, if left
        except ProcessLookupError:
            pass
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(err.decode()[-3000:])
    return proc.returncode

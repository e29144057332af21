"""Child processes for crash tests: a Python snippet run in its own process group (so a
SIGKILL takes its Spark JVM and workers too), optionally told to kill itself at a step of
the commit protocol (``SPARKPIPES_CRASH_AT``, see ``sparkpipes.engine.faults``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys


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

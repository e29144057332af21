"""``sparkpipes serve`` as a user starts it, for the HTTP tests: a free port on 127.0.0.1,
the server's own process, its output kept for the no-secret / no-traceback checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests


def wait(
    check: Callable[[], Any], timeout_s: float = 120.0, what: str = "condition", every: float = 0.5
) -> Any:
    deadline = time.time() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


@dataclass
class Served:
    url: str
    port: int
    output: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(warehouse, ready_path: str, *extra: str) -> Iterator[Served]:
    """The server, up once ``GET ready_path`` answers 200; stopped with SIGTERM after.
    ``extra``: more ``serve`` options."""
    port = free_port()
    served = Served(f"http://127.0.0.1:{port}", port)
    command = ["serve", "--port", str(port), *extra]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(warehouse), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )

    def up() -> bool:
        try:
            return requests.get(served.url + ready_path, timeout=2).status_code == 200
        except (requests.ConnectionError, requests.Timeout):
            return False

    try:
        wait(up, 120, "the server")
        yield served
    finally:
        proc.send_signal(signal.SIGTERM)
        served.output = proc.communicate(timeout=120)[0]


def mariadb(
    port: int, sql: str, user: str = "anyone", password: str | None = None
) -> subprocess.CompletedProcess:
    """The real ``mariadb`` command-line client in batch mode against 127.0.0.1:``port``."""
    login = ["-u", user, *([f"-p{password}"] if password is not None else [])]
    return subprocess.run(
        [
            "mariadb",
            "--protocol=TCP",
            "-h",
            "127.0.0.1",
            "-P",
            str(port),
            *login,
            "--batch",
            "-e",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )

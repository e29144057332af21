"""``sparkpipes serve`` as a user starts it, for the HTTP tests: a free port on 127.0.0.1,
the server's own process, its output kept (in a file, readable while it runs) for the
no-secret / no-traceback checks. The server's owner signs in with the local token from
its discovery file, as ``sparkpipes token`` reads it: ``Served.http`` sends it."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql
import requests

from sparkpipes.cli.remote import local_token


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
    log: Path
    #: the owner's local token, and a client session that sends it
    token: str = ""
    http: requests.Session = field(default_factory=requests.Session)
    output: str = ""

    def text(self) -> str:
        """What the server printed so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else self.output

    def link(self, timeout_s: float = 30.0) -> str:
        """The one-time sign-in link ``serve`` printed (no users yet)."""
        found = wait(
            lambda: re.search(r"(http://\S+/login\?code=[\w-]+)", self.text()),
            timeout_s,
            "the sign-in link",
            0.1,
        )
        return found.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _PortTaken(Exception):
    """The free port was taken meanwhile (by another test's server): pick another."""


@contextmanager
def serve(warehouse, ready_path: str, *extra: str) -> Iterator[Served]:
    """The server, up once ``GET ready_path`` answers 200 to its owner's token; stopped
    with SIGTERM after. ``extra``: more ``serve`` options."""
    for attempt in range(3):
        served, proc = _start(warehouse, extra)

        def up(
            served: Served = served, proc: subprocess.Popen = proc, last: bool = attempt == 2
        ) -> bool:
            if proc.poll() is not None:
                text = served.text()
                if "address already in use" in text and not last:
                    raise _PortTaken(text)
                raise AssertionError(f"the server stopped: {text}")
            token = local_token(str(warehouse), None)
            if token is None:
                return False
            served.token = token
            served.http.headers["Authorization"] = f"Bearer {token}"
            try:
                return served.http.get(served.url + ready_path, timeout=2).status_code == 200
            except (requests.ConnectionError, requests.Timeout):
                return False

        try:
            wait(up, 120, "the server")
            break
        except _PortTaken:
            served.log.unlink(missing_ok=True)
    try:
        yield served
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:  # never leave a server (and its JVM) running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            raise AssertionError(f"the server did not stop on SIGTERM: {served.text()}") from None
        served.output = served.text()
        served.log.unlink(missing_ok=True)
        served.http.close()


def _start(warehouse, extra: tuple[str, ...]) -> tuple[Served, subprocess.Popen]:
    port = free_port()
    fd, log = tempfile.mkstemp(prefix="sparkpipes-serve-", suffix=".log")
    served = Served(f"http://127.0.0.1:{port}", port, Path(log))
    command = ["serve", "--port", str(port), *extra]
    with os.fdopen(fd, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sparkpipes", "--warehouse", str(warehouse), *command],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
            start_new_session=True,  # its JVM in its process group: killed with it if need be
        )
    return served, proc


def mariadb(
    port: int,
    sql: str,
    user: str = "anyone",
    password: str | None = None,
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


def sparkpipes(warehouse, *args: str, stdin: str = "", env=None) -> subprocess.CompletedProcess:
    """The ``sparkpipes`` command as a user types it, on ``warehouse``."""
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(warehouse), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]", **(env or {})},
    )


# -- the MySQL wire by hand (clients that misbehave) -------------------------------------

PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, LONG_PASSWORD = 0x200, 0x8000, 0x80000, 0x1
SIGN_IN_CAPS = PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | LONG_PASSWORD


def mysql_packet(sock: socket.socket) -> bytes | None:
    """One MySQL packet's body, or None when the server closed the connection."""
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    size, body = int.from_bytes(head[:3], "little"), b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def mysql_send(sock: socket.socket, body: bytes, number: int) -> None:
    sock.sendall(len(body).to_bytes(3, "little") + bytes([number]) + body)


def handshake_response(user: bytes, caps: int, tail: bytes = b"") -> bytes:
    return struct.pack("<IIB", caps, 1 << 24, 33) + b"\0" * 23 + user + tail


def native_password(hello: bytes, password: str) -> bytes:
    """The ``mysql_native_password`` answer to the server's greeting ``hello``, with its
    length first and the plugin's name after (the tail of a handshake response)."""
    at = hello.index(b"\0", 1) + 1 + 4
    nonce = hello[at : at + 8]
    at += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
    nonce += hello[at : at + 12]
    p1 = hashlib.sha1(password.encode()).digest()
    p3 = hashlib.sha1(nonce + hashlib.sha1(p1).digest()).digest()
    scramble = bytes(a ^ b for a, b in zip(p1, p3, strict=True))
    return bytes([len(scramble)]) + scramble + b"mysql_native_password\0"


@contextmanager
def serve_mysql(warehouse, setup: str) -> Iterator[Served]:
    """``serve`` with the MySQL endpoint (``served.mysql_port``), after the owner ran
    ``setup`` (tables, users) over the JSON API."""
    port = free_port()
    with serve(warehouse, "/api/status", "--mysql-port", str(port)) as served:
        assert served.http.post(f"{served.url}/api/query", json={"sql": setup}).ok
        served.mysql_port = port  # type: ignore[attr-defined]
        yield served


def mysql_connect(served: Served, user: tuple[str, str], **kwargs):
    """A PyMySQL connection to ``served``'s MySQL endpoint as ``user`` (name, password)."""
    return pymysql.connect(
        host="127.0.0.1",
        port=served.mysql_port,  # type: ignore[attr-defined]
        user=user[0],
        password=user[1],
        database="sparkpipes",
        **kwargs,
    )

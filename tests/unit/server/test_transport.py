"""The HTTP transport of ``sparkpipes serve`` (``server.transport``): uvicorn with its
deadlines, on 127.0.0.1 with a small ASGI app, and the TLS files ``serve`` takes.

A client that stalls is cut off; a server that is busy (a slow answer, a body it has not
read yet) is never cut off by those deadlines; ``--tls-cert`` / ``--tls-key`` errors say
which file and why."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from sparkpipes.errors import ConfigError
from sparkpipes.server.transport import HttpLimits, load_tls, uvicorn_config
from sparkpipes.testing.tls import self_signed

BODY = 4 << 20  # far above what uvicorn buffers before it stops reading


async def app(scope, receive, send) -> None:
    """``/slow``: waits 3 s, then reads the whole body; answers its size. ``/big``: 256
    MiB, a MiB at a time."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/big":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(256):
            await send({"type": "http.response.body", "body": b"x" * (1 << 20), "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    if scope["path"] == "/slow":
        await asyncio.sleep(3)
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def server(limits: HttpLimits) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    running = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, limits, None))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    while not running.started:
        time.sleep(0.02)
    try:
        yield port
    finally:
        running.should_exit = True
        thread.join(10)


def answer(sock: socket.socket, limit_s: float = 20) -> tuple[float, bytes]:
    """What the server sent until it closed the connection, and how long that took (at
    most ``limit_s``: then it had not closed it)."""
    started, got = time.monotonic(), bytearray()
    deadline = started + limit_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return time.monotonic() - started, bytes(got)


def test_a_stalled_client_is_cut_off_and_a_busy_server_is_not():
    with server(HttpLimits(header_timeout_s=1, keep_alive_s=1)) as port:
        head = f"POST /slow HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {BODY}\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port)) as sock:
            started = time.monotonic()
            sock.sendall(head.encode() + b"x" * BODY)  # the server reads it after 3 s
            seconds, got = answer(sock)
        assert got.startswith(b"HTTP/1.1 200 ") and got.endswith(str(BODY).encode()), got[:200]
        assert time.monotonic() - started > 2.5

        # the same request, its body stopped short: closed a second after the last byte
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head.replace("/slow", "/").encode() + b"x" * 1000)
            seconds, got = answer(sock)
        assert 0.8 < seconds < 4 and b"200" not in got

        # a head sent a byte at a time: cut off at its deadline, with a 408
        with socket.create_connection(("127.0.0.1", port)) as sock:
            started = time.monotonic()
            with pytest.raises((BrokenPipeError, ConnectionResetError)):
                for byte in head.encode() * 10:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.1)
            assert time.monotonic() - started < 4


def test_a_client_that_stops_reading_is_dropped(caplog):
    with server(HttpLimits(header_timeout_s=5, write_timeout_s=1)) as port:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
            sock.sendall(f"GET /big HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            time.sleep(3)  # reads nothing while the server's buffers fill
            seconds, got = answer(sock, 10)
        assert seconds < 5 and len(got) < 64 << 20  # cut off, far from the whole answer
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_tls_files_are_checked_and_the_leaf_is_what_clients_trust(tmp_path):
    cert, key = self_signed(tmp_path, "leaf")
    other_cert, other_key = self_signed(tmp_path, "other")
    chain = tmp_path / "chain.pem"
    chain.write_text(cert.read_text() + other_cert.read_text())
    tls = load_tls(str(chain), str(key))
    assert tls.leaf_pem.strip() == cert.read_text().strip()
    assert tls.context().minimum_version == ssl.TLSVersion.TLSv1_2
    assert str(key) not in repr(tls)

    with pytest.raises(ConfigError, match=r"--tls-key .*nope\.key: no such file"):
        load_tls(str(cert), str(tmp_path / "nope.key"))
    with pytest.raises(ConfigError, match="not a PEM certificate"):
        load_tls(str(key), str(key))
    with pytest.raises(ConfigError, match="cannot use them"):
        load_tls(str(cert), str(other_key))


@pytest.mark.parametrize(("header", "keep_alive"), [(0, 5), (10, 0), (3601, 5)])
def test_timeouts_outside_bounds_are_refused(header, keep_alive):
    with pytest.raises(ValueError, match="timeout is between 1 and 3600"):
        HttpLimits(header, keep_alive)

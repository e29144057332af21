"""A stand-in for an attacker's endpoint on 127.0.0.1: a TCP listener that records every
connection and the bytes each sent (an HTTP request is answered ``403``, so an S3 or
registry client stops there; anything else is closed after its first bytes). Tests of
sealed secrets point a redefined pipeline or connector at it and check that nothing
came, or that no secret did."""

from __future__ import annotations

import socket
import threading


class Listener:
    """``with Listener() as evil:`` … ``evil.port``, ``evil.connections``,
    ``evil.received`` (all bytes, in order of arrival)."""

    def __init__(self) -> None:
        self._srv = socket.socket()
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(16)
        self.port: int = self._srv.getsockname()[1]
        self.hostport = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.hostport}"
        self.connections = 0
        self._chunks: list[bytes] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def received(self) -> bytes:
        with self._lock:
            return b"".join(self._chunks)

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._srv.close()
        self._thread.join(5)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._srv.accept()
            except OSError:  # closed
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(2)
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
                if not data[:8].isascii() or not data[:1].isalpha():
                    break  # not HTTP (a Kafka or PostgreSQL client): its first bytes will do
        except OSError:
            pass
        with self._lock:  # recorded before the answer: the client may look right after it
            self._chunks.append(data)
        try:
            if data[:1].isalpha():
                conn.sendall(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
        except OSError:
            pass
        finally:
            conn.close()

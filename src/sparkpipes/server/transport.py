"""The HTTP transport of ``sparkpipes serve``: uvicorn, with the timeouts a server on a
network needs, and optional TLS (shared with the MySQL endpoint).

uvicorn closes a connection idle between requests after ``timeout_keep_alive`` seconds,
but never one that has not finished sending a request: a client that connects and sends
nothing, half a request line or half its headers held the connection for ever.
:class:`TimedH11Protocol` (uvicorn's h11 protocol, subclassed) gives each request's head
``header_timeout_s`` seconds in all, from the connection's start or the request's first
byte (slow headers sent a byte at a time do not extend it), and answers ``408`` when they
are late; a request body may pause for as long between two of its bytes; a client that
stops reading a response for :data:`WRITE_TIMEOUT_S` is dropped. While the server itself
is busy (running a statement, or not reading a body yet) nothing times out.

:func:`load_tls` reads ``--tls-cert`` / ``--tls-key`` once, for uvicorn (HTTPS) and the
MySQL endpoint, and keeps the certificate for ``sparkpipes sql``, which trusts exactly it
(``cli.remote``).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from sparkpipes.errors import ConfigError


@dataclass(frozen=True)
class HttpLimits:
    """``header_timeout_s``: a request's line and headers, in all (and the longest pause
    within its body); ``keep_alive_s``: an idle connection between requests;
    ``write_timeout_s``: a response its client has stopped reading."""

    header_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    write_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        for name, value in (
            ("header", self.header_timeout_s),
            ("keep-alive", self.keep_alive_s),
            ("write", self.write_timeout_s),
        ):
            if not 0 < value <= 3600:
                raise ValueError(f"the HTTP {name} timeout is between 1 and 3600 s")


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines of the module's docstring; the limits are
    a class attribute (:func:`timed_protocol` makes the class for a server)."""

    limits: HttpLimits = HttpLimits()

    @property
    def header_timeout_s(self) -> float:
        return self.limits.header_timeout_s

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._body_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(
                self.limits.write_timeout_s, self._write_stalled
            )

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _watch(self) -> None:
        """Arm the deadline of what the server now waits for from the client, if any."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        waiting_head = state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        if waiting_head and self.timeout_keep_alive_task is None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_late)
        elif self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if state is h11.SEND_BODY and self._body_timer is None:
            self._body_timer = self.loop.call_later(self.header_timeout_s, self._body_late)

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.timeout_keep_alive_task is not None:
            return  # idle between requests: uvicorn's keep-alive timeout decides
        if self.conn.trailing_data[0]:  # part of a request came: say why it ends
            body = f"the request's headers did not come within {self.header_timeout_s:g} s\n"
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body.encode())
            )
        self.transport.close()

    def _body_late(self) -> None:
        self._body_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        waiting = self.cycle is not None and self.cycle.waiting_for_100_continue
        if self.flow.read_paused or waiting:  # the server has not asked for it yet
            self._body_timer = self.loop.call_later(self.header_timeout_s, self._body_late)
            return
        self.transport.close()

    def _write_stalled(self) -> None:
        self._write_timer = None
        if not self.transport.is_closing():
            self.transport.abort()


def timed_protocol(limits: HttpLimits) -> type[TimedH11Protocol]:
    """The protocol class of a server with ``limits``."""
    return type("TimedH11Protocol", (TimedH11Protocol,), {"limits": limits})


@dataclass(frozen=True)
class Tls:
    """A server certificate (``--tls-cert``, its chain) and key (``--tls-key``)."""

    cert: str
    key: str = field(repr=False)
    #: the server's own certificate (the chain's first), PEM: what ``sparkpipes sql`` trusts
    leaf_pem: str = field(repr=False, default="")

    def context(self, alpn: tuple[str, ...] = ()) -> ssl.SSLContext:
        """A server context (TLS 1.2 or newer, Python's secure defaults)."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert, self.key, password=_no_passphrase)
        if alpn:
            ctx.set_alpn_protocols(list(alpn))
        return ctx


def _no_passphrase() -> bytes:
    return b""  # an encrypted key fails at once: OpenSSL would prompt on the terminal


def load_tls(cert: str, key: str) -> Tls:
    """``--tls-cert`` / ``--tls-key``, checked now (ConfigError names the file and why)."""
    for option, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not os.path.isfile(path):
            raise ConfigError(f"{option} {path}: no such file")
    try:
        with open(cert, encoding="ascii") as f:
            pem = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"--tls-cert {cert}: cannot read it ({e})") from None
    end = "-----END CERTIFICATE-----"
    start = pem.find("-----BEGIN CERTIFICATE-----")
    if start < 0 or end not in pem[start:]:
        raise ConfigError(f"--tls-cert {cert}: not a PEM certificate")
    leaf = pem[start : pem.index(end, start) + len(end)] + "\n"
    tls = Tls(os.path.abspath(cert), os.path.abspath(key), leaf)
    try:
        tls.context()
    except ssl.SSLError as e:
        raise ConfigError(
            f"--tls-cert {cert} / --tls-key {key}: cannot use them ({e.reason or e}); the key "
            "must be the certificate's, unencrypted, both PEM"
        ) from None
    return tls


def uvicorn_config(app: Any, host: str, port: int, limits: HttpLimits, tls: Tls | None) -> Any:
    """uvicorn's configuration for ``sparkpipes serve``: h11 with :class:`TimedH11Protocol`,
    no WebSockets (the app has none), no proxy headers (a client must not choose its own
    address: sign-in back-off), HTTPS with ``tls``."""
    import uvicorn

    extra: dict[str, Any] = {}
    if tls is not None:
        context = tls.context(("http/1.1",))
        extra = {"ssl_context_factory": lambda config, default: context}
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=False,
        http=timed_protocol(limits),
        ws="none",
        timeout_keep_alive=limits.keep_alive_s,  # type: ignore[arg-type]
        **extra,
    )

"""The wire of the MySQL endpoint (``server.mysql``): mysql-mimic's connections, with the
limits a server on a network needs and mysql-mimic lacks.

- **Packets mysql-mimic cannot parse are refused before it parses them.** Its reader of a
  NUL-terminated string loops for ever (in compiled code, holding the interpreter: the
  whole server froze, HTTP too) when the string has no NUL; a handshake response, a
  ``COM_CHANGE_USER`` or a ``COM_FIELD_LIST`` with one missing is answered ``1043 Bad
  handshake`` / ``1835 Malformed packet`` and the connection is closed. A packet may not
  exceed :data:`HANDSHAKE_PACKET_BYTES` before sign-in, ``max_allowed_packet`` after (1153).
- **Timeouts, as MySQL's.** A client has ``connect_timeout`` seconds (10) from connecting to
  send its sign-in (``--mysql-connect-timeout``); a signed-in connection idle for
  ``wait_timeout`` seconds (8 hours, ``--mysql-wait-timeout``; a client may ``SET
  wait_timeout`` for its session) is told ``4031`` and closed; a result the client stops
  reading for :data:`WRITE_TIMEOUT_S` ends the connection (MySQL's ``net_write_timeout``).
- **TLS** (``ssl``): offered to clients, as MySQL does, when the server has a certificate.

Only classes of mysql-mimic's are subclassed; nothing of the library is patched.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass
from typing import Any

from mysql_mimic import MysqlServer
from mysql_mimic.connection import Connection
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.stream import ConnectionClosed, MysqlStream
from mysql_mimic.types import Capabilities

from sparkpipes.server.security import is_loopback

log = logging.getLogger("sparkpipes.server")

#: a packet at most before sign-in (a handshake response is a few hundred bytes)
HANDSHAKE_PACKET_BYTES = 1 << 18
#: seconds a client may leave a result unread (MySQL's net_write_timeout)
WRITE_TIMEOUT_S = 60.0
#: MySQL's ER_CLIENT_INTERACTION_TIMEOUT, ER_NET_PACKET_TOO_LARGE
CLIENT_INTERACTION_TIMEOUT = 4031
#: ER_SECURE_TRANSPORT_REQUIRED
SECURE_TRANSPORT_REQUIRED = 3159
NET_PACKET_TOO_LARGE = 1153
#: the longest wait_timeout a session may set (MySQL's maximum)
MAX_WAIT_TIMEOUT_S = 31_536_000
_SSL_REQUEST_BYTES = 32


@dataclass(frozen=True)
class MysqlLimits:
    """``connect_timeout_s``: from connecting to signed in; ``wait_timeout_s``: a signed-in
    connection's idle time (its session's ``wait_timeout`` / ``interactive_timeout``)."""

    connect_timeout_s: float = 10.0
    wait_timeout_s: int = 28_800

    def __post_init__(self) -> None:
        if not 0 < self.connect_timeout_s <= 3600:
            raise ValueError("the MySQL connect timeout is between 1 and 3600 s")
        if not 0 < self.wait_timeout_s <= MAX_WAIT_TIMEOUT_S:
            raise ValueError(f"the MySQL wait timeout is between 1 and {MAX_WAIT_TIMEOUT_S} s")


class Refused(Exception):
    """A connection ended for what its client sent (or did not send); ``str`` is what the
    client is told (code ``code``)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


# -- packets mysql-mimic reads NUL-terminated strings from ----------------------------


class _Cursor:
    """A position in a packet; every read is bounded by its end (None: not there)."""

    def __init__(self, data: bytes, at: int = 0) -> None:
        self.data, self.at = data, at

    def more(self) -> bool:
        return self.at < len(self.data)

    def skip(self, n: int) -> bool:
        self.at += n
        return self.at <= len(self.data)

    def nul(self) -> bool:
        """Past a NUL-terminated string, if it has its NUL."""
        end = self.data.find(b"\0", self.at)
        if end < 0:
            return False
        self.at = end + 1
        return True

    def byte(self) -> int | None:
        if self.at >= len(self.data):
            return None
        self.at += 1
        return self.data[self.at - 1]

    def lenenc(self) -> int | None:
        """A length-encoded integer, read as mysql-mimic reads it."""
        first = self.byte()
        if first is None:
            return None
        width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
        if width is None:
            return first
        if self.at + width > len(self.data):
            return None
        value = int.from_bytes(self.data[self.at : self.at + width], "little")
        self.at += width
        return value


def handshake_problem(data: bytes, server: Capabilities, tls: bool) -> str | None:
    """What mysql-mimic could not parse in a handshake response (or an SSL request), as
    ``packets.parse_handshake_response`` reads it with the server's ``server``
    capabilities; None when nothing."""
    if len(data) < _SSL_REQUEST_BYTES:
        return "the handshake response is too short"
    caps = server & Capabilities(int.from_bytes(data[:4], "little"))
    if len(data) == _SSL_REQUEST_BYTES:
        return None if tls else "this server takes no TLS (serve --tls-cert/--tls-key)"
    r = _Cursor(data, _SSL_REQUEST_BYTES)
    if not r.nul():
        return "the user name has no terminating NUL byte"
    lenenc = Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA in caps
    size = r.lenenc() if lenenc else r.byte()
    if size is None:
        return "the authentication data is cut short"
    r.skip(size)
    if Capabilities.CLIENT_CONNECT_WITH_DB in caps and not r.nul():
        return "the database name has no terminating NUL byte"
    if Capabilities.CLIENT_PLUGIN_AUTH in caps and not r.nul():
        return "the authentication plugin name has no terminating NUL byte"
    return None


def change_user_problem(data: bytes, caps: Capabilities) -> str | None:
    """As :func:`handshake_problem`, for the body of a ``COM_CHANGE_USER``."""
    r = _Cursor(data)
    if not r.nul():
        return "the user name has no terminating NUL byte"
    if Capabilities.CLIENT_SECURE_CONNECTION in caps:
        size = r.byte()
        if size is None:
            return "the authentication data is cut short"
        r.skip(size)
    elif not r.nul():
        return "the authentication data has no terminating NUL byte"
    if not r.nul():
        return "the database name has no terminating NUL byte"
    if r.more():
        if Capabilities.CLIENT_PROTOCOL_41 in caps and not r.skip(2):
            return "the character set is cut short"
        if Capabilities.CLIENT_PLUGIN_AUTH in caps and not r.nul():
            return "the authentication plugin name has no terminating NUL byte"
    return None


def field_list_problem(data: bytes) -> str | None:
    """As :func:`handshake_problem`, for the body of a ``COM_FIELD_LIST``."""
    return None if b"\0" in data else "the table name has no terminating NUL byte"


# -- the stream: packets in, with the limits ------------------------------------------


class GuardedStream:
    """mysql-mimic's packet stream (``MysqlStream``, compiled, so wrapped rather than
    subclassed), reading only packets mysql-mimic can parse, within the time and size
    limits of the module's docstring; everything else is the wrapped stream's."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        limits: MysqlLimits,
        capabilities: Capabilities,
        tls: bool,
    ) -> None:
        self.inner = MysqlStream(reader, writer)
        self.reader = reader
        self.limits = limits
        self.capabilities = capabilities
        self.tls = tls
        #: a client may sign in without TLS: when the server has none, or from loopback
        #: (no other host sees that traffic; as MySQL's require_secure_transport, else)
        peer = writer.get_extra_info("peername")
        self.plain_ok = not tls or not isinstance(peer, tuple) or is_loopback(str(peer[0]))
        self.secured = False
        self.deadline = asyncio.get_running_loop().time() + limits.connect_timeout_s
        self.handshake = True
        #: set once signed in: the connection (its session's variables, its error packets)
        self.connection: GuardedConnection | None = None
        #: the connection must end: nothing more is read
        self.closing = False
        #: the peer stopped reading: the socket is dropped, not flushed
        self.stalled = False

    async def read(self) -> bytes:
        if self.closing:
            raise ConnectionClosed()
        if self.connection is None:
            return await self._before_sign_in()
        idle = self.connection.wait_timeout()
        try:
            async with asyncio.timeout(idle):
                return await self._packet(self.connection.max_packet())
        except TimeoutError:
            self.closing = True
            message = (
                "The client was disconnected by the server because of inactivity "
                f"(wait_timeout: {idle:g} s)."
            )
            await self.write(self.connection.error(msg=message, code=CLIENT_INTERACTION_TIMEOUT))
            raise ConnectionClosed() from None
        except Refused as e:  # told, then closed
            await self.write(self.connection.error(msg=str(e), code=e.code))
            raise

    async def _before_sign_in(self) -> bytes:
        try:
            async with asyncio.timeout_at(self.deadline):
                data = await self._packet(HANDSHAKE_PACKET_BYTES)
        except TimeoutError:
            self.closing = True
            raise Refused(
                f"Bad handshake: no sign-in within {self.limits.connect_timeout_s:g} s "
                "(connect_timeout)",
                ErrorCode.HANDSHAKE_ERROR,
            ) from None
        if self.handshake:
            problem = handshake_problem(data, self.capabilities, self.tls)
            if problem is not None:
                self.closing = True
                raise Refused(f"Bad handshake: {problem}", ErrorCode.HANDSHAKE_ERROR)
            upgrade = len(data) == _SSL_REQUEST_BYTES
            if not upgrade and not self.secured and not self.plain_ok:
                self.closing = True
                raise Refused(
                    "Connections using insecure transport are prohibited: this server "
                    "takes clients of other hosts over TLS only (connect with --ssl)",
                    SECURE_TRANSPORT_REQUIRED,
                )
            self.secured = self.secured or upgrade
            self.handshake = upgrade  # the response follows TLS
        return data

    async def _packet(self, limit: int) -> bytes:
        """One logical packet (MySQL splits one of 16 MiB or more into several)."""
        data = b""
        while True:
            try:
                header = await self.reader.readexactly(4)
            except asyncio.IncompleteReadError:
                raise ConnectionClosed() from None
            size = int.from_bytes(header[:3], "little")
            number = header[3]
            expected = next(self.inner.seq)
            if number != expected:
                self.closing = True
                raise Refused(
                    f"Malformed packet: expected packet number {expected}, got {number}",
                    ErrorCode.MALFORMED_PACKET,
                )
            if len(data) + size > limit:
                self.closing = True
                raise Refused(
                    f"Got a packet bigger than 'max_allowed_packet' bytes ({limit})",
                    NET_PACKET_TOO_LARGE,
                )
            if size:
                try:
                    data += await self.reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    raise ConnectionClosed() from None
            if size < 0xFFFFFF:
                return data

    async def write(self, data: bytes, drain: bool = True) -> None:
        await self._timed(self.inner.write(data, drain))

    async def drain(self) -> None:
        await self._timed(self.inner.drain())

    async def _timed(self, sending: Any) -> None:
        """Bytes out, unless the client has stopped reading them."""
        try:
            async with asyncio.timeout(WRITE_TIMEOUT_S):
                await sending
        except TimeoutError:
            self.closing = self.stalled = True
            raise ConnectionClosed() from None

    def write_many(self, packets: Any) -> None:
        self.inner.write_many(packets)

    def write_text_rows(self, rows: Any, columns: Any) -> int:
        return self.inner.write_text_rows(rows, columns)

    def reset_seq(self) -> None:
        self.inner.reset_seq()

    async def start_tls(self, context: ssl.SSLContext) -> None:
        """TLS after the client's SSL request, within ``connect_timeout``. A client sends
        its TLS hello right behind the request, so the reader may hold some of it already:
        those bytes go to TLS first (asyncio would drop them, and the handshake would
        hang)."""
        loop = asyncio.get_running_loop()
        writer, raw = self.inner.writer, self.inner.writer.transport
        early = bytes(self.reader._buffer)  # read past the SSL request
        self.reader._buffer.clear()
        upgrade = asyncio.ensure_future(
            writer.start_tls(context, ssl_handshake_timeout=max(self.deadline - loop.time(), 0.1))
        )
        try:
            if early:
                plain = raw.get_protocol()
                while raw.get_protocol() is plain and not upgrade.done():
                    await asyncio.sleep(0)
                tls = raw.get_protocol()
                if tls is not plain:  # after asyncio's own connection_made, queued before
                    loop.call_soon(_feed, tls, early)
            await upgrade
        except (TimeoutError, ssl.SSLError, ConnectionError) as e:
            upgrade.cancel()
            self.closing = self.stalled = True
            raise Refused(f"Bad handshake: TLS failed ({type(e).__name__})", 0) from None
        self.reader._transport = writer.transport  # as mysql-mimic's own upgrade does


def _feed(protocol: Any, data: bytes) -> None:
    """Hand ``data`` to asyncio's TLS protocol as if the socket had just read it."""
    view = memoryview(data)
    while view:
        buffer = protocol.get_buffer(len(view))
        n = min(len(buffer), len(view))
        buffer[:n] = view[:n]
        protocol.buffer_updated(n)
        view = view[n:]


# -- the connection: the checks that need its state ----------------------------------


class GuardedConnection(Connection):
    """mysql-mimic's connection over a :class:`GuardedStream`."""

    stream: GuardedStream  # type: ignore[assignment]

    async def connection_phase(self) -> None:
        await super().connection_phase()
        self.stream.connection = self

    async def handle_change_user(self, data: bytes) -> None:
        self._check(change_user_problem(data, self.capabilities))
        await super().handle_change_user(data)

    async def handle_field_list(self, data: bytes) -> None:
        self._check(field_list_problem(data))
        await super().handle_field_list(data)

    def _check(self, problem: str | None) -> None:
        if problem is not None:
            self.stream.closing = True  # answered, then closed
            raise MysqlError(f"Malformed packet: {problem}", ErrorCode.MALFORMED_PACKET)

    def wait_timeout(self) -> float:
        """The session's ``wait_timeout`` (seconds, MySQL's bounds)."""
        try:
            value = float(self.session.variables.get("wait_timeout"))
        except (TypeError, ValueError):
            value = MAX_WAIT_TIMEOUT_S
        return min(max(value, 1.0), MAX_WAIT_TIMEOUT_S)

    def max_packet(self) -> int:
        try:
            return max(int(self.session.variables.get("max_allowed_packet")), 1024)
        except (TypeError, ValueError):
            return 1 << 26


# -- the server ----------------------------------------------------------------------


class GuardedServer(MysqlServer):
    """mysql-mimic's server with :class:`GuardedConnection` connections: as
    ``MysqlServer._client_connected_cb``, but a connection that fails ends quietly (one
    log line, no traceback) and a stalled one is dropped rather than flushed for ever."""

    def __init__(self, *, limits: MysqlLimits, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.limits = limits

    async def _client_connected_cb(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        capabilities = self.capabilities
        if self.ssl is not None:
            capabilities |= Capabilities.CLIENT_SSL
        stream = GuardedStream(
            reader,
            writer,
            limits=self.limits,
            capabilities=capabilities,
            tls=self.ssl is not None,
        )
        connection_id = None
        try:
            session = self.session_factory()
            connection = GuardedConnection(
                stream=stream,  # type: ignore[arg-type]
                session=session,  # type: ignore[arg-type]
                control=self.control,
                server_capabilities=self.capabilities,
                identity_provider=self.identity_provider,
                ssl=self.ssl,
            )
            connection_id = await self.control.add(connection)
            connection.connection_id = connection_id
            await connection.start()
        except Refused as e:
            log.info("MySQL connection from %s closed: %s", _peer(writer), e)
        except (ConnectionClosed, ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            pass  # gone
        except Exception as e:  # refused at sign-in (told so), or a fault: never a traceback
            log.debug("MySQL connection from %s ended: %s", _peer(writer), type(e).__name__)
        finally:
            if connection_id is not None:
                await self.control.remove(connection_id)
            if stream.stalled:
                writer.transport.abort()
            else:  # flushed, then closed; dropped if the client never reads the rest
                writer.close()
                asyncio.get_running_loop().call_later(WRITE_TIMEOUT_S, writer.transport.abort)


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return str(peer[0]) if peer else "?"


__all__ = [
    "GuardedServer",
    "MysqlLimits",
    "Refused",
    "change_user_problem",
    "field_list_problem",
    "handshake_problem",
]

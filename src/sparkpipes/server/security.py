"""The browser threat model of ``sparkpipes serve``, checked before anything else runs.

A web page the user visits can make the browser send requests to the server: to its
address directly (cross-site requests, which carry the user's cookie and any Basic login the
browser remembers), or to a name of the page's own that it re-points at the server's
address (DNS rebinding, which makes the page "same-origin" with the server). :class:`Guard`
refuses both, for every path and in every mode:

- **Host allow-list.** The ``Host`` header must name the server as it was bound
  (:class:`Hosts`): for a loopback ``--host`` ``127.0.0.1``, ``localhost`` and ``[::1]``
  with the server's port; for another ``--host`` that host (on a wildcard address, the
  address the client connected to, as an IP literal, which no rebinding can fake); plus
  every ``--allow-host NAME[:PORT]`` (a name behind a proxy; without a port, any port).
  Anything else answers 421 (400 without a Host) before any other work.
- **State changes are same-origin JSON.** ``POST``/``PUT``/``PATCH``/``DELETE`` are refused
  (403) when ``Sec-Fetch-Site`` says another site or ``Origin`` is not this server, and
  (415) when they send a body, or a content type, that is not JSON: a page cannot send a
  JSON request to another origin without the server's consent (CORS), which this server
  never gives. A request with neither body nor content type (``curl -X POST``) is fine.
- **Forms.** The console's own forms and htmx actions (``/login``, ``/logout``,
  ``/console/…``) may be form-encoded, but must carry a same-origin ``Origin`` here, and a
  CSRF token their handlers check (:class:`Csrf`: an HMAC of the signed-in credential, or of
  the login page's nonce cookie, under a key made at start).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: paths whose POSTs are the console's forms and htmx actions (CSRF token, same origin)
FORM_PATHS = ("/login", "/logout", "/console/")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
#: where the console's pages send the CSRF token, and the login form's nonce cookie
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
NONCE_COOKIE = "sparkpipes_login"
_DEFAULT_PORT = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the server to this machine: a loopback IP
    address (any of 127.0.0.0/8, ::1) or exactly ``localhost``."""
    name = host.strip().lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("", "0.0.0.0", "::")


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` / ``[v6][:port]`` as (lower-case name without brackets, port), or
    None when it is not a host at all."""
    value = value.strip().lower()
    if not value or any(c in value for c in " /\\@?#,"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or _ip(value[1:end]) is None:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    elif ":" in value:  # a bare IPv6 address is no Host header
        return None
    else:
        name, port_text = value, None
    if not name:
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


@dataclass(frozen=True)
class Hosts:
    """The names a request may give in ``Host`` (see the module's docstring)."""

    names: frozenset[str]
    local_address: bool = False
    extra: frozenset[tuple[str, int | None]] = frozenset()

    @classmethod
    def of(cls, host: str, allow: Iterable[str] = ()) -> Hosts:
        """The allow-list of a server bound to ``host``, plus ``--allow-host`` values
        (``NAME`` or ``NAME:PORT``); ValueError names one that is not a host."""
        bound = host.strip().lower().strip("[]")
        names = set(LOOPBACK_NAMES) if is_loopback(bound) or _is_wildcard(bound) else {bound}
        extra = set()
        for value in allow:
            parsed = split_host(value)
            if parsed is None:
                raise ValueError(f"--allow-host {value!r} is not a host name (NAME or NAME:PORT)")
            extra.add(parsed)
        return cls(frozenset(names), _is_wildcard(bound), frozenset(extra))

    def allows(self, host: tuple[str, int | None], scheme: str, server: Any) -> bool:
        """Whether the parsed ``Host`` names this server; ``server`` is the ASGI
        ``(local address, local port)`` the request came in on."""
        name, port = host
        if (name, port) in self.extra or (name, None) in self.extra:
            return True
        local_addr, local_port = server if server else (None, None)
        if (port if port is not None else _DEFAULT_PORT.get(scheme)) != local_port:
            return False
        if name in self.names:
            return True
        if self.local_address and local_addr is not None:
            ip, mine = _ip(name), _ip(str(local_addr))
            return ip is not None and ip == mine
        return False


def _media_type(headers: Headers) -> str | None:
    value = headers.get("content-type")
    return value.split(";", 1)[0].strip().lower() if value is not None else None


def is_json(media_type: str | None) -> bool:
    return media_type is not None and (
        media_type == "application/json"
        or (media_type.startswith("application/") and media_type.endswith("+json"))
    )


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    if headers.get("transfer-encoding"):
        return True
    return length is not None and length.strip() not in ("", "0")


def same_origin(origin: str, host: tuple[str, int | None], scheme: str) -> bool:
    """Whether an ``Origin`` header names the server the request was sent to (its
    ``Host``). Over plain HTTP the origin may be https (a TLS proxy in front); a server
    serving TLS itself takes https origins only (a plain page on that name is another)."""
    scheme_of, sep, rest = origin.strip().lower().partition("://")
    if not sep or scheme_of not in (("https",) if scheme == "https" else ("http", "https")):
        return False
    parsed = split_host(rest)
    if parsed is None:
        return False
    name, port = host
    return parsed[0] == name and (
        parsed[1] if parsed[1] is not None else _DEFAULT_PORT[scheme_of]
    ) == (port if port is not None else _DEFAULT_PORT.get(scheme, 80))


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str


def check(scope: dict[str, Any], hosts: Hosts) -> Refusal | None:
    """Why the request of ``scope`` is refused, or None (the module's rules)."""
    headers = Headers(scope=scope)
    scheme = scope.get("scheme", "http")
    raw_host = headers.get("host")
    if raw_host is None:
        return Refusal(400, "the request has no Host header")
    host = split_host(raw_host)
    if host is None:
        return Refusal(400, "the Host header is not a host name")
    if not hosts.allows(host, scheme, scope.get("server")):
        return Refusal(
            421,
            f"this server does not answer to the name {raw_host.strip()[:100]!r}: it answers "
            "to the names it listens on (a name behind a proxy: sparkpipes serve --allow-host "
            "NAME)",
        )
    if scope.get("method", "GET").upper() not in STATE_CHANGING:
        return None
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in ("same-origin", "none"):
        return Refusal(403, "cross-site requests may not change anything on this server")
    origin = headers.get("origin")
    if origin is not None and not same_origin(origin, host, scheme):
        return Refusal(403, "requests from another origin may not change anything on this server")
    media = _media_type(headers)
    if scope.get("path", "").startswith(FORM_PATHS) and (media is None or media in FORM_TYPES):
        if origin is None:
            return Refusal(403, "a form must be sent from this server's own pages")
        return None
    if is_json(media) or (media is None and not _has_body(headers)):
        return None
    return Refusal(415, "send a JSON body (Content-Type: application/json)")


class Guard:
    """ASGI middleware applying :func:`check` to every HTTP request; ``error(request,
    status, message)`` answers a refusal in the shape the path's clients expect."""

    def __init__(
        self, app: Any, hosts: Hosts, error: Callable[[Request, int, str], Response]
    ) -> None:
        self.app, self.hosts, self.error = app, hosts, error

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = check(scope, self.hosts)
            if refusal is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                answer = self.error(Request(scope), refusal.status, refusal.message)
                answer.headers["Cache-Control"] = "no-store"
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Csrf:
    """CSRF tokens: an HMAC, under a key made when the server starts, of what the
    request is bound to (a digest of its credential, or of the login page's nonce)."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def token(self, binding: str) -> str:
        mac = hmac.new(self._key, binding.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def valid(self, binding: str | None, presented: str | None) -> bool:
        if not binding or not presented:
            return False
        return hmac.compare_digest(self.token(binding), presented.strip())


def credential_binding(value: str) -> str:
    """What a CSRF token of a request signed in with ``value`` (a cookie or an
    ``Authorization`` header) is bound to: its digest, never the credential itself."""
    return "credential:" + hashlib.sha256(value.encode()).hexdigest()


def nonce_binding(nonce: str) -> str:
    return "login:" + hashlib.sha256(nonce.encode()).hexdigest()


def console_action(request: Request) -> bool:
    """Whether a console action (a POST of its htmx buttons) comes from one of its own
    pages: htmx's ``HX-Request`` header and the page's CSRF token for the request's
    credential (``request.state.csrf``, set when it signed in)."""
    expected = getattr(request.state, "csrf", None)
    presented = request.headers.get(CSRF_HEADER)
    if request.headers.get("hx-request") != "true" or not expected or not presented:
        return False
    return hmac.compare_digest(expected, presented.strip())

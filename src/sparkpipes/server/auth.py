"""Who may use ``sparkpipes serve``, on every surface (HTTP API, web console; the MySQL
endpoint follows the same rules in ``server.mysql``).

Every request signs in, in every mode:

- **No user in the catalog** (the server then listens on loopback only): only the account
  that started the server may use it — other accounts of the machine and web pages may
  reach a loopback port too. It proves it with the server's local token, which only that
  account can read (``cli.remote``'s discovery file; ``sparkpipes token`` prints it):
  ``Authorization: Bearer <token>``; or, in a browser, with the one-time sign-in link that
  ``serve`` prints at start (``/login?code=…``, single-use, ``LINK_TTL_S``), which sets a
  session cookie. Such requests are :data:`LOCAL_USER`'s.
- **Users** (``CREATE USER``, ``sparkpipes user add``): ``Authorization: Basic``
  (user:password, sent pre-emptively: the server never asks a browser for it with a
  ``WWW-Authenticate`` challenge), or ``Bearer <token>`` from ``POST /api/login``; the console
  signs in at ``/login`` (a session cookie, HttpOnly, SameSite=Strict, and Secure when
  served over TLS). The local token keeps working for ``sparkpipes sql`` on this machine.

``request.state.user`` is the signed-in user's name (:data:`LOCAL_USER` for the owner);
``request.state.csrf`` the CSRF token of the request's credential (``server.security``).

Sessions (cookies and login tokens) live in the server's memory (a restart signs everyone
out), expire after ``SESSION_TTL_S``, are kept only as SHA-256 digests, and are bound to the
user's password version (``Users.version``): ``ALTER USER … IDENTIFIED BY``, or dropping and
re-creating the user, ends them, as it does a remembered Basic login (a verified Basic
password is remembered, as a digest, for ``BASIC_CACHE_S`` so a client sending it with
every request does not pay for scrypt every time). Failed sign-ins back off per user name
and per address, and passwords are checked on their own pool (``server.throttle``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from pydantic import BaseModel, Field

from sparkpipes.catalog.users import RESERVED
from sparkpipes.server.errors import ERRORS, ApiError
from sparkpipes.server.security import (
    CSRF_FIELD,
    NONCE_COOKIE,
    Csrf,
    credential_binding,
    is_loopback,
    nonce_binding,
)
from sparkpipes.server.throttle import Busy, Hasher, Throttle, retry_after

__all__ = ["LOCAL_USER", "Auth", "install", "is_loopback", "safe_next"]

#: who a request holding the server's local token is (``request.state.user``); no user
#: of the catalog may have this name
LOCAL_USER = RESERVED
COOKIE = "sparkpipes_session"
#: over TLS: a ``__Host-`` cookie, which a plain-HTTP server on another port of the same
#: host cannot set (cookies are not kept apart by port; that one could overwrite ours)
TLS_COOKIE = "__Host-" + COOKIE


def cookie_name(request: Request) -> str:
    """The session cookie's name for a request (over TLS, the ``__Host-`` one only)."""
    return TLS_COOKIE if _tls(request) else COOKIE


SESSION_TTL_S = 12 * 3600
BASIC_CACHE_S = 60.0
LINK_TTL_S = 600.0
_USERS_CACHE_S = 2.0
#: paths open to anyone: the login page and its assets, the API's login, and the API's
#: contract (the OpenAPI document holds no data)
OPEN = (
    "/login",
    "/logout",
    "/api/login",
    "/console/static/",
    "/favicon.ico",
    "/openapi.json",
)
WRONG = "wrong user or password"
OWNER_ONLY = (
    "this server has no users: only the account that started it may use it "
    "(Authorization: Bearer $(sparkpipes token), or the sign-in link `sparkpipes serve` "
    "printed when it started)"
)
SIGN_IN = (
    "sign in: this server asks for a user and password (Authorization: Basic, or Bearer "
    "with a token from POST /api/login)"
)


class Login(BaseModel):
    user: str = Field(min_length=1)
    password: str


@dataclass(frozen=True)
class Session:
    user: str
    expires: float
    #: the user's password version when it was made; None: the owner's session
    version: str | None


@dataclass(frozen=True)
class Principal:
    """A signed-in request: who, and what its CSRF token is bound to."""

    user: str
    binding: str


@dataclass(frozen=True)
class Refused:
    status: int
    message: str
    retry_after: str | None = None


@dataclass(frozen=True)
class _Checked:
    version: str | None = None
    wait_s: float = 0.0


def _wait(wait_s: float) -> Refused:
    after = retry_after(wait_s)
    return Refused(429, f"too many failed sign-ins: wait {after} s and try again", after)


class Auth:
    """The server's sign-in state over one catalog's users."""

    def __init__(
        self,
        users: Any,
        *,
        loopback: bool = True,
        local_token: str | None = None,
        throttle: Throttle | None = None,
        hasher: Hasher | None = None,
    ) -> None:
        self.users = users
        self.loopback = loopback
        self.throttle = throttle or Throttle()
        self.hasher = hasher or Hasher()
        self.csrf = Csrf()
        self._local = _digest(local_token) if local_token else None
        self._sessions: dict[str, Session] = {}
        self._links: dict[str, float] = {}  # code digest → valid until
        self._basic: dict[str, tuple[str, float]] = {}  # digest → (version, until)
        self._count: tuple[int, float] = (0, 0.0)
        self._lock = threading.Lock()

    def owner_only(self) -> bool:
        """Whether the catalog has no user (then only the owner signs in)."""
        count, at = self._count
        if time.monotonic() - at > _USERS_CACHE_S:
            count = self.users.count()
            self._count = (count, time.monotonic())
        return count == 0

    async def owner_only_async(self) -> bool:
        """:meth:`owner_only` from the event loop (a thread only to read the catalog)."""
        count, at = self._count
        if time.monotonic() - at <= _USERS_CACHE_S:
            return count == 0
        return await asyncio.to_thread(self.owner_only)

    # -- the owner: local token and one-time links ------------------------------------------
    def owner_link(self) -> str:
        """A new one-time sign-in code for the owner (valid ``LINK_TTL_S``)."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            now = time.monotonic()
            self._links = {k: t for k, t in self._links.items() if t > now}
            self._links[_digest(code)] = now + LINK_TTL_S
        return code

    def redeem(self, code: str) -> tuple[str, Session] | None:
        """An owner session for a valid code, which is then used up; else None."""
        with self._lock:
            until = self._links.pop(_digest(code), None)
        if until is None or until < time.monotonic():
            return None
        return self._new_session(LOCAL_USER, None)

    def is_local_token(self, value: str) -> bool:
        return bool(self._local) and hmac.compare_digest(_digest(value), self._local or "")

    # -- passwords and sessions ---------------------------------------------------------
    async def check_password(
        self, user: str, password: str, address: str, *, remember: bool = False
    ) -> str | Refused:
        """``user``'s password version when ``password`` is right; else why not (401, or
        429 while ``user`` or ``address`` must wait). With ``remember``, a password verified
        in the last ``BASIC_CACHE_S`` for the same version is taken without scrypt."""
        wait = self.throttle.wait_s(user, address)
        if wait > 0:
            return _wait(wait)
        key = hashlib.sha256(f"{user}\0{password}".encode()).hexdigest()
        if remember:
            with self._lock:
                hit = self._basic.get(key)
            live = hit is not None and hit[1] > time.monotonic()
            if live and await asyncio.to_thread(self.users.version, user) == hit[0]:
                return hit[0]
        try:
            checked = await self.hasher.run(self._check, user, password, address)
        except Busy:
            return Refused(429, "too many sign-ins at once: try again in a moment", "1")
        if checked.wait_s > 0:
            return _wait(checked.wait_s)
        if checked.version is None:
            return Refused(401, WRONG)
        if remember:
            with self._lock:
                if len(self._basic) > 1000:
                    self._basic.clear()
                self._basic[key] = (checked.version, time.monotonic() + BASIC_CACHE_S)
        return checked.version

    def _check(self, user: str, password: str, address: str) -> _Checked:
        """On the hasher's pool: the throttle again (many may have queued meanwhile),
        then scrypt, and the outcome counted."""
        wait = self.throttle.wait_s(user, address)
        if wait > 0:
            return _Checked(wait_s=wait)
        before = self.users.version(user)
        ok = self.users.verify(user, password) and user != LOCAL_USER
        if ok and before is not None and self.users.version(user) == before:
            self.throttle.succeeded(user, address)
            return _Checked(version=before)
        self.throttle.failed(user, address)
        return _Checked()

    async def login(self, user: str, password: str, address: str) -> tuple[str, Session] | Refused:
        """A new session token for ``user``, or why not (at once while there is no user:
        no password can be right then)."""
        if await self.owner_only_async():
            return Refused(401, OWNER_ONLY)
        checked = await self.check_password(user, password, address)
        if isinstance(checked, Refused):
            return checked
        return self._new_session(user, checked)

    def _new_session(self, user: str, version: str | None) -> tuple[str, Session]:
        token = secrets.token_urlsafe(32)
        session = Session(user, time.time() + SESSION_TTL_S, version)
        with self._lock:
            now = time.time()
            self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
            self._sessions[_digest(token)] = session
        return token, session

    def logout(self, token: str | None) -> None:
        if token:
            with self._lock:
                self._sessions.pop(_digest(token), None)

    def session(self, token: str | None) -> Session | None:
        """The live session of ``token``: not expired, and for a user, the password
        version it was made with (one catalog read)."""
        if not token:
            return None
        with self._lock:
            s = self._sessions.get(_digest(token))
        if s is None or s.expires < time.time():
            return None
        if s.version is not None and self.users.version(s.user) != s.version:
            self.logout(token)  # password changed, or the user dropped (and made again)
            return None
        return s

    async def authenticate(
        self, headers: Any, cookies: dict[str, str], address: str, *, cookie_name: str = COOKIE
    ) -> Principal | Refused:
        """Who a request proves to be (its Authorization header, else its cookie)."""
        header = headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and value:
            if self.is_local_token(value):
                return Principal(LOCAL_USER, credential_binding(header))
            s = await asyncio.to_thread(self.session, value)
            if s is None:
                return Refused(401, "this token is not valid (any more): sign in again")
            return Principal(s.user, credential_binding(header))
        if scheme.lower() == "basic":
            try:
                name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
            except (ValueError, UnicodeDecodeError, binascii.Error):
                sep = ""
            if not sep:
                return Refused(401, "Authorization: Basic takes base64 of user:password")
            if await self.owner_only_async():
                return Refused(401, OWNER_ONLY)
            checked = await self.check_password(name, password, address, remember=True)
            if isinstance(checked, Refused):
                return checked
            return Principal(name, credential_binding(header))
        cookie = cookies.get(cookie_name)
        if cookie:
            s = await asyncio.to_thread(self.session, cookie)
            if s is not None:
                return Principal(s.user, cookie_binding(cookie))
        return Refused(401, OWNER_ONLY if await self.owner_only_async() else SIGN_IN)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def cookie_binding(cookie: str) -> str:
    return credential_binding(f"{COOKIE}={cookie}")


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path on this server only."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/console"
    return target


def address_of(request: Request) -> str:
    return request.client.host if request.client else ""


def wants_html(headers: Mapping[str, str]) -> bool:
    """Whether a request is a browser's asking for a page (``Accept`` names
    ``text/html``): ``/`` then means the console, not Kafka Connect's version JSON, and a
    missing sign-in is the login page rather than a 401."""
    return "text/html" in headers.get("accept", "").lower()


def install(app: Any, auth: Auth, error: Any) -> None:
    """Ask every request to sign in; mount the login routes. ``error(request, status,
    message)`` answers in the shape the path's clients expect."""

    @app.middleware("http")
    async def _sign_in(request: Request, call_next: Any) -> Any:
        path = request.url.path
        request.state.user = None
        request.state.csrf = None
        if path.startswith(OPEN):
            return await call_next(request)
        found = await auth.authenticate(
            request.headers, request.cookies, address_of(request), cookie_name=cookie_name(request)
        )
        if isinstance(found, Refused):
            browsing = request.method in ("GET", "HEAD") and (
                (path == "/" and wants_html(request.headers)) or path.startswith("/console")
            )
            if found.status == 401 and browsing:
                return RedirectResponse(f"/login?next={quote(path)}", status_code=303)
            answer = error(request, found.status, found.message)
            if found.retry_after:
                answer.headers["Retry-After"] = found.retry_after
            return answer
        request.state.user = found.user
        request.state.csrf = auth.csrf.token(found.binding)
        return await call_next(request)

    async def page(
        request: Request,
        target: str,
        problem: str | None = None,
        status: int = 200,
        wait: str | None = None,
    ) -> HTMLResponse:
        """The login page, its form's CSRF token bound to a nonce cookie (the browser's,
        so several tabs and a retry work; else a fresh one)."""
        nonce = request.cookies.get(NONCE_COOKIE) or secrets.token_urlsafe(16)
        owner_only = await auth.owner_only_async()
        body = _login_html(
            target, problem, auth.csrf.token(nonce_binding(nonce)), owner_only=owner_only
        )
        answer = HTMLResponse(body, status_code=status, headers=_PAGE_HEADERS)
        answer.set_cookie(
            NONCE_COOKIE,
            nonce,
            max_age=3600,
            httponly=True,
            samesite="strict",
            path="/login",
            secure=_tls(request),
        )
        if wait:
            answer.headers["Retry-After"] = wait
        return answer

    @app.get("/login", include_in_schema=False)
    async def login_page(request: Request, next: str = "/console", code: str | None = None) -> Any:
        if code is not None:
            made = auth.redeem(code)
            if made is None:
                return await page(
                    request, "/console", "this sign-in link was used already or has expired", 401
                )
            answer = RedirectResponse("/console", status_code=303)
            _set_cookie(answer, made[0], request)
            return answer
        return await page(request, safe_next(next))

    @app.post("/login", include_in_schema=False)
    async def login_form(request: Request) -> Any:
        form = _form(await request.body())
        target = safe_next(form.get("next"))
        nonce = request.cookies.get(NONCE_COOKIE)
        if not auth.csrf.valid(nonce and nonce_binding(nonce), form.get(CSRF_FIELD)):
            return await page(request, target, "this sign-in form has expired: sign in again", 403)
        made = await auth.login(form.get("user", ""), form.get("password", ""), address_of(request))
        if isinstance(made, Refused):
            return await page(request, target, made.message, made.status, made.retry_after)
        answer = RedirectResponse(target, status_code=303)
        _set_cookie(answer, made[0], request)
        answer.delete_cookie(NONCE_COOKIE, path="/login", secure=_tls(request))
        return answer

    @app.get("/logout", include_in_schema=False)
    def logout_get(request: Request) -> Any:
        answer = error(request, 405, "sign out with the console's Sign out button (POST /logout)")
        answer.headers["Allow"] = "POST"
        return answer

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Any:
        cookie = request.cookies.get(cookie_name(request))
        if cookie:
            form = _form(await request.body())
            if not auth.csrf.valid(cookie_binding(cookie), form.get(CSRF_FIELD)):
                return error(request, 403, "sign out with the console's Sign out button")
            auth.logout(cookie)
        answer = RedirectResponse("/login", status_code=303)
        answer.delete_cookie(cookie_name(request), path="/", secure=_tls(request))
        return answer

    login_errors = {k: ERRORS[k] for k in (400, 401)}
    login_errors[429] = {"model": ApiError, "description": "too many failed sign-ins: wait"}

    @app.post("/api/login", responses=login_errors)
    async def api_login(request: Request, body: Login) -> Any:
        """A session token for ``Authorization: Bearer`` (also set as the console's cookie)."""
        made = await auth.login(body.user, body.password, address_of(request))
        if isinstance(made, Refused):
            answer = JSONResponse(
                {"error": {"code": f"SP{made.status}", "message": made.message}}, made.status
            )
            if made.retry_after:
                answer.headers["Retry-After"] = made.retry_after
            return answer
        token, session = made
        answer = JSONResponse(
            {"token": token, "user": session.user, "expires_at": int(session.expires)}
        )
        _set_cookie(answer, token, request)
        return answer


_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer makes a form POST say Origin: null
    "Cache-Control": "no-store",
}


def _form(raw: bytes) -> dict[str, str]:
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        return {}
    return {k: v[0] for k, v in parse_qs(text).items()}


def _set_cookie(answer: Any, token: str, request: Request) -> None:
    answer.set_cookie(
        cookie_name(request),
        token,
        max_age=SESSION_TTL_S,
        httponly=True,
        samesite="strict",
        path="/",
        secure=_tls(request),
    )


def _tls(request: Request) -> bool:
    """Whether the request came over TLS (``serve --tls-cert``): its cookies are then
    ``Secure``, never sent over plain HTTP."""
    return request.url.scheme == "https"


def _login_html(target: str, problem: str | None, csrf: str, *, owner_only: bool) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("sparkpipes.server", "templates"), autoescape=select_autoescape()
    )
    return env.get_template("login.html").render(
        next=target, problem=problem, csrf=csrf, owner_only=owner_only
    )

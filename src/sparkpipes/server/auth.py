"""Who may use ``sparkpipes serve``: the users of the catalog (``CREATE USER``,
``sparkpipes user add``), on every surface (HTTP API, web console, MySQL endpoint).

The rule: while the catalog has no user, the server listens on loopback only and asks for
nothing (a single-user machine, as before). Once a user exists — and always when the
server listens beyond loopback — every request must name a user and prove the password:

- HTTP clients: ``Authorization: Basic`` (user:password), or ``Authorization: Bearer
  <token>`` with a token from ``POST /api/login``;
- ``sparkpipes sql`` on this machine: ``Authorization: Bearer`` with the server's local
  token, which only the user who started it can read (``cli.remote``: the discovery file);
- the console: a session cookie set by the login page (``/login``), HttpOnly and
  SameSite=Strict (so another site cannot make the browser act on the console);
- MySQL clients: ``mysql_native_password`` against the user's stored digest.

A server on a non-loopback address whose users were all dropped refuses everyone rather
than opening up. Sessions live in the server's memory (a restart signs everyone out) and
expire after ``SESSION_TTL_S``; tokens are kept only as SHA-256 digests. A verified Basic
password is remembered (as a digest) for ``BASIC_CACHE_S`` so that a client sending it
with every request does not pay for scrypt every time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from pydantic import BaseModel, Field

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: who a request holding the server's local token is (``request.state.user``)
LOCAL_USER = "(local)"
COOKIE = "sparkpipes_session"
SESSION_TTL_S = 12 * 3600
BASIC_CACHE_S = 60.0
_USERS_CACHE_S = 2.0
#: paths open to anyone: the login page and its assets, the API's login, and the API's
#: contract (the OpenAPI document and its viewer hold no data)
OPEN = (
    "/login",
    "/logout",
    "/api/login",
    "/console/static/",
    "/favicon.ico",
    "/openapi.json",
    "/docs",
)


class Login(BaseModel):
    user: str = Field(min_length=1)
    password: str


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


@dataclass(frozen=True)
class Session:
    user: str
    expires: float


class Auth:
    """The server's sign-in state over one catalog's users."""

    def __init__(
        self, users: Any, *, loopback: bool = True, local_token: str | None = None
    ) -> None:
        self.users = users
        self.loopback = loopback
        self._local = _digest(local_token) if local_token else None
        self._sessions: dict[str, Session] = {}
        self._basic: dict[str, tuple[str, float]] = {}  # digest → (stored digest, until)
        self._count: tuple[int, float] = (0, 0.0)
        self._lock = threading.Lock()

    def required(self) -> bool:
        """Whether requests must sign in: some user exists, or the server is not on
        loopback (then always)."""
        if not self.loopback:
            return True
        count, at = self._count
        if time.monotonic() - at > _USERS_CACHE_S:
            count = self.users.count()
            self._count = (count, time.monotonic())
        return count > 0

    def forget_count(self) -> None:
        self._count = (0, 0.0)

    # -- passwords and sessions ---------------------------------------------------------
    def verify(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s. A remembered success still checks that the
        user exists with the same password (one cheap catalog read, no scrypt)."""
        key = hashlib.sha256(f"{user}\0{password}".encode()).hexdigest()
        with self._lock:
            hit = self._basic.get(key)
        if hit and hit[1] > time.monotonic():
            rec = self.users.get(user)
            if rec is not None and rec.mysql_native == hit[0]:
                return True
        if not self.users.verify(user, password):
            return False
        rec = self.users.get(user)
        with self._lock:
            if len(self._basic) > 1000:
                self._basic.clear()
            if rec is not None:
                self._basic[key] = (rec.mysql_native, time.monotonic() + BASIC_CACHE_S)
        return True

    def login(self, user: str, password: str) -> tuple[str, Session] | None:
        """A new session token for ``user``, or None for a wrong name or password."""
        if not self.verify(user, password):
            return None
        token = secrets.token_urlsafe(32)
        session = Session(user, time.time() + SESSION_TTL_S)
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
        if not token:
            return None
        with self._lock:
            s = self._sessions.get(_digest(token))
        if s is None or s.expires < time.time():
            return None
        if self.users.get(s.user) is None:  # dropped since
            self.logout(token)
            return None
        return s

    def user_of(self, headers: Any, cookies: dict[str, str]) -> str | None:
        """The user a request proves to be, from its Authorization header or cookie."""
        auth = headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "basic":
            try:
                name, _, password = base64.b64decode(value.strip()).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return None
            return name if self.verify(name, password) else None
        if scheme.lower() == "bearer":
            if self._local and hmac.compare_digest(_digest(value.strip()), self._local):
                return LOCAL_USER
            s = self.session(value.strip())
            return s.user if s else None
        s = self.session(cookies.get(COOKIE))
        return s.user if s else None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path on this server only."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/console"
    return target


def install(app: Any, auth: Auth, error: Any) -> None:
    """Ask every request to sign in when :meth:`Auth.required`; mount the login routes.
    ``error(request, status, message)`` answers in the shape the path's clients expect."""
    from urllib.parse import parse_qs, quote

    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

    from sparkpipes.server.api import ERRORS

    @app.middleware("http")
    async def _sign_in(request: Request, call_next: Any) -> Any:
        path = request.url.path
        request.state.user = None
        if path.startswith(OPEN) or not auth.required():
            return await call_next(request)
        user = await _in_thread(auth.user_of, request.headers, request.cookies)
        if user is None:
            if path == "/" or path.startswith("/console"):
                return RedirectResponse(f"/login?next={quote(path)}", status_code=303)
            answer = error(request, 401, "sign in: this server asks for a user and password")
            answer.headers["WWW-Authenticate"] = 'Basic realm="sparkpipes"'
            return answer
        request.state.user = user
        return await call_next(request)

    @app.get("/login", include_in_schema=False)
    def login_page(next: str = "/console") -> HTMLResponse:
        return HTMLResponse(_login_html(safe_next(next), None))

    @app.post("/login", include_in_schema=False)
    async def login_form(request: Request) -> Any:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        target = safe_next(form.get("next"))
        made = await _in_thread(auth.login, form.get("user", ""), form.get("password", ""))
        if made is None:
            return HTMLResponse(_login_html(target, "wrong user or password"), status_code=401)
        answer = RedirectResponse(target, status_code=303)
        _set_cookie(answer, made[0])
        return answer

    @app.get("/logout", include_in_schema=False)
    def logout(request: Request) -> Any:
        auth.logout(request.cookies.get(COOKIE))
        answer = RedirectResponse("/login", status_code=303)
        answer.delete_cookie(COOKIE, path="/")
        return answer

    @app.post("/api/login", responses={k: ERRORS[k] for k in (400, 401)})
    async def api_login(body: Login) -> Any:
        """A session token for ``Authorization: Bearer`` (also set as the console's cookie)."""
        made = await _in_thread(auth.login, body.user, body.password)
        if made is None:
            return JSONResponse(
                {"error": {"code": "SP401", "message": "wrong user or password"}}, 401
            )
        token, session = made
        answer = JSONResponse(
            {"token": token, "user": session.user, "expires_at": int(session.expires)}
        )
        _set_cookie(answer, token)
        return answer


async def _in_thread(fn: Any, *args: Any) -> Any:
    import asyncio

    return await asyncio.to_thread(fn, *args)


def _set_cookie(answer: Any, token: str) -> None:
    answer.set_cookie(
        COOKIE, token, max_age=SESSION_TTL_S, httponly=True, samesite="strict", path="/"
    )


def _login_html(target: str, problem: str | None) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("sparkpipes.server", "templates"), autoescape=select_autoescape()
    )
    return env.get_template("login.html").render(next=target, problem=problem)

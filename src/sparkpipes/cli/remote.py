"""``sparkpipes sql`` through a running ``sparkpipes serve`` of the same warehouse and catalog.

A server advertises itself with a discovery file in the user's servers directory
(``util.userdirs.servers_dir``: owner-only), named by a digest of the warehouse and
catalog URL (never the URL itself, which may hold a password), holding its pid, its URL and
a random token made at start. The token is the server's local credential: whoever can read
the file is this user, so the server takes it as ``Authorization: Bearer`` always — while
the catalog has no user it is the only credential the server takes (``sparkpipes token``
prints it; over MySQL it is the password). It never appears in a log, an error, the
process's arguments or the console.

The CLI sends the statements to ``POST /api/sql`` and prints what comes back as it would
have printed a local run, byte for byte but for the timings: a query's rows come in chunks
as Spark gives them (the server never holds a whole result) and are printed, as a local
run prints them, once the last has come. A server serving HTTPS (``--tls-cert``) puts its
certificate in the discovery file, and the CLI trusts exactly that certificate (it is the
owner's own server, found through an owner-only file), no other. A file whose process is gone
or whose server refuses the connection is stale: it is removed and the statements run
locally. Importing this module costs no more than the standard library: a CLI that finds a
server never imports the engine, SQLAlchemy, Arrow or Spark.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import secrets
import ssl
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sparkpipes.errors import SparkpipesError

#: set to 1 to run statements in this process even when a server serves the warehouse
NO_SERVER_ENV = "SPARKPIPES_NO_SERVER"
PATH = "/api/sql"
CONNECT_TIMEOUT_S = 2.0
#: the server answers its headers before running anything; no headers by then: it hangs
ANSWER_TIMEOUT_S = 60.0
log = logging.getLogger("sparkpipes.cli")


class Unreachable(SparkpipesError):
    """The advertised server did not take the statements; none of them ran."""

    code = "SP110"


def _warehouse(warehouse: str) -> str:
    """The warehouse as the engine names it (``Engine.warehouse``)."""
    where = os.fspath(warehouse)
    return where.rstrip("/") if "://" in where else os.path.abspath(where)


def discovery_path(warehouse: str, catalog_url: str | None) -> str | None:
    """The discovery file of a server of ``warehouse`` + ``catalog_url`` (None: the user
    has no private directory for it)."""
    from sparkpipes.util.userdirs import servers_dir

    where = servers_dir()
    if where is None:
        return None
    key = f"{_warehouse(warehouse)}\0{catalog_url or ''}".encode()
    return os.path.join(where, hashlib.sha256(key).hexdigest()[:32] + ".json")


def local_url(host: str, port: int, *, https: bool = False) -> str:
    """How a client on this machine reaches a server listening on ``host``."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    scheme = "https" if https else "http"
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


@contextlib.contextmanager
def advertise(warehouse: str, catalog_url: str | None) -> Iterator[Advert]:
    """``sparkpipes serve``'s discovery file: made with a fresh token; the server fills in
    its URL (:meth:`Advert.publish`) once it listens, and the file is removed when it
    stops. The newest server of a warehouse is the one advertised."""
    advert = Advert(secrets.token_urlsafe(32), discovery_path(warehouse, catalog_url))
    try:
        yield advert
    finally:
        advert.withdraw()


@dataclass
class Advert:
    token: str = field(repr=False)
    path: str | None

    def publish(self, url: str, tls_cert: str | None = None) -> None:
        """Advertise ``url``; ``tls_cert``: the PEM certificate an https URL presents."""
        if self.path is None:
            return
        _sweep(os.path.dirname(self.path))
        data = {"pid": os.getpid(), "url": url, "token": self.token}
        if tls_cert is not None:
            data["tls_cert"] = tls_cert
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        except OSError as e:
            log.warning("cannot advertise the server to `sparkpipes sql`: %s", e.strerror)
            self.path = None

    def withdraw(self) -> None:
        if self.path is None:
            return
        found = _read(self.path)
        if found is not None and found.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                os.remove(self.path)


def _read(path: str) -> dict[str, Any] | None:
    from sparkpipes.util.userdirs import owned_file

    if not owned_file(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and isinstance(data.get("pid"), int)
    ok = ok and isinstance(data.get("url"), str) and bool(data.get("token"))
    return data if ok and isinstance(data.get("tls_cert", ""), str) else None


def _sweep(where: str) -> None:
    """Remove the files of servers that are gone (killed, so they could not)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(where):
            if entry.name.endswith(".json"):
                data = _read(entry.path)
                if data is not None and not _alive(data["pid"]):
                    forget(entry.path, data["pid"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find(warehouse: str, catalog_url: str | None) -> Remote | None:
    """The server advertised for the warehouse, or None; a file left by a process that is
    gone is removed."""
    path = discovery_path(warehouse, catalog_url)
    if path is None or not os.path.exists(path):
        return None
    data = _read(path)
    if data is None:
        return None
    if not _alive(data["pid"]):
        forget(path, data["pid"])
        return None
    return Remote(data["url"], data["token"], data["pid"], path, data.get("tls_cert"))


def forget(path: str, pid: int) -> None:
    """Remove a stale discovery file, unless a new server has replaced it meanwhile."""
    found = _read(path)
    if found is not None and found.get("pid") == pid:
        with contextlib.suppress(OSError):
            os.remove(path)


@dataclass(frozen=True)
class _Shown:
    """One statement's result as ``display.result`` takes it."""

    columns: list[str]
    rows: list[list[str | None]]
    message: str | None

    @property
    def has_rows(self) -> bool:
        return bool(self.columns)


@dataclass(frozen=True)
class Remote:
    """Statements run by the server at ``url``."""

    url: str
    token: str = field(repr=False)
    pid: int
    path: str
    #: the PEM certificate of an https server, the only one trusted for it
    tls_cert: str | None = field(default=None, repr=False)

    def script(self, text: str, *, echo: bool = False) -> int:
        """Run ``text`` on the server, printing each result once it has come whole, and
        the first error; the exit code. Raises :class:`Unreachable` when the server did
        not take the statements (then none ran)."""
        from sparkpipes.util import display

        answer = self._post(text)
        try:
            t = time.time()
            pending: dict[str, Any] | None = None  # a result whose rows are still coming
            for raw in answer:
                if not raw.strip():
                    continue
                item = json.loads(raw)
                if "error" in item:
                    print(
                        f"error: {item['error'].get('text') or item['error']['message']}",
                        file=sys.stderr,
                    )
                    return 1
                if pending is not None and "rows" in item and "statement" not in item:
                    pending["rows"].extend(item["rows"])
                    continue
                if pending is not None and "end" in item:
                    item, pending = pending, None
                elif item.get("more"):
                    pending = {**item, "rows": list(item.get("rows") or [])}
                    continue
                if echo:
                    from sparkpipes.cli.shell import PROMPT

                    print(f"{PROMPT}{item['statement']};")
                shown = _Shown(item.get("columns") or [], item.get("rows") or [], item["message"])
                print(display.result(shown, time.time() - t), flush=True)
                t = time.time()
            if pending is not None:
                raise ValueError("the answer ended amid a result")
        except (OSError, http.client.HTTPException, ValueError) as e:
            print(f"error: the server at {self.url} stopped answering: {e}", file=sys.stderr)
            return 1
        finally:
            answer.close()
        return 0

    def _connection(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        host = parts.hostname or "127.0.0.1"
        if parts.scheme != "https":
            return http.client.HTTPConnection(host, parts.port or 80, timeout=CONNECT_TIMEOUT_S)
        return http.client.HTTPSConnection(
            host, parts.port or 443, timeout=CONNECT_TIMEOUT_S, context=self._trust()
        )

    def _trust(self) -> ssl.SSLContext:
        """Trust the advertised certificate and only it. The URL names the address the
        server listens on, which a certificate rarely names, so the name is not checked:
        the certificate itself is (a server without its private key cannot present it)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # a CA's certificate is trusted alone
        if not self.tls_cert:
            raise Unreachable(f"the server at {self.url} advertised no certificate")
        try:
            ctx.load_verify_locations(cadata=self.tls_cert)
        except (ssl.SSLError, ValueError):
            raise Unreachable(f"the certificate advertised for {self.url} is unusable") from None
        return ctx

    def _post(self, text: str) -> http.client.HTTPResponse:
        conn = self._connection()
        try:
            conn.connect()
        except ssl.SSLError as e:  # not the advertised server: nothing is sent to it
            conn.close()
            raise Unreachable(f"the server at {self.url} failed TLS: {e.reason or e}") from None
        except OSError:
            forget(self.path, self.pid)  # nobody listens: the file is stale
            raise Unreachable(f"no server answers at {self.url}") from None
        try:
            conn.sock.settimeout(ANSWER_TIMEOUT_S)
            conn.request(
                "POST",
                PATH,
                json.dumps({"sql": text}).encode(),
                {
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                    "Accept": "application/x-ndjson",
                },
            )
            answer = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise Unreachable(f"the server at {self.url} does not answer: {e}") from None
        conn.sock.settimeout(None)  # a statement may run for as long as it takes
        if answer.status != 200:
            detail = answer.read(4096).decode("utf-8", "replace")
            conn.close()
            if answer.status in (401, 404):  # another server, or one without /api/sql
                raise Unreachable(f"the server at {self.url} answered {answer.status}")
            try:
                message = json.loads(detail)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = detail[:200]
            raise SparkpipesError(f"the server at {self.url} answered {answer.status}: {message}")
        return answer


def local_token(warehouse: str, catalog_url: str | None) -> str | None:
    """The local token of the server advertised for the warehouse (``sparkpipes token``),
    or None when none runs."""
    server = find(warehouse, catalog_url)
    return server.token if server is not None else None

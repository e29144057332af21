"""The transport of ``sparkpipes serve``, attacked as the security review did, against real
servers on 127.0.0.1 with raw sockets and real clients (requests, PyMySQL, the ``mariadb``
CLI, ``sparkpipes sql``):

- a malformed MySQL handshake (a string without its NUL byte), which froze the whole server
  before any sign-in, closes only its own connection with a protocol error; HTTP and other
  MySQL clients go on, and SIGTERM still stops the server;
- half-open connections (nothing sent, half a request line, half the headers, headers a
  byte at a time, half a body, idle keep-alive; MySQL before and after sign-in) are closed
  within the timeouts ``serve`` was given, while statements running longer are not cut;
- over-deep input (10,000-deep JSON; SQL nested 10,000 deep, CASE nested 3,000 deep or only
  100 deep, which Spark would write out exponentially) is a clean 400 naming the problem on
  every surface, never a 500, a traceback or a hang;
- ``--tls-cert``/``--tls-key``: HTTPS with ``Secure`` cookies, TLS on the MySQL endpoint
  (even for a client whose TLS hello arrives with its SSL request), ``sparkpipes sql``
  through the server trusting exactly its certificate; a non-loopback server without TLS
  warns that passwords would cross the network in clear.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pymysql
import requests

from sparkpipes.cli.remote import discovery_path
from sparkpipes.testing.tls import self_signed
from tests.e2e.serving import (
    SIGN_IN_CAPS,
    free_port,
    handshake_response,
    mariadb,
    native_password,
    serve,
    sparkpipes,
    wait,
)
from tests.e2e.serving import mysql_packet as packet
from tests.e2e.serving import mysql_send as send

PASSWORD = "Ana-pw-5521"
CONNECT_WITH_DB, SSL = 0x8, 0x800
#: a statement that keeps Spark busy for seconds (two local cores)
SLOW = "SELECT count(DISTINCT id % 2000003) AS n FROM range(0, 20000000, 1, 2)"


# -- raw sockets -------------------------------------------------------------------------


def mysql_hello(port: int) -> tuple[socket.socket, bytes]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    return sock, packet(sock)


def signed_in(port: int, password: str) -> socket.socket:
    """A connection signed in by hand (mysql_native_password), ready for a command."""
    sock, hello = mysql_hello(port)
    send(sock, handshake_response(b"me\0", SIGN_IN_CAPS, native_password(hello, password)), 1)
    ok = packet(sock)
    assert ok is not None and ok[:1] == b"\0", ok
    return sock


def until_closed(sock: socket.socket, limit_s: float = 30.0) -> tuple[float, list[bytes]]:
    """Seconds until the server closed the connection, and the packets it sent first."""
    started, got = time.monotonic(), []
    sock.settimeout(limit_s)
    try:
        while (body := packet(sock)) is not None:
            got.append(body)
    except TimeoutError:
        raise AssertionError(f"not closed within {limit_s} s; got {got}") from None
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return time.monotonic() - started, got


def untimed(text: str) -> str:
    return re.sub(r"\(\d+\.\d\d sec\)", "(t sec)", text)


def error_of(body: bytes) -> tuple[int, str]:
    assert body[:1] == b"\xff", body
    return int.from_bytes(body[1:3], "little"), body[9:].decode()


def http_closed(sock: socket.socket, limit_s: float = 30.0) -> tuple[float, bytes]:
    started, got = time.monotonic(), b""
    sock.settimeout(limit_s)
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except TimeoutError:
        raise AssertionError(f"not closed within {limit_s} s; got {got!r}") from None
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return time.monotonic() - started, got


def http_socket(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    if data:
        sock.sendall(data)
    return sock


# -- 1. malformed MySQL packets ----------------------------------------------------------


def test_a_malformed_mysql_packet_closes_only_its_connection(tmp_path):
    port = free_port()
    with serve(tmp_path / "wh", "/api/status", "--mysql-port", str(port)) as s:
        other = pymysql.connect(host="127.0.0.1", port=port, user="me", password=s.token)
        malformed = {
            # the "connect with database" flag, and no database name after the password
            "the database name": handshake_response(
                b"root\0", SIGN_IN_CAPS | CONNECT_WITH_DB, b"\x00"
            ),
            "the user name": handshake_response(b"root-without-its-nul", SIGN_IN_CAPS),
            "the authentication plugin name": handshake_response(
                b"root\0", SIGN_IN_CAPS, b"\x00mysql_native_password"
            ),
        }
        for what, body in malformed.items():
            sock, _ = mysql_hello(port)
            send(sock, body, 1)
            seconds, got = until_closed(sock, 10)
            code, message = error_of(got[0])
            assert code == 1043 and f"{what} has no terminating NUL byte" in message, message
            assert seconds < 5 and len(got) == 1
            assert s.http.get(f"{s.url}/api/status", timeout=5).status_code == 200
            with other.cursor() as cur:  # another client's connection goes on
                cur.execute("SELECT 1 + 1 AS two")
                assert cur.fetchall() == ((2,),)
        # a packet far larger than a handshake is refused from its header, before its body
        sock, _ = mysql_hello(port)
        sock.sendall(((1 << 24) - 1).to_bytes(3, "little") + b"\x01" + b"x" * 1000)
        seconds, got = until_closed(sock, 10)
        assert error_of(got[0])[0] == 1043 and "max_allowed_packet" in error_of(got[0])[1]

        # signed in: COM_FIELD_LIST and COM_CHANGE_USER parse NUL-terminated strings too
        for command in (b"\x04users-without-nul", b"\x11root-without-nul", b"\x11root\0\0"):
            sock = signed_in(port, s.token)
            send(sock, command, 0)
            seconds, got = until_closed(sock, 10)
            code, message = error_of(got[0])
            assert code == 1835 and "has no terminating NUL byte" in message, message
        with other.cursor() as cur:
            cur.execute("SHOW TABLES")
        other.close()
        ok = mariadb(port, "SELECT 40 + 2 AS answer", password=s.token)
        assert ok.returncode == 0 and "answer\n42\n" in ok.stdout, ok.stderr
    # the serve fixture stopped it with SIGTERM (a frozen server ignored it)
    assert "stopped" in s.output and "Traceback" not in s.output
    assert "no terminating NUL byte" in s.output  # said in the server's log, one line each


# -- 2. half-open connections ------------------------------------------------------------


def test_half_open_connections_are_closed_in_time(tmp_path):
    port = free_port()
    timeouts = ("--header-timeout", "2", "--keep-alive-timeout", "2")
    timeouts += ("--mysql-connect-timeout", "2", "--mysql-wait-timeout", "3")
    with serve(tmp_path / "wh", "/api/status", "--mysql-port", str(port), *timeouts) as s:
        host = f"Host: 127.0.0.1:{s.port}\r\n".encode()
        auth = f"Authorization: Bearer {s.token}\r\n".encode()
        # nothing at all: closed, without an answer
        seconds, got = http_closed(http_socket(s.port))
        assert 1.5 < seconds < 6 and got == b""
        # half a request line, half the headers: 408, then closed
        for partial in (b"GET /api/sta", b"GET /api/status HTTP/1.1\r\n" + host):
            seconds, got = http_closed(http_socket(s.port, partial))
            assert 1.5 < seconds < 6 and got.startswith(b"HTTP/1.1 408 "), got
            assert b"did not come within 2 s" in got
        # headers a byte at a time: the deadline is for the whole head, not between bytes
        sock = http_socket(s.port)
        started = time.monotonic()
        try:
            for byte in b"GET /api/status HTTP/1.1\r\n" + host + b"X-Slow: " + b"a" * 40:
                sock.sendall(bytes([byte]))
                time.sleep(0.25)
            raise AssertionError("headers sent a byte every 0.25 s kept their connection")
        except (BrokenPipeError, ConnectionResetError):
            assert time.monotonic() - started < 6
        finally:
            sock.close()
        # half a body: closed once the client pauses too long within it
        body = b"POST /api/query HTTP/1.1\r\n" + host + auth
        body += b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n" + b'{"sql": '
        seconds, got = http_closed(http_socket(s.port, body))
        assert 1.5 < seconds < 6 and b"200 OK" not in got
        # keep-alive: an idle connection is closed after its answer
        request = b"GET /api/status HTTP/1.1\r\n" + host + auth + b"\r\n"
        seconds, got = http_closed(http_socket(s.port, request))
        assert got.startswith(b"HTTP/1.1 200 OK") and 1.5 < seconds < 6
        # a statement that runs longer than every timeout is answered, on both surfaces
        started = time.monotonic()
        slow = s.http.post(f"{s.url}/api/query", json={"sql": SLOW}, timeout=300)
        assert slow.status_code == 200 and slow.json()["rows"] == [[2000003]], slow.text
        assert time.monotonic() - started > 2.5

        # MySQL: nothing sent after the server's greeting
        sock, _ = mysql_hello(port)
        seconds, got = until_closed(sock)
        code, message = error_of(got[0])
        assert code == 1043 and "no sign-in within 2 s (connect_timeout)" in message
        assert 1.5 < seconds < 6
        # signed in, then idle for longer than wait_timeout: told, then closed
        seconds, got = until_closed(signed_in(port, s.token))
        code, message = error_of(got[0])
        assert code == 4031 and "wait_timeout: 3 s" in message and 2.5 < seconds < 8
        conn = pymysql.connect(host="127.0.0.1", port=port, user="me", password=s.token)
        with conn.cursor() as cur:
            cur.execute("SELECT @@wait_timeout, @@interactive_timeout")
            assert cur.fetchall() == ((3, 3),)
            cur.execute(SLOW)  # busy is not idle
            assert cur.fetchall() == ((2000003,),)
            cur.execute("SET SESSION wait_timeout = 1")  # a session's own, as in MySQL
        time.sleep(2.5)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
            raise AssertionError("a connection idle past its wait_timeout was still served")
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError):
            pass
        assert s.http.get(f"{s.url}/api/status", timeout=5).status_code == 200
    assert "Traceback" not in s.output


# -- 3. over-deep input ------------------------------------------------------------------

DEEP_SQL = {
    "parentheses": "SELECT " + "(" * 10_000 + "1" + ")" * 10_000,
    "CASE": "SELECT " + "CASE WHEN 1=1 THEN " * 3_000 + "1" + " END" * 3_000,
    "functions": "SELECT " + "abs(" * 3_000 + "1" + ")" * 3_000,
    # parsed fine, but Spark's JSON of a CASE doubles with each level: 100 levels, 2^100
    "CASE, 100 deep": "SELECT " + "CASE WHEN a = 1 THEN " * 100 + "1" + " END" * 100 + " FROM t",
    "simple CASE, 8 deep": "SELECT "
    + "CASE " * 8
    + "1"
    + " WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END" * 8,
}
#: small texts that Spark would make exponentially larger as it runs them
DEEP_SQL["CTEs, each referenced twice by the next"] = (
    "WITH a0 AS (SELECT 1 AS x), "
    + ", ".join(
        f"a{i} AS (SELECT * FROM a{i - 1} UNION ALL SELECT * FROM a{i - 1})" for i in range(1, 17)
    )
    + " SELECT count(*) FROM a16"
)
DEEP_SQL["aliases, each referenced twice by the next"] = "SELECT 1 AS a0, " + ", ".join(
    f"a{i - 1} + a{i - 1} AS a{i}" for i in range(1, 31)
)
PROBLEMS = ("nested too deeply", "too large to check", "too large to run")
#: what stays fine: moderate nesting, and many CASEs side by side
FINE_SQL = {
    "SELECT " + "(" * 300 + "1" + ")" * 300 + " AS one": [[1]],
    "SELECT "
    + ", ".join(
        f"CASE WHEN 1 = {i} THEN 'x' WHEN 2 = {i} THEN 'y' ELSE 'z' END AS c{i}" for i in range(40)
    )
    + " FROM t": [],
    "SELECT " + "CASE WHEN 1=1 THEN " * 8 + "1" + " END" * 8 + " AS eight": [[1]],
    "WITH c0 AS (SELECT a FROM t), "
    + ", ".join(f"c{i} AS (SELECT a + 1 AS a FROM c{i - 1})" for i in range(1, 40))
    + " SELECT * FROM c39 JOIN c20 USING (a)": [],
    "SELECT 2 AS x, x * 3 AS y, x + y AS z": [[2, 6, 8]],
}


def test_over_deep_input_is_a_clean_400_on_every_surface(tmp_path):
    port = free_port()
    with serve(tmp_path / "wh", "/api/status", "--mysql-port", str(port)) as s:
        url, owner = s.url, s.http
        assert owner.post(f"{url}/api/query", json={"sql": "CREATE TABLE t (a INT)"}).ok

        deep_json = "[" * 10_000 + "]" * 10_000
        shapes = {
            "/api/query": lambda b: b["error"]["message"],
            "/api/pipelines": lambda b: b["error"]["message"],
            "/api/login": lambda b: b["error"]["message"],
            "/query/sql": lambda b: b["exceptions"][0]["message"].split(": ", 1)[1],
            "/connectors": lambda b: b["message"],
            "/schemas": lambda b: b["error"],
            "/tables": lambda b: b["error"],
        }
        for path, message_of in shapes.items():
            r = owner.post(
                f"{url}{path}", data=deep_json, headers={"Content-Type": "application/json"}
            )
            assert r.status_code == 400, (path, r.text[:300])
            assert message_of(r.json()) == "the JSON body is nested too deeply", path

        for what, sql in DEEP_SQL.items():
            for path in ("/api/query", "/api/query/stream", "/api/pipelines"):
                r = owner.post(f"{url}{path}", json={"sql": sql}, timeout=120)
                assert r.status_code == 400, (what, path, r.text[:300])
                error = r.json()["error"]
                assert error["code"] == "SP702" and any(p in error["message"] for p in PROBLEMS)
            r = owner.post(f"{url}/api/sql", json={"sql": sql}, timeout=120)
            line = json.loads(r.text.splitlines()[0])
            assert r.status_code == 200 and any(p in line["error"]["message"] for p in PROBLEMS)
            r = owner.post(f"{url}/query/sql", json={"sql": sql}, timeout=120)
            (exception,) = r.json()["exceptions"]  # Pinot's QueryValidationError
            assert exception["errorCode"] == 700 and any(
                p in exception["message"] for p in PROBLEMS
            )
        # expressions of a table and of a pipeline go through the same checks
        computed = (
            "CREATE TABLE c (a INT, b AS (" + "(" * 10_000 + "a" + ")" * 10_000 + ") PERSISTED INT)"
        )
        where = (
            f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/in' INTO TABLE t FORMAT JSON WHERE "
            + "CASE WHEN a = 1 THEN " * 60
            + "true"
            + " END" * 60
        )
        for sql in (computed, where):
            r = owner.post(f"{url}/api/query", json={"sql": sql}, timeout=120)
            assert r.status_code == 400 and "expression" in r.json()["error"]["message"], r.text

        conn = pymysql.connect(host="127.0.0.1", port=port, user="me", password=s.token)
        for what, sql in {
            **DEEP_SQL,
            "mysql-mimic's own": "SELECT @@version + " + DEEP_SQL["parentheses"][7:],
        }.items():
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                raise AssertionError(f"{what}: answered")
            except pymysql.MySQLError as e:
                code, message = e.args
                assert code in (1064, 1105) and any(p in message for p in PROBLEMS), (what, e)
        for sql, rows in FINE_SQL.items():
            r = owner.post(f"{url}/api/query", json={"sql": sql}, timeout=120)
            assert r.status_code == 200 and r.json()["rows"] == rows, r.text[:300]
            with conn.cursor() as cur:
                cur.execute(sql)
                assert [list(row) for row in cur.fetchall()] == rows
        conn.close()
        assert owner.get(f"{url}/api/status").status_code == 200
    assert "Traceback" not in s.output and "OutOfMemoryError" not in s.output


# -- 4. TLS ------------------------------------------------------------------------------


@contextmanager
def serving(warehouse: Path, *args: str, ready=None) -> Iterator[tuple[subprocess.Popen, Path]]:
    """``sparkpipes serve`` with ``args`` until ``ready()`` holds; its output file."""
    fd, log = tempfile.mkstemp(prefix="sparkpipes-serve-", suffix=".log")
    with os.fdopen(fd, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sparkpipes", "--warehouse", str(warehouse), "serve", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
        )
    path = Path(log)
    try:

        def up() -> bool:
            assert proc.poll() is None, path.read_text()
            return bool(ready()) if ready else "sparkpipes serve:" in path.read_text()

        wait(up, 120, "the server")
        yield proc, path
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


def test_tls_serves_https_and_mysql_and_sparkpipes_sql_trusts_its_certificate(tmp_path):
    wh = tmp_path / "wh"
    cert, key = self_signed(tmp_path)
    other_cert, other_key = self_signed(tmp_path, "other")
    # the options go together and are checked before anything starts
    alone = sparkpipes(wh, "serve", "--tls-cert", str(cert))
    assert alone.returncode == 2 and "--tls-cert and --tls-key go together" in alone.stderr
    missing = sparkpipes(wh, "serve", "--tls-cert", str(tmp_path / "no.pem"), "--tls-key", str(key))
    assert missing.returncode == 1 and "no.pem: no such file" in missing.stderr
    mismatched = sparkpipes(wh, "serve", "--tls-cert", str(cert), "--tls-key", str(other_key))
    assert mismatched.returncode == 1 and "cannot use them" in mismatched.stderr
    assert "Traceback" not in alone.stderr + missing.stderr + mismatched.stderr

    added = sparkpipes(wh, "user", "add", "ana", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    # beyond loopback without TLS: it serves, and says what that means
    with serving(wh, "--host", "0.0.0.0", "--port", str(free_port())) as (_, log):
        text = log.read_text()
        assert "without TLS: passwords" in text and "--tls-cert" in text

    port, mysql_port = free_port(), free_port()
    path = discovery_path(str(wh), None)
    base = f"https://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return requests.get(f"{base}/api/status", auth=("ana", PASSWORD), verify=cert).ok
        except requests.ConnectionError:
            return False

    args = ("--host", "0.0.0.0", "--port", str(port), "--mysql-port", str(mysql_port))
    args += ("--tls-cert", str(cert), "--tls-key", str(key))
    with serving(wh, *args, ready=ready) as (_, log):
        text = log.read_text()
        assert f"https://0.0.0.0:{port}" in text and "without TLS" not in text
        advert = json.loads(Path(path).read_text())
        assert advert["url"] == base and advert["tls_cert"].strip() == cert.read_text().strip()
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"

        # HTTPS: trusted with the certificate, refused by default trust and over plain HTTP
        try:
            requests.get(f"{base}/api/status", timeout=10)
            raise AssertionError("a self-signed certificate was trusted by default")
        except requests.exceptions.SSLError:
            pass
        try:
            plain = requests.get(f"http://127.0.0.1:{port}/api/status", timeout=10)
            raise AssertionError(f"plain HTTP answered {plain.status_code}")
        except requests.ConnectionError:
            pass
        browser = requests.Session()  # verify= per request: REQUESTS_CA_BUNDLE beats a session's
        page = browser.get(f"{base}/login", verify=cert)
        assert "; secure" in page.headers["set-cookie"].lower()  # the login form's nonce
        form = {"user": "ana", "password": PASSWORD, "next": "/console"}
        form["csrf"] = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        signed = browser.post(
            f"{base}/login", data=form, headers={"Origin": base}, allow_redirects=False, verify=cert
        )
        assert signed.status_code == 303, signed.text[:300]
        cookie = signed.headers["set-cookie"].lower()
        assert cookie.startswith("__host-sparkpipes_session=") and "; secure" in cookie
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert browser.get(f"{base}/api/status", verify=cert).status_code == 200

        # MySQL over TLS: the mariadb CLI verifying the certificate, PyMySQL
        out = subprocess.run(
            [
                "mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", str(mysql_port),
                "-u", "ana", f"-p{PASSWORD}", "--ssl", f"--ssl-ca={cert}",
                "--ssl-verify-server-cert", "--batch", "-e", "SELECT 6 * 7 AS answer; \\s",
            ],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0 and "answer\n42\n" in out.stdout, out.stderr
        assert "Cipher in use is TLS" in out.stdout
        conn = pymysql.connect(
            host="127.0.0.1", port=mysql_port, user="ana", password=PASSWORD, ssl={"ca": str(cert)}
        )
        assert conn._sock.version() in ("TLSv1.2", "TLSv1.3")
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_USER()")
            assert cur.fetchone()[0].startswith("ana")
        conn.close()
        # a client whose TLS hello comes in the same packet as its SSL request
        assert tls_hello_with_the_request(mysql_port, cert) in ("TLSv1.2", "TLSv1.3")

        # sparkpipes sql: through the server, over HTTPS, printing what a local run prints
        def served() -> int:
            r = requests.get(f"{base}/api/status", auth=("ana", PASSWORD), verify=cert)
            return r.json()["sql_statements"]

        script = "SELECT 1 AS one; SELECT id FROM range(3) ORDER BY id"
        before = served()
        remote = sparkpipes(wh, "sql", "-e", script)
        assert remote.returncode == 0 and "3 rows in set" in remote.stdout, remote.stderr
        assert served() == before + 2
        local = sparkpipes(wh, "sql", "--no-server", "-e", script)
        assert untimed(local.stdout) == untimed(remote.stdout)
        # a discovery file naming another certificate: nothing is sent to this server
        good = Path(path).read_text()
        try:
            Path(path).write_text(json.dumps({**advert, "tls_cert": other_cert.read_text()}))
            elsewhere = sparkpipes(wh, "sql", "-e", "SELECT 2 AS two")
            assert elsewhere.returncode == 0 and "| two |" in elsewhere.stdout, elsewhere.stderr
            assert served() == before + 2  # it ran in the CLI's own process instead
        finally:
            Path(path).write_text(good)
    assert "Traceback" not in log.read_text()


def tls_hello_with_the_request(port: int, cert: Path) -> str:
    """Ask for TLS as MySQL clients do, but send the TLS hello in the same write as the SSL
    request (as a fast client's packets often arrive); the negotiated TLS version."""
    sock, _ = mysql_hello(port)
    context = ssl.create_default_context(cafile=str(cert))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    request = handshake_response(b"", SIGN_IN_CAPS | SSL)[:32]
    sock.sendall(len(request).to_bytes(3, "little") + b"\x01" + request + outgoing.read())
    sock.settimeout(10)
    try:
        while True:
            try:
                tls.do_handshake()
                return tls.version()
            except ssl.SSLWantReadError:
                if outgoing.pending:
                    sock.sendall(outgoing.read())
                data = sock.recv(65536)
                assert data, "the server closed the connection amid the TLS handshake"
                incoming.write(data)
    finally:
        sock.close()

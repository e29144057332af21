"""The browser threat model of ``sparkpipes serve``, attacked as the penetration test did,
against a real server on 127.0.0.1 with real clients (requests, http.client, the
``mariadb`` CLI, PyMySQL, a raw MySQL-protocol socket):

- without users, only the owner (local token, or the one-time sign-in link) may use the
  server: "another local account" without the token is refused over HTTP and MySQL, even a
  MySQL client that ignores the refusal and sends a statement anyway;
- DNS rebinding (a foreign ``Host``) is refused before anything runs; ``--allow-host`` adds
  a name;
- cross-site form and ``text/plain`` POSTs, carrying the owner's valid session cookie, are
  refused on the API, Pinot's and Kafka Connect's endpoints and the console's actions; the
  console's own buttons (same origin, CSRF token) still work; ``/logout`` is a POST with a
  CSRF token; no 401 asks a browser for Basic;
- sessions (cookie, login token, remembered Basic) end at ``ALTER USER … IDENTIFIED BY`` and
  at drop-then-recreate, even with the same password;
- 30 wrong passwords are throttled, then the right one is refused until the wait is over,
  then let in (HTTP and MySQL); unknown names are answered as known ones;
- 200 concurrent wrong-password requests do not slow down signed-in users.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import statistics
import threading
import time

import pymysql
import requests

from tests.e2e.serving import (
    SIGN_IN_CAPS,
    free_port,
    handshake_response,
    mariadb,
    mysql_packet,
    mysql_send,
    native_password,
    serve,
    sparkpipes,
)

PASSWORD = "Ana-pw-9120"
NEW_PASSWORD = "Ana-pw-new-4471"
EVIL = "http://evil.example"


def add_user(warehouse, name: str, password: str) -> None:
    added = sparkpipes(warehouse, "user", "add", name, "--password-stdin", stdin=password + "\n")
    assert added.returncode == 0, added.stderr


def csrf_of(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


# -- a MySQL client that ignores "Access denied" (the handshake by hand) ---------------------


def stubborn_mysql_client(port: int, user: str, password: str, sql: str) -> list[bytes]:
    """Sign in with ``password`` (mysql_native_password), then send ``sql`` whatever the
    server answered; every packet the server sent after the handshake."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        hello = mysql_packet(sock)
        mysql_send(
            sock,
            handshake_response(
                user.encode() + b"\0", SIGN_IN_CAPS, native_password(hello, password)
            ),
            1,
        )
        got = [mysql_packet(sock)]
        mysql_send(sock, b"\x03" + sql.encode(), 0)
        while (more := mysql_packet(sock)) is not None and len(got) < 50:
            got.append(more)
        return got
    except OSError:
        return got
    finally:
        sock.close()


def test_without_users_only_the_owner_may_use_the_server(tmp_path):
    wh = tmp_path / "wh"
    mysql_port = free_port()
    extra = ("--mysql-port", str(mysql_port), "--allow-host", "sparkpipes.test")
    with serve(wh, "/api/status", *extra) as s:
        url, owner = s.url, s.http
        token = sparkpipes(wh, "token")
        assert token.returncode == 0 and token.stdout.strip() == s.token, token.stderr
        assert owner.post(f"{url}/api/query", json={"sql": "CREATE TABLE t (id BIGINT)"}).ok

        # -- another local account: the same loopback port, but not the token
        for path in ("/api/status", "/api/tables", "/connectors", "/schemas", "/tables"):
            r = requests.get(f"{url}{path}")
            assert r.status_code == 401 and "WWW-Authenticate" not in r.headers, path
            assert "sparkpipes token" in r.text, path
        drop = requests.post(f"{url}/api/query", json={"sql": "DROP TABLE t"})
        assert drop.status_code == 401
        guessed = requests.get(f"{url}/api/status", headers={"Authorization": "Bearer guess"})
        assert guessed.status_code == 401
        assert requests.get(f"{url}/api/status", headers=basic("root", "root")).status_code == 401
        login = requests.post(f"{url}/api/login", json={"user": "root", "password": "root"})
        assert login.status_code == 401 and "token" not in login.json()
        page = requests.get(f"{url}/console")  # to the login page, which says who may sign in
        assert page.url.startswith(f"{url}/login") and "sparkpipes token" in page.text
        assert 'name="password"' not in page.text
        for password in (None, "", "root", s.token[:-1]):
            refused = mariadb(mysql_port, "SHOW TABLES", user="root", password=password)
            assert refused.returncode != 0 and "Access denied" in refused.stderr, password
        # a client that ignores the refusal and sends a statement anyway gets nothing more
        after = stubborn_mysql_client(mysql_port, "root", "guess", "DROP TABLE t")
        assert after[0][:1] == b"\xff" and b"Access denied" in after[0]
        assert all(p[:1] == b"\xff" for p in after), after  # errors only, then closed
        assert owner.get(f"{url}/api/tables/t").status_code == 200  # still there

        # -- the owner: the token over HTTP and as the MySQL password (any user name)
        assert requests.get(f"{url}/api/status", headers=dict(owner.headers)).status_code == 200
        mine = mariadb(mysql_port, "SELECT CURRENT_USER(); SHOW TABLES", password=s.token)
        assert mine.returncode == 0 and "(local)" in mine.stdout and "\nt\n" in mine.stdout
        conn = pymysql.connect(host="127.0.0.1", port=mysql_port, user="me", password=s.token)
        with conn.cursor() as cur:
            cur.execute("SHOW TABLES")
            assert cur.fetchall() == (("t",),)
        conn.close()

        # -- DNS rebinding: a page's own name pointed at 127.0.0.1 is not this server
        for host in (
            "evil.example",
            f"evil.example:{s.port}",
            f"127.0.0.1.nip.io:{s.port}",
            f"localhost.evil.example:{s.port}",
            f"127.0.0.1:{s.port + 1}",
        ):
            r = owner.get(f"{url}/api/status", headers={"Host": host})
            assert r.status_code == 421 and "--allow-host" in r.json()["error"]["message"], host
            rebound = owner.post(
                f"{url}/api/query", json={"sql": "DROP TABLE t"}, headers={"Host": host}
            )
            assert rebound.status_code == 421, host
            assert requests.get(f"{url}/console", headers={"Host": host}).status_code == 421
        assert owner.get(f"{url}/api/tables/t").status_code == 200  # nothing ran
        for host in (f"127.0.0.1:{s.port}", f"localhost:{s.port}", "sparkpipes.test:443"):
            assert owner.get(f"{url}/api/status", headers={"Host": host}).status_code == 200

        # -- the one-time sign-in link: a session cookie for the owner's browser, once
        link = s.link()
        browser = requests.Session()
        signed = browser.get(link, allow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == "/console"
        again = requests.get(link, allow_redirects=False)
        assert again.status_code == 401 and "used already" in again.text
        assert browser.get(f"{url}/api/status").status_code == 200
        made = owner.post(
            f"{url}/api/pipelines",
            json={
                "sql": f"CREATE PIPELINE p AS LOAD DATA FS '{tmp_path}/in' INTO TABLE t FORMAT JSON"
            },
        )
        assert made.status_code == 201, made.text

        def state() -> str:
            return owner.get(f"{url}/api/pipelines/p").json()["state"]

        # -- CSRF: the cookie rides along on cross-site requests; they change nothing
        other_port = f"http://127.0.0.1:{free_port()}"  # same site, another origin
        for origin in (EVIL, other_port, "null"):
            form = browser.post(
                f"{url}/api/pipelines/p/start", data={"go": "1"}, headers={"Origin": origin}
            )
            assert form.status_code == 403, origin
            plain = browser.post(
                f"{url}/api/query",
                data='{"sql": "DROP TABLE t"}',
                headers={"Content-Type": "text/plain", "Origin": origin},
            )
            assert plain.status_code == 403, origin
            for path in ("/schemas", "/tables", "/connectors"):
                r = browser.post(
                    f"{url}{path}",
                    data='{"schemaName": "x"}',
                    headers={"Content-Type": "text/plain", "Origin": origin},
                )
                assert r.status_code == 403, (origin, path)
        fetched = browser.post(  # fetch() of a modern browser: no Origin, Sec-Fetch-Site
            f"{url}/api/pipelines/p/start", headers={"Sec-Fetch-Site": "same-site"}
        )
        assert fetched.status_code == 403
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            r = browser.post(  # an old browser sends no Origin: still no form or text body
                f"{url}/api/query", data='{"sql": "DROP TABLE t"}', headers={"Content-Type": kind}
            )
            assert r.status_code == 415, kind
            assert "application/json" in r.json()["error"]["message"]
        assert state() == "Stopped" and owner.get(f"{url}/api/tables/t").status_code == 200
        console = browser.get(f"{url}/console").text
        csrf = csrf_of(console)
        action = f"{url}/console/pipelines/p/start"
        htmx = {"HX-Request": "true", "Origin": url}
        assert browser.post(action, headers=htmx).status_code == 403  # no token
        forged = {**htmx, "X-CSRF-Token": "forged"}
        assert browser.post(action, headers=forged).status_code == 403
        foreign = {**htmx, "Origin": other_port, "X-CSRF-Token": csrf}
        assert browser.post(action, headers=foreign).status_code == 403
        assert state() == "Stopped"
        ok = browser.post(action, headers={**htmx, "X-CSRF-Token": csrf})  # the page's button
        assert ok.status_code == 200 and state() == "Running", ok.text
        same = browser.post(  # the query console: same-origin JSON
            f"{url}/api/pipelines/p/stop", json={}, headers={"Origin": url}
        )
        assert same.status_code == 200 and state() == "Stopped"
        assert owner.post(f"{url}/api/pipelines/p/start").json()["state"] == "Running"  # curl
        assert owner.post(f"{url}/api/pipelines/p/stop").json()["state"] == "Stopped"

        # -- signing out: a POST with the page's token, never a GET
        assert browser.get(f"{url}/logout", allow_redirects=False).status_code == 405
        assert browser.post(f"{url}/logout", headers={"Origin": url}).status_code == 403
        assert browser.post(f"{url}/logout", data={"csrf": csrf}).status_code == 403  # no Origin
        assert browser.get(f"{url}/api/status").status_code == 200
        out = browser.post(
            f"{url}/logout", data={"csrf": csrf}, headers={"Origin": url}, allow_redirects=False
        )
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert browser.get(f"{url}/api/status").status_code == 401
    assert s.token not in s.output and "Traceback" not in s.output


def test_sessions_end_when_the_password_changes_or_the_user_is_made_again(tmp_path):
    wh = tmp_path / "wh"
    add_user(wh, "admin", "Admin-pw-3301")  # the first user is the admin, which stays
    add_user(wh, "ana", PASSWORD)
    with serve(wh, "/api/status") as s:
        url, owner = s.url, s.http

        def sessions(password: str) -> dict[str, requests.Session]:
            """A cookie (the console's login form), a login token, a remembered Basic."""
            cookie = requests.Session()
            form = {"csrf": csrf_of(cookie.get(f"{url}/login").text), "next": "/console"}
            signed = cookie.post(
                f"{url}/login",
                data={**form, "user": "ana", "password": password},
                headers={"Origin": url},
                allow_redirects=False,
            )
            assert signed.status_code == 303, signed.text
            bearer = requests.Session()
            token = requests.post(f"{url}/api/login", json={"user": "ana", "password": password})
            bearer.headers["Authorization"] = f"Bearer {token.json()['token']}"
            remembered = requests.Session()
            remembered.auth = ("ana", password)
            made = {"cookie": cookie, "token": bearer, "basic": remembered}
            for kind, client in made.items():
                assert client.get(f"{url}/api/status").status_code == 200, kind
            return made

        def refused(made: dict[str, requests.Session]) -> dict[str, int]:
            return {k: c.get(f"{url}/api/status").status_code for k, c in made.items()}

        old = sessions(PASSWORD)
        changed = owner.post(
            f"{url}/api/query", json={"sql": f"ALTER USER ana IDENTIFIED BY '{NEW_PASSWORD}'"}
        )
        assert changed.status_code == 200, changed.text
        assert refused(old) == {"cookie": 401, "token": 401, "basic": 401}
        renewed = sessions(NEW_PASSWORD)

        remade = owner.post(
            f"{url}/api/query",
            json={"sql": f"DROP USER ana; CREATE USER ana IDENTIFIED BY '{NEW_PASSWORD}'"},
        )
        assert remade.status_code == 200, remade.text
        # the same name and password, but another user: its sessions are not the old one's
        assert refused(renewed) == {"cookie": 401, "token": 401, "basic": 200}
        sessions(NEW_PASSWORD)
    assert PASSWORD not in s.output and NEW_PASSWORD not in s.output
    assert "Traceback" not in s.output


def test_failed_sign_ins_back_off_then_the_right_password_gets_in(tmp_path):
    wh = tmp_path / "wh"
    add_user(wh, "ana", PASSWORD)
    mysql_port = free_port()
    with serve(wh, "/api/status", "--mysql-port", str(mysql_port)) as s:
        url = s.url

        def attempts(user: str) -> list[requests.Response]:
            return [
                requests.get(f"{url}/api/status", headers=basic(user, f"guess-{i}"))
                for i in range(30)
            ]

        started = time.monotonic()
        wrong = attempts("ana")
        took = time.monotonic() - started
        codes = [r.status_code for r in wrong]
        assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}, codes
        assert all(int(r.headers["Retry-After"]) >= 1 for r in wrong[5:])
        assert "too many failed sign-ins" in wrong[-1].json()["error"]["message"]
        assert took < 15, took  # refused at once, without scrypt
        right = requests.get(f"{url}/api/status", headers=basic("ana", PASSWORD))
        assert right.status_code == 429, "the right password waits too"
        assert requests.post(
            f"{url}/api/login", json={"user": "ana", "password": PASSWORD}
        ).status_code == (429)
        time.sleep(int(right.headers["Retry-After"]) + 0.2)
        assert requests.get(f"{url}/api/status", headers=basic("ana", PASSWORD)).status_code == 200

        # an unknown name is answered exactly as a known one: nothing tells them apart
        unknown = attempts("nobody")
        assert [r.status_code for r in unknown] == codes
        assert [r.json()["error"]["message"] for r in unknown[:5]] == [
            r.json()["error"]["message"] for r in wrong[:5]
        ]
        for _ in range(5):  # a client that waits as told gets in
            r = requests.post(f"{url}/api/login", json={"user": "ana", "password": PASSWORD})
            if r.status_code != 429:
                break
            time.sleep(int(r.headers["Retry-After"]) + 0.2)
        assert r.status_code == 200, r.text

        # MySQL, over the same back-off
        answers = [
            mariadb(mysql_port, "SELECT 1", user="ana", password=f"guess-{i}") for i in range(30)
        ]
        assert all(a.returncode != 0 and "ERROR 1045" in a.stderr for a in answers)
        assert "too many failed sign-ins" not in answers[4].stderr
        assert all("too many failed sign-ins" in a.stderr for a in answers[5:])
        right = mariadb(mysql_port, "SELECT 1", user="ana", password=PASSWORD)
        assert right.returncode != 0 and "wait" in right.stderr
        seconds = int(re.search(r"wait (\d+) s", right.stderr).group(1))
        time.sleep(seconds + 0.2)
        right = mariadb(mysql_port, "SELECT 1", user="ana", password=PASSWORD)
        assert right.returncode == 0, right.stderr
    assert PASSWORD not in s.output and "Traceback" not in s.output


def test_a_flood_of_wrong_passwords_does_not_slow_down_signed_in_users(tmp_path):
    wh = tmp_path / "wh"
    add_user(wh, "ana", PASSWORD)
    with serve(wh, "/api/status") as s:
        url = s.url
        token = requests.post(f"{url}/api/login", json={"user": "ana", "password": PASSWORD})
        clients = {
            "token": {"Authorization": f"Bearer {token.json()['token']}"},
            "basic": basic("ana", PASSWORD),  # remembered after its first check
            "owner": dict(s.http.headers),
        }
        for kind, headers in clients.items():
            assert requests.get(f"{url}/api/status", headers=headers).status_code == 200, kind

        flood: list[int] = []
        go = threading.Barrier(201)

        def wrong_password(i: int) -> None:
            # each from its own loopback address and name: no back-off spares the server
            conn = http.client.HTTPConnection(
                "127.0.0.1",
                s.port,
                timeout=120,
                source_address=(f"127.0.{1 + i // 250}.{i % 250 + 1}", 0),
            )
            go.wait()
            try:
                conn.request("GET", "/api/status", headers=basic(f"intruder{i}", "guess"))
                flood.append(conn.getresponse().status)
            finally:
                conn.close()

        threads = [threading.Thread(target=wrong_password, args=(i,)) for i in range(200)]
        for t in threads:
            t.start()
        go.wait()
        started = time.monotonic()
        latencies: dict[str, list[float]] = {k: [] for k in clients}
        while any(t.is_alive() for t in threads) or min(map(len, latencies.values())) < 3:
            for kind, headers in clients.items():
                t0 = time.monotonic()
                r = requests.get(f"{url}/api/pipelines", headers=headers, timeout=60)
                latencies[kind].append(time.monotonic() - t0)
                assert r.status_code == 200, (kind, r.text)
        flood_s = time.monotonic() - started
        for t in threads:
            t.join()

    assert sorted(set(flood)) <= [401, 429] and flood.count(401) >= 20, flood
    every = [x for v in latencies.values() for x in v]
    assert flood_s > 1.0, flood_s  # the flood really overlapped the signed-in requests
    # scrypt on a shared pool made these 3 s; generous for a loaded 2-core machine
    assert max(every) < 2.0 and statistics.median(every) < 0.5, (flood_s, latencies)
    assert "Traceback" not in s.output


def test_beyond_loopback_a_foreign_host_is_refused_too(tmp_path):
    wh = tmp_path / "wh"
    add_user(wh, "ana", PASSWORD)
    with serve(wh, "/api/status", "--host", "0.0.0.0") as s:
        auth = basic("ana", PASSWORD)
        assert requests.get(f"{s.url}/api/status", headers=auth).status_code == 200
        rebound = requests.get(
            f"{s.url}/api/status", headers={**auth, "Host": f"evil.example:{s.port}"}
        )
        assert rebound.status_code == 421
        body = json.loads(rebound.text)
        assert "evil.example" in body["error"]["message"]

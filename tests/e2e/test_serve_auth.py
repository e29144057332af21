"""Users and sign-in on every surface of ``sparkpipes serve`` (real server, real clients):
the server refuses to listen beyond loopback without a user; with one, the HTTP API wants
Basic or a token (and never asks a browser for Basic), the console a session from its
login page (its form and sign-out carry a CSRF token), MySQL clients (the ``mariadb`` CLI,
PyMySQL, SQLAlchemy's ``mysql+pymysql``) the password; wrong passwords and dropped users are
refused; no password ever shows in an answer or the server's log."""

from __future__ import annotations

import re

import pymysql
import pytest
import requests
import sqlalchemy as sa

from tests.e2e.serving import free_port, mariadb, serve, sparkpipes

PASSWORD = "Ana-pw-7731"
BO_PASSWORD = "Bo-pw-5519"


def csrf_of(page: str) -> str:
    """The CSRF token a page's forms carry."""
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_serve_beyond_loopback_needs_a_user(tmp_path):
    out = sparkpipes(tmp_path / "wh", "serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert out.returncode == 1, out.stderr
    assert "sparkpipes user add" in out.stderr and "Traceback" not in out.stderr


def test_users_sign_in_to_the_api_the_console_and_mysql(tmp_path):
    wh = tmp_path / "wh"
    added = sparkpipes(wh, "user", "add", "ana", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    assert sparkpipes(wh, "user", "list").stdout.startswith("ana\t")
    mysql_port = free_port()
    with serve(wh, "/openapi.json", "--host", "0.0.0.0", "--mysql-port", str(mysql_port)) as s:
        url = s.url
        # -- HTTP API: Basic, token, refusals
        anon = requests.get(f"{url}/api/pipelines")
        assert anon.status_code == 401 and "WWW-Authenticate" not in anon.headers
        assert "sign in" in anon.json()["error"]["message"]
        assert requests.get(f"{url}/api/status", auth=("ana", "wrong")).status_code == 401
        assert requests.get(f"{url}/api/status", auth=("ana", PASSWORD)).status_code == 200
        assert requests.post(f"{url}/query/sql", json={"sql": "SHOW USERS"}).status_code == 401
        bad = requests.post(f"{url}/api/login", json={"user": "ana", "password": "nope"})
        assert bad.status_code == 401 and "wrong user or password" in bad.text
        token = requests.post(f"{url}/api/login", json={"user": "ana", "password": PASSWORD})
        assert token.status_code == 200, token.text
        bearer = {"Authorization": f"Bearer {token.json()['token']}"}
        assert requests.get(f"{url}/api/status", headers=bearer).status_code == 200
        assert (
            requests.get(f"{url}/api/status", headers={"Authorization": "Bearer x"}).status_code
            == 401
        )

        # -- users made in SQL sign in; a dropped one is refused at once
        made = requests.post(
            f"{url}/api/query",
            json={"sql": f"CREATE USER 'bo'@'%' IDENTIFIED BY '{BO_PASSWORD}'; SHOW USERS"},
            auth=("ana", PASSWORD),
        )
        assert made.status_code == 200 and [r[0] for r in made.json()["rows"]] == ["ana", "bo"]
        assert requests.get(f"{url}/api/status", auth=("bo", BO_PASSWORD)).status_code == 200

        # -- the console: login page, session cookie, sign out
        web = requests.Session()
        first = web.get(f"{url}/console", allow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/login?next=/console"
        page = web.get(f"{url}/login?next=/console")
        assert page.status_code == 200 and 'name="password"' in page.text
        form = {"csrf": csrf_of(page.text), "next": "/console"}
        same = {"Origin": url}
        wrong = web.post(
            f"{url}/login", data={**form, "user": "ana", "password": "x"}, headers=same
        )
        assert wrong.status_code == 401 and "wrong user or password" in wrong.text
        signed = web.post(
            f"{url}/login",
            data={**form, "user": "ana", "password": PASSWORD, "next": "//evil.example/"},
            headers=same,
            allow_redirects=False,
        )
        assert signed.status_code == 303 and signed.headers["location"] == "/console"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and PASSWORD not in cookie
        assert web.get(f"{url}/api/status").status_code == 200
        console = web.get(f"{url}/console", allow_redirects=False)
        assert console.status_code == 200 and 'action="/logout"' in console.text
        out = web.post(
            f"{url}/logout",
            data={"csrf": csrf_of(console.text)},
            headers=same,
            allow_redirects=False,
        )
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert web.get(f"{url}/api/status").status_code == 401

        # -- MySQL clients
        ok = mariadb(mysql_port, "SHOW USERS", user="ana", password=PASSWORD)
        assert ok.returncode == 0 and "ana" in ok.stdout, ok.stderr
        refused = mariadb(mysql_port, "SHOW USERS", user="ana", password="wrong")
        assert refused.returncode != 0 and "Access denied" in refused.stderr
        nobody = mariadb(mysql_port, "SHOW USERS", user="nobody", password=PASSWORD)
        assert nobody.returncode != 0 and "Access denied" in nobody.stderr
        with pytest.raises(pymysql.err.OperationalError) as e:
            pymysql.connect(host="127.0.0.1", port=mysql_port, user="bo", password="x")
        assert e.value.args[0] == 1045
        conn = pymysql.connect(host="127.0.0.1", port=mysql_port, user="bo", password=BO_PASSWORD)
        with conn.cursor() as cur:
            cur.execute("SELECT @@version")
            assert cur.fetchone()[0]
        conn.close()
        db = sa.create_engine(f"mysql+pymysql://ana:{PASSWORD}@127.0.0.1:{mysql_port}/sparkpipes")
        with db.connect() as c:
            users = c.execute(sa.text("SHOW USERS")).all()
            assert [u[0] for u in users] == ["ana", "bo"]
            c.execute(sa.text("DROP USER bo"))
        db.dispose()
        assert requests.get(f"{url}/api/status", auth=("bo", BO_PASSWORD)).status_code == 401
        gone = mariadb(mysql_port, "SHOW USERS", user="bo", password=BO_PASSWORD)
        assert gone.returncode != 0 and "Access denied" in gone.stderr
    assert PASSWORD not in s.output and BO_PASSWORD not in s.output
    assert "Traceback" not in s.output

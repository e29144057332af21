"""The browser checks of ``sparkpipes serve`` on the requests a browser or an attacker's
page would send: Host names (DNS rebinding), Origin and Sec-Fetch-Site (cross-site), body
types (forms and text/plain need no CORS preflight), and what counts as loopback."""

from __future__ import annotations

import pytest

from sparkpipes.server.security import Csrf, Hosts, check, is_loopback, same_origin, split_host

PORT = 8083


def scope(
    method: str = "GET",
    path: str = "/api/status",
    host: str | None = f"127.0.0.1:{PORT}",
    server: tuple[str, int] = ("127.0.0.1", PORT),
    **headers: str,
) -> dict:
    raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    if host is not None:
        raw.append((b"host", host.encode()))
    return {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": "http",
        "server": server,
        "headers": raw,
    }


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.example.com", False),
        ("127.0.0.1.nip.io", False),
        ("localhost.example", False),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
        ("", False),
    ],
)
def test_loopback_is_an_address_not_a_prefix(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("127.0.0.1:8083", ("127.0.0.1", 8083)),
        ("LocalHost", ("localhost", None)),
        ("[::1]:8083", ("::1", 8083)),
        ("[::1]", ("::1", None)),
        ("::1", None),
        ("evil.example:99999", None),
        ("a b", None),
        ("user@127.0.0.1", None),
        ("127.0.0.1:80/x", None),
        ("", None),
    ],
)
def test_host_headers_are_parsed_strictly(value, parsed):
    assert split_host(value) == parsed


def test_a_loopback_server_answers_its_own_names_on_its_own_port_only():
    hosts = Hosts.of("127.0.0.1")
    for ok in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}"):
        assert check(scope(host=ok), hosts) is None, ok
    for rebound in (
        f"evil.example:{PORT}",
        "evil.example",
        f"127.0.0.1.nip.io:{PORT}",
        f"localhost.evil.example:{PORT}",
        f"127.0.0.1:{PORT + 1}",
        "127.0.0.1",  # port 80, not this server's
    ):
        refusal = check(scope(host=rebound), hosts)
        assert refusal is not None and refusal.status == 421, rebound
        assert "--allow-host" in refusal.message
    assert check(scope(host=None), hosts).status == 400
    assert check(scope(host="a b"), hosts).status == 400


def test_allow_host_adds_a_name_with_or_without_its_port():
    hosts = Hosts.of("127.0.0.1", ["sparkpipes.example", "proxy.example:443"])
    assert check(scope(host="sparkpipes.example:9999"), hosts) is None
    assert check(scope(host="proxy.example:443"), hosts) is None
    assert check(scope(host="proxy.example:8443"), hosts).status == 421
    with pytest.raises(ValueError, match="not a host name"):
        Hosts.of("127.0.0.1", ["http://x/"])


def test_a_server_on_another_address_answers_that_name_and_its_local_address():
    named = Hosts.of("data.example")
    assert check(scope(host=f"data.example:{PORT}"), named) is None
    assert check(scope(host=f"localhost:{PORT}"), named).status == 421
    wildcard = Hosts.of("0.0.0.0")
    on_lan = ("10.1.2.3", PORT)
    assert check(scope(host=f"10.1.2.3:{PORT}", server=on_lan), wildcard) is None
    assert check(scope(host=f"10.9.9.9:{PORT}", server=on_lan), wildcard).status == 421
    assert check(scope(host=f"evil.example:{PORT}", server=on_lan), wildcard).status == 421


def test_same_origin_means_scheme_host_and_port():
    host = ("127.0.0.1", PORT)
    assert same_origin(f"http://127.0.0.1:{PORT}", host, "http")
    assert same_origin(f"https://127.0.0.1:{PORT}", host, "http")  # behind a TLS proxy
    assert not same_origin(f"http://127.0.0.1:{PORT + 1}", host, "http")
    assert not same_origin(f"http://localhost:{PORT}", host, "http")
    assert not same_origin("null", host, "http")
    assert not same_origin(f"file://127.0.0.1:{PORT}", host, "http")
    assert same_origin("http://data.example", ("data.example", None), "http")
    # serving TLS itself: a plain page on the same name and port is another origin
    assert same_origin(f"https://127.0.0.1:{PORT}", host, "https")
    assert not same_origin(f"http://127.0.0.1:{PORT}", host, "https")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_state_changes_are_same_origin_json(method):
    hosts = Hosts.of("127.0.0.1")
    same = f"http://127.0.0.1:{PORT}"

    def status(**headers: str) -> int | None:
        refusal = check(scope(method, "/api/pipelines/p/start", **headers), hosts)
        return None if refusal is None else refusal.status

    assert status() is None  # curl -X POST: no body, no type
    assert status(content_type="application/json", content_length="2") is None
    assert status(content_type="application/vnd.x+json; charset=utf-8") is None
    assert status(content_type="application/json", origin=same) is None
    assert status(content_type="application/json", sec_fetch_site="same-origin") is None
    assert status(content_type="application/json", origin="http://evil.example") == 403
    assert status(content_type="application/json", origin=f"http://127.0.0.1:{PORT + 1}") == 403
    assert status(sec_fetch_site="same-site") == 403
    assert status(sec_fetch_site="cross-site") == 403
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        assert status(content_type=kind, origin="http://evil.example") == 403, kind
        assert status(content_type=kind) == 415, kind
        assert status(content_type=kind, origin=same) == 415, kind
    assert status(content_length="5") == 415  # a body without a type
    assert status(transfer_encoding="chunked") == 415


def test_the_consoles_forms_need_their_own_origin():
    hosts = Hosts.of("127.0.0.1")
    same = f"http://127.0.0.1:{PORT}"
    form = "application/x-www-form-urlencoded"
    for path in ("/login", "/logout", "/console/pipelines/p/start"):
        assert check(scope("POST", path, content_type=form, origin=same), hosts) is None
        assert check(scope("POST", path, content_type=form), hosts).status == 403
        refusal = check(scope("POST", path, content_type=form, origin="http://evil.example"), hosts)
        assert refusal.status == 403
        assert (
            check(scope("POST", path, content_type="text/plain", origin=same), hosts).status == 415
        )
    assert check(scope("GET", "/console"), hosts) is None


def test_csrf_tokens_are_bound_to_what_they_were_made_for():
    csrf = Csrf()
    token = csrf.token("credential:abc")
    assert csrf.valid("credential:abc", token)
    assert not csrf.valid("credential:abd", token)
    assert not csrf.valid("credential:abc", token[:-1] + ("A" if token[-1] != "A" else "B"))
    assert not csrf.valid(None, token) and not csrf.valid("credential:abc", None)
    assert not Csrf().valid("credential:abc", token)  # another server's key

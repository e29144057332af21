"""Signing in to ``sparkpipes serve`` over a real catalog (SQLite): sessions end when the
password changes or the user is made again; the owner's one-time link works once; the
local token is the owner; password sign-ins back off; with no user, none is checked."""

from __future__ import annotations

import asyncio

import pytest

from sparkpipes.catalog.store import Catalog
from sparkpipes.errors import ConfigError
from sparkpipes.server.auth import LOCAL_USER, OWNER_ONLY, WRONG, Auth, Refused
from sparkpipes.server.throttle import Throttle

ADDRESS = "10.0.0.7"


@pytest.fixture
def users(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    yield catalog.users
    catalog.close()


def signed_in(auth: Auth, **headers: str) -> str | Refused:
    found = asyncio.run(auth.authenticate(headers, {}, ADDRESS))
    return found if isinstance(found, Refused) else found.user


def test_the_password_version_changes_with_every_password_and_every_user(users):
    assert users.version("ana") is None
    users.create("admin", "admin-Pw")
    users.create("ana", "first-Pw")
    first = users.version("ana")
    assert first and users.version("ana") == first
    users.set_password("ana", "first-Pw")  # the same password again: a new version
    second = users.version("ana")
    assert second != first
    users.drop("ana")
    users.create("ana", "first-Pw")
    assert users.version("ana") not in (first, second, None)
    assert "first-Pw" not in users.version("ana")


def test_sessions_are_bound_to_the_password_version(users):
    users.create("admin", "admin-Pw")
    users.create("ana", "first-Pw")
    auth = Auth(users, loopback=True)
    token, session = asyncio.run(auth.login("ana", "first-Pw", ADDRESS))
    assert session.user == "ana" and auth.session(token) == session
    assert signed_in(auth, authorization=f"Bearer {token}") == "ana"
    users.set_password("ana", "second-Pw")
    assert auth.session(token) is None
    assert signed_in(auth, authorization=f"Bearer {token}").status == 401
    token, _ = asyncio.run(auth.login("ana", "second-Pw", ADDRESS))
    users.drop("ana")
    users.create("ana", "second-Pw")
    assert auth.session(token) is None
    assert isinstance(asyncio.run(auth.login("ana", "second-Pw", ADDRESS)), tuple)


def test_a_catalog_user_named_like_the_owner_never_signs_in(users):
    users.create("admin", "admin-Pw")
    with pytest.raises(ConfigError, match="the server owner's name"):
        users.create(LOCAL_USER, "owner-Pw")
    auth = Auth(users, loopback=True)
    refused = asyncio.run(auth.login(LOCAL_USER, "owner-Pw", ADDRESS))
    assert isinstance(refused, Refused) and refused.message == WRONG


def test_the_owner_signs_in_with_the_local_token_or_a_link_that_works_once(users):
    auth = Auth(users, loopback=True, local_token="the-local-token")
    assert signed_in(auth, authorization="Bearer the-local-token") == LOCAL_USER
    assert signed_in(auth, authorization="Bearer the-local-tokeN").status == 401
    nobody = signed_in(auth)
    assert nobody.status == 401 and nobody.message == OWNER_ONLY
    code = auth.owner_link()
    token, session = auth.redeem(code)
    assert session.user == LOCAL_USER and auth.session(token) == session
    assert auth.redeem(code) is None and auth.redeem("guessed") is None
    users.create("ana", "first-Pw")  # users come: the owner's session stays the owner's
    assert auth.session(token) == session


def test_without_users_no_password_is_checked(users):
    auth = Auth(users, loopback=True, local_token="t")
    for _ in range(10):
        refused = asyncio.run(auth.login("root", "root", ADDRESS))
        assert refused.status == 401 and refused.message == OWNER_ONLY
    basic = signed_in(auth, authorization="Basic cm9vdDpyb290")  # root:root
    assert basic.status == 401 and basic.message == OWNER_ONLY


def test_wrong_passwords_back_off_and_unknown_names_alike(users):
    users.create("ana", "first-Pw")
    auth = Auth(users, loopback=True, throttle=Throttle(free=3, first_wait_s=30))
    for name in ("ana", "nobody"):
        answers = [asyncio.run(auth.login(name, "guess", f"10.1.0.{i}")) for i in range(4)]
        assert [a.status for a in answers] == [401, 401, 401, 429], name
        assert answers[-1].retry_after == "30" and "wait 30 s" in answers[-1].message
    still = asyncio.run(auth.login("ana", "first-Pw", "10.2.0.1"))
    assert isinstance(still, Refused) and still.status == 429  # the name waits
    other = asyncio.run(auth.login("bo", "x", "10.2.0.1"))  # another name is not held up
    assert other.status == 401 and other.message == WRONG

"""The MySQL endpoint's session runs each statement as the user signed in at that moment:
the owner only for the local token's name, nobody for a connection that has not signed in,
and the new user after COM_CHANGE_USER (mysql-mimic sets ``username`` again)."""

from __future__ import annotations

import pytest

from sparkpipes import Engine
from sparkpipes.errors import AccessDeniedError
from sparkpipes.server.auth import LOCAL_USER
from sparkpipes.server.mysql import session_factory


@pytest.fixture
def engine(tmp_path):
    engine = Engine(tmp_path / "wh")
    engine.catalog.users.create("ana", "ana-Pw")
    engine.catalog.users.create("bo", "bo-Pw")
    yield engine
    engine.close()


@pytest.fixture
def session(engine):
    return session_factory(engine)()


def test_statements_run_as_the_user_signed_in_now(session):
    session.username = None  # not signed in: no one, never the owner
    assert not session._session().access.owner
    assert not session._session().access.may("SELECT", "t")
    session.username = "bo"
    assert session._session().access.user == "bo"
    assert not session._session().access.may("SUPER")
    session.username = "ana"  # COM_CHANGE_USER signed in as ana
    assert session._session().access.user == "ana" and session._session().access.may("SUPER")
    session.username = LOCAL_USER
    assert session._session().access.owner


def test_a_changed_password_ends_what_a_connection_may_do(session, engine):
    session.username = "bo"
    assert session._current().access.user == "bo"
    engine.catalog.users.set_password("bo", "bo-new-Pw")
    with pytest.raises(AccessDeniedError, match="connect again"):
        session._current()
    session.username = "ana"  # signed in again (COM_CHANGE_USER): allowed
    assert session._current().access.user == "ana"
    engine.catalog.users.drop("bo")
    engine.catalog.users.create("bo", "bo-Pw")
    session.username = "bo"
    session._session()
    engine.catalog.users.drop("bo")
    engine.catalog.users.create("bo", "bo-Pw")  # the same name and password, a new user
    with pytest.raises(AccessDeniedError):
        session._current()

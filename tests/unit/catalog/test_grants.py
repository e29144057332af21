"""Privileges in the catalog: the first user is the admin, grants widen from an object to
the database to the server, the last admin stays, and dropping a user drops their grants;
a catalog from before privileges keeps every user's power (schema 2 → 3)."""

import pytest
import sqlalchemy as sa

from sparkpipes.catalog.grants import Access, expand, scope_of
from sparkpipes.catalog.store import Catalog
from sparkpipes.errors import AccessDeniedError, ConfigError, NotFoundError


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    yield c
    c.close()


def test_the_first_user_is_the_admin_and_the_others_start_with_nothing(catalog):
    catalog.users.create("ana", "pw-a")
    catalog.users.create("bo", "pw-b")
    ana, bo = Access(catalog.grants, "ana"), Access(catalog.grants, "bo")
    assert ana.may("SUPER") and ana.may("SELECT", "t") and ana.may("GRANT OPTION")
    assert not bo.may("SELECT", "t") and not bo.may("SUPER")
    with pytest.raises(AccessDeniedError, match="SELECT command denied to user 'bo' for table 't'"):
        bo.require("SELECT", "t")
    with pytest.raises(AccessDeniedError, match="needs the SUPER privilege on \\*\\.\\*"):
        bo.require("SUPER")
    assert Access(catalog.grants, None).may("SUPER")  # the owner


def test_grants_widen_from_object_to_database_to_server(catalog):
    catalog.users.create("ana", "pw-a")
    catalog.users.create("bo", "pw-b")
    catalog.grants.grant(["bo"], ["SELECT"], "sparkpipes.t", option=False)
    catalog.grants.grant(["bo"], ["START PIPELINE"], "*", option=False)
    bo = Access(catalog.grants, "bo")
    assert bo.may("SELECT", "t") and not bo.may("SELECT", "u") and not bo.may("SELECT")
    assert bo.may("START PIPELINE", "p") and bo.may("START PIPELINE", "q")
    assert not bo.may("DROP PIPELINE", "p")
    catalog.grants.revoke(["bo"], ["SELECT"], "t")
    bo.refresh()
    assert not bo.may("SELECT", "t")
    catalog.grants.grant(["bo"], ["ALL PRIVILEGES"], "sparkpipes.*", option=False)
    bo.refresh()
    assert bo.may("SELECT", "u") and bo.may("CREATE PIPELINE") and not bo.may("SUPER")


def test_levels_and_privileges_are_checked():
    assert scope_of("*.*") == "*.*" and scope_of("*") == scope_of("sparkpipes.*") == "sparkpipes.*"
    assert scope_of("sparkpipes.`t`") == scope_of("t") == "sparkpipes.t"
    with pytest.raises(NotFoundError, match="Unknown database 'other'"):
        scope_of("other.t")
    # the name CREATE DATABASE gave the database is the same level
    assert (
        scope_of("shop.*", "shop") == "sparkpipes.*"
        and scope_of("SHOP.t", "shop") == "sparkpipes.t"
    )
    with pytest.raises(ConfigError, match="SUPER is granted ON \\*\\.\\* only"):
        expand(["SUPER"], "sparkpipes.*")
    assert "SUPER" not in expand(["ALL"], "sparkpipes.*") and "SUPER" in expand(["ALL"], "*.*")
    assert expand(["USAGE"], "*.*") == []


def test_the_last_admin_stays(catalog):
    catalog.users.create("ana", "pw-a")
    catalog.users.create("bo", "pw-b")
    with pytest.raises(ConfigError, match="last admin"):
        catalog.users.drop("ana")
    with pytest.raises(ConfigError, match="last admin"):
        catalog.grants.revoke(["ana"], ["ALL PRIVILEGES"], "*.*")
    assert catalog.users.get("ana") is not None and Access(catalog.grants, "ana").may("SUPER")
    catalog.grants.grant(["bo"], ["SUPER"], "*.*", option=False)
    catalog.grants.revoke(["ana"], ["SUPER"], "*.*")  # bo is an admin now
    catalog.users.drop("ana")
    with pytest.raises(ConfigError, match="last admin"):
        catalog.users.drop("bo")
    with pytest.raises(NotFoundError, match="user 'cy' does not exist"):
        catalog.grants.grant(["cy"], ["SELECT"], "*", option=False)


def test_a_user_made_again_has_no_grants_of_the_old_one(catalog):
    catalog.users.create("ana", "pw-a")
    catalog.users.create("bo", "pw-b")
    catalog.grants.grant(["bo"], ["SELECT", "INSERT"], "*", option=True)
    catalog.users.drop("bo")
    catalog.users.create("bo", "pw-b")
    assert catalog.grants.of("bo") == []


def test_users_of_an_older_catalog_keep_their_power(tmp_path):
    path = tmp_path / "catalog.db"
    Catalog(f"sqlite:///{path}").close()
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:  # as sparkpipes before privileges left it
        c.execute(sa.text("DROP TABLE sp_grants"))
        c.execute(sa.text("UPDATE sp_meta SET value = '2' WHERE key = 'schema'"))
        for name in ("ana", "bo"):
            c.execute(
                sa.text(
                    "INSERT INTO sp_users (name, password_hash, mysql_native, created_at) "
                    "VALUES (:n, 'x', 'y', '2026-01-01 00:00:00')"
                ),
                {"n": name},
            )
    engine.dispose()
    catalog = Catalog(f"sqlite:///{path}")
    try:
        for name in ("ana", "bo"):
            assert Access(catalog.grants, name).may("SUPER")
            assert Access(catalog.grants, name).may("DROP", "t")
    finally:
        catalog.close()

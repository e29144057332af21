"""Users of ``sparkpipes serve`` in the catalog: passwords kept only as digests."""

import pytest

from sparkpipes.catalog.store import Catalog
from sparkpipes.catalog.users import check_password, hash_password, mysql_native
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError


@pytest.fixture
def users(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    yield catalog.users
    catalog.close()


def test_users_are_created_verified_changed_and_dropped(users, tmp_path):
    assert users.count() == 0
    assert users.create("ana", "first-Pw")
    assert not users.create("ana", "other", if_not_exists=True)
    with pytest.raises(AlreadyExistsError, match="user 'ana' already exists"):
        users.create("ana", "other")
    assert users.verify("ana", "first-Pw")
    assert not users.verify("ana", "first-pw") and not users.verify("nobody", "first-Pw")
    users.set_password("ana", "second-Pw")
    assert users.verify("ana", "second-Pw") and not users.verify("ana", "first-Pw")
    assert [u.name for u in users.all()] == ["ana"] and users.count() == 1
    assert users.create("bo", "bo-Pw")
    assert users.drop("bo") and not users.drop("bo", if_exists=True)
    with pytest.raises(NotFoundError, match="user 'bo' does not exist"):
        users.drop("bo")
    with pytest.raises(NotFoundError):
        users.set_password("bo", "x")
    with pytest.raises(ConfigError, match="the last admin"):  # ana, the first user
        users.drop("ana")
    with pytest.raises(ConfigError, match="must not be empty"):
        users.create("bo", "")
    assert b"second-Pw" not in (tmp_path / "catalog.db").read_bytes()


def test_digests():
    secret = "p@ss word!"  # '@', ' ' and '!' are not base64: cannot show up by chance
    stored = hash_password(secret)
    assert stored.startswith("scrypt$16384$8$1$") and secret not in stored
    assert check_password(stored, secret) and not check_password(stored, "p@ss Word!")
    assert stored != hash_password(secret)  # salted
    assert not check_password("garbage", secret)
    # MySQL's own PASSWORD('password') is '*' + this digest, upper-cased
    assert mysql_native("password").upper() == "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"

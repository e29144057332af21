"""Users of ``sparkpipes serve``: the HTTP API, the web console and the MySQL endpoint.

A password is never stored. Each user keeps two one-way digests of it:

- an scrypt hash (random salt, N=2^14, r=8, p=1) that the HTTP API and the console check
  a password against;
- MySQL's ``mysql_native_password`` digest, SHA1(SHA1(password)), which is what a MySQL
  server itself keeps: the MySQL handshake proves knowledge of the password against it
  without sending the password. It is weaker than scrypt against an offline guesser, so
  the catalog should be kept as private as the warehouse (a SQLite catalog is 0600).

Names are case-sensitive, as in MySQL. A password must not be empty.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import hmac
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkpipes.catalog.grants import admins, last_admin_stays, make_admin
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError

_N, _R, _P = 2**14, 8, 1
MAX_NAME = 64


def users_table(meta: sa.MetaData) -> sa.Table:
    return sa.Table(
        "sp_users",
        meta,
        sa.Column("name", sa.String(MAX_NAME), primary_key=True),
        sa.Column("password_hash", sa.Text, nullable=False),
        sa.Column("mysql_native", sa.String(40), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )


def hash_password(password: str) -> str:
    """``scrypt$N$r$p$salt$digest`` (base64)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(digest).decode()}"


def check_password(stored: str, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from (constant time)."""
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        want = base64.b64decode(digest)
        got = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(want),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)


def mysql_native(password: str) -> str:
    """MySQL's ``mysql_native_password`` digest: hex SHA1(SHA1(password))."""
    return hashlib.sha1(hashlib.sha1(password.encode()).digest()).hexdigest()


@dataclass(frozen=True)
class UserRecord:
    name: str
    mysql_native: str
    created_at: dt.datetime


#: the name ``sparkpipes serve`` gives the owner of the server (its local token)
RESERVED = "(local)"


def _check_name(name: str) -> None:
    if not name or len(name) > MAX_NAME:
        raise ConfigError(f"a user name has 1 to {MAX_NAME} characters, not {len(name)}")
    if name == RESERVED:
        raise ConfigError(f"'{RESERVED}' is the server owner's name; choose another user name")


def _check_password(password: str) -> None:
    if not password:
        raise ConfigError("a user's password must not be empty")


class Users:
    """The ``sp_users`` table of one catalog."""

    def __init__(
        self,
        table: sa.Table,
        tx: Callable[[], AbstractContextManager[sa.Connection]],
        grants: sa.Table,
    ) -> None:
        self.t = table
        self._tx = tx
        self.grants = grants

    def create(self, name: str, password: str, *, if_not_exists: bool = False) -> bool:
        """Add a user; False when it exists and ``if_not_exists``. The first user is the
        admin (``ALL PRIVILEGES ON *.* WITH GRANT OPTION``); others start with none."""
        _check_name(name)
        _check_password(password)
        row: dict[str, Any] = {
            "name": name,
            "password_hash": hash_password(password),
            "mysql_native": mysql_native(password),
            "created_at": dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0),
        }
        try:
            with self._tx() as c:
                first = not c.execute(sa.select(self.t.c.name).limit(1)).first()
                c.execute(self.t.insert().values(**row))
                c.execute(self.grants.delete().where(self.grants.c.user_name == name))
                if first:
                    make_admin(c, self.grants, name)
        except IntegrityError:
            if if_not_exists:
                return False
            raise AlreadyExistsError(f"user '{name}' already exists") from None
        return True

    def set_password(self, name: str, password: str) -> None:
        _check_password(password)
        with self._tx() as c:
            n = c.execute(
                self.t.update()
                .where(self.t.c.name == name)
                .values(password_hash=hash_password(password), mysql_native=mysql_native(password))
            ).rowcount
        if not n:
            raise NotFoundError(f"user '{name}' does not exist")

    def drop(self, name: str, *, if_exists: bool = False) -> bool:
        """Drop a user and their grants; never the last admin while others remain."""
        with self._tx() as c:
            admin = admins(c, self.grants)
            n = c.execute(self.t.delete().where(self.t.c.name == name)).rowcount
            c.execute(self.grants.delete().where(self.grants.c.user_name == name))
            if admin:
                last_admin_stays(c, self.grants, "drop")
        if not n and not if_exists:
            raise NotFoundError(f"user '{name}' does not exist")
        return bool(n)

    def get(self, name: str) -> UserRecord | None:
        with self._tx() as c:
            r = c.execute(
                sa.select(self.t.c.name, self.t.c.mysql_native, self.t.c.created_at).where(
                    self.t.c.name == name
                )
            ).first()
        return None if r is None else UserRecord(r.name, r.mysql_native, r.created_at)

    def all(self) -> list[UserRecord]:
        with self._tx() as c:
            rows = c.execute(
                sa.select(self.t.c.name, self.t.c.mysql_native, self.t.c.created_at).order_by(
                    self.t.c.name
                )
            ).all()
        return [UserRecord(r.name, r.mysql_native, r.created_at) for r in rows]

    def count(self) -> int:
        with self._tx() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(self.t)).scalar() or 0)

    def version(self, name: str) -> str | None:
        """A digest of ``name``'s stored password hash (None: no such user). It changes
        whenever the password is set and when the user is made again, even with the same
        password (a fresh salt each time): sessions bound to it end then."""
        with self._tx() as c:
            stored = c.execute(
                sa.select(self.t.c.password_hash).where(self.t.c.name == name)
            ).scalar()
        return None if stored is None else hashlib.sha256(stored.encode()).hexdigest()[:32]

    def verify(self, name: str, password: str) -> bool:
        """Whether ``name`` exists and ``password`` is its password. An unknown name
        costs as much as a wrong password, so timing does not tell names apart."""
        with self._tx() as c:
            stored = c.execute(
                sa.select(self.t.c.password_hash).where(self.t.c.name == name)
            ).scalar()
        if stored is None:
            check_password(_dummy(), password)
            return False
        return check_password(stored, password)


@functools.cache
def _dummy() -> str:
    return hash_password(secrets.token_hex(8))

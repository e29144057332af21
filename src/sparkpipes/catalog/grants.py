"""Privileges of the users of ``sparkpipes serve``, SingleStore style.

A grant gives one user one privilege at one scope: the whole server (``*.*``), the
database (``sparkpipes.*``, also written ``*``), or one object of it (``sparkpipes.t`` or
``t``: a table, a pipeline or a procedure, by name). A privilege held at a wider scope
holds for everything inside it. ``ALL [PRIVILEGES]`` is every privilege the scope admits
(not ``GRANT OPTION``). ``WITH GRANT OPTION`` lets the user grant and revoke, at that
scope, the privileges they hold there.

Promises, enforced here for every path that changes users or grants (SQL on any surface,
``sparkpipes user``):

- the first user created gets ``ALL PRIVILEGES ON *.* WITH GRANT OPTION``: they are the
  admin; later users start with none (SingleStore's ``USAGE``);
- an admin is a user holding ``SUPER`` on ``*.*``; the last admin can be neither dropped
  nor stripped of ``SUPER``, so a server cannot lose its administrator (nor, by dropping
  every user, its sign-in);
- dropping a user drops their grants; a user created again with the same name starts
  with none.

The catalog holds the grants (``sp_grants``); checking one is a read of the user's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import sqlalchemy as sa

from sparkpipes.errors import AccessDeniedError, ConfigError, NotFoundError

DATABASE = "sparkpipes"
GLOBAL = "*.*"
DB = f"{DATABASE}.*"

#: privileges that only exist for the whole server (``FILE READ``: load files of the
#: server's own disk, ``LOAD DATA FS|HDFS``; ``FILE WRITE``: write them, as a JDBC sink
#: into an SQLite file does)
SERVER_ONLY = ("SUPER", "CREATE USER", "PROCESS", "FILE READ", "FILE WRITE")
#: privileges on tables (and the database)
TABLE = ("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX")
#: privileges on pipelines
PIPELINE = ("CREATE PIPELINE", "DROP PIPELINE", "ALTER PIPELINE", "START PIPELINE", "SHOW PIPELINE")
#: privileges on procedures
ROUTINE = ("CREATE ROUTINE", "ALTER ROUTINE", "EXECUTE")
#: privileges on connection links, held on the database (or the server), as SingleStore's
LINK = ("CREATE LINK", "SHOW LINK", "DROP LINK")
PRIVILEGES = (*TABLE, *PIPELINE, *ROUTINE, *LINK, *SERVER_ONLY)
GRANT_OPTION = "GRANT OPTION"


def grants_table(meta: sa.MetaData) -> sa.Table:
    return sa.Table(
        "sp_grants",
        meta,
        sa.Column("user_name", sa.String(64), primary_key=True),
        sa.Column("scope", sa.String(300), primary_key=True),
        sa.Column("privilege", sa.String(32), primary_key=True),
    )


@dataclass(frozen=True)
class Grant:
    user: str
    scope: str
    privilege: str


def scope_of(level: str, database: str = DATABASE) -> str:
    """A ``priv_level`` as written (``*.*``, ``*``, ``db.*``, ``db.t``, ``t``) as stored:
    ``db`` is the database by either of its names (``sparkpipes``, or ``database``, the
    one CREATE DATABASE gave it), stored as ``sparkpipes``."""
    text = level.strip().replace("`", "")
    if text == GLOBAL:
        return GLOBAL
    db, dot, name = text.rpartition(".")
    if dot and db.lower() not in (DATABASE, database.lower()):
        raise NotFoundError(f"Unknown database '{db}'")
    if text == "*" or (dot and name == "*"):
        return DB
    if not name or name == "*" or "*" in name:
        raise ConfigError(f"'{level}' is not a privilege level (*.*, *, {DB}, name)")
    return f"{DATABASE}.{name}"


def expand(privileges: Iterable[str], scope: str) -> list[str]:
    """The privileges named (``ALL`` expanded for the scope), checked against the scope."""
    out: list[str] = []
    for p in privileges:
        name = " ".join(p.upper().split())
        if name in ("ALL", "ALL PRIVILEGES"):
            out += [
                q
                for q in PRIVILEGES
                if scope == GLOBAL or (q not in SERVER_ONLY and (scope == DB or q not in LINK))
            ]
            continue
        if name == "USAGE":  # "no privileges": granting it changes nothing
            continue
        if name == GRANT_OPTION:
            out.append(name)
            continue
        if name not in PRIVILEGES:
            raise ConfigError(
                f"unknown privilege '{p}' (privileges: ALL PRIVILEGES, {', '.join(PRIVILEGES)}, "
                "GRANT OPTION)"
            )
        if name in SERVER_ONLY and scope != GLOBAL:
            raise ConfigError(f"{name} is granted ON *.* only, not ON {scope}")
        if name in LINK and scope not in (GLOBAL, DB):
            raise ConfigError(f"{name} is granted ON *.* or ON {DB}, not ON {scope}")
        out.append(name)
    return list(dict.fromkeys(out))


def covers(scope: str, obj: str | None) -> bool:
    """Whether a grant at ``scope`` holds for object ``obj`` (None: the database)."""
    if scope in (GLOBAL, DB):
        return True
    return obj is not None and scope == f"{DATABASE}.{obj}"


class Grants:
    """The ``sp_grants`` table of one catalog, beside its users (``sp_users``)."""

    def __init__(
        self,
        table: sa.Table,
        users: sa.Table,
        tx: Callable[[], AbstractContextManager[sa.Connection]],
        database: Callable[[], str] = lambda: DATABASE,
    ) -> None:
        self.t = table
        self.users = users
        self._tx = tx
        #: the database's name (``catalog.settings.Database``), which levels may name
        self.database = database

    # -- reading ----------------------------------------------------------------------
    def of(self, user: str) -> list[Grant]:
        with self._tx() as c:
            rows = c.execute(
                sa.select(self.t.c.scope, self.t.c.privilege)
                .where(self.t.c.user_name == user)
                .order_by(self.t.c.scope, self.t.c.privilege)
            ).all()
        return [Grant(user, r.scope, r.privilege) for r in rows]

    def holds(self, user: str, privilege: str, obj: str | None = None) -> bool:
        return any(g.privilege == privilege and covers(g.scope, obj) for g in self.of(user))

    # -- changing ---------------------------------------------------------------------
    def grant(
        self, users: Iterable[str], privileges: Iterable[str], level: str, *, option: bool
    ) -> None:
        scope = scope_of(level, self.database())
        names = expand(privileges, scope) + ([GRANT_OPTION] if option else [])
        with self._tx() as c:
            for user in users:
                _exists(c, self.users, user)
                have = {
                    r.privilege
                    for r in c.execute(
                        sa.select(self.t.c.privilege).where(
                            self.t.c.user_name == user, self.t.c.scope == scope
                        )
                    )
                }
                for p in names:
                    if p not in have:
                        c.execute(self.t.insert().values(user_name=user, scope=scope, privilege=p))

    def revoke(self, users: Iterable[str], privileges: Iterable[str], level: str) -> None:
        scope = scope_of(level, self.database())
        names = expand(privileges, scope)
        if any(" ".join(p.upper().split()) in ("ALL", "ALL PRIVILEGES") for p in privileges):
            names.append(GRANT_OPTION)
        with self._tx() as c:
            for user in users:
                _exists(c, self.users, user)
                c.execute(
                    self.t.delete().where(
                        self.t.c.user_name == user,
                        self.t.c.scope == scope,
                        self.t.c.privilege.in_(names),
                    )
                )
            if scope == GLOBAL and "SUPER" in names:
                last_admin_stays(c, self.t, "revoke SUPER from")


def _exists(c: sa.Connection, users: sa.Table, user: str) -> None:
    if c.execute(sa.select(users.c.name).where(users.c.name == user)).first() is None:
        raise NotFoundError(f"user '{user}' does not exist")


def admins(c: sa.Connection, grants: sa.Table) -> int:
    return int(
        c.execute(
            sa.select(sa.func.count())
            .select_from(grants)
            .where(grants.c.scope == GLOBAL, grants.c.privilege == "SUPER")
        ).scalar()
        or 0
    )


def last_admin_stays(c: sa.Connection, grants: sa.Table, verb: str) -> None:
    """Inside the transaction that changed them: refuse (rolling it back) when no admin
    is left."""
    if not admins(c, grants):
        raise ConfigError(
            f"cannot {verb} the last admin (a user with SUPER on *.*): grant SUPER on *.* to "
            "another user first"
        )


def make_admin(c: sa.Connection, grants: sa.Table, user: str) -> None:
    """``ALL PRIVILEGES ON *.* WITH GRANT OPTION`` (the first user; upgraded catalogs)."""
    for p in (*PRIVILEGES, GRANT_OPTION):
        c.execute(grants.insert().values(user_name=user, scope=GLOBAL, privilege=p))


class Access:
    """What one signed-in user may do; ``user`` None is the server's owner (the local
    token, the CLI and the Python API on the warehouse), who may do everything. The
    user's grants are read once per statement (:meth:`refresh`)."""

    def __init__(self, grants: Grants | None, user: str | None) -> None:
        self.grants = grants
        self.user = user
        self._held: list[Grant] | None = None

    @property
    def owner(self) -> bool:
        return self.user is None or self.grants is None

    def refresh(self) -> None:
        """Read the grants again at the next check (a new statement, a new request)."""
        self._held = None

    def held(self) -> list[Grant]:
        if self._held is None:
            assert self.grants is not None and self.user is not None
            self._held = self.grants.of(self.user)
        return self._held

    def may(self, privilege: str, obj: str | None = None) -> bool:
        return self.may_any((privilege,), obj)

    def may_any(self, privileges: Iterable[str], obj: str | None = None) -> bool:
        if self.owner:
            return True
        wanted = set(privileges)
        return any(g.privilege in wanted and covers(g.scope, obj) for g in self.held())

    def require(self, privilege: str, obj: str | None = None, *, kind: str = "table") -> None:
        """Raise AccessDeniedError as SingleStore words it, unless allowed."""
        if self.may(privilege, obj):
            return
        if privilege in SERVER_ONLY or obj is None:
            raise AccessDeniedError(
                f"Access denied for user '{self.user}': this needs the {privilege} "
                f"privilege on {GLOBAL if privilege in SERVER_ONLY else DB}"
            )
        raise AccessDeniedError(
            f"{privilege} command denied to user '{self.user}' for {kind} '{obj}'"
        )

"""Statement nodes of users and their privileges: ``CREATE | ALTER | DROP USER``,
``SHOW USERS``, ``GRANT``, ``REVOKE``, ``SHOW GRANTS`` (SingleStore's forms)."""

from __future__ import annotations

from dataclasses import dataclass

from sparkpipes.config.core import Secret
from sparkpipes.frontends.singlestore.ast_base import Statement, quote_string


@dataclass(frozen=True)
class CreateUser(Statement):
    """``CREATE USER [IF NOT EXISTS] 'name'[@'%'] IDENTIFIED BY 'password'``: a user of
    ``sparkpipes serve`` (HTTP API, console, MySQL endpoint). Only the host ``'%'`` (any)
    is accepted. ``to_sql`` gives the password back (for a round trip); statements are
    echoed through ``mask_credentials``, which masks it."""

    name: str
    password: Secret
    if_not_exists: bool = False

    def to_sql(self) -> str:
        exists = "IF NOT EXISTS " if self.if_not_exists else ""
        return (
            f"CREATE USER {exists}{quote_string(self.name)} "
            f"IDENTIFIED BY {quote_string(self.password.reveal())}"
        )


@dataclass(frozen=True)
class AlterUser(Statement):
    """``ALTER USER 'name' IDENTIFIED BY 'password'``: a new password."""

    name: str
    password: Secret

    def to_sql(self) -> str:
        return (
            f"ALTER USER {quote_string(self.name)} "
            f"IDENTIFIED BY {quote_string(self.password.reveal())}"
        )


@dataclass(frozen=True)
class DropUser(Statement):
    """``DROP USER [IF EXISTS] 'name'``."""

    name: str
    if_exists: bool = False

    def to_sql(self) -> str:
        return "DROP USER " + ("IF EXISTS " if self.if_exists else "") + quote_string(self.name)


@dataclass(frozen=True)
class ShowUsers(Statement):
    """``SHOW USERS [LIKE 'pattern']``."""

    like: str | None = None

    def to_sql(self) -> str:
        like = f" LIKE {quote_string(self.like)}" if self.like is not None else ""
        return "SHOW USERS" + like


def _users(names: tuple[str, ...]) -> str:
    return ", ".join(quote_string(n) for n in names)


@dataclass(frozen=True)
class Grant(Statement):
    """``GRANT priv [, priv …] ON level TO user [, user …] [WITH GRANT OPTION]``; a
    privilege is one or more words (``CREATE PIPELINE``), ``level`` as written (``*.*``,
    ``*``, ``db.*``, ``db.name``, ``name``)."""

    privileges: tuple[str, ...]
    level: str
    users: tuple[str, ...]
    grant_option: bool = False

    def to_sql(self) -> str:
        option = " WITH GRANT OPTION" if self.grant_option else ""
        return f"GRANT {', '.join(self.privileges)} ON {self.level} TO {_users(self.users)}{option}"


@dataclass(frozen=True)
class Revoke(Statement):
    """``REVOKE priv [, priv …] ON level FROM user [, user …]``."""

    privileges: tuple[str, ...]
    level: str
    users: tuple[str, ...]

    def to_sql(self) -> str:
        return f"REVOKE {', '.join(self.privileges)} ON {self.level} FROM {_users(self.users)}"


@dataclass(frozen=True)
class ShowGrants(Statement):
    """``SHOW GRANTS [FOR user]``: the signed-in user's own when no user is named."""

    user: str | None = None

    def to_sql(self) -> str:
        return "SHOW GRANTS" + (f" FOR {quote_string(self.user)}" if self.user else "")

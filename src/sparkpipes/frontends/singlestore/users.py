"""The statements of users and privileges, as ``SqlSession``
runs them: ``CREATE | ALTER | DROP USER``, ``SHOW USERS``, ``GRANT``, ``REVOKE``, ``SHOW
GRANTS``.

Who may run them (SingleStore's rules): ``CREATE USER`` (the privilege, on ``*.*``)
creates, drops and renames users and sets anyone's password; every user may change their
own password and see their own grants. ``GRANT`` and ``REVOKE`` need ``GRANT OPTION`` at
the level named and every privilege given or taken there (held at that level or wider).
The last admin is protected by the catalog (``catalog.grants``)."""

from __future__ import annotations

from sparkpipes.catalog.grants import DB, GLOBAL, GRANT_OPTION, Access, covers, expand, scope_of
from sparkpipes.engine import Engine
from sparkpipes.engine.variables import like
from sparkpipes.errors import AccessDeniedError, NotFoundError
from sparkpipes.frontends.singlestore import ast_users as U
from sparkpipes.frontends.singlestore.results import Result, ok


class UserStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine`` and ``access``)."""

    engine: Engine
    access: Access

    def _CreateUser(self, s: U.CreateUser) -> Result:
        self.access.require("CREATE USER")
        made = self.engine.catalog.users.create(
            s.name, s.password.reveal(), if_not_exists=s.if_not_exists
        )
        return ok(int(made))

    def _AlterUser(self, s: U.AlterUser) -> Result:
        if s.name != self.access.user:
            self.access.require("CREATE USER")
        self.engine.catalog.users.set_password(s.name, s.password.reveal())
        return ok(0)

    def _DropUser(self, s: U.DropUser) -> Result:
        self.access.require("CREATE USER")
        return ok(int(self.engine.catalog.users.drop(s.name, if_exists=s.if_exists)))

    def _ShowUsers(self, s: U.ShowUsers) -> Result:
        everyone = self.access.may("CREATE USER")
        rows = [
            (u.name, u.created_at)
            for u in self.engine.catalog.users.all()
            if (everyone or u.name == self.access.user) and (s.like is None or like(s.like, u.name))
        ]
        return Result(["User", "Created"], rows)

    def _Grant(self, s: U.Grant) -> Result:
        self._may_grant(s.privileges, s.level)
        self.engine.catalog.grants.grant(s.users, s.privileges, s.level, option=s.grant_option)
        return ok(0)

    def _Revoke(self, s: U.Revoke) -> Result:
        self._may_grant(s.privileges, s.level)
        self.engine.catalog.grants.revoke(s.users, s.privileges, s.level)
        return ok(0)

    def _ShowGrants(self, s: U.ShowGrants) -> Result:
        user = s.user or self.access.user
        if user is None:  # the owner, asking about itself
            return Result(["Grants for owner"], [(f"GRANT ALL PRIVILEGES ON {GLOBAL} TO owner",)])
        if user != self.access.user:
            self.access.require("CREATE USER")
        if self.engine.catalog.users.get(user) is None:
            raise NotFoundError(f"user '{user}' does not exist")
        by_scope: dict[str, list[str]] = {}
        for g in self.engine.catalog.grants.of(user):
            by_scope.setdefault(g.scope, []).append(g.privilege)
        rows = []
        order = [GLOBAL, DB, *sorted(k for k in by_scope if k not in (GLOBAL, DB))]
        for scope in (k for k in order if k in by_scope):
            privileges = by_scope[scope]
            option = GRANT_OPTION in privileges
            named = [p for p in privileges if p != GRANT_OPTION] or ["USAGE"]
            everything = set(expand(["ALL PRIVILEGES"], scope))
            text = "ALL PRIVILEGES" if everything <= set(named) else ", ".join(named)
            rows.append(
                (
                    f"GRANT {text} ON {_level(scope)} TO '{user}'@'%'"
                    + (" WITH GRANT OPTION" if option else ""),
                )
            )
        if GLOBAL not in by_scope:
            rows.insert(0, (f"GRANT USAGE ON {GLOBAL} TO '{user}'@'%'",))
        return Result([f"Grants for {user}@%"], rows)

    def _may_grant(self, privileges: tuple[str, ...], level: str) -> None:
        """GRANT OPTION at ``level`` (or wider) and every privilege given there."""
        if self.access.owner:
            return
        scope = scope_of(level, self.engine.catalog.database.name())
        obj = None if scope in (GLOBAL, DB) else scope.split(".", 1)[1]
        wanted = expand(privileges, scope)
        held = self.engine.catalog.grants.of(self.access.user)

        def holds(p: str) -> bool:
            return any(
                g.privilege == p
                and (g.scope == GLOBAL or (scope != GLOBAL and covers(g.scope, obj)))
                for g in held
            )

        missing = [p for p in (GRANT_OPTION, *wanted) if not holds(p)]
        if missing:
            raise AccessDeniedError(
                f"Access denied for user '{self.access.user}': granting or revoking on {level} "
                f"needs {', '.join(missing)} there"
            )


def _level(scope: str) -> str:
    if scope in (GLOBAL, DB):
        return scope
    db, _, name = scope.partition(".")
    return f"{db}.`{name}`"

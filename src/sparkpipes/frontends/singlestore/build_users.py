"""Parse tree to AST for users and privileges: ``CREATE | ALTER | DROP USER``, ``SHOW USERS``,
``GRANT``, ``REVOKE`` and ``SHOW GRANTS`` (privilege names checked against the catalog's)."""

from __future__ import annotations

from lark import Token, Tree

from sparkpipes.catalog.grants import GRANT_OPTION, PRIVILEGES
from sparkpipes.config.core import Secret
from sparkpipes.frontends.singlestore import ast_users as u
from sparkpipes.frontends.singlestore.build_base import Builder, _at, _sub, _subs, _tok


class UserBuilder(Builder):
    """The user and privilege statements of the builder (see ``build_base.Builder``)."""

    def user_name(self, tree: Tree | None) -> str:
        """``name`` or ``'name'``, with an optional ``@'%'`` (the only host accepted)."""
        assert tree is not None
        parts = [
            self.string(c) if isinstance(c, Token) and c.type == "STRING" else self.name(c)
            for c in tree.children
            if not (isinstance(c, Token) and c.type == "AT")
        ]
        if len(parts) == 2 and parts[1] != "%":
            self.fail(
                f"users are not restricted by host: write '{parts[0]}'@'%' or '{parts[0]}'",
                tree.children[-1],
            )
        if not parts[0]:
            self.fail("empty user name", tree.children[0])
        return parts[0]

    def password(self, tree: Tree) -> Secret:
        tok = _tok(tree, "STRING")
        value = self.string(tok)
        if not value:
            self.fail("a user's password must not be empty", tok)
        return Secret(value)

    def _create_user(self, tree: Tree) -> u.CreateUser:
        return u.CreateUser(
            self.user_name(_sub(tree, "user_name")),
            self.password(tree),
            if_not_exists=_sub(tree, "if_not_exists") is not None,
        )

    def _alter_user(self, tree: Tree) -> u.AlterUser:
        return u.AlterUser(self.user_name(_sub(tree, "user_name")), self.password(tree))

    def _drop_user(self, tree: Tree) -> u.DropUser:
        return u.DropUser(
            self.user_name(_sub(tree, "user_name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _show_users(self, tree: Tree) -> u.ShowUsers:
        like = _tok(tree, "STRING")
        return u.ShowUsers(None if like is None else self.string(like))

    def _show_grants(self, tree: Tree) -> u.ShowGrants:
        who = _sub(tree, "user_name")
        return u.ShowGrants(None if who is None else self.user_name(who))

    def privileges(self, tree: Tree) -> tuple[str, ...]:
        out = []
        for priv in _subs(_at(tree, 1), "privilege"):
            words = []
            for w in _subs(priv, "priv_word"):
                c = w.children[0]
                tok = c.children[0] if isinstance(c, Tree) else c
                if tok.type == "QUOTED_IDENT":
                    self.fail("a privilege is written without quotes", tok)
                words.append(tok.value.upper())
            name = " ".join(words)
            if name not in (*PRIVILEGES, GRANT_OPTION, "ALL", "ALL PRIVILEGES", "USAGE"):
                self.fail(f"unknown privilege '{name}' (privileges: {', '.join(PRIVILEGES)})", priv)
            out.append(name)
        return tuple(out)

    def priv_level(self, tree: Tree) -> str:
        """As written (quoted names keep their backquotes)."""
        level = _sub(tree, "priv_level")
        assert level is not None
        parts = [c.children[0] if isinstance(c, Tree) else c for c in level.children]
        return "".join(p.value for p in parts)

    def user_names(self, tree: Tree) -> tuple[str, ...]:
        names = _sub(tree, "user_names")
        assert names is not None
        return tuple(self.user_name(n) for n in _subs(names, "user_name"))

    def _grant(self, tree: Tree) -> u.Grant:
        option = _sub(tree, "name")
        if option is not None and self.name(option).upper() != "OPTION":
            self.fail("expected WITH GRANT OPTION", option.children[0])
        return u.Grant(
            self.privileges(tree),
            self.priv_level(tree),
            self.user_names(tree),
            grant_option=option is not None,
        )

    def _revoke(self, tree: Tree) -> u.Revoke:
        return u.Revoke(self.privileges(tree), self.priv_level(tree), self.user_names(tree))

"""Parse tree to AST for session settings: ``SET [GLOBAL|SESSION] name = value`` and
``SHOW VARIABLES``."""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from sparkpipes.frontends.singlestore.ast_base import Literal
from sparkpipes.frontends.singlestore.ast_session import (
    CreateDatabase,
    SetVariable,
    ShowVariables,
    UseDatabase,
)
from sparkpipes.frontends.singlestore.build_base import Builder, _kw, _sub, _tok


class SessionBuilder(Builder):
    """The session statements of the builder (see ``build_base.Builder``)."""

    def scope(self, tree: Tree) -> Any:
        scope = _sub(tree, "scope", "show_scope")
        return None if scope is None else _kw(scope)

    def _create_database(self, tree: Tree) -> CreateDatabase:
        return CreateDatabase(
            self.name(_sub(tree, "name")), if_not_exists=_sub(tree, "if_not_exists") is not None
        )

    def _use_database(self, tree: Tree) -> UseDatabase:
        return UseDatabase(self.name(_sub(tree, "name")))

    def _show_variables(self, tree: Tree) -> ShowVariables:
        like = _tok(tree, "STRING")
        return ShowVariables(self.scope(tree), None if like is None else self.string(like))

    def _set_variable(self, tree: Tree) -> SetVariable:
        var = _sub(tree, "var_name")
        parts = self.names(var)
        if any("." in p for p in parts):  # the name is stored dotted: a dot inside is lost
            assert var is not None
            self.fail("a part of a variable name cannot contain '.'", var)
        name = ".".join(parts)
        holder = _sub(tree, "set_value")
        assert holder is not None
        node = holder.children[0]
        if isinstance(node, Token):
            value = Literal("word", "ON")
        elif node.data == "name":
            value = Literal("word", self.name(node))
        else:
            value = self.literal(node)
        return SetVariable(name, value, self.scope(tree))

"""Parse tree to AST for stored procedures: ``CREATE PROCEDURE`` (parameters, return type, a
body from BEGIN or DECLARE to END), ``DROP PROCEDURE`` and ``SHOW PROCEDURES``."""

from __future__ import annotations

from typing import Any

from lark import Tree

from sparkpipes.frontends.singlestore import script
from sparkpipes.frontends.singlestore.ast_procedures import (
    CreateProcedure,
    DropProcedure,
    ProcedureParam,
    ShowProcedures,
)
from sparkpipes.frontends.singlestore.build_base import (
    TYPE_TREES,
    Builder,
    _at,
    _start,
    _sub,
    _subs,
    _tok,
)
from sparkpipes.frontends.singlestore.errors import ParseError


class ProcedureBuilder(Builder):
    """The procedure statements of the builder (see ``build_base.Builder``)."""

    def _create_procedure(self, tree: Tree) -> CreateProcedure:
        params = tuple(
            ProcedureParam(
                self.name(_sub(p, "name")),
                self.data_type(_at(p, 1)),
            )
            for p in _subs(tree, "proc_param")
        )
        seen: dict[str, Any] = {}
        for node, param in zip(_subs(tree, "proc_param"), params):
            self.once(seen, param.name.lower(), node, f"parameter '{param.name}'")
        returns = _sub(tree, *TYPE_TREES)
        if returns is not None and str(_at(returns, 0).children[0]).upper() == "VOID":
            returns = None  # RETURNS void: what a pipeline procedure returns anyway
        body = _tok(tree, "REST")
        if body is None:
            self.fail("expected BEGIN … END after AS", tree, ParseError)
        toks = script.tokens(body.value)
        while toks and toks[-1].type == "SEMI":  # END; before the DELIMITER's end
            toks.pop()
        if not toks or toks[0].type != "WORD" or toks[0].value.upper() not in ("BEGIN", "DECLARE"):
            self.fail("a procedure body starts with BEGIN or DECLARE", body, ParseError)
        if toks[-1].type != "WORD" or toks[-1].value.upper() != "END":
            last = _start(body) + (toks[-1].start_pos or 0)
            self.fail_at("a procedure body ends with END", last, last + 1, ParseError)
        return CreateProcedure(
            self.name(_sub(tree, "name")),
            params,
            script.normalize(body.value),
            or_replace=_sub(tree, "or_replace") is not None,
            returns=None if returns is None else self.data_type(returns),
        )

    def _drop_procedure(self, tree: Tree) -> DropProcedure:
        return DropProcedure(
            self.name(_sub(tree, "name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _show_procedures(self, tree: Tree) -> ShowProcedures:
        like = _tok(tree, "STRING")
        return ShowProcedures(None if like is None else self.string(like))

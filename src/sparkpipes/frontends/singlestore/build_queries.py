"""Parse tree to AST for queries and DML: statements handed to Spark SQL as written
(``Query``) and ``INSERT | REPLACE INTO``."""

from __future__ import annotations

from lark import Tree

from sparkpipes.frontends.singlestore import script
from sparkpipes.frontends.singlestore.ast_queries import Insert, Query
from sparkpipes.frontends.singlestore.build_base import Builder, _end, _start, _sub, _subs, _tok


class QueryBuilder(Builder):
    """The query and DML statements of the builder (see ``build_base.Builder``)."""

    def _query(self, tree: Tree) -> Query:
        return Query(script.normalize(self.stmt))

    def _show_other(self, tree: Tree) -> Query:
        return Query(script.normalize(self.stmt))

    def _insert(self, tree: Tree) -> Insert:
        table = self.name(_sub(tree, "name"))
        columns = self.names(_sub(tree, "insert_columns"))
        replace = _tok(tree, "REPLACE") is not None
        query = _sub(tree, "insert_query")
        if query is not None:
            text = script.normalize(self.stmt[_start(query) : _end(query)])
            return Insert(table, columns, query=Query(text), replace=replace)
        rows = tuple(
            tuple(self.expr(e) for e in _subs(row, "expr_text"))
            for row in _subs(tree, "insert_row")
        )
        return Insert(table, columns, rows=rows, replace=replace)

"""Parse tree to AST for queries and DML: statements handed to Spark SQL as written
(``Query``), ``INSERT | REPLACE INTO``, ``DELETE`` and ``UPDATE``."""

from __future__ import annotations

from lark import Tree
from lark.exceptions import UnexpectedInput

from sparkpipes.frontends.singlestore import grammar, lexer, script
from sparkpipes.frontends.singlestore.ast_pipelines import Assignment
from sparkpipes.frontends.singlestore.ast_queries import Delete, Insert, OrderItem, Query, Update
from sparkpipes.frontends.singlestore.build_base import Builder, _end, _start, _sub, _subs, _tok
from sparkpipes.frontends.singlestore.errors import ParseError

_ODKU = ("ON", "DUPLICATE", "KEY", "UPDATE")


def _on_duplicate_at(stmt: str, start: int, end: int) -> int | None:
    """Where ``ON DUPLICATE KEY UPDATE`` begins in a query's text ``stmt[start:end]``,
    outside parentheses, strings and comments; or None."""
    depth = 0
    words: list[tuple[str, int]] = []
    for tok in lexer.lex(stmt[start:end]):
        if tok.type == "OTHER":
            depth += {"(": 1, ")": -1}.get(tok.value, 0)
            words.clear()
        elif tok.type == "WORD" and depth == 0:
            words = [*words[-3:], (tok.value.upper(), start + (tok.start_pos or 0))]
            if tuple(w for w, _ in words) == _ODKU:
                return words[0][1]
        elif tok.type not in ("WS", "LINE_COMMENT", "BLOCK_COMMENT"):
            words.clear()
    return None


class QueryBuilder(Builder):
    """The query and DML statements of the builder (see ``build_base.Builder``)."""

    def _query(self, tree: Tree) -> Query:
        return Query(script.normalize(self.stmt))

    def _show_other(self, tree: Tree) -> Query:
        return Query(script.normalize(self.stmt))

    def on_duplicate_tail(self, start: int, end: int) -> tuple[Assignment, ...]:
        """The assignments of ``ON DUPLICATE KEY UPDATE …`` at ``stmt[start:end]``, parsed
        by the grammar's own rule (positions kept: the text before it is blanked)."""
        text = " " * start + self.stmt[start:end]
        try:
            tree = grammar.parser("on_duplicate").parse(text)
        except UnexpectedInput as e:
            at = getattr(e, "pos_in_stream", None) or start
            token = getattr(e, "token", None)
            found = f"'{token}'" if token and token.type != "$END" else "end of statement"
            self.fail_at(f"unexpected {found} in ON DUPLICATE KEY UPDATE", at, at + 1, ParseError)
        return self.assignments(tree, "ON DUPLICATE KEY UPDATE")

    def _insert(self, tree: Tree) -> Insert:
        table = self.name(_sub(tree, "name"))
        columns = self.names(_sub(tree, "insert_columns"))
        replace = _tok(tree, "REPLACE") is not None
        ignore = _tok(tree, "IGNORE") is not None
        query = _sub(tree, "insert_query")
        if query is not None:
            start, end = _start(query), _end(query)
            tail = _on_duplicate_at(self.stmt, start, end)
            updates = () if tail is None else self.on_duplicate_tail(tail, end)
            text = script.normalize(self.stmt[start : end if tail is None else tail])
            if updates and (ignore or replace):
                self.fail("ON DUPLICATE KEY UPDATE takes INSERT INTO, not IGNORE or REPLACE", query)
            return Insert(
                table,
                columns,
                query=Query(text),
                replace=replace,
                on_duplicate=updates,
                ignore=ignore,
            )
        rows = tuple(
            tuple(self.expr(e) for e in _subs(row, "expr_text"))
            for row in _subs(tree, "insert_row")
        )
        return Insert(table, columns, rows=rows, replace=replace, ignore=ignore)

    def _target(self, tree: Tree) -> tuple[str, str | None]:
        """The table of a DELETE or UPDATE and its alias (``t``, ``t AS a``, ``t a``)."""
        names = _subs(tree, "name")
        return self.name(names[0]), (self.name(names[1]) if len(names) > 1 else None)

    def _where(self, tree: Tree):
        where = _sub(tree, "where_clause")
        return None if where is None else self.expr(_sub(where, "expr_text"))

    def _order(self, tree: Tree) -> tuple[OrderItem, ...]:
        """``ORDER BY`` of a DELETE or UPDATE."""
        order = _sub(tree, "order_by")
        items = () if order is None else _subs(order, "order_item")
        return tuple(
            OrderItem(self.expr(_sub(i, "expr_text")), _tok(i, "DESC") is not None) for i in items
        )

    def _limit(self, tree: Tree) -> int | None:
        limit = _sub(tree, "limit")
        return None if limit is None else self.integer(_sub(limit, "int_value"), 0, "LIMIT")

    def _delete(self, tree: Tree) -> Delete:
        table, alias = self._target(tree)
        where = self._where(tree)
        return Delete(table, alias, where, order=self._order(tree), limit=self._limit(tree))

    def _delete_join(self, tree: Tree) -> Delete:
        target = self.name(_sub(tree, "name"))
        (table, alias), (join, join_alias) = (self._target(t) for t in _subs(tree, "delete_table"))
        if target not in (table, alias):
            self.fail(
                f"DELETE {target} FROM …: the rows deleted are of the first table of FROM "
                f"('{table}'); deleting from the joined one is not supported yet",
                tree,
            )
        on = _sub(tree, "delete_on")
        return Delete(
            table,
            alias,
            self._where(tree),
            join,
            join_alias,
            None if on is None else self.expr(_sub(on, "expr_text")),
            limit=self._limit(tree),
        )

    def _update(self, tree: Tree) -> Update:
        table, alias = self._target(tree)
        assignments = self.assignments(_sub(tree, "set_clause"), "SET")
        where = self._where(tree)
        return Update(
            table, assignments, alias, where, order=self._order(tree), limit=self._limit(tree)
        )

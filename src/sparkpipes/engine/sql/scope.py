"""Which relation names of a parsed statement reach the catalog, with CTE scopes worked
out as Spark's CTE substitution does.

A name is a CTE reference only inside that CTE's scope: the main query of its ``WITH``,
the definitions after it in the same ``WITH`` (its own too under ``WITH RECURSIVE``), and
everything nested in those (subqueries, subquery expressions, inner ``WITH``\\ s). The same
name elsewhere is a table. The privilege check asks for ``SELECT`` on every such table,
and a stored procedure body keeps no name that a later table could take over: a CTE
named ``t`` in one subquery does not make ``t`` in another a CTE.

The input is a tree as Spark's ``toJSON`` writes it: nodes in pre-order, each with its
``num-children``; a node's fields hold further trees (expressions, subquery plans, CTE
definitions) as nested lists.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_CATALYST = "org.apache.spark.sql.catalyst."
RELATION = "analysis.UnresolvedRelation"
WITH = "plans.logical.UnresolvedWith"


def table_references(tree: list[dict[str, Any]]) -> tuple[set[str], int]:
    """The one-part relation names of ``tree`` outside every CTE scope of that name (as
    written), and how many relation nodes were seen in all, bound or not (the caller
    checks that against its own count: a node this walk missed is never a silent pass)."""
    found: set[str] = set()
    seen = [0]

    def listing(nodes: list[dict[str, Any]], scope: frozenset[str]) -> None:
        scopes = [scope]  # pre-order: a node's children follow it, in its inner scope
        for node in nodes:
            here = scopes.pop() if scopes else scope
            visit(node, here)
            n = node.get("num-children")
            scopes.extend([node_scope(node, here)] * (n if isinstance(n, int) else 0))

    def node_scope(node: dict[str, Any], scope: frozenset[str]) -> frozenset[str]:
        if _short(node) != WITH:
            return scope
        return scope | {name for name, _ in _ctes(node)}

    def visit(node: dict[str, Any], scope: frozenset[str]) -> None:
        cls = _short(node)
        if cls == RELATION:
            seen[0] += 1
            parts = name_parts(node.get("multipartIdentifier"))
            if len(parts) != 1 or parts[0].lower() not in scope:
                found.add(".".join(parts))
        if cls == WITH:
            earlier: set[str] = set()
            recursive = bool(node.get("allowRecursion"))
            for name, definition in _ctes(node):
                own = {name} if recursive else set()
                for sub in _trees(definition):
                    listing(sub, scope | earlier | own)
                earlier.add(name)
        for key, value in node.items():
            if key in ("class", "num-children") or (cls == WITH and key == "cteRelations"):
                continue
            for sub in _trees(value):
                listing(sub, scope)

    for sub in _trees(tree):
        listing(sub, frozenset())
    return found, seen[0]


def _ctes(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for rel in node.get("cteRelations") or ():
        if isinstance(rel, dict) and isinstance(rel.get("_1"), str):
            yield rel["_1"].lower(), rel.get("_2")


def _trees(value: Any) -> Iterator[list[dict[str, Any]]]:
    """The trees (pre-order node lists) a field's value holds, however nested."""
    if isinstance(value, list):
        if value and isinstance(value[0], dict) and "class" in value[0]:
            yield value
        else:
            for item in value:
                yield from _trees(item)
    elif isinstance(value, dict) and "class" not in value:
        for item in value.values():
            yield from _trees(item)


def _short(node: dict[str, Any]) -> str:
    cls = str(node.get("class", ""))
    return cls[len(_CATALYST) :] if cls.startswith(_CATALYST) else cls


def name_parts(value: Any) -> list[str]:
    """A multi-part name as Spark's JSON prints it (``[a, b]``). A part that itself holds
    ``", "`` reads as two parts: refused, never mistaken for one."""
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value or "")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return text.split(", ") if text else [""]

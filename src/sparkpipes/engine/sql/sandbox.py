"""The query sandbox: what SQL a user sends may ask of Spark.

Every piece of user text that reaches Spark SQL — queries and ``INSERT … SELECT|VALUES``
on every surface (the CLI, the HTTP API, the console, the MySQL endpoint, Pinot's
``/query/sql``), procedure bodies, and a pipeline's ``SET`` / ``WHERE`` and computed
columns — is first checked here, and runs only if admitted. What is admitted is what a
user of a database may do: read the warehouse's tables and ``information_schema`` with
the functions of the dialect. Everything that reaches the file system, the network, the
JVM or the session is refused: path-based data sources (``text.`/etc/passwd```),
``INSERT OVERWRITE DIRECTORY``, ``reflect`` / ``java_method``, ``TRANSFORM … USING``
(runs a program), ``ADD JAR|FILE|ARCHIVE``, ``CREATE FUNCTION``, ``SET`` of Spark or
Hadoop settings, DDL, caching, scripts, variables, ``IDENTIFIER(…)`` and ``EXECUTE
IMMEDIATE`` (which would hide a name or a statement from this check).

The decision is made on **Spark's own parse** of the exact text Spark will run
(``sessionState.sqlParser``; no second parser to disagree with it), walking every node of
the unresolved plan, subqueries and nested plans included, against allow-lists
(:mod:`sparkpipes.engine.sql.allowlists`): plan node classes, expression classes, built-in
functions by name, table functions by name; a relation must be one plain name (a table,
a view or a CTE: a second part would be a data source and a path). Anything unknown is
refused, so a Spark upgrade can only make the sandbox stricter until its new syntax is
reviewed. A refusal is a :class:`~sparkpipes.errors.NotAdmittedError` that names the
construct and why. Admission is cached by text (parsing costs milliseconds; a pipeline's
expressions are checked once per process).

Over-deep or over-large input is a user error (``QueryError``, a 400), never a crash: a
statement nested deeper than Spark's parser can take (a JVM ``StackOverflowError``) or than
this check can walk, and one whose parsed tree Spark would write out too large — Spark's
JSON of a ``CASE`` holds its branches twice, so it doubles with each level of nesting, and a
300-character query of nested CASEs would take gigabytes; such statements are measured
(:class:`_JsonSize`) before they are written out. So is a statement that Spark would
make exponentially larger as it runs it: CTEs referenced twice in each other's definitions
(:func:`_expansion`), aliases of constants referenced twice in the next
(:func:`_inlining`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from sparkpipes.engine.sql.allowlists import (
    COMMANDS,
    DENIED_FUNCTIONS,
    EXPRESSIONS,
    FUNCTIONS,
    OPAQUE_FIELDS,
    PLANS,
    TABLE_FUNCTIONS,
)
from sparkpipes.engine.sql.scope import name_parts, table_references
from sparkpipes.errors import NotAdmittedError, QueryError

_CATALYST = "org.apache.spark.sql.catalyst."
_RELATION = "analysis.UnresolvedRelation"
_CTE = "plans.logical.UnresolvedWith"
#: what the sandbox admits, said once in every refusal
ADMITS = (
    "the server admits queries over the warehouse's tables and information_schema with "
    "Spark's SQL functions (README: Security)"
)
#: nodes at most in the JSON of a parsed statement (about 100 bytes each)
MAX_TREE = 100_000
#: distinct parts a statement with CASE may have for :class:`_JsonSize` (a trip to the JVM each)
MAX_WALK = 10_000
#: nodes a statement's CTE references may add once Spark substitutes them
MAX_EXPANDED = 5_000
#: expression nodes a statement may have with its aliases' references inlined
MAX_INLINED = 1_000_000
#: every CASE keyword Spark's lexer can see is such a word (a string or a name may be too)
_CASE = re.compile(r"(?<![A-Za-z0-9_])case(?![A-Za-z0-9_])", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True)
class Admitted:
    """An admitted statement or expression: the tables it reads (the plain relation names
    outside the scope of every CTE of that name, :mod:`.scope`), and the names of the
    CTEs it defines, for the privilege check. A name may be both (a CTE shadows a table
    in its scope only)."""

    relations: frozenset[str]
    ctes: frozenset[str] = frozenset()
    #: the command at the statement's root (``…command.ExplainCommand``), if any
    command: str | None = None

    @property
    def explains(self) -> bool:
        """Whether the statement answers a plan (whose text names the server's files)."""
        return (self.command or "").endswith("ExplainCommand")


def check_query(spark: Any, text: str) -> Admitted:
    """Admit the statement ``text`` (Spark SQL, after the dialect's translation), or raise
    NotAdmittedError; a statement Spark cannot parse raises QueryError with Spark's
    message, as running it would."""
    return _admit("query", text, spark)


def check_expression(spark: Any, text: str) -> Admitted:
    """Admit a scalar expression (a pipeline's SET or WHERE, a computed column)."""
    return _admit("expression", text, spark)


def _admit(kind: str, text: str, spark: Any) -> Admitted:
    state = spark._jsparkSession.sessionState()
    _load_builtins(state)
    try:
        return _cached(kind, text, _Parser(state.sqlParser(), spark._jvm))
    except RecursionError:
        raise QueryError(f"the {kind} is nested too deeply to check") from None


#: the names Spark's function registries hold, read once per process: a function of
#: Spark's that the lists do not name is refused (not reviewed); a name Spark does not
#: know is left to Spark, which reports it as unknown
_BUILTINS: set[str] = set()


def _load_builtins(state: Any) -> None:
    if _BUILTINS:
        return
    for registry in (state.functionRegistry(), state.tableFunctionRegistry()):
        listed = str(registry.listFunction().mkString("\n")).splitlines()
        _BUILTINS.update(n.rsplit(".", 1)[-1].lower() for n in listed)


class _Parser:
    """The session's parser, equal to any other (the cache keys on the text only: every
    session of a process parses alike)."""

    def __init__(self, parser: Any, jvm: Any) -> None:
        self.parser, self.jvm = parser, jvm

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Parser)

    def __hash__(self) -> int:
        return 0

    def tree(self, kind: str, text: str) -> list[dict[str, Any]]:
        from py4j.protocol import Py4JError, Py4JJavaError
        from pyspark.errors import PySparkException

        parse = self.parser.parsePlan if kind == "query" else self.parser.parseExpression
        try:
            parsed = parse(text)
            if _CASE.search(text):
                size = _JsonSize(self.jvm)
                if size.of(parsed) is None:
                    raise QueryError(f"the {kind} is too large to check: {size.why()}")
            return json.loads(parsed.toJSON())
        except PySparkException as e:
            raise QueryError(_first_line(e)) from None
        except Py4JJavaError as e:
            if _stack_overflow(e):
                deep = f"the {kind} is nested too deeply: Spark ran out of stack"
                raise QueryError(deep) from None
            raise NotAdmittedError(f"the {kind} cannot be checked ({_first_line(e)})") from None
        except Py4JError as e:  # a node that cannot say what it is: refuse, never guess
            raise NotAdmittedError(f"the {kind} cannot be checked ({_first_line(e)})") from None


def _stack_overflow(e: Any) -> bool:
    """Whether a JVM error is a StackOverflowError (over-deep input)."""
    try:
        return e.java_exception.getClass().getName() == "java.lang.StackOverflowError"
    except Exception:  # the JVM could not say: not known to be one
        return False


class _JsonSize:
    """How many nodes ``toJSON()`` would write for a parsed tree, counted without writing
    them, as Spark's ``TreeNode.jsonValue`` writes them: every node of the tree once, plus,
    in full, every tree a node's own fields hold other than as a child reference (inside a
    tuple, a list mixing other values, an Option). Each distinct JVM object is measured once
    (a memo by identity), so shared subtrees cost one walk however often they are written.
    :meth:`of` is None past :data:`MAX_TREE` nodes or :data:`MAX_WALK` parts."""

    def __init__(self, jvm: Any) -> None:
        for_name = jvm.java.lang.Class.forName
        self.tree = for_name("org.apache.spark.sql.catalyst.trees.TreeNode")
        self.seq = for_name("scala.collection.Seq")
        self.iterable = for_name("scala.collection.Iterable")
        self.option = for_name("scala.Option")
        self.product = for_name("scala.Product")
        self.memo = jvm.java.util.IdentityHashMap()
        self.walked = 0

    def of(self, root: Any) -> int | None:
        stack: list[tuple[Any, list[Any] | None]] = [(root, None)]
        while stack:
            node, parts = stack.pop()
            if parts is not None:
                total = 1 + sum(self.memo.get(p) for p in parts)
                if total > MAX_TREE:
                    return None
                self.memo.put(node, total)
                continue
            if self.memo.containsKey(node):
                continue
            self.walked += 1
            if self.walked > MAX_WALK:
                return None
            children = _items(node.children())
            parts = children + self._inline(node)
            stack.append((node, parts))
            stack.extend((p, None) for p in parts)
        return self.memo.get(root)

    def why(self) -> str:
        """Why :meth:`of` gave up."""
        if self.walked > MAX_WALK:
            return f"it has CASE expressions and more than {MAX_WALK:,} parts"
        return (
            f"its CASE expressions nest too deeply (Spark would write out more than "
            f"{MAX_TREE:,} nodes of it)"
        )

    def _inline(self, node: Any) -> list[Any]:
        """The trees ``node``'s fields hold that its JSON writes out in full."""
        from py4j.java_gateway import JavaObject

        out: list[Any] = []
        children = node.containsChild()

        def field(value: Any, top: bool) -> None:
            if not isinstance(value, JavaObject):
                return
            if self.tree.isInstance(value):
                if not (top and children.contains(value)):
                    out.append(value)
            elif self.iterable.isInstance(value):
                items = _items(value)
                if (
                    top
                    and self.seq.isInstance(value)
                    and all(_is_child(self.tree, children, i) for i in items)
                ):
                    return  # written as child references
                for item in items:
                    field(item, False)
            elif self.option.isInstance(value):
                if value.isDefined():
                    field(value.get(), False)
            elif self.product.isInstance(value):
                for i in range(value.productArity()):
                    field(value.productElement(i), False)

        for i in range(node.productArity()):
            field(node.productElement(i), True)
        return out


def _items(seq: Any) -> list[Any]:
    it = seq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _is_child(tree: Any, children: Any, value: Any) -> bool:
    from py4j.java_gateway import JavaObject

    return isinstance(value, JavaObject) and tree.isInstance(value) and children.contains(value)


@functools.lru_cache(maxsize=2048)
def _cached(kind: str, text: str, parser: _Parser) -> Admitted:
    tree = parser.tree(kind, text)
    walk = _Walk(kind)
    if kind == "query":
        root = _short(tree[0]["class"]) if tree else ""
        if root in COMMANDS:
            walk.command = root
    walk.visit(tree)
    tables, seen = table_references(tree)
    if seen != walk.relation_nodes:
        raise NotAdmittedError(f"the {kind} cannot be checked (its CTE scopes are unclear)")
    if walk.ctes:
        _expansion(kind, tree)
    _inlining(kind, tree)
    return Admitted(frozenset(walk.relations | tables), frozenset(walk.ctes), walk.command)


def _expansion(kind: str, tree: list[dict[str, Any]]) -> None:
    """Refuse a statement that Spark would make more than :data:`MAX_EXPANDED` nodes, and
    larger than it is written, by putting each CTE's definition in place of each reference
    to it: ``WITH a1 AS (… a0 UNION ALL … a0), a2 AS (… a1 … a1) …`` doubles with each CTE,
    and 16 of them ran the server out of memory. A name counts as the largest CTE of that
    name (an upper bound: shadowing is not worked out)."""
    sizes: dict[str, int] = {}

    def size(value: Any) -> int:
        """Nodes of ``value`` with its CTE references replaced; a CTE's definition counts
        only where it is referenced."""
        if isinstance(value, list):
            return sum(size(v) for v in value)
        if not isinstance(value, dict):
            return 0
        cls = _short(str(value.get("class", "")))
        total = 1 if cls else 0
        if cls == _RELATION:
            parts = name_parts(value.get("multipartIdentifier"))
            total += sizes.get(parts[0].lower(), 0) if len(parts) == 1 else 0
        for key, item in value.items():
            if cls != _CTE or key != "cteRelations":
                total += size(item)
                continue
            for rel in item or ():  # in order: each sees the ones before it
                if isinstance(rel, dict) and isinstance(rel.get("_1"), str):
                    name = rel["_1"].lower()
                    sizes[name] = max(sizes.get(name, 0), size(rel.get("_2")))
        return total

    expanded = size(tree)
    if expanded > MAX_EXPANDED and expanded > sum(1 for _ in _nodes(tree)):
        raise QueryError(
            f"the {kind} is too large to run: with each reference to a CTE replaced by its "
            f"definition, as Spark runs it, it has more than {MAX_EXPANDED:,} nodes"
        )


def _inlining(kind: str, tree: list[dict[str, Any]]) -> None:
    """Refuse a statement whose aliases, each reference replaced by the expression it
    names, would be more than :data:`MAX_INLINED` nodes: Spark's optimizer does that with
    constants, so ``SELECT 1 AS a0, a0 + a0 AS a1, a1 + a1 AS a2 …`` (or the same through
    nested subqueries) doubles with each alias, and 27 of them took a minute. A name counts
    as the largest alias of that name (an upper bound)."""
    aliases: dict[str, int] = {}
    cap = MAX_INLINED + 1

    def value(item: Any) -> int:
        if isinstance(item, list):
            if item and all(isinstance(n, dict) and "class" in n for n in item):
                return listing(item)
            return min(sum(value(i) for i in item), cap)  # in order: LATERAL aliases
        if isinstance(item, dict):
            return min(sum(value(v) for v in item.values()), cap)
        return 0

    def listing(nodes: list[dict[str, Any]]) -> int:
        """A tree as Spark writes it (nodes in pre-order, each with its ``num-children``),
        leaves first: a child's aliases are known before its parent's references."""
        sizes: list[int] = []
        for node in reversed(nodes):
            n = node.get("num-children")
            kids = [sizes.pop() for _ in range(n if isinstance(n, int) else 0) if sizes]
            size = 1 + sum(kids) + sum(value(v) for k, v in node.items() if k != "class")
            cls = _short(str(node["class"]))
            if cls == "analysis.UnresolvedAttribute":
                size += aliases.get(name_parts(node.get("nameParts"))[-1].lower(), 0)
            elif cls == "expressions.Alias" and isinstance(node.get("name"), str):
                name = node["name"].lower()
                aliases[name] = max(aliases.get(name, 0), min(sum(kids), cap))
            sizes.append(min(size, cap))
        return min(sum(sizes), cap)

    if value(tree) > MAX_INLINED:
        raise QueryError(
            f"the {kind} is too large to run: with each reference to an alias replaced by "
            f"its expression, as Spark's optimizer does, it has more than {MAX_INLINED:,} nodes"
        )


def _nodes(value: Any) -> Any:
    if isinstance(value, list):
        for item in value:
            yield from _nodes(item)
    elif isinstance(value, dict):
        if "class" in value:
            yield value
        for item in value.values():
            yield from _nodes(item)


class _Walk:
    """One pass over the JSON of a parsed tree: every node anywhere (children, fields,
    nested plans of subqueries and CTEs) is checked."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.command: str | None = None
        self.relations: set[str] = set()
        self.relation_nodes = 0
        self.ctes: set[str] = set()

    def visit(self, value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                self.visit(item)
        elif isinstance(value, dict):
            if "class" in value:
                self.node(value)
            for item in value.values():
                self.visit(item)

    def node(self, n: dict[str, Any]) -> None:
        cls = _short(n["class"])
        if (
            cls in EXPRESSIONS
            or (self.kind == "query" and cls in PLANS)
            or (self.command is not None and cls in COMMANDS)
        ):
            pass
        elif cls in PLANS:
            raise NotAdmittedError(
                "a subquery is not admitted in a SET, WHERE or computed-column expression"
            )
        else:
            raise NotAdmittedError(f"'{_describe(cls)}' is not admitted: {ADMITS}")
        hidden = [k for k, v in n.items() if v is None and (cls, k) not in OPAQUE_FIELDS]
        if hidden:  # Spark writes a field it cannot serialize as null: it could hold a tree
            raise NotAdmittedError(
                f"'{_describe(cls)}' cannot be checked (its {', '.join(hidden)} is not "
                f"visible to the sandbox): {ADMITS}"
            )
        check = _CHECKS.get(cls)
        if check is not None:
            check(self, n)

    # -- names ------------------------------------------------------------------------
    def relation(self, n: dict[str, Any]) -> None:
        parts = name_parts(n.get("multipartIdentifier"))
        if len(parts) != 1:
            raise NotAdmittedError(
                f"'{'.'.join(parts)}' is not admitted: a table is named by one plain name; "
                f"a second part reads a file or another catalog ({ADMITS})"
            )
        if n.get("options") not in (None, {}):
            raise NotAdmittedError(f"'{parts[0]}' takes no options: {ADMITS}")
        self.relation_nodes += 1  # a table or a CTE: scope.table_references decides

    def table_or_view(self, n: dict[str, Any]) -> None:
        parts = name_parts(n.get("multipartIdentifier"))
        if len(parts) != 1:
            raise NotAdmittedError(f"'{'.'.join(parts)}' is not admitted: {ADMITS}")
        self.relations.add(parts[0])

    def cte(self, n: dict[str, Any]) -> None:
        for rel in n.get("cteRelations") or ():
            if isinstance(rel, dict) and isinstance(rel.get("_1"), str):
                self.ctes.add(rel["_1"])

    def function(self, n: dict[str, Any]) -> None:
        parts = name_parts(n.get("nameParts"))
        if n.get("isInternal"):
            raise NotAdmittedError(f"'{'.'.join(parts)}' is an internal function: {ADMITS}")
        _function(parts, FUNCTIONS)

    def generator(self, n: dict[str, Any]) -> None:
        name = n.get("name")
        if not isinstance(name, dict) or name.get("database") or name.get("catalog"):
            raise NotAdmittedError(f"a qualified generator name is not admitted: {ADMITS}")
        _function([str(name.get("funcName", ""))], FUNCTIONS)

    def table_function(self, n: dict[str, Any]) -> None:
        _function(name_parts(n.get("name")), TABLE_FUNCTIONS)


_CHECKS = {
    _RELATION: _Walk.relation,
    "analysis.UnresolvedTableOrView": _Walk.table_or_view,
    _CTE: _Walk.cte,
    "analysis.UnresolvedFunction": _Walk.function,
    "analysis.UnresolvedGenerator": _Walk.generator,
    "analysis.UnresolvedTableValuedFunction": _Walk.table_function,
}


def _function(parts: list[str], allowed: frozenset[str]) -> None:
    name = parts[0].lower() if len(parts) == 1 else ".".join(parts)
    why = DENIED_FUNCTIONS.get(name)
    if why is not None:
        raise NotAdmittedError(f"'{parts[0]}' is not admitted: {why} ({ADMITS})")
    if len(parts) != 1 or (name not in allowed and name in _BUILTINS):
        raise NotAdmittedError(f"'{'.'.join(parts)}' is not an admitted function: {ADMITS}")


def _short(cls: str) -> str:
    return cls[len(_CATALYST) :] if cls.startswith(_CATALYST) else cls


def _describe(cls: str) -> str:
    """A node class as a user recognises it: ``InsertIntoDir``, ``AddJarsCommand``."""
    return cls.rsplit(".", 1)[-1].split("$", 1)[0] or cls


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__

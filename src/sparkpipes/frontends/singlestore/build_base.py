"""What every statement family's builder shares: the ``Builder`` base class and helpers
for turning a Lark parse tree into AST nodes.

The base class holds the plumbing (errors located in the script, dispatch on the statement's
rule) and the values all families read: names, strings, numbers, integers in range,
expressions kept as text, literals, data types. Each family adds its statements in its own
module (``build_tables``, ``build_pipelines``, ``build_procedures``, ``build_queries``,
``build_session``, ``build_users``); ``parser`` composes them into one builder. The tree
helpers (``_sub``, ``_tok``, ``_start`` …) are the families' shared vocabulary and are
imported by them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NoReturn

from lark import Token, Tree

from sparkpipes.frontends.singlestore import script
from sparkpipes.frontends.singlestore.ast_base import (
    DataType,
    Expr,
    Literal,
    Statement,
    StructField,
)
from sparkpipes.frontends.singlestore.ast_pipelines import Assignment
from sparkpipes.frontends.singlestore.errors import ParseError, SemanticError, position

_MAX_TYPE_DEPTH = 32
_MAX_INT_BITS = 4096  # far below Python's int-to-text limit, so to_sql() can print it
_MAX_BIGINT = 2**63 - 1  # options and limits are BIGINTs, as in SingleStore

# Known type names and how many (…) parameters each takes.
_TYPE_PARAMS: dict[str, int] = {
    **dict.fromkeys(
        ["TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "BIT", "BYTE", "SHORT"],
        1,
    ),
    **dict.fromkeys(["BOOLEAN", "BOOL", "JSON", "DATE", "YEAR", "VARIANT", "STRING"], 0),
    **dict.fromkeys(["GEOGRAPHY", "GEOGRAPHYPOINT", "BSON"], 0),
    **dict.fromkeys(["FLOAT", "DOUBLE", "REAL", "DECIMAL", "DEC", "NUMERIC"], 2),
    **dict.fromkeys(["CHAR", "VARCHAR", "BINARY", "VARBINARY", "TEXT", "BLOB"], 1),
    **dict.fromkeys(["TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "TINYBLOB", "MEDIUMBLOB"], 0),
    **dict.fromkeys(["LONGBLOB", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"], 0),
    "LONG": 1,
    **dict.fromkeys(["TIME", "DATETIME", "TIMESTAMP"], 1),
}
_NUMERIC_TYPES = frozenset(
    """TINYINT SMALLINT MEDIUMINT INT INTEGER BIGINT BYTE SHORT LONG
    FLOAT DOUBLE REAL DECIMAL DEC NUMERIC""".split()  # noqa: SIM905
)
_GENERIC_TYPES = {"ARRAY": 1, "MAP": 2, "STRUCT": None}
#: the parse-tree rules that are a column type
TYPE_TREES = ("data_type", "generic_type", "member_type", "element_type")
#: VECTOR's element types and the Spark type each is stored as
VECTOR_ELEMENTS = {
    "F32": "FLOAT",
    "F64": "DOUBLE",
    "F16": "FLOAT",
    "I8": "TINYINT",
    "I16": "SMALLINT",
    "I32": "INT",
    "I64": "BIGINT",
}
#: types of a list of strings, and how many they take (SingleStore's limits)
_MEMBER_TYPES = {"ENUM": 65_535, "SET": 64}

_UNESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _shown(value: str) -> str:
    first = value.split("\n", 1)[0]
    return first if len(first) <= 40 else first[:39] + "…"


# ---------------------------------------------------------------------------- tree helpers


def _subs(tree: Tree, *data: str) -> list[Tree]:
    return [c for c in tree.children if isinstance(c, Tree) and c.data in data]


def _sub(tree: Tree, *data: str) -> Tree | None:
    found = _subs(tree, *data)
    return found[0] if found else None


def _kw(tree: Tree, index: int = 0) -> Any:
    """The type of the token at ``children[index]``: which keyword was written."""
    tok = tree.children[index]
    assert isinstance(tok, Token)
    return str(tok.type)


def _at(tree: Tree, index: int) -> Tree:
    node = tree.children[index]
    assert isinstance(node, Tree)
    return node


def _tok(tree: Tree, *types: str) -> Token | None:
    for c in tree.children:
        if isinstance(c, Token) and c.type in types:
            return c
    return None


# A node inlined by a ``?rule`` has its own meta narrowed to its child; the container
# positions cover the whole rule it came from (a unary minus, say).
def _start(node: Tree | Token) -> int:
    if isinstance(node, Token):
        return node.start_pos or 0
    meta = node.meta
    return 0 if meta.empty else getattr(meta, "container_start_pos", meta.start_pos)


def _end(node: Tree | Token) -> int:
    if isinstance(node, Token):
        return node.end_pos or 0
    meta = node.meta
    return 0 if meta.empty else getattr(meta, "container_end_pos", meta.end_pos)


def unquote_string(literal: str) -> str:
    """The value of a string literal token: backslash escapes and doubled quotes decoded."""
    quote, body = literal[0], literal[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "%_":
                out.append("\\" + nxt)
            else:
                out.append(_UNESCAPES.get(nxt, nxt))
            i += 2
        elif c == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Builder:
    """Turns the parse tree of one statement into its AST node, checking what the grammar
    cannot (duplicate clauses, value ranges, JSON, types); this base holds what every
    statement family needs, the families' subclasses their statements."""

    def __init__(self, text: str, span: script.Span) -> None:
        self.text = text
        self.base = span.start
        self.stmt = text[span.start : span.end]

    def fail(
        self, message: str, node: Tree | Token, cls: type[ParseError] = SemanticError
    ) -> NoReturn:
        start = _start(node)
        self.fail_at(message, start, max(_end(node), start + 1), cls)

    def fail_at(
        self, message: str, start: int, end: int, cls: type[ParseError] = SemanticError
    ) -> NoReturn:
        line, column, source_line = position(self.text, self.base + start)
        token = _shown(self.stmt[start:end])
        raise cls(message, line, column, token, self.stmt, source_line=source_line)

    def build(self, tree: Tree) -> Statement:
        stmt = tree.children[0]
        assert isinstance(stmt, Tree)
        self.databases: list[str] = []
        built = getattr(self, f"_{stmt.data}")(stmt)
        if self.databases:
            return dataclasses.replace(built, databases=tuple(dict.fromkeys(self.databases)))
        return built

    def name(self, tree: Tree | None) -> str:
        """The identifier of a ``name`` node; of ``db.name``, the name, with ``db`` kept
        in the statement's ``databases``."""
        assert tree is not None
        tok = tree.children[0]
        if isinstance(tok, Tree):
            *qualifiers, last = self.parts(tree)
            self.databases.append(qualifiers[0])
            return last
        assert isinstance(tok, Token)
        if tok.type == "QUOTED_IDENT":
            value = tok.value[1:-1].replace("``", "`")
            if not value:
                self.fail("empty identifier", tok)
            return value
        return tok.value

    def parts(self, tree: Tree) -> tuple[str, ...]:
        """Each identifier of a name that may be qualified (``a``, ``a.b``, ``a.b.c``)."""
        if isinstance(tree.children[0], Tree):
            return tuple(self.name(c) for c in _subs(tree, "name"))
        return (self.name(tree),)

    def names(self, tree: Tree | None) -> tuple[str, ...]:
        return () if tree is None else tuple(self.name(n) for n in _subs(tree, "name"))

    def string(self, tok: Token | None) -> str:
        assert tok is not None
        return unquote_string(tok.value)

    def number(self, tok: Token, negative: bool = False) -> int | float:
        text = tok.value
        try:
            if text[:2].lower() == "0x":
                value: int | float = int(text, 16)
            elif text.isdigit():
                value = int(text)
            else:
                value = float(text)
        except ValueError:
            self.fail("number is too large", tok)
        if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
            self.fail("number is too large", tok)
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            self.fail("number is out of range", tok)
        return -value if negative else value

    def integer(self, tree: Tree | None, minimum: int, what: str) -> int:
        assert tree is not None
        tok = _tok(tree, "NUMBER")
        assert tok is not None
        value = self.number(tok, negative=_tok(tree, "MINUS") is not None)
        if not isinstance(value, int):
            self.fail(f"{what} must be an integer", tok)
        if value < minimum:
            self.fail(f"{what} must be at least {minimum}, got {value}", tree)
        if value > _MAX_BIGINT:
            self.fail(f"{what} must be at most {_MAX_BIGINT}", tree)
        return value

    def expr(self, tree: Tree | None) -> Expr:
        assert tree is not None
        return Expr(script.normalize(self.stmt[_start(tree) : _end(tree)]))

    def literal(self, tree: Tree) -> Literal:
        kind = tree.data
        if kind == "lit_string":
            return Literal("string", self.string(_tok(tree, "STRING")))
        if kind == "lit_number":
            tok = _tok(tree, "NUMBER")
            assert tok is not None
            return Literal("number", self.number(tok, _tok(tree, "MINUS") is not None))
        if kind in ("lit_true", "lit_false"):
            return Literal("boolean", kind == "lit_true")
        return Literal("null", None)

    def assignments(self, item: Tree, clause: str) -> tuple[Assignment, ...]:
        """``col = expr, …`` of ``clause``, each column once."""
        assigned: dict[str, Any] = {}
        out = []
        for assignment in _subs(item, "assignment"):
            column = self.name(_sub(assignment, "name"))
            self.once(assigned, column, assignment, f"{clause} of column '{column}'")
            out.append(Assignment(column, self.expr(_sub(assignment, "expr_text"))))
        return tuple(out)

    def once(self, seen: dict[str, Any], key: str, node: Tree | Token, what: str) -> None:
        if key in seen:
            self.fail(f"{what} is given more than once", node)
        seen[key] = node

    def data_type(self, tree: Tree, depth: int = 0) -> DataType:
        if depth > _MAX_TYPE_DEPTH:
            self.fail("type is nested too deeply", tree)
        if tree.data == "query_type":
            fields = tuple(self.query_field(f, depth) for f in _subs(tree, "query_field"))
            return DataType("QUERY", fields=fields)
        type_name = _sub(tree, "type_name")
        assert type_name is not None
        name = str(type_name.children[0]).upper()
        if tree.data == "generic_type":
            return self.generic_type(tree, name, type_name, depth)
        if tree.data == "member_type":
            return self.member_type(tree, name, type_name)
        if tree.data == "element_type" or name == "VECTOR":
            return self.vector_type(tree, name, type_name)
        if name in _MEMBER_TYPES:
            self.fail(f"{name} needs its members: {name}('a', 'b', …)", type_name)
        if name in _GENERIC_TYPES:
            self.fail(f"{name} needs its element types in <…>", type_name)
        if name not in _TYPE_PARAMS:
            self.fail(f"unknown type '{type_name.children[0]}'", type_name)
        params_tree = _sub(tree, "type_params")
        params: list[int] = []
        for tok in [] if params_tree is None else params_tree.children:
            assert isinstance(tok, Token)
            value = self.number(tok)
            if not isinstance(value, int):
                self.fail("type parameters must be integers", tok)
            params.append(value)
        if len(params) > _TYPE_PARAMS[name]:
            assert params_tree is not None
            self.fail(f"{name} takes at most {_TYPE_PARAMS[name]} parameter(s)", params_tree)
        unsigned = _tok(tree, "UNSIGNED")
        if unsigned is not None and name not in _NUMERIC_TYPES:
            self.fail(f"{name} cannot be UNSIGNED", unsigned)
        return DataType(name, tuple(params), unsigned=unsigned is not None)

    def vector_type(self, tree: Tree, name: str, at: Tree) -> DataType:
        """``VECTOR(n[, element])``: n elements (1 to 16,383, SingleStore's limit) of
        ``F32`` (the default), ``F64``, ``F16``, ``I8``, ``I16``, ``I32`` or ``I64``."""
        if name != "VECTOR":
            self.fail(f"{name} does not take an element type", at)
        params = _sub(tree, "type_params")
        numbers = [
            t for t in (params or tree).children if isinstance(t, Token) and t.type == "NUMBER"
        ]
        if len(numbers) != 1 or not numbers[0].value.isdigit():
            self.fail("VECTOR takes its number of elements: VECTOR(n[, F32|F64|I8|…])", at)
        n = int(numbers[0].value)
        if not 1 <= n <= 16_383:
            self.fail("VECTOR takes 1 to 16383 elements", numbers[0])
        element = _tok(tree, "IDENT")
        kind = "F32" if element is None else element.value.upper()
        if kind not in VECTOR_ELEMENTS:
            assert element is not None
            self.fail(f"VECTOR elements are one of {', '.join(VECTOR_ELEMENTS)}", element)
        return DataType(name, (n,), element=kind)

    def member_type(self, tree: Tree, name: str, at: Tree) -> DataType:
        """``ENUM('a', …)`` / ``SET('a', …)``: members distinct, trailing spaces cut off
        (MySQL's rule), a SET's without commas."""
        if name not in _MEMBER_TYPES:
            self.fail(f"{name} does not take a list of strings", at)
        members: list[str] = []
        for tok in tree.children:
            if not isinstance(tok, Token) or tok.type != "STRING":
                continue
            member = self.string(tok).rstrip(" ")
            if member.lower() in (m.lower() for m in members):
                self.fail(f"{name} has the member '{_shown(member)}' twice", tok)
            if name == "SET" and "," in member:
                self.fail("a SET member cannot hold a comma", tok)
            members.append(member)
        if len(members) > _MEMBER_TYPES[name]:
            self.fail(f"{name} takes at most {_MEMBER_TYPES[name]} members", at)
        return DataType(name, members=tuple(members))

    def generic_type(self, tree: Tree, name: str, at: Tree, depth: int) -> DataType:
        if name not in _GENERIC_TYPES:
            self.fail(f"{name} does not take <…> arguments", at)
        items = [c for c in tree.children if isinstance(c, Tree) and c is not at]
        if name == "STRUCT":
            for item in items:
                if item.data != "struct_field":
                    self.fail("STRUCT members need a name (name: type)", item)
            return DataType(name, fields=tuple(self.struct_field(f, depth) for f in items))
        for item in items:
            if item.data == "struct_field":
                self.fail(f"{name} takes types, not named fields", item)
        if len(items) != _GENERIC_TYPES[name]:
            self.fail(f"{name} takes {_GENERIC_TYPES[name]} type argument(s)", at)
        return DataType(name, args=tuple(self.data_type(i, depth + 1) for i in items))

    def query_field(self, tree: Tree, depth: int) -> StructField:
        dtype = next(
            c
            for c in tree.children
            if isinstance(c, Tree) and c.data in (*TYPE_TREES, "query_type")
        )
        return StructField(
            self.name(_sub(tree, "name")),
            self.data_type(dtype, depth + 1),
            not_null=_sub(tree, "query_not_null") is not None,
        )

    def struct_field(self, tree: Tree, depth: int) -> StructField:
        dtype = tree.children[-1]
        assert isinstance(dtype, Tree)
        return StructField(self.name(_sub(tree, "name")), self.data_type(dtype, depth + 1))

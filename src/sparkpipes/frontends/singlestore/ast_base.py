"""Base of the typed AST: ``Node`` and ``Statement``, how names and strings are quoted, and
the leaves every statement family shares (``Expr``, ``Literal``, ``DataType``).

Every node is a frozen dataclass holding tuples, never lists, so nodes are hashable and
compare by value. ``to_sql()`` renders canonical SQL (upper-case keywords, single-quoted
strings, identifiers backquoted only where needed) and for every parsed statement ``s``
``parse_one(s.to_sql()) == s``.

Expressions, queries and procedure bodies are not modelled: they are kept as their source
text with comments removed and whitespace outside literals collapsed (see ``Expr``), which
is what they compare by.

The statements themselves live one family to a module (``ast_tables``, ``ast_pipelines``,
``ast_procedures``, ``ast_queries``, ``ast_session``, ``ast_users``), each building on this
one; ``ast`` gathers them under one name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as Lit

from sparkpipes.frontends.singlestore import grammar

_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT_CHARS = _IDENT_START | frozenset("0123456789$")
_STRING_ESCAPES = {
    "\\": "\\\\",
    "'": "\\'",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\0": "\\0",
    "\b": "\\b",
    "\x1a": "\\Z",
}


def quote_ident(name: str) -> str:
    """``name`` as it must be written to read back as that identifier."""
    if (
        name
        and name[0] in _IDENT_START
        and all(c in _IDENT_CHARS for c in name)
        and name.upper() not in grammar.identifier_keywords()
    ):
        return name
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
    """``value`` as a single-quoted SQL string literal that reads back as ``value``."""
    return "'" + "".join(_STRING_ESCAPES.get(c, c) for c in value) + "'"


class Node:
    """Base of all AST nodes."""

    def to_sql(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Statement(Node):
    """Base of the statement nodes returned by ``parse``.

    ``databases``: the database names the statement qualifies its names with (``db.t``),
    which must name the warehouse's database when it runs; the names themselves are kept
    bare, so a statement compares and prints the same with or without them.
    """

    databases: tuple[str, ...] = field(default=(), kw_only=True, compare=False, repr=False)


# ---------------------------------------------------------------------------- leaves


@dataclass(frozen=True)
class Expr(Node):
    """An expression kept as text, to be handed to Spark SQL.

    ``text`` is the source span with comments removed (optimizer hints ``/*+ … */`` kept)
    and whitespace outside string literals and quoted identifiers collapsed to one space.
    """

    text: str

    def to_sql(self) -> str:
        return self.text


LiteralKind = Lit["string", "number", "boolean", "null", "word", "call"]


@dataclass(frozen=True)
class Literal(Node):
    """A constant: a string, a number, TRUE/FALSE, NULL, a bare word such as ``ON`` or
    ``CURRENT_TIMESTAMP`` (kept as written), or a call such as ``NOW()`` (kept as text)."""

    kind: LiteralKind
    value: str | int | float | bool | None

    def to_sql(self) -> str:
        if self.kind == "string":
            return quote_string(str(self.value))
        if self.kind == "number":
            return repr(self.value)
        if self.kind == "boolean":
            return "TRUE" if self.value else "FALSE"
        if self.kind == "null":
            return "NULL"
        if self.kind == "word":
            return "ON" if self.value == "ON" else quote_ident(str(self.value))
        return str(self.value)


@dataclass(frozen=True)
class StructField(Node):
    """A named member of ``STRUCT<…>`` or of a procedure's ``QUERY(…)`` parameter type
    (where a member may be ``NOT NULL``: a batch row without it is a bad record)."""

    name: str
    type: DataType
    not_null: bool = False

    def to_sql(self) -> str:
        return f"{quote_ident(self.name)}: {self.type.to_sql()}"


@dataclass(frozen=True)
class DataType(Node):
    """A column or parameter type: ``name`` upper-cased as spelled (``VARCHAR``, ``BIGINT``,
    ``ARRAY``), numeric ``params`` (``DECIMAL(10,2)``), element types ``args``
    (``ARRAY<T>``, ``MAP<K, V>``), ``fields`` (``STRUCT<a: T>``, ``QUERY(a T)``) and
    ``members`` (``ENUM('a', 'b')``)."""

    name: str
    params: tuple[int, ...] = ()
    args: tuple[DataType, ...] = ()
    fields: tuple[StructField, ...] = ()
    unsigned: bool = False
    #: the members of ``ENUM('a', 'b')`` / ``SET('a', 'b')``, as declared
    members: tuple[str, ...] = ()
    #: the element type of ``VECTOR(n, I16)`` (``F32`` when not written)
    element: str = ""

    @property
    def text(self) -> str:
        """The normalized spelling, e.g. ``DECIMAL(10,2)`` or ``MAP<STRING, INT>``."""
        return self.to_sql()

    def to_sql(self) -> str:
        if self.name == "QUERY":
            inner = ", ".join(
                f"{quote_ident(f.name)} {f.type.to_sql()}{' NOT NULL' if f.not_null else ''}"
                for f in self.fields
            )
            return f"QUERY({inner})"
        if self.fields:
            return f"{self.name}<{', '.join(f.to_sql() for f in self.fields)}>"
        if self.args:
            return f"{self.name}<{', '.join(a.to_sql() for a in self.args)}>"
        out = self.name
        if self.members:
            return out + "(" + ",".join(quote_string(m) for m in self.members) + ")"
        if self.element:
            return f"{out}({self.params[0]}, {self.element})"
        if self.params:
            out += "(" + ",".join(str(p) for p in self.params) + ")"
        return out + (" UNSIGNED" if self.unsigned else "")

"""The part of Jayway JsonPath (json-path/JsonPath: ``PathCompiler``, ``FilterCompiler``,
``EvaluatorFactory``, ``ValueNodes``, the path tokens) that Confluent's ``Filter`` docs and
the configs people write use, evaluated exactly as Jayway evaluates it on one record.

Compiled: a path from ``$`` of properties (``.name``, ``['name']``), array indices
(``[2]``, ``[-1]``) and filters ``[?(…)]``; in a filter, ``@``/``$`` paths of properties
and indices, literals (``'text'``, ``"text"``, numbers, ``true``, ``false``, ``null``,
``/regex/flags`` with flags ``i``, ``m``, ``s``), the operators ``==``, ``!=``, ``<``,
``<=``, ``>``, ``>=``, ``=~``, an existence test (``@.x``, ``!@.x``), ``&&``, ``||``,
``!`` and parentheses. Anything else (deep scan ``..``, wildcards, slices, unions,
functions, JSON literals, ``in``, ``size``, ``contains`` …) is refused by name.

Evaluated as Jayway does: a filter on an object tests the object itself, on an array
each element; a property missing before a filter on a definite path, or a property of
something that is not an object there, is ``PathNotFoundException`` (:class:`Missing`);
inside a filter a missing value is *undefined* and matches nothing but ``!=``. Numbers
compare as ``BigDecimal`` (a document's float as Java's ``Double.toString`` writes
it), text with text by UTF-16 code units; ``==`` between text and a number compares
their text (``'7' == 7``) as Jayway's ``StringNode``/``NumberNode`` do; ``=~`` matches a
whole text (a number's or boolean's text; ``""`` for anything else), any element of an
array. Values a filter cannot compare exactly — Connect's logical types (timestamps,
dates, decimals), bytes, floats that are not finite — refuse the record
(:class:`NotComparable`) rather than guess how Confluent hands them to JsonPath.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sparkpipes.util.regex import compile_user

_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RELATIONAL = "<>=~!"
SUPPORTED_OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "=~")
#: Jayway's other operators, refused by name
OTHER_OPERATORS = frozenset(
    {"===", "!==", "in", "nin", "subsetof", "anyof", "noneof", "all", "size", "empty"}
    | {"contains", "matches", "type"}
)
_FLAGS = {"i": "i", "m": "m", "s": "s"}


class Unsupported(ValueError):
    """A path or filter construct not compiled here (the message names it)."""


class Missing(Exception):
    """Jayway's ``PathNotFoundException`` on the record."""


class NotComparable(Exception):
    """A value the filter would compare whose JsonPath form is not known exactly."""


class Opaque:
    """A value of a type Confluent's conversion for JsonPath is not documented for."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


_UNDEF = ("undef", None)


# -- compiled form --------------------------------------------------------------------------
@dataclass(frozen=True)
class Path:
    root: str  # "$" or "@"
    steps: tuple[tuple[str, Any], ...]  # ("prop", name) | ("index", n) | ("filter", node)

    @property
    def has_filter(self) -> bool:
        return any(kind == "filter" for kind, _ in self.steps)


@dataclass(frozen=True)
class Node:
    """An expression: ``or``/``and`` (args), ``not`` (args[0]), ``rel`` (left, op, right),
    ``exists`` (path, should). Values: ``("path", Path)``, ``("lit", (kind, value))``,
    ``("pattern", compiled)``."""

    kind: str
    args: tuple[Any, ...]


def compile_path(text: str) -> Path:
    """``text`` compiled; Unsupported or ValueError (the message says what) otherwise."""
    return _PathParser(text.strip()).parse()


class _PathParser:
    def __init__(self, text: str) -> None:
        self.s, self.i = text, 0

    def parse(self, *, relative: bool = False) -> Path:
        s = self.s
        if not s or s[0] not in "$@":
            raise ValueError("a path starts with '$'")
        root, self.i = s[0], 1
        steps: list[tuple[str, Any]] = []
        while self.i < len(s):
            c = s[self.i]
            if s.startswith("..", self.i):
                raise Unsupported("deep scan '..' is not supported")
            if c == ".":
                self.i += 1
                name = self._name()
                if name == "*":
                    raise Unsupported("the wildcard '*' is not supported")
                if self.i < len(s) and s[self.i] == "(":
                    raise Unsupported(f"function {name}() is not supported")
                steps.append(("prop", name))
            elif c == "[":
                steps.append(self._bracket(relative))
            else:
                raise ValueError(f"unexpected '{c}' at position {self.i}")
        return Path(root, tuple(steps))

    def _name(self) -> str:
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in ".[( ":
            self.i += 1
        if self.i == start:
            raise ValueError(f"a property name is missing at position {start}")
        return self.s[start : self.i]

    def _bracket(self, relative: bool) -> tuple[str, Any]:
        end = _closing(self.s, self.i, "[", "]")
        inner = self.s[self.i + 1 : end].strip()
        self.i = end + 1
        if inner.startswith("?"):
            if relative:
                raise Unsupported("a filter inside a filter's path is not supported")
            return ("filter", _FilterParser(inner).parse())
        if inner in ("*", ""):
            raise Unsupported("the wildcard '[*]' is not supported")
        if inner[0] in "'\"":
            names = _quoted_list(inner)
            if len(names) != 1:
                raise Unsupported("several properties at once ('a','b') are not supported")
            return ("prop", names[0])
        if ":" in inner:
            raise Unsupported("array slices are not supported")
        if "," in inner:
            raise Unsupported("several array indexes at once are not supported")
        if not re.fullmatch(r"-?\d+", inner):
            raise ValueError(f"'[{inner}]' is not a property, an index or a filter")
        return ("index", int(inner))


def _closing(s: str, at: int, open_: str, close: str) -> int:
    """The index of the bracket closing the one at ``at`` (quotes skipped)."""
    depth, i, quote = 0, at, ""
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"'{open_}' at position {at} is not closed")


def _quoted_list(inner: str) -> list[str]:
    return [
        _unescape(m[1:-1]) for m in re.findall(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", inner)
    ]


def _unescape(text: str) -> str:
    """Jayway's ``Utils.unescape``."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append({"r": "\r", "f": "\f", "t": "\t", "n": "\n", "b": "\b"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class _FilterParser:
    """Jayway's ``FilterCompiler`` over ``?(…)`` (the text inside the brackets)."""

    def __init__(self, inner: str) -> None:
        text = inner[1:].strip()  # after '?'
        if not (text.startswith("(") and text.endswith(")")):
            raise ValueError("a filter is written [?(…)]")
        self.s, self.i = text, 0

    def parse(self) -> Node:
        node = self._or()
        self._blanks()
        if self.i < len(self.s):
            raise ValueError(f"unexpected '{self.s[self.i :]}' in the filter")
        return node

    def _blanks(self) -> None:
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def _take(self, token: str) -> bool:
        self._blanks()
        if self.s.startswith(token, self.i):
            self.i += len(token)
            return True
        return False

    def _or(self) -> Node:
        ops = [self._and()]
        while self._take("||"):
            ops.append(self._and())
        return ops[0] if len(ops) == 1 else Node("or", tuple(ops))

    def _and(self) -> Node:
        ops = [self._operand()]
        while self._take("&&"):
            ops.append(self._operand())
        return ops[0] if len(ops) == 1 else Node("and", tuple(ops))

    def _operand(self) -> Node:
        self._blanks()
        save = self.i
        if self._take("!"):
            self._blanks()
            if self.i < len(self.s) and self.s[self.i] in "$@":
                self.i = save
            else:
                return Node("not", (self._operand(),))
        if self._take("("):
            node = self._or()
            if not self._take(")"):
                raise ValueError("a '(' of the filter is not closed")
            return node
        return self._relation()

    def _relation(self) -> Node:
        left, negated = self._value()
        self._blanks()
        start = self.i
        while self.i < len(self.s) and self.s[self.i] in _RELATIONAL:
            self.i += 1
        if self.i == start:
            while self.i < len(self.s) and self.s[self.i] not in " )":
                self.i += 1
        op = self.s[start : self.i]
        if op in SUPPORTED_OPERATORS:
            right, _ = self._value()
            return Node("rel", (left, op, right))
        if op.lower() in OTHER_OPERATORS:
            raise Unsupported(f"the filter operator '{op}' is not supported")
        self.i = start
        if left[0] != "path":
            raise ValueError("a value alone is no condition (compare it, or test a path)")
        return Node("exists", (left[1], not negated))

    def _value(self) -> tuple[tuple[str, Any], bool]:
        self._blanks()
        s = self.s
        if self.i >= len(s):
            raise ValueError("the filter ends where a value is expected")
        negated = False
        if s[self.i] == "!":
            negated = True
            self.i += 1
            self._blanks()
        c = s[self.i] if self.i < len(s) else ""
        if c in "$@":
            return ("path", self._path()), negated
        if negated:
            raise ValueError("'!' is followed by a path (!@.field)")
        if c in "'\"":
            end = self.i + 1
            while end < len(s) and s[end] != c:
                end += 2 if s[end] == "\\" else 1
            if end >= len(s):
                raise ValueError("a text of the filter has no closing quote")
            text, self.i = s[self.i + 1 : end], end + 1
            return ("lit", ("str", _unescape(text))), False
        if c == "/":
            return ("pattern", self._pattern()), False
        if c in "{[":
            raise Unsupported("JSON literals ({…}, […]) in a filter are not supported")
        for word, lit in (
            ("true", ("bool", True)),
            ("false", ("bool", False)),
            ("null", ("null", None)),
        ):
            if s.startswith(word, self.i):
                self.i += len(word)
                return ("lit", lit), False
        start = self.i
        while self.i < len(s) and (s[self.i].isdigit() or s[self.i] in "-.eE"):
            self.i += 1
        number = s[start : self.i]
        if not _BIG_DECIMAL.fullmatch(number):
            raise ValueError(f"'{s[start:] or c}' is not a value of a filter")
        return ("lit", ("num", Decimal(number))), False

    def _path(self) -> Path:
        s, start = self.s, self.i
        self.i += 1
        while self.i < len(s):
            if s[self.i] == "[":
                self.i = _closing(s, self.i, "[", "]") + 1
                continue
            if s[self.i] in _RELATIONAL or s[self.i] in " )":
                break
            self.i += 1
        parser = _PathParser(s[start : self.i])
        return parser.parse(relative=True)

    def _pattern(self) -> Any:
        s = self.s
        end = self.i + 1
        while end < len(s) and s[end] != "/":
            end += 2 if s[end] == "\\" else 1
        if end >= len(s):
            raise ValueError("a /pattern/ of the filter is not closed")
        body, self.i = s[self.i + 1 : end], end + 1
        flags = ""
        while self.i < len(s) and s[self.i] in "dixmsuU":
            flags += s[self.i]
            self.i += 1
        other = sorted(set(flags) - set(_FLAGS))
        if other:
            raise Unsupported(f"the pattern flag '{other[0]}' is not supported (i, m and s are)")
        if "i" in flags and not body.isascii():
            raise Unsupported("flag i on a pattern with non-ASCII letters is not supported")
        prefix = f"(?{''.join(sorted(set(flags)))})" if flags else ""
        try:
            return compile_user(prefix + body)
        except ValueError as e:
            raise Unsupported(f"/{body}/ is not a pattern sparkpipes runs: {e}") from None


# -- evaluation -----------------------------------------------------------------------------
def matches(path: Path, document: Any) -> bool:
    """Whether ``path`` selects anything in ``document`` (Missing: Jayway's
    PathNotFoundException)."""
    found: list[Any] = []
    _walk(path.steps, 0, document, True, found, document)
    return bool(found)


def _walk(steps: Any, i: int, model: Any, definite: bool, found: list, root: Any) -> None:
    if i == len(steps):
        found.append(model)
        return
    kind, arg = steps[i]
    leaf = i == len(steps) - 1
    if kind == "prop":
        if not isinstance(model, dict):
            if definite:
                raise Missing(f"no object with property '{arg}' where the path expects one")
            return
        if arg not in model:
            if not leaf and definite:
                raise Missing(f"property '{arg}' is missing")
            return
        _walk(steps, i + 1, model[arg], definite, found, root)
    elif kind == "index":
        if not isinstance(model, list):
            if definite:
                raise Missing(f"no array where the path takes element [{arg}]")
            return
        at = arg if arg >= 0 else len(model) + arg
        if 0 <= at < len(model):
            _walk(steps, i + 1, model[at], definite, found, root)
    elif isinstance(model, dict):
        if _accept(arg, model, root):
            _walk(steps, i + 1, model, False, found, root)
    elif isinstance(model, list):
        for item in model:
            if _accept(arg, item, root):
                _walk(steps, i + 1, item, False, found, root)
    elif definite:
        if model is None:
            raise Missing("the filter meets null where it expects an object or an array")
        raise NotComparable("the filter meets a value that is not an object or an array")


def _accept(node: Node, item: Any, root: Any) -> bool:
    kind, args = node.kind, node.args
    if kind == "or":
        return any(_accept(a, item, root) for a in args)
    if kind == "and":
        return all(_accept(a, item, root) for a in args)
    if kind == "not":
        return not _accept(args[0], item, root)
    if kind == "exists":
        path, should = args
        return (
            _resolve(path, item, root) is not _ABSENT
            if should
            else _resolve(path, item, root) is _ABSENT
        )
    left, op, right = args
    return _compare(_node(left, item, root), op, _node(right, item, root))


_ABSENT = object()


def _resolve(path: Path, item: Any, root: Any) -> Any:
    """A definite path's value inside a filter, or _ABSENT."""
    model = root if path.root == "$" else item
    for kind, arg in path.steps:
        if kind == "prop":
            if not isinstance(model, dict) or arg not in model:
                return _ABSENT
            model = model[arg]
        else:
            if not isinstance(model, list):
                return _ABSENT
            at = arg if arg >= 0 else len(model) + arg
            if not 0 <= at < len(model):
                return _ABSENT
            model = model[at]
    return model


def _node(value: tuple[str, Any], item: Any, root: Any) -> tuple[str, Any]:
    kind, arg = value
    if kind == "lit":
        return arg
    if kind == "pattern":
        return ("pattern", arg)
    return _of(_resolve(arg, item, root))


def _of(v: Any) -> tuple[str, Any]:
    """A document value as Jayway's ValueNode (``PathNode.evaluate``)."""
    if v is _ABSENT:
        return _UNDEF
    if isinstance(v, Opaque):
        raise NotComparable(f"the filter compares a {v.kind} value")
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, Decimal):
        return ("num", v)
    if isinstance(v, str):
        return ("str", v)
    if v is None:
        return ("null", None)
    return ("json", v)


def _compare(left: tuple[str, Any], op: str, right: tuple[str, Any]) -> bool:
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op == "=~":
        return _regex(left, right)
    if left[0] == right[0] == "num":
        a, b = left[1], right[1]
    elif left[0] == right[0] == "str":
        a, b = left[1].encode("utf-16-be"), right[1].encode("utf-16-be")
    else:
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _text(node: tuple[str, Any]) -> str:
    return str(node[1])  # a BigDecimal's toString is a Decimal's str


def _equal(left: tuple[str, Any], right: tuple[str, Any]) -> bool:
    lk, rk = left[0], right[0]
    if lk == rk == "json":
        raise NotComparable("the filter compares two objects or arrays")
    if lk == "str":
        return rk in ("str", "num") and left[1] == (right[1] if rk == "str" else _text(right))
    if lk == "num":
        if rk == "num":
            return left[1] == right[1]
        if rk == "str" and _BIG_DECIMAL.fullmatch(right[1]):
            return left[1] == Decimal(right[1])
        return False
    if lk in ("bool", "null"):
        return rk == lk and left[1] == right[1]
    return False


def _regex(left: tuple[str, Any], right: tuple[str, Any]) -> bool:
    if (left[0] == "pattern") == (right[0] == "pattern"):
        return False
    pattern, other = (left[1], right) if left[0] == "pattern" else (right[1], left)
    if other[0] == "json" and isinstance(other[1], list):
        return any(pattern.fullmatch(_input(_element(e))) is not None for e in other[1])
    return pattern.fullmatch(_input(other)) is not None


def _input(node: tuple[str, Any]) -> str:
    """``RegexpEvaluator.getInput``."""
    if node[0] in ("str",):
        return str(node[1])
    if node[0] == "num":
        return _text(node)
    if node[0] == "bool":
        return "true" if node[1] else "false"
    return ""


def _element(v: Any) -> tuple[str, Any]:
    """An array element as ``ValueNode.toValueNode`` makes it."""
    if isinstance(v, str):
        trimmed = v.strip()
        if trimmed[:1] in ("$", "@") or (
            len(trimmed) > 1 and (trimmed[0], trimmed[-1]) in (("[", "]"), ("{", "}"))
        ):
            raise NotComparable("an array element JsonPath would read as a path or as JSON")
        if len(v) <= 1:
            return ("str", v)
        if v[0] == v[-1] and v[0] in "'\"":
            return ("str", _unescape(v[1:-1]))
        return ("str", _unescape(v))
    if isinstance(v, (dict, list)):
        raise NotComparable("the filter matches a pattern against an array of objects")
    return _of(v)

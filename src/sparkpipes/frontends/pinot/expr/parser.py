"""The tokenizer and recursive-descent parser of Pinot expressions: ``_Parser`` reads
the text and builds the typed SQL fragments, calling the functions in ``FUNCTIONS``."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from sparkpipes.config import FunctionCall
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import compare, geo
from sparkpipes.frontends.pinot.expr.budget import Budget
from sparkpipes.frontends.pinot.expr.core import (
    _INTEGRAL,
    _NOT,
    FUNCTIONS,
    _any,
    _as,
    _canonical,
    _cast_whole,
    _conv_fails,
    _Fail,
    _first_existing,
    _Literal,
    _Node,
    _numeric,
    _operand_fails,
    _s,
    _unify,
    _var,
    _with,
)


class Derived(Protocol):
    """A translated transform another expression may read (``PinotExpr``)."""

    @property
    def sql(self) -> str: ...
    @property
    def type(self) -> str | None: ...
    @property
    def fields(self) -> tuple[str, ...]: ...
    @property
    def calls(self) -> tuple[FunctionCall, ...]: ...


#: the functions whose result has the type of their arguments (or the one they name)
_RETURNS_FIRST = {"coalesce", "jsonextractscalar"}

_KEYWORDS = {
    *("AND", "OR", "NOT", "TRUE", "FALSE", "NULL", "IS", "IN", "BETWEEN", "LIKE"),
    *("CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "AS"),
}
_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    |(?P<str>'(?:[^']|'')*')
    |(?P<qid>"(?:[^"]|"")*")
    |(?P<bid>`(?:[^`]|``)*`)
    |(?P<word>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op><=|>=|<>|!=|==|\|\||[-+*/%(),=<>])""",
    re.X,
)
_CAST_TYPES = {
    "INT": "INT",
    "INTEGER": "INT",
    "LONG": "BIGINT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BIG_DECIMAL": "DECIMAL(38,18)",
    "DECIMAL": "DECIMAL(38,18)",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "STRING": "STRING",
    "VARCHAR": "STRING",
    "CHAR": "STRING",
    "JSON": "STRING",
    "BYTES": "BINARY",
    "BINARY": "BINARY",
    "VARBINARY": "BINARY",
}
_COMPARE = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num, str, id, word, kw, op, end
    text: str
    pos: int
    value: Any = None


class _Parser:
    def __init__(
        self,
        text: str,
        where: str,
        kind: str,
        derived: Mapping[str, Derived] | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.text, self.where, self.kind = text, where, kind
        #: the fields other transforms make: read as their values (``_first_existing``)
        self.derived = derived or {}
        #: the SQL the table's expressions may still come to (this one's alone: a new one)
        self.budget = budget if budget is not None else Budget()
        self.fields: dict[str, None] = {}
        #: the geospatial calls the expression makes, inner first, each once (``geo``)
        self.calls: dict[str, FunctionCall] = {}
        if not isinstance(text, str):
            raise self.error(f"the expression must be text, not {type(text).__name__}")
        self.toks = self.tokenize()
        self.i = 0

    # --- errors ---

    def error(self, message: str) -> ConfigError:
        return ConfigError(f"{self.where}: {message}")

    def syntax(self, pos: int, message: str) -> ConfigError:
        before = self.text[max(0, pos - 25) : pos]
        after = self.text[pos : pos + 25]
        at = f"after '{before}'" if before else "at the start"
        at += f", before '{after}'" if after else ", at the end"
        return self.error(f"syntax error at character {pos + 1}: {message} ({at})")

    # --- tokens ---

    def tokenize(self) -> list[_Tok]:
        text, toks, pos = self.text, [], 0
        if not text.strip():
            raise self.error("the expression is empty")
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                c = text[pos]
                if c in "'\"`":
                    what = {"'": "string", '"': "quoted name", "`": "quoted name"}[c]
                    raise self.syntax(pos, f"unterminated {what} starting here")
                raise self.syntax(pos, f"unexpected character {c!r}")
            kind, t = m.lastgroup or "", m.group()
            end = m.end()
            if kind == "str":
                toks.append(_Tok("str", t, pos, t[1:-1].replace("''", "'")))
            elif kind in ("qid", "bid"):
                q = t[0]
                name = t[1:-1].replace(q + q, q)
                if not name:
                    raise self.syntax(pos, "an empty quoted name")
                toks.append(_Tok("id", t, pos, name))
            elif kind == "num":
                if end < len(text) and (text[end].isalnum() or text[end] == "_"):
                    raise self.syntax(end, f"unexpected {text[end]!r} after the number {t}")
                toks.append(_Tok("num", t, pos))
            elif kind == "word":
                if end < len(text) and text[end] in ".$":
                    full = re.match(r"[\w$.]+", text[pos:])
                    name = full.group() if full else t
                    raise self.syntax(
                        pos,
                        f"a field name with '.' or '$' must be double-quoted: \"{name}\"",
                    )
                if t.lower() == "groovy" and text[end:].lstrip().startswith("("):
                    raise self.error(
                        f"Groovy scripts are not supported ({self.kind} at character "
                        f"{pos + 1}): a script could run arbitrary code on the engine. "
                        "Pinot's controller refuses them too unless its operator sets "
                        "controller.disable.ingestion.groovy=false (true by default: "
                        '"Groovy transform functions are disabled for table config"). Write '
                        "the same logic with scalar functions and operators, e.g. "
                        "Groovy({ts / 1000}, ts) → toEpochSeconds(ts), "
                        "Groovy({a + ' ' + b}, a, b) → concat(a, b, ' '), "
                        "Groovy({x > 10}, x) → x > 10"
                    )
                up = t.upper()
                toks.append(_Tok("kw" if up in _KEYWORDS else "word", t, pos, up))
            elif kind == "op":
                toks.append(_Tok("op", t, pos))
            pos = end
        toks.append(_Tok("end", "", len(text)))
        return toks

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def is_kw(self, *words: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "kw" and tok.value in words

    def is_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.text in ops

    def describe(self, tok: _Tok) -> str:
        return "the end of the expression" if tok.kind == "end" else f"'{tok.text}'"

    def expect_op(self, op: str, context: str = "") -> _Tok:
        if not self.is_op(op):
            tok = self.peek()
            raise self.syntax(tok.pos, f"expected '{op}'{context}, found {self.describe(tok)}")
        return self.take()

    def expect_kw(self, word: str, context: str = "") -> _Tok:
        if not self.is_kw(word):
            tok = self.peek()
            raise self.syntax(tok.pos, f"expected {word}{context}, found {self.describe(tok)}")
        return self.take()

    # --- grammar ---

    def parse(self) -> tuple[_Node, tuple[str, ...]]:
        """The expression's node and the record fields it reads; its SQL is counted in
        the budget (the geospatial calls it adds were counted as they were added)."""
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise self.syntax(tok.pos, f"unexpected {self.describe(tok)}")
        self.budget.spend(len(node.sql) + len(node.fails or ""), self.where)
        return node, tuple(self.fields)

    def sized(self, node: _Node) -> _Node:
        """``node``, once its SQL is known to fit the budget: checked at every
        subexpression, so SQL that grows with each level of nesting is refused at the
        first level past the budget, not built whole."""
        self.budget.check(len(node.sql) + len(node.fails or ""), self.where)
        return node

    def expr(self) -> _Node:
        return self.sized(self.disjunction())

    def disjunction(self) -> _Node:
        left = self.conjunction()
        while self.is_kw("OR"):
            self.take()
            right = self.conjunction()
            left = self.logical("OR", left, right)
        return left

    def conjunction(self) -> _Node:
        left = self.negation()
        while self.is_kw("AND"):
            self.take()
            right = self.negation()
            left = self.logical("AND", left, right)
        return left

    @staticmethod
    def logical(op: str, a: _Node, b: _Node) -> _Node:
        x = _as(a, "BOOLEAN").sql
        sql = f"({x} {op} {_as(b, 'BOOLEAN').sql})"
        # Pinot's AndExecutionNode / OrExecutionNode stop at the first false / true
        # operand: a later one's failure counts only where it is evaluated
        go = f"NOT coalesce({x}, false)" if op == "OR" else f"coalesce({x}, true)"
        later = None if b.fails is None else f"({go} AND {b.fails})"
        return _Node(sql, "BOOLEAN", pos=a.pos, fails=_any(a.fails, later))

    def negation(self) -> _Node:
        if self.is_kw("NOT"):
            tok = self.take()
            inner = self.negation()
            node = _Node(f"(NOT {_as(inner, 'BOOLEAN').sql})", "BOOLEAN", pos=tok.pos)
            return _with(node, inner)
        return self.predicate()

    def predicate(self) -> _Node:
        left = self.additive()
        tok = self.peek()
        if tok.kind == "op" and tok.text in _COMPARE:
            self.take()
            return compare.compare(_COMPARE[tok.text], left, self.additive())
        if self.is_kw("IS"):
            self.take()
            negate = " NOT" if self.is_kw("NOT") else ""
            if negate:
                self.take()
            if not self.is_kw("NULL", "TRUE", "FALSE"):
                found = self.describe(self.peek())
                raise self.syntax(
                    self.peek().pos, f"expected NULL, TRUE or FALSE after IS, found {found}"
                )
            what = self.take().value
            x = left if what == "NULL" else _as(left, "BOOLEAN")
            return _with(_Node(f"({x.sql} IS{negate} {what})", "BOOLEAN", pos=left.pos), left)
        negate = ""
        if self.is_kw("NOT") and self.is_kw("IN", "BETWEEN", "LIKE", k=1):
            self.take()
            negate = "NOT "
        if self.is_kw("IN"):
            raise self.error(
                f"{negate}IN (character {self.peek().pos + 1}) is not supported: Pinot's "
                "ingestion has no in function, so its "
                'controller refuses it too ("Unsupported function: in"); compare each value '
                "instead: x = 1 OR x = 2, or for text strcmp(x, 'a') = 0 OR strcmp(x, 'b') = 0",
            )
        if self.is_kw("BETWEEN"):
            self.take()
            low = self.additive()
            self.expect_kw("AND", " in BETWEEN ... AND ...")
            return compare.between(left, low, self.additive(), bool(negate))
        if self.is_kw("LIKE"):
            tok = self.take()
            pattern = self.additive()
            text = pattern.literal(str)
            if text is _NOT:
                raise self.syntax(
                    tok.pos,
                    "LIKE takes a text literal as its pattern here: Pinot's like compiles the "
                    "pattern of the first record it meets and matches every record with it",
                )
            return compare.like(left, text, bool(negate))
        if negate:
            raise self.syntax(self.peek().pos, "expected IN, BETWEEN or LIKE after NOT")
        return left

    def additive(self) -> _Node:
        left = self.multiplicative()
        while self.is_op("+", "-", "||"):
            op = self.take().text
            right = self.multiplicative()
            if op == "||":
                a, b = _as(left, "STRING"), _as(right, "STRING")
                left = _with(_Node(f"concat({a.sql}, {b.sql})", "STRING", pos=left.pos), a, b)
            else:
                left = self.arithmetic(op, left, right)
        return left

    def multiplicative(self) -> _Node:
        left = self.unary()
        while self.is_op("*", "/", "%"):
            op = self.take().text
            left = self.arithmetic(op, left, self.unary())
        return left

    @staticmethod
    def arithmetic(op: str, a: _Node, b: _Node) -> _Node:
        given = (a, b)
        a, b = (n if _numeric(n.type) or n.is_null else _as(n, "DOUBLE") for n in (a, b))
        fails = _any(*(n.fails for n in given), _operand_fails(given, (a, b)))
        types = {a.type, b.type} - {None}
        if types <= set(_INTEGRAL):
            t = "BIGINT"
        elif "DOUBLE" not in types and any(x.startswith("DECIMAL") for x in types):
            t = "DECIMAL"
        else:
            t = "DOUBLE"
        if t == "BIGINT":  # whole-number literals are INT in Spark: widen, not overflow
            a, b = _as(a, t), _as(b, t)
        if op == "/":
            sql, t = f"try_divide({a.sql}, {b.sql})", "DOUBLE" if t == "BIGINT" else t
        elif op == "%":
            sql = f"try_mod({a.sql}, {b.sql})"
        else:
            sql = f"({a.sql} {op} {b.sql})"
        return _Node(sql, t, pos=a.pos, fails=fails)

    def unary(self) -> _Node:
        if self.is_op("-", "+"):
            tok = self.take()
            inner = self.unary()
            if tok.text == "+":
                return inner
            value = inner.literal((int, float))
            if value is not _NOT:
                sql = inner.sql[2:-1] if inner.sql.startswith("(-") else f"(-{inner.sql})"
                return _Node(sql, inner.type, _Literal(-value), tok.pos)
            x = inner if _numeric(inner.type) else _as(inner, "DOUBLE")
            return _with(_Node(f"(- {x.sql})", x.type, pos=tok.pos), x)
        return self.primary()

    def primary(self) -> _Node:
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            return self.number(tok)
        if tok.kind == "str":
            self.take()
            return replace(_s(tok.value), pos=tok.pos)
        if tok.kind == "id":
            self.take()
            return self.field(tok.value, tok.pos)
        if tok.kind == "kw":
            if tok.value in ("TRUE", "FALSE"):
                self.take()
                return _Node(tok.value, "BOOLEAN", _Literal(tok.value == "TRUE"), tok.pos)
            if tok.value == "NULL":
                self.take()
                return _Node("NULL", None, _Literal(None), tok.pos)
            if tok.value == "CASE":
                return self.case()
            if tok.value == "CAST":
                return self.cast()
            raise self.syntax(tok.pos, f"unexpected {tok.value}")
        if tok.kind == "word":
            self.take()
            if self.is_op("("):
                return self.call(tok)
            return self.field(tok.text, tok.pos)
        if self.is_op("("):
            self.take()
            inner = self.expr()
            self.expect_op(")", " closing the parenthesis")
            return inner
        if tok.kind == "end":
            raise self.syntax(tok.pos, "the expression ends too early")
        raise self.syntax(tok.pos, f"unexpected {self.describe(tok)}")

    def number(self, tok: _Tok) -> _Node:
        t = tok.text
        if re.fullmatch(r"\d+", t):
            v = int(t)
            if v >= 10**38:
                raise self.syntax(tok.pos, f"the number {t} has more digits than 38")
            if v >= 2**63:
                return _Node(f"{v}BD", "DECIMAL(38,0)", _Literal(v), tok.pos)
            if v < 2**31:
                return _Node(str(v), "INT", _Literal(v), tok.pos)
            return _Node(f"{v}L", "BIGINT", _Literal(v), tok.pos)
        sql = ("0" + t if t.startswith(".") else t).replace(".e", ".0e").replace(".E", ".0E")
        sql = sql + "0" if sql.endswith(".") else sql
        if "e" not in sql.lower():
            sql += "D"
        value = float(t)
        if math.isinf(value):
            raise self.syntax(tok.pos, f"the number {t} is past a double's range")
        if value == 0:
            sql = "0.0D"  # a number below a double's range (Java: 0.0)
        return _Node(sql, "DOUBLE", _Literal(value), tok.pos)

    def field(self, name: str, pos: int) -> _Node:
        self.fields.setdefault(name, None)
        made = self.derived.get(name)
        if made is None:
            return _Node(_var(name), None, pos=pos)
        # another transform's destination: its value, the record's own first (Pinot runs
        # the transforms in the order they read each other and skips one whose column
        # the record already has); what it reads is read here, its calls computed first
        # (counted when that transform was translated)
        self.budget.check(len(made.sql), self.where)
        for f in made.fields:
            self.fields.setdefault(f, None)
        for c in made.calls:
            self.calls.setdefault(c.column, c)
        node = _first_existing(name, _Node(made.sql, made.type))
        return replace(self.sized(node), pos=pos)

    def case(self) -> _Node:
        start = self.take()
        subject = None if self.is_kw("WHEN") else self.expr()
        whens: list[tuple[_Node, _Node]] = []
        size = 0  # of the parts so far: a subject is written again in every WHEN
        while self.is_kw("WHEN"):
            self.take()
            cond = self.expr()
            if subject is not None:
                cond = compare.compare("=", subject, cond)
            self.expect_kw("THEN", " after the WHEN condition")
            whens.append((_as(cond, "BOOLEAN"), self.expr()))
            size += len(whens[-1][0].sql) + len(whens[-1][1].sql)
            self.budget.check(size, self.where)
        if not whens:
            raise self.syntax(self.peek().pos, f"expected WHEN, found {self.describe(self.peek())}")
        other = None
        if self.is_kw("ELSE"):
            self.take()
            other = self.expr()
        self.expect_kw("END", " closing CASE")
        values = _unify([v for _, v in whens] + ([other] if other is not None else []))
        parts = [f"WHEN {c.sql} THEN {v.sql}" for (c, _), v in zip(whens, values)]
        if other is not None:
            parts.append(f"ELSE {values[-1].sql}")
        t = next((v.type for v in values if v.type is not None), None)
        node = _Node(f"(CASE {' '.join(parts)} END)", t, pos=start.pos)
        # Pinot's caseWhen is a function: every condition and value is evaluated first
        every = [*(c for c, _ in whens), *values, *([subject] if subject is not None else [])]
        return _with(node, *every)

    def cast(self) -> _Node:
        start = self.take()
        self.expect_op("(", " after CAST")
        inner = self.expr()
        self.expect_kw("AS", " in CAST(... AS type)")
        tok = self.peek()
        if tok.kind not in ("word", "kw"):
            raise self.syntax(tok.pos, f"expected a type name, found {self.describe(tok)}")
        self.take()
        name = tok.text.upper()
        if name not in _CAST_TYPES:
            near = difflib.get_close_matches(name, _CAST_TYPES, n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise self.syntax(
                tok.pos,
                f"unknown type {tok.text} (Pinot's types: INT, LONG, FLOAT, DOUBLE, "
                f"BIG_DECIMAL, BOOLEAN, TIMESTAMP, STRING, JSON, BYTES){hint}",
            )
        t = _CAST_TYPES[name]
        if self.is_op("("):  # DECIMAL(p, s), VARCHAR(n)
            self.take()
            sizes = [self.take()]
            while self.is_op(","):
                self.take()
                sizes.append(self.take())
            self.expect_op(")", " closing the type's size")
            if any(s.kind != "num" or not s.text.isdigit() for s in sizes):
                raise self.syntax(sizes[0].pos, "a type's size must be whole numbers")
            if t.startswith("DECIMAL"):
                t = f"DECIMAL({', '.join(s.text for s in sizes)})"
        self.expect_op(")", " closing CAST")
        if t in _INTEGRAL and inner.type in (None, "STRING") and not inner.is_null:
            return replace(_cast_whole(inner, t), pos=start.pos)
        # DataTypeConversionFunctions.cast: PinotDataType's conversion, which throws for
        # text that is no number / timestamp / hex (not into BOOLEAN or text)
        out = _as(inner, t)
        return replace(out, pos=start.pos, fails=_any(out.fails, _conv_fails(inner, out, t)))

    def call(self, tok: _Tok) -> _Node:
        name = tok.text
        key = _canonical(name)
        self.take()  # (
        args: list[_Node] = []
        if not self.is_op(")"):
            args.append(self.expr())
            while self.is_op(","):
                self.take()
                args.append(self.expr())
        self.expect_op(")", f" closing the arguments of {name}")
        fn = FUNCTIONS.get(key)
        if fn is None and key in geo.REFUSED:
            raise self.error(
                f"{self.kind} function '{name}' (character {tok.pos + 1}): {name} "
                f"{geo.REFUSED[key]}"
            )
        if fn is None and key in geo.GEOSPATIAL:
            try:
                node, computed = geo.call(geo.GEOSPATIAL[key], args)
            except _Fail as e:
                raise self.error(f"{e} (character {tok.pos + 1})") from None
            if computed.column not in self.calls:  # its arguments' SQL is the engine's too
                self.budget.spend(sum(len(a) for a in computed.args), self.where)
                self.calls[computed.column] = computed
            return replace(node, pos=tok.pos, fails=_any(*(a.fails for a in args)))
        if fn is None:
            near = difflib.get_close_matches(key, FUNCTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean '{FUNCTIONS[near[0]].name}'?" if near else ""
            raise self.error(
                f"unknown {self.kind} function '{name}' (character {tok.pos + 1}){hint}"
            )
        n = len(args)
        if n < fn.min_args or (fn.max_args is not None and n > fn.max_args):
            raise self.error(
                f"{fn.name} takes {fn.arity()} ({fn.signature}), got {n} (character {tok.pos + 1})"
            )
        try:
            sql = fn.sql(args)
        except _Fail as e:
            raise self.error(f"{fn.signature} at character {tok.pos + 1}: {e}") from None
        returns, fails = fn.returns, fn.fails(args, sql)
        if isinstance(sql, _Node):  # a builder that types its own result
            sql, returns = sql.sql, sql.type
        elif key in _RETURNS_FIRST:
            returns = self.first_type(key, args)
        return self.sized(_Node(sql, returns, pos=tok.pos, fails=fails))

    @staticmethod
    def first_type(key: str, args: list[_Node]) -> str | None:
        if key == "coalesce":
            return next((a.type for a in _unify(args) if a.type is not None), None)
        kind = str(args[2].literal(str)).upper()
        return {
            "INT": "INT",
            "LONG": "BIGINT",
            "TIMESTAMP": "TIMESTAMP",
            "FLOAT": "FLOAT",
            "DOUBLE": "DOUBLE",
            "BIG_DECIMAL": "DECIMAL(38,18)",
            "BOOLEAN": "BOOLEAN",
        }.get(kind, "STRING")

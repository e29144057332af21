"""SingleStore-flavoured SQL text → Spark SQL text, on tokens (sqlglot's tokenizer).

Used by the SQL front end for queries and by the engine for ingest-time expressions.

What changes, and nothing else:

* ``x::$key`` / ``x::key`` / ``x::%key`` (SingleStore JSON access, chainable, also after
  the functions below: ``FROM_BASE64(record::$data)::$n``) become
  ``get_json_object(x, '$.key')``, the ``%`` form cast to DOUBLE;
* ``JSON_EXTRACT_STRING|JSON|BIGINT|DOUBLE(json, key, …)`` become ``get_json_object`` on
  the key path, cast for BIGINT and DOUBLE;
* SingleStore functions Spark spells otherwise (``FROM_BASE64``, ``TO_BASE64``,
  ``GEOGRAPHY_POINT`` as the WKT text a GEOGRAPHYPOINT column holds) become their Spark
  forms;
* ``DATE_ADD|DATE_SUB|ADDDATE|SUBDATE(d, INTERVAL n UNIT)`` become ``d ± INTERVAL``
  (Spark's functions of those names add days), and an ``INTERVAL`` of an expression,
  column or variable (``INTERVAL (@ms / 1000) SECOND``) ``(expr) * INTERVAL 1 SECOND``;
* ``@var`` becomes the backquoted column ```@var``` (variables a pipeline loads);
* ``information_schema.NAME`` becomes the temporary view that serves it, named by the
  caller (``on_view``): each statement registers its own views, filtered for its user.

Strings, comments and everything else are copied byte for byte.

sqlglot's tokenizer is MySQL's, not Spark's: the two disagree about raw strings
(``r'\\'``), backslashes, ``#`` comments and more, so nothing this module decides may be
relied on for security. Whatever it writes, what Spark reads is decided on Spark's own
parse of the result (``engine.sql.sandbox``), and the only information_schema views that
exist are the ones ``on_view`` named and registered for the statement's user.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from sparkpipes.errors import ConfigError

if TYPE_CHECKING:
    from sqlglot.tokens import Token


class _TokenTypes:
    """sqlglot's ``TokenType``, imported on first use: importing sqlglot costs a CLI
    start-up a quarter of a second, and most statements never translate any SQL."""

    def __getattr__(self, name: str) -> Any:
        from sqlglot.tokens import TokenType as real

        return getattr(real, name)


TokenType: Any = _TokenTypes()

JSON_FUNCTIONS = {
    "JSON_EXTRACT_STRING": None,
    "JSON_EXTRACT_JSON": None,
    "JSON_EXTRACT_BIGINT": "BIGINT",
    "JSON_EXTRACT_DOUBLE": "DOUBLE",
}
_LON = "CAST(({0}) AS DOUBLE)"
#: SingleStore functions and the Spark expression each becomes (its arguments numbered)
FUNCTIONS = {
    "FROM_BASE64": "CAST(unbase64({0}) AS STRING)",
    "TO_BASE64": "base64({0})",
    # the WKT text of a GEOGRAPHYPOINT column: 8 decimals, a longitude past ±180 wrapped
    "GEOGRAPHY_POINT": (
        "CASE WHEN ({0}) IS NULL OR ({1}) IS NULL THEN NULL ELSE "
        f"format_string('POINT(%.8f %.8f)', CASE WHEN abs({_LON}) <= 180 THEN {_LON} "
        f"ELSE pmod({_LON} + 180, 360) - 180 END, CAST(({{1}}) AS DOUBLE)) END"
    ),
}


def _arity(template: str) -> int:
    """How many arguments a :data:`FUNCTIONS` template takes."""
    return 1 + max(int(f) for _, f, _, _ in string.Formatter().parse(template) if f)


def view_name(view: str) -> str:
    """The stem of the internal view that serves ``information_schema.<view>``. Never
    registered as such: a statement registers its views under this stem plus a suffix of
    its own, so no statement can name another's (which may hold rows its user may not see)."""
    return f"__information_schema_{view.upper()}"


#: name prefixes of the session's internal views (information_schema, a procedure's batch):
#: a statement may read only the ones registered for it (``SqlSession._may_read``, on the
#: relations Spark parsed)
INTERNAL = (view_name("").lower(), "__sp_")


def _tokens(text: str) -> list[Token]:
    import sqlglot
    from sqlglot.errors import TokenError

    try:
        return sqlglot.tokenize(text, read="mysql")
    except TokenError as e:
        raise ConfigError(f"cannot read the SQL text: {e}") from None


def _is_call(tok: Token, nxt: Token | None, names: Collection[str]) -> bool:
    """``tok`` names one of ``names`` (any case) and opens a call."""
    return (
        _is_name(tok)
        and tok.text.upper() in names
        and nxt is not None
        and nxt.token_type == TokenType.L_PAREN
    )


def _is_name(tok: Token) -> bool:
    return tok.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or (
        tok.text.isidentifier() and tok.token_type != TokenType.STRING
    )


def _quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _path(keys: list[str]) -> str:
    out = "$"
    for k in keys:
        out += f".{k}" if k.isidentifier() else f"[{k}]" if k.isdigit() else f"['{k}']"
    return out


def translate(
    text: str,
    *,
    on_view: Callable[[str], str | None] | None = None,
    databases: Collection[str] = (),
) -> str:
    """Rewrite ``text``. ``on_view`` is told each information_schema view the text refers
    to, wherever it is (a JSON key's subquery too), and answers the name the statement
    registers it under; without it (or if it answers None) the name is :func:`view_name`'s
    stem, which no view has, so such a reference reads nothing. ``databases``: the names
    of the warehouse's database, which ``db.t`` may qualify a name with (dropped: Spark
    knows the tables by their names alone)."""
    toks = _tokens(text)
    qualifiers = {d.lower() for d in databases}
    out: list[str] = []
    pos = 0  # next character of ``text`` not yet copied
    i = 0
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        # db.name, where db is the warehouse's database
        if (
            qualifiers
            and _is_name(t)
            and t.text.lower() in qualifiers
            and nxt is not None
            and nxt.token_type == TokenType.DOT
            and i + 2 < len(toks)
            and _is_name(toks[i + 2])
            and (i == 0 or toks[i - 1].token_type != TokenType.DOT)
        ):
            out.append(text[pos : t.start])
            pos = toks[i + 2].start
            i += 2
            continue
        # information_schema.NAME
        if (
            _is_name(t)
            and t.text.lower() == "information_schema"
            and nxt is not None
            and nxt.token_type == TokenType.DOT
            and i + 2 < len(toks)
            and _is_name(toks[i + 2])
        ):
            view = toks[i + 2].text.upper()
            named = on_view(view) if on_view else None
            out.append(text[pos : t.start] + f"`{named or view_name(view)}`")
            pos = toks[i + 2].end + 1
            i += 3
            continue
        # @var
        if t.token_type == TokenType.PARAMETER and nxt is not None and nxt.start == t.end + 1:
            out.append(text[pos : t.start] + f"`@{nxt.text}`")
            pos = nxt.end + 1
            i += 2
            continue
        # JSON_EXTRACT_*(…)
        if (
            t.token_type == TokenType.VAR
            and t.text.upper() in JSON_FUNCTIONS
            and nxt is not None
            and nxt.token_type == TokenType.L_PAREN
        ):
            args, close = _call_args(toks, i + 1, text)
            if len(args) >= 2:
                json_arg = translate(args[0][0], on_view=on_view)
                expr = f"get_json_object({json_arg}, {_key_path(args[1:], on_view)})"
                cast = JSON_FUNCTIONS[t.text.upper()]
                if cast:
                    expr = f"CAST({expr} AS {cast})"
                expr, end = _json_chain(expr, toks, close + 1)
                out.append(text[pos : t.start] + expr)
                pos = toks[end - 1].end + 1
                i = end
                continue
        # FROM_BASE64(x) …
        if _is_call(t, nxt, FUNCTIONS):
            args, close = _call_args(toks, i + 1, text)
            template = FUNCTIONS[t.text.upper()]
            if len(args) == _arity(template):
                done = [translate(a[0], on_view=on_view) for a in args]
                expr, end = _json_chain(template.format(*done), toks, close + 1)
                out.append(text[pos : t.start] + expr)
                pos = toks[end - 1].end + 1
                i = end
                continue
        # DATE_ADD(d, INTERVAL n UNIT) and its kin: d ± the interval (Spark's take days)
        if _is_call(t, nxt, _DATE_ARITH):
            args, close = _call_args(toks, i + 1, text)
            if len(args) == 2 and args[1][1].token_type == TokenType.INTERVAL:
                date, interval = (translate(a, on_view=on_view) for a, _ in args)
                sign = _DATE_ARITH[t.text.upper()]
                out.append(text[pos : t.start] + f"(({date}) {sign} {interval})")
                pos = toks[close].end + 1
                i = close + 1
                continue
        # INTERVAL (expr) UNIT, INTERVAL col UNIT: Spark takes only a literal there
        if t.token_type == TokenType.INTERVAL and nxt is not None:
            amount = _interval_amount(toks, i + 1, text)
            if amount is not None:
                expr, unit_at = amount
                unit = toks[unit_at].text.upper()
                if unit in _UNITS:
                    body = translate(expr, on_view=on_view)
                    out.append(text[pos : t.start] + _interval(body, unit))
                    pos = toks[unit_at].end + 1
                    i = unit_at + 1
                    continue
        # x::$a::b chains
        if _is_name(t) and nxt is not None and nxt.token_type == TokenType.DCOLON:
            expr, j = _json_chain(text[t.start : t.end + 1], toks, i + 1)
            out.append(text[pos : t.start] + expr)
            pos = toks[j - 1].end + 1
            i = j
            continue
        i += 1
    out.append(text[pos:])
    return "".join(out)


#: MySQL's date arithmetic functions and the sign of their interval
_DATE_ARITH = {"DATE_ADD": "+", "ADDDATE": "+", "DATE_SUB": "-", "SUBDATE": "-"}
#: MySQL interval units: how many of which Spark unit one is
#: MySQL's calendar units: the argument of ``make_interval`` each sets, and its multiple
_CALENDAR = {"YEAR": (0, 1), "QUARTER": (1, 3), "MONTH": (1, 1), "WEEK": (2, 1), "DAY": (3, 1)}
_UNITS = {*_CALENDAR, "HOUR", "MINUTE", "SECOND", "MICROSECOND"}


def _interval(amount: str, unit: str) -> str:
    """An interval of ``amount`` (Spark SQL) ``unit``s as MySQL computes one: a calendar
    amount rounded to whole units, so that a DATE plus days stays a DATE (``make_interval``);
    a clock amount as it is, which makes a DATE a timestamp (as MySQL makes it a DATETIME)."""
    if unit not in _CALENDAR:
        return f"(({amount}) * INTERVAL 1 {unit})"
    at, times = _CALENDAR[unit]
    args = ["0"] * 7
    args[at] = f"CAST(round({amount}) AS INT)" + (f" * {times}" if times != 1 else "")
    return f"make_interval({', '.join(args)})"


def _interval_amount(toks: list[Token], j: int, text: str) -> tuple[str, int] | None:
    """The amount of an ``INTERVAL`` whose first token is ``j`` when it is not a literal
    (a parenthesized expression, a column, a ``@variable``), and where its unit is."""
    tok = toks[j]
    if tok.token_type == TokenType.NUMBER and j + 1 < len(toks):  # Spark has no QUARTER
        unit = toks[j + 1].text.upper()
        return (tok.text, j + 1) if unit == "QUARTER" else None
    if tok.token_type == TokenType.L_PAREN:
        depth = 0
        for k in range(j, len(toks)):
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(toks[k].token_type, 0)
            if depth == 0:
                return (text[tok.start : toks[k].end + 1], k + 1) if k + 1 < len(toks) else None
        return None
    if tok.token_type == TokenType.PARAMETER and j + 2 < len(toks):
        return f"`@{toks[j + 1].text}`", j + 2
    named = tok.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
    if named and j + 1 < len(toks) and toks[j + 1].text.upper() in _UNITS:
        return text[tok.start : tok.end + 1], j + 1
    return None


def _json_chain(operand: str, toks: list[Token], j: int) -> tuple[str, int]:
    """``operand`` with the ``::key`` / ``::$key`` / ``::%key`` accesses that start at
    token ``j`` applied, and the index of the token after them (``j`` if there are none)."""
    keys: list[str] = []
    kind = "json"
    while j < len(toks) and toks[j].token_type == TokenType.DCOLON and j + 1 < len(toks):
        k = toks[j + 1]
        if k.token_type == TokenType.MOD and j + 2 < len(toks):
            keys.append(toks[j + 2].text)
            kind = "double"
            j += 3
        elif k.text.startswith("$"):
            keys.append(k.text[1:])
            kind = "string"
            j += 2
        else:
            keys.append(k.text)
            kind = "json"
            j += 2
    if not keys:
        return operand, j
    expr = f"get_json_object({operand}, '{_path(keys)}')"
    return (f"CAST({expr} AS DOUBLE)" if kind == "double" else expr), j


def _call_args(toks: list[Token], open_idx: int, text: str) -> tuple[list[tuple[str, Token]], int]:
    """Arguments of the call whose '(' is at ``open_idx`` as (text, first token) pairs."""
    depth = 0
    args: list[tuple[str, Token]] = []
    arg_start = None
    for j in range(open_idx, len(toks)):
        tt = toks[j].token_type
        if tt == TokenType.L_PAREN:
            depth += 1
            if depth == 1:
                arg_start = j + 1
                continue
        elif tt == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                if arg_start is not None and arg_start < j:
                    args.append(
                        (text[toks[arg_start].start : toks[j - 1].end + 1], toks[arg_start])
                    )
                return args, j
        elif tt == TokenType.COMMA and depth == 1:
            args.append((text[toks[arg_start].start : toks[j - 1].end + 1], toks[arg_start]))
            arg_start = j + 1
    raise ConfigError("unbalanced parentheses in a JSON_EXTRACT_ call")


def _key_path(keys: list[tuple[str, Token]], on_view: Callable[[str], str | None] | None) -> str:
    """The JSON path of a JSON_EXTRACT_ call's keys; a key that is not a literal (a
    column, a subquery) is translated like the rest of the text, its views reported."""
    if all(tok.token_type in (TokenType.STRING, TokenType.NUMBER) for _, tok in keys):
        literal = []
        for raw, tok in keys:
            literal.append(tok.text if tok.token_type == TokenType.STRING else raw)
        return _quote(_path(literal))
    parts = ["'$'"]
    for raw, _ in keys:
        parts.append(f"'.', CAST({translate(raw, on_view=on_view)} AS STRING)")
    return f"concat({', '.join(parts)})"

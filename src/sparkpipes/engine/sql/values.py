"""A procedure's variables in its statements: each name a statement reads becomes a named
parameter marker (``:__spv0``), and each batch binds the values as Spark parameters
(``spark.sql(text, args=…)``). The text Spark parses is the same whatever the values —
the one ``CREATE PROCEDURE`` checked and the sandbox admits at every batch — and a value
is data, never SQL: nothing a variable holds can end a literal or a comment."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sparkpipes.engine.sql.dialect import TokenType, _tokens


def markers(names: Iterable[str]) -> dict[str, str]:
    """Each variable (by its lower-case name) → the name of its parameter marker."""
    return {name.lower(): f"__spv{i}" for i, name in enumerate(names)}


def with_markers(text: str, marks: Mapping[str, str]) -> str:
    """``text`` (SingleStore SQL) with each bare name of ``marks`` (any case) replaced by
    its marker; a qualified name (``t.v``), a function (``v(…)``) and ``@v`` are kept."""
    if not marks:
        return text
    toks = _tokens(text)
    out: list[str] = []
    pos = 0
    for i, t in enumerate(toks):
        named = t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        if not named or t.text.lower() not in marks:
            continue
        before = toks[i - 1] if i else None
        after = toks[i + 1] if i + 1 < len(toks) else None
        if before is not None and before.token_type in (
            TokenType.DOT,
            TokenType.PARAMETER,
            TokenType.COLON,
        ):
            continue
        if after is not None and after.token_type in (TokenType.DOT, TokenType.L_PAREN):
            continue
        out.append(text[pos : t.start] + f":{marks[t.text.lower()]}")
        pos = t.end + 1
    out.append(text[pos:])
    return "".join(out)


def bound(marks: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of a statement: each marker's variable's value (NULL when unset)."""
    by_lower = {k.lower(): v for k, v in values.items()}
    return {marker: by_lower.get(name) for name, marker in marks.items()}

"""A procedure's variables in its statements: each name a statement reads replaced by its
value as a Spark SQL literal, before the dialect's translation and the query sandbox see
the text (so a value is data, never SQL: strings are quoted, everything else typed)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping
from typing import Any

from sparkpipes.engine.sql.dialect import TokenType, _tokens


def sql_literal(value: Any) -> str:
    """``value`` (what Spark returned for a variable) as a Spark SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"CAST('{value}' AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        return f"{value}BD"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def with_values(text: str, values: Mapping[str, Any]) -> str:
    """``text`` (SingleStore SQL) with each bare name of ``values`` (any case) replaced by
    its literal; a qualified name (``t.v``), a function (``v(…)``) and ``@v`` are kept."""
    if not values:
        return text
    by_lower = {k.lower(): v for k, v in values.items()}
    toks = _tokens(text)
    out: list[str] = []
    pos = 0
    for i, t in enumerate(toks):
        named = t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        if not named or t.text.lower() not in by_lower:
            continue
        before = toks[i - 1] if i else None
        after = toks[i + 1] if i + 1 < len(toks) else None
        if before is not None and before.token_type in (TokenType.DOT, TokenType.PARAMETER):
            continue
        if after is not None and after.token_type in (TokenType.DOT, TokenType.L_PAREN):
            continue
        out.append(text[pos : t.start] + sql_literal(by_lower[t.text.lower()]))
        pos = t.end + 1
    out.append(text[pos:])
    return "".join(out)

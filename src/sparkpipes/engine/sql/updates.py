"""``ON DUPLICATE KEY UPDATE col = expr`` expressions → Spark SQL over two rows.

In SingleStore (as in MySQL) such an expression reads the stored row's columns by their
bare names (``count + 1``) and the row being loaded by ``VALUES(col)``; either may be
qualified by the table's name (``VALUES(t.col)``, ``t.col``). Here the stored row is the
struct ``s`` and the loaded one ``r`` (the two arguments of the fold that applies a
batch's rows to a key in arrival order, ``sinks.delta.upsert``), so ``count + 1`` becomes
``s.`count` + 1`` and ``VALUES(t.x)`` ``r.`x```. The rest is :func:`dialect.translate`'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sparkpipes.engine.sql.dialect import TokenType, _tokens, translate
from sparkpipes.errors import ConfigError


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def update_expression(text: str, columns: Sequence[str], table: str) -> str:
    """``text`` (an ``ON DUPLICATE KEY UPDATE`` expression) as Spark SQL over ``s`` (the
    stored row) and ``r`` (the new one); a name that is no column of ``table``, or a
    variable, is a ConfigError."""
    spark = translate(text)
    by_lower = {c.lower(): c for c in columns}
    toks = _tokens(spark)
    out: list[str] = []
    pos = 0
    i = 0

    def column(tok) -> str:
        name = by_lower.get(tok.text.lower())
        if name is None:
            raise ConfigError(
                f"ON DUPLICATE KEY UPDATE: {tok.text!r} in {text!r} is no column of table '{table}'"
            )
        return name

    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        after = toks[i - 1] if i else None
        if t.token_type == TokenType.IDENTIFIER and t.text.startswith("@"):
            raise ConfigError(
                f"ON DUPLICATE KEY UPDATE reads the stored row's columns and VALUES(col), "
                f"not variables: {text!r}"
            )
        if t.text.upper() == "VALUES" and nxt is not None and nxt.token_type == TokenType.L_PAREN:
            close = next(
                (j for j in range(i + 2, len(toks)) if toks[j].token_type == TokenType.R_PAREN),
                None,
            )
            inner = toks[i + 2 : close] if close is not None else []
            names = [x for x in inner if x.token_type != TokenType.DOT]
            if (
                not names
                or len(names) > 2
                or (len(names) == 2 and names[0].text.lower() != table.lower())
            ):
                raise ConfigError(f"ON DUPLICATE KEY UPDATE: VALUES() names one column: {text!r}")
            out.append(spark[pos : t.start] + f"r.{_q(column(names[-1]))}")
            pos = toks[close].end + 1
            i = close + 1
            continue
        is_name = t.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or (
            t.text.lower() in by_lower and t.token_type != TokenType.STRING
        )  # a column named as a keyword or function (``count``) too
        called = nxt is not None and nxt.token_type == TokenType.L_PAREN
        dotted = after is not None and after.token_type == TokenType.DOT
        unit = i >= 2 and toks[i - 2].token_type == TokenType.INTERVAL  # INTERVAL 1 DAY
        if is_name and not called and not dotted and not unit:
            qualified = (
                nxt is not None
                and nxt.token_type == TokenType.DOT
                and i + 2 < len(toks)
                and t.text.lower() == table.lower()
            )
            target = toks[i + 2] if qualified else t
            out.append(spark[pos : t.start] + f"s.{_q(column(target))}")
            pos = target.end + 1
            i += 3 if qualified else 1
            continue
        i += 1
    out.append(spark[pos:])
    return "".join(out)


_STORED = re.compile(r"\bs\.`((?:[^`]|``)+)`")


def stored_columns(spark: str) -> set[str]:
    """The stored row's columns an :func:`update_expression` result reads."""
    return {m.group(1).replace("``", "`") for m in _STORED.finditer(spark)}


def with_on_update(
    updates: Sequence[tuple[str, str]], on_update: Sequence[str]
) -> tuple[tuple[str, str], ...]:
    """``updates`` (Spark SQL from :func:`update_expression`) plus, for each column of
    ``on_update`` (``ON UPDATE CURRENT_TIMESTAMP``) they do not assign, the time of the
    update when an assignment changes the stored row, as MySQL sets it, else the stored
    value."""
    assigned = {c for c, _ in updates}
    touched = [c for c in on_update if c not in assigned]
    if not updates or not touched:
        return tuple(updates)
    changed = " OR ".join(f"NOT (({e}) <=> s.{_q(c)})" for c, e in updates)
    return (
        *updates,
        *((c, f"CASE WHEN {changed} THEN current_timestamp() ELSE s.{_q(c)} END") for c in touched),
    )

"""SQL ``LIKE`` matching in polynomial time: the one matcher of every ``SHOW … LIKE``.

MySQL semantics: ``%`` matches any run of characters (none included), ``_`` exactly one
character, a backslash makes the next character literal (``\\%``, ``\\_``, ``\\\\``; a
backslash ending the pattern is itself literal); case-insensitive, as MySQL's default
collation compares these names. The whole text must match.

A user writes the pattern, so it must never cost more than the text it is matched
against allows: :func:`like` is the greedy two-pointer wildcard algorithm (on a mismatch
it resumes after the last ``%`` one character further along the text), O(len(pattern) +
len(text)²) at worst — never exponential in the number of ``%``, never a regular
expression built from user text.
"""

from __future__ import annotations

#: a pattern's tokens: ``None`` for ``%``, ``""`` for ``_``, else the literal character
_ANY_RUN: None = None
_ONE = ""


def _tokens(pattern: str, escape: str | None) -> list[str | None]:
    out: list[str | None] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "%":
            if not out or out[-1] is not _ANY_RUN:  # a run of % is one %
                out.append(_ANY_RUN)
        elif c == "_":
            out.append(_ONE)
        elif escape is not None and c == escape and i + 1 < n:
            i += 1
            out.append(pattern[i])
        else:
            out.append(c)
        i += 1
    return out


def like(pattern: str, text: str, *, escape: str | None = "\\", fold_case: bool = True) -> bool:
    """Whether ``text`` matches the SQL LIKE ``pattern`` (see the module).

    ``escape``: the escape character (``None``: none, every character but ``%`` and
    ``_`` literal); ``fold_case``: compare case-insensitively (both lower-cased first)."""
    if fold_case:
        pattern, text = pattern.lower(), text.lower()
    tokens = _tokens(pattern, escape)
    n, m = len(tokens), len(text)
    i = j = 0
    star = -1  # the token index just after the last % seen, or -1
    resume = 0  # where in the text that % match ends now
    while j < m:
        if i < n:
            tok = tokens[i]
            if tok is _ANY_RUN:
                i += 1
                star, resume = i, j
                continue
            if tok == _ONE or tok == text[j]:
                i += 1
                j += 1
                continue
        if star < 0:
            return False
        resume += 1  # the last % takes one character more
        i, j = star, resume
    while i < n and tokens[i] is _ANY_RUN:
        i += 1
    return i == n

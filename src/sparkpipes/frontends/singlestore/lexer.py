"""One Lark lexer over SQL text whose string, quoted-identifier and comment terminals are
the parser's own: statements are cut (``script``), text normalized and secrets masked on
the same tokens, so none of them ever mistakes the inside of a literal or a comment for
SQL. It may import the grammar's terminals and ``config.urls``, nothing of the parser."""

from __future__ import annotations

import functools
from collections.abc import Iterator

from lark import Lark, Token

from sparkpipes.config import urls
from sparkpipes.frontends.singlestore import grammar as g

_LEXER_GRAMMAR = rf"""
start: (STRING | QUOTED_IDENT | WORD | SEMI | OTHER | WS | LINE_COMMENT | BLOCK_COMMENT)*
STRING: /{g.STRING_RE}/
QUOTED_IDENT: /{g.QUOTED_IDENT_RE}/
WORD: /{g.IDENT_RE}/
SEMI: ";"
WS: /\s+/
LINE_COMMENT: /{g.LINE_COMMENT_RE}/
BLOCK_COMMENT: /{g.BLOCK_COMMENT_RE}/
OTHER.-1: /[\s\S]/
"""


@functools.cache
def _lexer() -> Lark:
    return Lark(_LEXER_GRAMMAR, parser="lalr", lexer="basic")


def lex(text: str) -> Iterator[Token]:
    return _lexer().lex(text, dont_ignore=True)


def normalize(text: str) -> str:
    """SQL text with comments dropped and every run of whitespace outside literals made one
    space; optimizer hints (``/*+ … */``) are kept. Idempotent."""
    out: list[str] = []
    pending_space = False
    for tok in lex(text):
        if tok.type == "WS" or tok.type == "LINE_COMMENT":
            pending_space = True
            continue
        if tok.type == "BLOCK_COMMENT" and not tok.value.startswith("/*+"):
            pending_space = True
            continue
        if pending_space and out:
            out.append(" ")
        pending_space = False
        out.append(tok.value)
    return "".join(out)


def tokens(text: str) -> list[Token]:
    """The tokens of ``text`` without whitespace and comments (words are type WORD)."""
    return [t for t in lex(text) if t.type not in ("WS", "LINE_COMMENT", "BLOCK_COMMENT")]


_SECRET_HINTS = ("password", "secret", "jaas", "token", "key.pem", "private key")
#: a string after these words is a secret (``BY``: of ``IDENTIFIED BY``; ``IDENTIFIED``
#: alone: a ``BY`` forgotten)
_MASKED_AFTER = ("CREDENTIALS", "IDENTIFIED", "BY")


def mask_credentials(text: str) -> str:
    """``text`` with the string after every CREDENTIALS and IDENTIFIED BY masked by ``*``
    (newlines kept, so lines and columns stay where they were): for echoing statements.
    A CONFIG string that holds a secret by mistake is masked as well, and so is a password
    inside a URL of any string (``'user:pass@host:9092/t'`` after KAFKA)."""
    upper = text.upper()
    if (
        not any(k in upper for k in _MASKED_AFTER)
        and not any(h in text.lower() for h in _SECRET_HINTS)
        and "@" not in text
    ):
        return text
    chars = list(text)

    def mask(start: int, end: int) -> None:
        for i in range(start, end):
            if chars[i] not in "\r\n":
                chars[i] = "*"

    try:
        armed = previous = None
        for tok in lex(text):
            if tok.type in ("WS", "LINE_COMMENT", "BLOCK_COMMENT"):
                continue
            if (
                armed is not None
                and tok.type == "STRING"
                and (
                    armed.value.upper() in _MASKED_AFTER
                    or any(h in tok.value.lower() for h in _SECRET_HINTS)
                )
            ):
                mask(tok.start_pos + 1, tok.end_pos - 1)
            elif tok.type == "STRING":
                kafka = previous is not None and previous.value.upper() == "KAFKA"
                for start, end in urls.spans_in(tok.value, bare=kafka):
                    mask(tok.start_pos + start, tok.start_pos + end)
            elif armed is not None and tok.type == "OTHER" and tok.value in "'\"":
                mask(tok.start_pos + 1, len(text))  # unterminated: mask the rest
                break
            word = tok.value.upper() if tok.type == "WORD" else None
            keyword = word in ("CREDENTIALS", "CONFIG", "IDENTIFIED") or (
                word == "BY" and previous is not None and previous.value.upper() == "IDENTIFIED"
            )
            armed = tok if keyword else None
            previous = tok
    except Exception:  # the lexer gave up: mask everything after the first keyword
        start = upper.find("CREDENTIALS")
        mask(start + len("CREDENTIALS") if start >= 0 else 0, len(text))
    return "".join(chars)

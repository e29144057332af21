"""Cutting a script into statements, and the whitespace-normalized form of SQL text.

Both run on one Lark lexer whose string, quoted-identifier and comment terminals are the
parser's own, so the splitter never cuts inside a literal or a comment. A ``;`` ends a
statement except inside the ``BEGIN … END`` body of ``CREATE [OR REPLACE] PROCEDURE``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from lark import Lark, Token

from sparkpipes.config import urls
from sparkpipes.frontends.singlestore.errors import ParseError, position

from . import grammar as g

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

# Openers and closers of the procedural blocks that may hold ';'.
_BLOCK_SUFFIXES = frozenset({"IF", "LOOP", "WHILE", "REPEAT", "FOR"})


@functools.cache
def _lexer() -> Lark:
    return Lark(_LEXER_GRAMMAR, parser="lalr", lexer="basic")


def _tokens(text: str) -> Iterator[Token]:
    return _lexer().lex(text, dont_ignore=True)


@dataclass(frozen=True)
class Span:
    """One statement: ``text[start:end]`` of the script, from its first token to its last."""

    start: int
    end: int


def _unterminated(text: str, tok: Token, stmt_start: int) -> ParseError | None:
    what = {
        "'": "unterminated string literal",
        '"': "unterminated string literal",
        "`": "unterminated quoted identifier",
    }.get(tok.value)
    if what is None and tok.value == "/" and text.startswith("*", tok.end_pos):
        what = "unterminated comment"
    if what is None:
        return None
    line, column, source_line = position(text, tok.start_pos)
    return ParseError(
        what,
        line,
        column,
        tok.value if tok.value != "/" else "/*",
        text[stmt_start:],
        source_line=source_line,
    )


def split(text: str) -> list[Span]:
    """The non-empty statements of a script, in order; a trailing ``;`` is optional.

    Raises ``ParseError`` for an unterminated string, quoted identifier or block comment.
    """
    return _split(text)[0]


def is_complete(text: str) -> bool:
    """Whether a shell's input so far ends its last statement (with ``;`` outside
    strings, comments and procedure bodies): then it can be run."""
    try:
        spans, trailing = _split(text)
    except ParseError:
        return False
    return bool(spans) and not trailing


def _split(text: str) -> tuple[list[Span], bool]:
    spans: list[Span] = []
    words: list[str] = []
    first: Token | None = None
    last: Token | None = None
    depth = 0
    procedure = block_seen = pending_end = False

    for tok in _tokens(text):
        kind = tok.type
        if kind in ("WS", "LINE_COMMENT", "BLOCK_COMMENT"):
            continue
        if kind == "OTHER":
            err = _unterminated(text, tok, first.start_pos if first else tok.start_pos)
            if err is not None:
                raise err
        word = tok.value.upper() if kind == "WORD" else ""
        if pending_end:
            # END IF / END LOOP … close blocks that were never counted; END CASE closes a CASE.
            pending_end = False
            if word not in _BLOCK_SUFFIXES:
                depth = max(depth - 1, 0)
            if word in _BLOCK_SUFFIXES or word == "CASE":
                word = ""
        if kind == "SEMI" and depth == 0 and (block_seen or not procedure):
            if first is not None and last is not None:
                spans.append(Span(first.start_pos, last.end_pos))
            first = last = None
            words.clear()
            depth, procedure, block_seen = 0, False, False
            continue
        if first is None:
            first = tok
        last = tok
        if kind == "WORD" and len(words) < 4:
            words.append(word)
            if word == "PROCEDURE" and words[:-1] in (["CREATE"], ["CREATE", "OR", "REPLACE"]):
                procedure = True
        if not procedure or not word:
            continue
        if word == "END":
            pending_end = True
        elif word in ("BEGIN", "CASE"):
            depth += 1
            block_seen = block_seen or word == "BEGIN"
    trailing = first is not None
    if first is not None and last is not None:
        spans.append(Span(first.start_pos, last.end_pos))
    return spans, trailing


def normalize(text: str) -> str:
    """SQL text with comments dropped and every run of whitespace outside literals made one
    space; optimizer hints (``/*+ … */``) are kept. Idempotent."""
    out: list[str] = []
    pending_space = False
    for tok in _tokens(text):
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
    return [t for t in _tokens(text) if t.type not in ("WS", "LINE_COMMENT", "BLOCK_COMMENT")]


_SECRET_HINTS = ("password", "secret", "jaas", "token")
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
        for tok in _tokens(text):
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

"""Cutting a script into statements, and the whitespace-normalized form of SQL text.

Both run on one Lark lexer whose string, quoted-identifier and comment terminals are the
parser's own, so the splitter never cuts inside a literal or a comment. A ``;`` ends a
statement except inside the ``BEGIN … END`` body of ``CREATE [OR REPLACE] PROCEDURE``.
As in the mysql client (SingleStore's docs write procedures so), a line ``DELIMITER //``
makes ``//`` end statements instead, ``;`` then being part of them, until ``DELIMITER ;``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token

from sparkpipes.frontends.singlestore.errors import ParseError, position
from sparkpipes.frontends.singlestore.lexer import lex, mask_credentials, normalize, tokens

__all__ = ["Span", "is_complete", "mask_credentials", "normalize", "split", "tokens"]
# Openers and closers of the procedural blocks that may hold ';'.
_BLOCK_SUFFIXES = frozenset({"IF", "LOOP", "WHILE", "REPEAT", "FOR"})


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
    delimiter, skip_to = ";", 0

    for tok in lex(text):
        kind = tok.type
        if kind in ("WS", "LINE_COMMENT", "BLOCK_COMMENT") or tok.start_pos < skip_to:
            continue
        word = tok.value.upper() if kind == "WORD" else ""
        if first is None and word == "DELIMITER":
            eol = text.find("\n", tok.end_pos)
            eol = len(text) if eol < 0 else eol
            delimiter = text[tok.end_pos : eol].strip() or ";"
            skip_to = eol
            continue
        if delimiter != ";" and text.startswith(delimiter, tok.start_pos):
            if first is not None and last is not None:
                spans.append(Span(first.start_pos, last.end_pos))
            first = last = None
            skip_to = tok.start_pos + len(delimiter)
            continue
        if kind == "OTHER":
            err = _unterminated(text, tok, first.start_pos if first else tok.start_pos)
            if err is not None:
                raise err
        if delimiter != ";":
            first = first or tok
            last = tok
            continue
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

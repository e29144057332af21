"""``parse`` / ``parse_one``: SQL text to typed AST statements.

Promises:

* any input either parses or raises ``ParseError`` (``SemanticError`` for statements that
  parse but cannot be valid); no other exception escapes;
* error positions are 1-based lines and columns in the text given to ``parse``, however
  many statements and lines precede the error;
* ``parse_one(s.to_sql()) == s`` for every statement ``s`` that ``parse`` returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import grammar, script, unsupported
from sparkpipes.frontends.singlestore.ast_base import Statement
from sparkpipes.frontends.singlestore.build_base import _shown
from sparkpipes.frontends.singlestore.build_pipelines import PipelineBuilder
from sparkpipes.frontends.singlestore.build_procedures import ProcedureBuilder
from sparkpipes.frontends.singlestore.build_queries import QueryBuilder
from sparkpipes.frontends.singlestore.build_session import SessionBuilder
from sparkpipes.frontends.singlestore.build_tables import TableBuilder
from sparkpipes.frontends.singlestore.build_users import UserBuilder
from sparkpipes.frontends.singlestore.errors import ParseError, position

_MAX_EXPECTED = 10


class _Builder(
    TableBuilder, PipelineBuilder, ProcedureBuilder, QueryBuilder, SessionBuilder, UserBuilder
):
    """Turns the parse tree of one statement into its AST node: every statement family's
    builder in one (each adds the ``_<rule>`` methods of its statements; see ``build_base``)."""


def parse(text: str) -> list[Statement]:
    """Parse a script of ``;``-separated statements (the last ``;`` is optional).

    Empty statements (only whitespace or comments) are skipped. Raises ``ParseError`` (or
    its subclass ``SemanticError``) at the first invalid statement.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected SQL text, got {type(text).__name__}", 1, 1)
    return [_parse_span(text, span) for span in script.split(text)]


def iter_parse(text: str) -> Iterator[tuple[Statement, script.Span]]:
    """Like ``parse``, one statement at a time and with its span in ``text``: a script
    runs up to its first bad statement, and errors can point into it."""
    if not isinstance(text, str):
        raise ParseError(f"expected SQL text, got {type(text).__name__}", 1, 1)
    for span in script.split(text):
        yield _parse_span(text, span), span


def locate(err: SparkpipesError, text: str, span: script.Span) -> SparkpipesError:
    """Point an error from running a statement at the name it complains about (the first
    quoted name in its message found in the statement, as a whole word if it is one
    there), else at the statement's start."""
    if isinstance(err, ParseError) or getattr(err, "line", None) is not None:
        return err
    stmt = text[span.start : span.end]
    offset = 0
    parts = err.message.split("'")
    for name in parts[1::2]:
        if not name:
            continue
        word = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", stmt, re.IGNORECASE)
        found = word.start() if word else stmt.lower().find(name.lower())
        if found >= 0:
            offset = found
            break
    line, column, source_line = position(text, span.start + offset)
    return err.located(line, column, source_line)


def parse_one(text: str) -> Statement:
    """Parse text holding exactly one statement (a trailing ``;`` is allowed)."""
    if not isinstance(text, str):
        raise ParseError(f"expected SQL text, got {type(text).__name__}", 1, 1)
    spans = script.split(text)
    if len(spans) != 1:
        offset = spans[1].start if len(spans) > 1 else len(text)
        line, column, source_line = position(text, offset)
        stmt = text[spans[1].start : spans[1].end] if len(spans) > 1 else ""
        raise ParseError(
            f"expected exactly one statement, found {len(spans)}",
            line,
            column,
            stmt.split("\n")[0][:40] or None,
            stmt,
            source_line=source_line,
        )
    return _parse_span(text, spans[0])


def _parse_span(text: str, span: script.Span) -> Statement:
    stmt_text = text[span.start : span.end]
    try:
        tree = grammar.parser().parse(stmt_text)
        return _Builder(text, span).build(tree)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, span) from None
    except RecursionError:
        line, column, source_line = position(text, span.start)
        raise ParseError(
            "statement is nested too deeply",
            line,
            column,
            None,
            stmt_text,
            source_line=source_line,
        ) from None


# ---------------------------------------------------------------------------- syntax errors


def _expected(names: Iterable[str]) -> str:
    shown = {grammar.terminal_display(n) for n in names} - {None}
    classes = [c for c in ("identifier", "string", "number") if c in shown]
    words = sorted(s for s in shown if s and s.isupper())
    punct = sorted(s for s in shown if s and s.startswith("'"))
    items = classes + words + punct + (["end of statement"] if "end of statement" in shown else [])
    if len(items) > _MAX_EXPECTED:
        return ", ".join(items[: _MAX_EXPECTED - 1]) + ", …"
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _accepted(e: UnexpectedToken) -> Iterable[str]:
    """The tokens that could come instead: what the parser takes when tried, not the
    LALR state's lookahead set, which merges every place a rule is used (after an integer,
    the words that follow one anywhere)."""
    if e.interactive_parser is not None:
        try:
            return e.interactive_parser.accepts() or e.expected
        except UnexpectedInput:  # pragma: no cover - accepts() tries on copies
            pass
    return e.expected


def _syntax_error(e: UnexpectedInput, text: str, span: script.Span) -> ParseError:
    stmt_text = text[span.start : span.end]
    expected: Iterable[str] = ()
    hint = ""
    token: str | None
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = _accepted(e)
        if tok.type == "$END":
            offset = tok.end_pos if tok.end_pos is not None else len(stmt_text)
            found, token = "end of statement", None
        else:
            offset = tok.start_pos or 0
            value = tok.value.split()[0] if tok.type == "REST" and tok.value.split() else tok.value
            token = _shown(value)
            masked = script.mask_credentials(stmt_text)[offset : offset + 2]
            if tok.type == "STRING" and "*" in masked:
                token = "<redacted>"
            found = f"'{token}'"
            if tok.type == "RESERVED" and "IDENT" in expected:
                hint = "; a reserved word must be backquoted to be used as a name"
    elif isinstance(e, UnexpectedCharacters):
        offset = e.pos_in_stream
        expected = e.allowed or ()
        token = stmt_text[offset : offset + 1]
        found = f"character '{token}'"
    else:  # pragma: no cover - the LALR parser reports end of input as UnexpectedToken
        offset, token, found = len(stmt_text), None, "end of statement"
        expected = getattr(e, "expected", ()) or ()
    message = f"unexpected {found}"
    listed = _expected(expected)
    if listed or hint:
        message += f" (expected {listed or 'something else'}{hint})"
    message = unsupported.explain(stmt_text, offset) or message
    line, column, source_line = position(text, span.start + offset)
    return ParseError(message, line, column, token, stmt_text, source_line=source_line)

"""Errors of the SQL front end, located at a line and column of the parsed text."""

from __future__ import annotations

from typing import Any

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.lexer import mask_credentials

_MAX_LINE = 160


def position(text: str, offset: int) -> tuple[int, int, str]:
    """1-based line and column of ``offset`` in ``text``, and that line's text (with any
    CREDENTIALS literal masked: error messages echo it)."""
    text = mask_credentials(text)
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end < 0:
        line_end = len(text)
    source_line = text[line_start:line_end].rstrip("\r")
    return text.count("\n", 0, offset) + 1, offset - line_start + 1, source_line


def _caret_lines(source_line: str, column: int) -> str:
    start = 0
    if len(source_line) > _MAX_LINE:
        start = max(0, min(column - 1 - _MAX_LINE // 2, len(source_line) - _MAX_LINE))
    shown = source_line[start : start + _MAX_LINE]
    prefix = "".join(c if c == "\t" else " " for c in shown[: column - 1 - start])
    return f"{shown}\n{prefix}^"


class ParseError(SparkpipesError):
    """Input that is not valid SQL of the dialect.

    ``line`` and ``column`` are 1-based and count in the whole parsed text (a multi-line
    script reports the line the offending token is on); ``token`` is the offending text and
    ``statement_text`` the statement it belongs to. ``str(err)`` shows the message, the
    position, and the source line with a caret under the offending column.
    """

    code = "SP700"
    kind = "syntax error"

    def __init__(
        self,
        message: str,
        line: int,
        column: int,
        token: str | None = None,
        statement_text: str | None = None,
        *,
        source_line: str | None = None,
        pipeline: str | None = None,
    ) -> None:
        super().__init__(message, pipeline=pipeline)
        self.line = line
        self.column = column
        if statement_text is not None:
            masked = mask_credentials(statement_text)
            if token and token not in masked:
                token = "<redacted>"
            statement_text = masked
        self.token = token
        self.statement_text = statement_text
        if source_line is None and statement_text is not None:
            lines = statement_text.split("\n") or [""]
            source_line = lines[min(max(line, 1), len(lines)) - 1].rstrip("\r")
        self.source_line = source_line

    def __str__(self) -> str:
        line = getattr(self, "line", None)
        head = f"[{self.code}] {self.kind}"
        if line is not None:
            head += f" at line {line}, column {self.column}"
        head += f": {self.message}"
        where = self.where()
        if where:
            head += f" ({where})"
        source_line = getattr(self, "source_line", None)
        if line is None or source_line is None:
            return head
        return f"{head}\n{_caret_lines(source_line, self.column)}"

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(
            line=getattr(self, "line", None),
            column=getattr(self, "column", None),
            token=getattr(self, "token", None),
        )
        return d


class SemanticError(ParseError):
    """A statement that parses but cannot be valid: a clause given twice, a negative
    interval, a CONFIG that is not a JSON object. Located like ``ParseError``."""

    code = "SP701"
    kind = "invalid statement"

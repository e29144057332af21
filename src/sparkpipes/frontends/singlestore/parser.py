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
from typing import Any, NoReturn

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from sparkpipes.catalog.grants import GRANT_OPTION, PRIVILEGES
from sparkpipes.config.core import Secret, strict_json
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import ast as a
from sparkpipes.frontends.singlestore import ast_users as u
from sparkpipes.frontends.singlestore import grammar, script
from sparkpipes.frontends.singlestore.errors import ParseError, SemanticError, position

FORMATS = frozenset({"JSON", "CSV", "RAW", "AVRO", "PARQUET"})
_MAPPING_FORMATS = frozenset({"JSON", "AVRO", "PARQUET"})
_MAX_TYPE_DEPTH = 32
_MAX_EXPECTED = 10
_MAX_INT_BITS = 4096  # far below Python's int-to-text limit, so to_sql() can print it
_MAX_BIGINT = 2**63 - 1  # options and limits are BIGINTs, as in SingleStore

# Known type names and how many (…) parameters each takes.
_TYPE_PARAMS: dict[str, int] = {
    **dict.fromkeys(
        ["TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "BIT", "BYTE", "SHORT"],
        1,
    ),
    **dict.fromkeys(["BOOLEAN", "BOOL", "JSON", "DATE", "YEAR", "VARIANT", "STRING"], 0),
    **dict.fromkeys(["FLOAT", "DOUBLE", "REAL", "DECIMAL", "DEC", "NUMERIC"], 2),
    **dict.fromkeys(["CHAR", "VARCHAR", "BINARY", "VARBINARY", "TEXT", "BLOB"], 1),
    **dict.fromkeys(["TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "TINYBLOB", "MEDIUMBLOB"], 0),
    **dict.fromkeys(["LONGBLOB", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"], 0),
    "LONG": 1,
    **dict.fromkeys(["TIME", "DATETIME", "TIMESTAMP"], 1),
}
_NUMERIC_TYPES = frozenset(
    """TINYINT SMALLINT MEDIUMINT INT INTEGER BIGINT BYTE SHORT LONG
    FLOAT DOUBLE REAL DECIMAL DEC NUMERIC""".split()  # noqa: SIM905
)
_GENERIC_TYPES = {"ARRAY": 1, "MAP": 2, "STRUCT": None}

_UNESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def parse(text: str) -> list[a.Statement]:
    """Parse a script of ``;``-separated statements (the last ``;`` is optional).

    Empty statements (only whitespace or comments) are skipped. Raises ``ParseError`` (or
    its subclass ``SemanticError``) at the first invalid statement.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected SQL text, got {type(text).__name__}", 1, 1)
    return [_parse_span(text, span) for span in script.split(text)]


def iter_parse(text: str) -> Iterator[tuple[a.Statement, script.Span]]:
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


def parse_one(text: str) -> a.Statement:
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


def _parse_span(text: str, span: script.Span) -> a.Statement:
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


def _shown(value: str) -> str:
    first = value.split("\n", 1)[0]
    return first if len(first) <= 40 else first[:39] + "…"


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


def _syntax_error(e: UnexpectedInput, text: str, span: script.Span) -> ParseError:
    stmt_text = text[span.start : span.end]
    expected: Iterable[str] = ()
    hint = ""
    token: str | None
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = e.expected
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
    line, column, source_line = position(text, span.start + offset)
    return ParseError(message, line, column, token, stmt_text, source_line=source_line)


# ---------------------------------------------------------------------------- tree helpers


def _subs(tree: Tree, *data: str) -> list[Tree]:
    return [c for c in tree.children if isinstance(c, Tree) and c.data in data]


def _sub(tree: Tree, *data: str) -> Tree | None:
    found = _subs(tree, *data)
    return found[0] if found else None


def _kw(tree: Tree, index: int = 0) -> Any:
    """The type of the token at ``children[index]``: which keyword was written."""
    tok = tree.children[index]
    assert isinstance(tok, Token)
    return str(tok.type)


def _at(tree: Tree, index: int) -> Tree:
    node = tree.children[index]
    assert isinstance(node, Tree)
    return node


def _tok(tree: Tree, *types: str) -> Token | None:
    for c in tree.children:
        if isinstance(c, Token) and c.type in types:
            return c
    return None


# A node inlined by a ``?rule`` has its own meta narrowed to its child; the container
# positions cover the whole rule it came from (a unary minus, say).
def _start(node: Tree | Token) -> int:
    if isinstance(node, Token):
        return node.start_pos or 0
    meta = node.meta
    return 0 if meta.empty else getattr(meta, "container_start_pos", meta.start_pos)


def _end(node: Tree | Token) -> int:
    if isinstance(node, Token):
        return node.end_pos or 0
    meta = node.meta
    return 0 if meta.empty else getattr(meta, "container_end_pos", meta.end_pos)


def unquote_string(literal: str) -> str:
    """The value of a string literal token: backslash escapes and doubled quotes decoded."""
    quote, body = literal[0], literal[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "%_":
                out.append("\\" + nxt)
            else:
                out.append(_UNESCAPES.get(nxt, nxt))
            i += 2
        elif c == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Builder:
    """Turns the parse tree of one statement into its AST node, checking what the grammar
    cannot (duplicate clauses, value ranges, JSON, types)."""

    def __init__(self, text: str, span: script.Span) -> None:
        self.text = text
        self.base = span.start
        self.stmt = text[span.start : span.end]

    # -------------------------------------------------------------- plumbing

    def fail(
        self, message: str, node: Tree | Token, cls: type[ParseError] = SemanticError
    ) -> NoReturn:
        start = _start(node)
        self.fail_at(message, start, max(_end(node), start + 1), cls)

    def fail_at(
        self, message: str, start: int, end: int, cls: type[ParseError] = SemanticError
    ) -> NoReturn:
        line, column, source_line = position(self.text, self.base + start)
        token = _shown(self.stmt[start:end])
        raise cls(message, line, column, token, self.stmt, source_line=source_line)

    def build(self, tree: Tree) -> a.Statement:
        stmt = tree.children[0]
        assert isinstance(stmt, Tree)
        return getattr(self, f"_{stmt.data}")(stmt)

    def name(self, tree: Tree | None) -> str:
        assert tree is not None
        tok = tree.children[0]
        assert isinstance(tok, Token)
        if tok.type == "QUOTED_IDENT":
            value = tok.value[1:-1].replace("``", "`")
            if not value:
                self.fail("empty identifier", tok)
            return value
        return tok.value

    def names(self, tree: Tree | None) -> tuple[str, ...]:
        return () if tree is None else tuple(self.name(n) for n in _subs(tree, "name"))

    def string(self, tok: Token | None) -> str:
        assert tok is not None
        return unquote_string(tok.value)

    def json_object(self, tok: Token | None, what: str, *, arrays: bool = False) -> str:
        """The JSON object (or, with ``arrays``, array) text in string ``tok``."""
        assert tok is not None
        raw = self.string(tok)
        try:
            value = strict_json(raw)
        except ValueError as e:
            self.fail(f"{what} is not valid JSON: {e}", tok)
        except RecursionError:
            self.fail(f"{what} is nested too deeply", tok)
        if not isinstance(value, dict) and not (arrays and isinstance(value, list)):
            self.fail(f"{what} must be a JSON object{' or array' if arrays else ''}", tok)
        for item in value if isinstance(value, list) else ():
            if not isinstance(item, dict) or {str(k).upper() for k in item} != {"KEY", "VALUE"}:
                self.fail(
                    f"{what} as an array takes objects with KEY and VALUE, as information_"
                    'schema.PIPELINES_SOURCE_OFFSETS shows them: [{"KEY": {…}, "VALUE": {…}}]',
                    tok,
                )
        return raw

    def number(self, tok: Token, negative: bool = False) -> int | float:
        text = tok.value
        try:
            if text[:2].lower() == "0x":
                value: int | float = int(text, 16)
            elif text.isdigit():
                value = int(text)
            else:
                value = float(text)
        except ValueError:
            self.fail("number is too large", tok)
        if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
            self.fail("number is too large", tok)
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            self.fail("number is out of range", tok)
        return -value if negative else value

    def integer(self, tree: Tree | None, minimum: int, what: str) -> int:
        assert tree is not None
        tok = _tok(tree, "NUMBER")
        assert tok is not None
        value = self.number(tok, negative=_tok(tree, "MINUS") is not None)
        if not isinstance(value, int):
            self.fail(f"{what} must be an integer", tok)
        if value < minimum:
            self.fail(f"{what} must be at least {minimum}, got {value}", tree)
        if value > _MAX_BIGINT:
            self.fail(f"{what} must be at most {_MAX_BIGINT}", tree)
        return value

    def expr(self, tree: Tree | None) -> a.Expr:
        assert tree is not None
        return a.Expr(script.normalize(self.stmt[_start(tree) : _end(tree)]))

    def literal(self, tree: Tree) -> a.Literal:
        kind = tree.data
        if kind == "lit_string":
            return a.Literal("string", self.string(_tok(tree, "STRING")))
        if kind == "lit_number":
            tok = _tok(tree, "NUMBER")
            assert tok is not None
            return a.Literal("number", self.number(tok, _tok(tree, "MINUS") is not None))
        if kind in ("lit_true", "lit_false"):
            return a.Literal("boolean", kind == "lit_true")
        return a.Literal("null", None)

    def once(self, seen: dict[str, Any], key: str, node: Tree | Token, what: str) -> None:
        if key in seen:
            self.fail(f"{what} is given more than once", node)
        seen[key] = node

    # -------------------------------------------------------------- pipelines

    def _create_inferred_pipeline(self, tree: Tree) -> a.CreatePipeline:
        return self._create_pipeline(tree, inferred=True)

    def _create_pipeline(self, tree: Tree, inferred: bool = False) -> a.CreatePipeline:
        name, source = (self.name(n) for n in _subs(tree, "name"))
        fields: dict[str, Any] = {
            "name": name,
            "source": source.upper(),
            "location": self.string(_tok(tree, "STRING")),
            "inferred": inferred,
            "or_replace": _sub(tree, "or_replace") is not None,
            "if_not_exists": _sub(tree, "if_not_exists") is not None,
        }
        seen: dict[str, Any] = {}
        options = [c for c in tree.children if isinstance(c, Tree)]
        for opt in options:
            if opt.data == "opt_config":
                self.once(seen, "config", opt, "CONFIG")
                fields["config"] = self.json_object(_tok(opt, "STRING"), "CONFIG")
            elif opt.data == "opt_credentials":
                self.once(seen, "credentials", opt, "CREDENTIALS")
                fields["credentials"] = self.json_object(_tok(opt, "STRING"), "CREDENTIALS")
            elif opt.data == "opt_skip":
                self.once(seen, "skip", opt, "SKIP … ERRORS")
                kind = _sub(opt, "skip_kind")
                assert kind is not None
                fields["skip_errors"] = " ".join(str(t.type) for t in kind.children)
            elif opt.data == "opt_skip_check":
                self.once(seen, "skip_check", opt, "SKIP SOURCE CHECK")
                fields["check_source"] = False
            elif opt.data == "opt_conflict":
                self.once(seen, "conflict", opt, "REPLACE / IGNORE")
                fields["on_conflict"] = _kw(opt)
            elif opt.data == "format_clause":
                self.format_clause(opt, seen, fields)
            elif opt.data.startswith("opt_"):
                self.setting(opt, seen, fields)
        into = _sub(tree, "into_clause")
        if into is not None:
            fields["target"] = a.Target(_kw(into, 1), self.name(_sub(into, "name")))
            tail = _sub(tree, "load_tail")
            assert tail is not None
            self.load_tail(tail, seen, fields)
        return a.CreatePipeline(**fields)

    _SETTINGS = {
        "opt_batch_interval": ("batch_interval", 0, "BATCH_INTERVAL"),
        "opt_max_partitions": ("max_partitions_per_batch", 1, "MAX_PARTITIONS_PER_BATCH"),
        "opt_max_offsets": (
            "max_offsets_per_batch_partition",
            1,
            "MAX_OFFSETS_PER_BATCH_PARTITION",
        ),
        "opt_max_retries": (
            "max_retries_per_batch_partition",
            0,
            "MAX_RETRIES_PER_BATCH_PARTITION",
        ),
    }

    def setting(self, opt: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        field, minimum, keyword = self._SETTINGS[str(opt.data)]
        self.once(seen, field, opt, keyword)
        fields[field] = self.integer(_sub(opt, "int_value"), minimum, keyword)

    def format_clause(self, tree: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "format", tree, "FORMAT")
        node = _sub(tree, "name")
        value = self.name(node).upper()
        if value not in FORMATS:
            assert node is not None
            self.fail(f"unknown format '{value}' (expected {', '.join(sorted(FORMATS))})", node)
        fields["format"] = value
        text = _tok(tree, "STRING")
        if text is not None:
            if value != "AVRO":
                self.fail(f"FORMAT {value} takes no SCHEMA (FORMAT AVRO does)", text)
            key = "schema_registry" if _tok(tree, "REGISTRY") is not None else "schema"
            fields[key] = self.string(text)

    def load_tail(self, tail: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        for item in tail.children:
            assert isinstance(item, Tree)
            handler = getattr(self, f"tail_{item.data}")
            handler(item, seen, fields)
        fmt = fields.get("format")
        if fields.get("mappings") and fmt not in _MAPPING_FORMATS:
            self.fail("field mappings (<-) need FORMAT JSON, AVRO or PARQUET", seen["mappings"])
        for key in ("fields", "lines", "ignore_lines"):
            if key in seen and fmt not in (None, "CSV"):
                self.fail(f"{key.upper().replace('_', ' ')} applies to CSV only", seen[key])

    def tail_format_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.format_clause(item, seen, fields)

    def tail_load_fields(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        entries = _subs(item, "load_field")
        is_mapping = len(entries[0].children) > 1
        mappings: list[a.FieldMapping] = []
        columns: list[a.LoadColumn] = []
        for entry in entries:
            target = entry.children[0]
            assert isinstance(target, Tree)
            column = self.name(_sub(target, "name"))
            variable = target.data == "variable_target"
            path = _sub(entry, "rooted_path", "key_path")
            if (path is not None) != is_mapping:
                self.fail("a column list cannot mix mappings (<-) and plain columns", entry)
            if path is None:
                columns.append(a.LoadColumn(column, variable))
                continue
            default = next((c for c in entry.children[2:] if isinstance(c, Tree)), None)
            mappings.append(
                a.FieldMapping(
                    column,
                    self.names(path),
                    variable=variable,
                    rooted=path.data == "rooted_path",
                    default=None if default is None else self.literal(default),
                )
            )
        if is_mapping:
            self.once(seen, "mappings", item, "the field mapping list")
            fields["mappings"] = tuple(mappings)
        else:
            self.once(seen, "columns", item, "the column list")
            fields["columns"] = tuple(columns)

    def tail_fields_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "fields", item, "FIELDS")
        values: dict[str, Any] = {}
        own: dict[str, Any] = {}
        for opt in _subs(item, "fields_terminated", "fields_enclosed", "fields_escaped"):
            key = {
                "fields_terminated": "terminated_by",
                "fields_enclosed": "enclosed_by",
                "fields_escaped": "escaped_by",
            }[str(opt.data)]
            self.once(own, key, opt, key.upper().replace("_", " "))
            values[key] = self.string(_tok(opt, "STRING"))
            if opt.data == "fields_enclosed":
                values["optionally_enclosed"] = _tok(opt, "OPTIONALLY") is not None
        fields["fields"] = a.FieldsFormat(**values)

    def tail_lines_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "lines", item, "LINES")
        values: dict[str, Any] = {}
        for opt in _subs(item, "lines_terminated", "lines_starting"):
            key = "terminated_by" if opt.data == "lines_terminated" else "starting_by"
            self.once(values, key, opt, key.upper().replace("_", " "))
            values[key] = self.string(_tok(opt, "STRING"))
        fields["lines"] = a.LinesFormat(**values)

    def tail_ignore_lines(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "ignore_lines", item, "IGNORE … LINES")
        fields["ignore_lines"] = self.integer(_sub(item, "int_value"), 0, "IGNORE … LINES")

    def tail_set_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        assigned: dict[str, Any] = {}
        out = []
        for assignment in _subs(item, "assignment"):
            column = self.name(_sub(assignment, "name"))
            self.once(assigned, column, assignment, f"SET of column '{column}'")
            out.append(a.Assignment(column, self.expr(_sub(assignment, "expr_text"))))
        fields["assignments"] = tuple(out)

    def tail_where_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        fields["where"] = self.expr(_sub(item, "expr_text"))

    def _start_pipeline(self, tree: Tree) -> a.StartPipeline:
        foreground = _sub(tree, "foreground")
        limit = None
        if foreground is not None and _sub(foreground, "int_value") is not None:
            limit = self.integer(_sub(foreground, "int_value"), 1, "LIMIT … BATCHES")
        return a.StartPipeline(
            self.name(_sub(tree, "name")),
            if_not_running=_sub(tree, "if_not_running") is not None,
            foreground=foreground is not None,
            limit_batches=limit,
        )

    def _start_all_pipelines(self, tree: Tree) -> a.StartAllPipelines:
        return a.StartAllPipelines()

    def _stop_pipeline(self, tree: Tree) -> a.StopPipeline:
        return a.StopPipeline(
            self.name(_sub(tree, "name")), if_running=_sub(tree, "if_running") is not None
        )

    def _stop_all_pipelines(self, tree: Tree) -> a.StopAllPipelines:
        return a.StopAllPipelines()

    def _drop_pipeline(self, tree: Tree) -> a.DropPipeline:
        return a.DropPipeline(
            self.name(_sub(tree, "name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _alter_pipeline(self, tree: Tree) -> a.AlterPipeline:
        fields: dict[str, Any] = {
            "name": self.name(_sub(tree, "name")),
            "if_exists": _sub(tree, "if_exists") is not None,
        }
        seen: dict[str, Any] = {}
        for item in tree.children:
            if not isinstance(item, Tree) or item.data in ("name", "if_exists"):
                continue
            if item.data == "alter_offsets":
                self.once(seen, "offsets", item, "OFFSETS")
                which = _tok(item, "EARLIEST", "LATEST")
                assert which is not None
                fields["offsets"] = which.type
            elif item.data == "alter_offsets_json":
                self.once(seen, "offsets", item, "OFFSETS")
                fields["offsets_json"] = self.json_object(
                    _tok(item, "STRING"), "OFFSETS", arrays=True
                )
            else:
                self.setting(item, seen, fields)
        return a.AlterPipeline(**fields)

    def _alter_pipeline_drop_file(self, tree: Tree) -> a.AlterPipelineDropFile:
        return a.AlterPipelineDropFile(
            self.name(_sub(tree, "name")),
            self.string(_tok(tree, "STRING")),
            if_exists=_sub(tree, "if_exists") is not None,
        )

    def _test_pipeline(self, tree: Tree) -> a.TestPipeline:
        limit = _sub(tree, "int_value")
        return a.TestPipeline(
            self.name(_sub(tree, "name")),
            limit=None if limit is None else self.integer(limit, 1, "LIMIT"),
        )

    def _show_pipelines(self, tree: Tree) -> a.ShowPipelines:
        return a.ShowPipelines()

    def _show_create_pipeline(self, tree: Tree) -> a.ShowCreatePipeline:
        return a.ShowCreatePipeline(self.name(_sub(tree, "name")))

    # -------------------------------------------------------------- variables

    def scope(self, tree: Tree) -> Any:
        scope = _sub(tree, "scope", "show_scope")
        return None if scope is None else _kw(scope)

    def _show_variables(self, tree: Tree) -> a.ShowVariables:
        like = _tok(tree, "STRING")
        return a.ShowVariables(self.scope(tree), None if like is None else self.string(like))

    def _show_tables(self, tree: Tree) -> a.ShowTables:
        like = _tok(tree, "STRING")
        return a.ShowTables(None if like is None else self.string(like))

    def _show_other(self, tree: Tree) -> a.Query:
        return a.Query(script.normalize(self.stmt))

    def _set_variable(self, tree: Tree) -> a.SetVariable:
        var = _sub(tree, "var_name")
        parts = self.names(var)
        if any("." in p for p in parts):  # the name is stored dotted: a dot inside is lost
            assert var is not None
            self.fail("a part of a variable name cannot contain '.'", var)
        name = ".".join(parts)
        holder = _sub(tree, "set_value")
        assert holder is not None
        node = holder.children[0]
        if isinstance(node, Token):
            value = a.Literal("word", "ON")
        elif node.data == "name":
            value = a.Literal("word", self.name(node))
        else:
            value = self.literal(node)
        return a.SetVariable(name, value, self.scope(tree))

    # -------------------------------------------------------------- tables

    def _create_table(self, tree: Tree) -> a.CreateTable:
        storage = _sub(tree, "table_storage")
        columns = [self.column(c) for c in _subs(tree, "column_def", "computed_column")]
        keys = [
            (k, self.table_key(k))
            for k in _subs(tree, "primary_key", "shard_key", "sort_key", "plain_key", "unique_key")
        ]
        known: dict[str, Any] = {}
        singles: dict[str, Any] = {}
        for node, column in zip(_subs(tree, "column_def", "computed_column"), columns):
            self.once(known, column.name.lower(), node, f"column '{column.name}'")
            if column.primary_key:
                self.once(singles, "PRIMARY", node, "PRIMARY KEY")
        for node, key in keys:
            if key.kind in ("PRIMARY", "SHARD", "SORT"):
                self.once(singles, key.kind, node, f"{key.kind} KEY")
            if not key.columns and key.kind not in ("SHARD", "SORT"):  # SingleStore: keyless
                self.fail("a key needs at least one column", node)
            for col in key.columns:
                if col.lower() not in known:
                    self.fail(f"key column '{col}' is not a column of the table", node)
        return a.CreateTable(
            self.name(_sub(tree, "name")),
            tuple(columns),
            tuple(k for _, k in keys),
            if_not_exists=_sub(tree, "if_not_exists") is not None,
            storage=None if storage is None else _kw(storage),
            reference=_tok(tree, "REFERENCE") is not None,
        )

    def column(self, tree: Tree) -> a.ColumnDef:
        name = self.name(_sub(tree, "name"))
        dtype_tree = _sub(tree, "data_type", "generic_type")
        assert dtype_tree is not None
        dtype = self.data_type(dtype_tree)
        if tree.data == "computed_column":
            holder: Tree | Token | None = _sub(tree, "expr_text")
            assert isinstance(holder, Tree)
            inner = holder.children[0]
            if isinstance(inner, Tree) and inner.data == "paren" and len(inner.children) == 1:
                holder = inner.children[0]
            text = script.normalize(self.stmt[_start(holder) : _end(holder)])
            return a.ColumnDef(name, dtype, computed=a.Expr(text))
        seen: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for attr in _subs(tree, *_COLUMN_ATTRS):
            key = _COLUMN_ATTRS[str(attr.data)]
            self.once(seen, key, attr, _ATTR_NAMES[key])
            values[key] = self.column_attr(attr)
        return a.ColumnDef(name, dtype, **values)

    def column_attr(self, attr: Tree) -> Any:
        kind = attr.data
        if kind in ("attr_not_null", "attr_null"):
            return kind == "attr_null"
        if kind == "attr_default":
            return self.literal(_at(attr, 1))
        if kind == "attr_default_word":
            return a.Literal("word", self.name(_sub(attr, "name")))
        if kind == "attr_default_call":
            digits = _tok(attr, "NUMBER")
            if digits is not None and not digits.value.isdigit():
                self.fail("expected an integer", digits)
            arg = "" if digits is None else str(self.number(digits))
            return a.Literal("call", f"{a.quote_ident(self.name(_sub(attr, 'name')))}({arg})")
        if kind in ("attr_collate", "attr_charset"):
            return self.name(_sub(attr, "name"))
        if kind == "attr_comment":
            return self.string(_tok(attr, "STRING"))
        return True

    def table_key(self, tree: Tree) -> a.TableKey:
        kind = {
            "primary_key": "PRIMARY",
            "shard_key": "SHARD",
            "sort_key": "SORT",
            "plain_key": "KEY",
            "unique_key": "UNIQUE",
        }[str(tree.data)]
        key_name = _sub(tree, "name")
        using = _sub(tree, "index_using")
        return a.TableKey(
            kind,
            self.names(_sub(tree, "key_columns")),
            name=None if key_name is None else self.name(key_name),
            using=None
            if using is None
            else " ".join(_kw(using, i) for i in range(1, len(using.children))),
        )

    def data_type(self, tree: Tree, depth: int = 0) -> a.DataType:
        if depth > _MAX_TYPE_DEPTH:
            self.fail("type is nested too deeply", tree)
        if tree.data == "query_type":
            fields = tuple(self.struct_field(f, depth) for f in _subs(tree, "struct_field"))
            return a.DataType("QUERY", fields=fields)
        type_name = _sub(tree, "type_name")
        assert type_name is not None
        name = str(type_name.children[0]).upper()
        if tree.data == "generic_type":
            return self.generic_type(tree, name, type_name, depth)
        if name in _GENERIC_TYPES:
            self.fail(f"{name} needs its element types in <…>", type_name)
        if name not in _TYPE_PARAMS:
            self.fail(f"unknown type '{type_name.children[0]}'", type_name)
        params_tree = _sub(tree, "type_params")
        params: list[int] = []
        for tok in [] if params_tree is None else params_tree.children:
            assert isinstance(tok, Token)
            value = self.number(tok)
            if not isinstance(value, int):
                self.fail("type parameters must be integers", tok)
            params.append(value)
        if len(params) > _TYPE_PARAMS[name]:
            assert params_tree is not None
            self.fail(f"{name} takes at most {_TYPE_PARAMS[name]} parameter(s)", params_tree)
        unsigned = _tok(tree, "UNSIGNED")
        if unsigned is not None and name not in _NUMERIC_TYPES:
            self.fail(f"{name} cannot be UNSIGNED", unsigned)
        return a.DataType(name, tuple(params), unsigned=unsigned is not None)

    def generic_type(self, tree: Tree, name: str, at: Tree, depth: int) -> a.DataType:
        if name not in _GENERIC_TYPES:
            self.fail(f"{name} does not take <…> arguments", at)
        items = [c for c in tree.children if isinstance(c, Tree) and c is not at]
        if name == "STRUCT":
            for item in items:
                if item.data != "struct_field":
                    self.fail("STRUCT members need a name (name: type)", item)
            return a.DataType(name, fields=tuple(self.struct_field(f, depth) for f in items))
        for item in items:
            if item.data == "struct_field":
                self.fail(f"{name} takes types, not named fields", item)
        if len(items) != _GENERIC_TYPES[name]:
            self.fail(f"{name} takes {_GENERIC_TYPES[name]} type argument(s)", at)
        return a.DataType(name, args=tuple(self.data_type(i, depth + 1) for i in items))

    def struct_field(self, tree: Tree, depth: int) -> a.StructField:
        dtype = tree.children[-1]
        assert isinstance(dtype, Tree)
        return a.StructField(self.name(_sub(tree, "name")), self.data_type(dtype, depth + 1))

    def _drop_table(self, tree: Tree) -> a.DropTable:
        return a.DropTable(self.name(_sub(tree, "name")), _sub(tree, "if_exists") is not None)

    def _describe_table(self, tree: Tree) -> a.DescribeTable:
        names = [self.name(c) for c in tree.children if isinstance(c, Tree) and c.data == "name"]
        if len(names) == 2:
            return a.DescribeTable(names[1], database=names[0])
        return a.DescribeTable(names[0])

    def _alter_table(self, tree: Tree) -> a.AlterTableAddColumn:
        column = _sub(tree, "column_def", "computed_column")
        assert column is not None
        return a.AlterTableAddColumn(self.name(_sub(tree, "name")), self.column(column))

    def _alter_table_drop(self, tree: Tree) -> a.AlterTableDropColumn:
        table, column = (self.name(n) for n in _subs(tree, "name"))
        return a.AlterTableDropColumn(table, column)

    def _alter_table_modify(self, tree: Tree) -> a.AlterTableModifyColumn:
        column = _sub(tree, "column_def", "computed_column")
        assert column is not None
        if column.data == "computed_column":
            self.fail(
                "MODIFY COLUMN cannot change a computed column's expression (not supported); "
                "drop the column and add it again",
                column,
            )
        return a.AlterTableModifyColumn(self.name(_sub(tree, "name")), self.column(column))

    def _create_index(self, tree: Tree) -> a.CreateIndex:
        index, table = (self.name(n) for n in _subs(tree, "name"))
        key_columns = _sub(tree, "key_columns")
        assert key_columns is not None
        columns = self.names(key_columns)
        if not columns:
            self.fail("an index needs at least one column", key_columns)
        return a.CreateIndex(index, table, columns)

    def _optimize_table(self, tree: Tree) -> a.OptimizeTable:
        return a.OptimizeTable(self.name(_sub(tree, "name")), _tok(tree, "FULL") is not None)

    def _vacuum_table(self, tree: Tree) -> a.Vacuum:
        hours = _sub(tree, "int_value")
        return a.Vacuum(
            self.name(_sub(tree, "name")),
            None if hours is None else self.integer(hours, 0, "RETAIN … HOURS"),
            _tok(tree, "DRY") is not None,
        )

    def _show_table_status(self, tree: Tree) -> a.ShowTableStatus:
        like = _tok(tree, "STRING")
        return a.ShowTableStatus(None if like is None else self.string(like))

    def _drop_index(self, tree: Tree) -> a.DropIndex:
        index, table = (self.name(n) for n in _subs(tree, "name"))
        return a.DropIndex(index, table)

    # -------------------------------------------------------------- DML, queries, procedures

    def _insert(self, tree: Tree) -> a.Insert:
        table = self.name(_sub(tree, "name"))
        columns = self.names(_sub(tree, "insert_columns"))
        replace = _tok(tree, "REPLACE") is not None
        query = _sub(tree, "insert_query")
        if query is not None:
            text = script.normalize(self.stmt[_start(query) : _end(query)])
            return a.Insert(table, columns, query=a.Query(text), replace=replace)
        rows = tuple(
            tuple(self.expr(e) for e in _subs(row, "expr_text"))
            for row in _subs(tree, "insert_row")
        )
        return a.Insert(table, columns, rows=rows, replace=replace)

    def _show_create_table(self, tree: Tree) -> a.ShowCreateTable:
        return a.ShowCreateTable(self.name(_sub(tree, "name")))

    def _drop_procedure(self, tree: Tree) -> a.DropProcedure:
        return a.DropProcedure(
            self.name(_sub(tree, "name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _show_procedures(self, tree: Tree) -> a.ShowProcedures:
        like = _tok(tree, "STRING")
        return a.ShowProcedures(None if like is None else self.string(like))

    # -------------------------------------------------------------- users
    def user_name(self, tree: Tree | None) -> str:
        """``name`` or ``'name'``, with an optional ``@'%'`` (the only host accepted)."""
        assert tree is not None
        parts = [
            self.string(c) if isinstance(c, Token) and c.type == "STRING" else self.name(c)
            for c in tree.children
            if not (isinstance(c, Token) and c.type == "AT")
        ]
        if len(parts) == 2 and parts[1] != "%":
            self.fail(
                f"users are not restricted by host: write '{parts[0]}'@'%' or '{parts[0]}'",
                tree.children[-1],
            )
        if not parts[0]:
            self.fail("empty user name", tree.children[0])
        return parts[0]

    def password(self, tree: Tree) -> Secret:
        tok = _tok(tree, "STRING")
        value = self.string(tok)
        if not value:
            self.fail("a user's password must not be empty", tok)
        return Secret(value)

    def _create_user(self, tree: Tree) -> u.CreateUser:
        return u.CreateUser(
            self.user_name(_sub(tree, "user_name")),
            self.password(tree),
            if_not_exists=_sub(tree, "if_not_exists") is not None,
        )

    def _alter_user(self, tree: Tree) -> u.AlterUser:
        return u.AlterUser(self.user_name(_sub(tree, "user_name")), self.password(tree))

    def _drop_user(self, tree: Tree) -> u.DropUser:
        return u.DropUser(
            self.user_name(_sub(tree, "user_name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _show_users(self, tree: Tree) -> u.ShowUsers:
        like = _tok(tree, "STRING")
        return u.ShowUsers(None if like is None else self.string(like))

    def _show_grants(self, tree: Tree) -> u.ShowGrants:
        who = _sub(tree, "user_name")
        return u.ShowGrants(None if who is None else self.user_name(who))

    def privileges(self, tree: Tree) -> tuple[str, ...]:
        out = []
        for priv in _subs(_at(tree, 1), "privilege"):
            words = []
            for w in _subs(priv, "priv_word"):
                c = w.children[0]
                tok = c.children[0] if isinstance(c, Tree) else c
                if tok.type == "QUOTED_IDENT":
                    self.fail("a privilege is written without quotes", tok)
                words.append(tok.value.upper())
            name = " ".join(words)
            if name not in (*PRIVILEGES, GRANT_OPTION, "ALL", "ALL PRIVILEGES", "USAGE"):
                self.fail(f"unknown privilege '{name}' (privileges: {', '.join(PRIVILEGES)})", priv)
            out.append(name)
        return tuple(out)

    def priv_level(self, tree: Tree) -> str:
        """As written (quoted names keep their backquotes)."""
        level = _sub(tree, "priv_level")
        assert level is not None
        parts = [c.children[0] if isinstance(c, Tree) else c for c in level.children]
        return "".join(p.value for p in parts)

    def user_names(self, tree: Tree) -> tuple[str, ...]:
        names = _sub(tree, "user_names")
        assert names is not None
        return tuple(self.user_name(n) for n in _subs(names, "user_name"))

    def _grant(self, tree: Tree) -> u.Grant:
        option = _sub(tree, "name")
        if option is not None and self.name(option).upper() != "OPTION":
            self.fail("expected WITH GRANT OPTION", option.children[0])
        return u.Grant(
            self.privileges(tree),
            self.priv_level(tree),
            self.user_names(tree),
            grant_option=option is not None,
        )

    def _revoke(self, tree: Tree) -> u.Revoke:
        return u.Revoke(self.privileges(tree), self.priv_level(tree), self.user_names(tree))

    def _query(self, tree: Tree) -> a.Query:
        return a.Query(script.normalize(self.stmt))

    def _create_procedure(self, tree: Tree) -> a.CreateProcedure:
        params = tuple(
            a.ProcedureParam(
                self.name(_sub(p, "name")),
                self.data_type(_at(p, 1)),
            )
            for p in _subs(tree, "proc_param")
        )
        seen: dict[str, Any] = {}
        for node, param in zip(_subs(tree, "proc_param"), params):
            self.once(seen, param.name.lower(), node, f"parameter '{param.name}'")
        returns = _sub(tree, "data_type", "generic_type")
        body = _tok(tree, "REST")
        if body is None:
            self.fail("expected BEGIN … END after AS", tree, ParseError)
        toks = script.tokens(body.value)
        if not toks or toks[0].type != "WORD" or toks[0].value.upper() not in ("BEGIN", "DECLARE"):
            self.fail("a procedure body starts with BEGIN or DECLARE", body, ParseError)
        if toks[-1].type != "WORD" or toks[-1].value.upper() != "END":
            last = _start(body) + (toks[-1].start_pos or 0)
            self.fail_at("a procedure body ends with END", last, last + 1, ParseError)
        return a.CreateProcedure(
            self.name(_sub(tree, "name")),
            params,
            script.normalize(body.value),
            or_replace=_sub(tree, "or_replace") is not None,
            returns=None if returns is None else self.data_type(returns),
        )


_COLUMN_ATTRS = {
    "attr_not_null": "nullable",
    "attr_null": "nullable",
    "attr_default": "default",
    "attr_default_word": "default",
    "attr_default_call": "default",
    "attr_primary_key": "primary_key",
    "attr_collate": "collate",
    "attr_charset": "charset",
    "attr_auto_increment": "auto_increment",
    "attr_comment": "comment",
}
_ATTR_NAMES = {
    "nullable": "NULL / NOT NULL",
    "default": "DEFAULT",
    "primary_key": "PRIMARY KEY",
    "collate": "COLLATE",
    "charset": "CHARACTER SET",
    "auto_increment": "AUTO_INCREMENT",
    "comment": "COMMENT",
}

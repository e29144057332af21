"""``CREATE PROCEDURE`` lowered into a :class:`~sparkpipes.config.procedure.ProcedureSpec`:
a pipeline procedure as SingleStore's docs and users write one.

What a body may hold (SingleStore's MPSQL, the part that loads a batch):

- ``DECLARE`` lines (each may repeat the word): ``name QUERY(col type, …) = SELECT …`` (a
  named query the statements read) and ``name type [= expr | DEFAULT expr]`` (a scalar
  variable, NULL without a value);
- ``INSERT | REPLACE INTO t [(cols)] SELECT …`` (``ON DUPLICATE KEY UPDATE`` too) and
  ``INSERT INTO t [(cols)] VALUES (…), …``;
- ``SET name = expr`` / ``name = expr`` of a declared variable (a scalar subquery over the
  batch too: ``(SELECT count(*) FROM batch)``); later statements read its value;
- ``DELETE FROM t [WHERE …] [ORDER BY …] [LIMIT n]`` and ``UPDATE t SET col = expr, …
  [WHERE …] [ORDER BY …] [LIMIT n]``: each statement sees what the earlier ones left
  (``engine.changes``), all committed with the batch;
- ``IF c THEN … [ELSEIF c THEN …] [ELSE …] END IF`` around any of these;
- ``CALL p(q [, expr …])`` of another procedure, ``q`` (the batch, or a ``DECLARE``d
  query) its batch and each other argument the value of one of its scalar parameters (by
  position, cast to the declared type): its statements run there, with the caller's, in
  the same commit;
- ``ECHO SELECT …``: it answers a caller, and a pipeline's batch has none — no effect.

Anything else (loops, an ``EXCEPTION`` handler) is an error that names it.
"""

from __future__ import annotations

import dataclasses
import re

from sparkpipes.config.procedure import ProcedureSpec, ProcedureStatement, ProcedureVariable
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore import lexer, script
from sparkpipes.frontends.singlestore.parser import parse_one
from sparkpipes.frontends.singlestore.types import spark_type

_BODY = re.compile(r"\bBEGIN\b(.*)\bEND\b\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_DECLARE = re.compile(r"\bAS\s+DECLARE\b(.*?)\bBEGIN\b", re.IGNORECASE | re.DOTALL)
_NAME = r"(`(?:[^`]|``)+`|[A-Za-z_][\w$]*)"
_QUERY_VAR = re.compile(
    rf"^{_NAME}\s+QUERY\s*\((.*?)\)\s*=\s*((?:SELECT|WITH)\b.*)$", re.IGNORECASE | re.DOTALL
)
_SCALAR_VAR = re.compile(
    rf"^{_NAME}\s+(.+?)(?:\s*(?:=|\bDEFAULT\b)\s*(.+))?$", re.IGNORECASE | re.DOTALL
)
_ASSIGN = re.compile(rf"^(?:SET\s+)?{_NAME}\s*(?::=|=)\s*(.+)$", re.IGNORECASE | re.DOTALL)


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def to_procedure(stmt: A.CreateProcedure, text: str) -> ProcedureSpec:
    """Lower ``CREATE PROCEDURE`` (``text``: the statement as written, for the lines of
    its body statements); ConfigError names what a body holds that is not supported."""
    where = f"procedure '{stmt.name}'"
    params = [p for p in stmt.params if p.type.name == "QUERY"]
    if len(params) != 1:
        raise ConfigError(
            f"{where}: a pipeline procedure takes one parameter, the batch, of type "
            "QUERY(col type, …), e.g. (batch QUERY(topic TEXT, id JSON, record JSON)); "
            "one a body CALLs may take scalar parameters besides it"
        )
    param = params[0]
    scalars = tuple(
        ProcedureVariable(p.name, spark_type(p.type)) for p in stmt.params if p is not param
    )
    columns = tuple((f.name, spark_type(f.type), f.type.to_sql()) for f in param.type.fields)
    if not columns:
        raise ConfigError(f"{where}: QUERY() of parameter '{param.name}' names no columns")
    m = _BODY.search(text)
    if m is None:
        raise ConfigError(
            f"{where}: a pipeline procedure's body is [DECLARE …;] BEGIN, statements, END"
        )
    declared = _DECLARE.search(text)
    queries, variables = ((), ()) if declared is None else _declarations(where, declared.group(1))
    variables = (*scalars, *variables)
    names = [v.name.lower() for v in variables]
    clash = sorted(n for n in set(names) if names.count(n) > 1 or n.startswith("__sp_"))
    if clash:
        raise ConfigError(f"{where}: '{clash[0]}' is a parameter and DECLAREd, or sparkpipes' own")
    batches = [param.name, *(n for n, _ in queries)]
    statements, guards = _statements(where, text, m.group(1), m.start(1), set(names), batches)
    if not any(s.table or s.call for s in statements):
        raise ConfigError(f"{where}: the body writes no table")
    not_null = tuple(f.name for f in param.type.fields if f.not_null)
    return ProcedureSpec(
        stmt.name,
        param.name,
        columns,
        statements,
        stmt.to_sql(),
        not_null,
        queries,
        (*variables, *guards),
        tuple(v.name for v in scalars),
        stmt.params.index(param),
    )


def _declarations(
    where: str, section: str
) -> tuple[tuple[tuple[str, str], ...], tuple[ProcedureVariable, ...]]:
    """The named queries and the scalar variables of a DECLARE section."""
    queries: list[tuple[str, str]] = []
    variables: list[ProcedureVariable] = []
    names: set[str] = set()
    for span in script.split(section):
        text = script.normalize(section[span.start : span.end]).rstrip(";").strip()
        text = re.sub(r"^DECLARE\s+", "", text, flags=re.IGNORECASE)
        query, scalar = _QUERY_VAR.match(text), _SCALAR_VAR.match(text)
        if query is None and scalar is None:
            raise ConfigError(f"{where}: cannot read DECLARE '{text[:60]}'")
        name = _unquote((query or scalar).group(1))  # type: ignore[union-attr]
        if name.lower().startswith("__sp_"):
            raise ConfigError(f"{where}: names starting __sp_ are sparkpipes' own ('{name}')")
        if name.lower() in names:
            raise ConfigError(f"{where}: DECLARE names '{name}' twice")
        names.add(name.lower())
        if query is not None:
            queries.append((name, query.group(3)))
            continue
        assert scalar is not None
        kind = parse_one(f"CREATE TABLE __t (c {scalar.group(2)})").columns[0].type
        variables.append(ProcedureVariable(name, spark_type(kind), scalar.group(3)))
    return tuple(queries), tuple(variables)


#: ``CALL [db.]p(args)``: groups database, procedure, arguments
_CALL = re.compile(rf"^CALL\s+(?:{_NAME}\.)?{_NAME}\s*\((.*)\)$", re.IGNORECASE | re.DOTALL)
_IF = re.compile(r"^IF\s+(.*?)\s+THEN\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_ELSEIF = re.compile(r"^ELSEIF\s+(.*?)\s+THEN\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_ELSE = re.compile(r"^ELSE\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_END_IF = re.compile(r"^END\s+IF$", re.IGNORECASE)


class _Body:
    """The statements of a body, flat: ``IF c THEN … [ELSEIF c THEN …] [ELSE …] END IF``
    becomes guard variables (``__sp_if<n>``, each branch's condition computed once, where
    the IF stands, under the enclosing branch's) and statements that run only when their
    guard is true (``ProcedureStatement.when``)."""

    def __init__(self, where: str, variables: set[str], batches: list[str]) -> None:
        self.where = where
        self.variables = variables
        #: what a CALL may give as a batch: the batch parameter, the DECLAREd queries
        self.batches = batches
        self.out: list[ProcedureStatement] = []
        self.guards: list[ProcedureVariable] = []
        #: open IFs: (the guard of the branch, the guard "a branch was taken", outer guard)
        self.open: list[tuple[str, str, str | None]] = []

    @property
    def guard(self) -> str | None:
        return self.open[-1][0] if self.open else None

    def _set(self, name: str, expr: str, line: int, text: str) -> None:
        self.out.append(ProcedureStatement("", expr, line=line, text=text, variable=name))

    def _new(self) -> str:
        name = f"__sp_if{len(self.guards) + 1}"
        self.guards.append(ProcedureVariable(name, "BOOLEAN"))
        return name

    def add(self, written: str, line: int) -> None:
        at = f"{self.where}, line {line}"
        if m := _IF.match(written):
            outer = self.guard
            branch, taken = self._new(), self._new()
            within = f"{outer} AND " if outer else ""
            self._set(branch, f"{within}coalesce(({m.group(1)}), FALSE)", line, written)
            self._set(taken, branch, line, written)
            self.open.append((branch, taken, outer))
            if m.group(2):
                self.add(m.group(2), line)
            return
        elif_, else_ = _ELSEIF.match(written), _ELSE.match(written)
        if elif_ or else_:
            if not self.open:
                raise ConfigError(f"{at}: {written.split()[0].upper()} without IF")
            branch, taken, outer = self.open[-1]
            within = f"{outer} AND " if outer else ""
            cond = f" AND coalesce(({elif_.group(1)}), FALSE)" if elif_ else ""
            self._set(branch, f"{within}NOT {taken}{cond}", line, written)
            self._set(taken, f"{taken} OR {branch}", line, written)
            rest = elif_.group(2) if elif_ else else_.group(1)  # type: ignore[union-attr]
            if rest:
                self.add(rest, line)
            return
        if _END_IF.match(written):
            if not self.open:
                raise ConfigError(f"{at}: END IF without IF")
            self.open.pop()
            return
        self.out.append(dataclasses.replace(self._statement(written, line), when=self.guard))

    def _statement(self, written: str, line: int) -> ProcedureStatement:
        at = f"{self.where}, line {line}"
        if re.match(r"CALL\b", written, re.IGNORECASE):
            return self._call(written, line, at)
        assign = _ASSIGN.match(written)
        if assign is not None and _unquote(assign.group(1)).lower() in self.variables:
            name = _unquote(assign.group(1))
            return ProcedureStatement("", assign.group(2), line=line, text=written, variable=name)
        if assign is not None and written.upper().startswith("SET "):
            raise ConfigError(f"{at}: SET of '{assign.group(1)}', which DECLARE does not name")
        try:
            stmt = parse_one(written)
        except ConfigError:
            raise
        except Exception as e:  # a syntax error, located in the body statement
            raise ConfigError(f"{at}: {getattr(e, 'message', e)}") from None
        if isinstance(stmt, (A.Delete, A.Update)):
            return change_statement(stmt, line, written)
        if not isinstance(stmt, A.Insert):
            raise ConfigError(
                f"{at}: the body takes INSERT | REPLACE INTO table … SELECT | VALUES, DELETE, "
                f"UPDATE and SET of its variables; '{written[:60]}' is not supported yet"
            )
        if stmt.on_duplicate and stmt.replace:
            raise ConfigError(f"{at}: REPLACE takes no ON DUPLICATE KEY UPDATE")
        return ProcedureStatement(
            stmt.table,
            stmt.query.text if stmt.query is not None else _values_query(stmt.rows),
            tuple(stmt.columns),
            stmt.replace,
            line,
            written,
            tuple((a.column, a.expr.text) for a in stmt.on_duplicate),
            ignore=stmt.ignore,
        )

    def _call(self, written: str, line: int, at: str) -> ProcedureStatement:
        """``CALL p(q)`` or ``CALL p(a, …)``: ``q`` (the batch, or a DECLAREd query) is the
        callee's batch; the other arguments are expressions for its scalar parameters,
        bound by position as the callee declares them (checked against it)."""
        call = _CALL.match(written)
        args = _arguments(call.group(3)) if call is not None else []
        batches = [a for a in args if _unquote(a).lower() in {b.lower() for b in self.batches}]
        if call is None or len(batches) != 1:
            raise ConfigError(
                f"{at}: CALL takes a procedure and, among its arguments, the query it gets "
                f"as its batch: its batch is '{self.batches[0]}' or a DECLAREd QUERY "
                f"variable (CALL p({self.batches[0]}), CALL p({self.batches[0]}, 10)); "
                f"'{written[:60]}' is not supported"
            )
        name, query = _unquote(call.group(2)), _unquote(batches[0])
        given = () if len(args) == 1 else tuple(args)
        return ProcedureStatement("", query, line=line, text=written, call=name, args=given)


def change_statement(stmt: A.Delete | A.Update, line: int, written: str) -> ProcedureStatement:
    """A DELETE or UPDATE as the statement that runs it (a body's, or one of its own)."""
    assign = stmt.assignments if isinstance(stmt, A.Update) else ()
    where = stmt.where.text if stmt.where is not None else "TRUE"
    return ProcedureStatement(
        stmt.table,
        stmt.condition() if isinstance(stmt, A.Delete) else where,
        line=line,
        text=written,
        change="delete" if isinstance(stmt, A.Delete) else "update",
        assign=tuple((a.column, a.expr.text) for a in assign),
        alias=stmt.alias,
        order=tuple((o.expr.text, o.desc) for o in stmt.order),
        limit=stmt.limit,
    )


def _arguments(text: str) -> list[str]:
    """A CALL's arguments: ``text`` cut at the commas outside parentheses and literals."""
    out: list[str] = []
    depth, start = 0, 0
    for tok in lexer.lex(text):
        if tok.type != "OTHER":
            continue
        if tok.value in "([":
            depth += 1
        elif tok.value in ")]":
            depth -= 1
        elif tok.value == "," and depth == 0:
            out.append(text[start : tok.start_pos].strip())
            start = (tok.start_pos or 0) + 1
    out.append(text[start:].strip())
    return [a for a in out if a] if any(out) else []


def _statements(
    where: str, text: str, inner: str, base: int, variables: set[str], batches: list[str]
) -> tuple[tuple[ProcedureStatement, ...], tuple[ProcedureVariable, ...]]:
    """The body's statements and the guard variables of its IFs."""
    body = _Body(where, variables, batches)
    for span in script.split(inner):
        line = text[: base + span.start].count("\n") + 1
        written = script.normalize(inner[span.start : span.end]).rstrip(";").strip()
        if re.match(r"ECHO\b", written, re.IGNORECASE):
            continue  # answers a caller; a batch has none
        body.add(written, line)
    if body.open:
        raise ConfigError(f"{where}: IF without END IF")
    return tuple(body.out), tuple(body.guards)


def _values_query(rows: tuple[tuple[A.Expr, ...], ...]) -> str:
    """``VALUES (…), (…)`` as the query giving those rows."""
    return " UNION ALL ".join("SELECT " + ", ".join(e.text for e in row) for row in rows)

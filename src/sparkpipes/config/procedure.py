"""``ProcedureSpec``: a stored procedure that a pipeline loads ``INTO PROCEDURE``.

A pipeline procedure takes one parameter of type ``QUERY(col type, …)``: the batch's
decoded rows (a procedure another one CALLs may take scalar parameters besides it). Its
body is a list of statements, each ``INSERT|REPLACE INTO t [(cols)] SELECT … FROM
<param> … [ON DUPLICATE KEY UPDATE …]`` in the SingleStore dialect, run on
every batch in order, after ``DECLARE``d ``QUERY`` variables (named queries). The SQL
front end lowers ``CREATE PROCEDURE`` into this spec; the engine stores it and runs it
(``sparkpipes.sinks.procedure``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkpipes.config.core import check_name


@dataclass(frozen=True)
class ProcedureStatement:
    """One body statement: rows of ``query`` into ``table`` (``columns`` in order; none:
    every column that is not computed); ``replace``: upsert by the table's primary key.
    ``line`` is where the statement starts in the ``CREATE PROCEDURE`` text, for errors;
    ``text`` the statement as written."""

    table: str
    query: str
    columns: tuple[str, ...] = ()
    replace: bool = False
    line: int = 1
    text: str = ""
    #: ``ON DUPLICATE KEY UPDATE``: (column, expression) in the SingleStore dialect
    update: tuple[tuple[str, str], ...] = ()
    #: ``SET variable = expr``: the statement gives a variable the value of ``query`` (an
    #: expression) and writes no table (``table`` is empty)
    variable: str | None = None
    #: ``INSERT IGNORE``: a row whose primary key the table holds is skipped
    ignore: bool = False
    #: runs only when this (boolean) variable is true: the branch of an IF it is in
    when: str | None = None
    #: ``DELETE`` / ``UPDATE`` of ``table`` ("delete", "update"): ``query`` is then the
    #: condition (``WHERE``; ``TRUE`` without one), ``assign`` UPDATE's ``SET`` (column,
    #: expression) and ``alias`` the name the table has in them
    change: str | None = None
    assign: tuple[tuple[str, str], ...] = ()
    alias: str | None = None
    #: ``CALL call(query)``: the procedure runs with ``query`` (the batch's or a declared
    #: query's name) as its batch; the statement writes no table itself
    call: str | None = None
    #: ``CALL call(a, …)``: every argument as written (``query`` among them, at the place
    #: of the callee's QUERY parameter; the others expressions bound to its scalar
    #: parameters by position); empty: ``(query)`` alone
    args: tuple[str, ...] = ()
    #: DELETE / UPDATE ``ORDER BY``: (expression, descending), and ``LIMIT``: at most this
    #: many of the rows the condition holds for change, the first ones in that order
    order: tuple[tuple[str, bool], ...] = ()
    limit: int | None = None

    def tables(self) -> tuple[str, ...]:
        return (self.table,)


@dataclass(frozen=True)
class ProcedureVariable:
    """A scalar variable of the body: its name, Spark type and ``DECLARE``d value (an
    expression in the SingleStore dialect; None: NULL), set anew for every batch."""

    name: str
    type: str
    default: str | None = None


@dataclass(frozen=True)
class ProcedureSpec:
    """``param`` names the batch; ``columns`` are its ``(name, Spark type, declared type)``
    triples; ``sql`` is the ``CREATE PROCEDURE`` text, as ``SHOW CREATE`` would print it."""

    name: str
    param: str
    columns: tuple[tuple[str, str, str], ...]
    statements: tuple[ProcedureStatement, ...]
    sql: str
    #: the batch's columns declared NOT NULL in ``QUERY(…)``
    not_null: tuple[str, ...] = ()
    #: ``DECLARE name QUERY(…) = SELECT …``: (name, query), in order; each statement of
    #: the body (and each later query) may read the earlier ones by name
    queries: tuple[tuple[str, str], ...] = ()
    #: ``DECLARE name type [= expr]``: the scalar variables statements read and set (the
    #: scalar parameters first)
    variables: tuple[ProcedureVariable, ...] = ()
    #: the scalar parameters, in order (each a variable, set by a CALL's argument), and
    #: where the QUERY parameter stands among all of them
    scalars: tuple[str, ...] = ()
    position: int = 0

    def __post_init__(self) -> None:
        check_name(self.name, "procedure name")

    def calls(self) -> tuple[str, ...]:
        """The procedures the body CALLs, each once."""
        return tuple(dict.fromkeys(s.call for s in self.statements if s.call))

    def targets(self) -> tuple[str, ...]:
        """The tables the body writes itself, each once, in the order first written."""
        return tuple(dict.fromkeys(s.table for s in self.statements if s.table))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "param": self.param,
            "columns": [list(c) for c in self.columns],
            "statements": [
                {
                    "table": s.table,
                    "query": s.query,
                    "columns": list(s.columns),
                    "replace": s.replace,
                    "line": s.line,
                    "text": s.text,
                    **({"update": [list(u) for u in s.update]} if s.update else {}),
                    **({"variable": s.variable} if s.variable else {}),
                    **({"ignore": True} if s.ignore else {}),
                    **({"when": s.when} if s.when else {}),
                    **({"change": s.change} if s.change else {}),
                    **({"assign": [list(a) for a in s.assign]} if s.assign else {}),
                    **({"alias": s.alias} if s.alias else {}),
                    **({"call": s.call} if s.call else {}),
                    **({"args": list(s.args)} if s.args else {}),
                    **({"order": [list(o) for o in s.order]} if s.order else {}),
                    **({"limit": s.limit} if s.limit is not None else {}),
                }
                for s in self.statements
            ],
            "sql": self.sql,
            **({"not_null": list(self.not_null)} if self.not_null else {}),
            **({"queries": [list(q) for q in self.queries]} if self.queries else {}),
            **(
                {"variables": [[v.name, v.type, v.default] for v in self.variables]}
                if self.variables
                else {}
            ),
            **({"scalars": list(self.scalars), "position": self.position} if self.scalars else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProcedureSpec:
        return cls(
            name=d["name"],
            param=d["param"],
            columns=tuple((str(a), str(b), str(c)) for a, b, c in d["columns"]),
            statements=tuple(
                ProcedureStatement(
                    s["table"],
                    s["query"],
                    tuple(s.get("columns", ())),
                    bool(s.get("replace")),
                    int(s.get("line", 1)),
                    s.get("text", ""),
                    tuple((str(c), str(e)) for c, e in s.get("update", ())),
                    s.get("variable"),
                    bool(s.get("ignore")),
                    s.get("when"),
                    s.get("change"),
                    tuple((str(c), str(e)) for c, e in s.get("assign", ())),
                    s.get("alias"),
                    s.get("call"),
                    tuple(str(a) for a in s.get("args", ())),
                    tuple((str(e), bool(desc)) for e, desc in s.get("order", ())),
                    s.get("limit"),
                )
                for s in d["statements"]
            ),
            sql=d.get("sql", ""),
            not_null=tuple(d.get("not_null", ())),
            queries=tuple((str(n), str(q)) for n, q in d.get("queries", ())),
            variables=tuple(ProcedureVariable(*v) for v in d.get("variables", ())),
            scalars=tuple(d.get("scalars", ())),
            position=int(d.get("position", 0)),
        )

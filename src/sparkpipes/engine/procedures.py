"""Stored procedures that pipelines load ``INTO PROCEDURE``: create, check, drop, and the
batch "table" a pipeline decodes into (the procedure's ``QUERY(…)`` parameter).

A procedure is checked against the tables its body writes when it is created and again
when a pipeline is created or assembled: each target table exists, has the columns the
statement names, and has a primary key if the statement is a ``REPLACE``.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkpipes.catalog import TableRecord
from sparkpipes.config import PipelineSpec
from sparkpipes.config.procedure import ProcedureSpec, ProcedureStatement
from sparkpipes.engine.batch.generated import Generated
from sparkpipes.engine.batch.transform import REJECT_COLUMN, Transform, apply
from sparkpipes.engine.calls import arguments, call_query, parameters
from sparkpipes.engine.changes import (
    ChangedTable,
    check_change,
    one_way,
    single_expressions,
    statement_query,
)
from sparkpipes.engine.schema import to_arrow
from sparkpipes.engine.sql.dialect import INTERNAL, translate
from sparkpipes.engine.sql.sandbox import Admitted, check_expression, check_query
from sparkpipes.engine.sql.updates import update_expression, with_on_update
from sparkpipes.engine.sql.values import bound, markers, with_markers
from sparkpipes.errors import ConfigError, NotAdmittedError, NotFoundError, SinkError

#: the prefix of a batch's view (:func:`batch_view`)
BATCH_VIEW = "__sp_batch_"
#: the prefix of the view of a changed table's rows (``ProcedureBody._sql``)
STATE_VIEW = "__sp_state_"


class Procedures:
    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def create(self, spec: ProcedureSpec, *, replace: bool = False) -> None:
        """Store a pipeline procedure, checked against the tables its body writes; the
        pipelines that run it are assembled again."""
        self.check(spec)
        self.rt.catalog.procedures.put(spec.name, spec.to_json(), replace=replace)
        for name in self.users(spec.name):
            self.rt.forget(name)

    def get(self, name: str) -> ProcedureSpec:
        return ProcedureSpec.from_json(self.rt.catalog.procedures.get(name))

    def names(self) -> list[str]:
        """The names of the stored procedures."""
        return self.rt.catalog.procedures.names()

    def users(self, name: str) -> list[str]:
        """The pipelines that run procedure ``name``: into it, or into one that CALLs it."""
        runs = {name} | {p for p in self.names() if name in self.reach(p)}
        return [
            p.name
            for p in self.rt.catalog.pipelines.all()
            if p.definition.get("sink", {}).get("kind") == "procedure" and p.table in runs
        ]

    def reach(self, name: str) -> set[str]:
        """The procedures ``name`` CALLs, directly or through others."""
        found: set[str] = set()
        todo = [name]
        while todo:
            try:
                calls = self.get(todo.pop()).calls()
            except NotFoundError:
                continue
            todo += [c for c in calls if c not in found]
            found.update(calls)
        return found

    def drop(self, name: str, *, if_exists: bool = False) -> None:
        """Forget a procedure; refused while a pipeline or procedure uses it."""
        if if_exists and name not in self.names():
            return
        users = self.users(name)
        if users:
            raise ConfigError(
                f"procedure '{name}' is used by pipeline(s) {', '.join(users)}; drop or "
                "replace them first"
            )
        callers = [p for p in self.names() if p != name and name in self.get(p).calls()]
        if callers:
            raise ConfigError(
                f"procedure '{name}' is called by procedure(s) {', '.join(callers)}; drop or "
                "replace them first"
            )
        self.rt.catalog.procedures.drop(name)

    def body(self, spec: ProcedureSpec, seen: tuple[str, ...] = ()) -> ProcedureBody:
        """What a pipeline into ``spec`` runs: its body, checked, with the bodies of the
        procedures it CALLs (as they are now) and every table of them all."""
        if spec.name in seen:
            raise ConfigError(f"procedure '{spec.name}' CALLs itself (through {seen[-1]})")
        calls = {n: self.body(self.get(n), (*seen, spec.name)) for n in spec.calls()}
        tables = self.check(spec)
        for callee in calls.values():
            tables = {**callee.tables, **tables}
        return ProcedureBody(spec, tables, self.rt.catalog.tables.reserve_ids, self.rt.frame, calls)

    def statements(self, spec: ProcedureSpec, seen: tuple[str, ...] = ()) -> list[Any]:
        """The statements that write tables in ``spec``'s body and the bodies it CALLs."""
        out: list[ProcedureStatement] = []
        for s in spec.statements:
            if s.call and s.call not in seen and s.call != spec.name:
                try:
                    out += self.statements(self.get(s.call), (*seen, spec.name))
                except NotFoundError:
                    continue  # check() names it
            elif s.table:
                out.append(s)
        return out

    def _check_call(self, spec: ProcedureSpec, s: ProcedureStatement, where: str) -> None:
        try:
            callee = self.get(s.call or "")
        except NotFoundError:
            raise ConfigError(f"{where}: procedure '{s.call}' does not exist") from None
        if s.call == spec.name or spec.name in self.reach(s.call or ""):
            raise ConfigError(f"{where}: CALL {s.call} comes back to '{spec.name}'")
        queries = {spec.param.lower(), *(n.lower() for n, _ in spec.queries)}
        if s.query.lower() not in queries:
            raise ConfigError(
                f"{where}: CALL {s.call}({s.query}): its batch is '{spec.param}' or a "
                "DECLAREd QUERY variable"
            )
        for _, kind, expr in parameters(callee, s, where):  # as its batches run them
            self._check_query(spec, f"SELECT CAST(({expr}) AS {kind})", where)

    def check(self, spec: ProcedureSpec) -> dict[str, TableRecord]:
        """The tables the body writes; ConfigError naming the statement's line and what
        is wrong otherwise."""
        tables: dict[str, TableRecord] = {}
        for v in spec.variables:  # DECLARE v = expr: as its batches run it
            if v.default is not None:
                self._check_query(spec, f"SELECT ({v.default})", f"procedure '{spec.name}'")
        every = self.statements(spec)  # what the body and the procedures it CALLs write
        for s in spec.statements:
            where = f"procedure '{spec.name}', line {s.line}"
            if s.variable is not None:  # SET v = expr: the expression as its batches run it
                self._check_query(spec, f"SELECT ({s.query})", where)
                continue
            if s.call is not None:
                self._check_call(spec, s, where)
                self._check_query(spec, call_query(s), where)
                continue
            try:
                rec = tables.get(s.table) or self.rt.catalog.tables.get(s.table)
            except NotFoundError:
                raise ConfigError(
                    f"{where}: table '{s.table}' does not exist ({s.text[:80]})"
                ) from None
            tables[s.table] = rec
            unknown = [c for c in s.columns if c not in rec.schema.names]
            if unknown:
                raise ConfigError(
                    f"{where}: table '{s.table}' has no column(s) {', '.join(unknown)}"
                )
            if s.replace and not rec.primary_key:
                raise ConfigError(
                    f"{where}: REPLACE INTO needs a PRIMARY KEY (or one UNIQUE KEY) on "
                    f"table '{s.table}'"
                )
            if s.change:
                check_change(s, rec, where)
            for column, expr in s.update:
                if column not in rec.schema.names:
                    raise ConfigError(f"{where}: table '{s.table}' has no column '{column}'")
                update_expression(expr, rec.schema.names, s.table)
            self._check_query(spec, statement_query(s), where)
            if s.change and self.rt.spark_started:
                single_expressions(self.rt.spark, s, statement_query(s))
        one_way(spec.name, every)
        return tables

    def _check_query(self, spec: ProcedureSpec, query: str, where: str) -> None:
        """A body query admitted as its batches run it (variables as NULLs); when Spark has
        not started, the first batch checks it (no JVM for a CREATE)."""
        if not self.rt.spark_started:
            return
        view = batch_view()
        try:
            text = statement_sql(spec, query, view)
            stray = stray_views(check_query(self.rt.spark, text), view)
        except NotAdmittedError as e:
            raise NotAdmittedError(f"{where}: {e.message}") from None
        if stray:
            raise NotFoundError(f"{where}: table '{stray[0]}' does not exist")

    def batch_table(self, spec: ProcedureSpec) -> TableRecord:
        """The procedure's batch as the table a pipeline decodes into."""
        self.rt.spark  # noqa: B018 - DDL parsing needs a session
        schema, ddl = to_arrow(", ".join(f"`{n}` {t}" for n, t, _ in spec.columns))
        return TableRecord(
            name=spec.name,
            location=os.path.join(self.rt.warehouse, "procedures", spec.name),
            ddl=ddl,
            schema=schema,
            options={"declared": {n: d for n, _, d in spec.columns}, "not_null": spec.not_null},
            created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )

    def target(self, spec: PipelineSpec) -> TableRecord:
        """Where a pipeline's decoded rows go: its table, or its procedure's batch."""
        if spec.sink.kind == "database":
            return self.database_table(spec)
        if spec.sink.kind != "procedure":
            return self.rt.catalog.tables.get(spec.table)
        try:
            proc = self.get(spec.table)
        except NotFoundError:
            raise ConfigError(
                f"INTO PROCEDURE: procedure '{spec.table}' does not exist (SHOW PROCEDURES "
                "lists them)",
                pipeline=spec.name,
            ) from None
        if proc.scalars:  # a pipeline gives its procedure the batch and nothing else
            raise ConfigError(
                f"INTO PROCEDURE: procedure '{spec.table}' takes scalar parameters "
                f"({', '.join(proc.scalars)}), which a pipeline cannot give; a procedure "
                "it loads takes the batch alone (CALL passes the others)",
                pipeline=spec.name,
            )
        return self.batch_table(proc)

    def database_table(self, spec: PipelineSpec) -> TableRecord:
        """A pipeline into a database: its table as the database has it now (no catalog
        record), staged under the warehouse's ``connectors/<pipeline>``."""
        from sparkpipes.sinks.database import describe

        schema, not_null, key = describe(spec.sink.config, spec.sink.credentials, spec.table)
        return TableRecord(
            spec.table,
            os.path.join(self.rt.warehouse, "connectors", spec.name),
            "",
            schema,
            {"not_null": list(not_null), "keys": [{"kind": "PRIMARY", "columns": list(key)}]},
            dt.datetime.now(dt.UTC),
        )


class ProcedureError(SinkError):
    """A statement of a pipeline's procedure failed (Spark rejected it, or a row it
    produced does not fit the table). Retried as a batch is, then the pipeline stops in
    Error with this message: the procedure, the statement's line and the reason."""

    code = "SP403"
    transient = True


class ProcedureBody:
    """The engine's part of running a procedure's body on a batch: each statement's query
    in Spark SQL (the dialect translated, the batch parameter bound to a view of the
    batch's rows), its rows cast to the target table with its computed columns, column
    DEFAULTs and ``AUTO_INCREMENT`` values (``reserve_ids``, the catalog's), and a row
    that does not fit an error naming the statement. Handed to the procedure sink."""

    def __init__(
        self,
        spec: ProcedureSpec,
        tables: dict[str, TableRecord],
        reserve_ids: Callable[[str, int, int], int] | None = None,
        frame: Callable[[str], Any] | None = None,
        calls: Mapping[str, ProcedureBody] | None = None,
    ) -> None:
        self.spec = spec
        self.tables = tables
        self.reserve_ids = reserve_ids
        self.frame = frame
        #: the bodies of the procedures it CALLs, by name
        self.calls = dict(calls or {})

    @staticmethod
    def call_query(statement: ProcedureStatement) -> str:
        """The query of the rows a ``CALL`` gives its procedure (:func:`call_query`)."""
        return call_query(statement)

    def everything(self) -> list[tuple[ProcedureBody, ProcedureStatement]]:
        """Each statement that writes a table, with the body it is in: this one's and
        those of the procedures it CALLs, in the order they run."""
        out: list[tuple[ProcedureBody, ProcedureStatement]] = []
        for s in self.spec.statements:
            if s.call:
                out += self.calls[s.call].everything()
            elif s.table:
                out.append((self, s))
        return out

    def updates(
        self, table: str, spark: Any, statement: ProcedureStatement | None = None
    ) -> tuple[tuple[str, str], ...]:
        """``ON DUPLICATE KEY UPDATE`` of the body's statements into ``table`` (or of
        ``statement`` alone), as Spark SQL over the stored row ``s`` and the new one ``r``
        (``engine.sql.updates``), each admitted by the query sandbox as a pipeline's are."""
        rec = self.tables[table]
        out = with_on_update(
            [
                (c, update_expression(e, rec.schema.names, table))
                for s in self.spec.statements
                if s.table == table and statement in (None, s)
                for c, e in s.update
            ],
            rec.on_update,
        )
        for _, expr in out:
            check_expression(spark, expr)
        return out

    def primary_key(self, table: str) -> tuple[str, ...]:
        return self.tables[table].primary_key

    def variables(
        self, spark: Any, view: str, given: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The body's scalar variables at the start of a batch: its scalar parameters as
        the CALL gave them (``given``), the others each its DECLAREd value."""
        values: dict[str, Any] = {}
        for v in self.spec.variables:
            if v.name in self.spec.scalars:
                values[v.name] = (given or {}).get(v.name)
                continue
            values[v.name] = (
                None if v.default is None else self.value(spark, v.default, v.type, view, values)
            )
        return values

    def arguments(self, spark: Any, s: ProcedureStatement, view: str, values: Any, views: Any):
        """What ``CALL`` ``s`` of this body gives its callee's scalar parameters."""
        return arguments(self, self.calls[s.call or ""].spec, spark, s, view, values, views)

    def value(
        self,
        spark: Any,
        expr: str,
        kind: str,
        view: str,
        values: dict[str, Any],
        line: int = 0,
        views: Mapping[str, Any] | None = None,
    ) -> Any:
        """The value of ``expr`` (a scalar subquery over the batch too) as type ``kind``,
        for a variable: one row of one column, run as a body statement is."""
        from pyspark.errors import PySparkException

        where = f"procedure '{self.spec.name}'" + (f", line {line}" if line else "")
        text, names = self._sql(spark, f"SELECT CAST(({expr}) AS {kind})", view, where, views)
        try:
            return spark.sql(text, args=self._args(values)).collect()[0][0]
        except PySparkException as e:
            raise ProcedureError(f"{where}: {_spark_message(e)} ({expr[:80]})") from None
        finally:
            _drop(spark, names)

    def _args(self, values: dict[str, Any]) -> dict[str, Any]:
        return bound(markers(v.name for v in self.spec.variables), values)

    def _sql(
        self, spark: Any, query: str, view: str, where: str, views: Mapping[str, Any] | None
    ) -> tuple[str, dict[str, str]]:
        """A body query's text as Spark runs it, admitted, and the internal views it reads
        registered: each table ``views`` has rows for (a table the body changes, as its
        statements so far leave it) is a CTE of the table's name over a view of a name no
        user can know, never a view of the table's own name, which other statements of the
        session (pipelines, queries) would see. The caller drops those views (``_drop``)
        once Spark has read the text."""
        names = {t: f"{STATE_VIEW}{uuid.uuid4().hex}" for t in views or {}}
        text = statement_sql(self.spec, query, view, names)
        self._admit(spark, text, view, where, names.values())
        for t, name in names.items():
            views[t].createOrReplaceTempView(name)  # type: ignore[index]
        return text, names

    def _admit(self, spark: Any, text: str, view: str, where: str, own: Any = ()) -> None:
        """Admit a statement's text, and give each table it reads its current snapshot (the
        session's view of a table is what the last statement that named it saw); ``own``:
        the internal views the text may read besides the batch's."""
        try:
            admitted = check_query(spark, text)
        except NotAdmittedError as e:
            raise NotAdmittedError(f"{where}: {e.message}") from None
        stray = stray_views(admitted, view, own)
        if stray:  # a body made before this check: it runs as the server, so never
            raise NotAdmittedError(f"{where}: table '{stray[0]}' does not exist")
        for name in sorted(admitted.relations):
            if self.frame is not None and not name.lower().startswith(INTERNAL):
                try:
                    self.frame(name).createOrReplaceTempView(name)
                except NotFoundError:
                    pass  # Spark names what it cannot find

    def run(
        self,
        spark: Any,
        query: str,
        statement: ProcedureStatement,
        view: str,
        values: dict[str, Any],
        views: Mapping[str, Any] | None = None,
    ) -> Any:
        """``query`` (the dialect; a statement's own or one built around its parts) as a
        DataFrame over the batch bound to ``view``, admitted as every body query is."""
        from pyspark.errors import PySparkException

        where = f"procedure '{self.spec.name}', line {statement.line}"
        text, names = self._sql(spark, query, view, where, views)
        try:
            return spark.sql(text, args=self._args(values))
        except PySparkException as e:
            raise ProcedureError(f"{where}: {_spark_message(e)} ({statement.text[:80]})") from None
        finally:
            _drop(spark, names)  # the DataFrame holds their rows

    def batch_of(self, rows: Any, caller: str, statement: ProcedureStatement) -> Any:
        """``rows`` (the query a ``CALL`` of this procedure gives, in ``caller``) as this
        procedure's batch, as SingleStore assigns a query to a ``QUERY(…)`` parameter:
        its columns by position, named and cast as declared; a NULL in a column declared
        NOT NULL fails the batch, naming the CALL's line."""
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        where = f"procedure '{caller}', line {statement.line}, CALL {self.spec.name}"
        declared = self.spec.columns
        if len(rows.columns) != len(declared):
            raise ProcedureError(
                f"{where}: the query gives {len(rows.columns)} column(s), the "
                f"QUERY({', '.join(n for n, _, _ in declared)}) parameter takes {len(declared)}"
            )
        given = rows.toDF(*[f"__sp_arg{i}" for i in range(len(declared))])
        batch = given.select(
            *[F.col(f"__sp_arg{i}").cast(t).alias(n) for i, (n, t, _) in enumerate(declared)]
        )
        if self.spec.not_null:
            nulls = " OR ".join(f"{_quoted(n)} IS NULL" for n in self.spec.not_null)
            try:
                bad = batch.where(nulls).limit(1).collect()
            except PySparkException as e:
                raise ProcedureError(f"{where}: {_spark_message(e)}") from None
            if bad:
                null = next(n for n in self.spec.not_null if bad[0][n] is None)
                raise ProcedureError(
                    f"{where}: column '{null}' of the QUERY parameter is NOT NULL; a row "
                    "of the query has no value"
                )
        return batch

    def changed(self, table: str) -> ChangedTable:
        """``table`` as the batch finds it, for the body's DELETE and UPDATE statements."""
        if self.frame is None:
            raise ProcedureError(f"procedure '{self.spec.name}': no snapshot of '{table}'")
        name = self.spec.name
        return ChangedTable(
            self.tables[table],
            self.frame(table),
            lambda message: ProcedureError(f"procedure '{name}', {message}"),
        )

    def rows(
        self,
        spark: Any,
        statement: ProcedureStatement,
        view: str,
        values: dict[str, Any] | None = None,
        views: Mapping[str, Any] | None = None,
    ) -> Any:
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        where = f"procedure '{self.spec.name}', line {statement.line}"
        rec = self.tables[statement.table]
        df = self.run(spark, statement.query, statement, view, values or {}, views)
        cols = list(statement.columns) or [n for n in rec.schema.names if n not in rec.computed]
        if len(df.columns) != len(cols):
            raise ProcedureError(
                f"{where}: the SELECT gives {len(df.columns)} columns for {len(cols)} "
                f"({', '.join(cols)}) of table '{statement.table}'"
            )
        fill = Transform(
            computed=tuple(rec.computed.items()),
            defaults=tuple(rec.defaults.items()),
            rules=rec.rules,
        )
        checked = apply(df.toDF(*cols), fill, rec.schema, check=True)
        cond = F.col(REJECT_COLUMN).isNotNull()
        for c in rec.not_null:
            if c not in rec.auto_increment:
                cond = cond | F.col(f"`{c}`").isNull()
        try:
            bad = checked.where(cond).limit(1).collect()
        except PySparkException as e:
            raise ProcedureError(f"{where}: {_spark_message(e)} ({statement.text[:80]})") from None
        if bad:
            reason = bad[0][REJECT_COLUMN]
            if reason is None:
                null = [c for c in rec.not_null if bad[0][c] is None]
                reason = f"column '{null[0]}' is NOT NULL; the row has no value"
            raise ProcedureError(f"{where}: a row does not fit table '{statement.table}': {reason}")
        out = checked.drop(REJECT_COLUMN)
        ids = Generated.of(rec, self.reserve_ids)
        if ids is not None:
            out = ids.fill(out, ())
        return out


def bind(query: str, param: str, view: str, queries: Sequence[tuple[str, str]] = ()) -> str:
    """``query`` (Spark SQL) with the batch parameter ``param`` bound to the view ``view``
    of the batch's rows: a CTE of the parameter's name around the query, so Spark itself
    resolves every reference to it, wherever its lexer finds one.

    The text is not rewritten: a rename on another tokenizer's idea of the text would miss
    a reference that Spark sees (sqlglot reads ``r'\\' … secret --'`` as one string, Spark
    as a raw string, a name and a comment), and that reference would read the table of the
    parameter's name. Here the statement checked when the procedure is made and the one
    each batch runs are the same text but for ``view``, an internal name no user can
    write; a reference to ``param`` is to the CTE, which a privilege check treats as the
    table of that name if there is one (``SqlSession._may_read``). The newline keeps a
    trailing ``--`` comment off the closing parenthesis."""
    named = "".join(f",\n{_quoted(n)} AS (\n{q}\n)" for n, q in queries)
    return (
        f"WITH {_quoted(param)} AS (SELECT * FROM {_quoted(view)}){named}\n"
        f"SELECT * FROM (\n{query}\n)"
    )


def batch_view() -> str:
    """A name for a batch's view no user can know (the procedure sink's, and the one a
    body is checked with when it is made)."""
    return f"{BATCH_VIEW}{uuid.uuid4().hex}"


def statement_sql(
    spec: ProcedureSpec, query: str, view: str, tables: Mapping[str, str] | None = None
) -> str:
    """A body query (``SELECT (expr)`` for a variable's) as its batches run it: its
    variables parameter markers (``engine.sql.values``), so that the text a CREATE
    PROCEDURE checks is the text every batch runs, whatever the values."""
    marks = markers(v.name for v in spec.variables)
    named = tuple((n, with_markers(q, marks)) for n, q in spec.queries)
    states = tuple((t, f"SELECT * FROM {_quoted(v)}") for t, v in (tables or {}).items())
    return body_sql(with_markers(query, marks), spec.param, view, (*states, *named))


def body_sql(query: str, param: str, view: str, queries: Sequence[tuple[str, str]] = ()) -> str:
    """A body statement's query as Spark runs it on a batch bound to ``view``, after the
    procedure's ``DECLARE``d ``queries`` (each a CTE of its name, in order)."""
    return bind(translate(query), param, view, [(n, translate(q)) for n, q in queries])


def stray_views(admitted: Admitted, view: str, own: Any = ()) -> list[str]:
    """The session's internal names (information_schema's views, other batches) a body
    statement bound to ``view`` names besides it: none may be read at batch time, when the
    body runs as the server."""
    names = admitted.relations | admitted.ctes
    allowed = {view.lower(), *(o.lower() for o in own)}
    return sorted(n for n in names if n.lower().startswith(INTERNAL) and n.lower() not in allowed)


def _drop(spark: Any, names: Mapping[str, str]) -> None:
    for name in names.values():
        spark.catalog.dropTempView(name)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _spark_message(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return first[:400]

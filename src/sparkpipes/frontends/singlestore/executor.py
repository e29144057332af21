"""Runs parsed statements against an Engine.

``SqlSession(engine).execute(text)`` parses a script and runs its statements in order,
returning one :class:`Result` per statement; the first error stops the script and is
raised (a ``SparkpipesError``: parse errors carry line, column and a caret). Queries
(SELECT, WITH, SHOW …, EXPLAIN) run on Spark SQL over the current snapshot of every
table, with ``information_schema`` views and the SingleStore JSON helpers translated
(``sparkpipes.engine.sql.dialect``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from sparkpipes.catalog import BatchState, PipelineState
from sparkpipes.catalog.grants import Access
from sparkpipes.engine import Engine
from sparkpipes.engine.procedures import batch_view, statement_sql
from sparkpipes.engine.sql import identity
from sparkpipes.engine.sql.dialect import INTERNAL, translate, view_name
from sparkpipes.engine.sql.jobs import Statement
from sparkpipes.engine.sql.sandbox import check_expression, check_query
from sparkpipes.engine.sql.updates import update_expression
from sparkpipes.engine.variables import like
from sparkpipes.errors import (
    ConfigError,
    NotAdmittedError,
    NotFoundError,
    QueryError,
    SparkpipesError,
)
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore import quick
from sparkpipes.frontends.singlestore.dml import DmlStatements
from sparkpipes.frontends.singlestore.infer import InferStatements
from sparkpipes.frontends.singlestore.links import LinkStatements
from sparkpipes.frontends.singlestore.loads import LoadStatements
from sparkpipes.frontends.singlestore.lower_procedures import to_procedure
from sparkpipes.frontends.singlestore.lowering import create_pipeline_sql, to_spec
from sparkpipes.frontends.singlestore.parser import iter_parse, locate
from sparkpipes.frontends.singlestore.privileges import (
    authorize,
    procedure_reads,
    sees_pipeline,
    sees_procedure,
    sees_table,
)
from sparkpipes.frontends.singlestore.results import Result, ok
from sparkpipes.frontends.singlestore.tables import TableStatements
from sparkpipes.frontends.singlestore.users import UserStatements

DATABASE = "sparkpipes"
#: the tables this process registered as views of the Spark session (a dropped table's
#: view goes with the next query, so no query reads a table that is gone)
_VIEWS: set[str] = set()
#: a file: URI in a plan's text, up to where Spark's listing of it ends
_FILE_URI = re.compile(r"file:[^\s,\]\)]+")
#: a streaming session takes a query's rows from the quick path up to this many
QUICK_STREAM_ROWS = 10_000


class SqlSession(
    TableStatements,
    UserStatements,
    LinkStatements,
    LoadStatements,
    DmlStatements,
    InferStatements,
):
    def __init__(
        self,
        engine: Engine,
        *,
        background: bool = False,
        progress: Callable[[Any], None] | None = None,
        max_rows: int | None = None,
        stream: bool = False,
        user: str | None = None,
    ) -> None:
        """``max_rows``: a query answers at most this many rows plus one (so a caller can
        tell there were more) and Spark computes no more. ``stream``: a query answers its
        rows as ``Result.stream``, fetched a partition at a time, never all in memory.
        ``user``: the signed-in user whose privileges every statement is checked against
        (``sql.privileges``); None is the warehouse's owner, who may do everything."""
        self.engine = engine
        self.access = Access(engine.catalog.grants, user)
        self.max_rows = max_rows
        self.stream = stream
        self.background = background  # START PIPELINE also runs it in this process
        #: told of each batch of START PIPELINE … FOREGROUND (a BatchResult) and of each
        #: step of an ALTER TABLE that rewrites the rows (a RewriteProgress)
        self.progress = progress
        #: statements running (a statement may run another), and whether one made Spark's
        #: current_user() name the user: it does until the outermost one ends
        self._depth = 0
        self._assumed = False
        #: whether the query last checked answers a plan (EXPLAIN)
        self._explains = False
        #: the Spark jobs of the statement running (KILL QUERY, max_execution_time)
        self.statement = Statement(lambda: engine.spark)

    # -- entry points -----------------------------------------------------------------
    def execute(self, text: str) -> list[Result]:
        """Run a script; an error stops it, pointing at the statement (and name) it is about."""
        return [res for _, res in self.each(text)]

    def each(self, text: str) -> Iterator[tuple[A.Statement, Result]]:
        """Parse and run a script's statements one at a time, each result as soon as it
        is done (the shell prints it, the server sends it); a statement is parsed only
        once the previous one ran, and the first error (located at its line and column)
        ends the script."""
        for stmt, span in iter_parse(text):
            self._source = text[span.start : span.end]
            try:
                res = self.run(stmt)
            except SparkpipesError as e:
                raise locate(e, text, span) from None
            yield stmt, res

    def run(self, stmt: A.Statement) -> Result:
        handler = getattr(self, f"_{type(stmt).__name__}", None)
        if handler is None:
            raise ConfigError(f"{type(stmt).__name__} statements are not supported yet")
        for database in stmt.databases:
            self.engine.catalog.database.check(database)
        self.access.refresh()
        if isinstance(stmt, A.CreatePipeline) and stmt.link is not None:
            stmt = self.resolve(stmt)  # what the pipeline runs with, before any check
        if isinstance(stmt, A.InferPipeline) and stmt.pipeline.link is not None:
            stmt = dataclasses.replace(stmt, pipeline=self.resolve(stmt.pipeline))
        authorize(self.access, stmt)
        if self._depth == 0:
            limit = (
                self.engine.variables()["max_execution_time"] if isinstance(stmt, A.Query) else 0
            )
            self.statement = Statement(lambda: self.engine.spark, limit)
        self._depth += 1
        streamed = False
        try:
            res = handler(stmt)
            streamed = res.stream is not None
            return res
        finally:
            self._depth -= 1
            if self._depth == 0:
                if not streamed:  # a streamed result's rows end it
                    self.statement.close()
                if self._assumed:
                    self._assumed = False
                    identity.forget(self.engine.spark)

    def cancel(self) -> None:
        """Stop the running statement's Spark jobs (KILL QUERY): it fails with "Query
        execution was interrupted"."""
        self.statement.cancel()

    # -- pipelines --------------------------------------------------------------------
    def _CreatePipeline(self, s: A.CreatePipeline) -> Result:
        if s.inferred and s.target is None and s.source != "KAFKACONNECT":
            return self.create_inferred(s)  # its table from what the source holds
        if s.if_not_exists and s.name in {p.name for p in self.engine.pipelines()}:
            return ok(0)
        spec = self.engine.prepare_pipeline(
            to_spec(s, self.engine.pipeline_defaults()), replace=s.or_replace
        )
        if (spec.transform or spec.sink.update) and self.engine.rt.spark_started:
            t = spec.transform  # else its first batch checks them
            for text in [e for _, e in t.assignments] + ([t.where] if t.where else []):
                check_expression(self.engine.spark, translate(text))
            if spec.sink.update:
                table = self.engine.catalog.tables.get(spec.table)
                for _, text in spec.sink.update:
                    expr = update_expression(text, table.schema.names, table.name)
                    check_expression(self.engine.spark, expr)
        made = None
        if s.inferred and s.target is None and spec.table not in self.engine.tables():
            (stmt, _), *_ = iter_parse(self.engine.inferred_table(spec))
            self.run(stmt)
            made = spec.table
        try:
            checked = self.engine.check_source(spec) if s.check_source else None
            self.engine.create_pipeline_spec(spec, replace=s.or_replace)
        except SparkpipesError:
            if made is not None:
                self.engine.drop_table(made, if_exists=True)
            raise
        done = ok(0)
        if checked is None:
            return done
        return Result(message=f"{done.message}; {checked}")

    def _StartPipeline(self, s: A.StartPipeline) -> Result:
        rec = self.engine.pipeline(s.name)
        if s.foreground:
            if rec.state == PipelineState.RUNNING:
                raise ConfigError(
                    f"pipeline '{s.name}' is running in the background; stop it first",
                    pipeline=s.name,
                )
            n = s.limit_batches or 1_000_000
            results = self.engine.run_batches(
                s.name, n, until_idle=s.limit_batches is None, progress=self.progress
            )
            rows = sum(r.rows for r in results)
            loaded = sum(r.state == BatchState.SUCCEEDED for r in results)
            return Result(
                message=f"Query OK, {rows} row{'' if rows == 1 else 's'} loaded in {loaded} "
                f"batch{'' if loaded == 1 else 'es'} ({len(results)} run)"
            )
        if rec.state == PipelineState.RUNNING and not s.if_not_running:
            raise ConfigError(f"pipeline '{s.name}' is already running", pipeline=s.name)
        self.engine.start(s.name, run=self.background)
        return ok(0)

    def _StartAllPipelines(self, s: A.StartAllPipelines) -> Result:
        if self.access.owner:
            self.engine.start(None, run=self.background)
        for name in self._pipelines_allowed("START PIPELINE"):
            self.engine.start(name, run=self.background)
        return ok(0)

    def _pipelines_allowed(self, privilege: str) -> list[str]:
        """Pipelines a user (not the owner) holds ``privilege`` on; ALL statements skip
        the others, as SingleStore's do."""
        if self.access.owner:
            return []
        return [p.name for p in self.engine.pipelines() if self.access.may(privilege, p.name)]

    def _StopPipeline(self, s: A.StopPipeline) -> Result:
        rec = self.engine.pipeline(s.name)
        if rec.state != PipelineState.RUNNING and not s.if_running:
            raise ConfigError(f"pipeline '{s.name}' is not running", pipeline=s.name)
        self.engine.stop(s.name)
        return ok(0)

    def _StopAllPipelines(self, s: A.StopAllPipelines) -> Result:
        if self.access.owner:
            self.engine.stop(None)
        for name in self._pipelines_allowed("START PIPELINE"):
            self.engine.stop(name)
        return ok(0)

    def _DropPipeline(self, s: A.DropPipeline) -> Result:
        self.engine.drop_pipeline(s.name, if_exists=s.if_exists)
        return ok(0)

    def _pipeline_absent(self, name: str, if_exists: bool) -> bool:
        """True if ``name`` does not exist and IF EXISTS allows that; raises otherwise."""
        try:
            self.engine.pipeline(name)
        except NotFoundError:
            if if_exists:
                return True
            raise
        return False

    def _AlterPipeline(self, s: A.AlterPipeline) -> Result:
        if self._pipeline_absent(s.name, s.if_exists):
            return ok(0)
        if s.offsets or s.offsets_json:
            target = s.offsets or json.loads(s.offsets_json)
            if isinstance(target, list):
                target = _key_values(target)
            if isinstance(target, dict):
                target = {str(k): v for k, v in target.items()}
            self.engine.set_offsets(s.name, target)
        changes = {
            k: v
            for k, v in (
                ("batch_interval_ms", s.batch_interval),
                ("max_partitions_per_batch", s.max_partitions_per_batch),
                ("max_offsets_per_batch_partition", s.max_offsets_per_batch_partition),
                ("max_retries", s.max_retries_per_batch_partition),
            )
            if v is not None
        }
        if changes:
            self.engine.alter_pipeline(s.name, **changes)
        return ok(0)

    def _AlterPipelineDropFile(self, s: A.AlterPipelineDropFile) -> Result:
        if self._pipeline_absent(s.name, s.if_exists):
            return ok(0)
        self.engine.drop_file(s.name, s.file)
        return ok(1)

    def _DetachPipeline(self, s: A.DetachPipeline) -> Result:
        if self._pipeline_absent(s.name, s.if_exists):
            return ok(0)
        if self.engine.pipeline(s.name).state == PipelineState.RUNNING:
            self.engine.stop(s.name)
        return ok(0)

    def _TestPipeline(self, s: A.TestPipeline) -> Result:
        table = self.engine.test_pipeline(s.name, s.limit or 10)
        return Result(table.column_names, [tuple(r.values()) for r in table.to_pylist()])

    def _ShowPipelines(self, s: A.ShowPipelines) -> Result:
        rows = [
            (p.name, p.state) for p in self.engine.pipelines() if sees_pipeline(self.access, p.name)
        ]
        return Result([f"Pipelines_in_{self.database}", "State"], rows)

    def _ShowCreatePipeline(self, s: A.ShowCreatePipeline) -> Result:
        spec = self.engine.spec(s.name)
        text = create_pipeline_sql(spec)
        if spec.sink.kind == "database":  # made by a sink connector: SQL cannot say where to
            cfg = spec.sink.config
            text = (
                f"-- loads table {spec.table} of the {cfg.get('dialect')} "
                f"database '{cfg.get('database')}' at {cfg.get('host')}:{cfg.get('port')}, made "
                "by a sink connector (sparkpipes connect config)\n" + text
            )
        elif spec.table in self.engine.pinot.names() and spec.name in self.engine.pinot.pipelines(
            spec.table
        ):  # one of a Pinot table's pipelines (one per stream)
            text = (
                f"-- loads Pinot realtime table {spec.table}, made from its table config "
                f"(sparkpipes pinot table {spec.table}; GET /tables/{spec.table})\n" + text
            )
        if spec.format.connect is not None:  # SQL cannot say a Kafka Connect chain
            text = (
                f"-- decodes topic {spec.format.connect.topic} as a Kafka Connect sink task "
                "does, through the connector's transforms (sparkpipes connect config), then "
                "loads the fields below\n" + text
            )
        return Result(["Pipeline", "Create Pipeline"], [(s.name, text)])

    # -- the database -----------------------------------------------------------------
    @property
    def database(self) -> str:
        """The database's name, as SHOW's column headings and the views say it."""
        return self.engine.catalog.database.name()

    @property
    def databases(self) -> tuple[str, ...]:
        """The names a query may qualify a table with (``sparkpipes.t``, ``demo.t``)."""
        return (DATABASE, self.database)

    def _CreateDatabase(self, s: A.CreateDatabase) -> Result:
        made = self.engine.catalog.database.create(s.name, if_not_exists=s.if_not_exists)
        return ok(1 if made else 0)

    def _UseDatabase(self, s: A.UseDatabase) -> Result:
        self.engine.catalog.database.check(s.name)
        return ok(0)

    # -- variables --------------------------------------------------------------------
    def _SetVariable(self, s: A.SetVariable) -> Result:
        if "." in s.name:  # spark.sql.…, spark.hadoop.…: the server's own settings
            raise NotAdmittedError(
                f"'{s.name}' is not a sparkpipes variable: SET changes the engine's variables "
                "(SHOW VARIABLES lists them), never Spark's or Hadoop's settings"
            )
        self.engine.set_variable(s.name, s.value.value)
        return ok(0)

    def _ShowVariables(self, s: A.ShowVariables) -> Result:
        rows = [
            (k, str(v))
            for k, v in self.engine.variables().items()
            if s.like is None or like(s.like, k)
        ]
        return Result(["Variable_name", "Value"], rows)

    # -- everything else: Spark SQL ---------------------------------------------------
    def _Query(self, s: A.Query) -> Result:
        if quick.usable(self.engine):  # a cold process: no JVM if we can
            # a streamed result is taken from the quick path only if it is small
            cap = QUICK_STREAM_ROWS if self.stream else self.max_rows
            fast = quick.answer(self.engine, s.text, max_rows=cap, reads=self._may_read)
            if fast is not None and (not self.stream or len(fast.rows) <= QUICK_STREAM_ROWS):
                return fast
        self._explains = False
        df = self._spark_sql(s.text)
        if self._explains:  # a plan names the table's files: shown without their paths
            with self.statement.running():
                plan = [tuple(self._hide_paths(v) for v in r) for r in _collect(df)]
            return Result(list(df.columns), plan)
        if self.stream:
            types = [f.dataType.simpleString() for f in df.schema.fields]
            return Result(list(df.columns), stream=_iterate(df, self.statement), types=types)
        if self.max_rows is not None:
            df = df.limit(self.max_rows + 1)
        with self.statement.running():
            rows = [tuple(r) for r in _collect(df)]
        return Result(list(df.columns), rows)

    def _hide_paths(self, value: Any) -> Any:
        """A plan's text with the server's paths (the warehouse, any ``file:`` URI) shown
        as ``<path>``: where its files are is none of a user's business."""
        if not isinstance(value, str):
            return value
        home = str(self.engine.warehouse)
        return _FILE_URI.sub("<path>", value.replace(home, "<path>"))

    def _CreateProcedure(self, s: A.CreateProcedure) -> Result:
        text = getattr(self, "_source", None) or s.to_sql()
        spec = to_procedure(s, text)
        if not self.access.owner:  # its batches run as the server: what its author may do
            view = batch_view()  # checked as each batch runs it, but for the view's name
            for query in procedure_reads(self.access, spec):
                admitted = check_query(self.engine.spark, statement_sql(spec, query, view))
                self._may_read(admitted.relations, admitted.ctes, internal=(view,))
        self.engine.create_procedure(spec, replace=s.or_replace)
        return ok(0)

    def _DropProcedure(self, s: A.DropProcedure) -> Result:
        self.engine.drop_procedure(s.name, if_exists=s.if_exists)
        return ok(0)

    def _ShowProcedures(self, s: A.ShowProcedures) -> Result:
        rows = [
            (p, "sparkpipes")
            for p in self.engine.procedures()
            if (s.like is None or like(s.like, p)) and sees_procedure(self.access, p)
        ]
        return Result([f"Procedures_in_{self.database}", "Definer"], rows)

    def _may_read(
        self, relations: Iterable[str], ctes: Iterable[str] = (), *, internal: Iterable[str] = ()
    ) -> None:
        """SELECT on every table a query names (as Spark resolves names: without regard
        to case; a name inside the scope of a CTE of that name is the CTE), on the names
        of Spark's own parse. The session's internal views are no one's to name: only
        ``internal``, the ones registered for this statement (its information_schema
        views, filtered for its user, or a procedure's batch), may be read, and nothing
        else of their prefixes exists; a user other than the owner may name nothing but
        tables."""
        mine = {n.lower() for n in internal}
        for name in [*relations, *ctes]:
            if name.lower().startswith(INTERNAL) and name.lower() not in mine:
                raise NotFoundError(f"table '{name}' does not exist")
        if self.access.owner:
            return
        tables = self.engine.tables()
        for name in relations:
            low = name.lower()
            if low in mine:
                continue
            found = [t for t in tables if t.lower() == low]
            if not found:
                raise NotFoundError(f"table '{name}' does not exist")
            for t in found:
                self.access.require("SELECT", t)

    def _visible(self, view):
        """An information_schema view's rows about the pipelines (or, for a view of
        tables, the tables) the user may see."""
        if self.access.owner:
            return view
        import pyarrow as pa
        import pyarrow.compute as pc

        if "PIPELINE_NAME" in view.column_names:
            column = "PIPELINE_NAME"
            shown = [p.name for p in self.engine.pipelines() if sees_pipeline(self.access, p.name)]
        elif "TABLE_NAME" in view.column_names:
            column = "TABLE_NAME"
            shown = [t for t in self.engine.tables() if sees_table(self.access, t)]
        else:  # a view of neither shows nothing to a user
            return view.slice(0, 0)
        return view.filter(pc.is_in(view[column], value_set=pa.array(shown, pa.string())))

    def _spark_sql(self, text: str, frames: Mapping[str, Any] | None = None):
        """The DataFrame of query ``text``, checked on Spark's parse of the translated text.
        Its information_schema views are its own: registered under names with a suffix of
        this statement's (no other statement can name them, whatever its text hides from
        sqlglot), with the rows its user may see, and dropped once Spark has analyzed the
        query (the DataFrame holds their rows). ``frames``: more such views, by the
        internal names the text gives them (the rows a DELETE or UPDATE changes)."""
        from pyspark.errors import PySparkException

        statement = uuid.uuid4().hex
        views: dict[str, str] = {}

        def register(view: str) -> str:
            return views.setdefault(view.upper(), f"{view_name(view)}_{statement}")

        spark_text = translate(text, on_view=register, databases=self.databases)
        spark = self.engine.spark
        identity.assume(spark, self.access.user)
        self._assumed = True
        admitted = check_query(spark, spark_text)
        own = [*views.values(), *(frames or {})]
        self._may_read(admitted.relations, admitted.ctes, internal=own)
        self._explains = admitted.explains
        tables = self.engine.tables()
        for gone in _VIEWS - set(tables):  # dropped since (by this process or another)
            spark.catalog.dropTempView(gone)
            _VIEWS.discard(gone)
        for t in tables:
            self.engine.table(t).createOrReplaceTempView(t)
            _VIEWS.add(t)
        cache: dict = {}
        try:
            for view, name in views.items():
                arrow = self._visible(self.engine.information_schema(view, cache))
                spark.createDataFrame(arrow).createOrReplaceTempView(name)
            for name, frame in (frames or {}).items():
                frame.createOrReplaceTempView(name)
                views[name] = name  # dropped with the others
            df = spark.sql(spark_text)
            if self.stream:  # read later, maybe on another thread: planned while it names
                identity.plan(df)  # the user
            return df
        except PySparkException as e:
            raise QueryError(_spark_message(e)) from None
        finally:
            for name in views.values():
                spark.catalog.dropTempView(name)


def _key_values(items: list[dict[str, Any]]) -> dict[str, Any]:
    """``SET OFFSETS '[{"KEY": {…}, "VALUE": {…}}, …]'`` (checked by the parser): connector
    offsets as rows of ``information_schema.PIPELINES_SOURCE_OFFSETS``, by KEY as JSON."""
    out: dict[str, Any] = {}
    for item in items:
        fields = {str(k).upper(): v for k, v in item.items()}
        key = fields["KEY"]
        out[key if isinstance(key, str) else json.dumps(key)] = fields["VALUE"]
    return out


def _collect(df) -> Iterable[Any]:
    from pyspark.errors import PySparkException

    try:
        return df.collect()
    except PySparkException as e:
        raise QueryError(_spark_message(e)) from None


def _iterate(df, statement: Statement) -> Iterator[tuple[Any, ...]]:
    """A query's rows as Spark serves them a partition at a time; its jobs are the
    statement's (the serving thread takes the tag as the iterator is made), and a stopped
    statement ends the rows with why."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        with statement.running():
            rows = df.toLocalIterator(prefetchPartitions=True)
        for row in rows:
            if statement.reason is not None:
                statement.check()
            yield tuple(row)
        statement.check()
    except PySparkException as e:
        statement.check()
        raise QueryError(_spark_message(e)) from None
    except Py4JJavaError as e:  # a partition failed (PySpark leaves it unconverted here)
        statement.check()
        raise QueryError(_java_message(e)) from None
    finally:
        statement.close()


def _java_message(e: Any) -> str:
    """What ``_spark_message`` would say of the failure: its root cause's first line (the
    Spark error, e.g. ``[DIVIDE_BY_ZERO] …``), not Py4J's wrapper."""
    try:
        cause = e.java_exception
        while cause.getCause() is not None:
            cause = cause.getCause()
        return _spark_message(Exception(str(cause.getMessage() or cause.getClass().getName())))
    except Exception:  # the JVM could not say
        return "the query failed while its rows were read"


def _spark_message(e: Exception) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__

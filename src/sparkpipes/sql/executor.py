"""Runs parsed statements against an Engine.

``SqlSession(engine).execute(text)`` parses a script and runs its statements in order,
returning one :class:`Result` per statement; the first error stops the script and is
raised (a ``SparkpipesError``: parse errors carry line, column and a caret). Queries
(SELECT, WITH, SHOW …, EXPLAIN) run on Spark SQL over the current snapshot of every
table, with ``information_schema`` views and the SingleStore JSON helpers translated
(``sparkpipes.engine.dialect``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.catalog import BatchState, PipelineState, views
from sparkpipes.config.lower.sql import create_pipeline_sql, to_procedure, to_spec
from sparkpipes.engine import Engine
from sparkpipes.engine.dialect import translate, view_name
from sparkpipes.engine.variables import like
from sparkpipes.errors import ConfigError, NotFoundError, SparkpipesError
from sparkpipes.sql import ast as A
from sparkpipes.sql import quick
from sparkpipes.sql.parser import iter_parse, locate
from sparkpipes.sql.types import arrow_type, spark_type

DATABASE = "sparkpipes"
#: ``SHOW TABLE STATUS``
TABLE_STATUS_COLUMNS = [
    "Name",
    "Engine",
    "Version",
    "Rows",
    "Data_length",
    "Files",
    "Small_files",
    "Checkpoint",
    "Last_compaction",
    "Last_vacuum",
    "Create_time",
]
_STATUS_KEYS = (
    "name",
    "engine",
    "version",
    "rows",
    "bytes",
    "files",
    "small_files",
    "checkpoint",
    "last_compaction",
    "last_vacuum",
    "created_at",
)


class QueryError(SparkpipesError):
    """Spark SQL rejected a query (unknown column, type mismatch …)."""

    code = "SP702"


@dataclass
class Result:
    """Rows (``columns`` + ``rows``) and/or a status ``message``."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    message: str | None = None
    #: a query's rows as they come from Spark, partition by partition, when the session
    #: streams (``rows`` is then empty); iterating raises QueryError if the query fails
    stream: Iterator[tuple[Any, ...]] | None = None

    @property
    def has_rows(self) -> bool:
        return bool(self.columns)


def _ok(n: int = 0, what: str = "row") -> Result:
    return Result(message=f"Query OK, {n} {what}{'' if n == 1 else 's'} affected")


class SqlSession:
    def __init__(
        self,
        engine: Engine,
        *,
        background: bool = False,
        progress: Callable[[Any], None] | None = None,
        max_rows: int | None = None,
        stream: bool = False,
    ) -> None:
        """``max_rows``: a query answers at most this many rows plus one (so a caller can
        tell there were more) and Spark computes no more. ``stream``: a query answers its
        rows as ``Result.stream``, fetched a partition at a time, never all in memory."""
        self.engine = engine
        self.max_rows = max_rows
        self.stream = stream
        self.background = background  # START PIPELINE also runs it in this process
        #: told of each batch of START PIPELINE … FOREGROUND (a BatchResult) and of each
        #: step of an ALTER TABLE that rewrites the rows (a RewriteProgress)
        self.progress = progress

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
        return handler(stmt)

    # -- pipelines --------------------------------------------------------------------
    def _CreatePipeline(self, s: A.CreatePipeline) -> Result:
        if s.if_not_exists and s.name in {p.name for p in self.engine.pipelines()}:
            return _ok(0)
        spec = self.engine.prepare_pipeline(to_spec(s, self.engine.pipeline_defaults()))
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
        ok = _ok(0)
        if checked is None:
            return ok
        return Result(message=f"{ok.message}; {checked}")

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
        return _ok(0)

    def _StartAllPipelines(self, s: A.StartAllPipelines) -> Result:
        self.engine.start(None, run=self.background)
        return _ok(0)

    def _StopPipeline(self, s: A.StopPipeline) -> Result:
        rec = self.engine.pipeline(s.name)
        if rec.state != PipelineState.RUNNING and not s.if_running:
            raise ConfigError(f"pipeline '{s.name}' is not running", pipeline=s.name)
        self.engine.stop(s.name)
        return _ok(0)

    def _StopAllPipelines(self, s: A.StopAllPipelines) -> Result:
        self.engine.stop(None)
        return _ok(0)

    def _DropPipeline(self, s: A.DropPipeline) -> Result:
        self.engine.drop_pipeline(s.name, if_exists=s.if_exists)
        return _ok(0)

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
            return _ok(0)
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
        return _ok(0)

    def _AlterPipelineDropFile(self, s: A.AlterPipelineDropFile) -> Result:
        if self._pipeline_absent(s.name, s.if_exists):
            return _ok(0)
        self.engine.drop_file(s.name, s.file)
        return _ok(1)

    def _TestPipeline(self, s: A.TestPipeline) -> Result:
        table = self.engine.test_pipeline(s.name, s.limit or 10)
        return Result(table.column_names, [tuple(r.values()) for r in table.to_pylist()])

    def _ShowPipelines(self, s: A.ShowPipelines) -> Result:
        rows = [(p.name, p.state) for p in self.engine.pipelines()]
        return Result([f"Pipelines_in_{DATABASE}", "State"], rows)

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
        elif spec.name.endswith("_REALTIME") and spec.table in self.engine.pinot.names():
            text = (
                f"-- loads Pinot realtime table {spec.table}, made from its table config "
                f"(sparkpipes pinot table {spec.table}; GET /tables/{spec.table})\n" + text
            )
        return Result(["Pipeline", "Create Pipeline"], [(s.name, text)])

    # -- variables --------------------------------------------------------------------
    def _SetVariable(self, s: A.SetVariable) -> Result:
        name = s.name.split(".")[-1]
        self.engine.set_variable(name, s.value.value)
        return _ok(0)

    def _ShowVariables(self, s: A.ShowVariables) -> Result:
        rows = [
            (k, str(v))
            for k, v in self.engine.variables().items()
            if s.like is None or like(s.like, k)
        ]
        return Result(["Variable_name", "Value"], rows)

    # -- tables -----------------------------------------------------------------------
    def _CreateTable(self, s: A.CreateTable) -> Result:
        if s.if_not_exists and s.name in self.engine.tables():
            return _ok(0)
        import pyarrow as pa

        # an Arrow schema, not Spark DDL: only a computed column needs Spark (to check it)
        schema = pa.schema([pa.field(c.name, arrow_type(c.type)) for c in s.columns])
        computed = {c.name: c.computed.text for c in s.columns if c.computed is not None}
        keys = [
            {"kind": k.kind, "name": k.name, "columns": list(k.columns), "using": k.using}
            for k in s.keys
        ]
        keys += [
            {"kind": "PRIMARY", "name": None, "columns": [c.name], "using": None}
            for c in s.columns
            if c.primary_key
        ]
        names = {c.name for c in s.columns}
        for k in keys:
            missing = [c for c in k["columns"] if c not in names]
            if missing:
                raise ConfigError(f"{k['kind']} KEY names unknown column(s) {', '.join(missing)}")
        declared = {c.name: c.type.to_sql() for c in s.columns}
        primary = {c for k in keys if k["kind"] == "PRIMARY" for c in k["columns"]}
        not_null = [c.name for c in s.columns if c.nullable is False or c.name in primary]
        self.engine.create_table(
            s.name,
            schema,
            keys=keys,
            computed=computed,
            declared=declared,
            not_null=not_null,
        )
        return _ok(0)

    def _ShowCreateTable(self, s: A.ShowCreateTable) -> Result:
        """The table's DDL as SingleStore prints it: declared types, NOT NULL, computed
        columns and keys; running it again (after DROP TABLE) makes the same table."""
        rec = self.engine.catalog.table(s.name)
        declared = rec.options.get("declared", {})
        types = _ddl_types(rec.ddl)
        lines = []
        for f in rec.schema:
            typ = declared.get(f.name) or types.get(f.name, str(f.type))
            if f.name in rec.computed:
                lines.append(f"{_bq(f.name)} AS ({rec.computed[f.name]}) PERSISTED {typ}")
            else:
                null = " NOT NULL" if f.name in rec.not_null else ""
                lines.append(f"{_bq(f.name)} {typ}{null}")
        for k in rec.options.get("keys", []):
            key = "KEY" if k["kind"] == "KEY" else f"{k['kind']} KEY"
            if k.get("name"):
                key += f" {_bq(k['name'])}"
            key += " (" + ", ".join(_bq(c) for c in k["columns"]) + ")"
            lines.append(key + (f" USING {k['using']}" if k.get("using") else ""))
        ddl = f"CREATE TABLE {_bq(s.name)} (\n  " + ",\n  ".join(lines) + "\n)"
        return Result(["Table", "Create Table"], [(s.name, ddl)])

    def _DropTable(self, s: A.DropTable) -> Result:
        self.engine.drop_table(s.name, if_exists=s.if_exists)
        return _ok(0)

    def _ShowTables(self, s: A.ShowTables) -> Result:
        rows = [(t,) for t in self.engine.tables() if s.like is None or like(s.like, t)]
        return Result([f"Tables_in_{DATABASE}"], rows)

    # -- table maintenance ------------------------------------------------------------
    def _ShowTableStatus(self, s: A.ShowTableStatus) -> Result:
        rows = []
        for t in self.engine.tables():
            if s.like is None or like(s.like, t):
                st = {**self.engine.table_status(t), "engine": "Delta"}
                rows.append(tuple(st[k] for k in _STATUS_KEYS))
        return Result(TABLE_STATUS_COLUMNS, rows)

    def _OptimizeTable(self, s: A.OptimizeTable) -> Result:
        done = self.engine.optimize_table(s.name, full=s.full)
        if done["files_removed"]:
            text = f"OK: {done['files_removed']} files compacted into {done['files_added']}"
        else:
            text = "Table is already up to date"
        if s.full:
            text += f"; clustered into {done['clustered']} files" if done["clustered"] else ""
        return Result(
            ["Table", "Op", "Msg_type", "Msg_text"], [(s.name, "optimize", "status", text)]
        )

    def _Vacuum(self, s: A.Vacuum) -> Result:
        files = self.engine.vacuum_table(s.name, retain_hours=s.retain_hours, dry_run=s.dry_run)
        if s.dry_run:
            return Result(["path"], [(f,) for f in files])
        return Result(["Table", "Files_deleted"], [(s.name, len(files))])

    def _DescribeTable(self, s: A.DescribeTable) -> Result:
        cols = ["Field", "Type", "Null", "Key", "Default", "Extra"]
        db = (s.database or DATABASE).lower()
        if db == "information_schema":
            schema = views.SCHEMAS.get(s.name.upper())
            if schema is None:
                raise NotFoundError(
                    f"information_schema.{s.name} does not exist (views: {', '.join(views.VIEWS)})"
                )
            return Result(cols, [(f.name, _type_name(f.type), "YES", "", None, "") for f in schema])
        if db != DATABASE:
            raise NotFoundError(
                f"database '{s.database}' does not exist (databases: {DATABASE}, "
                "information_schema)"
            )
        rec = self.engine.catalog.table(s.name)
        types = _ddl_types(rec.ddl)
        key_of: dict[str, str] = {}
        for k in rec.options.get("keys", []):
            for c in k["columns"]:
                key_of.setdefault(c, {"PRIMARY": "PRI", "UNIQUE": "UNI"}.get(k["kind"], "MUL"))
        rows = []
        for f in rec.schema:
            extra = f"computed: {rec.computed[f.name]}" if f.name in rec.computed else ""
            typ = rec.options.get("declared", {}).get(f.name) or types.get(f.name, str(f.type))
            null = "NO" if f.name in rec.not_null else "YES"
            rows.append((f.name, typ, null, key_of.get(f.name, ""), None, extra))
        return Result(cols, rows)

    def _AlterTableAddColumn(self, s: A.AlterTableAddColumn) -> Result:
        c = s.column
        self.engine.add_column(
            s.table,
            c.name,
            spark_type(c.type),
            c.computed.text if c.computed else None,
            declared=c.type.to_sql(),
            progress=self.progress,
        )
        return _ok(0)

    def _AlterTableDropColumn(self, s: A.AlterTableDropColumn) -> Result:
        self.engine.drop_column(s.table, s.column, progress=self.progress)
        return _ok(0)

    def _AlterTableModifyColumn(self, s: A.AlterTableModifyColumn) -> Result:
        c = s.column
        if c.primary_key or c.auto_increment or c.default is not None:
            raise ConfigError(
                f"MODIFY COLUMN '{c.name}' takes a type and NULL / NOT NULL only; keys and "
                "defaults are not supported"
            )
        self.engine.modify_column(
            s.table,
            c.name,
            spark_type(c.type),
            declared=c.type.to_sql(),
            not_null=c.nullable is False,
            progress=self.progress,
        )
        return _ok(0)

    def _CreateIndex(self, s: A.CreateIndex) -> Result:
        key = {"kind": "KEY", "name": s.name, "columns": list(s.columns), "using": None}
        self.engine.add_key(s.table, key)
        return _ok(0)

    def _DropIndex(self, s: A.DropIndex) -> Result:
        self.engine.drop_key(s.table, s.name)
        return _ok(0)

    def _Insert(self, s: A.Insert) -> Result:
        if s.replace:
            raise ConfigError(
                "REPLACE INTO is supported in the body of a pipeline procedure; a statement "
                "of its own takes INSERT INTO"
            )
        rec = self.engine.catalog.table(s.table)
        cols = list(s.columns) or [f.name for f in rec.schema if f.name not in rec.computed]
        unknown = [c for c in cols if c not in rec.schema.names]
        if unknown:
            raise ConfigError(f"table '{s.table}' has no column(s) {', '.join(unknown)}")
        if s.query is not None:
            df = self._spark_sql(s.query.text)
        else:
            for row in s.rows:
                if len(row) != len(cols):
                    raise ConfigError(
                        f"INSERT gives {len(row)} values for {len(cols)} columns "
                        f"({', '.join(cols)})"
                    )
            values = ", ".join("(" + ", ".join(e.text for e in row) + ")" for row in s.rows)
            names = ", ".join(f"`c{i}`" for i in range(len(cols)))
            df = self._spark_sql(f"SELECT * FROM VALUES {values} AS __v({names})")
        if len(df.columns) != len(cols):
            raise ConfigError(
                f"INSERT gives {len(df.columns)} columns for {len(cols)} ({', '.join(cols)})"
            )
        df = df.toDF(*cols)
        return _ok(self.engine.insert(s.table, df))

    # -- everything else: Spark SQL ---------------------------------------------------
    def _Query(self, s: A.Query) -> Result:
        if not self.stream and quick.usable(self.engine):  # a cold process: no JVM if we can
            fast = quick.answer(self.engine, s.text, max_rows=self.max_rows)
            if fast is not None:
                return fast
        df = self._spark_sql(s.text)
        if self.stream:
            return Result(list(df.columns), stream=_iterate(df))
        if self.max_rows is not None:
            df = df.limit(self.max_rows + 1)
        rows = [tuple(r) for r in _collect(df)]
        return Result(list(df.columns), rows)

    def _CreateProcedure(self, s: A.CreateProcedure) -> Result:
        text = getattr(self, "_source", None) or s.to_sql()
        self.engine.create_procedure(to_procedure(s, text), replace=s.or_replace)
        return _ok(0)

    def _DropProcedure(self, s: A.DropProcedure) -> Result:
        self.engine.drop_procedure(s.name, if_exists=s.if_exists)
        return _ok(0)

    def _ShowProcedures(self, s: A.ShowProcedures) -> Result:
        rows = [
            (p, "sparkpipes") for p in self.engine.procedures() if s.like is None or like(s.like, p)
        ]
        return Result([f"Procedures_in_{DATABASE}", "Definer"], rows)

    # -- users ------------------------------------------------------------------------
    def _CreateUser(self, s: A.CreateUser) -> Result:
        made = self.engine.catalog.users.create(
            s.name, s.password.reveal(), if_not_exists=s.if_not_exists
        )
        return _ok(int(made))

    def _AlterUser(self, s: A.AlterUser) -> Result:
        self.engine.catalog.users.set_password(s.name, s.password.reveal())
        return _ok(0)

    def _DropUser(self, s: A.DropUser) -> Result:
        return _ok(int(self.engine.catalog.users.drop(s.name, if_exists=s.if_exists)))

    def _ShowUsers(self, s: A.ShowUsers) -> Result:
        rows = [
            (u.name, u.created_at)
            for u in self.engine.catalog.users.all()
            if s.like is None or like(s.like, u.name)
        ]
        return Result(["User", "Created"], rows)

    def _spark_sql(self, text: str):
        from pyspark.errors import PySparkException

        views: list[str] = []
        spark_text = translate(text, on_view=views.append)
        spark = self.engine.spark
        for t in self.engine.tables():
            self.engine.table(t).createOrReplaceTempView(t)
        cache: dict = {}
        for v in dict.fromkeys(views):
            arrow = self.engine.information_schema(v, cache)
            spark.createDataFrame(arrow).createOrReplaceTempView(view_name(v))
        try:
            return spark.sql(spark_text)
        except PySparkException as e:
            raise QueryError(_spark_message(e)) from None


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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


def _iterate(df) -> Iterator[tuple[Any, ...]]:
    from pyspark.errors import PySparkException

    try:
        for row in df.toLocalIterator(prefetchPartitions=True):
            yield tuple(row)
    except PySparkException as e:
        raise QueryError(_spark_message(e)) from None


def _spark_message(e: Exception) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def _ddl_types(ddl: str) -> dict[str, str]:
    out = {}
    for part in _split_top(ddl):
        name, _, typ = part.strip().partition(" ")
        out[name.strip("`")] = typ.strip()
    return out


def _split_top(text: str) -> Sequence[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return parts


def _type_name(t) -> str:
    """A view column's type as DESCRIBE shows it."""
    import pyarrow as pa

    if pa.types.is_string(t):
        return "TEXT"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    return {pa.int64(): "BIGINT", pa.int32(): "INT", pa.float64(): "DOUBLE"}.get(t, str(t).upper())

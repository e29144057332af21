"""The statements of tables, as ``SqlSession`` runs them:
``CREATE | DROP TABLE``, ``SHOW TABLES``, ``SHOW CREATE TABLE``, ``DESCRIBE``, ``ALTER
TABLE``, indexes, ``SHOW TABLE STATUS``, ``OPTIMIZE TABLE`` and ``VACUUM``. Who may run
them is checked before (``sql.privileges``); listings show the tables the user holds a
privilege on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkpipes.catalog import views
from sparkpipes.catalog.grants import DATABASE, Access
from sparkpipes.config.tables import TableSpec
from sparkpipes.engine import Engine
from sparkpipes.engine.variables import like
from sparkpipes.errors import ConfigError, NotFoundError, PipelineStateError
from sparkpipes.frontends.singlestore import ast_tables as A
from sparkpipes.frontends.singlestore.lower_tables import create_table_sql, default_text, table_spec
from sparkpipes.frontends.singlestore.privileges import sees_pipeline, sees_table
from sparkpipes.frontends.singlestore.results import Result, ok
from sparkpipes.frontends.singlestore.types import spark_type

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


class TableStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine``, ``access`` and
    ``progress``)."""

    engine: Engine
    access: Access
    progress: Callable[[Any], None] | None

    # -- tables -----------------------------------------------------------------------
    def _CreateTable(self, s: A.CreateTable) -> Result:
        if s.if_not_exists and s.name in self.engine.tables():
            return ok(0)
        self.engine.create_table_spec(table_spec(s))
        return ok(0)

    def _ShowCreateTable(self, s: A.ShowCreateTable) -> Result:
        """The table's DDL as SingleStore prints it: declared types, NOT NULL, computed
        columns and keys; running it again (after DROP TABLE) makes the same table."""
        return Result(["Table", "Create Table"], [(s.name, create_table_sql(self._spec(s.name)))])

    def _spec(self, name: str) -> TableSpec:
        rec = self.engine.catalog.tables.get(name)
        return TableSpec.of_stored(rec.name, rec.schema, rec.ddl, rec.options)

    def _DropTable(self, s: A.DropTable) -> Result:
        loaders = [p.name for p in self.engine.pipelines() if p.table == s.name]
        if loaders:  # named only where the user may see them
            shown = [f"'{n}'" for n in loaders if sees_pipeline(self.access, n)]
            if len(shown) < len(loaders):
                shown.append(f"{len(loaders) - len(shown)} you cannot see")
            raise PipelineStateError(
                f"table '{s.name}' is loaded by pipeline(s) {', '.join(shown)}; drop them first"
            )
        self.engine.drop_table(s.name, if_exists=s.if_exists)
        return ok(0)

    def _ShowTables(self, s: A.ShowTables) -> Result:
        rows = [
            (t,)
            for t in self.engine.tables()
            if (s.like is None or like(s.like, t)) and sees_table(self.access, t)
        ]
        return Result([f"Tables_in_{self.engine.catalog.database.name()}"], rows)

    # -- table maintenance ------------------------------------------------------------
    def _ShowTableStatus(self, s: A.ShowTableStatus) -> Result:
        rows = []
        for t in self.engine.tables():
            if (s.like is None or like(s.like, t)) and sees_table(self.access, t):
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
        self.engine.catalog.database.check(db)
        spec = self._spec(s.name)
        key_of: dict[str, str] = {}
        for k in spec.keys:
            for c in k.columns:
                key_of.setdefault(c, {"PRIMARY": "PRI", "UNIQUE": "UNI"}.get(k.kind, "MUL"))
        rows = []
        not_null = set(spec.not_null)
        for c in spec.columns:
            extra = f"computed: {c.computed}" if c.computed is not None else ""
            null = "NO" if c.name in not_null else "YES"
            default = default_text(c.default) if c.default is not None else None
            rows.append((c.name, c.declared, null, key_of.get(c.name, ""), default, extra))
        return Result(cols, rows)

    def _AlterTableAddColumn(self, s: A.AlterTableAddColumn) -> Result:
        c = s.column
        if c.default is not None and c.default.kind != "null":
            raise ConfigError(  # the existing rows would hold it: not done yet
                f"ADD COLUMN '{c.name}' … DEFAULT is not supported yet; add the column, then "
                "load or UPDATE its values"
            )
        self.engine.add_column(
            s.table,
            c.name,
            spark_type(c.type),
            c.computed.text if c.computed else None,
            declared=c.type.to_sql(),
            progress=self.progress,
        )
        return ok(0)

    def _AlterTableDropColumn(self, s: A.AlterTableDropColumn) -> Result:
        self.engine.drop_column(s.table, s.column, progress=self.progress)
        return ok(0)

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
        return ok(0)

    def _CreateIndex(self, s: A.CreateIndex) -> Result:
        key = {"kind": "KEY", "name": s.name, "columns": list(s.columns), "using": None}
        self.engine.add_key(s.table, key)
        return ok(0)

    def _DropIndex(self, s: A.DropIndex) -> Result:
        self.engine.drop_key(s.table, s.name)
        return ok(0)


def _type_name(t) -> str:
    """A view column's type as DESCRIBE shows it."""
    import pyarrow as pa

    if pa.types.is_string(t):
        return "TEXT"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    return {pa.int64(): "BIGINT", pa.int32(): "INT", pa.float64(): "DOUBLE"}.get(t, str(t).upper())

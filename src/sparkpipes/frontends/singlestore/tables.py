"""The statements of tables, as ``SqlSession`` runs them:
``CREATE | DROP TABLE``, ``SHOW TABLES``, ``SHOW CREATE TABLE``, ``DESCRIBE``, ``ALTER
TABLE``, indexes, ``SHOW TABLE STATUS``, ``OPTIMIZE TABLE`` and ``VACUUM``. Who may run
them is checked before (``sql.privileges``); listings show the tables the user holds a
privilege on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkpipes.catalog import views
from sparkpipes.catalog.grants import DATABASE, Access
from sparkpipes.engine.variables import like
from sparkpipes.errors import ConfigError, NotFoundError
from sparkpipes.frontends.singlestore import ast_tables as A
from sparkpipes.frontends.singlestore.privileges import sees_table
from sparkpipes.frontends.singlestore.results import Result, ok
from sparkpipes.frontends.singlestore.types import arrow_type, spark_type

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

    engine: Any
    access: Access
    progress: Callable[[Any], None] | None

    # -- tables -----------------------------------------------------------------------
    def _CreateTable(self, s: A.CreateTable) -> Result:
        if s.if_not_exists and s.name in self.engine.tables():
            return ok(0)
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
        return ok(0)

    def _ShowCreateTable(self, s: A.ShowCreateTable) -> Result:
        """The table's DDL as SingleStore prints it: declared types, NOT NULL, computed
        columns and keys; running it again (after DROP TABLE) makes the same table."""
        rec = self.engine.catalog.tables.get(s.name)
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
        return ok(0)

    def _ShowTables(self, s: A.ShowTables) -> Result:
        rows = [
            (t,)
            for t in self.engine.tables()
            if (s.like is None or like(s.like, t)) and sees_table(self.access, t)
        ]
        return Result([f"Tables_in_{DATABASE}"], rows)

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
        if db != DATABASE:
            raise NotFoundError(
                f"database '{s.database}' does not exist (databases: {DATABASE}, "
                "information_schema)"
            )
        rec = self.engine.catalog.tables.get(s.name)
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


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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

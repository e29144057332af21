"""``CREATE TABLE`` lowered into a :class:`~sparkpipes.config.tables.TableSpec`, and back:
``SHOW CREATE TABLE`` is the spec of the stored table written as SingleStore prints it
(every name quoted, one element per line), which run again makes the same table."""

from __future__ import annotations

from sparkpipes.config.tables import ColumnSpec, TableKey, TableSpec
from sparkpipes.frontends.singlestore import ast_tables as A
from sparkpipes.frontends.singlestore.types import arrow_type


def table_spec(s: A.CreateTable) -> TableSpec:
    """The table of a ``CREATE TABLE``: Arrow types (no JVM needed), the types as written,
    NOT NULL (and ``PRIMARY KEY`` on a column, which is NOT NULL too), computed columns,
    and the keys in written order, column-level primary keys last."""
    columns = tuple(
        ColumnSpec(
            c.name,
            arrow_type(c.type),
            c.type.to_sql(),
            c.nullable is False,
            c.computed.text if c.computed is not None else None,
        )
        for c in s.columns
    )
    keys = [TableKey(k.kind, tuple(k.columns), k.name, k.using) for k in s.keys]
    keys += [TableKey("PRIMARY", (c.name,)) for c in s.columns if c.primary_key]
    return TableSpec(s.name, columns, tuple(keys))


def create_table_sql(spec: TableSpec) -> str:
    """``SHOW CREATE TABLE``'s text of ``spec``."""
    not_null = set(spec.not_null)
    lines = []
    for c in spec.columns:
        typ = c.declared or (c.type if isinstance(c.type, str) else str(c.type).upper())
        if c.computed is not None:
            lines.append(f"{_bq(c.name)} AS ({c.computed}) PERSISTED {typ}")
        else:
            lines.append(f"{_bq(c.name)} {typ}{' NOT NULL' if c.name in not_null else ''}")
    for k in spec.keys:
        key = "KEY" if k.kind == "KEY" else f"{k.kind} KEY"
        if k.name:
            key += f" {_bq(k.name)}"
        key += " (" + ", ".join(_bq(c) for c in k.columns) + ")"
        lines.append(key + (f" USING {k.using}" if k.using else ""))
    return f"CREATE TABLE {_bq(spec.name)} (\n  " + ",\n  ".join(lines) + "\n)"


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"

"""``CREATE TABLE`` lowered into a :class:`~sparkpipes.config.tables.TableSpec`, and back:
``SHOW CREATE TABLE`` is the spec of the stored table written as SingleStore prints it
(every name quoted, one element per line), which run again makes the same table."""

from __future__ import annotations

import math
import re

import pyarrow as pa

from sparkpipes.config.tables import Choices, ColumnDefault, ColumnSpec, TableKey, TableSpec
from sparkpipes.errors import ConfigError
from sparkpipes.formats.coerce import coerce_column
from sparkpipes.frontends.singlestore import ast_tables as A
from sparkpipes.frontends.singlestore.ast_base import quote_string
from sparkpipes.frontends.singlestore.types import arrow_type

#: the column types whose values are WKT text, checked as SingleStore reads it
GEOGRAPHY = ("GEOGRAPHY", "GEOGRAPHYPOINT")
#: the DEFAULTs that are the time a row is loaded
NOW = {"CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP", "LOCALTIME", "CURRENT_TIMESTAMP()", "NOW()"}


def column_default(
    c: A.ColumnDef, field: pa.Field, choices: Choices | None = None
) -> ColumnDefault | None:
    """A column's ``DEFAULT``: a literal, converted to the column's type now (MySQL's
    "Invalid default value" if it cannot be; of an ENUM or SET, one of its members), or
    the load time (``CURRENT_TIMESTAMP``, ``NOW()``, with or without a precision);
    ``DEFAULT NULL`` is no default. A NOT NULL ``ENUM`` without one defaults to its first
    member, as in MySQL."""
    d = c.default
    if d is None and choices is not None and not choices.many and c.nullable is False:
        return ColumnDefault(choices.members[0]) if choices.members else None
    if d is None or d.kind == "null":
        return None
    if choices is not None and d.kind != "string":
        raise ConfigError(f"Invalid default value for '{c.name}': {d.to_sql()}")
    if choices is not None:
        picked = choices.pick(str(d.value))
        if picked.lower() != str(d.value).rstrip(" ").lower():
            raise ConfigError(f"Invalid default value for '{c.name}': {d.to_sql()}")
        return ColumnDefault(picked)
    if d.kind in ("word", "call"):
        word = re.sub(r"\(\d*\)$", "()", str(d.value).replace("`", "")).upper()
        if word in NOW or word.rstrip("()") in NOW:
            return ColumnDefault(now=True)
        raise ConfigError(f"column '{c.name}': DEFAULT {d.to_sql()} is not supported")
    value = d.value
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"Invalid default value for '{c.name}': {d.to_sql()}")
    try:
        coerce_column(value, field)
    except ValueError as e:
        raise ConfigError(f"Invalid default value for '{c.name}': {e}") from None
    return ColumnDefault(value)


def table_spec(s: A.CreateTable) -> TableSpec:
    """The table of a ``CREATE TABLE``: Arrow types (no JVM needed), the types as written,
    NOT NULL (and ``PRIMARY KEY`` on a column, which is NOT NULL too), computed columns,
    defaults, and the keys in written order, column-level primary keys last."""
    columns = []
    for c in s.columns:
        t = arrow_type(c.type)
        if c.auto_increment and not pa.types.is_integer(t):  # MySQL's error 1063
            raise ConfigError(
                f"Incorrect column specifier for column '{c.name}': AUTO_INCREMENT "
                "takes an integer column"
            )
        choices = Choices(c.type.members, c.type.name == "SET") if c.type.members else None
        columns.append(
            ColumnSpec(
                c.name,
                t,
                c.type.to_sql(),
                c.nullable is False,
                c.computed.text if c.computed is not None else None,
                column_default(c, pa.field(c.name, t), choices),
                c.auto_increment,
                choices,
                c.type.name if c.type.name in GEOGRAPHY else None,
                c.on_update,
                c.series_timestamp,
                c.type.params[0] if c.type.name == "VECTOR" else None,
            )
        )
    keys = [TableKey(k.kind, tuple(k.columns), k.name, k.using, k.descending) for k in s.keys]
    keys += [TableKey("PRIMARY", (c.name,)) for c in s.columns if c.primary_key]
    _one_unique_key(keys, {c.name for c in s.columns if c.nullable is False or c.primary_key})
    start = dict(s.options).get("AUTO_INCREMENT")
    if start is not None and not any(c.auto_increment for c in s.columns):
        raise ConfigError("table option AUTO_INCREMENT needs an AUTO_INCREMENT column")
    if start is not None and (not start.isdigit() or int(start) >= 1 << 63):
        raise ConfigError(f"table option AUTO_INCREMENT takes a whole number, not {start}")
    return TableSpec(s.name, tuple(columns), tuple(keys), s.options)


def _one_unique_key(keys: list[TableKey], not_null: set[str]) -> None:
    """A table enforces one key (``TableRecord.primary_key``): the PRIMARY KEY, or its one
    UNIQUE KEY. A UNIQUE KEY the primary key does not imply, or a second one, would be
    accepted and not enforced, so it is refused (a key holding all the primary key's
    columns is implied by it); so is a table's key UNIQUE KEY on a column that may be NULL
    (MySQL lets NULLs repeat in it; here rows are told apart by the key's values)."""
    primary = next((set(k.columns) for k in keys if k.kind == "PRIMARY"), None)
    unique = [k for k in keys if k.kind == "UNIQUE"]
    nullable = [c for c in (unique[0].columns if unique else ()) if c not in not_null]
    if primary is None and nullable:
        raise ConfigError(
            f"UNIQUE KEY ({', '.join(unique[0].columns)}) on column '{nullable[0]}', which "
            "may be NULL, is not supported yet: declare the key's columns NOT NULL"
        )
    extra = unique if primary is not None else unique[1:]
    extra = [k for k in extra if primary is None or not primary <= set(k.columns)]
    if extra:
        k = extra[0]
        name = f" {_bq(k.name)}" if k.name else ""
        raise ConfigError(
            f"UNIQUE KEY{name} ({', '.join(k.columns)}) beside the "
            f"{'PRIMARY KEY' if primary is not None else 'first UNIQUE KEY'} is not supported "
            "yet: a table enforces one key here (the PRIMARY KEY, or its one UNIQUE KEY), "
            "and rows repeating this one would load"
        )


def create_table_sql(spec: TableSpec) -> str:
    """``SHOW CREATE TABLE``'s text of ``spec``."""
    not_null = set(spec.not_null)
    lines = []
    for c in spec.columns:
        typ = c.declared or (c.type if isinstance(c.type, str) else str(c.type).upper())
        if c.computed is not None:
            lines.append(f"{_bq(c.name)} AS ({c.computed}) PERSISTED {typ}")
        else:
            null = " NOT NULL" if c.name in not_null else ""
            default = f" DEFAULT {default_text(c.default)}" if c.default is not None else ""
            auto = " AUTO_INCREMENT" if c.auto_increment else ""
            auto += " ON UPDATE CURRENT_TIMESTAMP" if c.on_update else ""
            auto += " SERIES TIMESTAMP" if c.series_timestamp else ""
            lines.append(f"{_bq(c.name)} {typ}{null}{default}{auto}")
    for k in spec.keys:
        key = "KEY" if k.kind == "KEY" else f"{k.kind} KEY"
        if k.name:
            key += f" {_bq(k.name)}"
        cols = [_bq(c) + (" DESC" if c in k.descending else "") for c in k.columns]
        key += " (" + ", ".join(cols) + ")"
        lines.append(key + (f" USING {k.using}" if k.using else ""))
    options = "".join(f" {name} = {value}" for name, value in spec.table_options)
    return f"CREATE TABLE {_bq(spec.name)} (\n  " + ",\n  ".join(lines) + "\n)" + options


def default_text(d: ColumnDefault) -> str:
    """A column DEFAULT as CREATE TABLE writes it."""
    if d.now:
        return "CURRENT_TIMESTAMP"
    if isinstance(d.value, bool):
        return "TRUE" if d.value else "FALSE"
    if isinstance(d.value, int | float):
        return repr(d.value)
    return quote_string(str(d.value))


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"

"""The tables of the warehouse as the catalog records them: location, Spark DDL, Arrow
schema and options (keys, computed columns, NOT NULL), and the next value of a table's
``AUTO_INCREMENT`` column. Dropping a table drops its maintenance log and its counter
with it."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkpipes.catalog.schema import (
    maintenance_t,
    schema_from_text,
    schema_to_text,
    sequences_t,
    tables_t,
)
from sparkpipes.catalog.time import now as _now
from sparkpipes.config.tables import ColumnDefault, ValueRules, stored_defaults
from sparkpipes.errors import AlreadyExistsError, CatalogError, NotFoundError

Tx = Callable[[], AbstractContextManager[sa.Connection]]


@dataclass(frozen=True)
class TableRecord:
    name: str
    location: str
    ddl: str
    schema: pa.Schema
    options: dict[str, Any]  # keys, computed columns, …
    created_at: dt.datetime

    @property
    def not_null(self) -> tuple[str, ...]:
        """Columns declared NOT NULL (and primary-key columns): enforced at ingest."""
        return tuple(self.options.get("not_null", ()))

    @property
    def computed(self) -> dict[str, str]:
        """Computed columns, in order: name → expression (computed at ingest)."""
        return dict(self.options.get("computed", {}))

    @property
    def auto_increment(self) -> tuple[str, ...]:
        """``AUTO_INCREMENT`` columns: a row without a value gets one (``reserve_ids``)."""
        return tuple(self.options.get("auto_increment", ()))

    @property
    def defaults(self) -> dict[str, ColumnDefault]:
        """Column defaults: what a row that gives a column no value has in it."""
        return stored_defaults(self.options)

    @property
    def rules(self) -> ValueRules:
        """What the values of ENUM, SET, GEOGRAPHY and VECTOR columns must be."""
        return ValueRules.from_options(self.options)

    @property
    def auto_increment_start(self) -> int:
        """The least value the ``AUTO_INCREMENT`` column is given (``AUTO_INCREMENT = n``
        after the column list), else 1."""
        given = dict((n, v) for n, v in self.options.get("table_options", ()))
        return int(given.get("AUTO_INCREMENT", 1))

    @property
    def primary_key(self) -> tuple[str, ...]:
        """The key rows are told apart by: the PRIMARY KEY, else a table's one UNIQUE key
        on NOT NULL columns (SingleStore's columnstore tables declare ``UNIQUE KEY pk
        (…)``; there, as in MySQL, a row that repeats it is a duplicate key). Empty: rows
        are only appended."""
        keys = self.options.get("keys", [])
        for kind in ("PRIMARY", "UNIQUE"):
            found = [k for k in keys if k.get("kind") == kind]
            if found and (kind == "PRIMARY" or len(found) == 1):
                columns = tuple(found[0]["columns"])
                if kind == "PRIMARY" or set(columns) <= set(self.not_null):
                    return columns
        return ()

    @property
    def on_update(self) -> tuple[str, ...]:
        """``ON UPDATE CURRENT_TIMESTAMP`` columns."""
        return tuple(self.options.get("on_update", ()))


class Tables:
    """``catalog.tables``: one row per table."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx

    def create(
        self,
        name: str,
        location: str,
        ddl: str,
        schema: pa.Schema,
        options: dict[str, Any] | None = None,
    ) -> None:
        try:
            with self._tx() as c:
                c.execute(
                    tables_t.insert().values(
                        name=name,
                        location=location,
                        ddl=ddl,
                        arrow_schema=schema_to_text(schema),
                        options=json.dumps(options or {}),
                        created_at=_now(),
                    )
                )
        except IntegrityError:
            raise AlreadyExistsError(f"table '{name}' already exists") from None

    def get(self, name: str) -> TableRecord:
        with self._tx() as c:
            row = c.execute(sa.select(tables_t).where(tables_t.c.name == name)).first()
        if row is None:
            raise NotFoundError(f"table '{name}' does not exist")
        return TableRecord(
            row.name,
            row.location,
            row.ddl,
            schema_from_text(row.arrow_schema),
            json.loads(row.options),
            row.created_at,
        )

    def all(self) -> list[TableRecord]:
        with self._tx() as c:
            names = [r.name for r in c.execute(sa.select(tables_t.c.name).order_by("name"))]
        return [self.get(n) for n in names]

    def update(self, name: str, **values: Any) -> None:
        if "schema" in values:
            values["arrow_schema"] = schema_to_text(values.pop("schema"))
        if "options" in values:
            values["options"] = json.dumps(values["options"])
        with self._tx() as c:
            c.execute(tables_t.update().where(tables_t.c.name == name).values(**values))

    def drop(self, name: str) -> None:
        with self._tx() as c:
            if c.execute(tables_t.delete().where(tables_t.c.name == name)).rowcount == 0:
                raise NotFoundError(f"table '{name}' does not exist")
            c.execute(maintenance_t.delete().where(maintenance_t.c.table_name == name))
            c.execute(sequences_t.delete().where(sequences_t.c.table_name == name))

    def reserve_ids(self, name: str, count: int, at_least: int = 1) -> int:
        """The first of ``count`` new ``AUTO_INCREMENT`` values of table ``name``, never
        handed out before and none below ``at_least`` (past the values rows gave it
        themselves); a ``count`` of 0 only moves the counter to ``at_least``. Engines
        sharing the catalog each get their own range; a range whose batch fails is not
        reused (values are unique, not consecutive)."""
        if count < 0:
            raise ValueError("count must not be negative")
        seq = sequences_t.c
        for _ in range(3):
            with self._tx() as c:
                moved = c.execute(
                    sequences_t.update()
                    .where(seq.table_name == name)
                    .values(
                        next_value=sa.case(
                            (seq.next_value < at_least, at_least), else_=seq.next_value
                        )
                        + count
                    )
                ).rowcount
                if moved:
                    last = c.execute(
                        sa.select(seq.next_value).where(seq.table_name == name)
                    ).scalar_one()
                    return int(last) - count
            try:
                with self._tx() as c:
                    start = max(1, at_least)
                    c.execute(
                        sequences_t.insert().values(table_name=name, next_value=start + count)
                    )
                    return start
            except IntegrityError:  # another engine made the counter first: take from it
                continue
        raise CatalogError(f"could not reserve AUTO_INCREMENT values of table '{name}'")

"""Named JSON definitions the front ends keep: procedures (``ProcedureSpec.to_json``),
sink connectors (their config without secrets, and their pipelines), Pinot schemas and
table configs (secrets already redacted). One repository per kind, each over its table."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from sparkpipes.catalog.tables import Tx
from sparkpipes.catalog.time import now as _now
from sparkpipes.errors import AlreadyExistsError, NotFoundError


class Definitions:
    """``catalog.procedures``, ``catalog.connectors``, ``catalog.pinot_schemas``,
    ``catalog.pinot_tables``: name → JSON document."""

    def __init__(self, table: sa.Table, what: str, tx: Tx) -> None:
        self._table = table
        #: how messages name one (``procedure``, ``Pinot schema``)
        self.what = what
        self._tx = tx

    def put(self, name: str, definition: dict[str, Any], *, replace: bool) -> None:
        """Store ``definition`` under ``name``; AlreadyExistsError unless ``replace``."""
        table, what = self._table, self.what
        with self._tx() as c:
            exists = c.execute(sa.select(table.c.name).where(table.c.name == name)).first()
            if exists and not replace:
                raise AlreadyExistsError(f"{what} '{name}' already exists")
            if exists:
                c.execute(
                    table.update()
                    .where(table.c.name == name)
                    .values(definition=json.dumps(definition))
                )
            else:
                c.execute(
                    table.insert().values(
                        name=name, definition=json.dumps(definition), created_at=_now()
                    )
                )

    def get(self, name: str) -> dict[str, Any]:
        table, what = self._table, self.what
        with self._tx() as c:
            row = c.execute(sa.select(table.c.definition).where(table.c.name == name)).first()
        if row is None:
            raise NotFoundError(f"{what} '{name}' does not exist")
        return json.loads(row.definition)

    def names(self) -> list[str]:
        table = self._table
        with self._tx() as c:
            return [r.name for r in c.execute(sa.select(table.c.name).order_by("name"))]

    def drop(self, name: str) -> None:
        table, what = self._table, self.what
        with self._tx() as c:
            if c.execute(table.delete().where(table.c.name == name)).rowcount == 0:
                raise NotFoundError(f"{what} '{name}' does not exist")

"""Pipelines as the catalog records them: the definition (credentials redacted), its
state and last error, and the credentials sealed in a column of their own
(``catalog.secrets``), returned only by :meth:`Pipelines.credentials`. Dropping a pipeline
drops its lease."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkpipes.catalog.schema import leases_t, pipelines_t
from sparkpipes.catalog.secrets import SecretBox, sealed
from sparkpipes.catalog.tables import Tx
from sparkpipes.catalog.time import now as _now
from sparkpipes.errors import AlreadyExistsError, NotFoundError


@dataclass(frozen=True)
class PipelineRecord:
    name: str
    id: str
    source: str
    table: str
    definition: dict[str, Any]  # credentials redacted
    state: str
    last_error: str | None
    created_at: dt.datetime
    updated_at: dt.datetime


class Pipelines:
    """``catalog.pipelines``: one row per pipeline. ``box`` gives the key that seals
    credentials (asked for only when there are some to seal or open)."""

    def __init__(self, tx: Tx, box: Callable[[], SecretBox]) -> None:
        self._tx = tx
        self._box = box

    def _seal(self, credentials: dict[str, str]) -> str:
        return self._box().seal(json.dumps(credentials)) if credentials else "{}"

    def seal_clear_credentials(self) -> None:
        """Credentials an older sparkpipes stored in clear text are sealed at open."""
        with self._tx() as c:
            rows = c.execute(sa.select(pipelines_t.c.name, pipelines_t.c.credentials)).all()
            for r in rows:
                if r.credentials and not sealed(r.credentials) and json.loads(r.credentials):
                    c.execute(
                        pipelines_t.update()
                        .where(pipelines_t.c.name == r.name)
                        .values(credentials=self._seal(json.loads(r.credentials)))
                    )

    def create(
        self,
        name: str,
        pipeline_id: str,
        source: str,
        table: str,
        definition: dict[str, Any],
        credentials: dict[str, str],
        state: str,
        *,
        replace: bool = False,
    ) -> None:
        now = _now()
        with self._tx() as c:
            if replace:
                c.execute(pipelines_t.delete().where(pipelines_t.c.name == name))
            try:
                c.execute(
                    pipelines_t.insert().values(
                        name=name,
                        id=pipeline_id,
                        source=source,
                        table_name=table,
                        definition=json.dumps(definition),
                        credentials=self._seal(credentials),
                        state=state,
                        created_at=now,
                        updated_at=now,
                    )
                )
            except IntegrityError:
                raise AlreadyExistsError(f"pipeline '{name}' already exists") from None

    @staticmethod
    def _record(row) -> PipelineRecord:
        return PipelineRecord(
            row.name,
            row.id,
            row.source,
            row.table_name,
            json.loads(row.definition),
            row.state,
            row.last_error,
            row.created_at,
            row.updated_at,
        )

    def get(self, name: str) -> PipelineRecord:
        with self._tx() as c:
            row = c.execute(sa.select(pipelines_t).where(pipelines_t.c.name == name)).first()
        if row is None:
            raise NotFoundError(f"pipeline '{name}' does not exist", pipeline=name)
        return self._record(row)

    def all(self) -> list[PipelineRecord]:
        with self._tx() as c:
            rows = c.execute(sa.select(pipelines_t).order_by(pipelines_t.c.name)).all()
        return [self._record(r) for r in rows]

    def states(self) -> list[PipelineRecord]:
        """Every pipeline's record without its definition (``{}``): what a scheduler
        reads every second for hundreds of pipelines, without parsing their JSON."""
        t = pipelines_t
        cols = (t.c.name, t.c.id, t.c.source, t.c.table_name, t.c.state, t.c.last_error)
        with self._tx() as c:
            rows = c.execute(sa.select(*cols, t.c.created_at, t.c.updated_at)).all()
        return [
            PipelineRecord(
                r.name,
                r.id,
                r.source,
                r.table_name,
                {},
                r.state,
                r.last_error,
                r.created_at,
                r.updated_at,
            )
            for r in rows
        ]

    def credentials(self, name: str) -> dict[str, str]:
        with self._tx() as c:
            row = c.execute(
                sa.select(pipelines_t.c.credentials).where(pipelines_t.c.name == name)
            ).first()
        if row is None:
            raise NotFoundError(f"pipeline '{name}' does not exist", pipeline=name)
        return json.loads(self._box().open(row.credentials)) if row.credentials else {}

    def update(self, name: str, **values: Any) -> None:
        if "definition" in values:
            values["definition"] = json.dumps(values["definition"])
        with self._tx() as c:
            res = c.execute(
                pipelines_t.update()
                .where(pipelines_t.c.name == name)
                .values(updated_at=_now(), **values)
            )
            if res.rowcount == 0:
                raise NotFoundError(f"pipeline '{name}' does not exist", pipeline=name)

    def drop(self, name: str) -> PipelineRecord:
        rec = self.get(name)
        with self._tx() as c:
            c.execute(pipelines_t.delete().where(pipelines_t.c.name == name))
            c.execute(leases_t.delete().where(leases_t.c.pipeline == rec.id))
        return rec

"""Batch history and the errors store: each batch attempt with its rows, bytes, errors,
per-partition figures and end offsets; each skipped record with its source partition and
offset (the errors view). Pruning and the maintenance log are ``catalog.history``."""

from __future__ import annotations

import builtins
import datetime as dt
import json
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from sparkpipes.catalog.schema import batches_t, errors_t, pruned_t
from sparkpipes.catalog.states import BatchState
from sparkpipes.catalog.tables import Tx
from sparkpipes.catalog.time import now as _now


class Batches:
    """``catalog.batches``: attempts and skipped records, by pipeline id."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx

    def record(
        self,
        *,
        pipeline_id: str,
        pipeline_name: str,
        batch_id: int,
        attempt: int,
        state: str,
        started_at: dt.datetime,
        rows: int = 0,
        nbytes: int = 0,
        errors: int = 0,
        partitions: Sequence[dict[str, Any]] = (),
        offsets: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        finished = _now()
        values = dict(
            pipeline_name=pipeline_name,
            state=state,
            rows=rows,
            bytes=nbytes,
            errors=errors,
            started_at=started_at,
            finished_at=finished,
            duration_ms=int((finished - started_at).total_seconds() * 1000),
            partitions=json.dumps(list(partitions)),
            offsets=json.dumps(offsets) if offsets is not None else None,
            error=error,
        )
        key = dict(pipeline_id=pipeline_id, batch_id=batch_id, attempt=attempt)
        with self._tx() as c:
            c.execute(
                batches_t.delete().where(
                    sa.and_(*(getattr(batches_t.c, k) == v for k, v in key.items()))
                )
            )
            c.execute(batches_t.insert().values(**key, **values))

    def list(
        self, pipeline_id: str | None = None, last: int | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Batch attempts, oldest first; with ``last``, only the newest ``last`` of them
        (read as such: the cost does not grow with the history)."""
        c_ = batches_t.c
        q = sa.select(batches_t)
        if pipeline_id is not None:
            q = q.where(c_.pipeline_id == pipeline_id)
        if last is not None:
            q = q.order_by(c_.batch_id.desc(), c_.attempt.desc()).limit(last)
        else:
            q = q.order_by(c_.batch_id, c_.attempt)
        with self._tx() as c:
            rows = c.execute(q).mappings().all()
        if last is not None:
            rows = list(reversed(rows))
        out = []
        for r in rows:
            d = dict(r)
            d["partitions"] = json.loads(d["partitions"])
            d["offsets"] = json.loads(d["offsets"]) if d["offsets"] else None
            out.append(d)
        return out

    def loaded(self, pipeline_id: str) -> tuple[int, dt.datetime | None]:
        """Rows of every succeeded batch of the pipeline, and when the last one finished
        (one aggregate query; batches pruned from the history count through their
        totals)."""
        c_ = batches_t.c
        q = sa.select(sa.func.coalesce(sa.func.sum(c_.rows), 0), sa.func.max(c_.finished_at))
        q = q.where(c_.pipeline_id == pipeline_id, c_.state == BatchState.SUCCEEDED)
        p = pruned_t.c
        with self._tx() as c:
            rows, finished = c.execute(q).one()
            old = c.execute(
                sa.select(p.rows, p.last_finished).where(p.pipeline_id == pipeline_id)
            ).first()
        if old is not None:
            rows = int(rows) + old.rows
            finished = finished or old.last_finished
        return int(rows), finished

    def last_succeeded(self, pipeline_id: str) -> tuple[int, dict[str, Any]] | None:
        q = (
            sa.select(batches_t.c.batch_id, batches_t.c.offsets)
            .where(
                batches_t.c.pipeline_id == pipeline_id,
                batches_t.c.state.in_([str(x) for x in BatchState.committed()]),
            )
            .order_by(batches_t.c.batch_id.desc())
            .limit(1)
        )
        with self._tx() as c:
            row = c.execute(q).first()
        return (row.batch_id, json.loads(row.offsets)) if row else None

    def replace_errors(
        self, pipeline_id: str, pipeline_name: str, batch_id: int, errors: Iterable[dict]
    ) -> int:
        """Store a batch's errors; a retry of the same batch replaces them (idempotent)."""
        now = _now()
        rows = [
            dict(
                pipeline_id=pipeline_id,
                pipeline_name=pipeline_name,
                batch_id=batch_id,
                partition=str(e["partition"]),
                offset=json.dumps(e.get("offset")),
                code=e.get("code", "SP300"),
                kind=e.get("kind", "parse"),
                reason=e["reason"],
                excerpt=e.get("excerpt"),
                created_at=now,
            )
            for e in errors
        ]
        with self._tx() as c:
            c.execute(
                errors_t.delete().where(
                    errors_t.c.pipeline_id == pipeline_id, errors_t.c.batch_id == batch_id
                )
            )
            if rows:
                c.execute(errors_t.insert(), rows)
        return len(rows)

    def errors(
        self, pipeline_id: str | None = None, last: int | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Stored errors, oldest first; with ``last``, only the newest ``last``."""
        q = sa.select(errors_t)
        if pipeline_id is not None:
            q = q.where(errors_t.c.pipeline_id == pipeline_id)
        q = q.order_by(errors_t.c.id.desc()).limit(last) if last else q.order_by(errors_t.c.id)
        with self._tx() as c:
            rows = c.execute(q).mappings().all()
        if last:
            rows = list(reversed(rows))
        out = []
        for r in rows:
            d = dict(r)
            d["offset"] = json.loads(d["offset"]) if d["offset"] else None
            out.append(d)
        return out

    def drop_history(self, pipeline_id: str) -> None:
        with self._tx() as c:
            c.execute(batches_t.delete().where(batches_t.c.pipeline_id == pipeline_id))
            c.execute(errors_t.delete().where(errors_t.c.pipeline_id == pipeline_id))
            c.execute(pruned_t.delete().where(pruned_t.c.pipeline_id == pipeline_id))

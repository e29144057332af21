"""Bounded history in the catalog: batch metadata, stored errors, table maintenance.

A pipeline that runs for months makes millions of batches; its history must not grow the
catalog, nor slow the reads of status, the API or ``information_schema``, without bound.
:meth:`History.prune` keeps the newest ``pipelines_batches_metadata_to_keep`` batches of
each pipeline (SingleStore's variable of that name) and errors younger than
``pipelines_errors_retention_minutes``; what pruned batches had loaded is added to the
pipeline's totals (``sp_pruned``), so the rows a pipeline has loaded never go down.

Table maintenance (compaction, vacuum, ``OPTIMIZE TABLE``) is recorded in
``sp_maintenance`` (``information_schema.TABLE_MAINTENANCE``), newest
``MAINTENANCE_TO_KEEP`` rows per table.

Where a pipeline resumes never depends on this history: the table is the source of truth.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import sqlalchemy as sa

from sparkpipes.catalog.states import BatchState

#: maintenance records kept per table
MAINTENANCE_TO_KEEP = 1000


def pruned_table(meta: sa.MetaData) -> sa.Table:
    return sa.Table(
        "sp_pruned",
        meta,
        sa.Column("pipeline_id", sa.String(64), primary_key=True),
        sa.Column("batches", sa.BigInteger, nullable=False, default=0),
        sa.Column("rows", sa.BigInteger, nullable=False, default=0),
        sa.Column("bytes", sa.BigInteger, nullable=False, default=0),
        sa.Column("last_finished", sa.DateTime),
    )


def maintenance_table(meta: sa.MetaData) -> sa.Table:
    return sa.Table(
        "sp_maintenance",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_name", sa.String(255), nullable=False, index=True),
        sa.Column("operation", sa.String(32), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("engine", sa.String(255)),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("duration_ms", sa.BigInteger, nullable=False),
        sa.Column("files_removed", sa.BigInteger, nullable=False, default=0),
        sa.Column("files_added", sa.BigInteger, nullable=False, default=0),
        sa.Column("bytes_removed", sa.BigInteger),
        sa.Column("bytes_added", sa.BigInteger),
        sa.Column("rows_affected", sa.BigInteger),
        sa.Column("table_version", sa.BigInteger),
        sa.Column("error", sa.Text),
    )


Tx = Callable[[], AbstractContextManager[sa.Connection]]


class History:
    """Pruning and the maintenance log, over the catalog's transactions."""

    def __init__(
        self, batches: sa.Table, errors: sa.Table, pruned: sa.Table, maint: sa.Table, tx: Tx
    ) -> None:
        self._b, self._e, self._p, self._m, self._tx = batches, errors, pruned, maint, tx

    # -- batches and errors -----------------------------------------------------------
    def due(self, *, keep_batches: int, errors_before: dt.datetime) -> set[str]:
        """The pipelines :meth:`prune` may find something to delete for, in two queries
        for all of them (a superset: it has ``keep_batches`` batches or more, or an error
        made before ``errors_before``), so a round over hundreds of idle pipelines does
        not query each one."""
        b, e = self._b.c, self._e.c
        with self._tx() as c:
            many = c.execute(
                sa.select(b.pipeline_id)
                .group_by(b.pipeline_id)
                .having(sa.func.count(sa.distinct(b.batch_id)) >= max(keep_batches, 1))
            ).scalars()
            old = c.execute(
                sa.select(e.pipeline_id).where(e.created_at < errors_before).distinct()
            ).scalars()
            return set(many) | set(old)

    def prune(self, pipeline_id: str, *, keep_batches: int, errors_before: dt.datetime) -> int:
        """Delete the pipeline's batches older than its newest ``keep_batches`` (adding the
        succeeded ones' rows to its totals, in the same transaction; its last committed
        batch, the catalog's record of where it resumes, always stays) and its errors made
        before ``errors_before``; how many rows of history were deleted."""
        b, e = self._b.c, self._e.c
        deleted = 0
        with self._tx() as c:
            edge = c.execute(
                sa.select(b.batch_id)
                .where(b.pipeline_id == pipeline_id)
                .group_by(b.batch_id)
                .order_by(b.batch_id.desc())
                .offset(max(keep_batches, 1) - 1)
                .limit(1)
            ).scalar()
            last = c.execute(  # where the pipeline resumes: never pruned
                sa.select(sa.func.max(b.batch_id)).where(
                    b.pipeline_id == pipeline_id,
                    b.state.in_([str(x) for x in BatchState.committed()]),
                )
            ).scalar()
            if edge is not None and last is not None:
                edge = min(edge, last)
            if edge is not None:
                old = sa.and_(b.pipeline_id == pipeline_id, b.batch_id < edge)
                n, rows, nbytes, last = c.execute(
                    sa.select(
                        sa.func.count(sa.distinct(b.batch_id)),
                        sa.func.coalesce(
                            sa.func.sum(
                                sa.case((b.state == str(BatchState.SUCCEEDED), b.rows), else_=0)
                            ),
                            0,
                        ),
                        sa.func.coalesce(
                            sa.func.sum(
                                sa.case((b.state == str(BatchState.SUCCEEDED), b.bytes), else_=0)
                            ),
                            0,
                        ),
                        sa.func.max(b.finished_at),
                    ).where(old)
                ).one()
                if n:
                    self._add_pruned(c, pipeline_id, int(n), int(rows), int(nbytes), last)
                    deleted += c.execute(self._b.delete().where(old)).rowcount or 0
            deleted += (
                c.execute(
                    self._e.delete().where(
                        e.pipeline_id == pipeline_id, e.created_at < errors_before
                    )
                ).rowcount
                or 0
            )
        return deleted

    def _add_pruned(
        self,
        c: sa.Connection,
        pipeline_id: str,
        batches: int,
        rows: int,
        nbytes: int,
        last: dt.datetime | None,
    ) -> None:
        p = self._p.c
        now = c.execute(sa.select(self._p).where(p.pipeline_id == pipeline_id)).first()
        if now is None:
            c.execute(
                self._p.insert().values(
                    pipeline_id=pipeline_id,
                    batches=batches,
                    rows=rows,
                    bytes=nbytes,
                    last_finished=last,
                )
            )
            return
        latest = max((t for t in (now.last_finished, last) if t is not None), default=None)
        c.execute(
            self._p.update()
            .where(p.pipeline_id == pipeline_id)
            .values(
                batches=now.batches + batches,
                rows=now.rows + rows,
                bytes=now.bytes + nbytes,
                last_finished=latest,
            )
        )

    def pruned(self, pipeline_id: str) -> tuple[int, int, dt.datetime | None]:
        """Batches and rows pruned from the pipeline's history, and the last one's end."""
        with self._tx() as c:
            row = c.execute(sa.select(self._p).where(self._p.c.pipeline_id == pipeline_id)).first()
        return (row.batches, row.rows, row.last_finished) if row else (0, 0, None)

    def forget(self, pipeline_id: str) -> None:
        with self._tx() as c:
            c.execute(self._p.delete().where(self._p.c.pipeline_id == pipeline_id))

    # -- table maintenance ------------------------------------------------------------
    def record(self, **values: Any) -> None:
        """One maintenance operation (columns of ``sp_maintenance``); the table's records
        beyond the newest ``MAINTENANCE_TO_KEEP`` go."""
        m = self._m.c
        with self._tx() as c:
            c.execute(self._m.insert().values(**values))
            edge = c.execute(
                sa.select(m.id)
                .where(m.table_name == values["table_name"])
                .order_by(m.id.desc())
                .offset(MAINTENANCE_TO_KEEP)
                .limit(1)
            ).scalar()
            if edge is not None:
                c.execute(
                    self._m.delete().where(m.table_name == values["table_name"], m.id <= edge)
                )

    def maintenance(
        self, table: str | None = None, *, last: int | None = None
    ) -> list[dict[str, Any]]:
        """Maintenance records, oldest first; with ``last``, the newest ``last`` of them."""
        m = self._m.c
        q = sa.select(self._m)
        if table is not None:
            q = q.where(m.table_name == table)
        q = q.order_by(m.id.desc()).limit(last) if last else q.order_by(m.id)
        with self._tx() as c:
            rows = [dict(r) for r in c.execute(q).mappings().all()]
        return list(reversed(rows)) if last else rows

    def last_done(self, table: str, operation: str) -> dt.datetime | None:
        """When ``operation`` last succeeded on ``table`` (started), or None."""
        m = self._m.c
        q = sa.select(sa.func.max(m.started_at)).where(
            m.table_name == table, m.operation == operation, m.error.is_(None)
        )
        with self._tx() as c:
            return c.execute(q).scalar()

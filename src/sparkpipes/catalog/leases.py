"""Pipeline leases: at most one engine runs a pipeline's batches at a time.

A lease is a row of ``sp_leases``: the pipeline, the engine holding it, a fencing token and
an expiry. Times are read from the catalog database's own clock, so engines on different
machines agree on when a lease has expired whatever their clocks say.

- :meth:`Leases.acquire` takes a lease that is free or expired (the token goes up by one:
  every holder has a token larger than every holder before it), or extends the caller's
  own; it returns the token, or None while another engine holds an unexpired lease.
- :meth:`Leases.renew` extends the lease only if the caller still holds it with the same
  token: an engine that was paused (SIGSTOP, a long GC) past its expiry and whose lease was
  taken learns so here, and must not commit.
- :meth:`Leases.release` frees it at once (a clean stop), so another engine need not wait
  for the expiry; the token is kept, so tokens never go back.

Each is one catalog transaction. Two engines racing for an expired lease both run a
conditional UPDATE on the same row; the database serializes them and the second finds the
lease no longer expired.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError


def leases_table(meta: sa.MetaData) -> sa.Table:
    return sa.Table(
        "sp_leases",
        meta,
        sa.Column("pipeline", sa.String(64), primary_key=True),  # the pipeline id
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("token", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("acquired_at", sa.Float, nullable=False),
    )


@dataclass(frozen=True)
class Lease:
    pipeline: str
    holder: str
    token: int
    expires_in_s: float  # by the catalog's clock; <= 0: expired or released

    @property
    def held(self) -> bool:
        return self.expires_in_s > 0


def _now_sql(dialect: str) -> sa.ColumnElement[float]:
    """The database's clock in epoch seconds, as SQL."""
    if dialect == "sqlite":
        return sa.literal_column("((julianday('now') - 2440587.5) * 86400.0)")
    if dialect == "postgresql":
        return sa.literal_column("EXTRACT(EPOCH FROM clock_timestamp())")
    if dialect in ("mysql", "mariadb"):
        return sa.literal_column("UNIX_TIMESTAMP(NOW(6))")
    return sa.literal(time.time())  # no known clock function: this process's clock


class Leases:
    """The ``sp_leases`` table of one catalog."""

    def __init__(
        self,
        table: sa.Table,
        tx: Callable[[], AbstractContextManager[sa.Connection]],
        dialect: str,
    ) -> None:
        self.t = table
        self._tx = tx
        self._dialect = dialect

    def _now(self, c: sa.Connection) -> float:
        return float(c.execute(sa.select(_now_sql(self._dialect))).scalar_one())

    def acquire(self, pipeline: str, holder: str, ttl_s: float) -> int | None:
        """The fencing token of ``holder``'s lease on ``pipeline`` (new or extended), or
        None while another holder's lease is unexpired."""
        t = self.t
        try:
            with self._tx() as c:
                now = self._now(c)
                token = sa.select(t.c.token).where(t.c.pipeline == pipeline)
                mine = c.execute(
                    t.update()
                    .where(t.c.pipeline == pipeline, t.c.holder == holder, t.c.expires_at > now)
                    .values(expires_at=now + ttl_s)
                ).rowcount
                if mine:
                    return int(c.execute(token).scalar_one())
                taken = c.execute(
                    t.update()
                    .where(t.c.pipeline == pipeline, t.c.expires_at <= now)
                    .values(
                        holder=holder, token=t.c.token + 1, expires_at=now + ttl_s, acquired_at=now
                    )
                ).rowcount
                if taken:
                    return int(c.execute(token).scalar_one())
                if c.execute(token).scalar() is not None:
                    return None
                c.execute(
                    t.insert().values(
                        pipeline=pipeline,
                        holder=holder,
                        token=1,
                        expires_at=now + ttl_s,
                        acquired_at=now,
                    )
                )
                return 1
        except IntegrityError:  # another engine created the row first
            return None

    def renew(self, pipeline: str, holder: str, token: int, ttl_s: float) -> bool:
        """Extend the lease if ``holder`` still holds it with ``token`` and it has not
        expired; False means it was lost and the holder must stop."""
        return pipeline in self.renew_many({pipeline: token}, holder, ttl_s)

    def renew_many(self, held: dict[str, int], holder: str, ttl_s: float) -> set[str]:
        """:meth:`renew` for many leases (pipeline → token) in one transaction: the
        renewal of hundreds of pipelines costs one commit. The pipelines renewed."""
        t = self.t
        kept: set[str] = set()
        if not held:
            return kept
        with self._tx() as c:
            now = self._now(c)
            for pipeline, token in held.items():
                n = c.execute(
                    t.update()
                    .where(
                        t.c.pipeline == pipeline,
                        t.c.holder == holder,
                        t.c.token == token,
                        t.c.expires_at > now,
                    )
                    .values(expires_at=now + ttl_s)
                ).rowcount
                if n == 1:
                    kept.add(pipeline)
        return kept

    def release(self, pipeline: str, holder: str, token: int) -> None:
        t = self.t
        with self._tx() as c:
            c.execute(
                t.update()
                .where(t.c.pipeline == pipeline, t.c.holder == holder, t.c.token == token)
                .values(expires_at=0.0)
            )

    def drop(self, pipeline: str) -> None:
        with self._tx() as c:
            c.execute(self.t.delete().where(self.t.c.pipeline == pipeline))

    def all(self) -> dict[str, Lease]:
        t = self.t
        with self._tx() as c:
            now = self._now(c)
            rows = c.execute(sa.select(t)).all()
        return {
            r.pipeline: Lease(r.pipeline, r.holder, int(r.token), r.expires_at - now) for r in rows
        }

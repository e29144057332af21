"""The catalog: tables, pipelines, batch history and the errors store, on SQLAlchemy.

A SQLite file in the warehouse by default; any SQLAlchemy URL (PostgreSQL for a shared
deployment). The catalog is *history and definitions*; where a pipeline resumes is decided
by the destination table's commit log, and the catalog is reconciled from it on restart.

Credentials live in their own column, encrypted (``catalog.secrets``), and are returned
only by :meth:`Catalog.credentials`; every other read gives the definition with
credentials redacted. A SQLite catalog file is created owner-only (0600).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, OperationalError

from sparkpipes.catalog.grants import Grants
from sparkpipes.catalog.history import History
from sparkpipes.catalog.leases import Leases
from sparkpipes.catalog.migrations import migrate
from sparkpipes.catalog.schema import (
    PINOT,
    SCHEMA_VERSION,
    batches_t,
    connectors_t,
    errors_t,
    grants_t,
    leases_t,
    maintenance_t,
    meta,
    meta_t,
    pipelines_t,
    procedures_t,
    pruned_t,
    schema_from_text,
    schema_to_text,
    tables_t,
    users_t,
    variables_t,
)
from sparkpipes.catalog.secrets import ENV, SecretBox, as_key, sealed
from sparkpipes.catalog.states import BatchState
from sparkpipes.catalog.users import Users
from sparkpipes.errors import AlreadyExistsError, CatalogError, NotFoundError

#: PostgreSQL ends a catalog session idle inside a transaction for this long (ms)
IDLE_TX_MS = 30_000


def _sqlite_path(url: str) -> str | None:
    u = sa.engine.make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return os.path.abspath(u.database)


def _owner_only(url: str) -> None:
    """Create a SQLite catalog file 0600 before SQLite creates it with the umask's mode."""
    path = _sqlite_path(url)
    if path is not None and not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


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


class Catalog:
    def __init__(self, url: str, secrets: SecretBox | None = None) -> None:
        """``secrets`` seals credentials; by default the key of $SPARKPIPES_SECRET_KEY or,
        for a SQLite file, the key file of the warehouse it lies in."""
        self.url = url
        self.secrets = secrets
        kwargs: dict[str, Any] = {"future": True}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        elif url.startswith("postgresql") and "options" not in sa.engine.make_url(url).query:
            # an engine paused (SIGSTOP) inside a catalog transaction must not hold its row
            # locks (a pipeline's lease, say) for ever: the server ends such a session
            kwargs["connect_args"] = {
                "options": f"-c idle_in_transaction_session_timeout={IDLE_TX_MS}"
            }
        try:
            self.engine = sa.create_engine(url, **kwargs)
            _owner_only(url)
            migrate(self.engine, meta, target=SCHEMA_VERSION, url=self.safe_url, secrets=self._box)
            self._seal_clear_credentials()
        except (OperationalError, sa.exc.ArgumentError) as e:
            raise CatalogError(f"cannot open catalog {self.safe_url}: {e.args[0]}") from None
        self._lock = threading.RLock()
        #: users of ``sparkpipes serve`` (hashed passwords; ``catalog.users``)
        self.users = Users(users_t, self._tx, grants_t)
        #: their privileges (``GRANT`` / ``REVOKE``; ``catalog.grants``)
        self.grants = Grants(grants_t, users_t, self._tx)
        #: which engine runs each pipeline (by pipeline id; ``catalog.leases``)
        self.leases = Leases(leases_t, self._tx, self.engine.dialect.name)
        #: pruning of batches and errors, the table maintenance log (``catalog.history``)
        self.history = History(batches_t, errors_t, pruned_t, maintenance_t, self._tx)

    def _box(self) -> SecretBox:
        if self.secrets is None:
            if os.environ.get(ENV):
                self.secrets = SecretBox(as_key(os.environ[ENV]))
            elif (path := _sqlite_path(self.url)) is not None:
                self.secrets = SecretBox.for_warehouse(os.path.dirname(path))
            else:
                raise CatalogError(f"credentials in catalog {self.safe_url} need a key: set {ENV}")
        return self.secrets

    def _seal(self, credentials: dict[str, str]) -> str:
        return self._box().seal(json.dumps(credentials)) if credentials else "{}"

    def _seal_clear_credentials(self) -> None:
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

    @property
    def safe_url(self) -> str:
        return sa.engine.make_url(self.url).render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sa.Connection]:
        """One transaction. A database failure (disk full, server gone, lock timeout)
        becomes a transient :class:`CatalogError` naming the catalog; a constraint
        violation stays an ``IntegrityError`` for the caller to name."""
        try:
            with self.engine.begin() as c:
                yield c
        except IntegrityError:
            raise
        except sa.exc.DBAPIError as e:
            detail = str(e.orig).strip().splitlines()[0] if e.orig is not None else type(e).__name__
            raise CatalogError(f"catalog {self.safe_url} failed: {detail}") from None

    # -- tables -----------------------------------------------------------------------
    def create_table(
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

    def table(self, name: str) -> TableRecord:
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

    def tables(self) -> list[TableRecord]:
        with self._tx() as c:
            names = [r.name for r in c.execute(sa.select(tables_t.c.name).order_by("name"))]
        return [self.table(n) for n in names]

    def update_table(self, name: str, **values: Any) -> None:
        if "schema" in values:
            values["arrow_schema"] = schema_to_text(values.pop("schema"))
        if "options" in values:
            values["options"] = json.dumps(values["options"])
        with self._tx() as c:
            c.execute(tables_t.update().where(tables_t.c.name == name).values(**values))

    def drop_table(self, name: str) -> None:
        with self._tx() as c:
            if c.execute(tables_t.delete().where(tables_t.c.name == name)).rowcount == 0:
                raise NotFoundError(f"table '{name}' does not exist")
            c.execute(maintenance_t.delete().where(maintenance_t.c.table_name == name))

    # -- procedures -------------------------------------------------------------------
    def put_procedure(self, name: str, definition: dict[str, Any], *, replace: bool) -> None:
        """Store a procedure (``ProcedureSpec.to_json``); AlreadyExistsError unless
        ``replace``."""
        self._put_definition(procedures_t, "procedure", name, definition, replace)

    def procedure(self, name: str) -> dict[str, Any]:
        return self._definition(procedures_t, "procedure", name)

    def procedures(self) -> list[str]:
        return self._names(procedures_t)

    def drop_procedure(self, name: str) -> None:
        self._drop_definition(procedures_t, "procedure", name)

    # -- sink connectors ---------------------------------------------------------------
    def put_connector(self, name: str, definition: dict[str, Any], *, replace: bool) -> None:
        """Store a sink connector (its config without secrets, and its pipelines)."""
        self._put_definition(connectors_t, "connector", name, definition, replace)

    def connector(self, name: str) -> dict[str, Any]:
        return self._definition(connectors_t, "connector", name)

    def connectors(self) -> list[str]:
        return self._names(connectors_t)

    def drop_connector(self, name: str) -> None:
        self._drop_definition(connectors_t, "connector", name)

    # -- Pinot schemas and table configs ----------------------------------------------
    def put_pinot(self, kind: str, name: str, doc: dict[str, Any], *, replace: bool) -> None:
        """Store a Pinot ``schema`` or ``table`` config (secrets already redacted)."""
        self._put_definition(PINOT[kind], f"Pinot {kind}", name, doc, replace)

    def pinot(self, kind: str, name: str) -> dict[str, Any]:
        return self._definition(PINOT[kind], f"Pinot {kind}", name)

    def pinot_names(self, kind: str) -> list[str]:
        return self._names(PINOT[kind])

    def drop_pinot(self, kind: str, name: str) -> None:
        self._drop_definition(PINOT[kind], f"Pinot {kind}", name)

    # -- named JSON definitions (procedures, connectors) ---------------------------------
    def _put_definition(
        self, table: sa.Table, what: str, name: str, definition: dict[str, Any], replace: bool
    ) -> None:
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

    def _definition(self, table: sa.Table, what: str, name: str) -> dict[str, Any]:
        with self._tx() as c:
            row = c.execute(sa.select(table.c.definition).where(table.c.name == name)).first()
        if row is None:
            raise NotFoundError(f"{what} '{name}' does not exist")
        return json.loads(row.definition)

    def _names(self, table: sa.Table) -> list[str]:
        with self._tx() as c:
            return [r.name for r in c.execute(sa.select(table.c.name).order_by("name"))]

    def _drop_definition(self, table: sa.Table, what: str, name: str) -> None:
        with self._tx() as c:
            if c.execute(table.delete().where(table.c.name == name)).rowcount == 0:
                raise NotFoundError(f"{what} '{name}' does not exist")

    # -- pipelines --------------------------------------------------------------------
    def create_pipeline(
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

    def _pipeline(self, row) -> PipelineRecord:
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

    def pipeline(self, name: str) -> PipelineRecord:
        with self._tx() as c:
            row = c.execute(sa.select(pipelines_t).where(pipelines_t.c.name == name)).first()
        if row is None:
            raise NotFoundError(f"pipeline '{name}' does not exist", pipeline=name)
        return self._pipeline(row)

    def pipelines(self) -> list[PipelineRecord]:
        with self._tx() as c:
            rows = c.execute(sa.select(pipelines_t).order_by(pipelines_t.c.name)).all()
        return [self._pipeline(r) for r in rows]

    def credentials(self, name: str) -> dict[str, str]:
        with self._tx() as c:
            row = c.execute(
                sa.select(pipelines_t.c.credentials).where(pipelines_t.c.name == name)
            ).first()
        if row is None:
            raise NotFoundError(f"pipeline '{name}' does not exist", pipeline=name)
        return json.loads(self._box().open(row.credentials)) if row.credentials else {}

    def update_pipeline(self, name: str, **values: Any) -> None:
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

    def drop_pipeline(self, name: str) -> PipelineRecord:
        rec = self.pipeline(name)
        with self._tx() as c:
            c.execute(pipelines_t.delete().where(pipelines_t.c.name == name))
            c.execute(leases_t.delete().where(leases_t.c.pipeline == rec.id))
        return rec

    # -- batches ----------------------------------------------------------------------
    def record_batch(
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

    def batches(
        self, pipeline_id: str | None = None, last: int | None = None
    ) -> list[dict[str, Any]]:
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

    # -- errors -----------------------------------------------------------------------
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
    ) -> list[dict[str, Any]]:
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

    def drop_pipeline_history(self, pipeline_id: str) -> None:
        with self._tx() as c:
            c.execute(batches_t.delete().where(batches_t.c.pipeline_id == pipeline_id))
            c.execute(errors_t.delete().where(errors_t.c.pipeline_id == pipeline_id))
            c.execute(pruned_t.delete().where(pruned_t.c.pipeline_id == pipeline_id))

    # -- variables --------------------------------------------------------------------
    def set_variable(self, name: str, value: str) -> None:
        """Engines sharing the catalog may set one variable at once: the last one wins."""
        self._put(variables_t, variables_t.c.name, name, value, what=f"variable '{name}'")

    def put_note(self, key: str, value: str) -> None:
        """A small engine note (the scheduler's state for ``status``) under ``note:key``;
        several writers at once do not fail, the last one wins."""
        self._put(meta_t, meta_t.c.key, f"note:{key}", value, what=f"note '{key}'")

    def _put(self, table: sa.Table, key: sa.Column, name: str, value: str, *, what: str) -> None:
        """Update-or-insert of one ``(key, value)`` row that does not fail when writers
        race (as delete-then-insert does on PostgreSQL): an insert that finds the row
        inserted by another writer meanwhile becomes an update."""
        for _ in range(3):
            try:
                with self._tx() as c:
                    update = table.update().where(key == name).values(value=value)
                    if c.execute(update).rowcount == 0:
                        c.execute(table.insert().values({key.name: name, "value": value}))
                return
            except IntegrityError:
                continue
        raise CatalogError(f"catalog {self.safe_url} failed: {what} kept changing")

    def note(self, key: str) -> str | None:
        with self._tx() as c:
            return c.execute(
                sa.select(meta_t.c.value).where(meta_t.c.key == f"note:{key}")
            ).scalar()

    def notes(self, prefix: str) -> dict[str, str]:
        """Every note whose key starts with ``prefix`` (one per engine, say)."""
        with self._tx() as c:
            rows = c.execute(
                sa.select(meta_t.c.key, meta_t.c.value).where(
                    meta_t.c.key.startswith(f"note:{prefix}", autoescape=True)
                )
            ).all()
        return {r.key.removeprefix("note:"): r.value for r in rows}

    def drop_note(self, key: str) -> None:
        with self._tx() as c:
            c.execute(meta_t.delete().where(meta_t.c.key == f"note:{key}"))

    def variables(self) -> dict[str, str]:
        with self._tx() as c:
            return {r.name: r.value for r in c.execute(sa.select(variables_t))}

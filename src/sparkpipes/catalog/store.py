"""The catalog: one store (SQLAlchemy) and a repository per kind of record on it.

A SQLite file in the warehouse by default; any SQLAlchemy URL (PostgreSQL for a shared
deployment). The catalog is *history and definitions*; where a pipeline resumes is decided
by the destination table's commit log, and the catalog is reconciled from it on restart.
:class:`Catalog` opens the store (migrating it to this version's schema) and holds the
repositories: ``tables``, ``pipelines``, ``batches``, ``procedures``, ``connectors``,
``pinot[kind]``, ``variables``, ``notes``, ``users``, ``grants``, ``leases``, ``history``,
each in its own module over the one transaction helper (:meth:`Catalog._tx`).

Credentials live in their own column, encrypted (``catalog.secrets``), and are returned
only by :meth:`Pipelines.credentials`; every other read gives the definition with
credentials redacted. A SQLite catalog file is created owner-only (0600).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, OperationalError

from sparkpipes.catalog.batches import Batches
from sparkpipes.catalog.definitions import Definitions
from sparkpipes.catalog.grants import Grants
from sparkpipes.catalog.history import History
from sparkpipes.catalog.leases import Leases
from sparkpipes.catalog.links import Links
from sparkpipes.catalog.migrations import migrate
from sparkpipes.catalog.pipelines import Pipelines
from sparkpipes.catalog.schema import (
    PINOT,
    SCHEMA_VERSION,
    batches_t,
    connectors_t,
    errors_t,
    grants_t,
    leases_t,
    links_t,
    maintenance_t,
    meta,
    procedures_t,
    pruned_t,
    users_t,
)
from sparkpipes.catalog.secrets import ENV, SecretBox, as_key
from sparkpipes.catalog.settings import Database, Notes, Variables
from sparkpipes.catalog.tables import Tables
from sparkpipes.catalog.users import Users
from sparkpipes.errors import CatalogError

log = logging.getLogger("sparkpipes.catalog")

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


def _write_ahead(dbapi_conn: Any, _record: Any) -> None:
    """A SQLite catalog file keeps a write-ahead log: a commit appends to it (one sync)
    instead of writing and deleting a rollback journal (several), and readers do not
    wait for a writer; hundreds of pipelines commit batches and renew leases in it. As
    durable as before (``synchronous`` stays FULL); engines sharing the file must share
    its host (as for any SQLite file), which the lease rows already assumed."""
    try:
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
    except Exception as e:  # a read-only file keeps its mode; the catalog still opens
        log.debug("catalog: journal mode unchanged: %s", e)


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
            if _sqlite_path(url) is not None:
                sa.event.listen(self.engine, "connect", _write_ahead)
            _owner_only(url)
            migrate(self.engine, meta, target=SCHEMA_VERSION, url=self.safe_url, secrets=self._box)
        except (OperationalError, sa.exc.ArgumentError) as e:
            raise CatalogError(f"cannot open catalog {self.safe_url}: {e.args[0]}") from None
        self._lock = threading.RLock()
        #: users of ``sparkpipes serve`` (hashed passwords; ``catalog.users``)
        self.users = Users(users_t, self._tx, grants_t)
        #: which engine runs each pipeline (by pipeline id; ``catalog.leases``)
        self.leases = Leases(leases_t, self._tx, self.engine.dialect.name)
        #: pruning of batches and errors, the table maintenance log (``catalog.history``)
        self.history = History(batches_t, errors_t, pruned_t, maintenance_t, self._tx)
        #: the warehouse's tables (``catalog.tables``)
        self.tables = Tables(self._tx)
        #: pipelines, their state and their sealed credentials (``catalog.pipelines``)
        self.pipelines = Pipelines(self._tx, self._box)
        #: batch attempts and skipped records (``catalog.batches``)
        self.batches = Batches(self._tx)
        #: the front ends' definitions: procedures, sink connectors, Pinot schemas and
        #: table configs (``catalog.definitions``)
        self.procedures = Definitions(procedures_t, "procedure", self._tx)
        self.connectors = Definitions(connectors_t, "connector", self._tx)
        self.pinot = {kind: Definitions(t, f"Pinot {kind}", self._tx) for kind, t in PINOT.items()}
        #: connection links (``CREATE LINK``; ``catalog.links``), credentials sealed
        self.links = Links(links_t, self._tx, self._box)
        #: engine-wide variables and engine notes (``catalog.settings``)
        self.variables = Variables(self._tx, self.safe_url)
        self.notes = Notes(self._tx, self.safe_url)
        #: the database's name (``CREATE DATABASE``; ``catalog.settings``)
        self.database = Database(self._tx, self.safe_url)
        #: the users' privileges (``GRANT`` / ``REVOKE``; ``catalog.grants``)
        self.grants = Grants(grants_t, users_t, self._tx, self.database.name)
        self.pipelines.seal_clear_credentials()

    def _box(self) -> SecretBox:
        if self.secrets is None:
            if os.environ.get(ENV):
                self.secrets = SecretBox(as_key(os.environ[ENV]))
            elif (path := _sqlite_path(self.url)) is not None:
                self.secrets = SecretBox.for_warehouse(os.path.dirname(path))
            else:
                raise CatalogError(f"credentials in catalog {self.safe_url} need a key: set {ENV}")
        return self.secrets

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

"""Engine-wide values the catalog keeps: variables (``SET GLOBAL``; engines sharing the
catalog see one value, the last write wins), small engine notes (the scheduler's state
for ``status``) and the database's name. Writers may race; none fails for it."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkpipes.catalog.schema import meta_t, variables_t
from sparkpipes.catalog.tables import Tx
from sparkpipes.errors import AlreadyExistsError, CatalogError, ConfigError, NotFoundError

#: the name the warehouse's database answers to always (before CREATE DATABASE names it)
DEFAULT_DATABASE = "sparkpipes"


class Variables:
    """``catalog.variables``: name → value."""

    def __init__(self, tx: Tx, where: str) -> None:
        self._tx = tx
        self._where = where

    def set(self, name: str, value: str) -> None:
        """Engines sharing the catalog may set one variable at once: the last one wins."""
        _put(
            self._tx,
            self._where,
            variables_t,
            variables_t.c.name,
            name,
            value,
            what=f"variable '{name}'",
        )

    def all(self) -> dict[str, str]:
        with self._tx() as c:
            return {r.name: r.value for r in c.execute(sa.select(variables_t))}


class Notes:
    """``catalog.notes``: engine notes, kept under ``note:<key>`` in the meta table."""

    def __init__(self, tx: Tx, where: str) -> None:
        self._tx = tx
        self._where = where

    def put(self, key: str, value: str) -> None:
        """A small engine note (the scheduler's state for ``status``) under ``note:key``;
        several writers at once do not fail, the last one wins."""
        _put(
            self._tx, self._where, meta_t, meta_t.c.key, f"note:{key}", value, what=f"note '{key}'"
        )

    def get(self, key: str) -> str | None:
        with self._tx() as c:
            return c.execute(
                sa.select(meta_t.c.value).where(meta_t.c.key == f"note:{key}")
            ).scalar()

    def starting(self, prefix: str) -> dict[str, str]:
        """Every note whose key starts with ``prefix`` (one per engine, say)."""
        with self._tx() as c:
            rows = c.execute(
                sa.select(meta_t.c.key, meta_t.c.value).where(
                    meta_t.c.key.startswith(f"note:{prefix}", autoescape=True)
                )
            ).all()
        return {r.key.removeprefix("note:"): r.value for r in rows}

    def drop(self, key: str) -> None:
        with self._tx() as c:
            c.execute(meta_t.delete().where(meta_t.c.key == f"note:{key}"))


class Database:
    """The name of the warehouse's one database.

    A warehouse holds one database. It answers to ``sparkpipes`` and, once ``CREATE
    DATABASE`` has named it (as SingleStore scripts begin: ``CREATE DATABASE demo; USE
    demo``), to that name too, which the views' ``DATABASE_NAME`` then show. A second,
    different name is refused rather than made an alias: two databases of SingleStore
    keep their tables apart, one namespace here would not.
    """

    _KEY = "database:name"

    def __init__(self, tx: Tx, where: str) -> None:
        self._tx = tx
        self._where = where

    def name(self) -> str:
        with self._tx() as c:
            value = c.execute(sa.select(meta_t.c.value).where(meta_t.c.key == self._KEY)).scalar()
        return value or DEFAULT_DATABASE

    def knows(self, name: str) -> bool:
        """Whether ``name`` names the database (case-insensitive, as SingleStore's names)."""
        return name.lower() in (DEFAULT_DATABASE, self.name().lower())

    def check(self, name: str) -> None:
        """Raise NotFoundError (MySQL's 1049) unless ``name`` names the database."""
        if not self.knows(name):
            raise NotFoundError(f"Unknown database '{name}'")

    def create(self, name: str, *, if_not_exists: bool = False) -> bool:
        """``CREATE DATABASE name``: names the database; False when it already had that name
        and ``if_not_exists``. AlreadyExistsError for a name it has; ConfigError for a second
        name."""
        current = self.name()
        if self.knows(name):
            if if_not_exists:
                return False
            raise AlreadyExistsError(f"Can't create database '{name}'; database exists")
        if current != DEFAULT_DATABASE:
            raise ConfigError(
                f"Can't create database '{name}': this warehouse holds one database, named "
                f"'{current}' (and '{DEFAULT_DATABASE}'); serve another warehouse for another "
                "database"
            )
        if not name or len(name) > 64:
            raise ConfigError(f"'{name}' is not a database name (1 to 64 characters)")
        _put(self._tx, self._where, meta_t, meta_t.c.key, self._KEY, name, what="database name")
        return True


def _put(
    tx: Tx, where: str, table: sa.Table, key: sa.Column, name: str, value: str, *, what: str
) -> None:
    """Update-or-insert of one ``(key, value)`` row that does not fail when writers
    race (as delete-then-insert does on PostgreSQL): an insert that finds the row
    inserted by another writer meanwhile becomes an update."""
    for _ in range(3):
        try:
            with tx() as c:
                update = table.update().where(key == name).values(value=value)
                if c.execute(update).rowcount == 0:
                    c.execute(table.insert().values({key.name: name, "value": value}))
            return
        except IntegrityError:
            continue
    raise CatalogError(f"catalog {where} failed: {what} kept changing")

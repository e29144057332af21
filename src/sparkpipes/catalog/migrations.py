"""Catalog schema migrations: a warehouse made by an older sparkpipes opens with this one.

The catalog's schema version is the row ``schema`` of ``sp_meta``. :func:`migrate` runs
when a :class:`~sparkpipes.catalog.Catalog` is opened: a new catalog is created at the
current version; an older one is brought forward one version at a time, each step in
its own transaction that also advances the recorded version, so a failed step leaves the
catalog at the version before it, as it was, and opening again retries it. A step first
claims its version (``UPDATE … WHERE value = old``), so two processes opening the same
catalog at once run it once. A catalog of a newer version than this code knows is
refused, never half-used.

Steps describe the tables as they were at their version (``sa.table``), not the current
metadata, so a later change to the tables cannot change what an old step does.

- **1 → 2**: pipeline definitions, stored as the flat options of ``PipelineSpec``
  version 1, are rewritten as the nested version-2 JSON (``PipelineSpec.to_json``).
  Credentials stay where they were, in their own column, unchanged.
- **2 → 3**: privileges (``sp_grants``): every existing user gets ``ALL PRIVILEGES ON *.*
  WITH GRANT OPTION``, what they could do before.
- **3 → 4**: a password inside a URL of a pipeline's definition (a Kafka location
  ``user:pass@host``, a registry or endpoint URL), which older versions stored in clear, is
  sealed with the pipeline's credentials (``url:<option>``, as ``PipelineSpec`` keeps it now)
  and the definition keeps the URL with ``<redacted>``; connectors' and Pinot tables'
  stored configs are redacted the same way. It needs the catalog's key (``secrets``).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkpipes.catalog.grants import grants_table, make_admin
from sparkpipes.catalog.secrets import SecretBox
from sparkpipes.config import urls
from sparkpipes.config.spec import PipelineSpec, lift_stored_urls
from sparkpipes.errors import CatalogError, SparkpipesError

log = logging.getLogger("sparkpipes.catalog")

_meta = sa.table("sp_meta", sa.column("key"), sa.column("value"))
_users = sa.table("sp_users", sa.column("name"))
_pipelines = sa.table(
    "sp_pipelines", sa.column("name"), sa.column("definition"), sa.column("credentials")
)
_stored_configs = [
    sa.table(name, sa.column("name"), sa.column("definition"))
    for name in ("sp_connectors", "sp_pinot_tables")
]


class _StepFailed(Exception):
    """A step met data it cannot migrate; the message names it."""


def _nest_definitions(c: sa.Connection) -> None:
    rows = c.execute(
        sa.select(_pipelines.c.name, _pipelines.c.definition, _pipelines.c.credentials)
    ).all()
    for row in rows:
        try:
            old = json.loads(row.definition)
            spec = PipelineSpec.from_json(old, json.loads(row.credentials or "{}"))
        except (SparkpipesError, ValueError, KeyError, TypeError) as e:
            reason = e.message if isinstance(e, SparkpipesError) else f"{type(e).__name__}: {e}"
            raise _StepFailed(f"the definition of pipeline '{row.name}': {reason}") from None
        c.execute(
            _pipelines.update()
            .where(_pipelines.c.name == row.name)
            .values(definition=json.dumps(spec.to_json()))
        )


def _admins_for_existing_users(c: sa.Connection) -> None:
    """Privileges arrive: every user of an older catalog could do everything, and keeps
    that (``ALL PRIVILEGES ON *.* WITH GRANT OPTION``) until an admin revokes it."""
    grants = grants_table(sa.MetaData())
    grants.create(c, checkfirst=True)
    if not sa.inspect(c).has_table("sp_users"):  # users came with version 2's tables
        return
    for (name,) in c.execute(sa.select(_users.c.name)).all():
        make_admin(c, grants, name)


#: version → the step that brings a catalog of that version to the next
STEPS: dict[int, Callable[[sa.Connection], None]] = {
    1: _nest_definitions,
    2: _admins_for_existing_users,
}


def _seal_url_passwords(c: sa.Connection, secrets: Callable[[], SecretBox] | None) -> None:
    """Passwords inside the URLs of stored definitions are sealed (see the module's
    docstring, 3 → 4)."""
    rows = c.execute(
        sa.select(_pipelines.c.name, _pipelines.c.definition, _pipelines.c.credentials)
    ).all()
    for row in rows:
        try:
            definition, passwords = lift_stored_urls(json.loads(row.definition))
        except (SparkpipesError, ValueError) as e:
            reason = e.message if isinstance(e, SparkpipesError) else f"{type(e).__name__}: {e}"
            raise _StepFailed(f"the definition of pipeline '{row.name}': {reason}") from None
        if not passwords:
            continue
        if secrets is None:
            raise _StepFailed(
                f"pipeline '{row.name}' has a password in a URL to seal, which needs the "
                "catalog's key"
            )
        box = secrets()
        held = json.loads(box.open(row.credentials)) if row.credentials else {}
        c.execute(
            _pipelines.update()
            .where(_pipelines.c.name == row.name)
            .values(
                definition=json.dumps(definition),
                credentials=box.seal(json.dumps({**held, **passwords})),
            )
        )
    for table in _stored_configs:
        if not sa.inspect(c).has_table(table.name):
            continue
        for row in c.execute(sa.select(table.c.name, table.c.definition)).all():
            doc = json.loads(row.definition)
            shown = urls.redact_all(doc)
            if shown != doc:
                c.execute(
                    table.update()
                    .where(table.c.name == row.name)
                    .values(definition=json.dumps(shown))
                )


#: version → a step that seals secrets, and so is given the catalog's key
SEALING_STEPS: dict[int, Callable[[sa.Connection, Callable[[], SecretBox] | None], None]] = {
    3: _seal_url_passwords,
}


def migrate(
    engine: sa.Engine,
    metadata: sa.MetaData,
    *,
    target: int,
    url: str,
    secrets: Callable[[], SecretBox] | None = None,
) -> None:
    """Bring the catalog behind ``engine`` to schema version ``target``: create it if new,
    run the steps from its version otherwise, then create tables it lacks. Raises
    CatalogError naming both versions for a catalog newer than ``target`` or one no step
    starts from, and naming the step and pipeline when a step fails (nothing of that step
    is kept). ``secrets`` gives the catalog's key to steps that seal secrets."""
    found = version = _version(engine, url)
    while version is not None and version != target:
        if version > target:
            raise CatalogError(
                f"catalog {url} has schema version {version}; this sparkpipes needs {target} "
                "and cannot open a catalog written by a newer sparkpipes (upgrade sparkpipes, "
                "or use a new warehouse or catalog database)"
            )
        step = STEPS.get(version)
        if step is None and version in SEALING_STEPS:
            step = functools.partial(SEALING_STEPS[version], secrets=secrets)
        if step is None:
            raise CatalogError(
                f"catalog {url} has schema version {version}; this sparkpipes needs {target} "
                f"and has no migration from version {version} (use a new warehouse or "
                "catalog database)"
            )
        try:
            with engine.begin() as c:
                claimed = c.execute(
                    _meta.update()
                    .where(_meta.c.key == "schema", _meta.c.value == str(version))
                    .values(value=str(version + 1))
                ).rowcount
                if claimed:
                    step(c)
        except _StepFailed as e:
            raise CatalogError(
                f"cannot migrate catalog {url} from schema version {version} to "
                f"{version + 1}: {e} (the catalog is left at version {version})"
            ) from None
        now = _version(engine, url)
        if claimed:
            log.info("catalog %s migrated from schema version %d to %d", url, version, version + 1)
        elif now == version:
            raise CatalogError(
                f"catalog {url}: cannot record schema version {version + 1} over {version}"
            )
        version = now
    metadata.create_all(engine)
    if found is None:
        try:
            with engine.begin() as c:
                c.execute(_meta.insert().values(key="schema", value=str(target)))
        except IntegrityError:
            if _version(engine, url) != target:  # another process created it, differently
                raise CatalogError(
                    f"catalog {url} was created concurrently with schema version "
                    f"{_version(engine, url)}; this sparkpipes needs {target}"
                ) from None


def _version(engine: sa.Engine, url: str) -> int | None:
    """The recorded schema version; None for a catalog not created yet."""
    if not sa.inspect(engine).has_table("sp_meta"):
        return None
    with engine.connect() as c:
        value = c.execute(sa.select(_meta.c.value).where(_meta.c.key == "schema")).scalar()
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise CatalogError(
            f"catalog {url} has schema version {value!r}, which is not a version number"
        ) from None

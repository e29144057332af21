"""Connection links as ``SqlSession`` runs them: ``CREATE LINK``, ``DROP LINK``, ``SHOW
LINKS``, ``SHOW CREATE LINK``, and ``CREATE PIPELINE … AS LOAD DATA LINK name 'path'``.

SingleStore's rules: ``CREATE LINK`` / ``DROP LINK`` / ``SHOW LINK`` are held on the
database (or the server); ``SHOW LINK`` lets a user see the links and load from them
without knowing their credentials, which are sealed in the catalog and never shown. A
pipeline is made from a link once, as it is created: :meth:`LinkStatements.resolve` puts
the link's kind, CONFIG and CREDENTIALS in the statement before any privilege check
reads it, so every check (a server file named in CONFIG, the server's own cloud login)
judges what the pipeline will run with."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from sparkpipes.catalog.grants import Access
from sparkpipes.catalog.links import LinkRecord
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.lowering import LINK_HINT
from sparkpipes.frontends.singlestore.results import Result, ok

#: what a link may connect to: SingleStore's kinds that sparkpipes loads from
KINDS = ("S3", "KAFKA", "AZURE", "HDFS")


class LinkStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine`` and ``access``)."""

    engine: Any
    access: Access

    def _CreateLink(self, s: A.CreateLink) -> Result:
        if s.kind not in KINDS:
            raise ConfigError(
                f"a link AS {s.kind} is not supported: links connect to {', '.join(KINDS)}"
            )
        record = LinkRecord(
            s.name,
            s.kind.lower(),
            json.loads(s.config or "{}"),
            json.loads(s.credentials or "{}"),
            s.description,
        )
        try:
            self.engine.catalog.links.put(record)
        except AlreadyExistsError:
            if s.if_not_exists:
                return ok(0)
            raise
        return ok(0)

    def _DropLink(self, s: A.DropLink) -> Result:
        try:
            self.engine.catalog.links.drop(s.name)
        except NotFoundError:
            if not s.if_exists:
                raise
        return ok(0)

    def _ShowLinks(self, s: A.ShowLinks) -> Result:
        if s.database is not None:
            self.engine.catalog.database.check(s.database)
        links = [self.engine.catalog.links.get(n) for n in self.engine.catalog.links.names()]
        rows = [(k.name, k.kind.upper(), k.description) for k in links]
        return Result(["Link", "Type", "Description"], rows)

    def _ShowCreateLink(self, s: A.ShowCreateLink) -> Result:
        link = self.engine.catalog.links.get(s.name)
        text = A.CreateLink(
            link.name,
            link.kind.upper(),
            config=json.dumps(link.config, sort_keys=True),
            description=link.description,
        ).to_sql()
        return Result(
            ["Link Name", "Create Link"],
            [(link.name, text + " CREDENTIALS <CREDENTIALS REDACTED>")],
        )

    def resolve(self, s: A.CreatePipeline) -> A.CreatePipeline:
        """``LOAD DATA LINK name 'path'`` as the pipeline it makes: the link's kind, CONFIG
        and CREDENTIALS, and a hint naming the link (SHOW CREATE PIPELINE shows it so).
        Needs ``SHOW LINK``, checked before the link is looked up."""
        assert s.link is not None
        self.access.require("SHOW LINK")
        if s.config is not None or s.credentials is not None:
            raise ConfigError(
                f"pipeline '{s.name}' loads from link '{s.link}': its CONFIG and CREDENTIALS "
                "are the link's (give them in CREATE LINK)"
            )
        link = self.engine.catalog.links.get(s.link)
        return dataclasses.replace(
            s,
            source=link.kind.upper(),
            config=json.dumps(link.config) if link.config else None,
            credentials=json.dumps(link.credentials) if link.credentials else None,
            hints=(*s.hints, LINK_HINT + s.link),
            link=None,
        )

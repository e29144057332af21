"""Connection links as ``SqlSession`` runs them: ``CREATE LINK``, ``DROP LINK``, ``SHOW
LINKS``, ``SHOW CREATE LINK``, and ``CREATE PIPELINE … AS LOAD DATA LINK name 'path'``.

SingleStore's rules: ``CREATE LINK`` / ``DROP LINK`` / ``SHOW LINK`` are held on the
database (or the server); ``SHOW LINK`` lets a user see the links and load from them
without knowing their credentials, which are sealed in the catalog and never shown. A
pipeline is made from a link once, as it is created: :meth:`LinkStatements.resolve` puts
the link's kind, CONFIG and CREDENTIALS in the statement before any privilege check
reads it, so every check (a server file named in CONFIG, the server's own cloud login)
judges what the pipeline will run with.

A link decides where its credentials go, not the pipelines that use it: a pipeline's path
names what to read there (a topic; a bucket or container and prefix, whose endpoint or
account is the link's), never another host. So a KAFKA link with CREDENTIALS names its
brokers in CONFIG (``bootstrap.servers``), and a pipeline's path gives the topic, with at
most those brokers before it; else anyone allowed to use the link could have its password
sent to a listener of their own."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from sparkpipes.catalog.grants import Access
from sparkpipes.catalog.links import LinkRecord
from sparkpipes.engine import Engine
from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.lowering import LINK_HINT, to_spec
from sparkpipes.frontends.singlestore.results import Result, ok

#: what a link may connect to: SingleStore's kinds that sparkpipes loads from, each with
#: a path its options are checked with (as a pipeline of it would be)
KINDS = {"S3": "bucket/prefix", "KAFKA": "topic", "AZURE": "container/prefix", "HDFS": "/path"}


class LinkStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine`` and ``access``)."""

    engine: Engine
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
        self._check_link(record)
        try:
            self.engine.catalog.links.put(record)
        except AlreadyExistsError:
            if s.if_not_exists:
                return ok(0)
            raise
        return ok(0)

    def _check_link(self, link: LinkRecord) -> None:
        """A link's options are checked as a pipeline of it checks them (a secret in CONFIG,
        an unknown option); a password inside a CONFIG URL is refused (CREDENTIALS are the
        only place a link keeps secrets); a KAFKA link with CREDENTIALS names its brokers."""
        if link.kind == "kafka" and link.credentials and "bootstrap.servers" not in link.config:
            raise ConfigError(
                f"link '{link.name}' has CREDENTIALS: give its brokers in CONFIG "
                '("bootstrap.servers"), so that they go only there (a pipeline\'s path then '
                "names the topic)"
            )
        probe_path = KINDS[link.kind.upper()]
        if link.kind == "kafka":  # a path of the brokers it names, or of any
            probe_path = f"{link.config.get('bootstrap.servers', '127.0.0.1:9092')}/{probe_path}"
        probe = self._as_pipeline(link, probe_path)
        spec = self.engine.prepare_pipeline(to_spec(probe, {}))
        lifted = [k for k in spec.source.credentials if k not in link.credentials]
        if lifted:
            raise ConfigError(
                f"link '{link.name}': a password inside a CONFIG URL is not kept by a link; "
                "give the URL without it, and the login in CREDENTIALS"
            )

    @staticmethod
    def _as_pipeline(link: LinkRecord, location: str, **fields: Any) -> A.CreatePipeline:
        return A.CreatePipeline(
            name=fields.pop("name", "link"),
            source=link.kind.upper(),
            location=location,
            target=fields.pop("target", A.Target("TABLE", "link")),
            config=json.dumps(link.config) if link.config else None,
            credentials=json.dumps(link.credentials) if link.credentials else None,
            **fields,
        )

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
        location = s.location
        if link.kind == "kafka" and link.credentials:
            pinned = _servers(str(link.config["bootstrap.servers"]))
            servers, _, topic = location.rpartition("/")
            if servers and not _servers(servers) <= pinned:
                raise ConfigError(
                    f"link '{s.link}' connects to {link.config['bootstrap.servers']}: a "
                    f"pipeline's path names the topic there, not other brokers ('{servers}')",
                    pipeline=s.name,
                )
            location = f"{link.config['bootstrap.servers']}/{topic}"
        made = self._as_pipeline(link, location, name=s.name, target=s.target)
        return dataclasses.replace(
            s,
            source=made.source,
            location=made.location,
            config=made.config,
            credentials=made.credentials,
            hints=(*s.hints, LINK_HINT + s.link),
            link=None,
        )


def _servers(text: str) -> set[str]:
    return {s.strip().lower() for s in text.split(",") if s.strip()}

"""``catalog.links``: SingleStore's connection links (``CREATE LINK name AS S3 CONFIG …
CREDENTIALS …``), a source's kind, config and credentials kept under a name that
pipelines load from (``LOAD DATA LINK name 'path'``). The credentials are sealed with the
catalog's key, as pipelines' are, and are never shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from sparkpipes.catalog.definitions import Definitions
from sparkpipes.catalog.secrets import SecretBox
from sparkpipes.catalog.tables import Tx


@dataclass(frozen=True)
class LinkRecord:
    name: str
    kind: str  # a source plugin's name: s3, kafka …
    config: dict[str, Any]
    credentials: dict[str, Any] = field(repr=False)
    description: str | None = None


class Links:
    def __init__(self, table: sa.Table, tx: Tx, box: Callable[[], SecretBox]) -> None:
        self._defs = Definitions(table, "link", tx)
        self._box = box

    def put(self, link: LinkRecord, *, replace: bool = False) -> None:
        """AlreadyExistsError for a name taken, unless ``replace``."""
        sealed = self._box().seal(json.dumps(link.credentials)) if link.credentials else ""
        definition = {
            "kind": link.kind,
            "config": link.config,
            "credentials": sealed,
            "description": link.description,
        }
        self._defs.put(link.name, definition, replace=replace)

    def get(self, name: str) -> LinkRecord:
        """NotFoundError ("link 'x' does not exist") for a name not taken."""
        d = self._defs.get(name)
        creds = json.loads(self._box().open(d["credentials"])) if d["credentials"] else {}
        return LinkRecord(name, d["kind"], d["config"], creds, d.get("description"))

    def names(self) -> list[str]:
        return self._defs.names()

    def drop(self, name: str) -> None:
        self._defs.drop(name)

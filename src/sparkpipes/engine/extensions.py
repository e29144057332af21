"""Front ends' services that live as long as an engine, found through a registry.

A front end may keep state and work of its own beside the engine's pipelines: Kafka
Connect's ``topics.regex`` connectors gain pipelines as topics appear, Pinot's realtime
tables keep their own retention and flush thresholds. The engine does not import front
ends (they sit above it); it creates each registered :class:`Extension` with itself and
calls its hooks: :meth:`Extension.refresh` every few seconds while it runs pipelines, and
:meth:`Extension.maintain` for the tables :meth:`Extension.maintained` names, in place of
the housekeeper's own compaction. Third parties register under the ``sparkpipes.extensions``
entry-point group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.util.registry import Registry

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

EXTENSIONS = Registry("engine extension", entry_point_group="sparkpipes.extensions")
EXTENSIONS.register("connectors", "sparkpipes.frontends.connect.service:Connectors")
EXTENSIONS.register("pinot", "sparkpipes.frontends.pinot.service:PinotTables")


class Extension:
    """What an engine asks of a front end's service; every hook does nothing by default."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def refresh(self) -> object:
        """Periodic work while the engine runs pipelines (errors are logged, retried)."""
        return None

    def maintained(self) -> list[str]:
        """The tables this front end maintains itself."""
        return []

    def maintain(self, name: str | None = None) -> Mapping[str, Mapping[str, Any]]:
        """Maintain one of :meth:`maintained` (or all); per table, what was done."""
        return {}


def load(engine: Engine) -> dict[str, Extension]:
    """Every registered extension, created for ``engine``, by registered name."""
    return {name: EXTENSIONS.get(name)(engine) for name in EXTENSIONS.names()}

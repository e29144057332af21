"""``information_schema`` views over the catalog and live source offsets, as Arrow tables.

The view definitions (schemas, rows) live in ``sparkpipes.catalog.views``; this module
supplies what only the engine knows: each pipeline's source offsets (through
``engine.offsets``) and whether its source's partitions are files. It takes no pipeline
lock, so a view never waits for a running batch.
"""

from __future__ import annotations

import pyarrow as pa

from sparkpipes.catalog import PipelineRecord, views
from sparkpipes.catalog.views import PartitionOffsets
from sparkpipes.engine.offsets import Offsets
from sparkpipes.engine.runtime import Runtime
from sparkpipes.errors import NotFoundError


class InformationSchema:
    def __init__(self, rt: Runtime, offsets: Offsets) -> None:
        self.rt = rt
        self.offsets = offsets

    def view(self, view: str, cache: dict | None = None) -> pa.Table:
        """One view by name (PIPELINES, PIPELINES_BATCHES, …). ``cache`` shares source
        snapshots between the views of one query."""
        if view.upper() not in views.VIEWS:
            raise NotFoundError(
                f"information_schema.{view} does not exist (views: {', '.join(views.VIEWS)})"
            )
        cache = {} if cache is None else cache

        def snapshot(rec: PipelineRecord) -> list[PartitionOffsets]:
            if rec.name not in cache:
                cache[rec.name] = self.offsets.snapshot(rec)
            return cache[rec.name]

        def lists_files(rec: PipelineRecord) -> bool:
            return self.rt.runner(rec.name).source.lists_files

        return views.build(self.rt.catalog, view, snapshot, lists_files)

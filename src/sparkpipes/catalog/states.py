"""States of pipelines and batches: the only spellings the engine, catalog and views use."""

from __future__ import annotations

import enum


class PipelineState(enum.StrEnum):
    """A pipeline's state, as SHOW PIPELINES and information_schema show it."""

    RUNNING = "Running"
    STOPPED = "Stopped"
    ERROR = "Error"


class BatchState(enum.StrEnum):
    """A batch's outcome, as PIPELINES_BATCHES shows it."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    NO_DATA = "NoData"
    REPLAYED = "Replayed"  # another writer committed this batch first
    OFFSETS_SET = "OffsetsSet"  # ALTER PIPELINE … SET OFFSETS, an empty committed batch

    @classmethod
    def committed(cls) -> tuple[BatchState, ...]:
        """States of batches that committed offsets to the destination."""
        return (cls.SUCCEEDED, cls.OFFSETS_SET)

"""Catalog: definitions, state and history (SQLAlchemy; SQLite or PostgreSQL)."""

from sparkpipes.catalog.pipelines import PipelineRecord
from sparkpipes.catalog.states import BatchState, PipelineState
from sparkpipes.catalog.store import Catalog
from sparkpipes.catalog.tables import TableRecord

__all__ = ["BatchState", "Catalog", "PipelineRecord", "PipelineState", "TableRecord"]

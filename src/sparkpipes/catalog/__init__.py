"""Catalog: definitions, state and history (SQLAlchemy; SQLite or PostgreSQL)."""

from sparkpipes.catalog.states import BatchState, PipelineState
from sparkpipes.catalog.store import Catalog, PipelineRecord, TableRecord

__all__ = ["BatchState", "Catalog", "PipelineRecord", "PipelineState", "TableRecord"]

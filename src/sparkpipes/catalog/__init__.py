"""Catalog: definitions, state and history (SQLAlchemy; SQLite or PostgreSQL)."""

from sparkpipes.catalog.store import Catalog, PipelineRecord, TableRecord

__all__ = ["Catalog", "PipelineRecord", "TableRecord"]

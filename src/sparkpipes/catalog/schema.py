"""The catalog's tables (SQLAlchemy metadata) and its schema version. What each table
holds is said where :class:`~sparkpipes.catalog.store.Catalog` reads and writes it; a
change here that is not a new table needs a migration step (``catalog.migrations``) and a
new ``SCHEMA_VERSION``. New tables are created when a catalog is opened.
"""

from __future__ import annotations

import base64

import pyarrow as pa
import sqlalchemy as sa

from sparkpipes.catalog.grants import grants_table
from sparkpipes.catalog.history import maintenance_table, pruned_table
from sparkpipes.catalog.leases import leases_table
from sparkpipes.catalog.users import users_table

meta = sa.MetaData()

tables_t = sa.Table(
    "sp_tables",
    meta,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("location", sa.Text, nullable=False),
    sa.Column("ddl", sa.Text, nullable=False),
    sa.Column("arrow_schema", sa.Text, nullable=False),
    sa.Column("options", sa.Text, nullable=False, default="{}"),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

pipelines_t = sa.Table(
    "sp_pipelines",
    meta,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("id", sa.String(64), nullable=False, unique=True),
    sa.Column("source", sa.String(64), nullable=False),
    sa.Column("table_name", sa.String(255), nullable=False),
    sa.Column("definition", sa.Text, nullable=False),
    sa.Column("credentials", sa.Text, nullable=False, default="{}"),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("last_error", sa.Text),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)

batches_t = sa.Table(
    "sp_batches",
    meta,
    sa.Column("pipeline_id", sa.String(64), primary_key=True),
    sa.Column("batch_id", sa.BigInteger, primary_key=True),
    sa.Column("attempt", sa.Integer, primary_key=True),
    sa.Column("pipeline_name", sa.String(255), nullable=False),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("rows", sa.BigInteger, nullable=False, default=0),
    sa.Column("bytes", sa.BigInteger, nullable=False, default=0),
    sa.Column("errors", sa.BigInteger, nullable=False, default=0),
    sa.Column("started_at", sa.DateTime, nullable=False),
    sa.Column("finished_at", sa.DateTime),
    sa.Column("duration_ms", sa.BigInteger),
    sa.Column("partitions", sa.Text, nullable=False, default="[]"),
    sa.Column("offsets", sa.Text),
    sa.Column("error", sa.Text),
)

errors_t = sa.Table(
    "sp_errors",
    meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("pipeline_id", sa.String(64), nullable=False, index=True),
    sa.Column("pipeline_name", sa.String(255), nullable=False),
    sa.Column("batch_id", sa.BigInteger, nullable=False),
    sa.Column("partition", sa.Text, nullable=False),
    sa.Column("offset", sa.Text),
    sa.Column("code", sa.String(16), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("excerpt", sa.Text),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

SCHEMA_VERSION = 4

meta_t = sa.Table(
    "sp_meta",
    meta,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)


def _definitions(name: str) -> sa.Table:
    """A table of named JSON definitions (procedures, connectors, Pinot documents)."""
    return sa.Table(
        name,
        meta,
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("definition", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )


procedures_t = _definitions("sp_procedures")
connectors_t = _definitions("sp_connectors")
pinot_schemas_t = _definitions("sp_pinot_schemas")
pinot_tables_t = _definitions("sp_pinot_tables")
links_t = _definitions("sp_links")
PINOT = {"schema": pinot_schemas_t, "table": pinot_tables_t}

users_t = users_table(meta)
grants_t = grants_table(meta)
leases_t = leases_table(meta)
pruned_t = pruned_table(meta)
maintenance_t = maintenance_table(meta)

#: the next AUTO_INCREMENT value of each table that has such a column
sequences_t = sa.Table(
    "sp_sequences",
    meta,
    sa.Column("table_name", sa.String(255), primary_key=True),
    sa.Column("next_value", sa.BigInteger, nullable=False),
)

variables_t = sa.Table(
    "sp_variables",
    meta,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)


def schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))

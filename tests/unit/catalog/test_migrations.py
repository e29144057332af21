"""A catalog written by an older sparkpipes opens with this one, migrated; a newer one is
refused. The version-1 catalog is built by hand, table by table, as the version-1 code
wrote it, so the test does not depend on today's table definitions."""

import json
import sqlite3

import pytest
import sqlalchemy as sa

from sparkpipes.catalog import Catalog
from sparkpipes.catalog.store import SCHEMA_VERSION
from sparkpipes.config import PipelineSpec
from sparkpipes.errors import CatalogError
from tests.unit.config.v1 import V1_KAFKA

V1_TABLES = """
CREATE TABLE sp_tables (
    name VARCHAR(255) NOT NULL, location TEXT NOT NULL, ddl TEXT NOT NULL,
    arrow_schema TEXT NOT NULL, options TEXT NOT NULL, created_at DATETIME NOT NULL,
    PRIMARY KEY (name)
);
CREATE TABLE sp_pipelines (
    name VARCHAR(255) NOT NULL, id VARCHAR(64) NOT NULL, source VARCHAR(64) NOT NULL,
    table_name VARCHAR(255) NOT NULL, definition TEXT NOT NULL, credentials TEXT NOT NULL,
    state VARCHAR(32) NOT NULL, last_error TEXT, created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL, PRIMARY KEY (name), UNIQUE (id)
);
CREATE TABLE sp_batches (
    pipeline_id VARCHAR(64) NOT NULL, batch_id BIGINT NOT NULL, attempt INTEGER NOT NULL,
    pipeline_name VARCHAR(255) NOT NULL, state VARCHAR(32) NOT NULL, rows BIGINT NOT NULL,
    bytes BIGINT NOT NULL, errors BIGINT NOT NULL, started_at DATETIME NOT NULL,
    finished_at DATETIME, duration_ms BIGINT, partitions TEXT NOT NULL, offsets TEXT,
    error TEXT, PRIMARY KEY (pipeline_id, batch_id, attempt)
);
CREATE TABLE sp_errors (
    id INTEGER NOT NULL, pipeline_id VARCHAR(64) NOT NULL, pipeline_name VARCHAR(255) NOT NULL,
    batch_id BIGINT NOT NULL, partition TEXT NOT NULL, "offset" TEXT,
    code VARCHAR(16) NOT NULL, kind VARCHAR(32) NOT NULL, reason TEXT NOT NULL, excerpt TEXT,
    created_at DATETIME NOT NULL, PRIMARY KEY (id)
);
CREATE INDEX ix_sp_errors_pipeline_id ON sp_errors (pipeline_id);
CREATE TABLE sp_meta ("key" VARCHAR(64) NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
CREATE TABLE sp_variables (name VARCHAR(255) NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name));
"""


NOW = "2025-01-02 03:04:05.000006"

V1_CSV = {
    **V1_KAFKA,
    "name": "fp",
    "source": "fs",
    "location": "/data/*.csv",
    "table": "f",
    "format": "csv",
    "credentials": {},
    "mapping": [{"column": "id", "path": ["id"]}, {"column": "@skip", "path": ["skip"]}],
    "csv": {"delimiter": "|", "quote": "'", "escape": "\\", "header": False},
    "max_partitions_per_batch": 2,
    "skip_parser_errors": True,
    "offsets": "latest",
    "on_duplicate_key": "replace",
    "assignments": [["label", "upper(@skip)"]],
    "where": "id > 0",
    "skip_lines": 1,
}

CREDENTIALS = '{"sasl.password": "pw-6a1f0c93-canary"}'


def v1_catalog(path, definitions, schema="1"):
    """A SQLite catalog as version 1 left it: tables, schema row, pipelines, history."""
    db = sqlite3.connect(path)
    with db:
        db.executescript(V1_TABLES)
        db.execute("INSERT INTO sp_meta VALUES ('schema', ?)", (schema,))
        db.execute("INSERT INTO sp_variables VALUES ('pipelines_batch_interval', '75')")
        for i, d in enumerate(definitions):
            db.execute(
                "INSERT INTO sp_pipelines VALUES (?, ?, ?, ?, ?, ?, 'Stopped', NULL, ?, ?)",
                (
                    d["name"],
                    f"id{i}",
                    d["source"],
                    d["table"],
                    json.dumps(d),
                    CREDENTIALS if d["credentials"] else "{}",
                    NOW,
                    NOW,
                ),
            )
        db.execute(
            "INSERT INTO sp_batches VALUES "
            "('id0', 1, 1, 'p', 'Succeeded', 3, 10, 0, ?, ?, 5, '[]', '{\"0\": 3}', NULL)",
            (NOW, NOW),
        )
    db.close()
    return f"sqlite:///{path}"


def raw(url, query):
    db = sa.create_engine(url)
    with db.connect() as c:
        rows = c.execute(sa.text(query)).all()
    db.dispose()
    return rows


def schema_version(url):
    return raw(url, "SELECT value FROM sp_meta WHERE key = 'schema'")[0][0]


def test_a_version_1_catalog_is_migrated_at_open(tmp_path):
    url = v1_catalog(tmp_path / "c.db", [V1_KAFKA, V1_CSV])
    cat = Catalog(url)
    try:
        assert schema_version(url) == str(SCHEMA_VERSION)
        rec = cat.pipelines.get("p")
        assert rec.definition["version"] == 2
        assert rec.definition["source"]["kind"] == "kafka"
        assert rec.definition["source"]["credentials"] == {"sasl.password": "<redacted>"}
        assert rec.definition["batch"]["interval_ms"] == 75
        assert "batch_interval_ms" not in rec.definition
        assert cat.pipelines.credentials("p") == {"sasl.password": "pw-6a1f0c93-canary"}
        assert PipelineSpec.from_json(
            rec.definition, cat.pipelines.credentials("p")
        ) == PipelineSpec.build(
            name="p",
            source="kafka",
            location="127.0.0.1:9092/t",
            table="t",
            credentials={"sasl.password": "pw-6a1f0c93-canary"},
            mapping=[("a", ("x",))],
            batch_interval_ms=75,
        )
        csv = cat.pipelines.get("fp")
        assert PipelineSpec.from_json(
            csv.definition, cat.pipelines.credentials("fp")
        ) == PipelineSpec.build(
            name="fp",
            source="fs",
            location="/data/*.csv",
            table="f",
            format="csv",
            mapping=[("id", ("id",)), ("@skip", ("skip",))],
            csv={"delimiter": "|", "quote": "'", "escape": "\\"},
            batch_interval_ms=75,
            max_partitions_per_batch=2,
            skip_parser_errors=True,
            offsets="latest",
            on_duplicate_key="replace",
            assignments=[("label", "upper(@skip)")],
            where="id > 0",
            skip_lines=1,
        )
        assert (csv.state, csv.created_at, csv.updated_at) == (
            "Stopped",
            rec.created_at,
            rec.updated_at,
        )
        assert cat.batches.last_succeeded("id0") == (1, {"0": 3})
        assert cat.variables.all() == {"pipelines_batch_interval": "75"}
    finally:
        cat.close()
    stored = raw(url, "SELECT name, definition, credentials FROM sp_pipelines ORDER BY name")
    assert [n for n, _, _ in stored] == ["fp", "p"] and stored[0][2] == "{}"
    # the clear-text credentials of the old catalog are sealed at open
    assert stored[1][2].startswith("fernet:") and "pw-6a1f0c93-canary" not in stored[1][2]
    assert "pw-6a1f0c93-canary" not in stored[1][1]
    Catalog(url).close()  # opening a migrated catalog again changes nothing
    assert raw(url, "SELECT name, definition, credentials FROM sp_pipelines ORDER BY name") == (
        stored
    )


def test_a_catalog_newer_than_the_code_is_refused_naming_both_versions(tmp_path):
    url = v1_catalog(tmp_path / "c.db", [V1_KAFKA], schema="99")
    with pytest.raises(CatalogError) as e:
        Catalog(url)
    assert f"has schema version 99; this sparkpipes needs {SCHEMA_VERSION}" in str(e.value)
    assert "newer sparkpipes" in str(e.value)
    assert schema_version(url) == "99"
    assert json.loads(raw(url, "SELECT definition FROM sp_pipelines")[0][0]) == V1_KAFKA


def test_a_failed_step_names_the_pipeline_and_leaves_the_catalog_as_it_was(tmp_path):
    bad = {**V1_CSV, "name": "bad", "offsets": "middle"}
    url = v1_catalog(tmp_path / "c.db", [V1_KAFKA, bad])
    with pytest.raises(CatalogError) as e:
        Catalog(url)
    text = str(e.value)
    assert "cannot migrate catalog" in text and "from schema version 1 to 2" in text
    assert "pipeline 'bad'" in text and "offsets must be one of earliest, latest" in text
    assert schema_version(url) == "1"
    stored = {n: json.loads(d) for n, d in raw(url, "SELECT name, definition FROM sp_pipelines")}
    assert stored == {"p": V1_KAFKA, "bad": bad}


def test_a_new_catalog_starts_at_the_current_version(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    Catalog(url).close()
    assert schema_version(url) == str(SCHEMA_VERSION)
    Catalog(url).close()
    assert raw(url, "SELECT count(*) FROM sp_meta") == [(1,)]

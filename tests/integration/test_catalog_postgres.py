"""The catalog on the real PostgreSQL server (127.0.0.1:5432)."""

from __future__ import annotations

import json
import os
import uuid

import pytest
import sqlalchemy as sa

PG = os.environ.get(
    "SPARKPIPES_TEST_PG_URL", "postgresql+psycopg2://postgres:postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture
def pg_url():
    name = f"sp_test_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    url = sa.engine.make_url(PG).set(database=name)
    yield url.render_as_string(hide_password=False)
    with admin.connect() as c:
        c.execute(sa.text(f"DROP DATABASE {name} WITH (FORCE)"))
    admin.dispose()


def test_pipeline_history_and_errors_in_postgres(tmp_path, pg_url, broker, topic):
    from sparkpipes import Engine

    broker.produce(topic, [json.dumps({"id": i}) for i in range(200)] + ["{bad"], partitions=4)
    with Engine(tmp_path / "wh", catalog_url=pg_url) as eng:
        eng.create_table("t", "id BIGINT")
        eng.create_pipeline(
            "p",
            source="kafka",
            location=f"{broker.bootstrap}/{topic}",
            table="t",
            skip_parser_errors=True,
            credentials={"sasl.username": "u", "sasl.password": "s3cret-pw"},
            config={"security.protocol": "PLAINTEXT"},
        )
        eng.run_batches("p", 3, until_idle=True)
        assert eng.table_arrow("t").num_rows == 200
    # a second engine on the same catalog sees the same state
    with Engine(tmp_path / "wh", catalog_url=pg_url) as eng:
        assert [p.name for p in eng.pipelines()] == ["p"]
        assert eng.batches("p")[0]["rows"] == 200
        assert len(eng.errors("p")) == 1
        assert eng.pipeline("p").definition["source"]["credentials"] == {
            "sasl.password": "<redacted>",
            "sasl.username": "<redacted>",
        }
    # the secret is stored only in the credentials column, nowhere else
    db = sa.create_engine(pg_url)
    with db.connect() as c:
        row = c.execute(sa.text("SELECT definition, credentials FROM sp_pipelines")).one()
        dumped = " ".join(
            str(r)
            for t in ("sp_batches", "sp_errors")
            for r in c.execute(sa.text(f"SELECT * FROM {t}"))
        )
    db.dispose()
    assert "s3cret-pw" not in row.definition and "s3cret-pw" not in dumped
    assert "s3cret-pw" not in row.credentials and row.credentials.startswith("fernet:")

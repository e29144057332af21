"""SHOW CREATE TABLE prints SingleStore DDL that makes the same table again."""

from __future__ import annotations

import pytest

from sparkpipes.errors import NotFoundError
from sparkpipes.frontends.singlestore.executor import SqlSession

TABLES = [
    (
        "kp",
        "CREATE TABLE `kp` (`topic` TEXT NOT NULL, `id` JSON NOT NULL, `record` JSON NOT NULL, "
        "SORT KEY `__UNORDERED` (), SHARD KEY ())",
        "CREATE TABLE `kp` (\n  `topic` TEXT NOT NULL,\n  `id` JSON NOT NULL,\n"
        "  `record` JSON NOT NULL,\n  SORT KEY `__UNORDERED` (),\n  SHARD KEY ()\n)",
    ),
    (
        "parsed",
        "CREATE TABLE parsed (partitionKey BIGINT, n INT UNSIGNED, data_base64 VARCHAR(255), "
        "parsed_data AS FROM_BASE64(data_base64) PERSISTED VARCHAR(255), "
        "PRIMARY KEY (partitionKey), UNIQUE KEY u (partitionKey, n), KEY ix (data_base64) USING HASH)",
        None,
    ),
]


@pytest.mark.parametrize(("name", "create", "shown"), TABLES)
def test_show_create_table_round_trips(engine, name, create, shown):
    sql = SqlSession(engine)
    sql.execute(create)
    sql.execute(f"CREATE INDEX idx ON {name} ({engine.catalog.tables.get(name).schema.names[0]})")
    result = sql.execute(f"SHOW CREATE TABLE {name}")[0]
    assert result.columns == ["Table", "Create Table"]
    ddl = result.rows[0][1]
    if shown is not None:
        assert ddl == shown.replace("\n)", ",\n  KEY `idx` (`topic`)\n)")
    before = engine.catalog.tables.get(name)
    sql.execute(f"DROP TABLE {name}")
    sql.execute(ddl)
    after = engine.catalog.tables.get(name)
    assert (after.schema, after.options, after.ddl) == (before.schema, before.options, before.ddl)
    with pytest.raises(NotFoundError, match="table 'nosuch' does not exist"):
        sql.execute("SHOW CREATE TABLE nosuch")


def test_create_index_z_orders_the_files_and_keeps_the_rows(engine):
    from deltalake import DeltaTable

    sql = SqlSession(engine)
    sql.execute("CREATE TABLE ev (id BIGINT, status TEXT)")
    for k in range(4):  # four commits: four files, each with every status
        values = ", ".join(f"({k * 100 + i}, 's{i % 5}')" for i in range(100))
        sql.execute(f"INSERT INTO ev VALUES {values}")
    location = engine.catalog.tables.get("ev").location
    files_before = len(DeltaTable(location).file_uris())
    before = sorted(engine.table_arrow("ev").to_pylist(), key=lambda r: r["id"])
    sql.execute("CREATE INDEX idx_status ON ev(status)")
    dt = DeltaTable(location)
    assert dt.history(1)[0]["operation"] == "OPTIMIZE"
    assert dt.history(1)[0]["operationMetrics"]["plannerStrategy"] == "zOrder"
    assert len(dt.file_uris()) < files_before
    assert sorted(engine.table_arrow("ev").to_pylist(), key=lambda r: r["id"]) == before
    assert sql.execute("SELECT count(*) FROM ev WHERE status = 's3'")[0].rows == [(80,)]
    assert "KEY `idx_status` (`status`)" in sql.execute("SHOW CREATE TABLE ev")[0].rows[0][1]

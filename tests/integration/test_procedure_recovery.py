"""A procedure batch left half-committed (some tables hold it, others not) is finished
from its manifest as it was staged, even when the procedure was replaced before the
recovery: the staged files of a table fit only the way they were made (its MERGE's mode,
match columns, schema), and the batch's other tables committed them that way. The way
is kept in the manifest (``sinks.procedure_manifest``), not taken from the procedure as
it is at recovery."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sparkpipes.frontends.singlestore.executor import SqlSession

KINDS = ("order", "view", "click")
TABLES = (
    "CREATE TABLE events (id BIGINT, kind TEXT);"
    "CREATE TABLE latest (kind TEXT, last_id BIGINT, PRIMARY KEY (kind));"
    "INSERT INTO latest VALUES ('order', -1), ('view', -1), ('click', -1);"
)
STAGED = """
CREATE OR REPLACE PROCEDURE route(batch QUERY(id BIGINT, kind TEXT)) AS BEGIN
  INSERT INTO events SELECT id, kind FROM batch;
  REPLACE INTO latest (kind, last_id) SELECT kind, max(id) FROM batch GROUP BY kind;
END
"""
#: what the procedure is replaced with before the recovery
REPLACED = {
    # the table is written another way (INSERT IGNORE: the stored rows would stay)
    "another_mode": """
CREATE OR REPLACE PROCEDURE route(batch QUERY(id BIGINT, kind TEXT)) AS BEGIN
  INSERT INTO events SELECT id, kind FROM batch;
  INSERT IGNORE INTO latest (kind, last_id) SELECT kind, max(id) FROM batch GROUP BY kind;
END
""",
    # the table is changed by UPDATE too: its MERGE stages changes, of another schema
    "another_schema": """
CREATE OR REPLACE PROCEDURE route(batch QUERY(id BIGINT, kind TEXT)) AS BEGIN
  INSERT INTO events SELECT id, kind FROM batch;
  UPDATE latest SET last_id = last_id + 1000 WHERE kind = 'none';
  REPLACE INTO latest (kind, last_id) SELECT kind, max(id) FROM batch GROUP BY kind;
END
""",
    # the table is not written any more: the batch still reaches it
    "not_written": """
CREATE OR REPLACE PROCEDURE route(batch QUERY(id BIGINT, kind TEXT)) AS BEGIN
  INSERT INTO events SELECT id, kind FROM batch;
END
""",
}


def _write(d, name: str, ids) -> None:
    (d / name).write_text("".join(json.dumps({"id": i, "kind": KINDS[i % 3]}) + "\n" for i in ids))


class Crash(Exception):
    """Stands for the process dying between two tables' commits."""


@pytest.mark.parametrize("replaced", sorted(REPLACED))
def test_a_half_committed_batch_is_finished_as_it_was_staged(
    engine, tmp_path, monkeypatch, replaced
):
    import sparkpipes.sinks.procedure as procedure

    sql = SqlSession(engine)
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "f0.json", range(0, 10))
    _write(data, "f1.json", range(12, 20, 3))  # orders only
    sql.execute(TABLES + STAGED)
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' CONFIG '{{\"packing\": false}}' "
        "MAX_PARTITIONS_PER_BATCH 1 INTO PROCEDURE route FORMAT JSON (id <- id, kind <- kind)"
    )

    def crash(point: str) -> None:
        if point == "between_procedure_tables":
            raise Crash(point)

    monkeypatch.setattr(procedure, "crash_point", crash)
    with pytest.raises(Crash):  # batch 1: 'events' holds it, 'latest' does not
        engine.run_batch("p")
    monkeypatch.undo()
    assert Counter(engine.table_arrow("events").column("id").to_pylist()) == Counter(range(10))
    assert sorted(sql.execute("SELECT last_id FROM latest")[0].rows) == [(-1,)] * 3

    sql.execute(REPLACED[replaced])
    engine.run_batches("p", 5, until_idle=True)

    # batch 1 once in every table, 'latest' by its REPLACE as staged (the maxima of the
    # first file's kinds over the stored -1s) ...
    second = [12, 15, 18]
    assert Counter(engine.table_arrow("events").column("id").to_pylist()) == Counter(
        [*range(10), *second]
    )
    latest = dict(sql.execute("SELECT kind, last_id FROM latest")[0].rows)
    if replaced == "another_mode":  # ... then batch 2 by INSERT IGNORE: the keys are there
        assert latest == {"order": 9, "view": 7, "click": 8}
    elif replaced == "another_schema":  # ... then batch 2 by the new body's REPLACE
        assert latest == {"order": 18, "view": 7, "click": 8}
    else:  # ... and batch 2 does not write it
        assert latest == {"order": 9, "view": 7, "click": 8}


def _pipeline(sql: SqlSession, data) -> None:
    sql.execute(
        f"CREATE PIPELINE p AS LOAD DATA FS '{data}/*.json' CONFIG '{{\"packing\": false}}' "
        "MAX_PARTITIONS_PER_BATCH 1 INTO PROCEDURE route FORMAT JSON (id <- id, kind <- kind)"
    )


def test_a_table_dropped_once_the_procedure_no_longer_writes_it_stops_nothing(engine, tmp_path):
    """A batch every table holds is done: its manifest is not asked again, so a table of
    it dropped after the procedure stopped writing it (CREATE OR REPLACE PROCEDURE, then
    DROP TABLE) does not stop the pipeline from starting, and is not made again."""
    from sparkpipes import Engine

    sql = SqlSession(engine)
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "f0.json", range(0, 4))
    sql.execute(TABLES + STAGED)
    _pipeline(sql, data)
    engine.run_batches("p", 5, until_idle=True)  # batch 1: both tables hold it
    latest = engine.catalog.tables.get("latest").location
    sql.execute(REPLACED["not_written"])
    sql.execute("DROP TABLE latest")
    _write(data, "f1.json", range(4, 6))
    engine.run_batches("p", 5, until_idle=True)
    assert sorted(engine.table_arrow("events").column("id").to_pylist()) == list(range(6))

    engine.close()  # and started again: the pipeline resumes after batch 2
    again = Engine(tmp_path / "warehouse")
    try:
        _write(data, "f2.json", range(6, 8))
        again.run_batches("p", 5, until_idle=True)
        assert sorted(again.table_arrow("events").column("id").to_pylist()) == list(range(8))
    finally:
        again.close()
    import os

    assert not os.path.exists(latest)  # never made again


def test_a_half_committed_batch_skips_a_table_dropped_since(engine, tmp_path, monkeypatch, caplog):
    """A crash between the tables' commits, then the procedure replaced to stop writing
    the table left behind and that table dropped: the recovery finishes the batch
    without it (with a warning; it is not made again), and the source is not read twice."""
    import os

    import sparkpipes.sinks.procedure as procedure

    sql = SqlSession(engine)
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "f0.json", range(0, 4))
    sql.execute(TABLES + STAGED)
    _pipeline(sql, data)

    def crash(point: str) -> None:
        if point == "between_procedure_tables":
            raise Crash(point)

    monkeypatch.setattr(procedure, "crash_point", crash)
    with pytest.raises(Crash):  # batch 1: 'events' holds it, 'latest' does not
        engine.run_batch("p")
    monkeypatch.undo()
    latest = engine.catalog.tables.get("latest").location
    sql.execute(REPLACED["not_written"])
    sql.execute("DROP TABLE latest")
    _write(data, "f1.json", range(4, 6))
    with caplog.at_level("WARNING"):
        engine.run_batches("p", 5, until_idle=True)
    assert sorted(engine.table_arrow("events").column("id").to_pylist()) == list(range(6))
    assert any("'latest'" in r.getMessage() for r in caplog.records)
    assert not os.path.exists(latest)

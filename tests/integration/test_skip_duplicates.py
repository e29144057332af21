"""Rows ``SKIP DUPLICATE KEY ERRORS`` skips are listed, as SingleStore lists the rows a
``SKIP … ERRORS`` skipped in ``information_schema.PIPELINES_ERRORS`` (an error that did not
stop the pipeline; LOAD_DATA_ERRORS documents the same for LOAD DATA): each with its source
partition and offset; ``IGNORE`` skips them without a word."""

from __future__ import annotations

import pytest

from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)
    return lambda text: session.execute(text)[-1]


def _lines(path, rows) -> list[int]:
    """Write JSON lines; the byte offset each starts at."""
    text, starts = "", []
    for r in rows:
        starts.append(len(text.encode()))
        text += r + "\n"
    path.write_text(text)
    return starts


def test_skipped_duplicates_are_listed_with_partition_and_offset(sql, engine, tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    starts = _lines(
        data / "a.json",
        ['{"k": 1, "v": "a"}', '{"k": 2, "v": "b"}', '{"k": 1, "v": "c"}', '{"k": 3, "v": "d"}'],
    )
    sql("CREATE TABLE keyed (k INT, v TEXT, PRIMARY KEY (k))")
    sql("INSERT INTO keyed VALUES (2, 'old')")
    sql(
        f"CREATE PIPELINE dk AS LOAD DATA FS '{data}/*.json' SKIP DUPLICATE KEY ERRORS "
        "INTO TABLE keyed FORMAT JSON"
    )
    sql("START PIPELINE dk FOREGROUND")
    assert sql("SELECT k, v FROM keyed ORDER BY k").rows == [(1, "a"), (2, "old"), (3, "d")]
    listed = sql(
        "SELECT BATCH_SOURCE_PARTITION_ID, BATCH_OFFSET, ERROR_MESSAGE FROM "
        "information_schema.PIPELINES_ERRORS WHERE PIPELINE_NAME = 'dk' ORDER BY BATCH_OFFSET"
    ).rows
    where = str(data / "a.json")
    assert [(p, o) for p, o, _ in listed] == [(where, str(starts[1])), (where, str(starts[2]))]
    assert "Duplicate entry '2'" in listed[0][2] and "in the table already" in listed[0][2]
    assert "Duplicate entry '1'" in listed[1][2] and "twice in the batch" in listed[1][2]
    assert all("SKIP DUPLICATE KEY ERRORS" in m for _, _, m in listed)
    assert [e["offset"] for e in engine.errors("dk")] == starts[1:3]


def test_with_set_clauses_and_skip_all_errors_too_and_never_for_ignore(sql, engine, tmp_path):
    """The ingest-time SQL (SET) runs before the rows meet the table; SKIP ALL ERRORS
    skips duplicates as SKIP DUPLICATE KEY ERRORS does; IGNORE lists nothing."""
    data = tmp_path / "d"
    data.mkdir()
    starts = _lines(data / "a.json", ['{"k": 1, "v": "a"}', '{"k": 1, "v": "b"}'])
    for name, clause in (("sa", "SKIP ALL ERRORS"), ("ig", "IGNORE")):
        sql(f"CREATE TABLE {name} (k INT, v TEXT, up TEXT, PRIMARY KEY (k))")
        sql(
            f"CREATE PIPELINE {name} AS LOAD DATA FS '{data}/*.json' {clause} "
            f"INTO TABLE {name} FORMAT JSON (k <- k, v <- v) SET up = upper(v)"
        )
        sql(f"START PIPELINE {name} FOREGROUND")
        assert sql(f"SELECT k, v, up FROM {name}").rows == [(1, "a", "A")]
    assert [(e["partition"], e["offset"]) for e in engine.errors("sa")] == [
        (str(data / "a.json"), starts[1])
    ]
    assert engine.errors("ig") == []


def test_listed_once_when_the_batch_fails_after_its_commit(sql, engine, tmp_path, monkeypatch):
    """The MERGE's skipped rows are listed before it commits (``BatchCommit.report``): a
    failure after the commit, before the engine records the batch, loses none, and the
    retry (which finds the batch committed) lists none twice."""
    import sparkpipes.engine.batch.protocol as protocol
    from sparkpipes.errors import EngineError

    data = tmp_path / "d"
    data.mkdir()
    starts = _lines(data / "a.json", ['{"k": 1, "v": "a"}', '{"k": 1, "v": "b"}'])
    sql("CREATE TABLE once (k INT, v TEXT, PRIMARY KEY (k))")
    sql(
        f"CREATE PIPELINE once AS LOAD DATA FS '{data}/*.json' SKIP DUPLICATE KEY ERRORS "
        "INTO TABLE once FORMAT JSON"
    )
    failed: list[str] = []

    def crash(point: str) -> None:
        if point == "after_commit" and not failed:
            failed.append(point)
            raise EngineError("failed after the commit")

    monkeypatch.setattr(protocol, "crash_point", crash)
    engine.run_batches("once", 3, until_idle=True)
    assert failed == ["after_commit"]
    assert sql("SELECT k, v FROM once").rows == [(1, "a")]
    assert [e["offset"] for e in engine.errors("once")] == [starts[1]]


def test_an_attempt_that_finds_its_batch_committed_keeps_the_winners_list(sql, engine, tmp_path):
    """Two attempts of one batch (as a stale runner's and the one that committed): the
    attempt whose commit finds the batch there writes nothing to the list, where its
    own errors (a line it could not parse) would replace the winner's skipped rows."""
    data = tmp_path / "d"
    data.mkdir()
    starts = _lines(data / "a.json", ['{"k": 1, "v": "a"}', "{not json", '{"k": 1, "v": "b"}'])
    sql("CREATE TABLE twice (k INT, v TEXT, PRIMARY KEY (k))")
    sql(
        f"CREATE PIPELINE twice AS LOAD DATA FS '{data}/*.json' SKIP ALL ERRORS "
        "INTO TABLE twice FORMAT JSON"
    )
    runner = engine._runner("twice")
    plan = runner.plan()
    assert runner.commit(runner.extract(plan)).state == "Succeeded"
    listed = [(e["offset"], e["reason"]) for e in engine.errors("twice")]
    assert [o for o, _ in listed] == starts[1:]  # the line not parsed, the duplicate
    assert runner.commit(runner.extract(plan, attempt=2), attempt=2).state == "Replayed"
    assert [(e["offset"], e["reason"]) for e in engine.errors("twice")] == listed
    assert sql("SELECT k, v FROM twice").rows == [(1, "a")]

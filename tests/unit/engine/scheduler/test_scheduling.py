"""The retry policy and variable defaults: transient errors are retried with backoff,
terminal ones and bugs are not, and the last failure puts the pipeline in Error with the
error recorded."""

import logging
import os
import shutil
from types import SimpleNamespace

import pyarrow as pa
import pytest

from sparkpipes.config import BatchSpec
from sparkpipes.engine.scheduler import scheduling
from sparkpipes.errors import DecodeError, InternalError, SinkError
from sparkpipes.frontends.singlestore.executor import SqlSession


def fs_pipeline(engine, tmp_path, text, **kw):
    (tmp_path / "a.json").write_text(text)
    engine.create_table("t", pa.schema([("a", pa.int64())]))
    engine.create_pipeline(
        "p", source="fs", location=str(tmp_path / "*.json"), table="t", max_retries=2, **kw
    )


def retries(caplog) -> list[str]:
    return [
        r.getMessage().rsplit("retry ", 1)[1][:3]
        for r in caplog.records
        if "; retry " in r.getMessage()
    ]


def test_a_transient_error_is_retried_then_the_pipeline_is_in_error(engine, tmp_path, caplog):
    """A real transient failure: the destination table's log is gone (SinkError)."""
    fs_pipeline(engine, tmp_path, '{"a": 1}\n')
    shutil.rmtree(os.path.join(engine.catalog.tables.get("t").location, "_delta_log"))
    caplog.set_level(logging.WARNING, "sparkpipes.engine")
    with pytest.raises(SinkError, match="Delta table 't' is missing"):
        engine.run_batch("p")
    assert retries(caplog) == ["1/2", "2/2"]  # the first try and two retries
    rec = engine.pipeline("p")
    assert (
        rec.state == "Error" and "is missing" in rec.last_error and "pipeline 'p'" in rec.last_error
    )


def test_a_terminal_error_is_not_retried(engine, tmp_path, caplog):
    fs_pipeline(engine, tmp_path, '{"a": 1}\n{bad\n')
    caplog.set_level(logging.WARNING, "sparkpipes.engine")
    with pytest.raises(DecodeError, match=r"a\.json' byte 9: invalid JSON"):
        engine.run_batch("p")
    assert retries(caplog) == []
    assert engine.pipeline("p").state == "Error"


class Bug:
    """Stands in for an assembled pipeline whose batch hits a bug: no real part can be
    made to have one on cue, so it raises what run_task reports for one."""

    spec = SimpleNamespace(batch=BatchSpec(max_retries=4))
    calls = 0

    def run(self, attempt, cap, plan=None, fence=None, **_):
        self.calls += 1
        raise InternalError("task failed: KeyError: 'x'")


def test_a_bug_is_not_retried(engine, tmp_path, monkeypatch):
    fs_pipeline(engine, tmp_path, '{"a": 1}\n')
    bug = Bug()
    monkeypatch.setattr(engine.rt, "runner", lambda name: bug)
    with pytest.raises(InternalError):
        engine.run_batch("p")
    assert bug.calls == 1 and engine.pipeline("p").state == "Error"


def test_backoff_doubles_up_to_a_ceiling():
    assert [scheduling.backoff(a) for a in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert scheduling.backoff(30) == scheduling.MAX_BACKOFF_S


def test_variables_are_the_defaults_of_python_and_sql_pipelines_alike(engine, tmp_path):
    engine.create_table("t", pa.schema([("a", pa.int64())]))
    engine.set_variable("pipelines_batch_interval", 123)
    engine.set_variable("pipelines_extractor_batch_size", 777)
    engine.set_variable("pipelines_max_retries_per_batch_partition", 1)
    loc = str(tmp_path / "*.json")
    py = engine.create_pipeline("py", source="fs", location=loc, table="t")
    SqlSession(engine).execute(f"CREATE PIPELINE sq AS LOAD DATA FS '{loc}' INTO TABLE t")
    sq = engine.spec("sq")
    assert py.batch == sq.batch
    assert (py.batch.interval_ms, py.batch.chunk_records, py.batch.max_retries) == (123, 777, 1)
    given = engine.create_pipeline("g", source="fs", location=loc, table="t", batch_interval_ms=5)
    assert given.batch.interval_ms == 5  # an option given wins over the variable


def test_an_idle_pipeline_waits_longer_up_to_its_interval():
    waits = [scheduling.idle_wait(2.0, idle) for idle in range(1, 7)]
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert scheduling.idle_wait(0.0, 1) == scheduling.MIN_IDLE_S

"""The retry policy and variable defaults, without Spark: transient errors are retried
with backoff, terminal ones and bugs are not, and the last failure puts the pipeline in
Error with the error recorded."""

from types import SimpleNamespace

import pyarrow as pa
import pytest

from sparkpipes.config import BatchSpec
from sparkpipes.engine import scheduling
from sparkpipes.errors import (
    DecodeError,
    InternalError,
    SinkError,
    SourceUnavailableError,
)
from sparkpipes.sql.executor import SqlSession


class Failing:
    """Stands in for an assembled pipeline whose batches fail: no server can be made to
    fail on cue for each error class, so the errors are raised here."""

    def __init__(self, errors, retries=2):
        self.errors = list(errors)
        self.calls = 0
        self.spec = SimpleNamespace(batch=BatchSpec(max_retries=retries))

    def run(self, attempt, cap):
        self.calls += 1
        raise self.errors.pop(0) if self.errors else AssertionError("ran too often")


@pytest.fixture
def sched(engine, tmp_path, monkeypatch):
    engine.create_table("t", pa.schema([("a", pa.int64())]))
    engine.create_pipeline("p", source="fs", location=str(tmp_path / "*.json"), table="t")
    monkeypatch.setattr(scheduling.time, "sleep", lambda s: None)
    s = engine._scheduler
    monkeypatch.setattr(s, "_warm_up", lambda: None)
    return engine, s


def use(engine, monkeypatch, runner):
    monkeypatch.setattr(engine.rt, "runner", lambda name: runner)
    monkeypatch.setattr(engine.rt, "forget", lambda name: None)


@pytest.mark.parametrize("err", [SourceUnavailableError("down"), SinkError("commit failed")])
def test_transient_errors_are_retried_then_the_pipeline_is_in_error(sched, monkeypatch, err):
    engine, s = sched
    runner = Failing([err] * 3, retries=2)
    use(engine, monkeypatch, runner)
    with pytest.raises(type(err)):
        s.run_batch("p")
    assert runner.calls == 3  # the first try and two retries
    rec = engine.pipeline("p")
    assert (
        rec.state == "Error" and err.message in rec.last_error and "pipeline 'p'" in rec.last_error
    )


@pytest.mark.parametrize("err", [DecodeError("bad record"), InternalError("task failed: KeyError")])
def test_terminal_errors_and_bugs_are_not_retried(sched, monkeypatch, err):
    engine, s = sched
    runner = Failing([err], retries=4)
    use(engine, monkeypatch, runner)
    with pytest.raises(type(err)):
        s.run_batch("p")
    assert runner.calls == 1
    assert engine.pipeline("p").state == "Error"


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

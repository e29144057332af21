"""The typed task contract and the error registry: what crosses the task/driver boundary."""

import pickle

import pyarrow as pa

from sparkpipes.engine.batch.contract import ErrorRecord, PieceResult, TaskResult, TaskTimings
from sparkpipes.errors import (
    DecodeError,
    InternalError,
    OffsetOutOfRangeError,
    SourceUnavailableError,
    SparkpipesError,
)
from sparkpipes.sinks import AddFile


def test_a_result_survives_pickling_with_its_staged_handles_and_errors():
    staged = AddFile("part-1.parquet", 10, 1, 3, "{}")
    bad = DecodeError("cannot decode", partition="2", offset=41)
    r = TaskResult(
        "2",
        pieces=(PieceResult("2", 40, 43, read=3, rows=2, drained=True),),
        bytes=99,
        staged=(staged,),
        errors=(ErrorRecord.of(bad, reason="bad json", raw=b"{x"),),
        timings=TaskTimings(seconds=1.23456),
        task=5,
    )
    back = pickle.loads(pickle.dumps(r))
    assert back == r
    assert back.error() is None and back.rows == 2
    assert back.report() == [
        {
            "partition": "2",
            "start": 40,
            "end": 43,
            "rows": 2,
            "read": 3,
            "task": 5,
            "seconds": 1.235,
            "cpu_seconds": 0.0,
            "fetch_seconds": 0.0,
            "decode_seconds": 0.0,
            "write_seconds": 0.0,
        }
    ]


def test_a_failure_comes_back_as_the_error_the_task_raised():
    e = SourceUnavailableError("broker down", pipeline="p", partition="1", batch=4)
    back = pickle.loads(pickle.dumps(TaskResult.failed("1", e, "trace"))).error()
    assert type(back) is SourceUnavailableError and back.transient
    assert (back.code, back.pipeline, back.partition, back.batch) == ("SP201", "p", "1", 4)


def test_from_dict_resolves_subclasses_defined_after_the_errors_module():
    class LateError(SourceUnavailableError):  # e.g. a plugin's own error
        code = "SP299"

    back = SparkpipesError.from_dict(LateError("late", partition="0").to_dict())
    assert type(back) is LateError
    assert back.code == "SP299" and back.transient and back.partition == "0"
    assert type(SparkpipesError.from_dict({"type": "Nope", "message": "m"})) is SparkpipesError


def test_error_records_are_built_in_one_place_with_one_kind_per_error():
    parse = ErrorRecord.of(DecodeError("at offset 7: bad", partition="0", offset=7), reason="bad")
    gap = ErrorRecord.of(OffsetOutOfRangeError("gone", partition="3", offset=5))
    bug = ErrorRecord.of(InternalError("task failed: KeyError", partition="1"))
    assert (parse.code, parse.kind, parse.offset, parse.reason) == ("SP300", "parse", 7, "bad")
    assert (gap.code, gap.kind, gap.partition) == ("SP202", "offset_out_of_range", "3")
    assert (bug.code, bug.kind) == ("SP900", "internal")
    long = ErrorRecord.of(DecodeError("x"), raw=b"a" * 1000)
    assert long.excerpt is not None and long.excerpt.endswith("…") and len(long.excerpt) == 257
    assert pa.array([parse.to_dict()]).type.num_fields == 6


def test_a_bug_is_terminal_and_a_lost_executor_is_transient():
    from sparkpipes.errors import EngineError

    assert not InternalError("bug").transient
    assert EngineError("executor lost").transient

"""A local checkpoint's block lost with an executor is transient (the batch is computed
again), told apart from the user's SQL or data failing by Spark's own message: the
``SparkException`` of ``SparkCoreErrors.checkpointRDDBlockIdNotFoundError`` (error
condition ``CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND``), as PySpark 4 hands it over unconverted
(a ``Py4JJavaError``), or inside the abort of a job whose task failed for it."""

from __future__ import annotations

import pytest

from sparkpipes.errors import EngineError, LostExecutorDataError, lost_executor_data
from sparkpipes.sinks.frames import spark_call

#: what ``collect()`` raised here after the checkpointed RDD's blocks were removed
#: (Spark 4.3, local mode: the task's exception is the job's)
COLLECTED = (
    "An error occurred while calling o44.collectToPython.\n"
    ": org.apache.spark.SparkException: [CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND] Checkpoint "
    "block rdd_3_0 not found!\nEither the executor that originally checkpointed this "
    "partition is no longer alive, or the original RDD is unpersisted.\nIf this problem "
    "persists, you may consider using `rdd.checkpoint()` instead, which is slower than local "
    "checkpointing but more fault-tolerant. SQLSTATE: 56000\n"
    "\tat org.apache.spark.errors.SparkCoreErrors$.checkpointRDDBlockIdNotFoundError("
    "SparkCoreErrors.scala:100)\n"
    "\tat org.apache.spark.rdd.LocalCheckpointRDD.compute(LocalCheckpointRDD.scala:61)"
)
#: the same on a cluster, where a task is retried on other executors and the job aborted
ABORTED = (
    "An error occurred while calling o87.collectToPython.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage "
    "12.0 failed 4 times, most recent failure: Lost task 1.3 in stage 12.0 (TID 40) "
    "(10.0.0.7 executor 2): org.apache.spark.SparkException: "
    "[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND] Checkpoint block rdd_17_1 not found!"
)
#: Spark 3's text, without the condition
OLD_SPARK = "org.apache.spark.SparkException: Checkpoint block rdd_5_2 not found! Either …"


class FakeJavaError(Exception):
    """Stands for py4j's ``Py4JJavaError``: all a caller sees is its text."""


@pytest.mark.parametrize("text", [COLLECTED, ABORTED, OLD_SPARK])
def test_a_lost_checkpoint_block_is_a_transient_engine_error(text):
    err = lost_executor_data(FakeJavaError(text))
    assert isinstance(err, LostExecutorDataError) and isinstance(err, EngineError)
    assert err.transient
    assert "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND" in err.message
    assert "computed again" in err.message and "Traceback" not in str(err)
    assert "rdd_" in err.message  # which block, for the operator


@pytest.mark.parametrize(
    "text",
    [
        "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0",
        '[CAST_INVALID_INPUT] The value \'abc\' of the type "STRING" cannot be cast to "INT"',
        "Checkpoint directory does not exist: /tmp/x",  # a reliable checkpoint: not ours
    ],
)
def test_other_spark_failures_are_not_classified_as_lost_data(text):
    assert lost_executor_data(FakeJavaError(text)) is None


def test_a_sink_action_that_lost_a_block_is_retried_not_blamed_on_the_table():
    """``spark_call`` (the sinks' Spark actions) blames any other failure on the table's
    data (terminal); a lost block is transient."""

    def lost():
        raise FakeJavaError(ABORTED)

    with pytest.raises(LostExecutorDataError) as e:
        spark_call(lost, "t")
    assert e.value.transient

    def bad():
        raise FakeJavaError("[CAST_INVALID_INPUT] The value 'abc' cannot be cast")

    with pytest.raises(Exception) as e2:
        spark_call(bad, "t")
    assert not getattr(e2.value, "transient", True)


class FakeJava:
    """Stands for a Java exception through py4j: its error condition, message, cause."""

    def __init__(self, condition: str | None, message: str, cause: FakeJava | None = None):
        self.condition, self.message, self.cause = condition, message, cause

    def getCondition(self) -> str | None:
        return self.condition

    def getMessage(self) -> str:
        return self.message

    def getCause(self) -> FakeJava | None:
        return self.cause


class FakePy4JError(Exception):
    """Stands for ``Py4JJavaError``: its text, and the Java exception behind it."""

    def __init__(self, text: str, java: FakeJava) -> None:
        super().__init__(text)
        self.java_exception = java


#: a value that quotes Spark's message, in a cast that failed (its own line, as Spark's)
QUOTED = "org.apache.spark.SparkException: Checkpoint block rdd_1_2 not found!"
CAST = (
    "An error occurred while calling o9.collectToPython.\n"
    ": org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value "
    f'\'x\n{QUOTED}\' of the type "STRING" cannot be cast to "INT" because it is malformed.'
)


def test_the_java_exceptions_condition_decides_not_its_text():
    """A failed cast whose value quotes Spark's message, even on a line of its own, is the
    data's failure: its Java exception's condition says so."""
    java = FakeJava("CAST_INVALID_INPUT", CAST)
    assert lost_executor_data(FakePy4JError(CAST, java)) is None


def test_a_lost_block_down_the_chain_of_causes_is_found_by_its_condition():
    """A job aborted for it (the abort's own exception has no condition) and a text
    that does not say it: the cause's condition does."""
    task = FakeJava("CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND", "Checkpoint block rdd_17_1 not found!")
    abort = FakeJava(None, "Job aborted due to stage failure", task)
    err = lost_executor_data(FakePy4JError("An error occurred while calling o87", abort))
    assert isinstance(err, LostExecutorDataError) and "rdd_17_1" in err.message


@pytest.mark.parametrize(
    "text",
    [
        "[CAST_INVALID_INPUT] The value 'Checkpoint block rdd_1_2 not found' of the type "
        '"STRING" cannot be cast to "INT"',
        f"[CAST_INVALID_INPUT] The value '{QUOTED}' cannot be cast to \"INT\"",
        "[PARSE_SYNTAX_ERROR] near 'CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND'",
        "Job aborted due to stage failure: Task 1 in stage 2.0 failed 1 times, most recent "
        "failure: Lost task 1.0 in stage 2.0 (TID 3) (host executor driver): "
        "org.apache.spark.SparkException: [CAST_INVALID_INPUT] The value 'x): "
        + QUOTED
        + "' cannot be cast",
    ],
)
def test_text_that_only_quotes_the_message_is_not_lost_data(text):
    """Without a Java exception to ask, only a line Spark began counts, not the message
    quoted in another error's text (a SQL text, a value)."""
    assert lost_executor_data(FakeJavaError(text)) is None


@pytest.fixture(scope="module")
def spark():
    from sparkpipes.engine.spark.session import build_session

    return build_session(None, {})


def test_on_spark_a_lost_block_is_lost_data_and_a_cast_quoting_it_is_not(spark):
    """Spark's own exceptions, both ways: a local checkpoint whose blocks are gone, and a
    cast of a value that quotes Spark's message (with a line of its own)."""
    rows = spark.range(4).localCheckpoint(eager=True)
    jsc = spark.sparkContext._jsc
    for rdd in list(jsc.getPersistentRDDs().keySet().toArray()):
        jsc.sc().unpersistRDD(int(rdd), True)
    with pytest.raises(Exception) as lost:
        rows.collect()
    err = lost_executor_data(lost.value)
    assert isinstance(err, LostExecutorDataError) and "rdd_" in err.message

    value = "x\n" + QUOTED
    with pytest.raises(Exception) as cast:
        spark.sql(f"SELECT CAST({value!r} AS INT) AS n").collect()
    assert "Checkpoint block rdd_1_2 not found" in str(cast.value)
    assert lost_executor_data(cast.value) is None

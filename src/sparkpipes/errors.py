"""One exception root for everything sparkpipes raises on purpose.

Every error carries a stable ``code`` (for scripts and the errors store) and, where it
concerns one, the pipeline / source partition / batch it happened in. ``transient``
decides what the engine does with it: a transient error (broker unreachable, a lost
Spark executor) is retried with backoff; a terminal one (malformed record, offset out of
range, bad configuration) fails the batch at once and puts the pipeline into ``Error``.

User-facing front ends (the CLI, the demo) print ``str(err)`` and never a traceback for a
``SparkpipesError``.
"""

from __future__ import annotations

import re
from typing import Any


class SparkpipesError(Exception):
    """Root of all sparkpipes errors."""

    code = "SP000"
    transient = False
    #: ERROR_TYPE of a record this error is stored as (information_schema.PIPELINES_ERRORS)
    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        pipeline: str | None = None,
        partition: str | None = None,
        batch: int | None = None,
        offset: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.pipeline = pipeline
        self.partition = partition
        self.batch = batch
        self.offset = offset

    def where(self) -> str:
        parts = []
        if self.pipeline is not None:
            parts.append(f"pipeline '{self.pipeline}'")
        if self.batch is not None:
            parts.append(f"batch {self.batch}")
        if self.partition is not None:
            parts.append(f"partition {self.partition}")
        return ", ".join(parts)

    def with_context(
        self,
        *,
        pipeline: str | None = None,
        partition: str | None = None,
        batch: int | None = None,
    ) -> SparkpipesError:
        """Fill in context the raiser did not know; never overwrite what it did."""
        self.pipeline = self.pipeline if self.pipeline is not None else pipeline
        self.partition = self.partition if self.partition is not None else partition
        self.batch = self.batch if self.batch is not None else batch
        return self

    def located(self, line: int, column: int, source_line: str) -> SparkpipesError:
        """Point the error at the statement text it came from (SQL front ends)."""
        self.line, self.column, self.source_line = line, column, source_line
        return self

    def __str__(self) -> str:
        where = self.where()
        text = f"[{self.code}] {self.message}" + (f" ({where})" if where else "")
        line = getattr(self, "line", None)
        if line is None or not hasattr(self, "source_line"):
            return text
        caret = "".join(c if c == "\t" else " " for c in self.source_line[: self.column - 1])
        return f"{text}\nat line {line}, column {self.column}:\n{self.source_line}\n{caret}^"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": type(self).__name__,
            "code": self.code,
            "message": self.message,
            "pipeline": self.pipeline,
            "partition": self.partition,
            "batch": self.batch,
            "offset": self.offset,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SparkpipesError:
        """Rebuild an error that crossed a process boundary (a Spark task result)."""
        kind = _find(d.get("type", ""))
        err = kind.__new__(kind)
        SparkpipesError.__init__(
            err,
            d["message"],
            pipeline=d.get("pipeline"),
            partition=d.get("partition"),
            batch=d.get("batch"),
            offset=d.get("offset"),
        )
        return err


class ConfigError(SparkpipesError):
    """A definition or option is invalid (unknown key, wrong type, forbidden option)."""

    code = "SP100"
    kind = "config"


class NotFoundError(SparkpipesError):
    """A named pipeline or table does not exist."""

    code = "SP101"


class AlreadyExistsError(SparkpipesError):
    """A pipeline or table with that name already exists."""

    code = "SP102"


class NotAdmittedError(SparkpipesError):
    """A statement asks for what no user of the server may do (a file, a Java method, a
    Spark setting): the query sandbox (``engine.sandbox``) refused it."""

    code = "SP103"


class AccessDeniedError(SparkpipesError):
    """The signed-in user lacks the privilege a statement or request needs."""

    code = "SP104"


class QueryError(SparkpipesError):
    """Spark SQL rejected a query (unknown column, type mismatch …)."""

    code = "SP702"


class SourceError(SparkpipesError):
    """The source failed in a way that retrying will not fix."""

    code = "SP200"
    kind = "source"


class SourceUnavailableError(SourceError):
    """The source could not be reached (broker down, timeout); retried with backoff."""

    code = "SP201"
    transient = True


class OffsetOutOfRangeError(SourceError):
    """The offset to resume from no longer exists in the source (retention, topic recreated)."""

    code = "SP202"
    kind = "offset_out_of_range"


class SourceAuthError(SourceError):
    """The source refused the credentials (SASL, TLS client certificate). Terminal: the
    same credentials are refused again; the message names the mechanism and user, never
    the password."""

    code = "SP203"
    kind = "auth"


class DecodeError(SparkpipesError):
    """A record could not be decoded into the table's schema."""

    code = "SP300"
    kind = "parse"


class CorruptObjectError(DecodeError):
    """An object (file) cannot be read to its end: a broken Parquet footer, a truncated
    gzip stream. With SKIP PARSER ERRORS the object is marked Skipped (``resume``, the
    source's offset past it) after the records read before the damage; otherwise the
    batch fails naming it."""

    code = "SP301"

    def __init__(self, message: str, *, resume: Any = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.resume = resume


class TransformError(DecodeError):
    """A record program (``WITH TRANSFORM``) did not finish a chunk of records: it ran out
    of its CPU time or memory, or died; or a connector's Single Message Transform could
    not process a record. The batch fails; the same records would fail again, so it is
    not retried."""

    code = "SP302"


class SinkError(SparkpipesError):
    """Writing or committing to the destination failed."""

    code = "SP400"
    kind = "sink"
    transient = True


class SchemaMismatchError(SinkError):
    """Decoded data does not fit the destination table; retrying will not help."""

    code = "SP401"
    transient = False


class StorageFullError(SinkError):
    """The destination's storage has no room left (``ENOSPC``, or ``EDQUOT``: a quota) for
    a data file or the commit log; the message names the path.

    Transient, like the other write failures of a sink, and for the same reasons: space
    can come back without anyone touching the pipeline (a spill, a temp file or a log
    elsewhere on the volume removed, a quota raised), and a retry cannot make things
    worse: the attempt that failed published nothing and its data files were removed
    (``Sink.abort``). The retries are bounded by ``max_retries``; then the pipeline is
    ``Error`` and ``start`` resumes it, from the committed offsets, once space is free."""

    code = "SP402"


class DuplicateKeyError(SinkError):
    """A row's primary key is in the table already, or twice in the batch, where the
    pipeline inserts (SingleStore's ``Duplicate entry … for key 'PRIMARY'``); the batch
    fails, as SingleStore's would: the same rows would fail again."""

    code = "SP403"
    transient = False


class CatalogError(SparkpipesError):
    """The catalog database failed."""

    code = "SP500"
    kind = "catalog"
    transient = True


class EngineError(SparkpipesError):
    """A Spark job failed for a reason that is not one of ours (executor lost, JVM error)."""

    code = "SP600"
    kind = "engine"
    transient = True


class LostExecutorDataError(EngineError):
    """A Spark job needed rows only an executor held, and that executor is gone: a block
    of a local checkpoint (``DataFrame.localCheckpoint``, which a procedure body's and a
    ``DELETE``'s or ``UPDATE``'s rows are kept in between statements) lives in the memory
    and disk of the executor that computed it, not in storage, so an executor lost on a
    cluster takes it along. Computing the batch again makes it anew: transient."""


#: Spark's error condition for data an executor held and took with it
#: (``SparkCoreErrors.checkpointRDDBlockIdNotFoundError``: "Checkpoint block
#: rdd_<rdd>_<partition> not found! Either the executor that originally checkpointed this
#: partition is no longer alive, or the original RDD is unpersisted.")
LOST_BLOCK_CONDITION = "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND"
_BLOCK = re.compile(r"Checkpoint block (rdd_\d+_\d+) not found")
#: the same as text, where no exception of Spark's is there to ask: only as a line of its
#: own that Spark began — its exception, or the abort of a job whose task failed for it —
#: never where a SQL text or a value quoted in another error could put it
_LOST_LINE = re.compile(
    r"^(?:: )?org\.apache\.spark\.SparkException: "
    r"(?:Job aborted due to stage failure: Task \d+ in stage [\d.]+ failed \d+ times?, "
    r"most recent failure: Lost task [\d.]+ in stage [\d.]+ \(TID \d+\) \([^()\n]*\): "
    r"org\.apache\.spark\.SparkException: )?"
    r"(?:\[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND\] )?Checkpoint block (rdd_\d+_\d+) not found!",
    re.MULTILINE,
)
#: causes followed down a Java exception's chain
_CHAIN = 16


def lost_executor_data(e: BaseException) -> LostExecutorDataError | None:
    """The transient error for a Spark failure a new attempt cures because it only lost
    data an executor held (a local checkpoint's block), else None. Told by the error
    condition of the Java exception behind ``e`` (py4j's ``java_exception``; PySpark's
    captured exceptions keep it as their origin) or of one it was caused by (the abort
    of a job whose task failed for it), not by ``e``'s text, which carries the user's SQL
    and values (a failed cast quotes the value). Only where there is no such exception
    is the text asked, for a line Spark began (:data:`_LOST_LINE`); callers classify
    with this before they blame the user's SQL or the data."""
    java = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    if java is not None:
        block = _lost_in_chain(java)
    else:
        own = _call(e, "getCondition")  # PySpark's exception without a JVM (Connect)
        if own is not None:
            block = _block(e) if own == LOST_BLOCK_CONDITION else None
        else:
            found = _LOST_LINE.search(str(e))
            block = found[1] if found else None
    if block is None:
        return None
    what = f"block {block} of " if block else ""
    return LostExecutorDataError(
        f"Spark lost {what}a local checkpoint of the rows with the executor that held it "
        f"({LOST_BLOCK_CONDITION}); transient: a pipeline's batch is computed again, a "
        "statement can be run again"
    )


def _lost_in_chain(java: Any) -> str | None:
    """The block a Java exception (or one down its chain of causes) says was lost, ""
    if it does not name it; None if none of them has the condition."""
    for _ in range(_CHAIN):
        if java is None:
            return None
        condition = _call(java, "getCondition") or _call(java, "getErrorClass")
        if condition == LOST_BLOCK_CONDITION:
            return _block(java)
        java = _call(java, "getCause")
    return None


def _block(e: Any) -> str:
    found = _BLOCK.search(str(_call(e, "getMessage") or e))
    return found[1] if found else ""


def _call(obj: Any, method: str) -> Any:
    """``obj.method()``, or None where it has no such method or calling it fails (a
    Java object through py4j, a Spark without error conditions)."""
    try:
        return getattr(obj, method)()
    except Exception:
        return None


class InternalError(SparkpipesError):
    """A bug: an exception nobody raised on purpose. Terminal: retrying runs the same bug."""

    code = "SP900"
    kind = "internal"


class PipelineStateError(SparkpipesError):
    """The requested operation does not fit the pipeline's current state."""

    code = "SP601"


class LeaseLostError(SparkpipesError):
    """This engine no longer holds the pipeline's lease (it expired while the engine was
    paused, and another engine took it): the batch in hand must not commit. Neither
    retried nor an error of the pipeline: the new holder runs it."""

    code = "SP602"
    kind = "lease"


def _find(name: str) -> type[SparkpipesError]:
    """The error class called ``name``, looked up when asked, so that subclasses defined
    after this module (in plugins, in front ends) come back as themselves."""
    todo: list[type[SparkpipesError]] = [SparkpipesError]
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        todo.extend(cls.__subclasses__())
    return SparkpipesError

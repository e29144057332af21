"""The one long-lived SparkSession an engine runs its batches on."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import threading
from collections.abc import Iterator, Mapping

from sparkpipes.errors import EngineError

DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.python.worker.reuse": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "1g",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    # pipelines' batches are concurrent jobs, one FAIR pool per pipeline (engine.scheduling)
    "spark.scheduler.mode": "FAIR",
    # sparkpipes keeps tables itself; Spark's own catalog dir must not land in the cwd
    "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), "sparkpipes-spark-warehouse"),
}


def build_session(master: str | None = None, conf: Mapping[str, str] | None = None):
    """Get or create the session. ``master`` defaults to $SPARKPIPES_SPARK_MASTER or local[*];
    on a cluster the sparkpipes package is shipped to the executors."""
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or _python())
    from pyspark.sql import SparkSession

    master = master or os.environ.get("SPARKPIPES_SPARK_MASTER", "local[*]")
    builder = SparkSession.builder.appName("sparkpipes").master(master)
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    quiet = {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}"}
    if master.startswith("local"):
        # the driver's RPC and block ports listen on loopback, which every account of the
        # machine reaches: they answer only this process (a secret of this run)
        quiet["spark.authenticate"] = "true"
        quiet["spark.authenticate.secret"] = secrets.token_hex(32)
    for k, v in {**DEFAULTS, **quiet, **(conf or {})}.items():
        builder = builder.config(k, v)
    from pyspark import SparkContext

    if SparkContext._active_spark_context is None:
        try:
            with _jvm_stderr_filtered():
                session = builder.getOrCreate()
        except Exception as e:  # no Java, a bad JAVA_HOME/SPARK_HOME, a JVM that died
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise EngineError(
                f"cannot start Spark ({first}); it needs Java 17: check JAVA_HOME "
                f"({os.environ.get('JAVA_HOME') or 'not set'}) and SPARK_HOME "
                f"({os.environ.get('SPARK_HOME') or 'not set'})"
            ) from None
    else:
        session = builder.getOrCreate()
    _quiet_query_context_loggers()
    session.sparkContext.setLogLevel(os.environ.get("SPARKPIPES_SPARK_LOG_LEVEL", "ERROR"))
    if not session.sparkContext.master.startswith("local"):
        from sparkpipes.engine.spark.cluster import ship_package

        ship_package(session)  # executors import this sparkpipes, not one installed there
    return session


def warm_up(session, jobs: int = 5) -> None:
    """Get the session to the state later batches find it in, so the first batch does
    not pay for start-up (once per SparkContext):

    * one job that starts the Python workers and, in each, imports the task code and
      runs its decode and Parquet path once on synthetic records (first-use costs:
      pyarrow's lazy pandas import, the JSON reader, the allocators' first pages);
    * a few more batch-shaped jobs (parallelize → map → collect), because the JVM's
      just-in-time compiler otherwise compiles Spark's job-launch path (closure
      cleaning) during the first batches, on the cores the tasks need.
    """
    sc = session.sparkContext
    if getattr(sc, "_sparkpipes_warm", False):
        return
    n = max(1, sc.defaultParallelism)
    sc.parallelize(range(n), n).map(_prepare_worker).collect()
    for _ in range(jobs):
        sc.parallelize(range(n), n).map(_identity).collect()
    sc._sparkpipes_warm = True


def _identity(x: object) -> object:
    return x


def _prepare_worker(_: object, records: int = 50_000) -> None:
    import gc

    import pyarrow as pa
    import pyarrow.parquet as pq

    import sparkpipes.engine.batch.task
    import sparkpipes.formats.csv
    import sparkpipes.sources.kafka_consumer  # noqa: F401
    from sparkpipes.formats.json import JsonDecoder

    schema = pa.schema([("ts", pa.int64()), ("id", pa.string()), ("n", pa.int32())])
    for _ in range(2):
        values = pa.array(  # the first pa.array in a process imports pandas: 0.25 s
            [b'{"ts":1700000000000,"id":"%032x","n":%d}' % (i, i % 1000) for i in range(records)],
            pa.binary(),
        )
        table = JsonDecoder(schema).decode(values).table
        pq.write_table(table, pa.BufferOutputStream(), compression="snappy")
    gc.collect()
    gc.freeze()  # the imported modules are not garbage: later collections skip them


def _python() -> str:
    import sys

    return sys.executable


def _quiet_query_context_loggers() -> None:
    """PySpark logs every analysis error with its whole JVM stack as JSON on stderr before
    raising it; sparkpipes raises it as one located error instead, so those loggers are
    switched off (created as PySpark's own class, which their calls need)."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


#: lines the JVM prints at start that tell a sparkpipes user nothing they can act on
JVM_NOISE = (b"WARNING: Using incubator modules",)


@contextlib.contextmanager
def _jvm_stderr_filtered() -> Iterator[None]:
    """Start the JVM with its stderr through a filter that drops ``JVM_NOISE``.

    Spark's launcher adds ``--add-modules jdk.incubator.vector``, and the JVM then prints a
    warning no option turns off. The JVM inherits file descriptor 2 when PySpark starts
    it, so for that moment fd 2 is a pipe; a daemon thread copies every other line to
    the real stderr for the JVM's whole life (its log4j errors, the Python workers'
    stderr). Nothing changes when fd 2 is not open or a pipe cannot be made.
    """
    try:
        real = os.dup(2)
        read, write = os.pipe()
    except OSError:
        yield
        return
    threading.Thread(
        target=_copy_lines, args=(read, real), name="sparkpipes-jvm-stderr", daemon=True
    ).start()
    os.dup2(write, 2)
    os.close(write)
    try:
        yield
    finally:
        os.dup2(real, 2)


def _copy_lines(read: int, out: int) -> None:
    with open(read, "rb", buffering=0) as src:
        for line in iter(src.readline, b""):
            if line.startswith(JVM_NOISE):
                continue
            try:
                os.write(out, line)
            except OSError:
                return

"""The one long-lived SparkSession an engine runs its batches on."""

from __future__ import annotations

import os
from collections.abc import Mapping

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
}


def build_session(master: str | None = None, conf: Mapping[str, str] | None = None):
    """Get or create the session. ``master`` defaults to $SPARKPIPES_SPARK_MASTER or local[*]."""
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or _python())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("sparkpipes").master(
        master or os.environ.get("SPARKPIPES_SPARK_MASTER", "local[*]")
    )
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    quiet = {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}"}
    for k, v in {**DEFAULTS, **quiet, **(conf or {})}.items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("SPARKPIPES_SPARK_LOG_LEVEL", "ERROR"))
    return session


def warm_up(session) -> None:
    """Start the Python workers and import the task code once per core, so the first
    batch does not pay for it."""
    sc = session.sparkContext
    n = max(1, sc.defaultParallelism)
    sc.parallelize(range(n), n).foreach(_import_task_modules)


def _import_task_modules(_: object) -> None:
    import pyarrow as pa
    import pyarrow.parquet

    pa.array([b"warm"], pa.binary())  # its first call imports pandas: 0.25 s

    import sparkpipes.engine.task
    import sparkpipes.formats.csv
    import sparkpipes.formats.json
    import sparkpipes.sources.kafka  # noqa: F401


def _python() -> str:
    import sys

    return sys.executable

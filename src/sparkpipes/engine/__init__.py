"""Engine: assembles pipelines from specs, runs their batches as Spark jobs, commits them
through their sinks and records them.

Modules, by what they hold:

- ``engine`` — the :class:`Engine` facade (the Python API) over the services below,
  which share one ``runtime.Runtime`` (warehouse, catalog, SparkSession, assembled
  pipelines, one lock per pipeline);
- ``tables`` — DDL, INSERT, snapshots; ``pipelines`` — definitions (variable defaults,
  validation); ``offsets`` — committed offsets, SET OFFSETS, TEST PIPELINE, lag;
  ``scheduling`` — one batch with the retry policy, the scheduler thread;
  ``information_schema`` — the views, with live source offsets;
- ``assembly`` — spec + table → source, decoder, sink (with its write strategy), writer;
- ``batch`` — the commit protocol, steps 1 to 4; ``contract`` + ``task`` — what a Spark
  task receives, runs and returns; ``transform`` — ingest-time SQL; ``variables``,
  ``dialect``, ``schema``, ``spark``, ``faults`` (crash points).
"""

from sparkpipes.engine.batch.protocol import BatchResult
from sparkpipes.engine.engine import Engine
from sparkpipes.engine.tables import RewriteProgress

__all__ = ["BatchResult", "Engine", "RewriteProgress"]

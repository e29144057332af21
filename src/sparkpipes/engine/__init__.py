"""Engine: assembles pipelines from specs, runs their batches as Spark jobs, commits them
through their sinks and records them.

At the top, the :class:`Engine` facade (``engine``; the Python API) over its services,
which share one ``runtime.Runtime`` (warehouse, catalog, SparkSession, assembled
pipelines, one lock per pipeline): ``tables`` (DDL, INSERT, ALTER rewrites, indexes),
``pipelines`` (definitions, variable defaults, validation), ``procedures``, ``offsets``
(committed offsets, SET OFFSETS, TEST PIPELINE, lag), ``information_schema``,
``housekeeping`` (table upkeep beside the scheduler), ``extensions`` (front ends'
services, created by name), ``variables``, ``schema``, ``status``, ``faults`` (crash
points). Its rooms: ``batch`` (one batch, end to end), ``scheduler`` (sharing the
cluster, leases), ``spark`` (the session, a local cluster), ``sql`` (the dialect and the
query sandbox).

The engine may import the plugins (``sources``, ``formats``, ``sinks``), the core
(``catalog``, ``config``) and ``errors``/``util``; never a front end, ``server`` or
``cli`` (``.importlinter``).
"""

from sparkpipes.engine.alter import RewriteProgress
from sparkpipes.engine.batch.protocol import BatchResult
from sparkpipes.engine.engine import Engine

__all__ = ["BatchResult", "Engine", "RewriteProgress"]

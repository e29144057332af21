"""Sharing the cluster between pipelines and engines.

``scheduling`` — the scheduler thread and one batch under the retry policy;
``admission`` — how many tasks each pipeline may run now (seed 004's share of the
cluster); ``leasing`` — one engine per pipeline, fenced commits, failover. It may import
the engine's batch room, runtime and the core.
"""

"""One batch of one pipeline, end to end (DESIGN "The batch commit protocol").

``assembly`` — a spec and its table into parts: source, decoder, sink and write strategy;
``planning`` — which partitions or objects, in how many tasks; ``protocol`` — the batch
runner: plan, extract, commit, record; ``contract`` + ``task`` — what a Spark task
receives, runs and returns; ``transform`` — ingest-time SQL (SET, WHERE, computed columns).
It may import the engine's runtime and SQL room, the plugins and the core.
"""

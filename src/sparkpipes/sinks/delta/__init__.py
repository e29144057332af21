"""Delta Lake, all of it (delta-rs): the sink and its write strategies (``sink``: append
and upsert, exactly once with the app transaction), ``upsert`` (keys, deduplication,
MERGE), ``checkpoints`` (when a commit writes a checkpoint), ``commits`` (the one
commit-with-retry helper), ``maintenance`` (compaction, retention, vacuum, log trimming).
It may import the sink SPI, ``config`` and ``errors``/``util``.
"""

"""When a pipeline's commit writes a Delta checkpoint of its table.

Both sides of the choice grow, with different things. delta-rs (1.6) reads every commit
after the table's last checkpoint again on each commit and each refresh of a table (a
table object even keeps every commit it read since it was loaded, its own checkpoints
notwithstanding, so the sink loads the table after writing one): 0.15-0.25 ms per such
commit in a batch's commit, so the 100th commit after a checkpoint costs ~20 ms more than
the first (``bench/README.md``, ``bench_commits.py`` of 2026-11-25). A checkpoint
rewrites the table's whole state, its live files and every tombstone still in retention:
~20 ms with the load for a young table, ~1.3 s with a week of tombstones. No fixed
interval suits both.

:class:`CheckpointPolicy` uses the rent-or-buy rule instead: a checkpoint is written once
the re-reading paid since the last one has cost what writing the last one did. With
re-reading that grows by ``a`` seconds per commit and a checkpoint costing ``C``, that is
every ``sqrt(2 C / a)`` commits, the interval of least total cost, and it follows ``C`` as
tombstones come and expire. The re-reading is estimated from the commits' own durations
(each one's excess over the fastest since the checkpoint), so nothing is assumed of the
machine. The table's ``delta.checkpointInterval`` stays the most commits between two
checkpoints; :data:`MIN_COMMITS` the fewest.

Pure bookkeeping, no I/O: the sink times its commits and writes the checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass

#: never fewer commits than this between two checkpoints the policy asks for
MIN_COMMITS = 10
#: ``delta.checkpointInterval`` of a table that does not set it (delta-rs's default)
DEFAULT_INTERVAL = 100


@dataclass
class CheckpointPolicy:
    """One writer's view of one table's checkpoints (driver side, not shared)."""

    interval: int = DEFAULT_INTERVAL  # the most commits between two checkpoints
    checkpoint: int | None = None  # version of the last checkpoint known
    cost: float | None = None  # seconds the last checkpoint this writer wrote took
    paid: float = 0.0  # seconds of commits spent re-reading the log since that checkpoint
    fastest: float | None = None  # the fastest commit since: what is not re-reading

    def due(self, version: int, seconds: float) -> bool:
        """Count a commit of ``version`` that took ``seconds``; whether a checkpoint of
        ``version`` is due now. Before any checkpoint is known, one is due at once."""
        if self.checkpoint is None or version <= self.checkpoint:
            return True
        self.fastest = seconds if self.fastest is None else min(self.fastest, seconds)
        self.paid += seconds - self.fastest
        commits = version - self.checkpoint
        if commits >= max(self.interval, 1):
            return True
        if commits < MIN_COMMITS:
            return False
        return self.cost is None or self.paid >= self.cost

    def seen(self, checkpoint: int) -> None:
        """Another writer's checkpoint at ``checkpoint`` (newer than this one's): the count
        starts again from it; its cost is not known, the last one's stands for it."""
        if self.checkpoint is None or checkpoint > self.checkpoint:
            self.checkpoint, self.paid, self.fastest = checkpoint, 0.0, None

    def written(self, version: int, seconds: float | None) -> None:
        """A checkpoint of ``version`` was written and took ``seconds`` (None: it failed,
        which is retried after another full count, not at every commit)."""
        self.checkpoint, self.paid, self.fastest = version, 0.0, None
        if seconds is not None:
            self.cost = seconds

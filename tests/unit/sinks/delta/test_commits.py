"""The one commit-with-retry helper: conflicts start again (bounded), failures are named."""

import pytest
from deltalake.exceptions import CommitFailedError

from sparkpipes.errors import SinkError
from sparkpipes.sinks.delta.commits import COMMIT_ATTEMPTS, CommitConflict, retrying


def test_a_conflict_is_tried_again_from_attempt_two():
    seen = []

    def commit(attempt):
        seen.append(attempt)
        if attempt < 3:
            raise CommitFailedError("version 7 already exists")
        return "done"

    assert retrying("compacting table 't'", commit, pause_s=0.0) == "done"
    assert seen == [1, 2, 3]


def test_conflicts_that_persist_give_up_naming_what_and_how_often():
    def commit(attempt):
        raise CommitConflict("another writer committed")

    with pytest.raises(CommitConflict, match=rf"table .t. conflicted .* {COMMIT_ATTEMPTS} times"):
        retrying("compacting table 't'", commit, pause_s=0.0)
    with pytest.raises(CommitConflict, match=r"another writer committed \(2 attempts\)$"):
        retrying(
            "x", commit, attempts=2, pause_s=0.0, gave_up=lambda cause, n: f"{cause} ({n} attempts)"
        )


def test_a_failure_is_named_once_and_not_tried_again():
    calls = []

    def commit(attempt):
        calls.append(attempt)
        raise RuntimeError("Generic DeltaTable error: disk full\nstack backtrace: …")

    with pytest.raises(SinkError) as e:
        retrying("vacuuming table 't'", commit)
    assert e.value.message == "vacuuming table 't' failed: Generic DeltaTable error: disk full"
    assert calls == [1]
    with pytest.raises(RuntimeError):  # a commit that names its own failures
        retrying("x", commit, wrap_failures=False)
    mine = SinkError("the table changed")
    with pytest.raises(SinkError) as e:
        retrying("x", lambda attempt: (_ for _ in ()).throw(mine))
    assert e.value is mine

"""The one way a Delta commit is tried again after another writer's commit got in its way.

A batch's commit, a compaction, a retention delete, a vacuum, a Z-order clustering and an
``ALTER TABLE`` rewrite all commit on a snapshot that another writer (a pipeline in
another process, a maintenance round, an INSERT) may have moved past. delta-rs rebases
what it can by itself; what it cannot (``CommitFailedError``, or our
:class:`CommitConflict` for a commit that must be made on its own snapshot) is started
again here from a fresh snapshot, a bounded number of times, with a pause that doubles
(randomized, so that two writers that collided do not collide again in step). Any other
failure becomes a :class:`SinkError` naming what was being done, with the first line of
delta-rs's message (no Rust backtrace). This module may import ``errors`` and delta-rs.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from sparkpipes.errors import SinkError

log = logging.getLogger("sparkpipes.sinks")

#: how many times a conflicting commit is started again from a fresh snapshot, in all
COMMIT_ATTEMPTS = 6
#: the first pause between those (doubling, randomized by ±50%)
CONFLICT_PAUSE_S = 0.05

_T = TypeVar("_T")


class CommitConflict(SinkError):
    """A commit another writer's commit got in the way of (``CommitFailedError``)."""


class StaleChanges(SinkError):
    """Changes computed from one version of the table (a DELETE's or UPDATE's, mode
    ``changes``) met commits of other writers made since: applied, they would overwrite
    what those wrote (a lost update). Transient: the batch, or the statement, computes its
    changes again from the table as it is now."""


def is_conflict(e: BaseException) -> bool:
    """Whether ``e`` says another writer committed first (as opposed to a failure)."""
    from deltalake.exceptions import CommitFailedError

    return isinstance(e, CommitFailedError | CommitConflict)


def first_line(e: BaseException) -> str:
    """delta-rs's message without the Rust backtrace that may follow it."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def retrying(
    what: str,
    commit: Callable[[int], _T],
    *,
    attempts: int | None = None,
    pause_s: float | None = None,
    gave_up: Callable[[str, int], str] | None = None,
    wrap_failures: bool = True,
) -> _T:
    """``commit(attempt)`` (attempt 1, 2, …; each reads the snapshot it commits on), again
    after a conflict, at most ``attempts`` times in all (``COMMIT_ATTEMPTS``). The last
    conflict is a :class:`CommitConflict` whose message ``gave_up(cause, attempts)`` writes
    (default: ``"{what} conflicted with other writers N times: {cause}"``); a failure that
    is not a conflict is re-raised as a :class:`SinkError` naming ``what`` (one that is
    already a SinkError, as it is; every one as it is without ``wrap_failures``, for a
    ``commit`` that turns delta-rs's errors into ours itself)."""
    attempts = COMMIT_ATTEMPTS if attempts is None else attempts
    pause_s = CONFLICT_PAUSE_S if pause_s is None else pause_s
    for attempt in range(1, attempts + 1):
        try:
            return commit(attempt)
        except Exception as e:
            if not is_conflict(e):
                if isinstance(e, SinkError) or not wrap_failures:
                    raise
                raise SinkError(f"{what} failed: {first_line(e)}") from None
            cause = e.message if isinstance(e, SinkError) else first_line(e)
            if attempt == attempts:
                message = (
                    gave_up(cause, attempt)
                    if gave_up
                    else f"{what} conflicted with other writers {attempt} times: {cause}"
                )
                raise CommitConflict(message) from None
            pause = pause_s * 2 ** (attempt - 1) * random.uniform(0.5, 1.5)
            log.info("%s: %s; again from a fresh snapshot in %.2fs", what, cause, pause)
            time.sleep(pause)
    raise AssertionError("unreachable")

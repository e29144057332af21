"""Whom Spark's ``current_user()``, ``user()`` and ``session_user()`` name: the signed-in
user of the statement, as SingleStore's ``CURRENT_USER()`` does (``'bo@%'``: the user and
the host of their grants, which are for any host).

Spark answers those functions with a value of the calling thread
(``CurrentUserContext.CURRENT_USER``, what Spark's Thrift server sets for each of its
connections), falling back to the account the JVM runs as: the server's own OS account,
which is none of a user's business. A statement run for a user sets the value on its
thread first (:func:`assume`) and clears it when it ends (:func:`forget`), so a later
statement or a batch on that thread never inherits it. PySpark pins each Python thread to
one JVM thread, so the value set is the one the thread's queries see. Spark's optimizer
folds the function into a literal when it plans a query: a result read later, maybe on
another thread (a streamed one), is planned before the statement ends (:func:`plan`).

The owner (no signed-in user) gets Spark's answer, the server's account, which is theirs.
Spark code that runs outside a statement (a pipeline's batches, a procedure's body) gets
it too.
"""

from __future__ import annotations

from typing import Any

#: the host part of a user's name, SingleStore's for grants to any host (``'bo'@'%'``)
HOST = "%"


def name_of(user: str) -> str:
    """What the functions answer for ``user``: ``bo@%``."""
    return f"{user}@{HOST}"


def assume(spark: Any, user: str | None) -> None:
    """Make the current thread's queries name ``user`` (None: Spark's own answer)."""
    slot = _slot(spark)
    if slot is None:
        return
    if user is None:
        slot.remove()
    else:
        slot.set(name_of(user))


def forget(spark: Any) -> None:
    """Back to Spark's own answer on the current thread."""
    slot = _slot(spark)
    if slot is not None:
        slot.remove()


def plan(df: Any) -> None:
    """Plan ``df`` now, with the thread's user folded in (Spark keeps the plan)."""
    df._jdf.queryExecution().optimizedPlan()


def _slot(spark: Any) -> Any:
    """Spark's thread-local of the current user, or None when PySpark does not pin its
    threads (each call may then run on another JVM thread: a value set there would be
    another statement's; Spark's own answer is left)."""
    from py4j.clientserver import ClientServer  # py4j is loaded once Spark runs

    if not isinstance(spark.sparkContext._gateway, ClientServer):
        return None
    return spark._jvm.org.apache.spark.sql.catalyst.CurrentUserContext.CURRENT_USER()

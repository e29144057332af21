"""Named crash points, for proving the commit protocol survives a kill at every step.

Set ``SPARKPIPES_CRASH_AT=<point>[:<n>]`` and the process SIGKILLs itself (and its
process group, so the Spark JVM goes too) the ``n``-th time (default first) it reaches
``<point>``. Unset, a crash point costs one dict lookup. Points, in protocol order:
``after_plan``, ``after_write``, ``after_commit``, ``after_record``; sinks have their own
(``between_procedure_tables``, ``in_database_transaction``: the rows and metadata rows
sent, the database transaction not committed).
"""

from __future__ import annotations

import os
import signal

POINTS = ("after_plan", "after_write", "after_commit", "after_record")
_hits: dict[str, int] = {}


def _target() -> tuple[str, int] | None:
    spec = os.environ.get("SPARKPIPES_CRASH_AT")
    if not spec:
        return None
    name, _, n = spec.partition(":")
    return name, int(n or 1)


def crash_point(name: str) -> None:
    target = _target()
    if target is None or target[0] != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= target[1]:
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

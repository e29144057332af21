"""Pipelines at a glance, for every surface that shows them (``sparkpipes status``, the HTTP
API): state, rows loaded, recent rows/s, lag, share of the cluster, the engine that holds
the pipeline's lease (runs it), last error and last batch. Reads the catalog and the
sources' metadata only; never waits for a running batch."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from sparkpipes.catalog.states import BatchState
from sparkpipes.engine.scheduler.rooms import NOTE, STALE_S
from sparkpipes.errors import SparkpipesError

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

#: how many recent succeeded batches the rate is taken over
RECENT = 10


def total_lag(eng: Engine, rec: Any) -> int | None:
    """Records the pipeline has yet to load; None when the source cannot say (unreachable,
    or a partition it cannot count), never a false 0."""
    try:
        snap = eng.offset_snapshot(rec)
    except SparkpipesError:
        return None
    if not snap or any(o.lag is None for o in snap):
        return None
    return sum(o.lag for o in snap)


def cluster_shares(eng: Engine) -> dict[str, str]:
    """Per pipeline, its share of the cluster as its engine's scheduler last noted it:
    ``4/10`` partitions while a batch runs, ``waiting (needs 8)`` while it waits for
    room. Each engine notes its own; a note not renewed for ``STALE_S`` is from an engine
    that died (SIGKILL) and is ignored."""
    try:
        notes = eng.rt.catalog.notes.starting(NOTE)
    except SparkpipesError:
        return {}
    shares: dict[str, str] = {}
    for note in notes.values():
        state = json.loads(note)
        if time.time() - float(state.get("at", 0)) > STALE_S:
            continue
        cap = state.get("capacity")
        shares.update({n: f"{w}/{cap}" for n, w in state.get("running", {}).items()})
        shares.update({n: f"waiting (needs {w})" for n, w in state.get("waiting", {}).items()})
    return shares


def pipeline_status(eng: Engine, name: str | None = None, *, lag: bool = True) -> list[dict]:
    """One entry per pipeline (or the one named): see the module docstring."""
    shares = cluster_shares(eng)
    try:
        leases = eng.rt.catalog.leases.all()
    except SparkpipesError:
        leases = {}
    out = []
    for p in [eng.pipeline(name)] if name else eng.pipelines():
        window = eng.rt.catalog.batches.list(p.id, last=4 * RECENT)
        recent = [b for b in window if b["state"] == BatchState.SUCCEEDED][-RECENT:]
        loaded, finished = eng.rt.catalog.batches.loaded(p.id)
        secs = sum((b["duration_ms"] or 0) for b in recent) / 1000
        out.append(
            {
                "name": p.name,
                "state": p.state,
                "table": p.table,
                "rows_loaded": loaded,
                "rows_per_s": sum(b["rows"] for b in recent) / secs if secs else 0.0,
                "lag": total_lag(eng, p) if lag else None,
                "cluster": shares.get(p.name, "") if p.state == "Running" else "",
                "engine": leases[p.id].holder if p.id in leases and leases[p.id].held else None,
                "last_error": p.last_error,
                "last_batch_at": finished.isoformat() if finished else None,
            }
        )
    return out

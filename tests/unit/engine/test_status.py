"""``sparkpipes status``'s Cluster column from the scheduler's note in the catalog."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from sparkpipes.catalog import Catalog
from sparkpipes.engine.scheduler.rooms import HEARTBEAT_S, STALE_S
from sparkpipes.engine.status import cluster_shares


def _engine(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPIPES_SECRET_KEY", "a passphrase for the test")
    return SimpleNamespace(rt=SimpleNamespace(catalog=Catalog(f"sqlite:///{tmp_path / 'c.db'}")))


def test_a_fresh_note_shows_shares_and_a_stale_one_none(tmp_path, monkeypatch):
    eng = _engine(tmp_path, monkeypatch)
    note = {"capacity": 4, "running": {"a": 2}, "waiting": {"b": 4}}
    eng.rt.catalog.notes.put("scheduler", json.dumps({"at": time.time(), **note}))
    assert cluster_shares(eng) == {"a": "2/4", "b": "waiting (needs 4)"}
    # the scheduler was SIGKILLed: it stopped renewing its note
    eng.rt.catalog.notes.put("scheduler", json.dumps({"at": time.time() - STALE_S - 1, **note}))
    assert cluster_shares(eng) == {}
    assert HEARTBEAT_S < STALE_S
    eng.rt.catalog.close()

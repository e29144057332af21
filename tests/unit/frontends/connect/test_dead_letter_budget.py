"""Dead-letter publishing against a broker that stalls (a socket on 127.0.0.1 that takes
connections and never answers): each connector's round ends within its time budget
(``deadletter.BUDGET_S``), not ``TIMEOUT_S`` per task and record, so the connector
thread every connector shares goes on; nothing is published and nothing is marked
published, so the next round tries again."""

from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace

import pytest

from sparkpipes.frontends.connect import deadletter
from sparkpipes.frontends.connect.deadletter import DeadLetters


@pytest.fixture
def stalled():
    """``host:port`` of a broker that accepts and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    done.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


class _Batches:
    """A catalog whose every pipeline committed batch 3, with one error in each batch."""

    def last_succeeded(self, pipeline_id):
        return (3, {})

    def errors(self, pipeline_id=None, last=None):
        return [
            {"batch_id": b, "partition": 0, "offset": b, "code": "SP300", "kind": "parse"}
            for b in (1, 2, 3)
        ]


class _Connectors(DeadLetters):
    def __init__(self, configs: dict[str, dict]) -> None:
        self.configs = configs
        self.engine = SimpleNamespace(
            catalog=SimpleNamespace(batches=_Batches()),
            pipeline=lambda name: SimpleNamespace(id=f"id-{name}"),
        )

    def names(self):
        return sorted(self.configs)

    def get(self, name):
        topics = [f"{name}-t{i}" for i in range(3)]
        return {"config": self.configs[name], "topics": topics, "pipelines": topics}


def _config(name: str, bootstrap: str) -> dict:
    return {
        "name": name,
        "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
        "topics": "a,b,c",
        "bootstrap.servers": bootstrap,
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": f"dlq-{name}",
    }


def test_a_stalled_broker_holds_each_connector_for_its_budget_not_30_s_a_task(stalled, monkeypatch):
    monkeypatch.setattr(deadletter, "BUDGET_S", 2.0)
    connectors = _Connectors({n: _config(n, stalled) for n in ("one", "two")})
    t = time.monotonic()
    assert connectors.publish_dead_letters() == 0
    elapsed = time.monotonic() - t
    # two connectors of three tasks each: 2 s each, where it was 30 s a connector
    assert elapsed < 2 * (2.0 + deadletter.MIN_WAIT_S) + 3, elapsed


def test_a_budget_gives_each_wait_what_is_left_and_at_least_the_floor(monkeypatch):
    budget = deadletter.Budget(10.0)
    assert 9 < budget.wait() <= 10 and budget.allows()
    budget.worked = True
    assert budget.allows()  # time is left
    spent = deadletter.Budget(0.0)
    assert spent.allows()  # the round's first task always begins
    spent.worked = True
    assert not spent.allows() and spent.wait() == deadletter.MIN_WAIT_S

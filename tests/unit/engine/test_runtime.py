"""The Runtime's cache of assembled pipelines under several threads: one assembly per
pipeline when threads ask together, and none cached from a definition that changed
while it was being assembled."""

import threading
import time
from types import SimpleNamespace

import pytest

from sparkpipes.config import PipelineSpec
from sparkpipes.engine import runtime as runtime_mod
from sparkpipes.engine.runtime import Runtime


class FakePipelines:
    def __init__(self) -> None:
        self.definition = {"v": 1}
        self.reading = None  # called while a definition is read

    def get(self, name):
        rec = SimpleNamespace(id=f"id-{name}", definition=dict(self.definition))
        if self.reading is not None:
            self.reading()
        return rec

    def credentials(self, name):
        return {}


class FakeCatalog:
    def __init__(self) -> None:
        self.pipelines = FakePipelines()
        self.tables = SimpleNamespace(get=lambda name: None, reserve_ids=None)


class FakeRunner:
    built: list["FakeRunner"] = []

    def __init__(self, assembled, catalog, session) -> None:
        self.spec = assembled
        self.closed = False
        FakeRunner.built.append(self)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def rt(tmp_path, monkeypatch):
    FakeRunner.built = []
    monkeypatch.setattr(
        PipelineSpec,
        "from_json",
        staticmethod(
            lambda d, creds: SimpleNamespace(table="t", sink=SimpleNamespace(kind="delta"), **d)
        ),
    )
    monkeypatch.setattr(runtime_mod, "assemble", lambda spec, pid, table, session, **kw: spec)
    monkeypatch.setattr(runtime_mod, "BatchRunner", FakeRunner)
    return Runtime(str(tmp_path), FakeCatalog())


def test_threads_asking_together_share_one_assembled_pipeline(rt):
    rt.catalog.pipelines.reading = lambda: time.sleep(0.05)  # all of them miss the cache
    got = []
    threads = [threading.Thread(target=lambda: got.append(rt.runner("p"))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in got}) == 1 and not got[0].closed
    assert all(r.closed for r in FakeRunner.built if r is not got[0])  # the extra ones


def test_an_assembly_overtaken_by_a_change_is_not_cached(rt):
    def altered_meanwhile():  # ALTER PIPELINE commits and forgets while p is assembled
        rt.catalog.pipelines.reading = None
        rt.catalog.pipelines.definition = {"v": 2}
        rt.forget("p")

    rt.catalog.pipelines.reading = altered_meanwhile
    runner = rt.runner("p")
    assert runner.spec.v == 2
    assert rt.runner("p") is runner
    stale = FakeRunner.built[0]
    assert stale.spec.v == 1 and stale.closed

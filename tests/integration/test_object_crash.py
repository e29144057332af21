"""Crash test for object pipelines: a child process loading a directory of objects (small
ones packed into tasks, a large one split across tasks) SIGKILLs itself at every step of
the commit protocol in turn, while new objects keep arriving; after each kill the table
holds no record twice, and after a last clean run every record of every object is there
exactly once and every object is Loaded."""

from __future__ import annotations

import json
import signal
import textwrap
from collections import Counter

import pytest

from sparkpipes.engine.faults import POINTS
from tests.integration.children import finish, spawn

pytestmark = [pytest.mark.timeout(900)]

PER_OBJECT = 400
CHILD = textwrap.dedent(
    """
    import sys
    from sparkpipes import Engine
    warehouse, data = sys.argv[1:]
    eng = Engine(warehouse, spark_master="local[2]")
    if "t" not in eng.tables():
        eng.create_table("t", "id BIGINT, __source_partition STRING, __source_offset BIGINT")
        eng.create_pipeline("p", source="fs", location=data + "/*.json", table="t",
                            provenance=True, max_partitions_per_batch=3,
                            config={"min_split_bytes": 1 << 14})  # split the large object
    while eng.run_batch("p").state != "NoData":
        pass
    eng.close()
    """
)


def _write(data, name: str, ids) -> None:
    (data / name).write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))


def _run(warehouse, data, crash_at: str | None) -> int:
    return finish(spawn(CHILD, warehouse, data, crash_at=crash_at))


def _ids(warehouse) -> Counter:
    from deltalake import DeltaTable

    path = warehouse / "tables" / "t"
    if not (path / "_delta_log").exists():
        return Counter()
    return Counter(DeltaTable(str(path)).to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def test_objects_survive_a_kill_at_every_commit_step(tmp_path):
    data, warehouse = tmp_path / "data", tmp_path / "wh"
    data.mkdir()
    _write(data, "big.json", range(100_000, 106_000))  # about 80 KiB: split into ranges
    expected = set(range(100_000, 106_000))
    for n in range(6):
        _write(data, f"s{n:02d}.json", range(n * PER_OBJECT, (n + 1) * PER_OBJECT))
        expected |= set(range(n * PER_OBJECT, (n + 1) * PER_OBJECT))
    for k, point in enumerate(POINTS):
        code = _run(warehouse, data, f"{point}:1")
        assert code == -signal.SIGKILL, f"the child did not crash at {point}"
        seen = _ids(warehouse)
        twice = [i for i, c in seen.items() if c > 1]
        assert not twice, f"after a kill at {point}: {len(twice)} ids twice, e.g. {twice[:5]}"
        n = 6 + k  # an object arrives while the pipeline is down
        _write(data, f"s{n:02d}.json", range(n * PER_OBJECT, (n + 1) * PER_OBJECT))
        expected |= set(range(n * PER_OBJECT, (n + 1) * PER_OBJECT))
    _run(warehouse, data, None)
    seen = _ids(warehouse)
    assert set(seen) == expected and max(seen.values()) == 1

    from sparkpipes import Engine

    eng = Engine(str(warehouse))
    try:
        files = eng.information_schema("PIPELINES_FILES").to_pylist()
        assert len(files) == 11 and {f["FILE_STATE"] for f in files} == {"Loaded"}
    finally:
        eng.close()

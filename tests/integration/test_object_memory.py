"""An object larger than a task's memory bound loads in bounded memory.

The bound (``sources.framing``): a task holds one read block (4 MiB) of the object, the
rows decoded from it, and at most ``file_rows`` decoded rows before it writes them out.
Here a task (``run_task``, in a fresh process so its peak resident memory is its own)
reads a 256 MiB NDJSON object with ``file_rows`` 50,000; its peak memory must stay far
below the object's size, and every record must reach the written files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    import pyarrow as pa, pyarrow.parquet as pq
    from sparkpipes.engine.batch.contract import Piece, TaskSpec
    from sparkpipes.engine.batch.task import run_task
    from sparkpipes.formats import build_decoder
    from sparkpipes.sinks.parquet import ParquetWriter
    from sparkpipes.sources import build_source

    path, out = sys.argv[1:]
    schema = pa.schema([("id", pa.int64()), ("pad", pa.string())])
    decoder = build_decoder("json", schema)
    source = build_source("fs", path, {}, {}).framed(decoder.framing())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    spec = TaskSpec(
        pipeline="p", pipeline_id="x", batch_id=1, pieces=(Piece(path, {"byte": 0}),),
        source=source, decoder=decoder, writer=ParquetWriter(out, schema, "t"),
        max_records=1_000, fetch_timeout_s=0.1, skip_parser_errors=False, skip_constraint_errors=False,
        out_of_range="fail", provenance=False, whole=True, file_rows=50_000,
    )
    r = run_task(spec)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert r.failure is None, r.failure
    print(json.dumps({
        "rows": r.rows, "files": len(r.staged), "end": r.pieces[0].end,
        "growth_mib": (peak - before) / 1024, "written": sum(s.num_records for s in r.staged),
    }))
    """
)


def _object(path, mib: int) -> int:
    line = '{"id": %d, "pad": "' + "x" * 200 + '"}\n'
    n = 0
    with open(path, "w") as f:
        while f.tell() < mib << 20:
            f.write("".join(line % i for i in range(n, n + 10_000)))
            n += 10_000
    return n


def _load(tmp_path, name: str, mib: int) -> dict:
    path = tmp_path / name
    n = _object(path, mib)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(tmp_path / f"out-{name}")],
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    got = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert got["rows"] == got["written"] == n and got["end"] == {"byte": path.stat().st_size}
    assert got["files"] >= n // 100_000  # written out as it went, not held
    path.unlink()
    return got


def test_an_object_larger_than_the_bound_loads_in_bounded_memory(tmp_path):
    small = _load(tmp_path, "small.json", 64)
    huge = _load(tmp_path, "huge.json", 256)
    # four times the object, the same memory: what a task holds does not grow with it
    assert huge["growth_mib"] - small["growth_mib"] < 32, (small, huge)
    assert huge["growth_mib"] < 160, huge  # and it is well below the 256 MiB object

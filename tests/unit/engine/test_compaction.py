"""Background compaction's size tiers, on a real delta-rs table: a steady stream of small
batch files is packed without rewriting the packed files with every round."""

import json
import random

import pyarrow as pa
from deltalake import DeltaTable

from sparkpipes.sinks import DeltaSink
from sparkpipes.sinks.delta.maintenance import CompactionPolicy, compact, tiers

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def test_tiers_are_sixteen_times_apart_down_to_the_smallest():
    assert tiers(128 << 20) == [32 << 10, 512 << 10, 8 << 20, 128 << 20]
    assert tiers(1024) == [1024]


def test_a_steady_stream_of_batch_files_is_packed_about_once_per_tier(tmp_path):
    """300 batch files of ~8 KiB, a round after each: rows intact, few files, and the
    bytes compaction wrote stay a small multiple of the bytes loaded (bin-packing to the
    target each time rewrote the growing file every 16 batches: ~9x here)."""
    sink = DeltaSink(str(tmp_path / "t"), SCHEMA, "t")
    sink.create()
    policy = CompactionPolicy(target_bytes=8 << 20, files=16)
    assert tiers(policy.target_bytes) == [32 << 10, 512 << 10, 8 << 20]
    rng = random.Random(7)
    loaded = written = rounds = 0
    for b in range(300):
        ids = list(range(b * 500, (b + 1) * 500))
        f = sink.write_file(
            pa.table({"id": ids, "v": [rng.getrandbits(62) for _ in ids]}, schema=SCHEMA),
            f"part-b{b}",
        )
        sink.commit_files([f])
        loaded += f.size
        metrics = compact(sink.uri, "t", policy)
        if metrics:
            rounds += 1
            written += json.loads(metrics["filesAdded"])["totalSize"]
    dt = DeltaTable(sink.uri)
    assert sorted(dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist()) == list(
        range(300 * 500)
    )
    assert rounds >= 18
    assert written < 3 * loaded, (written, loaded)
    assert len(dt.file_uris()) < 2 * 16


def test_no_tier_starves_while_batch_files_keep_coming(tmp_path):
    """Four files per batch and a round every ten batches (a pipeline's partitions and
    the housekeeper's cadence): the smallest tier is crowded every round, and the tiers
    above are packed all the same, so the files stay few."""
    sink = DeltaSink(str(tmp_path / "t"), SCHEMA, "t")
    sink.create()
    policy = CompactionPolicy(target_bytes=8 << 20, files=16)
    rng = random.Random(7)
    most = 0
    for b in range(200):
        files = []
        for p in range(4):
            ids = list(range((b * 4 + p) * 1000, (b * 4 + p + 1) * 1000))
            data = pa.table({"id": ids, "v": [rng.getrandbits(62) for _ in ids]}, schema=SCHEMA)
            files.append(sink.write_file(data, f"part-b{b}-p{p}"))
        sink.commit_files(files)
        if b % 10 == 9:
            compact(sink.uri, "t", policy)
            most = max(most, len(DeltaTable(sink.uri).file_uris()))
    dt = DeltaTable(sink.uri)
    assert sorted(dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist()) == list(
        range(800 * 1000)
    )
    assert most < 3 * 16, most

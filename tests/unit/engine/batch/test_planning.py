"""How a batch is cut into tasks: streams rotate through their partitions; objects are
split and packed so that tasks get similar bytes (seed 004's skewed case), or one whole
object per task when packing is off."""

import itertools

from sparkpipes.engine.batch.planning import MIN_TASK_BYTES, Pending, object_tasks, stream_tasks
from sparkpipes.sources import build_source
from sparkpipes.sources.avro_framing import AvroFraming
from sparkpipes.sources.framing import ParquetFraming

MB = 1 << 20


def _objects(sizes):
    return [Pending(f"/d/{i:03d}.json", {"byte": 0}, {"byte": s}, s) for i, s in enumerate(sizes)]


def _loads(tasks):
    return sorted(sum((p.stop or p.watermark)["byte"] - p.start["byte"] for p in t) for t in tasks)


def test_streams_rotate_through_their_partitions_within_the_width():
    items = [Pending(str(i), 0, 10, None) for i in range(5)]
    seen = {tuple(t[0].partition for t in stream_tasks(items, 2, b)) for b in range(1, 4)}
    assert len(seen) == 3 and all(len(s) == 2 for s in seen)
    assert len(stream_tasks(items, None, 1)) == 5


def test_streams_with_less_room_than_partitions_read_every_partition_in_shared_tasks():
    items = [Pending(str(i), 0, 10, None) for i in range(5)]
    tasks = stream_tasks(items, None, 7, slots=2)
    assert [[p.partition for p in t] for t in tasks] == [["0", "2", "4"], ["1", "3"]]
    # the pipeline's MAX_PARTITIONS_PER_BATCH still rotates; the room only packs
    tasks = stream_tasks(items, 4, 1, slots=2)
    assert len(tasks) == 2 and sorted(p.partition for t in tasks for p in t) == ["0", "1", "2", "4"]
    groups = {"0": 0, "1": 0, "2": 1, "3": 1, "4": 2}  # a connector's tasks stay whole
    tasks = stream_tasks(items, None, 1, groups, slots=2)
    assert [[p.partition for p in t] for t in tasks] == [["0", "1", "4"], ["2", "3"]]


def test_one_large_object_among_small_ones_is_split_and_the_tasks_balanced():
    fs = build_source("fs", "/d/*.json", {}, {})
    sizes = [100 * MB] + [1 * MB] * 100
    tasks = object_tasks(fs, _objects(sizes), 4)
    assert len(tasks) == 4
    loads = _loads(tasks)
    assert loads[-1] - loads[0] <= 2 * MB  # within about one small object of each other
    big = [p for t in tasks for p in t if p.partition == "/d/000.json"]
    assert len(big) > 1 and big[0].start == {"byte": 0}
    assert all(p.start.get("split") for p in big[1:])
    cuts = sorted((p.start["byte"], (p.stop or {"byte": 100 * MB})["byte"]) for p in big)
    assert cuts[0][0] == 0 and cuts[-1][1] == 100 * MB
    assert all(a[1] == b[0] for a, b in itertools.pairwise(cuts))  # contiguous, no overlap


def test_without_packing_each_task_reads_one_whole_object_as_in_seed_004():
    fs = build_source("fs", "/d/*.json", {"packing": False}, {})
    tasks = object_tasks(fs, _objects([100 * MB] + [1 * MB] * 100), 4, packing=fs.packing)
    assert [len(t) for t in tasks] == [1, 1, 1, 1]
    assert all(t[0].stop is None for t in tasks)


def test_only_splittable_objects_are_split():
    fs = build_source("fs", "/d/*", {}, {})
    items = [
        Pending("/d/a.json.gz", {"byte": 0}, {"byte": 200 * MB}, 200 * MB),
        Pending("/d/b.json", {"byte": 0}, {"byte": 4 * MB}, 4 * MB),
    ]
    tasks = object_tasks(fs, items, 4)
    assert sorted(len(t) for t in tasks) == [1, 1]  # gzip cannot be split
    avro = Pending("/d/c.avro", {"byte": 0}, {"byte": 64 * MB}, 64 * MB)
    assert len(object_tasks(fs.framed(AvroFraming()), [avro], 4)) == 1
    parquet = fs.framed(ParquetFraming())
    big = Pending("/d/d.parquet", {"byte": 0}, {"byte": 64 * MB}, 64 * MB)
    assert len(object_tasks(parquet, [big], 4)) == 4


def test_a_batch_takes_objects_up_to_its_byte_budget_and_at_least_one():
    from sparkpipes.engine.batch.planning import TASK_BYTES

    fs = build_source("fs", "/d/*.json", {}, {})
    huge = _objects([3 * TASK_BYTES, MB])
    tasks = object_tasks(fs, huge, 2)
    names = {p.partition for t in tasks for p in t}
    assert names == {"/d/000.json"}  # the next object waits for the next batch
    assert len(object_tasks(fs, _objects([MIN_TASK_BYTES // 2] * 3), 8)) == 3

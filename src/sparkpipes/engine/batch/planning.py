"""How a batch's reading is cut into Spark tasks (step 1 of the commit protocol).

Streams (Kafka): one task per partition, at most MAX_PARTITIONS_PER_BATCH partitions per
batch, rotating by batch id so that every partition gets its turn; when the batch has
room for fewer tasks than that, partitions share tasks (each read in turn).

Objects (files): seed 004 gives each batch partition one object, and admits that one
large object beside small ones leaves the other partitions idle. Here a batch takes the
pending objects in name order until it has ``width`` times ``TASK_BYTES`` of them (at least
one); objects larger than an even share are split into byte ranges where the format
allows (lines, Parquet row groups), and the pieces are packed into ``width`` tasks,
largest first onto the least loaded task (LPT), so tasks get similar bytes. With
``packing`` off (the source's CONFIG), each task reads one whole object, as in seed 004.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkpipes.engine.batch.contract import Piece, PieceResult
from sparkpipes.sources import Source

TASK_BYTES = 256 << 20
MIN_TASK_BYTES = 8 << 20


@dataclass(frozen=True)
class Pending:
    """A partition with something to read: from ``start`` up to ``watermark``, about
    ``size`` bytes (None: the source cannot tell)."""

    partition: str
    start: Any
    watermark: Any
    size: int | None


def stream_tasks(
    items: Sequence[Pending],
    width: int | None,
    batch_id: int,
    groups: Mapping[str, int] | None = None,
    slots: int | None = None,
) -> list[list[Piece]]:
    """One task per partition, or per group of partitions where the source groups them
    (``groups``: partition → task, a connector's assignment); with more of them than
    ``width`` (the pipeline's MAX_PARTITIONS_PER_BATCH), a window that moves on with every
    batch. With more tasks than ``slots`` (the batch's room on the cluster), they are
    dealt into ``slots`` tasks that read their partitions in turn, so every partition is
    read in every batch rather than every other one (its records would otherwise wait a
    batch longer)."""
    tasks: dict[Any, list[Piece]] = {}
    for p in items:
        key = groups.get(p.partition, p.partition) if groups else p.partition
        tasks.setdefault(key, []).append(Piece(p.partition, p.start, None, p.watermark))
    chosen = list(tasks.values())
    if width is not None and len(chosen) > width:
        shift = (batch_id * width) % len(chosen)
        chosen = (chosen[shift:] + chosen[:shift])[:width]
    if slots is not None and len(chosen) > slots:
        dealt: list[list[Piece]] = [[] for _ in range(max(1, slots))]
        for i, task in enumerate(chosen):
            dealt[i % len(dealt)].extend(task)
        chosen = dealt
    return chosen


def object_tasks(
    source: Source, items: Sequence[Pending], width: int, *, packing: bool = True
) -> list[list[Piece]]:
    """Tasks for the pending objects ``items`` (in name order) on ``width`` cluster
    partitions; see the module docstring."""
    width = max(1, width)
    if not packing:
        return [[Piece(p.partition, p.start, None, p.watermark)] for p in items[:width]]
    budget = width * TASK_BYTES
    chosen: list[Pending] = []
    total = 0
    for p in items:
        if chosen and total + (p.size or 0) > budget:
            break
        chosen.append(p)
        total += p.size or 0
    floor = getattr(source, "min_split", MIN_TASK_BYTES)  # CONFIG min_split_bytes
    target = max(floor, -(-total // width))
    pieces: list[tuple[int, int, Piece]] = []
    for order, p in enumerate(chosen):
        ranges = source.split(p.partition, p.start, p.watermark, p.size, target)
        share = (p.size or 0) // len(ranges)
        for lo, hi in ranges:
            pieces.append((share, order, Piece(p.partition, lo, hi, p.watermark)))
    bins = min(width, len(pieces))
    heap = [(0, i) for i in range(bins)]
    tasks: list[list[tuple[int, Piece]]] = [[] for _ in range(bins)]
    for share, order, piece in sorted(pieces, key=lambda x: (-x[0], x[1])):
        load, i = heapq.heappop(heap)
        tasks[i].append((order, piece))
        heapq.heappush(heap, (load + share, i))
    return [[piece for _, piece in sorted(t, key=lambda x: x[0])] for t in tasks if t]


def driver_sized(tasks: Sequence[Sequence[Piece]], max_records: int, limit: int) -> bool:
    """Whether a stream batch certainly reads at most ``limit`` records: every piece's
    offsets are record counts (Kafka's), each partition read up to its watermark or
    ``max_records``. Such a batch costs less in the engine's process than a Spark job's
    fixed cost (scheduling, a Python worker's round trip: about half a second), which
    otherwise dominates small batches and makes many pipelines cost per batch, not per
    record. ``limit`` 0: never."""
    if limit <= 0:
        return False
    total = 0
    for task in tasks:
        for p in task:
            if p.stop is not None or type(p.start) is not int or type(p.watermark) is not int:
                return False
            total += min(max(0, p.watermark - p.start), max_records or p.watermark - p.start)
            if total > limit:
                return False
    return True


def caught_up(source: Source, watermarks: Mapping[str, Any], pieces: Sequence[PieceResult]) -> bool:
    """Whether every piece read was drained or read to its partition's planned watermark:
    all there was when the batch was planned is loaded (what the scheduler paces on)."""
    return all(
        p.drained
        or (
            watermarks.get(p.partition) is not None
            and source.reached(p.end, watermarks[p.partition])
        )
        for p in pieces
    )

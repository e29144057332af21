"""``stream.kafka.partition.ids``: the partitions of the topic a table reads, as Pinot's
``KafkaPartitionSubsetUtils`` reads them."""

from __future__ import annotations

import re

from sparkpipes.errors import ConfigError

#: the most partitions ``partition.ids`` may name (Pinot's guard against a typo's range)
MAX_PARTITION_IDS = 10_000


def partition_ids(value: str | None, p: str, where: str) -> tuple[int, ...] | None:
    """``stream.kafka.partition.ids`` as Pinot's ``KafkaPartitionSubsetUtils`` reads it:
    ids and inclusive ranges, comma-separated (``"0-99,200,300-399"``), deduplicated and
    sorted, at most 10,000; blank (or only commas) is every partition."""
    if value is None or not value.strip():
        return None
    key = f"{p}partition.ids"
    ids: set[int] = set()
    for part in (x.strip() for x in value.split(",")):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)|(\d+)", part)
        if m is None:
            raise ConfigError(
                f"{where}: {key} must be partition ids and ranges (e.g. 0-99,200), got "
                f"'{value}' ('{part}' is neither)"
            )
        low, high = (int(m[1]), int(m[2])) if m[3] is None else (int(m[3]), int(m[3]))
        if low > high:
            raise ConfigError(f"{where}: {key}: range start must be <= end in '{part}'")
        if len(ids) + high - low + 1 > MAX_PARTITION_IDS:
            raise ConfigError(
                f"{where}: {key} names more than {MAX_PARTITION_IDS} partitions (as Pinot, "
                "a guard against a mistyped range)"
            )
        ids.update(range(low, high + 1))
    return tuple(sorted(ids)) if ids else None

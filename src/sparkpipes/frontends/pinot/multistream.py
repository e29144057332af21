"""Several streams into one REALTIME table: ``ingestionConfig.streamIngestionConfig.
streamConfigMaps`` with more than one stream config, as Pinot reads it.

What Pinot promises and requires (``IngestionConfigUtils``, ``TableConfigUtils.
validateStreamConfigMaps`` in apache/pinot), and so sparkpipes:

* every stream config is checked on its own, as a single one is; each problem is reported
  at its own path (``streamConfigMaps[i].key``), all at once;
* with more than one: all have the same ``streamType``; the segment flush thresholds are
  the same in all (one table, one flush policy: here, one compaction policy); no topic is
  named twice (even on different brokers); the table is not an upsert table, and
  ``pauselessConsumptionEnabled`` is not set. Each is Pinot's own refusal, in its words.
  The decoders may differ (Pinot does not check them); every stream loads the same
  schema. Dedup and ingestion aggregation are allowed, as in Pinot; here they hold
  across the whole table, since each batch's MERGE is checked against every other
  writer's commits (``sinks.delta``);
* a stream's partition is known to Pinot as ``index * 10000 + partition``
  (``PARTITION_PADDING_OFFSET``), so partitions of different streams never collide;
  :func:`pinot_partition` gives that id wherever a table's partitions are shown.

Each stream becomes its own pipeline into the one table (:func:`pipeline_names`), each
committing its own batches exactly once under its own app transaction — as Pinot gives
each stream partition its own consuming segment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkpipes.frontends.pinot.problems import Problems
from sparkpipes.frontends.pinot.stream import StreamConfig

#: Pinot's ``IngestionConfigUtils.PARTITION_PADDING_OFFSET``
PARTITION_PADDING_OFFSET = 10000

WHERE = "ingestionConfig.streamIngestionConfig.streamConfigMaps"


def pipeline_names(table: str, streams: int) -> tuple[str, ...]:
    """The pipelines of a table with ``streams`` streams, in stream order: one stream is
    ``<table>_REALTIME`` (Pinot's physical table name, as it always was); several are
    ``<table>_REALTIME_<index>``. No table's names can be another's: a single stream's
    name always ends in ``_REALTIME``."""
    if streams <= 1:
        return (f"{table}_REALTIME",)
    return tuple(f"{table}_REALTIME_{i}" for i in range(streams))


def pinot_partition(index: int, partition: Any, streams: int) -> Any:
    """Pinot's id of partition ``partition`` of stream ``index``: ``index * 10000 +
    partition`` when the table has several streams, the partition itself otherwise (as
    Pinot skips the translation for one stream). A partition that is not a number (a
    Kinesis shard id) is shown as it is."""
    try:
        number = int(partition)
    except (TypeError, ValueError):
        return partition
    return index * PARTITION_PADDING_OFFSET + number if streams > 1 else number


# -- Pinot's rules for several streams ------------------------------------------------------
Rule = Callable[[Sequence[StreamConfig], Mapping[str, Any], str], tuple[str, str] | None]


def _same_type(streams: Sequence[StreamConfig], doc: Mapping[str, Any], table: str):
    types = {s.stream_type for s in streams}
    if len(types) > 1:
        return WHERE, (
            f"table '{table}': All streamConfigs must have the same stream type (Pinot's "
            f"rule), got {', '.join(s.stream_type for s in streams)}"
        )
    return None


def _same_flush(streams: Sequence[StreamConfig], doc: Mapping[str, Any], table: str):
    first = streams[0].flush
    for i, s in enumerate(streams[1:], start=1):
        if s.flush != first:
            return f"{WHERE}[{i}]", (
                f"table '{table}': Segment flush parameters must be consistent across all "
                "streamConfigs (Pinot's rule): realtime.segment.flush.threshold.* of "
                f"streamConfigMaps[{i}] differ from streamConfigMaps[0]'s"
            )
    return None


def _distinct_topics(streams: Sequence[StreamConfig], doc: Mapping[str, Any], table: str):
    seen: set[str] = set()
    for i, s in enumerate(streams):
        if s.topic in seen:
            return f"{WHERE}[{i}]", (
                f"table '{table}': Duplicate topic names found in streamConfigs: {s.topic} "
                "(Pinot's rule, even on different brokers)"
            )
        seen.add(s.topic)
    return None


def _not_upsert(streams: Sequence[StreamConfig], doc: Mapping[str, Any], table: str):
    upsert = doc.get("upsertConfig")
    if isinstance(upsert, Mapping) and str(upsert.get("mode", "FULL")).upper() != "NONE":
        return "upsertConfig", (
            f"table '{table}': Multiple stream configs are not supported for upsert table "
            "(Pinot's rule): give one stream config, or no upsertConfig"
        )
    return None


def _not_pauseless(streams: Sequence[StreamConfig], doc: Mapping[str, Any], table: str):
    sic = (doc.get("ingestionConfig") or {}).get("streamIngestionConfig") or {}
    if isinstance(sic, Mapping) and str(sic.get("pauselessConsumptionEnabled")).lower() == ("true"):
        return "ingestionConfig.streamIngestionConfig.pauselessConsumptionEnabled", (
            f"table '{table}': Multiple stream configs are not supported with pauseless "
            "consumption enabled (Pinot's rule)"
        )
    return None


#: what several streams must satisfy, each Pinot's own check
RULES: tuple[Rule, ...] = (_same_type, _same_flush, _distinct_topics, _not_upsert, _not_pauseless)


def check(
    streams: Sequence[StreamConfig], doc: Mapping[str, Any], table: str, found: Problems
) -> None:
    """Add a problem for each of Pinot's rules that ``streams`` (more than one, each
    loaded without problems) break."""
    if len(streams) < 2:
        return
    for rule in RULES:
        broken = rule(streams, doc, table)
        if broken is not None:
            found.add(*broken)

"""``realtime.segment.flush.*`` as Pinot reads them (``StreamConfig``): when a partition's
small files are compacted into one segment-sized file here, as Pinot flushes a consuming
segment.

Pinot's names and their meaning, which this follows key by key:

* ``…threshold.rows`` — a ROW count; ``…threshold.size`` is its older name (Pinot calls it
  ``DEPRECATED_SEGMENT_FLUSH_THRESHOLD_ROWS``: a size in rows, not bytes). The
  ``.llc``-suffixed forms of both (the low-level consumer's own value) come first. 0 means
  the segment size decides.
* ``…threshold.segment.rows`` — rows too, read when none of the above is given.
* ``…threshold.segment.size`` (older name ``…desired.size``) — the segment's size in bytes
  (``150M``), used when the row threshold is 0.
* ``…threshold.time`` (``.llc`` first) — the longest a segment stays open (``6h``).

A row count or time Pinot cannot read (``"100M"`` rows, ``"1min"``) makes Pinot log a
warning and use its default (5,000,000 rows; 6 hours); so does this, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparkpipes.errors import ConfigError

_DURATION = re.compile(r"(?i)^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_PERIOD = re.compile(r"(?i)^\s*(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?\s*$")
_SIZE = re.compile(r"(?i)^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*$")
PRE = "realtime.segment.flush."
#: the row threshold's keys, first given wins (Pinot's ``extractFlushThresholdRows``)
ROW_KEYS = tuple(
    PRE + k
    for k in (
        "threshold.rows.llc",
        "threshold.size.llc",
        "threshold.rows",
        "threshold.size",
        "threshold.segment.rows",
    )
)
TIME_KEYS = (PRE + "threshold.time.llc", PRE + "threshold.time")
SIZE_KEYS = (PRE + "threshold.segment.size", PRE + "desired.size")
INITIAL_ROWS = PRE + "autotune.initialRows"
KEYS = (*ROW_KEYS, *TIME_KEYS, *SIZE_KEYS, INITIAL_ROWS)
DEFAULT_TIME_MS = 6 * 3_600_000
DEFAULT_ROWS = 5_000_000  # Pinot's DEFAULT_FLUSH_THRESHOLD_ROWS, for a value it cannot read


@dataclass(frozen=True)
class FlushThresholds:
    """When a partition's small files are compacted into segment-sized ones. ``rows`` 0
    (or absent) means size-driven."""

    rows: int = 0
    time_ms: int = DEFAULT_TIME_MS
    segment_bytes: int = 200 * 1024 * 1024
    initial_rows: int = 100_000  # Pinot's segment-size tuner's first guess


def parse_duration_ms(text: str, where: str) -> int:
    """``24h``, ``6h``, ``90m``, ``30s``, ``500ms``, ``2d`` (no unit: milliseconds)."""
    m = _DURATION.match(text)
    if not m:
        raise ConfigError(f"{where} must be a duration such as 6h, 30m or 24h, got '{text}'")
    unit = (m.group(2) or "ms").lower()
    scale = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[unit]
    return int(m.group(1)) * scale


def parse_size(text: str, where: str) -> int:
    """``50M``, ``500M``, ``1G``, ``200MB`` (no unit: bytes)."""
    m = _SIZE.match(text)
    if not m:
        raise ConfigError(f"{where} must be a size such as 50M or 1G, got '{text}'")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def _period_ms(text: str) -> int | None:
    """Pinot's ``TimeUtils.convertPeriodToMillis`` (``1d2h30m``, ``6h``), else a whole
    number of milliseconds; None for anything else."""
    if text.strip().isdigit():
        return int(text)
    m = _PERIOD.match(text)
    if not m or not any(m.groups()):
        return None
    scales = (86_400_000, 3_600_000, 60_000, 1000, 1)
    return sum(int(g or 0) * s for g, s in zip(m.groups(), scales, strict=True))


def flush_thresholds(given: Mapping[str, str], where: str, notes: list[str]) -> FlushThresholds:
    """The thresholds of a streamConfigs map (values strings)."""
    rows = 0
    row_key = next((k for k in ROW_KEYS if k in given), None)
    if row_key is not None:
        text = given[row_key]
        if text.strip().isdigit():
            rows = int(text)
        else:
            rows = DEFAULT_ROWS
            notes.append(
                f"{row_key} '{text}' is not a whole number of rows: Pinot's default, "
                f"{DEFAULT_ROWS} rows, applies, as in Pinot"
            )
    time_ms = DEFAULT_TIME_MS
    time_key = next((k for k in TIME_KEYS if k in given), None)
    if time_key is not None:
        period = _period_ms(given[time_key])
        if period is None:
            notes.append(
                f"{time_key} '{given[time_key]}' is not a period Pinot reads (6h, 30m, "
                "1d2h): Pinot's default, 6h, applies, as in Pinot"
            )
        else:
            time_ms = period
    size_key = next((k for k in SIZE_KEYS if k in given), None)
    segment_bytes = FlushThresholds.segment_bytes
    if size_key is not None:
        segment_bytes = parse_size(given[size_key], f"{where}: {size_key}")
    initial = given.get(INITIAL_ROWS, str(FlushThresholds.initial_rows))
    if not initial.strip().isdigit():
        raise ConfigError(f"{where}: {INITIAL_ROWS} must be a whole number")
    return FlushThresholds(rows, time_ms, segment_bytes, int(initial))

"""The parts of a Pinot REALTIME table config that decide what a row is worth keeping:
``upsertConfig`` (FULL or PARTIAL, comparison columns, per-column strategies, delete
column), ``dedupConfig`` and the ``segmentsConfig`` retention. Checked against the table's
schema when it is known; every mistake is an error naming the table and the key, and keys
that only concern Pinot's servers are accepted and reported (:mod:`.keys`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.problems import Problems
from sparkpipes.frontends.pinot.units import TIME_UNITS_MS

if TYPE_CHECKING:
    from sparkpipes.frontends.pinot.schema import PinotSchema

UPSERT_KEYS = tuple(
    [
        "mode",
        "comparisonColumn",
        "comparisonColumns",
        "partialUpsertStrategies",
        "defaultPartialUpsertStrategy",
        "metadataTTL",
        "deleteRecordColumn",
    ]
)
PARTIAL_STRATEGIES = ("OVERWRITE", "IGNORE", "INCREMENT", "APPEND", "UNION", "MAX", "MIN")
RETENTION_UNITS = ("MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS")


@dataclass(frozen=True)
class UpsertConfig:
    """``upsertConfig``: FULL replaces the row with the same primary key, PARTIAL merges
    column by column. A record whose comparison value is smaller than the stored row's
    is ignored (ties: the later record wins); the time column is the default."""

    mode: str  # FULL, PARTIAL
    comparison: tuple[str, ...] = ()
    strategies: Mapping[str, str] = field(default_factory=dict)
    default_strategy: str = "OVERWRITE"
    delete_column: str | None = None


def retention_ms(seg: Mapping[str, Any], table: str) -> int | None:
    """``segmentsConfig`` retention in milliseconds; None when none is given."""
    unit, value = seg.get("retentionTimeUnit"), seg.get("retentionTimeValue")
    if not unit and not value:
        return None
    if not unit or not value:
        raise ConfigError(
            f"table '{table}': retention needs both retentionTimeUnit and retentionTimeValue"
        )
    if str(unit).upper() not in RETENTION_UNITS:
        raise ConfigError(
            f"table '{table}': retentionTimeUnit must be one of {', '.join(RETENTION_UNITS)}"
        )
    text = str(value)
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"table '{table}': retentionTimeValue must be a positive whole number")
    return int(text) * int(TIME_UNITS_MS[str(unit).upper()])


def upsert_config(
    d: Mapping[str, Any],
    schema: PinotSchema | None,
    time_column: str | None,
    table: str,
    found: Problems,
) -> UpsertConfig | None:
    u = d.get("upsertConfig")
    if not u:
        return None
    if not isinstance(u, dict):
        raise ConfigError(f"table '{table}': upsertConfig must be an object")
    found.sort(u, UPSERT_KEYS, "upsertConfig", "upsertConfig")
    mode = str(u.get("mode", "FULL")).upper()
    if mode == "NONE":
        return None
    if mode not in ("FULL", "PARTIAL"):
        raise ConfigError(f"table '{table}': upsertConfig.mode must be FULL, PARTIAL or NONE")
    if schema is not None and not schema.primary_key:
        raise ConfigError(
            f"table '{table}': an upsert table needs primaryKeyColumns in schema '{schema.name}'"
        )
    comparison = u.get("comparisonColumns") or (
        [u["comparisonColumn"]] if u.get("comparisonColumn") else []
    )
    if not comparison and time_column:
        comparison = [time_column]
    strategies = {}
    for col, strat in (u.get("partialUpsertStrategies") or {}).items():
        if str(strat).upper() not in PARTIAL_STRATEGIES:
            raise ConfigError(
                f"table '{table}': partial upsert strategy {strat!r} of column '{col}' is not "
                f"one of {', '.join(PARTIAL_STRATEGIES)}"
            )
        strategies[col] = str(strat).upper()
    default = str(u.get("defaultPartialUpsertStrategy", "OVERWRITE")).upper()
    if default not in PARTIAL_STRATEGIES:
        raise ConfigError(
            f"table '{table}': defaultPartialUpsertStrategy must be one of "
            f"{', '.join(PARTIAL_STRATEGIES)}"
        )
    if schema is not None:
        for c in [*comparison, *strategies]:
            schema.field(c)
        if u.get("deleteRecordColumn"):
            schema.field(u["deleteRecordColumn"])
        for c in strategies:
            if c in schema.primary_key:
                raise ConfigError(
                    f"table '{table}': primary key column '{c}' cannot have a partial upsert "
                    "strategy"
                )
    return UpsertConfig(
        mode=mode,
        comparison=tuple(comparison),
        strategies=strategies,
        default_strategy=default,
        delete_column=u.get("deleteRecordColumn") or None,
    )


def dedup_enabled(
    d: Mapping[str, Any], schema: PinotSchema | None, table: str, found: Problems
) -> bool:
    c = d.get("dedupConfig")
    if not c:
        return False
    if not isinstance(c, dict):
        raise ConfigError(f"table '{table}': dedupConfig must be an object")
    found.sort(c, ("dedupEnabled", "metadataTTL", "dedupTimeColumn"), "dedupConfig", "dedupConfig")
    enabled = bool(c.get("dedupEnabled", False))
    if (
        enabled
        and d.get("upsertConfig")
        and str(d["upsertConfig"].get("mode", "FULL")).upper() != "NONE"
    ):
        raise ConfigError(f"table '{table}': a table is either upsert or dedup, not both")
    if enabled and schema is not None and not schema.primary_key:
        raise ConfigError(
            f"table '{table}': a dedup table needs primaryKeyColumns in schema '{schema.name}'"
        )
    return enabled

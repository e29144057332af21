"""Engine variables (``SET GLOBAL`` / ``SHOW VARIABLES``), persisted in the catalog.

The pipeline defaults among them apply to pipelines created after they are set and that
do not give the option themselves (as SingleStore's engine variables do), whichever front
end defines the pipeline: :func:`pipeline_defaults` is the one mapping.
``pipelines_max_concurrent_batch_partitions`` caps the partitions (Spark tasks) of all
batches running at once, ``pipelines_max_concurrent`` the pipelines running batches at once
(``engine.admission``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkpipes.config import BatchSpec
from sparkpipes.errors import ConfigError
from sparkpipes.util.like import like as like  # SHOW … LIKE everywhere (linear time)

_BATCH = BatchSpec()


@dataclass(frozen=True)
class Variable:
    name: str
    default: Any
    kind: type
    doc: str


VARIABLES = {
    v.name: v
    for v in (
        Variable(
            "pipelines_batch_interval", _BATCH.interval_ms, int, "ms between batches of a pipeline"
        ),
        Variable(
            "pipelines_max_offsets_per_batch_partition",
            _BATCH.max_offsets_per_partition,
            int,
            "records one batch reads from one source partition",
        ),
        Variable(
            "pipelines_max_retries_per_batch_partition",
            _BATCH.max_retries,
            int,
            "retries of a batch that failed with a transient error",
        ),
        Variable(
            "pipelines_max_concurrent_batch_partitions",
            0,
            int,
            "source partitions all pipelines may read at once (0: one per Spark core)",
        ),
        Variable(
            "pipelines_driver_batch_records",
            50_000,
            int,
            "records at most (as the source's offsets count them) of a stream batch that "
            "runs in the engine's process instead of as a Spark job (0: every batch is one)",
        ),
        Variable(
            "pipelines_batch_gap_ms",
            750,
            int,
            "milliseconds at least from the start of a stream batch that loaded all there "
            "was to the start of the pipeline's next one (its BATCH_INTERVAL if shorter; "
            "0: at once)",
        ),
        Variable(
            "pipelines_max_concurrent",
            0,
            int,
            "pipelines running batches at once (0: as many as the partitions allow)",
        ),
        Variable(
            "pipelines_extractor_batch_size",
            _BATCH.chunk_records,
            int,
            "records a task fetches and decodes at a time",
        ),
        Variable(
            "pipelines_extractor_max_batch_interval_ms",
            _BATCH.fetch_timeout_ms,
            int,
            "ms a task waits for more records before it ends its batch",
        ),
        Variable(
            "pipelines_lease_ttl_ms",
            10_000,
            int,
            "ms an engine's lease on a pipeline lasts unrenewed (failover after a crash)",
        ),
        Variable(
            "pipelines_batches_metadata_to_keep",
            1000,
            int,
            "batches whose metadata the catalog keeps per pipeline (older ones are pruned)",
        ),
        Variable(
            "pipelines_errors_retention_minutes",
            1440,
            int,
            "minutes a pipeline's stored errors are kept",
        ),
        Variable(
            "table_maintenance_interval_ms",
            10_000,
            int,
            "ms between rounds of table maintenance (compaction, vacuum, history pruning)",
        ),
        Variable(
            "table_target_file_bytes",
            128 * 1024 * 1024,
            int,
            "size compaction packs a table's small files into (small: below half of it)",
        ),
        Variable(
            "table_compaction_min_files",
            16,
            int,
            "small files of one size tier (sizes within 16x) a table must have before "
            "compaction packs them (0: never)",
        ),
        Variable(
            "table_vacuum_interval_ms",
            3_600_000,
            int,
            "ms between vacuums of a table (0: never)",
        ),
        Variable(
            "table_vacuum_retain_hours",
            168,
            int,
            "hours an unreferenced data file is kept before vacuum deletes it (at least 1)",
        ),
        Variable(
            "table_log_retention_commits",
            20,
            int,
            "commits of a table's log kept before its last checkpoint (at least 1)",
        ),
        Variable(
            "table_checkpoint_interval",
            100,
            int,
            "most commits between Delta checkpoints of tables created from now on (a "
            "pipeline checkpoints sooner when that costs less than re-reading the log)",
        ),
        Variable(
            "max_execution_time",
            0,
            int,
            "ms a query (SELECT) may run before it is stopped, as MySQL's (0: no limit)",
        ),
        Variable("experimental_features_config", "", str, "comma-separated feature=true flags"),
    )
}


def coerce(name: str, value: Any) -> Any:
    key = name.lower()
    var = VARIABLES.get(key)
    if var is None:
        raise ConfigError(
            f"unknown system variable '{name}' (known: {', '.join(sorted(VARIABLES))})"
        )
    if var.kind is int:
        try:
            number = int(str(value).strip())
        except ValueError:
            raise ConfigError(f"variable '{name}' needs an integer, got {value!r}") from None
        if number < 0:
            raise ConfigError(f"variable '{name}' cannot be negative")
        return number
    return "" if value is None else str(value)


def resolve(stored: dict[str, str]) -> dict[str, Any]:
    """Every variable's current value: stored values over defaults."""
    return {
        name: coerce(name, stored[name]) if name in stored else var.default
        for name, var in sorted(VARIABLES.items())
    }


#: variable → the pipeline option it is the default of (Python API names)
PIPELINE_DEFAULTS = {
    "pipelines_batch_interval": "batch_interval_ms",
    "pipelines_max_offsets_per_batch_partition": "max_offsets_per_batch_partition",
    "pipelines_max_retries_per_batch_partition": "max_retries",
    "pipelines_extractor_max_batch_interval_ms": "fetch_timeout_ms",
    "pipelines_extractor_batch_size": "chunk_records",
}


def pipeline_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """Options a new pipeline takes from the variables when its definition (Python
    keyword arguments or SQL clauses alike) does not give them."""
    out = {opt: values[var] for var, opt in PIPELINE_DEFAULTS.items()}
    out["fetch_timeout_ms"] = max(1, out["fetch_timeout_ms"])
    out["chunk_records"] = max(1, out["chunk_records"])
    out["max_offsets_per_batch_partition"] = max(1, out["max_offsets_per_batch_partition"])
    return out

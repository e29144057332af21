"""``LOAD DATA KAFKACONNECT '<name>' CONFIG '{"connector.class": …}'``: a connector as a
sparkpipes source (see ``sources.connect.base`` for how the two models map).

Records arrive already in columns, the static schema of seed 000: ``topic`` (TEXT),
``id`` (JSON) and ``record`` (JSON), which ``FORMAT AVRO`` maps to table or procedure
columns (``(`topic` <- `topic`, `id` <- `id`, `record` <- `record`)``). A partition's id is
its source partition as compact JSON, and a record's position is its source offset as
compact JSON.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import pyarrow as pa

from sparkpipes.config import Secret, urls
from sparkpipes.config.core import reject_unknown
from sparkpipes.config.transforms import is_transform_key, parse_chain
from sparkpipes.errors import ConfigError, TransformError
from sparkpipes.sources.base import Fetched, Gap, MetadataProvider, PartitionConsumer, Source
from sparkpipes.sources.connect import framework, resolve, smt
from sparkpipes.sources.connect.base import (
    COMMON_KEYS,
    DEFAULT_TASKS_MAX,
    ConnectorConfig,
    PartitionReader,
    SourceConnector,
    compact,
)
from sparkpipes.sources.connect.smt.chain import Chain
from sparkpipes.sources.connect.smt.columns import transform

#: the columns every connector record has, in the static table's order
RECORD_SCHEMA = pa.schema(
    [pa.field("topic", pa.string()), pa.field("id", pa.string()), pa.field("record", pa.string())]
)

#: seed 000's static table of ``CREATE INFERRED PIPELINE``
STATIC_TABLE = (
    "CREATE TABLE `{name}` (`topic` TEXT NOT NULL, `id` JSON NOT NULL, `record` JSON NOT NULL, "
    "SORT KEY `__UNORDERED` (), SHARD KEY ())"
)


def _partition(pid: str) -> dict[str, Any]:
    return json.loads(pid)


class ConnectMetadata(MetadataProvider):
    """A connector's partitions. Connectors cannot count what is left (Kinesis knows
    only time behind the tip), so latest, lag and the watermark are unknown (None) and a
    batch reads each partition until a poll finds nothing."""

    def __init__(self, connector: SourceConnector) -> None:
        self.connector = connector

    def partitions(self) -> list[str]:
        return sorted(compact(p) for p in self.connector.partitions())

    def earliest(self, partition: str) -> Any:
        return self.connector.start_offset(_partition(partition), "earliest")

    def latest(self, partition: str) -> Any:
        return None

    def watermark(self, partition: str) -> Any:
        return None


class ConnectConsumer(PartitionConsumer):
    """One partition through the connector's reader; positions are offsets as JSON.

    With Single Message Transforms (``transforms``), each fetched chunk passes through
    the chain here, in the task: records a ``Filter`` drops are gone (not errors); a
    record a transform cannot process fails the batch, naming the transform and the
    record's offset, or with ``errors.tolerance=all`` is reported as skipped."""

    position_type = pa.string()

    def __init__(
        self,
        reader: PartitionReader,
        partition: str,
        chain: Chain | None = None,
        *,
        tolerate: bool = False,
        timestamps: bool = True,
    ) -> None:
        self.reader = reader
        self.partition = partition
        self.chain = chain
        self.tolerate = tolerate
        self.timestamps = timestamps
        self._offset: dict[str, Any] = {}

    def open(self, start: Any, stop: Any = None) -> Gap | None:
        self._offset = dict(start or {})
        self.reader.open(_partition(self.partition), self._offset)
        return None

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        polled = self.reader.poll(max_records, timeout_s)
        self._offset = dict(polled.offset)
        cols = polled.as_columns()
        rejected: tuple[tuple[Any, str, bytes | None], ...] = ()
        read = len(cols.offsets)
        if self.chain is not None:
            done = transform(self.chain, cols, timestamps=self.timestamps)
            if done.refused and not self.tolerate:
                first = done.refused[0]
                raise TransformError(
                    f"cannot transform the record at offset {first.position} of "
                    f"{self.partition}: {first.reason} (errors.tolerance=all skips such "
                    "records)",
                    partition=self.partition,
                    offset=first.position,
                )
            cols = done.columns
            rejected = tuple((r.position, r.reason, r.raw) for r in done.refused)
        return Fetched(
            values=pa.array([], pa.binary()),
            positions=cols.offsets,
            timestamps=cols.timestamps,
            at_end=polled.at_end,
            table=pa.Table.from_arrays([cols.topic, cols.id, cols.record], schema=RECORD_SCHEMA),
            rejected=rejected,
            dropped=read - len(cols.offsets) - len(rejected),
        )

    def position(self) -> Any:
        return dict(self._offset)

    def close(self) -> None:
        self.reader.close()


class KafkaConnectSource(Source):
    """A Kafka-Connect-style source connector, named by ``connector.class`` in CONFIG.

    The location is the connector's name (seed 000 writes ``'kafka-connector'``); CONFIG
    holds ``connector.class`` (required), ``tasks.max`` (default 4) and the connector's
    own keys. Keys the connector declares secret may be given in CONFIG (seed 000 puts
    the AWS keys there) or CREDENTIALS; either way they are stored and shown as
    credentials. The password inside a URL option reaches the connector as a secret
    (``ConnectorConfig.url`` puts it back), the option itself redacted."""

    name = "kafkaconnect"
    position_type = pa.string()
    structured = True
    feature = "kafka_connect_enabled"
    formats: ClassVar[tuple[str, ...]] = ("avro",)

    def __init__(
        self, location: str, config: Mapping[str, Any], credentials: Mapping[str, Secret]
    ) -> None:
        self.location = location
        cfg = dict(config)
        class_name = cfg.get("connector.class")
        if not isinstance(class_name, str) or not class_name.strip():
            raise ConfigError(
                "a KAFKACONNECT pipeline needs 'connector.class' in CONFIG: the fully "
                "qualified class name of the source connector, e.g. "
                "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector"
            )
        cls = resolve(class_name.strip())
        accepted, found = framework.sort(cfg, framework.SOURCE)
        accepted.update(cls.inapplicable(cfg))
        problems: list[tuple[str | None, str]] = list(found)
        # Single Message Transforms: parsed once here, built and checked (every option)
        chain, chain_problems = parse_chain({k: str(v) for k, v in cfg.items()})
        self.chain, more = smt.chain_of(chain, framework.SOURCE) if chain else (None, [])
        problems += [*chain_problems, *more]
        chain_keys = {k for k in cfg if is_transform_key(k)}
        tolerance = str(cfg.get("errors.tolerance", "none")).strip().lower()
        if chain and tolerance not in ("none", "all"):
            problems.append(
                ("errors.tolerance", f"errors.tolerance must be none or all, got '{tolerance}'")
            )
        self.tolerate = tolerance == "all"
        if chain:  # it decides about records a transform cannot process
            accepted.pop("errors.tolerance", None)
        secret = cls.secret_keys | {k for k in accepted if framework.is_secret(k)}
        known = COMMON_KEYS | cls.config_keys | secret | set(accepted)
        known |= chain_keys | ({"errors.tolerance"} if chain else set())
        refused = {k for k, _ in found}
        for key in (k for k in cfg if k not in known and k not in refused):
            near = difflib.get_close_matches(
                key, sorted(cls.config_keys | set(cls.not_applicable_keys)), n=1
            )
            problems.append(
                (
                    key,
                    f"unknown CONFIG key of {class_name} '{key}'"
                    + (f"; did you mean '{near[0]}'?" if near else ""),
                )
            )
        reject_unknown(
            [k for k in credentials if urls.option_of(k) not in cfg],
            secret,
            what=f"CREDENTIALS key of {class_name}",
        )
        usable = {k: v for k, v in cfg.items() if k in known and k not in chain_keys}
        secrets = {k: v if isinstance(v, Secret) else Secret(v) for k, v in credentials.items()}
        secrets.update({k: Secret(v) for k, v in usable.items() if k in secret})
        values = {k: v for k, v in usable.items() if k not in secret and k not in COMMON_KEYS}
        values = urls.lift(values, secrets, what=f"CONFIG key of {class_name}")
        self._given_secrets = {k for k in usable if k in secret}
        #: Connect's keys accepted as changing nothing here, and why (reported back)
        self.not_applicable = accepted
        try:
            tasks = _tasks_max(cfg.get("tasks.max", DEFAULT_TASKS_MAX))
            self.connector = cls(ConnectorConfig(class_name.strip(), tasks, values, secrets))
        except framework.ConnectConfigError as e:
            problems.extend(e.problems)
        except ConfigError as e:
            problems.append((framework.key_of(e.message, list(cfg)), e.message))
        if problems:
            raise framework.ConnectConfigError(problems, what=f"{class_name}")

    @classmethod
    def signs_in_as_server(cls, config: Mapping[str, Any], credentials: Mapping[str, Any]) -> bool:
        name = config.get("connector.class")
        if not isinstance(name, str) or not name.strip():
            return False  # refused as the pipeline is made
        return resolve(name.strip()).signs_in_as_server(config, credentials)

    # -- Source -------------------------------------------------------------------------
    def secret_config_keys(self) -> frozenset[str]:
        return frozenset(self._given_secrets)

    def inferred_table(self, name: str) -> str | None:
        return STATIC_TABLE.format(name=name.replace("`", "``"))

    def metadata(self, timeout_s: float | None = None) -> MetadataProvider:
        return ConnectMetadata(self.connector)

    def check(self) -> str:
        return self.connector.check()

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> PartitionConsumer:
        return ConnectConsumer(
            self.connector.reader(),
            partition,
            self.chain,
            tolerate=self.tolerate,
            timestamps=type(self.connector).record_timestamps,
        )

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> Any:
        return self.connector.start_offset(_partition(partition), policy)

    def ready(self, partitions: list[str], offsets: Mapping[str, Any]) -> list[str]:
        """Partitions a batch may read: not read to a final end, and in the order the
        connector requires (parents before children)."""
        live = [p for p in partitions if not self.connector.finished(offsets.get(p))]
        allowed = self.connector.ready([_partition(p) for p in live], offsets)
        return sorted(compact(p) for p in allowed)

    def assignment(self, partitions: list[str]) -> dict[str, int]:
        ordered = sorted(partitions)
        return dict(zip(ordered, self.connector.assign([_partition(p) for p in ordered])))

    def reached(self, offset: Any, latest: Any) -> bool:
        return latest is not None and offset == latest

    def partition_of(self, key: str) -> str:
        try:
            value = json.loads(key)
        except ValueError:
            raise ConfigError(
                f"{self.label()} names partitions by their JSON KEY (as "
                f"information_schema.PIPELINES_SOURCE_OFFSETS shows it), not '{key}'"
            ) from None
        return compact(value)

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return _partition(partition)

    def describe(self) -> Mapping[str, Any]:
        return {"source": self.name, "name": self.location, **self.connector.describe()}

    def label(self) -> str:
        return self.connector.label()

    def locate(self, partition: str, position: Any) -> str:
        return f"{self.label()} {self.connector.partition_noun} {partition} offset {position}"


def _tasks_max(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, str) and value.strip().isdigit():
        value, ok = int(value), True
    if not ok or value < 1:
        raise ConfigError(
            f"CONFIG key 'tasks.max' must be a positive integer (the connector tasks, "
            f"default {DEFAULT_TASKS_MAX}), got {json.dumps(value)}"
        )
    return value


def backoff(attempt: int, cap_s: float = 1.0) -> None:
    """Sleep before a retried source call: 50 ms doubling, at most ``cap_s``."""
    time.sleep(min(cap_s, 0.05 * (2**attempt)))

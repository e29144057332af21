"""Amazon Kinesis read record by record (Pinot's ``streamType: kinesis``): each record's
data is a payload for a record decoder, as a Kafka message's value is.

The shards are read by the Kinesis connector (``sources.connect.kinesis``): the same
client, listing, resharding order (a child shard after its parents are read to their
end), iterator renewal and errors; only what a record becomes differs. The connector
gives SingleStore's record JSON (data in base64); this source gives the data bytes as
the payload, the partition key as the key and the approximate arrival time as the
timestamp.

* Location: the stream's name. A partition is a shard, by its id
  (``shardId-000000000001``); its offset is the connector's JSON offset: ``{}`` (from
  the shard's start), ``{"timestamp": ms}`` (from a time), ``{"sequenceNumber": "…"}``
  (after that record), with ``"ended": true`` once a closed shard was read to its end.
* CONFIG: ``region`` (default us-east-1), ``endpoint`` (a local or VPC endpoint URL; a
  password in it is refused), ``max.records`` (records a GetRecords call asks for, at
  most 10,000, the API's limit). CREDENTIALS: ``aws.access.key.id``,
  ``aws.secret.access.key``, ``aws.session.token``. Without keys the AWS default chain
  (environment, profile, instance role) applies: the server's own login.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkpipes.config import Secret
from sparkpipes.config.core import reject_unknown
from sparkpipes.errors import ConfigError
from sparkpipes.sources.base import Fetched, Gap, MetadataProvider, PartitionConsumer, Source
from sparkpipes.sources.connect.base import ConnectorConfig, compact
from sparkpipes.sources.connect.kinesis import MAX_LIMIT, KinesisConnector, KinesisReader

#: the connector this source reads shards with
CONNECTOR = "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector"
#: CONFIG keys → the connector's
CONFIG_KEYS = {"region": "kinesis.region", "endpoint": "kinesis.endpoint", "max.records": None}
#: CREDENTIALS keys → the connector's
SECRET_KEYS = {
    "aws.access.key.id": "aws.access.key.id",
    "aws.secret.access.key": "aws.secret.access.key",
    "aws.session.token": "aws.session.token",
}


def _shard(partition: str) -> dict[str, Any]:
    return {"shardId": partition}


class KinesisSource(Source):
    """A Kinesis stream's shards as partitions of raw records (see the module)."""

    name = "kinesis.records"
    position_type = pa.string()

    @classmethod
    def signs_in_as_server(cls, config: Mapping[str, Any], credentials: Mapping[str, Any]) -> bool:
        key = credentials.get("aws.access.key.id")
        if hasattr(key, "reveal"):
            key = key.reveal()
        return not str(key or "").strip()

    def __init__(
        self, location: str, config: Mapping[str, Any], credentials: Mapping[str, Secret]
    ) -> None:
        if not location or "/" in location:
            raise ConfigError(f"a Kinesis location is the stream's name, got '{location}'")
        reject_unknown(config, set(CONFIG_KEYS), what="Kinesis option")
        reject_unknown(credentials, set(SECRET_KEYS), what="Kinesis credential")
        self.stream = location
        limit = config.get("max.records", MAX_LIMIT)
        text = str(limit).strip()
        if isinstance(limit, bool) or not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
            raise ConfigError(
                f"Kinesis option 'max.records' must be a whole number from 1 to {MAX_LIMIT}, "
                f"got {limit!r}"
            )
        #: records one GetRecords call asks for
        self.max_records = int(text)
        values = {"kinesis.stream": location}
        for key, target in CONFIG_KEYS.items():
            if target and config.get(key) not in (None, ""):
                values[target] = str(config[key])
        secrets = {
            SECRET_KEYS[k]: v if isinstance(v, Secret) else Secret(str(v))
            for k, v in credentials.items()
        }
        self.connector = KinesisConnector(ConnectorConfig(CONNECTOR, 1, values, secrets))

    def metadata(self, timeout_s: float | None = None) -> KinesisMetadata:
        return KinesisMetadata(self.connector)

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> KinesisConsumer:
        return KinesisConsumer(self.connector.reader(), partition, self.max_records)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> Any:
        return self.connector.start_offset(_shard(partition), policy)

    def ready(self, partitions: list[str], offsets: Mapping[str, Any]) -> list[str]:
        """Shards not read to a final end, a child only once its parents are."""
        live = [p for p in partitions if not self.connector.finished(offsets.get(p))]
        by_key = {compact(_shard(p)): o for p, o in offsets.items()}
        allowed = self.connector.ready([_shard(p) for p in live], by_key)
        return sorted(str(p["shardId"]) for p in allowed)

    def reached(self, offset: Any, latest: Any) -> bool:
        return latest is not None and offset == latest

    def describe(self) -> Mapping[str, Any]:
        return {"source": "kinesis", "stream": self.stream}

    def label(self) -> str:
        return self.connector.label()

    def check(self) -> str:
        return self.connector.check()

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"stream": self.stream, "shardId": partition}


class KinesisMetadata(MetadataProvider):
    """A stream's shards. Kinesis cannot count what is left (it knows only the time behind
    the tip), so latest and lag are unknown and a batch reads a shard until a read finds
    nothing."""

    def __init__(self, connector: KinesisConnector) -> None:
        self.connector = connector

    def partitions(self) -> list[str]:
        return sorted(str(p["shardId"]) for p in self.connector.partitions())

    def earliest(self, partition: str) -> Any:
        return self.connector.start_offset(_shard(partition), "earliest")

    def latest(self, partition: str) -> Any:
        return None

    def offset_for_timestamp(self, partition: str, ts_ms: int) -> Any:
        return {"timestamp": int(ts_ms)}


class KinesisConsumer(PartitionConsumer):
    """One shard: each record's data is a payload, its sequence number its position."""

    position_type = pa.string()

    def __init__(self, reader: KinesisReader, partition: str, max_records: int) -> None:
        self.reader = reader
        self.partition = partition
        self.max_records = max_records
        self._offset: dict[str, Any] = {}

    def open(self, start: Any, stop: Any = None) -> Gap | None:
        self._offset = dict(start or {})
        self.reader.open(_shard(self.partition), self._offset)
        return None

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        raw, at_end = self.reader.read(min(max_records, self.max_records), timeout_s)
        self._offset = self.reader.offset()
        return Fetched(
            values=pa.array([r.get("Data", b"") for r in raw], pa.binary()),
            positions=pa.array([r["SequenceNumber"] for r in raw], pa.string()),
            keys=pa.array([str(r.get("PartitionKey", "")).encode() for r in raw], pa.binary()),
            timestamps=pa.array(
                [_millis(r.get("ApproximateArrivalTimestamp")) for r in raw], pa.int64()
            ),
            at_end=at_end,
        )

    def position(self) -> Any:
        return dict(self._offset)

    def close(self) -> None:
        self.reader.close()


def _millis(value: Any) -> int | None:
    """ApproximateArrivalTimestamp in epoch ms (the client keeps the raw epoch seconds)."""
    if value is None:
        return None
    if isinstance(value, (int, float, str)):
        return int(float(value) * 1000)
    return int(value.timestamp() * 1000)

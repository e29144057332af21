"""Amazon Kinesis as a Kafka Connect source connector
(``com.singlestore.kafka.connect.kinesis.KinesisSourceConnector``, seed 000), on boto3.

* A **shard** is a source partition, ``{"shardId": "shardId-000000000001"}``; its offset is
  the sequence number of the last record read, ``{"sequenceNumber": "4960…"}``, and a
  reader resumes ``AFTER_SEQUENCE_NUMBER``. Nothing read yet is ``{}`` (``TRIM_HORIZON``);
  the ``latest`` start policy is ``{"timestamp": ms}`` (``AT_TIMESTAMP``, now).
* Shards are listed every batch, so the children of a split or merge appear. A child is
  read only once each parent still listed has been read to its end: a closed shard whose
  reader reached its last record gets ``"ended": true`` in its offset and is not read
  again. Record order per partition key is thereby kept across resharding.
* A record is ``{"partitionKey", "sequenceNumber", "shardId", "data",
  "approximateArrivalTimestamp"}`` with ``data`` in base64, as SingleStore's connector
  gives it, so seed 000's ``record::$data`` / ``FROM_BASE64`` work unchanged; its id is
  ``{"sequenceNumber", "shardId"}`` and its topic CONFIG ``kafka.topic`` (default: the
  stream's name).

CONFIG: ``kinesis.stream`` (required), ``kinesis.region`` (default us-east-1),
``kafka.topic``, ``kinesis.endpoint`` (a local or VPC endpoint URL; a password in it is
refused, naming the keys) and the AWS keys
``aws.access.key.id``, ``aws.secret.key.id`` (seed 000's spelling; ``aws.secret.access.key``
is accepted too) and ``aws.session.token``, which are secrets wherever they are given.
Without keys the AWS default chain (environment, profile, instance role) applies.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.config import urls
from sparkpipes.errors import ConfigError, SourceAuthError, SourceError, SourceUnavailableError
from sparkpipes.sources.connect.base import (
    PartitionReader,
    Polled,
    RecordColumns,
    SourceConnector,
    compact,
)
from sparkpipes.sources.connect.source import backoff

SECRET_KEYS = frozenset(
    {"aws.access.key.id", "aws.secret.key.id", "aws.secret.access.key", "aws.session.token"}
)
#: why a password inside kinesis.endpoint is refused, and where the login goes instead
NO_LOGIN = (
    "Kinesis takes no user or password in a URL (botocore does not log in with them, and "
    "shows the URL in its errors): give aws.access.key.id and aws.secret.key.id in CONFIG "
    "or CREDENTIALS"
)
#: records one GetRecords call may return (the API's own limit)
MAX_LIMIT = 10_000
#: pause between GetRecords calls that found nothing (the API allows 5 calls/s a shard)
EMPTY_PAUSE_S = 0.2
_AUTH_CODES = {
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "AccessDeniedException",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
}
_THROTTLE_CODES = {
    "ProvisionedThroughputExceededException",
    "LimitExceededException",
    "ThrottlingException",
}


class _Client:
    """The settings a boto3 Kinesis client is made from (picklable; no I/O)."""

    def __init__(self, connector: KinesisConnector) -> None:
        cfg = connector.config
        self.stream = connector.stream
        self.region = connector.region()
        self.endpoint = cfg.text(connector.endpoint_key)
        self.proxy = connector.proxy()
        self.keys = {
            "aws_access_key_id": cfg.get("aws.access.key.id"),
            "aws_secret_access_key": cfg.get("aws.secret.key.id")
            or cfg.get("aws.secret.access.key"),
            "aws_session_token": cfg.get("aws.session.token"),
        }

    def __call__(self) -> Any:
        import boto3
        from botocore.config import Config

        session = boto3.session.Session()
        parsers = session._session.get_component("response_parser_factory")
        parsers.set_parser_defaults(timestamp_parser=lambda value: value)
        return session.client(
            "kinesis",
            region_name=self.region,
            endpoint_url=self.endpoint,
            config=Config(
                connect_timeout=5,
                read_timeout=30,
                retries={"max_attempts": 2, "mode": "standard"},
                proxies={"http": self.proxy, "https": self.proxy} if self.proxy else None,
            ),
            **{k: v for k, v in self.keys.items() if v},
        )

    def where(self) -> str:
        at = f" at {self.endpoint}" if self.endpoint else f" in {self.region}"
        return f"Kinesis stream '{self.stream}'{at}"

    def error(self, e: BaseException, doing: str) -> SourceError:
        """A boto error as the sparkpipes error a user can act on (never a key)."""
        from botocore.exceptions import (
            ClientError,
            EndpointConnectionError,
            NoCredentialsError,
        )
        from botocore.exceptions import (
            ConnectTimeoutError as BotoConnectTimeout,
        )

        where = self.where()
        if isinstance(e, ClientError):
            code = e.response.get("Error", {}).get("Code", "")
            msg = e.response.get("Error", {}).get("Message", "")
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in _AUTH_CODES or status in (401, 403) or code in ("401", "403"):
                return SourceAuthError(
                    f"{where} refused the AWS access key given in CONFIG or CREDENTIALS "
                    f"({code}) while {doing}"
                )
            if code == "ResourceNotFoundException":
                return SourceError(f"{where} does not exist ({msg})")
            if code in _THROTTLE_CODES:
                return SourceUnavailableError(f"{where} is throttling reads ({code})")
            return SourceError(f"{where}: {code} while {doing}: {msg}")
        if isinstance(e, NoCredentialsError):
            return SourceAuthError(
                f"no AWS credentials for {where}: give aws.access.key.id and "
                "aws.secret.key.id in CONFIG or CREDENTIALS"
            )
        if isinstance(e, (EndpointConnectionError, BotoConnectTimeout, ConnectionError)):
            return SourceUnavailableError(f"cannot reach {where} while {doing}")
        return SourceUnavailableError(f"{where}: {type(e).__name__} while {doing}")


def _shards(client: Any, stream: str) -> list[dict[str, Any]]:
    shards: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"StreamName": stream}
    while True:
        resp = client.list_shards(**kwargs)
        shards.extend(resp.get("Shards", []))
        token = resp.get("NextToken")
        if not token:
            return shards
        kwargs = {"NextToken": token}


class KinesisConnector(SourceConnector):
    class_names = ("com.singlestore.kafka.connect.kinesis.KinesisSourceConnector",)
    config_keys = frozenset({"kinesis.stream", "kinesis.region", "kinesis.endpoint", "kafka.topic"})
    secret_keys = SECRET_KEYS
    partition_noun = "shard"
    #: the key naming a local or VPC endpoint
    endpoint_key = "kinesis.endpoint"

    @classmethod
    def signs_in_as_server(cls, config: Mapping[str, Any], credentials: Mapping[str, Any]) -> bool:
        key = config.get("aws.access.key.id") or credentials.get("aws.access.key.id")
        if hasattr(key, "reveal"):
            key = key.reveal()
        return not str(key or "").strip()  # the client drops an empty key, as not given

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        if importlib.util.find_spec("boto3") is None:
            raise ConfigError(
                "reading Kinesis needs Python package 'boto3': pip install 'sparkpipes[kinesis]'"
            )
        key = self.endpoint_key
        urls.refuse(config.secrets, {key: config.get(key)}, NO_LOGIN)
        self.stream = config.require("kinesis.stream")
        self.topic = config.text("kafka.topic") or self.stream
        self.client = _Client(self)
        self._conn: Any = None
        self._parents: dict[str, list[str]] = {}

    def region(self) -> str:
        """The stream's AWS region (``kinesis.region``, default us-east-1)."""
        return self.config.text("kinesis.region", "us-east-1") or "us-east-1"

    def proxy(self) -> str | None:
        """An HTTP proxy the client goes through (none here)."""
        return None

    def wanted(self, shard_id: str) -> bool:
        """Whether shard ``shard_id`` is read (all are here)."""
        return True

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_conn": None}  # the source is pickled into tasks

    def _client(self) -> Any:
        if self._conn is None:
            self._conn = self.client()
        return self._conn

    def partitions(self) -> list[dict[str, Any]]:
        try:
            shards = _shards(self._client(), self.stream)
        except Exception as e:
            raise self.client.error(e, "listing its shards") from None
        shards = [s for s in shards if self.wanted(s["ShardId"])]
        self._parents = {
            s["ShardId"]: [p for p in (s.get("ParentShardId"), s.get("AdjacentParentShardId")) if p]
            for s in shards
        }
        return [{"shardId": s["ShardId"]} for s in shards]

    def start_offset(self, partition: Mapping[str, Any], policy: str) -> dict[str, Any]:
        if policy == "latest":
            return {"timestamp": int(time.time() * 1000)}
        return {}

    def finished(self, offset: Any) -> bool:
        return isinstance(offset, Mapping) and offset.get("ended") is True

    def ready(
        self, partitions: Sequence[Mapping[str, Any]], offsets: Mapping[str, Any]
    ) -> list[Mapping[str, Any]]:
        listed = set(self._parents)
        out = []
        for p in partitions:
            parents = [q for q in self._parents.get(p["shardId"], []) if q in listed]
            if all(self.finished(offsets.get(compact({"shardId": q}))) for q in parents):
                out.append(p)
        return out

    def reader(self) -> KinesisReader:
        return KinesisReader(self.client, self.topic, self.record_limit)

    #: records one GetRecords call asks for, at most
    record_limit = MAX_LIMIT

    def label(self) -> str:
        return self.client.where()

    def check(self) -> str:
        n = len(self.partitions())
        return f"{self.label()} has {n} shard{'' if n == 1 else 's'}"

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in super().describe().items() if k not in SECRET_KEYS}


class KinesisReader(PartitionReader):
    """Reads one shard with GetRecords; its position is the last sequence number read."""

    def __init__(self, client: _Client, topic: str, record_limit: int = MAX_LIMIT) -> None:
        self.client = client
        self.topic = topic
        self.record_limit = record_limit
        self._conn: Any = None
        self._iterator: str | None = None
        self._offset: dict[str, Any] = {}
        self._shard = ""
        self._closed: bool | None = None

    def open(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        self._shard = str(partition["shardId"])
        self._offset = dict(offset)
        self._closed = None
        self._conn = self.client()
        self._iterator = None if offset.get("ended") else self._new_iterator()

    def _new_iterator(self) -> str | None:
        kwargs: dict[str, Any] = {"StreamName": self.client.stream, "ShardId": self._shard}
        if "sequenceNumber" in self._offset:
            kwargs["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER"
            kwargs["StartingSequenceNumber"] = str(self._offset["sequenceNumber"])
        elif "timestamp" in self._offset:
            kwargs["ShardIteratorType"] = "AT_TIMESTAMP"
            kwargs["Timestamp"] = self._offset["timestamp"] / 1000
        else:
            kwargs["ShardIteratorType"] = "TRIM_HORIZON"
        try:
            return self._conn.get_shard_iterator(**kwargs)["ShardIterator"]
        except Exception as e:
            raise self._error(e, "opening the shard") from None

    def _error(self, e: BaseException, doing: str) -> SourceError:
        err = self.client.error(e, f"{doing} {self._shard}")
        err.partition = compact({"shardId": self._shard})
        return err

    def poll(self, max_records: int, timeout_s: float) -> Polled:
        raw, at_end = self.read(max_records, timeout_s)
        if raw:
            return Polled([], dict(self._offset), at_end, self._columns(raw))
        return Polled([], dict(self._offset), at_end=at_end)

    def offset(self) -> dict[str, Any]:
        """The shard's offset after the records read so far."""
        return dict(self._offset)

    def read(self, max_records: int, timeout_s: float) -> tuple[list[Mapping[str, Any]], bool]:
        """GetRecords' records as boto gives them (up to ``max_records``) and whether the
        shard had nothing after them; :meth:`offset` is then after the last one. Waits up
        to ``timeout_s`` for the first record."""
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while self._iterator is not None:
            limit = max(1, min(max_records, self.record_limit))
            try:
                resp = self._conn.get_records(ShardIterator=self._iterator, Limit=limit)
            except Exception as e:
                code = getattr(e, "response", {}).get("Error", {}).get("Code", "")
                if code == "ExpiredIteratorException":
                    self._iterator = self._new_iterator()
                    continue
                err = self._error(e, "reading")
                if not err.transient or time.monotonic() > deadline:
                    raise err from None
                attempt += 1
                backoff(attempt)
                continue
            self._iterator = resp.get("NextShardIterator")
            raw = resp.get("Records", [])
            behind = resp.get("MillisBehindLatest", 0)
            tip = behind == 0 and len(raw) < limit
            if raw:
                self._offset = {"sequenceNumber": raw[-1]["SequenceNumber"]}
            if self._iterator is None or (tip and self._shard_closed()):
                self._offset["ended"] = True
                self._iterator = None
            if raw:
                return raw, tip or self._iterator is None
            if self._iterator is None:
                break
            if behind == 0 or time.monotonic() + EMPTY_PAUSE_S > deadline:
                return [], behind == 0
            time.sleep(EMPTY_PAUSE_S)
        return [], True

    def _shard_closed(self) -> bool:
        """Whether the shard is closed (split or merged): at its tip, it then has nothing
        more, ever. Asked once per open, only when a read finds the tip."""
        if self._closed is None:
            try:
                shards = _shards(self._conn, self.client.stream)
            except Exception as e:
                raise self._error(e, "listing shards for") from None
            mine = next((s for s in shards if s["ShardId"] == self._shard), None)
            self._closed = mine is not None and bool(
                mine.get("SequenceNumberRange", {}).get("EndingSequenceNumber")
            )
        return self._closed

    def _columns(self, raw: Sequence[Mapping[str, Any]]) -> RecordColumns:
        """GetRecords' records as the static columns, built as text without a Python
        object per record beyond boto's own: sequence numbers are digits and shard ids
        ``shardId-`` and digits, so only the partition key needs JSON escaping."""
        shard = self._shard
        seqs = [r["SequenceNumber"] for r in raw]
        keys = [json.dumps(r.get("PartitionKey")) for r in raw]
        data = [base64.b64encode(r.get("Data", b"")).decode("ascii") for r in raw]
        ts = [_millis(r.get("ApproximateArrivalTimestamp")) for r in raw]
        ids = [f'{{"sequenceNumber":"{q}","shardId":"{shard}"}}' for q in seqs]
        recs = [
            f'{{"approximateArrivalTimestamp":{"null" if t is None else t},"data":"{d}",'
            f'"partitionKey":{k},"sequenceNumber":"{q}","shardId":"{shard}"}}'
            for q, k, d, t in zip(seqs, keys, data, ts)
        ]
        return RecordColumns(
            pa.array([self.topic] * len(raw), pa.string()),
            pa.array(ids, pa.string()),
            pa.array(recs, pa.string()),
            pa.array([f'{{"sequenceNumber":"{q}"}}' for q in seqs], pa.string()),
            pa.array(ts, pa.int64()),
        )

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_conn": None, "_iterator": None}

    def close(self) -> None:
        self._conn = None
        self._iterator = None


def _millis(value: Any) -> int | None:
    """ApproximateArrivalTimestamp in ms: the raw epoch seconds the client is set to
    keep (parsing each into a timezone-aware datetime costs more than the rest of a
    record), or a datetime from a client that parses them."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value * 1000)
    if isinstance(value, str):
        return int(float(value) * 1000)
    return int(value.timestamp() * 1000)

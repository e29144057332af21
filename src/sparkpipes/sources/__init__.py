"""Sources: the SPI (``base``) and the built-in sources, looked up by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkpipes.config import Secret
from sparkpipes.sources.base import (
    Fetched,
    Gap,
    MetadataProvider,
    Offset,
    PartitionConsumer,
    Source,
)
from sparkpipes.util.registry import Registry

SOURCES = Registry("source", entry_point_group="sparkpipes.sources")
SOURCES.register(
    "kafka", "sparkpipes.sources.kafka:KafkaSource", install_hint="pip install confluent-kafka"
)
SOURCES.register("fs", "sparkpipes.sources.stores:FsSource")
SOURCES.register("s3", "sparkpipes.sources.stores:S3Source", install_hint="pip install s3fs")
SOURCES.register("azure", "sparkpipes.sources.stores:AzureSource", install_hint="pip install adlfs")
SOURCES.register("hdfs", "sparkpipes.sources.stores:HdfsSource")
SOURCES.plan("gcs", "object stores supported: FS, S3, AZURE and HDFS; GCS is not yet")
SOURCES.register("stream", "sparkpipes.sources.plugin:PluginSource")
SOURCES.register("kafkaconnect", "sparkpipes.sources.connect.source:KafkaConnectSource")
#: Kinesis records as payloads (Pinot's ``streamType: kinesis``); not named ``kinesis``,
#: which SQL's ``LOAD DATA KINESIS`` would reach: SingleStore reads Kinesis through a
#: Kafka Connect connector, and its users are pointed there
SOURCES.register(
    "kinesis.records", "sparkpipes.sources.kinesis:KinesisSource", install_hint="pip install boto3"
)
SOURCES.plan(
    "kinesis",
    "read Kinesis with LOAD DATA KAFKACONNECT and connector.class "
    "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector",
)


def build_source(
    name: str,
    location: str,
    config: Mapping[str, Any],
    credentials: Mapping[str, Secret],
) -> Source:
    """Look up a source by name and validate its options; no I/O."""
    return SOURCES.get(name)(location, config, credentials)


__all__ = [
    "SOURCES",
    "Fetched",
    "Gap",
    "MetadataProvider",
    "Offset",
    "PartitionConsumer",
    "Source",
    "build_source",
]

"""The stores behind ``LOAD DATA FS|S3|AZURE|HDFS``: each an :class:`ObjectSource` that
knows its location's form, its CONFIG and CREDENTIALS keys, and how to build its fsspec
filesystem (on first use, in each process). Offsets, listing, splitting and reading are
``sources.objects``'."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkpipes.errors import ConfigError, SourceError
from sparkpipes.sources.objects import GLOB_CHARS, ObjectSource, glob_base


class FsSource(ObjectSource):
    """``LOAD DATA FS '/path/glob'``: files of the engine's (and executors') filesystem."""

    name = "fs"
    immutable = False
    what = "file"

    @classmethod
    def location_hint(cls) -> str:
        return "give a path or glob such as '/data/*.json'"

    def _pattern(self, location: str) -> str:
        if "://" in location:
            scheme = location.split("://", 1)[0]
            if scheme != "file":
                raise ConfigError(
                    f"LOAD DATA FS takes a local path, not '{scheme}://'; use LOAD DATA "
                    f"{'S3' if scheme in ('s3', 's3a') else scheme.upper()} for an object store"
                )
            location = location.split("://", 1)[1]
        return os.path.abspath(os.path.expanduser(location))

    def _root(self) -> str:
        return _dir_of(self)

    def _connect(self) -> Any:
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem()


class S3Source(ObjectSource):
    """``LOAD DATA S3 'bucket/prefix' CONFIG '{"region": …, "endpoint_url": …}' CREDENTIALS
    '{"aws_access_key_id": …, "aws_secret_access_key": …, "aws_session_token": …}'``.
    Without credentials the AWS default chain (environment, profile, instance role)
    applies."""

    name = "s3"
    config_keys = ObjectSource.config_keys | {
        "region",
        "endpoint_url",
        "request_payer",
        "disable_gunzip",
    }
    credential_keys = frozenset({"aws_access_key_id", "aws_secret_access_key", "aws_session_token"})

    @classmethod
    def location_hint(cls) -> str:
        return "give 'bucket/prefix' or 'bucket/path/*.json'"

    @classmethod
    def login_hint(cls) -> str:
        return (
            "S3 takes no user or password in a URL (botocore does not log in with them, "
            "and shows the URL in its errors); S3 requests are signed with the keys in "
            "CREDENTIALS: aws_access_key_id and aws_secret_access_key"
        )

    @classmethod
    def signs_in_as_server(cls, config: Mapping[str, Any], credentials: Mapping[str, Any]) -> bool:
        key = credentials.get("aws_access_key_id")
        if hasattr(key, "reveal"):
            key = key.reveal()
        return not str(key or "").strip()  # an empty key is no key of the user's

    def _pattern(self, location: str) -> str:
        for scheme in ("s3://", "s3a://"):
            if location.startswith(scheme):
                location = location[len(scheme) :]
        if "://" in location:
            raise ConfigError(f"S3 location must be 'bucket/prefix', got '{location}'")
        return location.lstrip("/")

    def _connect(self) -> Any:
        import s3fs

        creds = {k: v.reveal() for k, v in self.credentials.items()}
        if ("aws_access_key_id" in creds) != ("aws_secret_access_key" in creds):
            raise ConfigError(
                "S3 CREDENTIALS need both aws_access_key_id and aws_secret_access_key"
            )
        client: dict[str, Any] = {}
        if "region" in self.config:
            client["region_name"] = str(self.config["region"])
        if "endpoint_url" in self.config:
            client["endpoint_url"] = str(self.config["endpoint_url"])
        extra = {}
        if self.config.get("request_payer"):
            extra["RequestPayer"] = "requester"
        return s3fs.S3FileSystem(
            key=creds.get("aws_access_key_id"),
            secret=creds.get("aws_secret_access_key"),
            token=creds.get("aws_session_token"),
            client_kwargs=client,
            config_kwargs={
                "connect_timeout": 5,
                "read_timeout": 60,
                "retries": {"max_attempts": 3, "mode": "standard"},
            },
            s3_additional_kwargs=extra or None,
            use_listings_cache=False,
            skip_instance_cache=True,
        )


class AzureSource(ObjectSource):
    """``LOAD DATA AZURE 'container/prefix' CREDENTIALS '{"account_name": …,
    "account_key": …}'`` (or ``sas_token``, or ``connection_string``); CONFIG
    ``endpoint_url`` names a non-default blob endpoint (Azurite, sovereign clouds)."""

    name = "azure"
    what = "blob"
    config_keys = ObjectSource.config_keys | {"endpoint_url"}
    credential_keys = frozenset({"account_name", "account_key", "sas_token", "connection_string"})

    @classmethod
    def location_hint(cls) -> str:
        return "give 'container/prefix'"

    @classmethod
    def login_hint(cls) -> str:
        return (
            "Azure Blob takes no user or password in a URL; give CREDENTIALS account_name "
            "with account_key or sas_token (or connection_string)"
        )

    def _pattern(self, location: str) -> str:
        for scheme in ("az://", "abfs://", "abfss://"):
            if location.startswith(scheme):
                location = location[len(scheme) :]
        if "://" in location:
            raise ConfigError(f"AZURE location must be 'container/prefix', got '{location}'")
        return location.lstrip("/")

    def _connect(self) -> Any:
        import adlfs

        creds = {k: v.reveal() for k, v in self.credentials.items()}
        endpoint = self.config.get("endpoint_url")
        if "connection_string" not in creds and "account_name" not in creds:
            raise ConfigError(
                "AZURE CREDENTIALS need account_name (with account_key or sas_token) or "
                "connection_string"
            )
        if "connection_string" not in creds:
            account = creds["account_name"]
            endpoint = endpoint or f"https://{account}.blob.core.windows.net"
            parts = [
                f"DefaultEndpointsProtocol={str(endpoint).split('://', 1)[0]}",
                f"AccountName={account}",
                f"BlobEndpoint={endpoint}",
            ]
            if "account_key" in creds:
                parts.append(f"AccountKey={creds['account_key']}")
            if "sas_token" in creds:
                parts.append(f"SharedAccessSignature={creds['sas_token'].lstrip('?')}")
            creds = {"connection_string": ";".join(parts) + ";"}
        fs = adlfs.AzureBlobFileSystem(**creds, skip_instance_cache=True)
        fs.service_client = _blob_client(creds["connection_string"])
        return fs


def _blob_client(connection_string: str) -> Any:
    """The Azure SDK's client with bounded retries: its defaults (3 retries, waiting 15, 18
    and 24 s) make an unreachable endpoint take about 80 s to fail; adlfs passes no
    retry options, so its client is replaced by this one (2 retries, 1 and 3 s apart; a
    batch that still fails is retried by the engine)."""
    from azure.storage.blob.aio import BlobServiceClient, ExponentialRetry

    return BlobServiceClient.from_connection_string(
        conn_str=connection_string,
        retry_policy=ExponentialRetry(
            initial_backoff=1, increment_base=2, retry_total=2, random_jitter_range=1
        ),
        connection_timeout=5,
        read_timeout=60,
    )


class HdfsSource(ObjectSource):
    """``LOAD DATA HDFS 'hdfs://namenode:8020/path'`` through pyarrow's HadoopFileSystem,
    which needs a Hadoop client on every machine (libhdfs, ``HADOOP_HOME``, a Java
    ``CLASSPATH`` from ``hadoop classpath --glob``)."""

    name = "hdfs"
    config_keys = ObjectSource.config_keys | {"user"}

    @classmethod
    def location_hint(cls) -> str:
        return "give 'hdfs://namenode:8020/path'"

    @classmethod
    def login_hint(cls) -> str:
        return (
            "HDFS takes no password (Hadoop authenticates by Kerberos or by the user "
            "name alone); CONFIG user names the user"
        )

    def _pattern(self, location: str) -> str:
        if not location.startswith("hdfs://"):
            raise ConfigError(f"HDFS location must be 'hdfs://host:port/path', got '{location}'")
        rest = location[len("hdfs://") :]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        if not host:
            raise ConfigError(f"HDFS location names no namenode: '{location}'")
        if port and not port.isdigit():
            raise ConfigError(f"HDFS port must be a number, got '{port}' in '{location}'")
        self.host, self.port = host, int(port or 8020)
        return "/" + path

    def _root(self) -> str:
        return _dir_of(self)

    def _connect(self) -> Any:
        from fsspec.implementations.arrow import ArrowFSWrapper
        from pyarrow import fs as pafs

        try:
            hdfs = pafs.HadoopFileSystem(self.host, self.port, user=self.config.get("user"))
        except (OSError, pa.ArrowException) as e:
            raise SourceError(
                f"HDFS needs a Hadoop client on this machine: pyarrow could not load libhdfs "
                f"({str(e).splitlines()[0]}). Install Hadoop, set HADOOP_HOME (and "
                "ARROW_LIBHDFS_DIR if libhdfs.so is elsewhere) and CLASSPATH=$(hadoop "
                "classpath --glob), on the driver and every executor"
            ) from None
        return ArrowFSWrapper(hdfs)


def _dir_of(source: ObjectSource) -> str:
    pattern = source.pattern
    if GLOB_CHARS & set(pattern):
        return glob_base(pattern)
    try:
        if source.filesystem.isdir(pattern):
            return pattern
    except Exception:
        pass
    return posixpath.dirname(pattern.rstrip("/")) or "/"

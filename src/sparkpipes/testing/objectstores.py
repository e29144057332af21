"""Object-store servers for tests and benchmarks, on 127.0.0.1: moto in server mode (S3)
and Azurite (Azure Blob, from npm). Each picks a free port, starts its process, waits
until it answers, and stops with the context manager, removing its temporary directory;
a server that does not start is an error carrying the tail of its log, never a skipped test.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from sparkpipes.errors import SourceUnavailableError

#: Azurite's well-known development account (public, documented by Microsoft)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_REPO = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """A child process serving HTTP on 127.0.0.1:``port``, its files in a temporary directory."""

    name = "server"

    def __init__(self) -> None:
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix=f"sparkpipes-{self.name}-")
        self.log_path = os.path.join(self.dir, "server.log")
        self._proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def ready_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout_s: float = 60.0) -> Any:
        """Start and wait until the server answers HTTP; raises ``SourceUnavailableError``
        (with the log's tail) if it exits or stays silent for ``timeout_s``."""
        try:
            self._spawn()
            self._wait(timeout_s)
            self._after_start()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self) -> None:
        command = self.command()
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        try:
            self._proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.dir,
                start_new_session=True,
            )
        except OSError as e:
            raise SourceUnavailableError(
                f"{self.name} could not be started ({command[0]}): {e}"
            ) from e
        finally:
            log.close()

    def _wait(self, timeout_s: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise SourceUnavailableError(
                    f"{self.name} exited with code {self._proc.returncode}; "
                    f"its log ends:\n{self._tail()}"
                )
            try:
                urllib.request.urlopen(self.ready_url(), timeout=1)
                return
            except urllib.error.HTTPError:
                return  # it answers (400/403 to an anonymous request is an answer)
            except OSError:
                time.sleep(0.1)
        raise SourceUnavailableError(
            f"{self.name} did not answer on 127.0.0.1:{self.port} within {timeout_s:.0f} s; "
            f"its log ends:\n{self._tail()}"
        )

    def _after_start(self) -> None:
        """Set-up that needs the running server."""

    def _tail(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-2000:] or "(empty log)"
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the process and remove its directory; safe to call more than once."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MotoServer(_Server):
    """S3 and Kinesis by moto in server mode (``python -m moto.server`` of this interpreter).

    By default moto accepts any credentials. With ``authentication=True`` it checks them
    like AWS: an IAM user allowed ``s3:*`` is created and its key becomes
    ``access_key_id`` / ``secret_access_key``; other keys get ``InvalidAccessKeyId`` and a
    wrong secret ``SignatureDoesNotMatch`` (both HTTP 403).
    """

    name = "moto"
    region = "us-east-1"

    def __init__(self, *, authentication: bool = False) -> None:
        super().__init__()
        self.authentication = authentication
        self.access_key_id = "testing"
        self.secret_access_key = "testing"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]

    def ready_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/moto-api/"

    def _after_start(self) -> None:
        if not self.authentication:
            return
        iam = self._client("iam")
        iam.create_user(UserName="sparkpipes")
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:*", "kinesis:*"], "Resource": "*"}],
        }
        iam.put_user_policy(
            UserName="sparkpipes", PolicyName="s3", PolicyDocument=json.dumps(policy)
        )
        key = iam.create_access_key(UserName="sparkpipes")["AccessKey"]
        self.access_key_id, self.secret_access_key = key["AccessKeyId"], key["SecretAccessKey"]
        # moto checks credentials after this many more actions (server default: never);
        # the body must not be form-encoded or moto reads it as empty
        urllib.request.urlopen(
            urllib.request.Request(
                f"{self.endpoint_url}/moto-api/reset-auth",
                data=b"0",
                method="POST",
                headers={"Content-Type": "application/octet-stream"},
            ),
            timeout=10,
        )

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_options(self) -> dict[str, Any]:
        """For ``s3fs.S3FileSystem(**storage_options)``."""
        return {
            "key": self.access_key_id,
            "secret": self.secret_access_key,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": self.region},
        }

    def _client(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
        )

    def kinesis(self) -> Any:
        """A boto3 Kinesis client for this server, with its credentials."""
        return self._client("kinesis")

    def create_stream(self, name: str, shards: int) -> None:
        """A Kinesis stream of ``shards`` shards, active when this returns."""
        k = self.kinesis()
        k.create_stream(StreamName=name, ShardCount=shards)
        k.get_waiter("stream_exists").wait(
            StreamName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50}
        )

    def put_records(self, stream: str, records: list[tuple[str, bytes]]) -> None:
        """Put ``(partition key, data)`` records, 500 per call (the API's limit)."""
        k = self.kinesis()
        for i in range(0, len(records), 500):
            chunk = records[i : i + 500]
            resp = k.put_records(
                StreamName=stream,
                Records=[{"PartitionKey": pk, "Data": data} for pk, data in chunk],
            )
            if resp.get("FailedRecordCount"):
                raise RuntimeError(f"{resp['FailedRecordCount']} records were not put")

    def kinesis_config(self, stream: str, **extra: Any) -> dict[str, Any]:
        """seed 000's Kinesis connector CONFIG for ``stream`` on this server."""
        return {
            "connector.class": "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector",
            "aws.access.key.id": self.access_key_id,
            "aws.secret.key.id": self.secret_access_key,
            "kafka.topic": "kinesis-topic",
            "kinesis.stream": stream,
            "kinesis.region": self.region,
            "kinesis.endpoint": self.endpoint_url,
            **extra,
        }

    def client(self) -> Any:
        """A boto3 S3 client for this server, with its credentials."""
        return self._client("s3")

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)


def azurite_binary() -> str:
    """``azurite-blob`` from the checkout's ``.tools`` (installed by bootstrap), else PATH."""
    for root in (_REPO, Path.cwd()):
        local = root / ".tools" / "node_modules" / ".bin" / "azurite-blob"
        if local.exists():
            return str(local)
    found = shutil.which("azurite-blob")
    if found:
        return found
    raise SourceUnavailableError(
        "Azurite is not installed: run `bash scripts/bootstrap.sh --services` (it runs "
        "`npm install --prefix .tools azurite@3`; needs Node.js and npm)"
    )


class Azurite(_Server):
    """Azure Blob storage by Azurite, with the well-known development account."""

    name = "azurite"
    account_name = AZURITE_ACCOUNT
    account_key = AZURITE_KEY

    def command(self) -> list[str]:
        return [
            azurite_binary(),
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(self.port),
            "--location",
            self.dir,
            "--silent",
            "--skipApiVersionCheck",
            "--loose",
        ]

    def ready_url(self) -> str:
        return f"{self.blob_endpoint}?comp=list"

    @property
    def blob_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.account_name}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={self.account_name};"
            f"AccountKey={self.account_key};BlobEndpoint={self.blob_endpoint};"
        )

    @property
    def storage_options(self) -> dict[str, Any]:
        """For ``adlfs.AzureBlobFileSystem(**storage_options)``.

        The connection string is what points adlfs at this endpoint: adlfs prefers it to
        the other options, while ``account_host`` always means ``https://`` and Azurite
        serves plain http. ``account_name`` and ``account_key`` ride along for code that
        signs URLs or builds its own clients.
        """
        return {
            "account_name": self.account_name,
            "account_key": self.account_key,
            "connection_string": self.connection_string,
        }

    def client(self) -> Any:
        """An ``azure.storage.blob.BlobServiceClient`` for this server."""
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def create_container(self, name: str) -> None:
        self.client().create_container(name)

    def put(self, container: str, key: str, data: bytes) -> None:
        self.client().get_blob_client(container, key).upload_blob(data, overwrite=True)

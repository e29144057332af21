"""Object-store servers for tests and benchmarks, on 127.0.0.1: moto in server mode (S3)
and Azurite (Azure Blob, from npm). Each picks a free port, starts its process, waits
until it answers, and stops with the context manager; a server that does not start is an
error carrying the tail of its log, never a skipped test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
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
    """A child process serving HTTP on 127.0.0.1:``port``."""

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
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self._proc = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.dir,
            start_new_session=True,
        )
        log.close()
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self._proc.poll() is not None:
                raise SourceUnavailableError(
                    f"{self.name} exited with code {self._proc.returncode}: {self._tail()}"
                )
            try:
                urllib.request.urlopen(self.ready_url(), timeout=1)
                return self
            except urllib.error.HTTPError:
                return self  # it answers (400/403 to an anonymous request is an answer)
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise SourceUnavailableError(f"{self.name} did not answer on port {self.port}")

    def _tail(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
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
    """S3 by moto in server mode (``python -m moto.server``); any credentials work."""

    name = "moto"
    region = "us-east-1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]

    def ready_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/moto-api/"

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_options(self) -> dict[str, Any]:
        """For ``s3fs.S3FileSystem(**storage_options)``."""
        return {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": self.region},
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name=self.region,
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)


def azurite_binary() -> str:
    local = _REPO / ".tools" / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    found = shutil.which("azurite-blob")
    if found:
        return found
    raise SourceUnavailableError(
        "Azurite is not installed: run `bash scripts/bootstrap.sh --services` (it runs "
        "`npm install --prefix .tools azurite@3`)"
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
        """For ``adlfs.AzureBlobFileSystem(**storage_options)``."""
        return {"connection_string": self.connection_string}

    def client(self) -> Any:
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def create_container(self, name: str) -> None:
        self.client().create_container(name)

    def put(self, container: str, key: str, data: bytes) -> None:
        self.client().get_blob_client(container, key).upload_blob(data, overwrite=True)

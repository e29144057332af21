"""The object-store test servers themselves: s3fs reads what boto3 put on moto, adlfs reads
what the Azure SDK put on Azurite, and the errors each client raises for a missing bucket or
container, refused credentials and an unreachable endpoint (with options that make the last
fail in seconds, not the clients' default minute or more)."""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid

import adlfs
import pytest
import s3fs
from azure.core.exceptions import HttpResponseError, ServiceRequestError
from botocore.exceptions import EndpointConnectionError

from sparkpipes.errors import SourceUnavailableError
from sparkpipes.testing import Azurite, MotoServer

# botocore's default (legacy mode, 5 attempts with backoff) takes 5-11 s on a refused
# connection; one attempt fails in well under a second. s3fs's own ``retries`` (a class
# attribute, 5) only repeats timeouts, so a hung server also needs ``fs.retries = 1``.
FAST_S3 = {"connect_timeout": 2, "read_timeout": 5, "retries": {"max_attempts": 1}}


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _s3fs(storage_options: dict, **extra) -> s3fs.S3FileSystem:
    return s3fs.S3FileSystem(**storage_options, **extra, skip_instance_cache=True)


def _adlfs(connection_string: str, *, fast: bool = False) -> adlfs.AzureBlobFileSystem:
    fs = adlfs.AzureBlobFileSystem(connection_string=connection_string, skip_instance_cache=True)
    if fast:
        # adlfs passes no retry options to its client, and the storage SDK's default
        # (ExponentialRetry: 3 retries after 15 s, 18 s, 24 s) takes ~80 s on a refused
        # connection; a client of our own without retries fails at once
        from azure.storage.blob.aio import BlobServiceClient

        fs.service_client = BlobServiceClient.from_connection_string(
            connection_string, retry_total=0, connection_timeout=2, read_timeout=5
        )
    return fs


def test_s3fs_lists_and_reads_what_boto3_put_on_moto(s3_server):
    bucket = _name("b")
    s3_server.create_bucket(bucket)
    s3_server.put(bucket, "in/a.json", b'{"id": 1}\n')
    fs = _s3fs(s3_server.storage_options)
    assert fs.ls(f"{bucket}/in") == [f"{bucket}/in/a.json"]
    assert fs.cat(f"{bucket}/in/a.json") == b'{"id": 1}\n'
    # a missing bucket: FileNotFoundError('The specified bucket does not exist'), at once;
    # a missing key or prefix: FileNotFoundError('<bucket>/<key>')
    with pytest.raises(FileNotFoundError, match="The specified bucket does not exist"):
        fs.ls(_name("nobucket") + "/in")
    with pytest.raises(FileNotFoundError):
        fs.cat(f"{bucket}/in/missing.json")


def test_moto_with_authentication_refuses_unknown_keys_and_wrong_secrets(s3_server):
    with MotoServer(authentication=True) as s3:
        s3.create_bucket("auth")
        s3.put("auth", "a.txt", b"x")
        assert s3.access_key_id != "testing"
        assert _s3fs(s3.storage_options).cat("auth/a.txt") == b"x"
        unknown = {**s3.storage_options, "key": "testing", "secret": "testing"}
        with pytest.raises(PermissionError, match="Access Key Id you provided does not exist"):
            _s3fs(unknown).ls("auth")
        wrong_secret = {**s3.storage_options, "secret": "x" * 40}
        with pytest.raises(PermissionError, match="signature we calculated does not match"):
            _s3fs(wrong_secret).ls("auth")
        # a GET of an object answers 403 without a body: PermissionError('Forbidden')
        with pytest.raises(PermissionError, match="Forbidden"):
            _s3fs(wrong_secret).cat("auth/a.txt")
    # the shared server still accepts any credentials
    assert _s3fs({**s3_server.storage_options, "key": "other"}).ls("") is not None


def test_an_unreachable_s3_endpoint_fails_within_seconds():
    endpoint = f"http://127.0.0.1:{_dead_port()}"
    options = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    started = time.monotonic()
    # botocore.exceptions.EndpointConnectionError: 'Could not connect to the endpoint URL:
    # "http://127.0.0.1:<port>/<bucket>?list-type=2&..."' (s3fs does not translate it)
    with pytest.raises(EndpointConnectionError, match="Could not connect to the endpoint URL"):
        _s3fs(options, config_kwargs=FAST_S3).ls("bucket/in")
    assert time.monotonic() - started < 5


def test_adlfs_lists_and_reads_what_the_sdk_put_on_azurite(azurite):
    container = _name("c")
    azurite.create_container(container)
    azurite.put(container, "logs/a.json", b'{"id": 1}\n')
    fs = adlfs.AzureBlobFileSystem(**azurite.storage_options, skip_instance_cache=True)
    assert fs.ls(f"{container}/logs") == [f"{container}/logs/a.json"]
    assert fs.cat(f"{container}/logs/a.json") == b'{"id": 1}\n'
    with fs.open(f"{container}/logs/a.json", "rb") as f:
        assert f.read() == b'{"id": 1}\n'
    # a missing container: FileNotFoundError(2, 'No such file or directory', '<container>/x')
    # from ls and cat, at once; info() says "No such container: '<container>'"
    with pytest.raises(FileNotFoundError):
        fs.ls(_name("nocont") + "/x")


def test_a_wrong_key_is_refused_by_azurite(azurite):
    container = _name("c")
    azurite.create_container(container)
    azurite.put(container, "a.json", b"{}\n")
    wrong = azurite.connection_string.replace(
        azurite.account_key, "d3Jvbmcta2V5LXRoYXQtaXMtbm90LXRoZS1hY2NvdW50cw=="
    )
    # adlfs does not translate it: azure.core.exceptions.HttpResponseError, status_code 403,
    # error_code StorageErrorCode.AUTHORIZATION_FAILURE, message 'Server failed to authenticate
    # the request. Make sure the value of the Authorization header is formed correctly
    # including the signature.' (from ls and cat alike, at once). Azure itself answers
    # AuthenticationFailed, which the SDK raises as ClientAuthenticationError (a subclass of
    # HttpResponseError): map 401/403 by status_code, not by class.
    with pytest.raises(HttpResponseError, match="Server failed to authenticate") as err:
        _adlfs(wrong).ls(container)
    assert err.value.status_code == 403
    assert err.value.error_code == "AuthorizationFailure"


def test_an_unreachable_azure_endpoint_fails_within_seconds():
    endpoint = f"http://127.0.0.1:{_dead_port()}/{Azurite.account_name}"
    connection_string = (
        f"DefaultEndpointsProtocol=http;AccountName={Azurite.account_name};"
        f"AccountKey={Azurite.account_key};BlobEndpoint={endpoint};"
    )
    started = time.monotonic()
    # azure.core.exceptions.ServiceRequestError: 'Cannot connect to host 127.0.0.1:<port>
    # ssl:default [Connect call failed ('127.0.0.1', <port>)]'
    with pytest.raises(ServiceRequestError, match="Cannot connect to host"):
        _adlfs(connection_string, fast=True).ls("container/x")
    assert time.monotonic() - started < 5


class _Failing(MotoServer):
    name = "failing"

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('no such flag: --nope'); sys.exit(3)"]


def test_a_server_that_does_not_start_is_an_error_with_its_log():
    server = _Failing()
    with pytest.raises(SourceUnavailableError, match=r"(?s)exited with code 3.*no such flag"):
        server.start(timeout_s=30)
    assert not os.path.exists(server.dir)

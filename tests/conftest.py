"""Shared fixtures: one embedded Tansu broker and one SparkSession for the whole run."""

from __future__ import annotations

import itertools
import os
import uuid

import pytest

os.environ.setdefault("SPARKPIPES_SPARK_MASTER", "local[2]")

_counter = itertools.count()


@pytest.fixture(scope="session")
def broker():
    from sparkpipes.testing import EmbeddedBroker

    with EmbeddedBroker() as b:
        yield b


@pytest.fixture
def topic(broker):
    """A fresh 4-partition topic name on the shared broker."""
    name = f"t{next(_counter)}_{uuid.uuid4().hex[:6]}"
    broker.create_topic(name, 4)
    return name


@pytest.fixture
def engine(tmp_path):
    from sparkpipes import Engine

    eng = Engine(tmp_path / "warehouse")
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def s3_server():
    """S3 on 127.0.0.1 (moto in server mode), shared by the run."""
    from sparkpipes.testing import MotoServer

    with MotoServer() as s:
        yield s


@pytest.fixture(scope="session")
def azurite():
    """Azure Blob on 127.0.0.1 (Azurite), shared by the run."""
    from sparkpipes.testing import Azurite

    with Azurite() as a:
        yield a


@pytest.fixture(scope="session")
def registry():
    """A stand-in schema registry on 127.0.0.1 (see sparkpipes.testing.registry)."""
    from sparkpipes.testing.registry import Registry

    with Registry() as r:
        yield r


@pytest.fixture(scope="session")
def mariadb_tls(tmp_path_factory):
    """A second MariaDB on 127.0.0.1 that speaks TLS, with its CA, Java key stores and
    users that require TLS (tests/integration/tls_server.py), shared by the run."""
    from tests.integration.tls_server import TlsMariaDB

    with TlsMariaDB(tmp_path_factory.mktemp("mariadb_tls")) as server:
        yield server

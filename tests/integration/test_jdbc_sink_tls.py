"""TLS from Confluent's JDBC sink to MySQL/MariaDB, against a real MariaDB that speaks TLS
(``mariadb_tls``: its user ``tls`` logs in only over TLS, ``REQUIRE SSL``).

What a user relies on, as MySQL Connector/J reads the URL (``jdbc_tls``, the JDBC
source's code path): the Kafka Docker playground's ``mysql-ssl`` sink config, with its
Java trust store, loads its rows through TLS; the store's password stays sealed (shown
``<redacted>``) across a restart of the engine and a ``GET …/config`` → ``PUT`` round
trip; a server a wrong CA vouches for is an error naming the trust store (when the
connector is made: its table is read then), and nothing is written."""

from __future__ import annotations

import json
import pathlib
import uuid

import pytest

from sparkpipes import Engine
from sparkpipes.errors import SparkpipesError
from tests.integration.test_jdbc_sink import drain, order, produce
from tests.integration.tls_server import STORE_PASSWORD, USERS

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect" / "jdbc-sink"


@pytest.fixture
def topic(broker):
    """A fresh topic of one partition (the records here share one, as keyed records do)."""
    name = f"jdbc_tls_{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 1)
    return name


@pytest.fixture
def server(mariadb_tls):
    with mariadb_tls.database() as name:
        mariadb_tls.name = name
        yield mariadb_tls


def _playground(server, broker, topic: str, store: str = "truststore.jks") -> dict:
    """playground-mysql-ssl.json with only this server's port, database, login and trust
    store put in (its TLS parameters as written)."""
    cfg = json.loads((CORPUS / "playground-mysql-ssl.json").read_text())
    url = cfg["connection.url"]
    url = url.replace("127.0.0.1:3306/db", f"127.0.0.1:{server.port}/{server.name}")
    url = url.replace("user=userssl&password=password", f"user=tls&password={USERS['tls'][0]}")
    url = url.replace("mypassword", STORE_PASSWORD)
    url = url.replace("file:///etc/kafka/secrets/truststore.jks", f"file://{server.files[store]}")
    assert "verifyServerCertificate=true" in url and "requireSSL=true" in url
    return cfg | {"connection.url": url, "topics": topic, "bootstrap.servers": broker.bootstrap}


def test_the_playground_ssl_sink_writes_through_tls_and_keeps_its_secrets(
    broker, topic, server, tmp_path
):
    produce(broker, topic, [(None, order(i, f"v{i}", i)) for i in range(3)])
    eng = Engine(tmp_path / "wh")
    try:
        eng.connectors.create({"name": "ssl", "config": _playground(server, broker, topic)})
        drain(eng, "ssl")
        shown = json.dumps(eng.connectors.config("ssl"))
        assert "trustCertificateKeyStorePassword=<redacted>" in shown
        assert STORE_PASSWORD not in shown and USERS["tls"][0] not in shown
    finally:
        eng.close()
    got = server.run(f"SELECT id, item, qty FROM `{topic}` ORDER BY id", server.name)
    assert got == [(0, "v0", 0), (1, "v1", 1), (2, "v2", 2)]

    produce(broker, topic, [(None, order(3, "v3", 3))])
    eng = Engine(tmp_path / "wh")  # a restart: the sealed store password is used again
    try:
        drain(eng, "ssl")
        assert len(server.run(f"SELECT id FROM `{topic}`", server.name)) == 4
        # the config as GET …/config shows it, put back: its <redacted> secrets are kept
        shown = eng.connectors.config("ssl")
        eng.connectors.create({"name": "ssl", "config": shown}, replace=True)
        produce(broker, topic, [(None, order(4, "v4", 4))])
        drain(eng, "ssl")
        assert len(server.run(f"SELECT id FROM `{topic}`", server.name)) == 5
    finally:
        eng.close()


def test_a_server_the_trust_store_does_not_vouch_for_is_a_terminal_error(
    broker, topic, server, engine
):
    server.run(
        f"CREATE TABLE `{topic}` (id BIGINT NOT NULL, item TEXT NOT NULL, qty INT)", server.name
    )
    produce(broker, topic, [(None, order(1, "a", 1))])
    cfg = _playground(server, broker, topic, store="wrong-truststore.jks")
    with pytest.raises(SparkpipesError) as failed:  # the table is read when it is made
        engine.connectors.create({"name": "wrong", "config": cfg | {"auto.create": "false"}})
    message = str(failed.value)
    assert "TLS failed" in message and "certificate verify failed" in message
    assert "trustCertificateKeyStoreUrl" in message and STORE_PASSWORD not in message
    assert "wrong" not in engine.connectors.names()
    assert server.run(f"SELECT COUNT(*) FROM `{topic}`", server.name) == [(0,)]


def test_an_unknown_store_password_on_put_is_refused_before_connecting(broker, topic, engine):
    """A new connector whose URL shows the store password ``<redacted>`` (a config copied
    from ``GET …/config``) has no sealed value to keep: refused, naming it."""
    url = (
        "jdbc:mysql://127.0.0.1:3306/db?user=u&password=<redacted>&useSSL=true"
        "&verifyServerCertificate=true&trustCertificateKeyStoreUrl=file:///tmp/t.jks"
        "&trustCertificateKeyStorePassword=<redacted>"
    )
    cfg = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "connection.url": url,
        "connection.password": "pw",
        "topics": topic,
        "bootstrap.servers": broker.bootstrap,
    }
    with pytest.raises(SparkpipesError, match=r"key store passwords in connection\.url"):
        engine.connectors.create({"name": "copied", "config": cfg})

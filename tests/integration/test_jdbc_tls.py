"""TLS from the JDBC source to MySQL and MariaDB, against a real MariaDB that speaks TLS
(``mariadb_tls``: its users require TLS, and one a client certificate) and the plain one
on 127.0.0.1:3306, which offers no TLS.

What a user relies on, as MySQL Connector/J 8/9 and MariaDB Connector/J 3 define it
(``DefaultPropertySet``, ``ExportControlled``; ``Configuration``, ``SslMode``): the
playground's configs, with Java key stores made by ``keytool``, load their rows through
TLS; the server is verified only where the URL asks for it, and a server a wrong CA
vouches for is a clear, terminal error that names the trust store and no password."""

from __future__ import annotations

import json
import pathlib
import re
import time

import pytest
import sqlalchemy as sa

from sparkpipes.engine import Engine
from sparkpipes.errors import ConfigError, SourceAuthError, SourceError, SourceUnavailableError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.sources import build_source
from tests.integration.test_jdbc_source import GATE
from tests.integration.tls_server import STORE_PASSWORD, USERS

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "connect" / "jdbc-source"
JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"


def _connector(url: str, **extra):
    cfg = {
        "connector.class": JDBC,
        "connection.url": url,
        "mode": "incrementing",
        "incrementing.column.name": "id",
        **extra,
    }
    return build_source("kafkaconnect", "jdbc", cfg, {}).connector


def _tls_of(url: str) -> list[str]:
    """The TLS version and cipher of the connection the source makes for ``url`` ("" for
    none)."""
    connector = _connector(url)
    db = connector.settings.db
    status = "SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')"
    with db.connect(db.engine(), "testing") as conn:
        found = dict(conn.execute(sa.text(status)).all())
    connector.close()
    return [found.get("Ssl_version", ""), found.get("Ssl_cipher", "")]


@pytest.fixture
def server(mariadb_tls):
    """The TLS server, with a fresh database as ``server.name``."""
    with mariadb_tls.database() as name:
        mariadb_tls.name = name
        yield mariadb_tls


def _url(server, user: str, query: str, scheme: str = "mysql") -> str:
    password = USERS[user][0]
    login = f"user={user}&password={password}"
    where = f"127.0.0.1:{server.port}/{server.name}"
    return f"jdbc:{scheme}://{where}?{login}" + (f"&{query}" if query else "")


def _store(server, name: str) -> str:
    return f"file://{server.files[name]}"


@pytest.mark.parametrize("item", ["playground-mysql-ssl", "playground-mysql-mtls"])
def test_the_playground_configs_load_their_rows_through_tls(server, item, tmp_path):
    """The corpus configs as written, with only the host's port, the database, the login
    and the stores' paths and passwords made this server's: Connector/J's
    ``verifyServerCertificate=true`` verifies the server against the JKS trust store
    (``keytool -importcert``), the mTLS one presents the key store (``keytool
    -importkeystore``); the users log in only over TLS (``REQUIRE SSL``, ``REQUIRE X509``)."""
    cfg = json.loads((CORPUS / f"{item}.json").read_text())
    user = "mtls" if item.endswith("mtls") else "tls"
    url = cfg["connection.url"].replace("mypassword", STORE_PASSWORD)
    url = url.replace("127.0.0.1:3306/mydb", f"127.0.0.1:{server.port}/{server.name}")
    url = re.sub(r"user=\w+&password=\w+", f"user={user}&password={USERS[user][0]}", url)
    for store in ("truststore.jks", "keystore.jks"):
        url = url.replace(f"file:///etc/kafka/secrets/{store}", _store(server, store))
    assert "verifyServerCertificate=true" in url and "/etc/kafka" not in url
    server.run(
        "CREATE TABLE team (id INT NOT NULL PRIMARY KEY AUTO_INCREMENT, name VARCHAR(255) "
        "NOT NULL, email VARCHAR(255) NOT NULL, last_modified DATETIME NOT NULL)",
        server.name,
    )
    server.run(
        "INSERT INTO team (name, email, last_modified) VALUES ('kafka', 'kafka@apache.org', "
        "'2026-01-01 10:00:00'), ('another', 'another@apache.org', '2026-01-01 10:00:01')",
        server.name,
    )
    cfg["connection.url"] = url
    eng = Engine(tmp_path / "wh")
    try:
        sess = SqlSession(eng)
        sess.execute(GATE)
        sess.execute(
            f"CREATE INFERRED PIPELINE team AS LOAD DATA KAFKACONNECT 'jdbc' "
            f"CONFIG '{json.dumps(cfg)}' FORMAT AVRO"
        )
        sess.execute("START PIPELINE team FOREGROUND")
        rows = sess.execute("SELECT topic, record FROM team")[0].rows
        assert sorted(json.loads(r)["name"] for _, r in rows) == ["another", "kafka"]
        assert {t for t, _ in rows} == {"mysql-team"}
        shown = json.dumps(sess.execute("SHOW CREATE PIPELINE team")[0].rows)
        assert STORE_PASSWORD not in shown and USERS[user][0] not in shown
        assert "trustCertificateKeyStorePassword=<redacted>" in shown
    finally:
        eng.close()
    assert _tls_of(url)[0] in ("TLSv1.2", "TLSv1.3")


def test_connector_j_modes_verify_only_where_asked(server):
    """Connector/J 8+: ``useSSL=true`` alone (PREFERRED) and ``sslMode=REQUIRED`` encrypt
    without looking at the server's certificate (a wrong trust store changes nothing);
    VERIFY_CA checks the chain, VERIFY_IDENTITY the host name too (127.0.0.1 is in the
    certificate); a PKCS#12 trust store (Java 17's default type) reads as JKS does."""
    wrong = f"trustCertificateKeyStoreUrl={_store(server, 'wrong-truststore.jks')}"
    for query in (
        "useSSL=true",
        f"sslMode=REQUIRED&{wrong}&trustCertificateKeyStorePassword={STORE_PASSWORD}",
        f"useSSL=true&requireSSL=true&{wrong}",
        f"sslMode=VERIFY_CA&trustCertificateKeyStoreUrl={_store(server, 'truststore.p12')}"
        f"&trustCertificateKeyStorePassword={STORE_PASSWORD}&trustCertificateKeyStoreType=PKCS12",
        f"sslMode=verify_identity&trustCertificateKeyStoreUrl={_store(server, 'truststore.jks')}",
        f"sslMode=VERIFY_IDENTITY&enabledTLSProtocols=TLSv1.2&trustCertificateKeyStoreUrl="
        f"{_store(server, 'truststore.jks')}",
    ):
        version, cipher = _tls_of(_url(server, "tls", query))
        assert version in ("TLSv1.2", "TLSv1.3") and cipher, query
        if "enabledTLSProtocols=TLSv1.2" in query:
            assert version == "TLSv1.2"


def test_a_server_the_trust_store_does_not_vouch_for_is_a_clear_terminal_error(server):
    """The wrong CA's trust store, or none (the system's CAs, as Connector/J's
    ``fallbackToSystemTrustStore`` default): the error says TLS failed and why, names what
    the certificate was checked against, is not retried (no second attempt, no wait) and
    holds no password."""
    wrong = (
        f"verifyServerCertificate=true&trustCertificateKeyStoreUrl="
        f"{_store(server, 'wrong-truststore.jks')}&trustCertificateKeyStorePassword="
        f"{STORE_PASSWORD}"
    )
    for query, against in (
        (wrong, "trustCertificateKeyStoreUrl"),
        ("sslMode=VERIFY_CA", "the system's CAs"),
    ):
        connector = _connector(_url(server, "tls", query), **{"connection.backoff.ms": "5000"})
        started = time.monotonic()
        with pytest.raises(SourceError) as e:
            connector.partitions()
        assert time.monotonic() - started < 4  # not retried
        text = str(e.value)
        assert not e.value.transient and not isinstance(e.value, SourceUnavailableError)
        assert "TLS failed while listing its tables: certificate verify failed" in text
        assert f"checked against {against}" in text
        assert STORE_PASSWORD not in text and USERS["tls"][0] not in text


def test_mutual_tls_presents_the_key_store_and_the_users_requirements_hold(server):
    """``REQUIRE X509``: the client certificate from a JKS or PKCS#12 key store (made by
    ``keytool -importkeystore``, as the playground makes it) logs in; without one, or with
    TLS off, the server refuses the login (Connector/J's ``useSSL=false``)."""
    trust = f"trustCertificateKeyStoreUrl={_store(server, 'truststore.jks')}"
    for store in ("keystore.jks", "keystore.p12"):
        query = (
            f"sslMode=VERIFY_CA&{trust}&clientCertificateKeyStoreUrl={_store(server, store)}"
            f"&clientCertificateKeyStorePassword={STORE_PASSWORD}"
        )
        assert _tls_of(_url(server, "mtls", query))[1], store
    assert (
        _connector(_url(server, "mtls", query))
        .check()
        .endswith(
            "has 0 tables to read (incrementing); TLS, the server's certificate verified against "
            "trustCertificateKeyStoreUrl, client certificate from clientCertificateKeyStoreUrl "
            "(MySQL Connector/J, sslMode VERIFY_CA)"
        )
    )
    for user, query in (("mtls", f"sslMode=VERIFY_CA&{trust}"), ("tls", "useSSL=false")):
        with pytest.raises(SourceAuthError, match=f"refused user '{user}'"):
            _connector(_url(server, user, query)).partitions()


def test_a_key_store_that_does_not_open_is_named_without_its_password(server):
    query = (
        f"sslMode=VERIFY_CA&trustCertificateKeyStoreUrl={_store(server, 'truststore.jks')}"
        f"&clientCertificateKeyStoreUrl={_store(server, 'keystore.jks')}"
        "&clientCertificateKeyStorePassword=Not-It-42"
    )
    with pytest.raises(ConfigError) as e:
        _connector(_url(server, "mtls", query)).partitions()
    text = str(e.value)
    assert "clientCertificateKeyStoreUrl" in text and "password does not open it" in text
    assert "Not-It-42" not in text and STORE_PASSWORD not in text
    missing = f"sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=file://{server.root}/nosuch.jks"
    with pytest.raises(ConfigError, match=r"'trustCertificateKeyStoreUrl' .*cannot open it"):
        _connector(_url(server, "tls", missing)).partitions()


def test_mariadb_connector_j_reads_its_own_options(server):
    """``jdbc:mariadb:``: no TLS by default (the ``tls`` user is refused), ``useSsl=true``
    verifies the host name too, ``sslMode=trust`` verifies nothing, ``serverSslCert`` is
    a PEM file and ``trustStore``/``keyStore`` paths with ``keyStorePassword``."""
    with pytest.raises(SourceAuthError):
        _connector(_url(server, "tls", "useSSL=false", "mariadb")).partitions()
    ca = server.files["ca.pem"]
    for user, query in (
        ("tls", f"sslMode=verify-full&serverSslCert={ca}"),
        ("tls", "sslmode=TRUST"),
        ("tls", f"useSsl=true&serverSslCert=file://{ca}"),
        (
            "mtls",
            f"useSSL=1&trustStore={server.files['truststore.p12']}&trustStorePassword="
            f"{STORE_PASSWORD}&keyStore={server.files['keystore.p12']}&keyStorePassword="
            f"{STORE_PASSWORD}",
        ),
    ):
        assert _tls_of(_url(server, user, query, "mariadb"))[1], query
    wrong = f"sslMode=verify-ca&serverSslCert={server.files['wrong-ca.pem']}"
    with pytest.raises(SourceError, match=r"certificate verify failed.*serverSslCert"):
        _connector(_url(server, "tls", wrong, "mariadb")).partitions()


def test_preferred_falls_back_only_when_the_server_offers_no_tls():
    """The server on 3306 offers no TLS: Connector/J's default (PREFERRED, here with a
    narrowed version list, so that sparkpipes makes the TLS context itself) connects
    without it; REQUIRED fails, terminally, saying the server does not support it."""
    base = "jdbc:mysql://127.0.0.1:3306/mysql?user=sparkpipes&password=sparkpipes"
    for query in ("", "&enabledTLSProtocols=TLSv1.3", "&useSSL=true"):
        assert _tls_of(base + query) == ["", ""]
    with pytest.raises(SourceError, match=r"TLS failed .*SSL is required but the server"):
        _connector(base + "&sslMode=REQUIRED").partitions()

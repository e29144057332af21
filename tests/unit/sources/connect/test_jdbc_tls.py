"""How a JDBC URL's TLS parameters are read, as the driver the URL names reads them:
MySQL Connector/J 8/9 for ``jdbc:mysql:`` (``DefaultPropertySet`` translates the legacy
switches into ``sslMode``; ``ExportControlled`` reads the stores) and MariaDB
Connector/J 3 for ``jdbc:mariadb:`` (``Configuration.handleLegacySslSettings``,
``SslMode.from``, ``OptionAliases``). No server here: the connections themselves are in
tests/integration/test_jdbc_tls.py."""

from __future__ import annotations

import datetime as dt
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sparkpipes.config import Secret, urls
from sparkpipes.errors import ConfigError
from sparkpipes.sources import build_source
from sparkpipes.sources.connect import jdbc_tls
from sparkpipes.sources.connect.jdbc_dialects import parse_url

JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"


def _tls(url: str) -> jdbc_tls.Tls:
    db = parse_url(url, None, None, None)
    assert db.tls is not None
    return db.tls


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("", "PREFERRED"),  # Connector/J 8's default
        ("useSSL=false", "DISABLED"),
        ("useSSL=true", "PREFERRED"),  # encrypts, verifies nothing (5.1 verified)
        ("useSSL=true&requireSSL=true", "REQUIRED"),
        ("requireSSL=true", "REQUIRED"),  # useSSL defaults to true
        ("verifyServerCertificate=true", "VERIFY_CA"),
        ("useSSL=true&requireSSL=true&verifyServerCertificate=true", "VERIFY_CA"),
        ("useSSL=false&verifyServerCertificate=true", "DISABLED"),
        ("useSSL=YES&verifyServerCertificate=yes", "VERIFY_CA"),
        ("sslMode=verify_identity&useSSL=false", "VERIFY_IDENTITY"),  # sslMode wins
        ("sslMode=Required", "REQUIRED"),
        ("sslMode=DISABLED&verifyServerCertificate=true", "DISABLED"),
    ],
)
def test_connector_j_translates_its_legacy_switches_into_ssl_mode(query, mode):
    assert _tls(f"jdbc:mysql://h/db?{query}").mode == mode


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("", "DISABLED"),  # MariaDB Connector/J uses no TLS unless asked
        ("useSSL=false", "DISABLED"),
        ("useSsl=true", "VERIFY_IDENTITY"),
        ("useSSL=1&trustServerCertificate=true", "REQUIRED"),
        ("useSsl&disableSslHostnameVerification", "VERIFY_CA"),
        ("useSSL=TRUE", "DISABLED"),  # Configuration.isSet: "1", "true" or empty, as written
        ("SSLMODE=VERIFY-CA", "VERIFY_CA"),  # option names in any case
        ("sslMode=trust", "REQUIRED"),
        ("sslMode=REQUIRED", "REQUIRED"),
        ("sslMode=verify_identity", "VERIFY_IDENTITY"),
        ("sslMode=1", "VERIFY_IDENTITY"),
        ("sslMode=disable&useSsl=true", "VERIFY_IDENTITY"),  # the legacy switch overrides
        ("trustServerCertificate=true", "DISABLED"),  # alone it asks for nothing
    ],
)
def test_mariadb_connector_j_reads_its_own_modes(query, mode):
    tls = _tls(f"jdbc:mariadb://h/db?{query}")
    assert (tls.driver, tls.mode) == ("MariaDB Connector/J", mode)


@pytest.mark.parametrize(
    ("url", "param", "path"),
    [
        (
            "jdbc:mysql://h/db?verifyServerCertificate=true&trustCertificateKeyStoreUrl="
            "file:///etc/s/t.jks",
            "trustCertificateKeyStoreUrl",
            "/etc/s/t.jks",
        ),
        (
            "jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=file:/etc/t.jks",
            "trustCertificateKeyStoreUrl",
            "/etc/t.jks",
        ),
        (
            "jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl="
            "file://localhost/etc/my%20t.jks",
            "trustCertificateKeyStoreUrl",
            "/etc/my t.jks",
        ),
        ("jdbc:mariadb://h/db?sslMode=verify-ca&trustStore=/etc/t.p12", "trustStore", "/etc/t.p12"),
        (
            "jdbc:mariadb://h/db?sslMode=verify-ca&trustCertificateKeyStoreUrl=t.jks",
            "trustCertificateKeyStoreUrl",
            "t.jks",
        ),
        (
            "jdbc:mariadb://h/db?sslMode=verify-ca&serverSslCert=file:///etc/ca.pem",
            "serverSslCert",
            "/etc/ca.pem",
        ),
    ],
)
def test_trust_stores_are_files_of_this_server(url, param, path):
    trust = _tls(url).trust
    assert (trust.param, trust.path) == (param, path)


def test_what_a_mode_does_not_read_is_left_unread():
    """Connector/J reads the trust store only to verify, and no store without TLS;
    MariaDB's ``trust`` mode trusts every certificate."""
    store = "trustCertificateKeyStoreUrl=file:/t.jks&clientCertificateKeyStoreUrl=file:/k.jks"
    required = _tls(f"jdbc:mysql://h/db?sslMode=REQUIRED&{store}")
    assert required.trust is None and required.identity.path == "/k.jks"
    off = _tls(f"jdbc:mysql://h/db?useSSL=false&{store}")
    assert off.trust is None and off.identity is None
    assert _tls("jdbc:mariadb://h/db?sslMode=trust&trustStore=/t.jks").trust is None


def test_an_inline_server_certificate_and_mariadb_key_password():
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    tls = _tls(
        f"jdbc:mariadb://h/db?sslMode=verify-full&serverSslCert={pem.replace(chr(10), '%0A')}"
        "&keyStore=/k.jks&keyStorePassword=ks-pw&keyPassword=key-pw"
    )
    assert tls.trust.pem == pem and tls.trust.path is None
    assert (tls.identity.password, tls.key_password) == (Secret("ks-pw"), Secret("key-pw"))


@pytest.mark.parametrize(
    ("listed", "versions"),
    [
        ("TLSv1,TLSv1.1,TLSv1.2,TLSv1.3", ()),
        ("TLSv1.2", ("TLSv1.2",)),
        ("TLSv1.3,TLSv1", ("TLSv1.3",)),
    ],
)
def test_tls_versions_keep_the_approved_ones(listed, versions):
    assert _tls(f"jdbc:mysql://h/db?enabledTLSProtocols={listed}").versions == versions
    assert _tls(f"jdbc:mysql://h/db?tlsVersions={listed}").versions == versions


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("jdbc:mysql://h/db?enabledTLSProtocols=TLSv1.1", "TLSv1 and TLSv1.1 are not supported"),
        ("jdbc:mysql://h/db?enabledTLSProtocols=SSLv3", "lists no TLS version"),
        ("jdbc:mysql://h/db?enabledSSLCipherSuites=TLS_AES_128_GCM_SHA256", "cipher suites"),
        ("jdbc:mysql://h/db?sslContextProvider=BCJSSE", "Java security providers"),
        ("jdbc:mysql://h/db?fipsCompliantJsse=true", "FIPS-only JSSE"),
        ("jdbc:mysql://h/db?sslmode=require", "parameter 'sslmode' is not understood"),
        ("jdbc:mysql://h/db?trustStore=/t.jks", "parameter 'trustStore' is not understood"),
        (
            "jdbc:mysql://h/db?verifyServerCertificate=true&trustCertificateKeyStoreUrl=/t.jks",
            "is not a URL: MySQL Connector/J takes a URL",
        ),
        (
            "jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=https://x/t.jks",
            "https: URL: key stores are read from this server's disk only",
        ),
        (
            "jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=file://x/t.jks",
            "names a file of another host",
        ),
        (
            "jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreType=BKS",
            "must be JKS, PKCS12 or JCEKS",
        ),
        (
            "jdbc:mysql://h/db?sslMode=VERIFY_CA&fallbackToSystemTrustStore=false",
            "fallbackToSystemTrustStore=false and no trust store",
        ),
        ("jdbc:mariadb://h/db?requireSSL=true", "which MariaDB Connector/J ignores"),
        ("jdbc:mariadb://h/db?sslMode=verify-ca&verifyServerCertificate=true", "ignores"),
        ("jdbc:mariadb://h/db?enabledSslCipherSuites=x", "cipher suites"),
        ("jdbc:mariadb://h/db?sslMode=sometimes", "'sslMode' must be one of disable, trust"),
        ("jdbc:mariadb://h/db?sslMode=trust&serverSslCert=classpath:ca.pem", "classpath: URL"),
    ],
)
def test_what_cannot_be_done_as_asked_is_refused_by_name(url, message):
    with pytest.raises(ConfigError, match=message):
        parse_url(url, None, None, None)


def test_tls_parameters_that_ask_for_nothing_are_accepted():
    parse_url(
        "jdbc:mariadb://h/db?requireSSL=false&verifyServerCertificate=false", None, None, None
    )
    parse_url("jdbc:mariadb://h/db?enabledTLSProtocols=TLSv1.2", None, None, None)
    parse_url(
        "jdbc:mysql://h/db?fipsCompliantJsse=false&fallbackToSystemKeyStore=false", None, None, None
    )


def test_every_problem_is_named_and_no_secret_is_shown():
    url = (
        "jdbc:mysql://h/db?user=u&password=Login-S3cret&sslMode=VERIFY_CA"
        "&trustCertificateKeyStoreUrl=/no-scheme.jks&trustCertificateKeyStorePassword=Store-S3cret"
        "&clientCertificateKeyStoreType=PEM&clientCertificateKeyStorePassword=Key-S3cret"
        "&useSSL=perhaps"
    )
    with pytest.raises(ConfigError) as e:
        parse_url(url, None, None, None)
    text = str(e.value)
    assert "'useSSL'" in text and "not a URL" in text and "'clientCertificateKeyStoreType'" in text
    assert not any(s in text for s in ("Login-S3cret", "Store-S3cret", "Key-S3cret"))


def test_the_sealed_store_passwords_reach_the_plan():
    """A URL given back as SHOW CREATE shows it (every password ``<redacted>``) keeps the
    sealed ones: the login's and each store's, told apart."""
    clear = (
        "jdbc:mysql://127.0.0.1:3306/db?user=u&password=pw-login&sslMode=VERIFY_CA"
        "&trustCertificateKeyStoreUrl=file:/t.jks&trustCertificateKeyStorePassword=pw-store"
        "&clientCertificateKeyStoreUrl=file:/k.jks&clientCertificateKeyStorePassword=pw-key"
    )
    shown, sealed = urls.split(clear)
    assert "pw-" not in shown
    cfg = {"connector.class": JDBC, "connection.url": shown, "mode": "bulk"}
    creds = {urls.secret_key("connection.url"): Secret(sealed)}
    db = build_source("kafkaconnect", "jdbc", cfg, creds).connector.settings.db
    assert db.password == Secret("pw-login")
    assert db.tls.trust.password == Secret("pw-store")
    assert db.tls.identity.password == Secret("pw-key")
    assert "pw-" not in repr(db) and "pw-" not in db.tls.describe()


# -- the SSLContext PyMySQL is given -------------------------------------------------------------
def _ca_pem(tmp_path) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = tmp_path / "ca.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(path)


def test_the_context_verifies_what_the_mode_says(tmp_path):
    ca = _ca_pem(tmp_path)
    assert _tls("jdbc:mysql://h/db").context() is None  # PyMySQL's own PREFERRED
    assert _tls("jdbc:mysql://h/db?useSSL=false").context() is None
    required = _tls("jdbc:mysql://h/db?sslMode=REQUIRED").context()
    assert (required.verify_mode, required.check_hostname) == (ssl.CERT_NONE, False)
    assert required.minimum_version == ssl.TLSVersion.TLSv1_2
    verify_ca = _tls(f"jdbc:mariadb://h/db?sslMode=verify-ca&serverSslCert={ca}").context()
    assert (verify_ca.verify_mode, verify_ca.check_hostname) == (ssl.CERT_REQUIRED, False)
    assert verify_ca.verify_flags & ssl.VERIFY_X509_PARTIAL_CHAIN  # any stored cert anchors
    assert [c["subject"] for c in verify_ca.get_ca_certs()] == [((("commonName", "test CA"),),)]
    full = _tls(f"jdbc:mariadb://h/db?useSsl=true&serverSslCert={ca}").context()
    assert full.check_hostname
    system = _tls("jdbc:mysql://h/db?sslMode=VERIFY_IDENTITY").context()
    assert system.check_hostname and system.cert_store_stats()["x509_ca"] >= 0
    one = _tls("jdbc:mysql://h/db?enabledTLSProtocols=TLSv1.3").context()
    assert one.minimum_version == one.maximum_version == ssl.TLSVersion.TLSv1_3


def test_a_store_that_cannot_be_read_fails_the_connection_naming_it(tmp_path):
    (tmp_path / "junk.jks").write_bytes(b"\xfe\xed\xfe\xed junk")
    for url, message in (
        (
            f"jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=file:{tmp_path}/no.jks",
            "cannot open it",
        ),
        (
            f"jdbc:mysql://h/db?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=file:{tmp_path}/junk.jks"
            "&trustCertificateKeyStorePassword=Pw-Not-Shown",
            "not a JKS or JCEKS key store",
        ),
        (f"jdbc:mariadb://h/db?sslMode=verify-ca&serverSslCert={tmp_path}", "not a regular file"),
    ):
        with pytest.raises(ConfigError, match=message) as e:
            _tls(url).context()
        assert "Pw-Not-Shown" not in str(e.value)

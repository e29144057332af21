"""Which options name a file of the server's disk (what asks for FILE READ)."""

from __future__ import annotations

import pytest

from sparkpipes.util.localfiles import local_file_keys, names_local_file


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ssl.ca.location", "ca.pem"),  # Kafka's TLS material, relative or not
        ("SSL.KEY.LOCATION", "/k.pem"),  # upper-case keys as SingleStore users write them
        ("consumer.override.ssl.truststore.location", "ts.jks"),
        ("stream.zz.descriptorFile", "ev.desc"),  # a plugin's own camel-case option
        ("stream.zz.tls.ca", "/etc/ssl/ca.pem"),  # any option whose value is a path
        ("stream.zz.dir", "data"),
        ("x", "~/secret"),
        ("x", "../up"),
        ("x", "file:///etc/passwd"),
        ("connection.url", "jdbc:sqlite:/var/db.sqlite"),
        ("stream.redis.url", "rediss://h:1/0?ssl_ca_certs=/etc/ca.pem"),
        ("url", "rediss://h:1/0?a=1&ssl_keyfile=%2Fetc%2Fkey"),
        ("ssl.providers", "default,/tmp/evil.so"),  # a list: each element is judged
        ("stream.zz.libs", "a.so; /tmp/b.so"),
        ("stream.redis.url", "unix:///run/other.sock"),
        ("url", "redis+unix:///run/other.sock"),
        ("sasl.kerberos.keytab", "svc.keytab"),
        # a query value read percent-decoded, relative or not; a parameter named as a file
        ("stream.redis.url", "rediss://h:1/0?ssl_ca_certs=..%2F..%2F..%2Fetc%2Fshadow"),
        ("stream.redis.url", "rediss://h:1/0?ssl_ca_certs=wh%2Fsecret.key"),
        ("stream.redis.url", "rediss://h:1/0?db=0&ssl_keyfile=k.pem"),
        ("url", "rediss://h:1/0?x=%7E%2F.ssh%2Fid_rsa"),
    ],
)
def test_file_options(key, value):
    assert names_local_file(key, value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("bootstrap.servers", "127.0.0.1:9092"),
        ("sasl.mechanism", "PLAIN"),
        ("ssl.ca.location", ""),  # unset
        ("stream.kafka.topic.name", "events"),
        ("connection.url", "jdbc:mysql://127.0.0.1:3306/app?useSSL=false"),
        ("endpoint_url", "http://127.0.0.1:5000/bucket/key"),
        ("profile", "default"),
        ("stream.zz.decoder.prop.schema", '{"type": "record"}'),
        ("stream.redis.url", "rediss://h:1/0?ssl_cert_reqs=none&db=0"),
        ("endpoint_url", "http://h/bucket?prefix=logs/2024"),
    ],
)
def test_other_options(key, value):
    assert not names_local_file(key, value)


def test_keys_listed_sorted_without_values():
    keys = local_file_keys({"b.location": "x", "a": "/etc/passwd", "c": "plain", "d": 3})
    assert keys == ["a", "b.location"]


def test_a_number_or_a_boolean_is_judged_as_the_text_the_client_gets():
    """A client is handed ``str(value)``: ``12345`` opens the file ``12345`` (review R12)."""
    assert local_file_keys({"ssl.ca.location": 12345, "decoder.prop.x": 1.5}) == ["ssl.ca.location"]
    assert local_file_keys({"fetch.min.bytes": 1, "check.crcs": True}) == []


def test_libpq_file_parameters_name_a_file_whatever_their_value():
    """libpq opens ``sslkey``, ``sslcert``, ``sslrootcert`` relative to the server's
    directory: a relative name is still a file of the server's disk."""
    for param in ("sslkey=secret.key", "sslcert=x.crt", "sslrootcert=warehouse/k"):
        assert names_local_file("connection.url", f"jdbc:postgresql://h/d?{param}")
    assert not names_local_file("connection.url", "jdbc:postgresql://h/d?sslmode=require")


def test_java_driver_key_stores_name_a_file_whatever_their_value():
    """MySQL Connector/J's ``…KeyStoreUrl`` (a ``file:`` URL) and MariaDB Connector/J's
    ``trustStore``, ``keyStore`` (a path, relative too) and ``serverSslCert`` (a file, or
    the PEM itself) are read from the server's disk (``sources.connect.jdbc_tls``)."""
    for param in (
        "trustCertificateKeyStoreUrl=store.jks",
        "clientCertificateKeyStoreUrl=file%3Astore.jks",
        "trustStore=store.jks",
        "keyStore=k.p12",
        "serverSslCert=ca.pem",
        "serversslcert=ca.pem",
    ):
        assert names_local_file("connection.url", f"jdbc:mariadb://h/d?{param}"), param
    assert not names_local_file("connection.url", "jdbc:mysql://h/d?sslMode=VERIFY_CA")

"""Java key stores read as a Java client reads them (``TrustStoreUtil.getTrustedCerts``:
certificate entries and the first certificate of each key entry; a JKS store opens
without a password, unchecked), and a client key handed to OpenSSL without ever lying
on a disk in clear. The stores here are written by pyjks and ``cryptography``; the ones
``keytool`` writes are read in tests/integration/test_jdbc_tls.py."""

from __future__ import annotations

import datetime as dt
import os
import ssl
import stat
import threading

import jks
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from sparkpipes.util import keystores
from sparkpipes.util.keystores import KeystoreError


def _cert(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def _pkcs8(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _names(certs) -> list[str]:
    return sorted(c.subject.rfc4514_string() for c in certs)


def test_a_jks_store_trusts_its_certificates_and_the_leaf_of_each_key():
    _, ca = _cert("ca")
    key, leaf = _cert("leaf")
    _, chained = _cert("chained")
    entries = [
        jks.TrustedCertEntry.new("ca", _der(ca)),
        jks.PrivateKeyEntry.new("me", [_der(leaf), _der(chained)], _pkcs8(key)),
    ]
    data = jks.KeyStore.new("jks", entries).saves("store-pw")
    assert keystores.kind_of(data) == "JKS"
    assert _names(keystores.trusted(data, "store-pw", "t")) == ["CN=ca", "CN=leaf"]
    assert _names(keystores.trusted(data, None, "t")) == ["CN=ca", "CN=leaf"]  # unchecked
    with pytest.raises(KeystoreError, match="password does not open it") as e:
        keystores.trusted(data, "wrong-pw-1", "t")
    assert "wrong-pw-1" not in str(e.value) and "store-pw" not in str(e.value)


def test_the_key_of_a_jks_store_opens_with_the_store_or_its_own_password():
    key, leaf = _cert("client")
    entry = jks.PrivateKeyEntry.new("me", [_der(leaf)], _pkcs8(key))
    entry.encrypt("key-pw")
    data = jks.KeyStore.new("jks", [entry]).saves("store-pw")
    found, chain = keystores.identity(data, "store-pw", "key-pw", "k")
    assert found.private_numbers() == key.private_numbers()
    assert _names(chain) == ["CN=client"]
    with pytest.raises(KeystoreError, match="private key does not open"):
        keystores.identity(data, "store-pw", None, "k")
    two = jks.KeyStore.new(
        "jks",
        [jks.PrivateKeyEntry.new(a, [_der(leaf)], _pkcs8(key)) for a in ("a", "b")],
    ).saves("pw")
    with pytest.raises(KeystoreError, match="holds 2 private keys"):
        keystores.identity(two, "pw", None, "k")


def test_pkcs12_stores_as_trust_store_and_key_store():
    _, ca = _cert("ca")
    key, leaf = _cert("leaf")
    encryption = serialization.BestAvailableEncryption(b"pw")
    trust = pkcs12.serialize_key_and_certificates(None, None, None, [ca], encryption)
    assert keystores.kind_of(trust) == "PKCS12"
    assert _names(keystores.trusted(trust, "pw", "t")) == ["CN=ca"]
    store = pkcs12.serialize_key_and_certificates(b"me", key, leaf, [ca], encryption)
    assert _names(keystores.trusted(store, "pw", "t")) == ["CN=leaf"]  # not the chain
    found, chain = keystores.identity(store, "pw", None, "k")
    assert found.private_numbers() == key.private_numbers()
    assert _names(chain) == ["CN=ca", "CN=leaf"] and chain[0] == leaf
    with pytest.raises(KeystoreError, match="its password does not open it"):
        keystores.trusted(store, "not-pw", "t")


def test_pem_certificates_are_trusted_and_garbage_is_named():
    _, ca = _cert("ca")
    pem = ca.public_bytes(serialization.Encoding.PEM)
    assert _names(keystores.trusted(pem, None, "t")) == ["CN=ca"]
    with pytest.raises(KeystoreError, match="not PEM certificates"):
        keystores.trusted(b"-----BEGIN CERTIFICATE-----\nnope\n", None, "t")
    with pytest.raises(KeystoreError, match="not a JKS, JCEKS or PKCS#12"):
        keystores.trusted(b"\x30\x03junk", None, "t")


def test_only_a_regular_file_of_sane_size_is_read(tmp_path):
    """A FIFO would block and a device never end: both refused at once."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def read() -> None:
        with pytest.raises(KeystoreError, match="not a regular file"):
            keystores.read_file(str(fifo), "f")
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5)
    with pytest.raises(KeystoreError, match="not a regular file"):
        keystores.read_file("/dev/zero", "z")
    big = tmp_path / "big"
    big.write_bytes(b"\0" * (keystores.MAX_BYTES + 1))
    with pytest.raises(KeystoreError, match="larger than 4 MiB"):
        keystores.read_file(str(big), "b")
    with pytest.raises(KeystoreError, match="cannot open it"):
        keystores.read_file(str(tmp_path / "none"), "n")


class _Context:
    """Stands in for an SSLContext: what OpenSSL would be handed, seen as it is handed."""

    def load_cert_chain(self, path: str, password: str) -> None:
        self.path, self.password = path, password
        self.mode = stat.S_IMODE(os.stat(path).st_mode)
        self.folder_mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)
        with open(path, "rb") as f:
            self.data = f.read()


@pytest.mark.parametrize("memfd", [True, False])
def test_a_client_key_reaches_openssl_encrypted_and_never_stays(monkeypatch, tmp_path, memfd):
    """Through an anonymous memory file, or without one a 0600 file in a private
    directory; encrypted under a one-time password either way; gone afterwards."""
    key, leaf = _cert("client")
    if not memfd:
        monkeypatch.delattr(os, "memfd_create", raising=False)
        monkeypatch.setenv("TMPDIR", str(tmp_path))
        monkeypatch.setattr("tempfile.tempdir", None)
    ctx = _Context()
    keystores.load_identity(ctx, key, [leaf])  # type: ignore[arg-type]
    assert b"ENCRYPTED PRIVATE KEY" in ctx.data and b"BEGIN CERTIFICATE" in ctx.data
    assert b"BEGIN PRIVATE KEY" not in ctx.data
    if memfd:
        assert ctx.path.startswith("/proc/self/fd/")
    else:
        assert (ctx.mode, ctx.folder_mode) == (0o600, 0o700)
        assert ctx.path.startswith(str(tmp_path)) and not list(tmp_path.iterdir())
    real = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    keystores.load_identity(real, key, [leaf])  # OpenSSL takes it

"""Java key stores (JKS, JCEKS, PKCS#12) and PEM files, read as a Java client reads them,
for Python's ``ssl``: the certificates a Java trust manager trusts, and the private key
and chain a Java key manager presents. For clients configured the Java way (a JDBC URL's
``trustCertificateKeyStoreUrl``) that connect from Python.

Promised:

* A store is read whole, from a regular file only (never a FIFO or a device, which could
  block or never end), at most :data:`MAX_BYTES`. Its format is read from its content,
  as Java 9+ reads a ``JKS`` or ``PKCS12`` store of either format; a ``JCEKS`` store is
  read too.
* Trusted, as ``TrustStoreUtil.getTrustedCerts`` of the JDK: every certificate entry, and
  the first certificate of each key entry. A PKCS#12 store without a key is a trust store:
  all its certificates (Java would want its trusted-usage attribute on each, which
  ``keytool`` always writes).
* A password is used to check the store and decrypt its key, never kept or shown; none
  given reads a JKS store without checking it, as Java does. Errors never hold a
  password or the store's content.
* A private key never reaches a disk in clear: :func:`load_identity` hands OpenSSL the key
  encrypted under a one-time password, through an anonymous memory file (Linux
  ``memfd``), or where there is none a 0600 file in a private 0700 directory, removed at
  once.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import ssl
import stat
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import jks
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

#: a key store is small: a bigger file is not one
MAX_BYTES = 4 << 20
JKS, JCEKS, PKCS12, PEM = "JKS", "JCEKS", "PKCS12", "PEM"
_MAGIC = {b"\xfe\xed\xfe\xed": JKS, b"\xce\xce\xce\xce": JCEKS}


class KeystoreError(ValueError):
    """A store that cannot be used; the message names the store, never a secret."""


def read_file(path: str, what: str) -> bytes:
    """The bytes of the regular file ``path`` (``what`` names it in errors)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise KeystoreError(f"{what}: cannot open it ({e.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeystoreError(f"{what}: not a regular file")
        if info.st_size > MAX_BYTES:
            raise KeystoreError(f"{what}: larger than {MAX_BYTES >> 20} MiB, not a key store")
        chunks, size = [], 0
        while size <= MAX_BYTES and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_BYTES:
        raise KeystoreError(f"{what}: larger than {MAX_BYTES >> 20} MiB, not a key store")
    return data


def kind_of(data: bytes) -> str:
    """JKS, JCEKS, PEM or PKCS12 (anything else is tried as PKCS#12, DER)."""
    if data[:4] in _MAGIC:
        return _MAGIC[data[:4]]
    if data.lstrip()[:10] == b"-----BEGIN":
        return PEM
    return PKCS12


def trusted(data: bytes, password: str | None, what: str) -> list[x509.Certificate]:
    """The certificates a Java trust manager made from this store trusts."""
    kind = kind_of(data)
    if kind == PEM:
        certs = _pem_certificates(data, what)
    elif kind == PKCS12:
        parsed = _pkcs12(data, password, what)
        extra = [c.certificate for c in parsed.additional_certs]
        if parsed.key is not None:
            certs = [parsed.cert.certificate] if parsed.cert is not None else []
        else:
            certs = ([parsed.cert.certificate] if parsed.cert is not None else []) + extra
    else:
        certs = []
        for entry in _java_store(data, password, what).entries.values():
            if isinstance(entry, jks.TrustedCertEntry):
                certs.append(_der(entry.cert, what))
            elif isinstance(entry, jks.PrivateKeyEntry) and entry.cert_chain:
                certs.append(_der(entry.cert_chain[0][1], what))
    if not certs:
        raise KeystoreError(f"{what}: holds no certificate to trust")
    return certs


def identity(
    data: bytes, password: str | None, key_password: str | None, what: str
) -> tuple[Any, list[x509.Certificate]]:
    """The private key of the store's one key entry and its certificate chain (leaf
    first). ``key_password`` decrypts the key when it differs from the store's."""
    kind = kind_of(data)
    if kind == PEM:
        raise KeystoreError(f"{what}: a PEM file is not a key store (give JKS or PKCS#12)")
    if kind == PKCS12:
        parsed = _pkcs12(data, password, what)
        if parsed.key is None or parsed.cert is None:
            raise KeystoreError(f"{what}: holds no private key with its certificate")
        return parsed.key, [parsed.cert.certificate] + [
            c.certificate for c in parsed.additional_certs
        ]
    store = _java_store(data, password, what)
    keys = [e for e in store.entries.values() if isinstance(e, jks.PrivateKeyEntry)]
    if len(keys) != 1:
        raise KeystoreError(
            f"{what}: holds {len(keys)} private keys; the client presents the store's one key"
        )
    entry = keys[0]
    if not entry.is_decrypted():
        try:
            entry.decrypt(key_password if key_password is not None else password or "")
        except Exception:
            raise KeystoreError(
                f"{what}: its private key does not open with the password"
            ) from None
    try:
        key = serialization.load_der_private_key(entry.pkey_pkcs8, None)
    except (ValueError, TypeError):
        raise KeystoreError(f"{what}: its private key is of a kind that cannot be read") from None
    return key, [_der(der, what) for _, der in entry.cert_chain]


def pem(certs: Sequence[x509.Certificate]) -> str:
    """Certificates as PEM text (what ``SSLContext.load_verify_locations(cadata=…)`` takes)."""
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certs)


def load_identity(ctx: ssl.SSLContext, key: Any, chain: Sequence[x509.Certificate]) -> None:
    """Give ``ctx`` the client key and chain without the key ever on a disk in clear."""
    once = secrets.token_urlsafe(32)
    blob = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    blob += key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(once.encode()),
    )
    with _private_file(blob) as path:
        ctx.load_cert_chain(path, password=once)


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A path that reads as ``data``, readable by this process alone, gone afterwards."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("sparkpipes-tls", getattr(os, "MFD_CLOEXEC", 0))
        try:
            _write_all(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    folder = tempfile.mkdtemp(prefix="sparkpipes-tls-")  # 0700
    try:
        path = os.path.join(folder, "identity.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _pem_certificates(data: bytes, what: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise KeystoreError(f"{what}: not PEM certificates") from None


def _der(data: bytes, what: str) -> x509.Certificate:
    try:
        return x509.load_der_x509_certificate(bytes(data))
    except ValueError:
        raise KeystoreError(f"{what}: holds a certificate that cannot be read") from None


def _pkcs12(data: bytes, password: str | None, what: str) -> Any:
    tries = [password.encode()] if password is not None else [None, b""]
    for secret in tries:
        try:
            return pkcs12.load_pkcs12(data, secret)
        except ValueError:
            continue
        except Exception:
            break
    raise KeystoreError(
        f"{what}: not a JKS, JCEKS or PKCS#12 key store, or its password does not open it"
    )


def _java_store(data: bytes, password: str | None, what: str) -> Any:
    try:
        return jks.KeyStore.loads(data, password, try_decrypt_keys=password is not None)
    except jks.util.KeystoreSignatureException:
        raise KeystoreError(
            f"{what}: its password does not open it (integrity check failed)"
        ) from None
    except Exception:
        raise KeystoreError(f"{what}: not a JKS or JCEKS key store that can be read") from None

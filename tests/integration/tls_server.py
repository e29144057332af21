"""A second MariaDB server that speaks TLS, on its own loopback port and socket, for the JDBC
source's TLS tests (shared by the session: ``mariadb_tls`` in tests/conftest.py).

Made as a Kafka Docker playground user makes theirs (``connect-jdbc-mysql-source/
mysql-mtls.sh``): a CA, a server certificate (for 127.0.0.1 and localhost) and a client
certificate signed by it; the trust store made by Java's ``keytool -importcert``, the
client key store by ``keytool -importkeystore`` from a PKCS#12 file, in JKS and PKCS#12
(Java 17's default). A second CA signs nothing the server shows: a trust store of it is
the wrong one. Users: ``tls`` (``REQUIRE SSL``) and ``mtls`` (``REQUIRE X509``: a client
certificate the CA signed).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pymysql
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

#: the password of every store made here, and of the two users
STORE_PASSWORD = "store-pw-7"
USERS = {"tls": ("tls-pw-3", "REQUIRE SSL"), "mtls": ("mtls-pw-5", "REQUIRE X509")}


class TlsMariaDB:
    """``port``, ``socket``; ``files`` (name → path): ``ca.pem``, ``wrong-ca.pem``,
    ``truststore.jks``, ``truststore.p12``, ``wrong-truststore.jks``, ``keystore.jks``,
    ``keystore.p12``, ``client.pem``, ``client.key``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.socket = str(root / "mysqld.sock")
        self.files: dict[str, Path] = {}
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> TlsMariaDB:
        data = self.root / "data"
        install = subprocess.Popen(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={data}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._certificates()
        stores = self._stores()  # keytool runs while the data directory is made
        _, err = install.communicate(timeout=120)
        if install.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {err.decode()[-2000:]}")
        self._proc = subprocess.Popen(
            [
                "mariadbd",
                "--no-defaults",
                "--user=root",
                f"--datadir={data}",
                f"--socket={self.socket}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--pid-file={self.root / 'mysqld.pid'}",
                f"--log-error={self.root / 'error.log'}",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=16M",
                f"--ssl-ca={self.files['ca.pem']}",
                f"--ssl-cert={self.root / 'server.pem'}",
                f"--ssl-key={self.root / 'server.key'}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for proc in stores:
            if proc.wait(timeout=120) != 0:
                raise RuntimeError(f"keytool failed: {proc.args}")
        deadline = time.monotonic() + 60
        while True:
            try:
                self.run("SELECT 1")
                break
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    log = (self.root / "error.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"the TLS MariaDB did not start: {log}") from None
                time.sleep(0.1)
        for user, (password, require) in USERS.items():
            self.run(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}' {require}")
            self.run(f"GRANT ALL ON *.* TO '{user}'@'127.0.0.1'")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self.root / "data", ignore_errors=True)

    def run(self, sql: str, database: str | None = None) -> list[tuple]:
        """SQL as root over the server's socket (no TLS needed there)."""
        conn = pymysql.connect(unix_socket=self.socket, user="root", database=database)
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                rows = list(cur.fetchall())
            conn.commit()
            return rows
        finally:
            conn.close()

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A fresh database, dropped afterwards."""
        name = f"sp_tls_{uuid.uuid4().hex[:8]}"
        self.run(f"CREATE DATABASE {name}")
        try:
            yield name
        finally:
            self.run(f"DROP DATABASE {name}")

    # -- what the server and the clients are given -----------------------------------------
    def _certificates(self) -> None:
        ca_key, ca = _ca("sparkpipes test CA")
        _, wrong = _ca("another CA")
        server_key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        server = _signed(server_key, "localhost", ca_key, ca, names)
        client_key = ec.generate_private_key(ec.SECP256R1())
        client = _signed(client_key, "sparkpipes-client", ca_key, ca, [])
        for name, cert in (("ca.pem", ca), ("wrong-ca.pem", wrong), ("server.pem", server)):
            self._put(name, cert.public_bytes(serialization.Encoding.PEM))
        self._put("client.pem", client.public_bytes(serialization.Encoding.PEM))
        self._put("server.key", _key_pem(server_key))
        self._put("client.key", _key_pem(client_key))
        self._put(
            "client-openssl.p12",
            pkcs12.serialize_key_and_certificates(
                b"mysqlclient",
                client_key,
                client,
                [ca],
                serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
            ),
        )

    def _stores(self) -> list[subprocess.Popen[bytes]]:
        """keytool, as the playground runs it (and into PKCS#12, Java 17's default)."""
        pw = STORE_PASSWORD
        jobs = []
        for store, ca, kind in (
            ("truststore.jks", "ca.pem", "JKS"),
            ("truststore.p12", "ca.pem", "PKCS12"),
            ("wrong-truststore.jks", "wrong-ca.pem", "JKS"),
        ):
            jobs.append(
                [
                    *("keytool", "-importcert", "-alias", "MySQLCACert", "-noprompt"),
                    *("-file", str(self.files[ca]), "-keystore", str(self.root / store)),
                    *("-storetype", kind, "-storepass", pw),
                ]
            )
            self.files[store] = self.root / store
        for store, kind in (("keystore.jks", "JKS"), ("keystore.p12", "PKCS12")):
            jobs.append(
                [
                    *("keytool", "-importkeystore", "-noprompt", "-srcstoretype", "pkcs12"),
                    *("-srckeystore", str(self.files["client-openssl.p12"]), "-srcstorepass", pw),
                    *("-destkeystore", str(self.root / store), "-deststoretype", kind),
                    *("-deststorepass", pw),
                ]
            )
            self.files[store] = self.root / store
        return [
            subprocess.Popen(job, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for job in jobs
        ]

    def _put(self, name: str, data: bytes) -> None:
        path = self.root / name
        path.write_bytes(data)
        os.chmod(path, 0o600)
        self.files[name] = path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _signed(
    key: ec.EllipticCurvePrivateKey,
    name: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    names: list[x509.GeneralName],
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )

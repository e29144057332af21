"""TLS to MySQL and MariaDB as their Java drivers read a JDBC URL, set up for PyMySQL.

The same parameters mean different things to the two drivers; each URL is read as the
current release of its own driver reads it:

* ``jdbc:mysql:`` — MySQL Connector/J 8/9 (``PropertyDefinitions``, ``DefaultPropertySet``,
  ``ExportControlled``). ``sslMode`` is DISABLED, PREFERRED (the default), REQUIRED,
  VERIFY_CA or VERIFY_IDENTITY (any case). Without it the legacy switches translate:
  ``useSSL`` (default true) false → DISABLED, else ``verifyServerCertificate`` (default
  false) true → VERIFY_CA, else ``requireSSL`` true → REQUIRED, else PREFERRED. So
  ``useSSL=true`` alone encrypts and verifies nothing (Connector/J 5.1 verified by default;
  8.0 changed it). The trust store (``trustCertificateKeyStoreUrl``, a ``file:`` URL) is
  read only to verify; without one the system's CAs are trusted
  (``fallbackToSystemTrustStore``). The client key store (``clientCertificateKeyStoreUrl``)
  is presented whenever TLS is used. ``tlsVersions`` / ``enabledTLSProtocols`` keep TLSv1.2
  and TLSv1.3, as Connector/J does (TLSv1 or TLSv1.1 alone is refused).
* ``jdbc:mariadb:`` — MariaDB Connector/J 3 (``Configuration``, ``SslMode``,
  ``DefaultTlsSocketPlugin``). Option names in any case; ``sslMode`` disable (the default),
  trust, verify-ca, verify-full or an alias (``REQUIRED``, ``VERIFY_IDENTITY``, ``true`` …);
  the legacy ``useSsl``/``useSSL`` = true means verify-full, trust with
  ``trustServerCertificate``, verify-ca with ``disableSslHostnameVerification``.
  ``serverSslCert`` (a PEM file, a ``file:`` URL or the PEM itself), ``trustStore`` and
  ``keyStore`` (a path or a ``file:`` URL; Connector/J's names are aliases), their passwords
  and types, ``keyPassword``, ``enabledSslProtocolSuites``. Connector/J's
  ``requireSSL``/``verifyServerCertificate``, which MariaDB's driver ignores, are refused
  when true: the connection would not be what they ask.

:meth:`Tls.context` builds PyMySQL's ``ssl.SSLContext`` for each connection (the files
read then, as libpq reads its own): nothing verified for PREFERRED and REQUIRED, the
chain for VERIFY_CA (as Java's PKIX, any certificate of the trust store is an anchor: the
server's own, an intermediate), the host name too for VERIFY_IDENTITY. PREFERRED falls
back to a connection without TLS only when the server offers none. Not done as asked, so
refused by name: cipher-suite lists (Java's names), Java security providers, a FIPS-only
JSSE, a key store that is not a file. Connector/J also checks the validity dates of a
certificate it does not verify; here an unverified certificate is not looked at.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from sparkpipes.config import Secret
from sparkpipes.errors import ConfigError
from sparkpipes.util import keystores

MYSQL, MARIADB = "mysql", "mariadb"
DISABLED, PREFERRED, REQUIRED = "DISABLED", "PREFERRED", "REQUIRED"
VERIFY_CA, VERIFY_IDENTITY = "VERIFY_CA", "VERIFY_IDENTITY"
VERIFYING = (VERIFY_CA, VERIFY_IDENTITY)
#: the versions a Java driver may list, and the ones used (Connector/J's approved ones)
KNOWN_VERSIONS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
_USED = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
STORE_TYPES = ("JKS", "PKCS12", "JCEKS")

#: Connector/J's TLS parameters (names as written: Connector/J matches them exactly)
CONNECTOR_J = frozenset(
    {
        "sslMode",
        "useSSL",
        "requireSSL",
        "verifyServerCertificate",
        "trustCertificateKeyStoreUrl",
        "trustCertificateKeyStorePassword",
        "trustCertificateKeyStoreType",
        "clientCertificateKeyStoreUrl",
        "clientCertificateKeyStorePassword",
        "clientCertificateKeyStoreType",
        "fallbackToSystemTrustStore",
        "fallbackToSystemKeyStore",
        "tlsVersions",
        "enabledTLSProtocols",
        "fipsCompliantJsse",
    }
)
#: MariaDB Connector/J's TLS options, lower-cased (it matches them in any case), with
#: the Connector/J names it takes as aliases
MARIADB_OPTIONS = frozenset(
    {
        "sslmode",
        "serversslcert",
        "truststore",
        "truststorepassword",
        "truststoretype",
        "keystore",
        "keystorepassword",
        "keystoretype",
        "keypassword",
        "enabledsslprotocolsuites",
        "fallbacktosystemtruststore",
        "fallbacktosystemkeystore",
    }
)
MARIADB_ALIASES = {
    "trustcertificatekeystoreurl": "truststore",
    "trustcertificatekeystorepassword": "truststorepassword",
    "trustcertificatekeystoretype": "truststoretype",
    "clientcertificatekeystoreurl": "keystore",
    "clientcertificatekeystorepassword": "keystorepassword",
    "clientcertificatekeystoretype": "keystoretype",
}
#: MariaDB's legacy switches, read by their exact names
MARIADB_LEGACY = ("useSsl", "useSSL", "trustServerCertificate", "disableSslHostnameVerification")
_MARIADB_MODES = {
    **dict.fromkeys(("disable", "disabled", "0", "false"), DISABLED),
    **dict.fromkeys(("trust", "required"), REQUIRED),
    **dict.fromkeys(("verify-ca", "verify_ca"), VERIFY_CA),
    **dict.fromkeys(
        ("verify-full", "verify_full", "verify_identity", "1", "true"), VERIFY_IDENTITY
    ),
}

_CIPHERS = (
    "cipher suites by their Java names are not supported (OpenSSL's own TLS 1.2+ suites "
    "are used): leave it out"
)
_PROVIDER = "Java security providers are not supported: leave it out"
#: TLS parameters refused by name, per driver
REFUSED: dict[str, dict[str, str]] = {
    MYSQL: {
        "tlsCiphersuites": _CIPHERS,
        "enabledSSLCipherSuites": _CIPHERS,
        "keyStoreProvider": _PROVIDER,
        "sslContextProvider": _PROVIDER,
        "trustManagerFactoryProvider": _PROVIDER,
        "keyManagerFactoryProvider": _PROVIDER,
    },
    MARIADB: {
        "enabledsslciphersuites": _CIPHERS,
        "tlssockettype": "TLS socket plugins are not supported: leave it out",
    },
}


@dataclass(frozen=True)
class Store:
    """A key store or certificate file the URL names: ``param`` is the parameter (errors
    name it), ``path`` the file of the server's disk, or ``pem`` the certificates."""

    param: str
    path: str | None = None
    pem: str | None = None
    password: Secret | None = None

    @property
    def what(self) -> str:
        where = f" ('{self.path}')" if self.path else ""
        return f"connection.url parameter '{self.param}'{where}"

    def read(self) -> bytes:
        return (
            self.pem.encode()
            if self.pem is not None
            else keystores.read_file(str(self.path), self.what)
        )

    def secret(self) -> str | None:
        return self.password.reveal() if self.password is not None else None


@dataclass(frozen=True)
class Tls:
    """How a MySQL or MariaDB connection is secured, as ``driver`` reads the URL
    (picklable: the files are read per connection, by :meth:`context`)."""

    driver: str
    mode: str = PREFERRED
    #: the CAs a verifying mode trusts; None: the system's (``system_trust``)
    trust: Store | None = None
    #: the client's key and certificate
    identity: Store | None = None
    key_password: Secret | None = None
    system_trust: bool = True
    #: TLSv1.2 / TLSv1.3; () for both
    versions: tuple[str, ...] = ()

    def context(self) -> ssl.SSLContext | None:
        """The context PyMySQL is given, None where its own default is the same
        (PREFERRED without a client key or a narrowed version: TLS when the server offers
        it, nothing verified) or TLS is off. ConfigError for a store that cannot be used."""
        if self.mode == DISABLED or (
            self.mode == PREFERRED and self.identity is None and not self.versions
        ):
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        chosen = [_USED[v] for v in self.versions] or list(_USED.values())
        ctx.minimum_version, ctx.maximum_version = min(chosen), max(chosen)
        try:
            if self.mode in VERIFYING:
                ctx.check_hostname = self.mode == VERIFY_IDENTITY
                ctx.verify_mode = ssl.CERT_REQUIRED
                flags = (ctx.verify_flags & ~ssl.VERIFY_X509_STRICT) | ssl.VERIFY_X509_PARTIAL_CHAIN
                ctx.verify_flags = flags
                if self.trust is not None:
                    certs = keystores.trusted(
                        self.trust.read(), self.trust.secret(), self.trust.what
                    )
                    ctx.load_verify_locations(cadata=keystores.pem(certs))
                else:
                    ctx.load_default_certs()
            else:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            if self.identity is not None:
                store = self.identity
                password = self.key_password.reveal() if self.key_password else None
                key, chain = keystores.identity(store.read(), store.secret(), password, store.what)
                keystores.load_identity(ctx, key, chain)
        except keystores.KeystoreError as e:
            raise ConfigError(str(e)) from None
        except ssl.SSLError as e:
            which = self.identity if self.identity is not None else self.trust
            what = which.what if which is not None else "connection.url"
            raise ConfigError(f"{what}: OpenSSL cannot use it ({e.reason or 'invalid'})") from None
        return ctx

    def describe(self) -> str:
        """What a user reads about this connection's TLS (never a password)."""
        if self.mode == DISABLED:
            return f"no TLS ({self.driver})"
        trust = self.trust.param if self.trust is not None else "the system's CAs"
        checks = {
            PREFERRED: "TLS when the server offers it, the server not verified",
            REQUIRED: "TLS, the server not verified",
            VERIFY_CA: f"TLS, the server's certificate verified against {trust}",
            VERIFY_IDENTITY: f"TLS, the server's certificate and name verified against {trust}",
        }[self.mode]
        client = f", client certificate from {self.identity.param}" if self.identity else ""
        return f"{checks}{client} ({self.driver}, sslMode {self.mode})"


def reads(family: str, name: str) -> bool:
    """Whether ``name`` is a TLS parameter the driver of ``family`` reads."""
    if family == MYSQL:
        return name in CONNECTOR_J
    if family == MARIADB:
        lower = name.lower()
        return lower in MARIADB_OPTIONS or lower in MARIADB_ALIASES or name in MARIADB_LEGACY
    return False


def refused(family: str, name: str, value: str) -> str | None:
    """Why TLS parameter ``name`` is refused for ``family`` (never its value), or None."""
    key = name.lower() if family == MARIADB else name
    if key in REFUSED.get(family, {}):
        return REFUSED[family][key]
    if family == MARIADB and name in ("requireSSL", "verifyServerCertificate"):
        if value.strip().lower() in ("false", "no", "0"):
            return None
        return (
            "MySQL Connector/J's parameter, which MariaDB Connector/J ignores (it connects as "
            "sslMode says, by default without TLS): give sslMode (trust, verify-ca, verify-full)"
        )
    if family == MYSQL and name == "fipsCompliantJsse" and value.strip().lower() in ("true", "yes"):
        return "a FIPS-only JSSE is not supported"
    return None


def plan(family: str, params: Mapping[str, str]) -> tuple[Tls, list[str]]:
    """The TLS of a ``family`` URL with parameters ``params`` (passwords in clear), and
    the problems found (each names its parameter, never a value)."""
    problems: list[str] = []
    if family == MARIADB:
        return _mariadb(params, problems), problems
    return _connector_j(params, problems), problems


# -- MySQL Connector/J -------------------------------------------------------------------------
_JAVA_BOOL = {"true": True, "yes": True, "false": False, "no": False}


def _connector_j(p: Mapping[str, str], problems: list[str]) -> Tls:
    def flag(name: str, default: bool) -> bool:
        if name not in p:
            return default
        value = _JAVA_BOOL.get(p[name].strip().lower())
        if value is None:
            problems.append(f"connection.url parameter '{name}' must be true, false, yes or no")
            return default
        return value

    use, verify, require = (
        flag("useSSL", True),
        flag("verifyServerCertificate", False),
        flag("requireSSL", False),
    )
    system_trust = flag("fallbackToSystemTrustStore", True)
    flag("fallbackToSystemKeyStore", True)  # no javax.net.ssl.keyStore here: either is none
    if "sslMode" in p:
        mode = p["sslMode"].strip().upper()
        if mode not in (DISABLED, PREFERRED, REQUIRED, *VERIFYING):
            problems.append(
                "connection.url parameter 'sslMode' must be one of DISABLED, PREFERRED, "
                "REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
            )
            mode = PREFERRED
    elif any(k in p for k in ("useSSL", "verifyServerCertificate", "requireSSL")):
        mode = DISABLED if not use else VERIFY_CA if verify else REQUIRED if require else PREFERRED
    else:
        mode = PREFERRED
    trust = _store(
        p, "trustCertificateKeyStoreUrl", "trustCertificateKeyStorePassword", True, problems
    )
    identity = _store(
        p, "clientCertificateKeyStoreUrl", "clientCertificateKeyStorePassword", True, problems
    )
    for name in ("trustCertificateKeyStoreType", "clientCertificateKeyStoreType"):
        _store_type(name, p.get(name), problems)
    versions = _versions(
        p, "tlsVersions" if "tlsVersions" in p else "enabledTLSProtocols", problems
    )
    return _finish(
        "MySQL Connector/J", mode, trust, identity, None, system_trust, versions, problems
    )


# -- MariaDB Connector/J -----------------------------------------------------------------------
def _mariadb(given: Mapping[str, str], problems: list[str]) -> Tls:
    p: dict[str, tuple[str, str]] = {}  # option (lower-case, aliases resolved) → (name, value)
    for name, value in given.items():
        key = MARIADB_ALIASES.get(name.lower(), name.lower())
        if key in MARIADB_OPTIONS and (key not in p or name.lower() == key):
            p[key] = (name, value)

    def flag(key: str) -> bool:
        if key not in p:
            return True
        value = p[key][1].strip().lower()
        if value not in ("", "1", "true", "0", "false"):
            problems.append(f"connection.url parameter '{p[key][0]}' must be true or false")
        return value in ("", "1", "true")

    mode = DISABLED
    if "sslmode" in p:
        name, value = p["sslmode"]
        if value.strip().lower() not in _MARIADB_MODES:
            problems.append(
                f"connection.url parameter '{name}' must be one of disable, trust, verify-ca, "
                "verify-full"
            )
        mode = _MARIADB_MODES.get(value.strip().lower(), DISABLED)

    def legacy(name: str) -> bool:  # Configuration.isSet: exact name, "1", "true" or empty
        return given.get(name) in ("1", "true", "")

    if legacy("useSsl") or legacy("useSSL"):
        mode = (
            REQUIRED
            if legacy("trustServerCertificate")
            else VERIFY_CA
            if legacy("disableSslHostnameVerification")
            else VERIFY_IDENTITY
        )
    system_trust = flag("fallbacktosystemtruststore")
    flag("fallbacktosystemkeystore")
    plain = dict(p.values())
    trust = None
    if "truststore" in p:
        trust = _store(plain, p["truststore"][0], _name(p, "truststorepassword"), False, problems)
    elif "serversslcert" in p:
        name, value = p["serversslcert"]
        if value.lstrip().startswith("-----"):
            trust = Store(name, pem=value)
        else:
            trust = _store(plain, name, None, False, problems)
    identity = None
    if "keystore" in p:
        identity = _store(plain, p["keystore"][0], _name(p, "keystorepassword"), False, problems)
    for key in ("truststoretype", "keystoretype"):
        if key in p:
            _store_type(p[key][0], p[key][1], problems)
    key_password = Secret(p["keypassword"][1]) if "keypassword" in p else None
    versions = (
        _versions(plain, p["enabledsslprotocolsuites"][0], problems)
        if "enabledsslprotocolsuites" in p
        else ()
    )
    return _finish(
        "MariaDB Connector/J", mode, trust, identity, key_password, system_trust, versions, problems
    )


def _name(p: Mapping[str, tuple[str, str]], key: str) -> str | None:
    return p[key][0] if key in p else None


# -- shared ------------------------------------------------------------------------------------
def _finish(
    driver: str,
    mode: str,
    trust: Store | None,
    identity: Store | None,
    key_password: Secret | None,
    system_trust: bool,
    versions: tuple[str, ...],
    problems: list[str],
) -> Tls:
    """The plan, with what the mode leaves unread left out (the trust store outside the
    verifying modes, every store without TLS), as the drivers leave them unread."""
    if mode in VERIFYING and trust is None and not system_trust:
        problems.append(
            f"connection.url asks {driver} to verify the server (sslMode {mode}) with "
            "fallbackToSystemTrustStore=false and no trust store: give one"
        )
    if mode not in VERIFYING:
        trust = None
    if mode == DISABLED:
        identity = None
    return Tls(driver, mode, trust, identity, key_password, system_trust, versions)


def _store(
    p: Mapping[str, str], name: str, password: str | None, url_only: bool, problems: list[str]
) -> Store | None:
    """The file parameter ``name`` names: a ``file:`` URL (Connector/J takes nothing else)
    or, for MariaDB's driver, a path too; other URLs are never fetched."""
    value = (p.get(name) or "").strip()
    if not value:
        return None
    secret = Secret(p[password]) if password and p.get(password) else None
    parts = urlsplit(value)
    if parts.scheme.lower() == "file":
        if parts.netloc not in ("", "localhost"):
            problems.append(
                f"connection.url parameter '{name}' names a file of another host: give a "
                "file: URL of this server's disk"
            )
            return None
        return Store(name, path=unquote(parts.path), password=secret)
    if len(parts.scheme) > 1:  # a one-letter scheme is a Windows drive
        problems.append(
            f"connection.url parameter '{name}' is a {parts.scheme}: URL: key stores are "
            "read from this server's disk only (file:/path)"
        )
        return None
    if url_only:
        problems.append(
            f"connection.url parameter '{name}' is not a URL: MySQL Connector/J takes a URL "
            "(file:/path/store.jks)"
        )
        return None
    return Store(name, path=value, password=secret)


def _store_type(name: str, value: str | None, problems: list[str]) -> None:
    if value is not None and value.strip() and value.strip().upper() not in STORE_TYPES:
        problems.append(
            f"connection.url parameter '{name}' must be JKS, PKCS12 or JCEKS (other key "
            "store types are not supported)"
        )


def _versions(p: Mapping[str, str], name: str, problems: list[str]) -> tuple[str, ...]:
    """The TLS versions of a list parameter, as Connector/J filters them: known ones, then
    the approved TLSv1.2 and TLSv1.3 (none of those is an error)."""
    if name not in p:
        return ()
    listed = [v.strip() for v in p[name].split(",") if v.strip()]
    known = [v for v in listed if v in KNOWN_VERSIONS]
    used = tuple(v for v in _USED if v in known)
    if not known:
        problems.append(
            f"connection.url parameter '{name}' lists no TLS version (TLSv1.2, TLSv1.3)"
        )
    elif not used:
        problems.append(
            f"connection.url parameter '{name}': TLSv1 and TLSv1.1 are not supported "
            "(accepted: TLSv1.2, TLSv1.3)"
        )
    return () if len(used) == len(_USED) else used

"""The parameters of a JDBC ``connection.url`` (``?useSSL=false&serverTimezone=UTC``) and
what sparkpipes does with each — one registry, as for Connect's own keys
(``sources.connect.framework``).

The URL is written for a Java driver (pgjdbc, MySQL Connector/J, MariaDB Connector/J);
here psycopg2 (libpq) and PyMySQL connect. A parameter is **honoured** (the login, the
schema, PostgreSQL's TLS settings, which libpq takes under the same names), **accepted as
not applicable** (it tunes the Java driver: batching of inserts, prepared statements,
time-outs, character sets — nothing that changes the rows read), or **refused by name**:
TLS that the Python driver would not set up as asked (a MySQL URL asking for TLS, Java
keystores) and settings that change the values read. Refusals never show a value: a
keystore password sits in the same URL.
"""

from __future__ import annotations

from collections.abc import Mapping

POSTGRESQL, MYSQL = "postgresql", "mysql"  # MariaDB URLs are read as MySQL's

#: read by ``parse_url`` itself: the login and the schema
LOGIN = frozenset({"user", "password", "currentSchema"})
#: PostgreSQL parameters libpq takes under the same name and meaning
LIBPQ = frozenset({"sslmode", "sslrootcert", "sslcert", "sslkey"})

_TUNING = "tunes the Java driver; the Python driver reads the same rows"
NOT_APPLICABLE: dict[str, str] = {
    **dict.fromkeys(
        (
            "rewriteBatchedStatements",
            "reWriteBatchedInserts",
            "useServerPrepStmts",
            "cachePrepStmts",
            "prepStmtCacheSize",
            "prepStmtCacheSqlLimit",
            "prepareThreshold",
            "preparedStatementCacheQueries",
            "defaultRowFetchSize",
            "defaultFetchSize",
            "useCursorFetch",
            "connectTimeout",
            "socketTimeout",
            "loginTimeout",
            "tcpKeepAlive",
            "autoReconnect",
            "maxReconnects",
            "ApplicationName",
            "applicationName",
            "allowPublicKeyRetrieval",
            "useLegacyDatetimeCode",
            "stringtype",
            "allowMultiQueries",
        ),
        _TUNING,
    ),
    "useUnicode": "the Python driver always talks UTF-8 (utf8mb4) to the server",
    "characterEncoding": "the Python driver always talks UTF-8 (utf8mb4) to the server",
    "serverTimezone": (
        "tells Connector/J the server's time zone to convert timestamps to the JVM's clock; "
        "here DATETIME and TIMESTAMP values are read as the server gives them"
    ),
    "enabledTLSProtocols": "the TLS versions a Java driver offers; without TLS none is used",
}

_KEYSTORE = (
    "Java keystores (JKS/PKCS#12 through {p}) are not read by the Python driver: for "
    "PostgreSQL give sslrootcert/sslcert/sslkey (PEM files); TLS to MySQL is not supported yet"
)
REFUSED: dict[str, str] = {
    **{
        p: _KEYSTORE.format(p=p)
        for p in (
            "trustCertificateKeyStoreUrl",
            "trustCertificateKeyStorePassword",
            "trustCertificateKeyStoreType",
            "clientCertificateKeyStoreUrl",
            "clientCertificateKeyStorePassword",
            "clientCertificateKeyStoreType",
            "sslfactory",
            "sslpassword",
        )
    },
    "zeroDateTimeBehavior": "zeroDateTimeBehavior is not supported (zero dates are read as NULL)",
    "options": "options (server settings such as search_path) is not supported: use currentSchema",
}

#: MySQL TLS switches, and the values that leave TLS off (PyMySQL's way without ``ssl``)
MYSQL_TLS = {
    "useSSL": ("false",),
    "requireSSL": ("false",),
    "verifyServerCertificate": ("false", "true"),  # only matters with TLS on
    "sslMode": ("disabled", "preferred"),
    "sslmode": ("disable", "prefer", "allow"),
}


def problem(scheme: str, name: str, value: str) -> str | None:
    """Why parameter ``name`` of a ``scheme`` URL is refused, or None (never the value)."""
    if name in REFUSED:
        return f"connection.url parameter '{name}': {REFUSED[name]}"
    if scheme == MYSQL and name in MYSQL_TLS and value.strip().lower() not in MYSQL_TLS[name]:
        return (
            f"connection.url parameter '{name}' asks for TLS to MySQL/MariaDB, which is not "
            "supported yet (useSSL=false connects without it)"
        )
    if scheme == POSTGRESQL and name == "ssl":
        return None
    if name in LOGIN or name in NOT_APPLICABLE:
        return None
    if (scheme == POSTGRESQL and name in LIBPQ) or (scheme == MYSQL and name in MYSQL_TLS):
        return None
    return (
        f"connection.url parameter '{name}' is not understood (honoured: "
        f"{', '.join(sorted(LOGIN | (LIBPQ if scheme == POSTGRESQL else set())))}; the "
        "Java drivers' tuning parameters are accepted)"
    )


def driver_options(scheme: str, params: Mapping[str, str]) -> dict[str, str]:
    """What the Python driver is given for ``params`` (checked by :func:`problem`): for
    PostgreSQL the libpq TLS settings, ``ssl=true`` read as pgjdbc reads it (``sslmode``
    ``verify-full`` unless ``sslmode`` says otherwise)."""
    if scheme != POSTGRESQL:
        return {}
    out = {k: v for k, v in params.items() if k in LIBPQ}
    if params.get("ssl", "").strip().lower() in ("true", "") and "ssl" in params:
        out.setdefault("sslmode", "verify-full")
    return out


def not_applicable(params: Mapping[str, str]) -> dict[str, str]:
    """The parameters accepted as changing nothing here, and why."""
    return {k: NOT_APPLICABLE[k] for k in params if k in NOT_APPLICABLE}

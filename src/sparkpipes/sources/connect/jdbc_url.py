"""The parameters of a JDBC ``connection.url`` (``?useSSL=false&serverTimezone=UTC``) and
what sparkpipes does with each — one registry per driver, as for Connect's own keys
(``sources.connect.framework``).

The URL is written for a Java driver: pgjdbc (``jdbc:postgresql:``), MySQL Connector/J
(``jdbc:mysql:``) or MariaDB Connector/J (``jdbc:mariadb:``, whose option names match in
any case); psycopg2 (libpq) and PyMySQL connect here. A parameter is **honoured** (the
login, the schema, TLS — libpq's own settings for PostgreSQL, the Java drivers' for MySQL
and MariaDB, read by ``jdbc_tls`` — and the time-outs), **accepted as not applicable** (it
tunes the Java driver: batching, prepared statements, character sets — nothing that
changes the rows read or how safely they travel), or **refused by name**: what the
Python driver would not do as asked, and settings that change the values read. Refusals
never show a value: a key store password sits in the same URL.

Time-outs (:class:`Limits`): ``connectTimeout`` bounds making a connection (pgjdbc:
seconds, and ``loginTimeout``; the MySQL drivers: milliseconds) and ``socketTimeout`` a
wait for the server's answer: PyMySQL's read time-out, and for PostgreSQL, whose libpq has
no read time-out, the server's ``statement_timeout`` (pgjdbc calls it "a brute force
global query timeout"). 0 is no limit, as for the drivers. Without them a connection
takes at most 10 s (pgjdbc's default) and an answer 300 s (for PostgreSQL: a lock waited
for, and a vanished server found by TCP keepalives within about a minute): the Java
drivers would wait forever, and a task would hang with a stalled database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkpipes.sources.connect import jdbc_tls

POSTGRESQL, MYSQL, MARIADB = "postgresql", "mysql", "mariadb"

#: read by ``parse_url`` itself: the login and the schema
LOGIN = frozenset({"user", "password", "currentSchema"})
#: PostgreSQL parameters libpq takes under the same name and meaning
LIBPQ = frozenset({"sslmode", "sslrootcert", "sslcert", "sslkey"})
#: seconds to make a connection / to wait for an answer, unless the URL says otherwise
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 300.0
#: the time-out parameters, and their unit in seconds, per driver
TIMEOUTS = {
    POSTGRESQL: ({"connectTimeout", "loginTimeout", "socketTimeout"}, 1.0),
    MYSQL: ({"connectTimeout", "socketTimeout"}, 0.001),
    MARIADB: ({"connecttimeout", "sockettimeout"}, 0.001),
}


@dataclass(frozen=True)
class Limits:
    """How long a connection may take and wait, and how often it is tried (None: no
    limit). ``statement_s`` is a server-side bound on a statement (PostgreSQL's
    ``socketTimeout``); ``attempts`` and ``backoff_ms`` are Confluent's
    ``connection.attempts`` and ``connection.backoff.ms``."""

    connect_s: float | None = CONNECT_TIMEOUT_S
    read_s: float | None = READ_TIMEOUT_S
    statement_s: float | None = None
    attempts: int = 3
    backoff_ms: int = 10_000


DEFAULT_LIMITS = Limits()
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
}
_CONNECTOR_J_ONLY = (
    "MySQL Connector/J's, which MariaDB Connector/J ignores; false asks for nothing (true "
    "is refused)"
)
#: accepted as not applicable for one driver only
NOT_APPLICABLE_FOR = {
    MARIADB: {
        "requireSSL": _CONNECTOR_J_ONLY,
        "verifyServerCertificate": _CONNECTOR_J_ONLY,
        "enabledTLSProtocols": (
            "MySQL Connector/J's name, which MariaDB Connector/J ignores (its own is "
            "enabledSslProtocolSuites); TLS 1.2 or 1.3 is used"
        ),
    },
}

REFUSED: dict[str, str] = {
    "sslfactory": (
        "a Java SSL socket factory is not supported: for PostgreSQL give sslmode, "
        "sslrootcert, sslcert, sslkey (PEM files)"
    ),
    "sslpassword": "an encrypted client key is not supported: give sslkey unencrypted (0600)",
    "zeroDateTimeBehavior": "zeroDateTimeBehavior is not supported (zero dates are read as NULL)",
    "options": "options (server settings such as search_path) is not supported: use currentSchema",
}


def family_of(scheme: str) -> str:
    """Whose parameters a URL of ``scheme`` has (``postgresql``, ``mysql``, ``mariadb``)."""
    return {"postgresql": POSTGRESQL, "mariadb": MARIADB}.get(scheme, MYSQL)


def problem(family: str, name: str, value: str) -> str | None:
    """Why parameter ``name`` of a ``family`` URL is refused, or None (never the value).
    The values of TLS and time-out parameters are checked by :func:`jdbc_tls.plan` and
    :func:`limits`."""
    if name in LOGIN:
        return None
    why = jdbc_tls.refused(family, name, value) or REFUSED.get(name)
    if why:
        return f"connection.url parameter '{name}': {why}"
    if jdbc_tls.reads(family, name) or _timeout(family, name):
        return None
    if family == POSTGRESQL and (name in LIBPQ or name == "ssl"):
        return None
    if _not_applicable(family, name) is not None:
        return None
    honoured = sorted(LOGIN | (LIBPQ if family == POSTGRESQL else set()))
    tls = "" if family == POSTGRESQL else f" and the TLS parameters of {_driver(family)}"
    return (
        f"connection.url parameter '{name}' is not understood (honoured: "
        f"{', '.join(honoured)}, connectTimeout, socketTimeout{tls}; the Java drivers' "
        "tuning parameters are accepted)"
    )


def driver_options(family: str, params: Mapping[str, str]) -> dict[str, str]:
    """What libpq is given for a PostgreSQL URL's ``params`` (checked by :func:`problem`):
    its TLS settings, ``ssl=true`` read as pgjdbc reads it (``sslmode`` ``verify-full``
    unless ``sslmode`` says otherwise). MySQL's TLS is :func:`jdbc_tls.plan`'s."""
    if family != POSTGRESQL:
        return {}
    out = {k: v for k, v in params.items() if k in LIBPQ}
    if params.get("ssl", "").strip().lower() in ("true", "") and "ssl" in params:
        out.setdefault("sslmode", "verify-full")
    return out


def limits(family: str, params: Mapping[str, str]) -> tuple[Limits, list[str]]:
    """The time-outs a ``family`` URL sets (:class:`Limits`' defaults where it sets none)
    and the problems of their values."""
    names, unit = TIMEOUTS[family]
    fold = family == MARIADB
    found: dict[str, float | None] = {}  # canonical name → seconds (None: no limit)
    problems: list[str] = []
    for name, text in params.items():
        key = name.lower() if fold else name
        if key not in names:
            continue
        canonical = next(
            n
            for n in ("connectTimeout", "loginTimeout", "socketTimeout")
            if (n.lower() if fold else n) == key
        )
        if not text.strip().isdigit():
            what = "seconds" if unit == 1.0 else "milliseconds"
            problems.append(f"connection.url parameter '{name}' must be a whole number of {what}")
            continue
        found[canonical] = int(text.strip()) * unit or None
    base = DEFAULT_LIMITS
    connect = [found[n] for n in ("connectTimeout", "loginTimeout") if n in found]
    bounded = [s for s in connect if s is not None]
    connect_s = base.connect_s if not connect else min(bounded) if bounded else None
    read_s = found.get("socketTimeout", base.read_s)
    statement_s = found.get("socketTimeout") if family == POSTGRESQL else None
    return Limits(connect_s, read_s, statement_s), problems


def not_applicable(family: str, params: Mapping[str, str]) -> dict[str, str]:
    """The parameters accepted as changing nothing here, and why."""
    return {k: why for k in params if (why := _not_applicable(family, k)) is not None}


def _not_applicable(family: str, name: str) -> str | None:
    own = NOT_APPLICABLE_FOR.get(family, {})
    if name in own:
        return own[name]
    if family == MARIADB:
        lower = {k.lower(): v for k, v in NOT_APPLICABLE.items()}
        return lower.get(name.lower())
    return NOT_APPLICABLE.get(name)


def _timeout(family: str, name: str) -> bool:
    names, _ = TIMEOUTS[family]
    return (name.lower() if family == MARIADB else name) in names


def _driver(family: str) -> str:
    return "MariaDB Connector/J" if family == MARIADB else "MySQL Connector/J"

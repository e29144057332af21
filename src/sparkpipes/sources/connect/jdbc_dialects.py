"""The databases a JDBC ``connection.url`` may name, one registry entry each (URL scheme →
:class:`Dialect`): how its URL is read, which SQLAlchemy driver and Python package reads
it, its default port and schema.

* ``jdbc:postgresql://…``, ``jdbc:mysql://…``, ``jdbc:mariadb://…`` — psycopg2 / PyMySQL;
  their URL parameters are sorted by ``jdbc_url`` (honoured, not applicable, refused), TLS
  to MySQL and MariaDB read by ``jdbc_tls`` as Connector/J or MariaDB Connector/J reads it.
* ``jdbc:sqlite:/path/file.db`` (or a path relative to the engine's working directory) —
  Python's own ``sqlite3``; its tables are in schema ``main``.
* ``jdbc:oracle:thin:@host:port/service`` (or ``…:SID``, ``@//host…``) — python-oracledb;
  ``jdbc:sqlserver://host:port;databaseName=db`` — pymssql. Their drivers are not shipped:
  a config naming them is valid, and reading fails with "driver not installed", naming
  the package to install (checked when a connection is made, never at validation, so a
  config written on one machine validates on another).

Anything else (``jdbc:redshift:…``, ``jdbc:db2:…``) is refused by name, with the package
that would read it where one is known. A password never appears in a message: Oracle and
SQL Server URLs may not hold one (their syntax is not a URL's, so it could not be sealed);
it goes in ``connection.password``. How each connects (time-outs, TLS, attempts) is
``jdbc_connect``'s.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from sparkpipes.config import REDACTED, Secret, urls
from sparkpipes.errors import ConfigError, SourceAuthError, SourceError, SourceUnavailableError
from sparkpipes.sources.connect import jdbc_connect, jdbc_tls, jdbc_url
from sparkpipes.util.db import classify


@dataclass(frozen=True)
class Database:
    """Where to connect (picklable; no I/O until :meth:`engine`). For SQLite ``database``
    is the file's path and there is no host."""

    scheme: str
    host: str
    port: int
    database: str
    user: str | None
    password: Secret | None
    schema: str | None
    #: driver options from the URL (libpq's TLS settings, Oracle's service name)
    options: tuple[tuple[str, str], ...] = ()
    #: TLS to MySQL or MariaDB, as its Java driver reads the URL
    tls: jdbc_tls.Tls | None = None
    #: time-outs and connection attempts
    limits: jdbc_url.Limits = jdbc_url.DEFAULT_LIMITS

    @property
    def dialect(self) -> Dialect:
        return DIALECTS[self.scheme]

    @property
    def kind(self) -> str:
        return self.dialect.kind

    def where(self) -> str:
        if not self.host:
            return f"{self.kind} database '{self.database}'"
        return f"{self.kind} database '{self.database}' at {self.host}:{self.port}"

    def engine(self) -> Any:
        """A SQLAlchemy engine; ConfigError "driver not installed" when the dialect's
        Python package is missing (terminal: retrying will not install it)."""
        d = self.dialect
        if importlib.util.find_spec(d.module) is None:
            raise ConfigError(
                f"driver not installed: reading {d.kind} needs Python package "
                f"'{d.module}': pip install {d.package}"
            )
        return d.engine(self)

    def default_schema(self) -> str:
        return self.schema or self.dialect.default_schema(self)

    def qualified(self, name: str) -> str:
        """``schema.table`` of a name in ``table.whitelist``: ``table``, ``schema.table``
        or ``catalog.schema.table`` (SQL Server's ``demo..orders``: the catalog must be
        this database, an empty schema is the default one)."""
        parts = name.split(".")
        if len(parts) == 3:
            catalog, schema, table = parts
            if catalog and catalog != self.database:
                raise ConfigError(
                    f"table.whitelist names '{name}' in database '{catalog}', but "
                    f"connection.url connects to '{self.database}'"
                )
            parts = [schema, table]
        if len(parts) == 2:
            return f"{parts[0] or self.default_schema()}.{parts[1]}"
        if len(parts) == 1:
            return f"{self.default_schema()}.{name}"
        raise ConfigError(f"table.whitelist entry '{name}' is not [[catalog.]schema.]table")

    def connect(self, engine: Any, doing: str) -> Any:
        """A connection of ``engine`` (:meth:`engine`), with ``connection.attempts``."""
        return jdbc_connect.connect(self, engine, doing)

    def error(self, e: BaseException, doing: str, attempts: int = 1) -> SourceError:
        """A driver error as the sparkpipes error a user can act on (never the password):
        TLS that failed is terminal (a retry cannot change it), a database that cannot be
        reached or stopped answering transient."""
        d = classify(e)
        if jdbc_connect.tls_failed(e):
            why = jdbc_connect.tls_reason(d.text)
            return SourceError(f"{self.where()}: TLS failed while {doing}: {why}{self._trust()}")
        if d.code in jdbc_connect.TIMEOUT_CODES:
            return SourceUnavailableError(
                f"{self.where()} gave up waiting while {doing}: {d.text}{self._waited(d.text)}"
            )
        if d.refused:
            return SourceAuthError(
                f"{self.where()} refused user '{self.user}' while {doing}: {d.text}"
            )
        if d.down:
            tried = f" ({attempts} attempts: connection.attempts)" if attempts > 1 else ""
            return SourceUnavailableError(
                f"cannot reach {self.where()} while {doing}: {d.text}{tried}{self._waited(d.text)}"
            )
        return SourceError(f"{self.where()}: {d.text} (while {doing})")

    def _trust(self) -> str:
        if self.tls is not None and self.tls.mode in jdbc_tls.VERIFYING:
            trust = self.tls.trust.param if self.tls.trust else "the system's CAs"
            return f" (the server's certificate is checked against {trust})"
        root = dict(self.options).get("sslrootcert")
        return (
            f" (the server's certificate is checked against sslrootcert '{root}')" if root else ""
        )

    def _waited(self, text: str) -> str:
        if "timed out" not in text and "timeout" not in text.lower():
            return ""
        connect, read = (
            f"{s:g} s" if s else "no limit" for s in (self.limits.connect_s, self.limits.read_s)
        )
        return (
            f" (the limits: {connect} to connect, {read} for an answer; connectTimeout and "
            "socketTimeout in connection.url change them)"
        )


@dataclass(frozen=True)
class Login:
    """What :func:`parse_url` was given besides the URL."""

    user: str | None
    password: Secret | None
    schema: str | None
    url_password: Secret | None


@dataclass(frozen=True)
class Dialect:
    """One kind of database: ``parse`` reads the URL after ``jdbc:<scheme>``, ``engine``
    makes the SQLAlchemy engine, ``module`` is the Python package the driver imports and
    ``package`` what ``pip install`` takes."""

    kind: str
    module: str
    package: str
    port: int
    parse: Callable[[str, str, str, Login], Database]
    engine: Callable[[Database], Any]
    default_schema: Callable[[Database], str]


# -- server URLs: jdbc:<scheme>://[user[:password]@]host[:port]/database[?params] -------------
def _server(scheme: str, text: str, rest: str, login: Login) -> Database:
    parts = urlsplit(f"{scheme}{rest}")
    if ";" in parts.netloc + parts.path:
        raise ConfigError(
            "connection.url: ';name=value' properties are SQL Server's; a MySQL or "
            "PostgreSQL URL takes them as ?name=value (and a password as connection.password)"
        )
    if not parts.hostname:
        raise ConfigError(
            f"connection.url '{urls.redact(text)}' names no host (jdbc:{scheme}://host/…)"
        )
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    family = jdbc_url.family_of(scheme)
    refused = [m for k, v in params.items() if (m := jdbc_url.problem(family, k, v))]
    limits, found = jdbc_url.limits(family, params)
    refused += found
    tls = None
    if family != jdbc_url.POSTGRESQL:
        # the key store passwords are sealed with the login's: read them in clear
        clear = urls.restore(text, login.url_password) if login.url_password else text
        tls, found = jdbc_tls.plan(
            family, dict(parse_qsl(urlsplit(clear).query, keep_blank_values=True))
        )
        refused += found
    if refused:
        raise ConfigError("; ".join(refused))
    password = login.password
    raw = urls.password_of(login.url_password)
    if raw is not None:
        given = Secret(unquote_plus(raw) if urls.in_query(text) else unquote(raw))
        if password is not None and password != given:
            raise ConfigError(
                "connection.url and connection.password give different passwords: give one"
            )
        password = given
    elif login.url_password is None and urls.is_redacted(text):
        raise ConfigError(
            f"connection.url '{urls.redact(text)}' shows its password as {REDACTED} and "
            "none is stored: give the password"
        )
    user = login.user or params.get("user") or (unquote(parts.username) if parts.username else None)
    # pgjdbc connects to the database named as the user when the URL names none
    database = parts.path.lstrip("/") or (user if family == jdbc_url.POSTGRESQL else "") or ""
    if not database:
        raise ConfigError(f"connection.url '{urls.redact(text)}' names no database (…/database)")
    try:
        port = parts.port or DIALECTS[scheme].port
    except ValueError:
        raise ConfigError(f"connection.url '{urls.redact(text)}' has an invalid port") from None
    return Database(
        scheme,
        parts.hostname,
        port,
        database,
        user,
        password,
        login.schema or params.get("currentSchema"),
        tuple(sorted(jdbc_url.driver_options(family, params).items())),
        tls,
        limits,
    )


# -- SQLite: jdbc:sqlite:path ----------------------------------------------------------------
def _sqlite(scheme: str, text: str, rest: str, login: Login) -> Database:
    path = rest.removeprefix(":").split("?", 1)[0].strip()
    if path.startswith("//"):  # jdbc:sqlite://path, as some write it
        path = path[2:]
    if not path or path == ":memory:":
        raise ConfigError(
            f"connection.url '{urls.redact(text)}' names no SQLite file "
            "(jdbc:sqlite:/path/file.db): an in-memory database is empty for every connection"
        )
    if login.password is not None or login.url_password is not None:
        raise ConfigError("connection.password: a SQLite file has no login")
    return Database(scheme, "", 0, path, login.user, None, login.schema)


# -- Oracle: jdbc:oracle:thin:@[//]host[:port](/service|:SID) ---------------------------------
_ORACLE = re.compile(
    r"^:thin:(?P<login>[^@]*)@(?://)?(?P<host>[^:/@]+)(?::(?P<port>\d+))?"
    r"(?:(?P<sep>[/:])(?P<name>[^?]+))?(?:\?.*)?$"
)


def _oracle(scheme: str, text: str, rest: str, login: Login) -> Database:
    m = _ORACLE.match(rest)
    if m is None:
        raise ConfigError(
            "connection.url is not an Oracle URL sparkpipes can read: write "
            "jdbc:oracle:thin:@host:1521/service or jdbc:oracle:thin:@host:1521:SID (TNS "
            "descriptors are not supported)"
        )
    if "/" in m["login"]:
        raise ConfigError(
            "connection.url holds a password (user/password@): give it as connection.password"
        )
    if not m["name"]:
        raise ConfigError("connection.url names no Oracle service or SID (…:1521/service)")
    user = login.user or m["login"] or None
    option = ("service_name" if m["sep"] == "/" else "sid", m["name"])
    return Database(
        scheme,
        m["host"],
        int(m["port"] or 1521),
        m["name"],
        user,
        login.password,
        login.schema,
        (option,),
    )


# -- SQL Server: jdbc:sqlserver://host[\instance][:port][;name=value]* ----------------------
#: SQL Server URL properties: read here, or changing nothing that is read
_MSSQL_READ = frozenset({"databasename", "database", "user", "username"})
_MSSQL_TUNING = frozenset(
    {"logintimeout", "applicationname", "sendstringparametersasunicode", "selectmethod"}
)


def _sqlserver(scheme: str, text: str, rest: str, login: Login) -> Database:
    head, *props = rest.removeprefix("://").split(";")
    values = {}
    for prop in (p for p in props if p.strip()):
        name, _, value = prop.partition("=")
        values[name.strip().lower()] = value.strip()
    if "password" in values:
        raise ConfigError(
            "connection.url holds a password (;password=): give it as connection.password"
        )
    unknown = sorted(k for k in values if k not in _MSSQL_READ | _MSSQL_TUNING)
    if unknown:
        raise ConfigError(
            f"connection.url property '{unknown[0]}' of SQL Server is not supported (read: "
            "databaseName, user; TLS settings such as encrypt are not supported yet)"
        )
    host, _, port = head.partition(":")
    host = host.split("\\", 1)[0]
    database = values.get("databasename") or values.get("database")
    if not host or not database:
        raise ConfigError(
            "connection.url is not a SQL Server URL sparkpipes can read: write "
            "jdbc:sqlserver://host:1433;databaseName=db"
        )
    if port and not port.isdigit():
        raise ConfigError("connection.url has an invalid port")
    user = login.user or values.get("user") or values.get("username")
    return Database(scheme, host, int(port or 1433), database, user, login.password, login.schema)


def _pg_schema(db: Database) -> str:
    return "public"


#: URL scheme → dialect
DIALECTS: dict[str, Dialect] = {
    "postgresql": Dialect(
        "PostgreSQL",
        "psycopg2",
        "psycopg2-binary",
        5432,
        _server,
        jdbc_connect.server_engine,
        _pg_schema,
    ),
    "mysql": Dialect(
        "MySQL",
        "pymysql",
        "'sparkpipes[jdbc]'",
        3306,
        _server,
        jdbc_connect.server_engine,
        lambda d: d.database,
    ),
    "mariadb": Dialect(
        "MariaDB",
        "pymysql",
        "'sparkpipes[jdbc]'",
        3306,
        _server,
        jdbc_connect.server_engine,
        lambda d: d.database,
    ),
    "sqlite": Dialect(
        "SQLite",
        "sqlite3",
        "(Python's sqlite3)",
        0,
        _sqlite,
        jdbc_connect.sqlite_engine,
        lambda d: "main",
    ),
    "oracle": Dialect(
        "Oracle",
        "oracledb",
        "oracledb",
        1521,
        _oracle,
        jdbc_connect.oracle_engine,
        lambda d: (d.user or "").upper(),
    ),
    "sqlserver": Dialect(
        "SQL Server",
        "pymssql",
        "pymssql",
        1433,
        _sqlserver,
        jdbc_connect.sqlserver_engine,
        lambda d: "dbo",
    ),
}
ALIASES = {"postgres": "postgresql"}
#: schemes refused by name, and why (with the package that would read them)
UNSUPPORTED: Mapping[str, str] = {
    "redshift": (
        "Amazon Redshift is not supported: its SQLAlchemy dialect is not installed "
        "(pip install sqlalchemy-redshift redshift_connector) and sparkpipes has no "
        "Redshift dialect"
    ),
    "db2": "IBM Db2 is not supported: its driver is not installed (pip install ibm_db_sa)",
    "sap": "SAP HANA is not supported: its driver is not installed (pip install sqlalchemy-hana)",
    "snowflake": (
        "Snowflake is not supported: its driver is not installed (pip install snowflake-sqlalchemy)"
    ),
}


def parse_url(
    url: str,
    user: str | None,
    password: Secret | None,
    schema: str | None,
    url_password: Secret | None = None,
) -> Database:
    """``connection.url`` checked into a :class:`Database` (no I/O). ``url`` is as stored,
    a password inside it ``<redacted>`` and kept in ``url_password``; one given in clear is
    taken out here. As the JDBC drivers do, a password in the URL is the login's."""
    text, clear = urls.split(url.strip(), what="connection.url")
    if clear is not None:
        url_password = Secret(clear)
    rest = text[5:] if text.lower().startswith("jdbc:") else text
    m = re.match(r"([A-Za-z0-9]+)(.*)$", rest, re.S)
    scheme = m.group(1).lower() if m else ""
    scheme = ALIASES.get(scheme, scheme)
    if scheme in UNSUPPORTED:
        raise ConfigError(f"connection.url: {UNSUPPORTED[scheme]}")
    if m is None or scheme not in DIALECTS:
        raise ConfigError(
            f"connection.url '{urls.redact(text)}' is not a JDBC URL sparkpipes can read: "
            "write jdbc:postgresql://host:5432/database, jdbc:mysql://host:3306/database, "
            "jdbc:mariadb://host:3306/database, jdbc:sqlite:/path/file.db, "
            "jdbc:oracle:thin:@host:1521/service or jdbc:sqlserver://host:1433;databaseName=db"
        )
    login = Login(user, password, schema, url_password)
    return DIALECTS[scheme].parse(scheme, text, m.group(2), login)

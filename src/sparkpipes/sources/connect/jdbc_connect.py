"""How the JDBC source connects: a SQLAlchemy engine per dialect, without a pool (a
connection is held by one reader at a time), with its time-outs
(:class:`jdbc_url.Limits`), its TLS (``jdbc_url`` for libpq, ``jdbc_tls`` for MySQL and
MariaDB) and Confluent's connection attempts.

Promised, per dialect:

* **PostgreSQL** (psycopg2): libpq's ``connect_timeout`` (the whole connection, TLS and
  login included); TCP keepalives and ``tcp_user_timeout``, so that a server that vanished
  fails the read within about a minute; ``lock_timeout`` (the read time-out) so that a read
  blocked behind another session's lock fails; ``statement_timeout`` when the URL gives
  ``socketTimeout``. Set with ``SET`` after connecting (a pooler such as PgBouncer may
  refuse start-up options).
* **MySQL / MariaDB** (PyMySQL): the connect time-out bounds the TCP connection and the
  handshake (TLS, login), the read time-out each wait for the server afterwards; TLS as
  ``jdbc_tls`` plans it, a PREFERRED connection made again without TLS only when the
  server offers none.
* **SQLite**: the file opened read-only (``mode=ro``): the source never writes the
  database it reads, and a missing file is an error rather than a new empty database.
* **Oracle** (python-oracledb): ``tcp_connect_timeout`` and a ``call_timeout`` per round
  trip; **SQL Server** (pymssql): ``login_timeout`` and ``timeout``.

:func:`connect` tries ``connection.attempts`` times, ``connection.backoff.ms`` apart, while
the database cannot be reached (Confluent's ``CachedConnectionProvider`` retries every
failure; a refused login or a TLS failure is not retried here, as a retry cannot change
it), then fails with the error a user can act on.
"""

from __future__ import annotations

import math
import re
import time
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from sparkpipes.errors import SparkpipesError
from sparkpipes.sources.connect import jdbc_tls
from sparkpipes.util.db import classify

if TYPE_CHECKING:
    from sparkpipes.config import Secret
    from sparkpipes.sources.connect.jdbc_dialects import Database
    from sparkpipes.sources.connect.jdbc_url import Limits


class Endpoint(Protocol):
    """What the server engines read of where they connect: the JDBC source's
    ``Database``, or the database sink's ``Destination`` of a JDBC sink (one code path
    for a URL's TLS and time-outs)."""

    @property
    def scheme(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def database(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def password(self) -> Secret | None: ...
    @property
    def options(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def tls(self) -> jdbc_tls.Tls | None: ...
    @property
    def limits(self) -> Limits | None: ...


#: TCP keepalives for PostgreSQL: a server gone without a word is found in about a minute
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,
}
#: PyMySQL's error number for "SSL is required but the server doesn't support it"
CR_SSL_CONNECTION_ERROR = 2026
#: "no limit" as PyMySQL's connect time-out takes it (it wants a number: a year)
FOREVER_S = 31_536_000
#: what a driver says when TLS itself failed (lower-case): a retry will not change it
TLS_FAILURES = (
    "certificate verify failed",
    "does not match host name",
    "ssl is required but the server",
    "unsupported protocol",
    "no protocols available",
    "alert unknown ca",
    "alert bad certificate",
    "alert certificate required",
    "alert handshake failure",
)
#: a statement that waited too long (PostgreSQL's lock_timeout and statement_timeout,
#: MySQL's lock wait and max_execution_time, MariaDB's max_statement_time): a retry may pass
TIMEOUT_CODES = frozenset({"55P03", "57014", 1205, 3024, 1969})
#: OpenSSL's reason inside a driver's message: ``[SSL: CODE] reason (_ssl.c:1006)``
_OPENSSL_REASON = re.compile(r"\[SSL: [A-Z0-9_]+\] ([^()]+)")


def connect(db: Database, engine: Any, doing: str) -> Any:
    """A connection of ``engine``, tried ``db.limits.attempts`` times ``backoff_ms`` apart
    while the database cannot be reached; else the last failure as a sparkpipes error."""
    attempts = 1 if db.scheme == "sqlite" else max(1, db.limits.attempts)
    for attempt in range(1, attempts + 1):
        try:
            return engine.connect()
        except SparkpipesError:
            raise
        except Exception as e:
            if attempt == attempts or not classify(e).down or tls_failed(e):
                raise db.error(e, doing, attempts=attempt) from None
            time.sleep(db.limits.backoff_ms / 1000)
    raise AssertionError("connect: no attempt made")


def tls_failed(e: BaseException) -> bool:
    """Whether a driver's error says TLS failed (verification, versions, a client
    certificate refused)."""
    text = classify(e).text.lower()
    return any(mark in text for mark in TLS_FAILURES)


def tls_reason(text: str) -> str:
    """What OpenSSL said of a failed handshake (``certificate verify failed: …``), out of
    the driver's wrapping; the driver's text where there is none."""
    found = _OPENSSL_REASON.search(text)
    return found.group(1).strip() if found else text


# -- PostgreSQL, MySQL, MariaDB ----------------------------------------------------------------
def server_engine(db: Endpoint) -> Any:
    return postgresql_engine(db) if db.scheme == "postgresql" else mysql_engine(db)


def postgresql_engine(db: Endpoint) -> Any:
    from sqlalchemy import event

    limits = db.limits
    args: dict[str, Any] = {**KEEPALIVES, "connect_timeout": _whole(limits.connect_s)}
    engine = _engine(db, "postgresql+psycopg2", dict(db.options), args)
    settings = {
        "lock_timeout": limits.read_s,
        "statement_timeout": limits.statement_s,
    }
    settings = {k: f"{math.ceil(s * 1000)}ms" for k, s in settings.items() if s}
    if settings:

        @event.listens_for(engine, "connect")
        def _session(dbapi_conn: Any, record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                for name, value in settings.items():
                    cur.execute("SELECT set_config(%s, %s, false)", (name, value))
            dbapi_conn.commit()

    return engine


def mysql_engine(db: Endpoint) -> Any:
    from sqlalchemy import event

    engine = _engine(db, "mysql+pymysql", {}, {"charset": "utf8mb4"})

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        return _mysql(db, dialect, cargs, cparams)

    return engine


def _mysql(db: Endpoint, dialect: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
    limits, tls = db.limits, db.tls or jdbc_tls.Tls("MySQL Connector/J")
    cparams["connect_timeout"] = limits.connect_s or FOREVER_S
    # the handshake (TLS, login) waits as long as connecting may; answers read_s
    cparams["read_timeout"] = cparams["write_timeout"] = limits.connect_s
    if tls.mode == jdbc_tls.DISABLED:
        cparams["ssl_disabled"] = True
    elif (ctx := tls.context()) is not None:
        cparams["ssl"] = ctx
    try:
        conn = dialect.connect(*cargs, **cparams)
    except Exception as e:
        code = getattr(e, "args", (None,))[:1]
        if tls.mode != jdbc_tls.PREFERRED or code != (CR_SSL_CONNECTION_ERROR,):
            raise
        cparams.pop("ssl", None)
        conn = dialect.connect(*cargs, **{**cparams, "ssl_disabled": True})
    # PyMySQL applies these before each read and write (it has no public setter)
    conn._read_timeout = conn._write_timeout = limits.read_s
    return conn


# -- SQLite, Oracle, SQL Server -----------------------------------------------------------------
def sqlite_engine(db: Database) -> Any:
    import sqlite3

    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    # a URI, so that mode=ro applies; the path quoted, so that '?', '#' and '%' stay in it
    uri = f"file:{quote(db.database, safe='/')}?mode=ro"
    busy = db.limits.connect_s or FOREVER_S
    return create_engine(
        "sqlite://",
        poolclass=NullPool,
        creator=lambda: sqlite3.connect(uri, uri=True, timeout=busy),
    )


def oracle_engine(db: Database) -> Any:
    from sqlalchemy import event

    limits = db.limits
    args = {"tcp_connect_timeout": limits.connect_s} if limits.connect_s else {}
    engine = _engine(db, "oracle+oracledb", dict(db.options), args, database=False)
    if limits.read_s:
        milliseconds = math.ceil(limits.read_s * 1000)

        @event.listens_for(engine, "connect")
        def _calls(dbapi_conn: Any, record: Any) -> None:
            dbapi_conn.call_timeout = milliseconds

    return engine


def sqlserver_engine(db: Database) -> Any:
    limits = db.limits
    args = {"login_timeout": _whole(limits.connect_s), "timeout": _whole(limits.read_s)}
    return _engine(db, "mssql+pymssql", {}, args)


def _engine(
    db: Endpoint, driver: str, query: dict[str, str], args: dict[str, Any], database: bool = True
) -> Any:
    """The pool-less engine; the password revealed only into the URL object."""
    from sqlalchemy import URL, create_engine
    from sqlalchemy.pool import NullPool

    url = URL.create(
        driver,
        username=db.user,
        password=db.password.reveal() if db.password is not None else None,
        host=db.host,
        port=db.port,
        database=(db.database or None) if database else None,
        query=query,
    )
    return create_engine(url, poolclass=NullPool, connect_args=args)


def _whole(seconds: float | None) -> int:
    """Seconds as the drivers that take whole ones do (0: no limit)."""
    return math.ceil(seconds) if seconds else 0

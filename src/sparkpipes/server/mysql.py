"""The MySQL-protocol endpoint of ``sparkpipes serve --mysql-port 3307``, on mysql-mimic.

Every sparkpipes statement (CREATE PIPELINE, START, SHOW PIPELINES, information_schema
views of pipelines, SELECT …) runs as in ``sparkpipes sql`` and answers a result set or
an OK; an error answers the MySQL error code (1064 for SQL that does not parse, 1146 for
a missing table or pipeline, 1105 otherwise) with the sparkpipes message. What clients and
BI tools send on connect and to browse — ``SET …``, ``SELECT @@version``, ``SELECT
DATABASE()``, ``SHOW DATABASES`` / ``COLUMNS`` / ``VARIABLES`` / ``COLLATION``, ``USE``,
``information_schema.TABLES`` / ``COLUMNS`` / ``SCHEMATA`` — is answered by mysql-mimic
from the warehouse's tables (database ``sparkpipes``).

Statements run in a worker thread, one session per connection, so a long query never
blocks other connections. Credentials stay redacted as on every surface. Clients sign in
as a user of the catalog (``CREATE USER``) with ``mysql_native_password``; while there is
no user (on loopback only), only the server's owner may, with its local token as the
password (:func:`identity_provider`). A refused connection is closed, never served.
Timeouts, packet checks and TLS are the wire's (``server.mysql_wire``); a statement that
fails, however, is an error packet naming it (:func:`guarded`).

A ``LIKE`` pattern is a user's text: every one mysql-mimic would match (``SHOW VARIABLES
| COLUMNS | DATABASES | FULL TABLES … LIKE``) is matched by :func:`sparkpipes.util.like.like`
(at worst pattern length times name length) instead of mysql-mimic's regular expression
of it, and is never pasted into SQL text; the ``LIKE`` of an ``information_schema`` query
sqlglot's executor evaluates uses that matcher too (:func:`_safe_sqlglot_like`). None can
hang the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import re
import secrets
import ssl
from typing import TYPE_CHECKING, Any

from sparkpipes.catalog.users import mysql_native
from sparkpipes.engine.sql import jobs
from sparkpipes.errors import (
    AccessDeniedError,
    NotAdmittedError,
    NotFoundError,
    QueryError,
    SparkpipesError,
)
from sparkpipes.frontends.singlestore.errors import ParseError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.frontends.singlestore.privileges import sees_table
from sparkpipes.server import mimic_guard
from sparkpipes.server.auth import LOCAL_USER
from sparkpipes.server.errors import unexpected
from sparkpipes.server.mysql_wire import GuardedServer, MysqlLimits
from sparkpipes.server.throttle import Throttle, retry_after
from sparkpipes.util.like import like

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

log = logging.getLogger("sparkpipes.server")

#: a session's user before it signed in: no grants, so nothing is allowed
_UNKNOWN = "\0unsigned"

DATABASE = "sparkpipes"
#: SHOW forms sparkpipes answers itself; other SHOWs are mysql-mimic's
OWN_SHOW = re.compile(
    r"(?is)^\s*SHOW\s+(PIPELINES|CREATE\s+(PIPELINE|TABLE)|TABLES|TABLE\s+STATUS|PROCEDURES"
    r"|USERS|GRANTS)\b"
)
MIMIC = re.compile(
    r"(?is)^\s*(SET|USE|BEGIN|COMMIT|ROLLBACK|START\s+TRANSACTION|KILL|SHOW)\b"
    r"|@@|\b(DATABASE|SCHEMA|VERSION|CONNECTION_ID|CURRENT_USER|USER)\s*\(\s*\)"
    r"|\binformation_schema\s*\.\s*`?(TABLES|COLUMNS|SCHEMATA|STATISTICS|KEY_COLUMN_USAGE"
    r"|VIEWS|ROUTINES|PARAMETERS|ENGINES|CHARACTER_SETS|COLLATIONS)\b`?"
)
_COMMENT = re.compile(r"(?s)^\s*(/\*.*?\*/|--[^\n]*\n|#[^\n]*\n)")

#: Arrow type names → the MySQL column types mysql-mimic reports for the warehouse's tables
_TYPES = (
    ("int64", "BIGINT"),
    ("int32", "INT"),
    ("int16", "SMALLINT"),
    ("int8", "TINYINT"),
    ("double", "DOUBLE"),
    ("float", "FLOAT"),
    ("bool", "BOOLEAN"),
    ("timestamp", "DATETIME"),
    ("date", "DATE"),
    ("decimal", "DECIMAL"),
    ("binary", "BLOB"),
)


def mysql_type(arrow_type: str) -> str:
    for prefix, name in _TYPES:
        if arrow_type.startswith(prefix):
            return name
    return "TEXT"


def for_mimic(sql: str) -> bool:
    """Whether mysql-mimic answers ``sql`` (connection and catalog chatter)."""
    text = sql
    while True:
        m = _COMMENT.match(text)
        if not m:
            break
        text = text[m.end() :]
    if OWN_SHOW.match(text):
        return False
    return bool(MIMIC.search(text))


#: the SHOW forms mysql-mimic answers from information_schema, filtered on their first column
_INFO_SHOWS = ("COLUMNS", "TABLES", "DATABASES", "INDEX")
#: what the names of those SHOWs may not hold: mysql-mimic pastes them into SQL text
_UNQUOTABLE = re.compile(r"['\"\\`\x00-\x1f]")


def _safe_sqlglot_like() -> None:
    """sqlglot's Python executor (mysql-mimic's information_schema) evaluates ``LIKE`` and
    ``ILIKE`` with a regular expression of the pattern — ``'%%%%%%%%%%%%!'`` backtracks for
    hours. Its ``LIKE``/``ILIKE`` become :func:`like` with the executor's own semantics
    (no escape character; ``LIKE`` case-sensitive, ``ILIKE`` not). Only mysql-mimic runs that
    executor in sparkpipes; done once, before the first connection."""
    from sqlglot.executor import env

    env.ENV["LIKE"] = env.null_if_any(lambda this, e: like(e, this, escape=None, fold_case=False))
    env.ENV["ILIKE"] = env.null_if_any(lambda this, e: like(e, this, escape=None))


def session_factory(engine: Engine) -> Any:
    """A new mysql-mimic session per connection, over ``engine``: statements run as the
    signed-in user, with their privileges (``sql.privileges``); the owner (the no-user
    mode's local token) may do everything."""
    from mysql_mimic import ResultColumn, Session
    from mysql_mimic.errors import ErrorCode, MysqlError
    from sqlglot import exp

    _safe_sqlglot_like()

    #: connection id → its user, for KILL (only one's own connections, without PROCESS),
    #: and its session, whose running statement KILL stops
    users: dict[int, str | None] = {}
    sessions: dict[int, Any] = {}

    class SparkpipesSession(Session):
        def __init__(self) -> None:
            super().__init__()
            self.database = DATABASE
            self.sql = SqlSession(engine, user=_UNKNOWN)
            self.version: str | None = None

        async def init(self, connection: Any) -> None:
            await super().init(connection)
            self._session()
            named = self.database or DATABASE
            if engine.catalog.database.knows(named):  # the handshake's database, by its name
                self.database = engine.catalog.database.name()

        async def use(self, database: str) -> None:
            """``USE db`` / COM_INIT_DB: the warehouse's database by either of its names."""
            if not engine.catalog.database.knows(database):
                raise MysqlError(f"Unknown database '{database}'", 1049)  # ER_BAD_DB_ERROR
            self.database = engine.catalog.database.name()

        def _session(self) -> Any:
            """The SqlSession of the signed-in user: the owner only for the local token's
            name; made again when COM_CHANGE_USER signs in as another user."""
            user = None if self.username == LOCAL_USER else (self.username or _UNKNOWN)
            if self.sql.access.user != user:
                self.sql = SqlSession(engine, user=user, stream=True)
                self.version = engine.catalog.users.version(user) if user else None
            if self._connection is not None:
                users[self._connection.connection_id] = user
                sessions[self._connection.connection_id] = self
            return self.sql

        async def close(self) -> None:
            if self._connection is not None:
                users.pop(self._connection.connection_id, None)
                sessions.pop(self._connection.connection_id, None)
            self.sql.cancel()  # a connection gone stops what it was running
            await super().close()

        async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
            if for_mimic(sql):
                return await super().handle_query(sql, attrs)
            return await asyncio.to_thread(self._run, sql)

        async def query(self, expression: Any, sql: str, attrs: dict[str, str]) -> Any:
            return await asyncio.to_thread(self._run, sql)

        async def _static_query_middleware(self, q: Any) -> Any:
            if isinstance(q.expression, exp.Select) and not q.expression.args.get("from"):
                _admit(q.expression)  # mysql-mimic evaluates these itself (mimic_guard)
            return await super()._static_query_middleware(q)

        async def _query_info_schema(self, expression: Any) -> Any:
            _admit(expression)
            return await super()._query_info_schema(expression)

        def _show_variables(self, show: Any) -> Any:
            """mysql-mimic's, with the LIKE pattern matched by :func:`like` (mysql-mimic
            builds an unescaped regular expression of it: catastrophic backtracking)."""
            rows = [(k, None if v is None else str(v)) for k, v in self.variables.list()]
            if show.args.get("like") is not None:
                pattern = show.text("like")
                rows = [(k, v) for k, v in rows if like(pattern, k)]
            return rows, ["Variable_name", "Value"]

        async def _show(self, expression: Any) -> Any:
            """mysql-mimic's; SHOW COLUMNS | TABLES | DATABASES … LIKE query information_schema
            without the pattern (mysql-mimic would paste it into SQL text) and keep the rows
            whose name (the first column) it matches, by :func:`like`."""
            kind = expression.name.upper()
            if kind not in _INFO_SHOWS:
                return await super()._show(expression)
            for arg in ("target", "db"):
                if _UNQUOTABLE.search(expression.text(arg)):
                    raise MysqlError(
                        "quotes, backslashes and control characters are not admitted in the "
                        f"names of SHOW {kind} over the MySQL protocol",
                        1227,  # ER_SPECIFIC_ACCESS_DENIED_ERROR, as mimic_guard refuses
                    )
            if expression.args.get("like") is None:
                return await super()._show(expression)
            pattern = expression.text("like")
            unfiltered = expression.copy()
            unfiltered.set("like", None)
            rows, columns = await super()._show(unfiltered)
            return [r for r in rows if like(pattern, str(r[0]))], columns

        async def _kill_middleware(self, q: Any) -> Any:
            if isinstance(q.expression, exp.Kill):
                try:
                    target = int(q.expression.this.name)
                except ValueError:
                    target = None
                mine = self._session().access
                if users.get(target, _UNKNOWN) != mine.user and not await asyncio.to_thread(
                    mine.may_any, ("PROCESS", "SUPER")
                ):
                    raise MysqlError(f"You are not owner of thread {target}", 1095)
                victim = sessions.get(target) if target is not None else None
                if victim is not None:  # its Spark jobs stop, not only its asyncio task
                    await asyncio.to_thread(victim.sql.cancel)
            return await super()._kill_middleware(q)

        def _current(self) -> Any:
            """The session, if its user still has the password it signed in with (a
            password changed, or the user dropped and made again, ends what it allowed)."""
            session = self._session()
            user = session.access.user
            if user is not None and engine.catalog.users.version(user) != self.version:
                raise AccessDeniedError(
                    f"Access denied for user '{user}': the password changed or the user was "
                    "dropped since this connection signed in; connect again"
                )
            return session

        def _run(self, sql: str) -> Any:
            try:
                results = self._current().execute(sql)
            except ParseError as e:
                raise MysqlError(str(e).splitlines()[0], ErrorCode.PARSE_ERROR) from None
            except NotFoundError as e:
                raise MysqlError(str(e), 1146) from None  # ER_NO_SUCH_TABLE
            except AccessDeniedError as e:
                # ER_TABLEACCESS_DENIED_ERROR for an object, else ER_SPECIFIC_ACCESS_DENIED
                code = 1142 if "command denied" in e.message else 1227
                raise MysqlError(str(e), code) from None
            except SparkpipesError as e:
                raise MysqlError(str(e), error_code(e)) from None
            last = next((r for r in reversed(results) if r.has_rows), None)
            if last is None:
                return [], []
            if last.stream is None:
                return [tuple(r) for r in last.rows], list(last.columns)
            columns = [ResultColumn(n, _column_type(t)) for n, t in zip(last.columns, last.types)]
            return _rows(last.stream), columns

        async def schema(self) -> dict[str, Any]:
            return await asyncio.to_thread(self._schema)

        def _schema(self) -> dict[str, Any]:
            """The tables the user holds a privilege on (information_schema, SHOW)."""
            access = self._session().access
            access.refresh()
            tables: dict[str, Any] = {}
            for name in engine.tables():
                if sees_table(access, name):
                    rec = engine.catalog.tables.get(name)
                    tables[name] = {f.name: mysql_type(str(f.type)) for f in rec.schema}
            return {engine.catalog.database.name(): tables}

    def _admit(expression: Any) -> None:
        try:
            mimic_guard.check(expression)
        except NotAdmittedError as e:
            raise MysqlError(str(e), 1227) from None  # ER_SPECIFIC_ACCESS_DENIED_ERROR

    return SparkpipesSession


#: the client address of the connection being signed in (set by the server per connection)
_PEER: contextvars.ContextVar[str] = contextvars.ContextVar("sparkpipes_mysql_peer", default="")


class _NotSignedIn(Exception):
    """A connection whose sign-in was refused: closed, never served."""


#: Spark types → the MySQL column types of the values Spark returns for them (what
#: mysql-mimic would infer from them); others are sent as text
_SPARK_TYPES = {
    "boolean": "TINY",
    "tinyint": "LONGLONG",
    "smallint": "LONGLONG",
    "int": "LONGLONG",
    "bigint": "LONGLONG",
    "float": "DOUBLE",
    "double": "DOUBLE",
    "string": "STRING",
    "binary": "BLOB",
    "date": "DATE",
    "timestamp": "DATETIME",
    "timestamp_ntz": "DATETIME",
}
#: rows fetched from Spark per trip to the worker thread while a result streams
CHUNK_ROWS = 1000


def _column_type(spark_type: str) -> Any:
    from mysql_mimic.types import ColumnType

    return getattr(ColumnType, _SPARK_TYPES.get(spark_type, "VARCHAR"))


#: MySQL's ER_QUERY_TIMEOUT and ER_QUERY_INTERRUPTED, for a statement stopped by
#: max_execution_time or KILL QUERY
_STOPPED = ((jobs.TIMED_OUT, 3024), (jobs.INTERRUPTED, 1317))


def error_code(e: SparkpipesError) -> int:
    """The MySQL error code of a statement's error (ER_UNKNOWN_ERROR but for a stop)."""
    from mysql_mimic.errors import ErrorCode

    return next((code for text, code in _STOPPED if text in str(e)), ErrorCode.UNKNOWN_ERROR)


async def _rows(stream: Any) -> Any:
    """A query's rows to the client as Spark gives them, a chunk at a time (never the whole
    result in memory); a failure midway ends the result set with the error."""
    from mysql_mimic.errors import MysqlError

    def take() -> list[tuple[Any, ...]]:
        return [tuple(r) for r in itertools.islice(stream, CHUNK_ROWS)]

    while True:
        try:
            chunk = await asyncio.to_thread(take)
        except SparkpipesError as e:
            raise MysqlError(str(e), error_code(e)) from None
        if not chunk:
            return
        for row in chunk:
            yield row


def identity_provider(
    engine: Engine,
    *,
    loopback: bool,
    local_token: str | None = None,
    throttle: Throttle | None = None,
) -> Any:
    """Who signs in, by ``mysql_native_password`` (the password never crosses the wire):
    the catalog's users; while it has none (on loopback only), the server's owner alone —
    any user name, with the server's local token (``sparkpipes token``) as the password,
    signed in as ``auth.LOCAL_USER``. Unknown names are refused as wrong passwords are.
    Failed sign-ins back off per user name and per address (``server.throttle``, shared
    with HTTP): while they must wait, clients are refused at once with 1045 saying so."""
    from mysql_mimic.auth import (
        Forbidden,
        IdentityProvider,
        NativePasswordAuthPlugin,
        Success,
        User,
    )

    native = NativePasswordAuthPlugin.name
    owner = mysql_native(local_token) if local_token else None
    throttle = throttle or Throttle()

    def is_owner(user: Any) -> bool:  # a token cannot be guessed: the owner never waits
        return owner is not None and user.auth_string == owner

    def refused(info: Any) -> Any:
        if is_owner(info.user):
            return None
        name = info.username
        wait = throttle.wait_s(name, _PEER.get())
        if wait <= 0:
            return None
        return Forbidden(
            f"Access denied for user '{name[:64]}': too many failed sign-ins, wait "
            f"{retry_after(wait)} s and try again"
        )

    class ThrottledNativePassword(NativePasswordAuthPlugin):
        async def auth(self, auth_info: Any = None) -> Any:
            if auth_info is not None and (no := refused(auth_info)) is not None:
                yield no
                return
            inner = super().auth(auth_info)
            decision = await inner.__anext__()
            while not isinstance(decision, (Success, Forbidden)):
                auth_info = yield decision
                if (no := refused(auth_info)) is not None:
                    yield no
                    return
                decision = await inner.asend(auth_info)
            name, address = auth_info.username, _PEER.get()
            if isinstance(decision, Success):
                throttle.succeeded(name, address)
                yield decision
                return
            if not is_owner(auth_info.user):
                throttle.failed(name, address)
            using = "YES" if auth_info.data else "NO"
            yield Forbidden(
                f"Access denied for user '{name[:64]}'@'{address}' (using password: {using})"
            )

    def decoy(username: str) -> Any:  # refused as a wrong password is: names stay unknown
        return User(name=username, auth_string=secrets.token_hex(20), auth_plugin=native)

    class CatalogUsers(IdentityProvider):
        def get_plugins(self) -> list[Any]:
            return [ThrottledNativePassword()]

        async def get_user(self, username: str) -> Any:
            users = engine.catalog.users
            if loopback and await asyncio.to_thread(users.count) == 0:
                if owner is None:
                    return decoy(username)
                return User(name=LOCAL_USER, auth_string=owner, auth_plugin=native)
            rec = await asyncio.to_thread(users.get, username)
            if rec is None or rec.name == LOCAL_USER:
                return decoy(username)
            return User(name=rec.name, auth_string=rec.mysql_native, auth_plugin=native)

    return CatalogUsers()


def signed_in_only(session: type) -> type:
    """``session`` (a mysql-mimic session class) for connections that signed in only.
    mysql-mimic tells a refused client 1045 and then goes on serving the connection, so a
    client that ignores the refusal could send statements anyway; here such a connection
    is closed before its session starts."""

    class SignedIn(session):  # type: ignore[misc, valid-type]
        async def init(self, connection: Any) -> None:
            if self.username is None:
                raise _NotSignedIn("Access denied")
            await super().init(connection)

    return SignedIn


def guarded(session: type, limits: MysqlLimits) -> type:
    """``session`` (a mysql-mimic session class) with the endpoint's ``wait_timeout`` as
    its sessions' default (``SET wait_timeout`` changes one session's), and any failure of
    a statement, its result included, answered as an error packet that names it — a
    statement nested too deeply is ``1064`` — never a traceback in the log."""
    from mysql_mimic.errors import MysqlError

    class Guarded(session):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            for name in ("wait_timeout", "interactive_timeout"):
                self.variables.set(name, limits.wait_timeout_s)

        async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
            try:
                result = await super().handle_query(sql, attrs)
            except MysqlError:
                raise
            except Exception as e:
                raise _mysql_error(e) from None
            if isinstance(result, tuple) and len(result) == 2 and hasattr(result[0], "__aiter__"):
                return _answered(result[0]), result[1]
            return result

    return Guarded


async def _answered(rows: Any) -> Any:
    """``rows`` (a streamed result); a failure midway ends it as an error packet."""
    from mysql_mimic.errors import MysqlError

    try:
        async for row in rows:
            yield row
    except MysqlError:
        raise
    except Exception as e:
        raise _mysql_error(e) from None


def _mysql_error(e: Exception) -> Exception:
    """An exception as the error packet that answers it (``api.unexpected``'s words)."""
    from mysql_mimic.errors import ErrorCode, MysqlError

    error = unexpected(e)
    if error is e:
        return MysqlError(str(e).splitlines()[0], ErrorCode.UNKNOWN_ERROR)
    code = ErrorCode.PARSE_ERROR if isinstance(error, QueryError) else ErrorCode.UNKNOWN_ERROR
    return MysqlError(error.message, code)


async def serve_mysql(
    engine: Engine,
    host: str,
    port: int,
    *,
    loopback: bool = True,
    local_token: str | None = None,
    throttle: Throttle | None = None,
    limits: MysqlLimits | None = None,
    tls: ssl.SSLContext | None = None,
) -> Any:
    """Start the endpoint on ``host:port`` (the running event loop); the server.
    ``local_token``: the owner's password while the catalog has no user; ``throttle``:
    failed sign-ins (shared with HTTP); ``limits``: its timeouts (``server.mysql_wire``);
    ``tls``: offered to clients (``ssl``, as MySQL does) when given."""
    limits = limits or MysqlLimits()

    class Server(GuardedServer):
        async def _client_connected_cb(self, reader: Any, writer: Any) -> None:
            peer = writer.get_extra_info("peername")
            _PEER.set(str(peer[0]) if peer else "")
            await super()._client_connected_cb(reader, writer)

    server = Server(
        limits=limits,
        session_factory=guarded(signed_in_only(session_factory(engine)), limits),
        identity_provider=identity_provider(
            engine, loopback=loopback, local_token=local_token, throttle=throttle
        ),
        ssl=tls,
    )
    await server.start_server(host=host, port=port)
    return server

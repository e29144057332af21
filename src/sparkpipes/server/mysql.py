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
no user, on loopback, anyone may connect without a password.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from typing import Any

from sparkpipes.errors import NotFoundError, SparkpipesError

DATABASE = "sparkpipes"
#: SHOW forms sparkpipes answers itself; other SHOWs are mysql-mimic's
OWN_SHOW = re.compile(
    r"(?is)^\s*SHOW\s+(PIPELINES|CREATE\s+(PIPELINE|TABLE)|TABLES|TABLE\s+STATUS|PROCEDURES)\b"
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


def session_factory(engine: Any) -> Any:
    """A new mysql-mimic session per connection, over ``engine``."""
    from mysql_mimic import Session
    from mysql_mimic.errors import ErrorCode, MysqlError

    from sparkpipes.sql.errors import ParseError
    from sparkpipes.sql.executor import SqlSession

    class SparkpipesSession(Session):
        def __init__(self) -> None:
            super().__init__()
            self.database = DATABASE
            self.sql = SqlSession(engine)

        async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
            if for_mimic(sql):
                return await super().handle_query(sql, attrs)
            return await asyncio.to_thread(self._run, sql)

        async def query(self, expression: Any, sql: str, attrs: dict[str, str]) -> Any:
            return await asyncio.to_thread(self._run, sql)

        def _run(self, sql: str) -> Any:
            try:
                results = self.sql.execute(sql)
            except ParseError as e:
                raise MysqlError(str(e).splitlines()[0], ErrorCode.PARSE_ERROR) from None
            except NotFoundError as e:
                raise MysqlError(str(e), 1146) from None  # ER_NO_SUCH_TABLE
            except SparkpipesError as e:
                raise MysqlError(str(e), ErrorCode.UNKNOWN_ERROR) from None
            last = next((r for r in reversed(results) if r.has_rows), None)
            if last is None:
                return [], []
            return [tuple(r) for r in last.rows], list(last.columns)

        async def schema(self) -> dict[str, Any]:
            return await asyncio.to_thread(self._schema)

        def _schema(self) -> dict[str, Any]:
            tables: dict[str, Any] = {}
            for name in engine.tables():
                rec = engine.catalog.table(name)
                tables[name] = {f.name: mysql_type(str(f.type)) for f in rec.schema}
            return {DATABASE: tables}

    return SparkpipesSession


def identity_provider(engine: Any, *, loopback: bool) -> Any:
    """The catalog's users, by ``mysql_native_password`` (the password never crosses the
    wire). With no user and on loopback, any user name signs in without a password, as
    the HTTP API lets anyone in then (``server.auth``)."""
    from mysql_mimic.auth import IdentityProvider, NativePasswordAuthPlugin, User

    native = NativePasswordAuthPlugin.name

    class CatalogUsers(IdentityProvider):
        def get_plugins(self) -> list[Any]:
            return [NativePasswordAuthPlugin()]

        async def get_user(self, username: str) -> Any:
            users = engine.catalog.users
            if loopback and await asyncio.to_thread(users.count) == 0:
                return User(name=username, auth_plugin=native)
            rec = await asyncio.to_thread(users.get, username)
            if rec is None:  # refused as a wrong password is: names are not disclosed
                return User(name=username, auth_string=secrets.token_hex(20), auth_plugin=native)
            return User(name=rec.name, auth_string=rec.mysql_native, auth_plugin=native)

    return CatalogUsers()


async def serve_mysql(engine: Any, host: str, port: int, *, loopback: bool = True) -> Any:
    """Start the endpoint on ``host:port`` (the running event loop); the server."""
    from mysql_mimic import MysqlServer

    server = MysqlServer(
        session_factory=session_factory(engine),
        identity_provider=identity_provider(engine, loopback=loopback),
    )
    await server.start_server(host=host, port=port)
    return server

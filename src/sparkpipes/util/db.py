"""For the connectors and sinks that talk to PostgreSQL (psycopg2) and MySQL-protocol
servers (PyMySQL) through SQLAlchemy: a pool-less engine, and what a driver's error means."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: a server going away: MySQL's can't connect / gone away / lost / shutting down / killed,
#: PostgreSQL's connection exceptions and shutdowns
DOWN_CODES = frozenset(
    {2002, 2003, 2006, 2013, 2055, 1053, 1077, 1927}
    | {"08000", "08001", "08003", "08004", "08006", "57P01", "57P02", "57P03"}
)
#: credentials refused (PostgreSQL's class 28, MySQL's access denied)
AUTH_CODES = frozenset({"28P01", "28000", 1044, 1045, 1698})
#: a database, table or column that is not there
MISSING_CODES = frozenset({"3D000", "42P01", "42703", 1049, 1146, 1054})


#: seconds a connection attempt may take
CONNECT_TIMEOUT_S = 10


def engine(
    driver: str,
    *,
    host: str,
    port: int,
    database: str | None,
    user: str | None,
    password: Any = None,
    query: dict[str, str] | None = None,
    connect_timeout_s: int = CONNECT_TIMEOUT_S,
) -> Any:
    """A SQLAlchemy engine without a pool (connections are held by one reader or one
    commit at a time); ``password`` a Secret, revealed only into the URL object."""
    from sqlalchemy import URL, create_engine
    from sqlalchemy.pool import NullPool

    url = URL.create(
        driver,
        username=user,
        password=password.reveal() if password is not None else None,
        host=host,
        port=port,
        database=database or None,
        query=query or {},
    )
    args: dict[str, Any] = {"connect_timeout": connect_timeout_s}
    if driver.startswith("mysql"):
        args["charset"] = "utf8mb4"
    return create_engine(url, poolclass=NullPool, connect_args=args)


@dataclass(frozen=True)
class DriverError:
    code: Any  # SQLSTATE (PostgreSQL) or error number (MySQL), if the driver gave one
    text: str  # the first line of the driver's message (never holds a password)
    down: bool  # the server could not be reached or went away: worth retrying
    refused: bool  # the server refused the user or password
    missing: bool  # a database, table or column is not there


def classify(e: BaseException) -> DriverError:
    orig = getattr(e, "orig", None) or e
    args = getattr(orig, "args", ())
    code = getattr(orig, "pgcode", None) or (args[0] if args and isinstance(args[0], int) else None)
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    kind = type(orig).__name__
    refused = code in AUTH_CODES or any(
        r in text for r in ("authentication failed", "Access denied", 'role "')
    )
    missing = code in MISSING_CODES or "does not exist" in text
    down = not refused and (
        code in DOWN_CODES
        or kind == "InterfaceError"  # a connection closed under it
        or (code is None and kind == "OperationalError" and not missing)
    )
    return DriverError(code, text, down, refused, missing)

"""The database a database sink writes to, and its tables: where it is (PostgreSQL,
MySQL-protocol servers, a SQLite file), the sink's own tables (metadata, dead letters),
a table's columns as Arrow, and the DDL a connector issues (``CREATE TABLE`` from a record
schema, ``ALTER TABLE … ADD`` for fields a table lacks).

SQLite is driven as SQLAlchemy documents for transactional use of pysqlite: the driver's
own implicit transactions are turned off and ``BEGIN`` is issued by SQLAlchemy, so that
a batch is one transaction and savepoints work inside it.

A database named by a JDBC URL (Confluent's JDBC sink: the sink config's ``url``, its
secrets sealed under ``url:url``) is connected to as the JDBC source connects: the URL
read again by ``jdbc_dialects.parse_url``, its TLS (``jdbc_tls``: MySQL and MariaDB
Connector/J's parameters, Java key stores) and time-outs (``jdbc_url.Limits``) applied by
``jdbc_connect``'s engines. A TLS failure is terminal, naming the trust store; a statement
that waited too long (a lock, ``socketTimeout``) is retried with the batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.config import Secret, urls
from sparkpipes.errors import ConfigError, SinkError
from sparkpipes.sources.connect import jdbc_connect, jdbc_tls
from sparkpipes.sources.connect.jdbc_dialects import parse_url
from sparkpipes.sources.connect.jdbc_url import Limits
from sparkpipes.util import db as dbutil
from sparkpipes.util.db import classify

#: dialect → (SQLAlchemy driver, Python module, default port, name)
DIALECTS = {
    "postgresql": ("postgresql+psycopg2", "psycopg2", 5432, "PostgreSQL"),
    "mysql": ("mysql+pymysql", "pymysql", 3306, "MySQL"),
    "sqlite": ("sqlite", "sqlite3", 0, "SQLite"),
}
DEFAULT_METADATA_TABLE = "kafka_connect_transaction_metadata"
#: seconds a SQLite connection waits for another writer's lock
SQLITE_TIMEOUT_S = 10


@dataclass(frozen=True)
class Destination:
    """A database and where its tables are: picklable, no I/O until :meth:`engine`.
    For SQLite ``database`` is the file's path and there is no host."""

    dialect: str
    host: str
    port: int
    database: str
    user: str | None = None
    password: Secret | None = None
    schema: str | None = None
    #: driver options (libpq's TLS settings from a JDBC URL)
    options: tuple[tuple[str, str], ...] = ()
    #: TLS to MySQL or MariaDB and the time-outs, as a JDBC URL sets them (None: no URL)
    tls: jdbc_tls.Tls | None = None
    limits: Limits | None = None

    @classmethod
    def of(cls, config: Mapping[str, Any], credentials: Mapping[str, Secret]) -> Destination:
        dialect = str(config.get("dialect", ""))
        if dialect not in DIALECTS:
            raise ConfigError(f"database sink dialect must be one of {', '.join(DIALECTS)}")
        tls = limits = None
        url = config.get("url")
        if url and dialect != "sqlite":  # the URL's secrets sealed, or just its password
            sealed = credentials.get(urls.secret_key("url"))
            if sealed is None and urls.is_redacted(str(url)):
                sealed = credentials.get("password")
            db = parse_url(str(url), config.get("user"), None, config.get("schema"), sealed)
            tls, limits = db.tls, db.limits
        return cls(
            dialect,
            "" if dialect == "sqlite" else str(config.get("host") or "127.0.0.1"),
            int(config.get("port") or DIALECTS[dialect][2]),
            str(config.get("database") or ""),
            config.get("user"),
            credentials.get("password"),
            config.get("schema"),
            tuple((str(k), str(v)) for k, v in dict(config.get("options") or {}).items()),
            tls,
            limits,
        )

    def where(self) -> str:
        name = DIALECTS[self.dialect][3]
        if self.dialect == "sqlite":
            return f"{name} database '{self.database}'"
        return f"{name} database '{self.database}' at {self.host}:{self.port}"

    def engine(self) -> Any:
        if self.dialect == "sqlite":
            return _sqlite_engine(self.database)
        if self.limits is not None:  # a JDBC URL's: TLS and time-outs as the source's
            return jdbc_connect.server_engine(self)
        return dbutil.engine(
            DIALECTS[self.dialect][0],
            host=self.host,
            port=self.port,
            database=self.database,
            user=self.user,
            password=self.password,
            query=dict(self.options) or None,
        )

    def error(self, e: BaseException, doing: str) -> SinkError:
        """A driver error as a sink error that names the database (never the password).
        Transient only when the server could not be reached or went away."""
        d = classify(e)
        if jdbc_connect.tls_failed(e):
            err = SinkError(
                f"{self.where()}: TLS failed while {doing}: {jdbc_connect.tls_reason(d.text)}"
                f"{self._trust()}"
            )
            err.transient = False
            return err
        err = SinkError(
            f"{'cannot reach ' if d.down else ''}{self.where()}: {d.text} (while {doing})"
        )
        err.transient = d.down or d.code in jdbc_connect.TIMEOUT_CODES
        return err

    def _trust(self) -> str:
        if self.tls is not None and self.tls.mode in jdbc_tls.VERIFYING:
            trust = self.tls.trust.param if self.tls.trust else "the system's CAs"
            return f" (the server's certificate is checked against {trust})"
        return ""

    @property
    def scheme(self) -> str:
        """The JDBC scheme's family, as ``jdbc_connect`` engines are chosen by it."""
        return self.dialect


def _sqlite_engine(path: str) -> Any:
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

    engine = create_engine(
        f"sqlite:///{path}", poolclass=NullPool, connect_args={"timeout": SQLITE_TIMEOUT_S}
    )

    @event.listens_for(engine, "connect")
    def _no_implicit_transactions(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


@dataclass(frozen=True)
class TableKey:
    """A key of a table the sink creates (``tableKey.<KIND>[.<name>]=cols``)."""

    kind: str  # PRIMARY, UNIQUE, KEY, SHARD, COLUMNSTORE
    columns: tuple[str, ...]
    name: str | None = None


def metadata_table(name: str, schema: str | None = None) -> Any:
    """The metadata table (seed 001's three columns, then the sink's own)."""
    import sqlalchemy as sa

    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("update_time", sa.DateTime, nullable=False),
        sa.Column("app_id", sa.String(64), primary_key=True),
        sa.Column("batch_id", sa.BigInteger, nullable=False),
        sa.Column("partition_key", sa.String(255), nullable=False),
        sa.Column("end_offset", sa.Text, nullable=False),
        schema=schema,
    )


def dead_letter_table(name: str, schema: str | None = None) -> Any:
    """Records a batch skipped (``errors.tolerance=all``), committed with the batch."""
    import sqlalchemy as sa

    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("partition_key", sa.String(255), nullable=False),
        sa.Column("record_offset", sa.String(255), nullable=False),
        sa.Column("error_code", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("excerpt", sa.Text),
        sa.Column("failed_at", sa.DateTime, nullable=False),
        sa.Column("app_id", sa.String(64), nullable=False),
        sa.Column("batch_id", sa.BigInteger, nullable=False),
        schema=schema,
    )


def reflect(dest: Destination, table: str) -> tuple[pa.Schema, tuple[str, ...], tuple[str, ...]]:
    """A database table's columns as Arrow, its NOT NULL columns and its primary key;
    a SinkError naming the table and database if it is not there."""
    import sqlalchemy as sa
    from sqlalchemy.exc import NoSuchTableError

    engine = dest.engine()
    try:
        with engine.connect() as conn:
            t = sa.Table(table, sa.MetaData(), schema=dest.schema, autoload_with=conn)
    except NoSuchTableError:
        err = SinkError(f"{dest.where()} has no table '{table}'")
        err.transient = False
        raise err from None
    except Exception as e:
        raise dest.error(e, f"reading the columns of table '{table}'") from None
    finally:
        engine.dispose()
    fields = [
        pa.field(c.name, _arrow_type(c.type, dest.dialect), nullable=c.nullable) for c in t.columns
    ]
    not_null = tuple(c.name for c in t.columns if not c.nullable)
    return pa.schema(fields), not_null, tuple(c.name for c in t.primary_key.columns)


def describe(
    config: Mapping[str, Any], credentials: Mapping[str, Secret], table: str
) -> tuple[pa.Schema, tuple[str, ...], tuple[str, ...]]:
    """A pipeline's table as its sink sees it: :func:`reflect`'s columns and NOT NULL
    columns, and the key rows are matched on — the sink's own ``keys`` (a Kafka Connect
    JDBC sink's ``pk.fields``, which need no constraint to update or delete by) where
    given, else the table's primary key."""
    schema, not_null, key = reflect(Destination.of(config, credentials), table)
    keys = tuple(str(k) for k in config.get("keys") or ())
    return schema, not_null, keys or key


def _arrow_type(t: Any, dialect: str = "") -> pa.DataType:
    import sqlalchemy as sa

    if isinstance(t, sa.Boolean):
        return pa.bool_()
    if isinstance(t, sa.SmallInteger):
        return pa.int16()
    if isinstance(t, sa.BigInteger):
        return pa.int64()
    if isinstance(t, sa.Integer):
        if dialect == "sqlite":
            return pa.int64()  # SQLite's INTEGER holds 8 bytes
        return pa.int32() if type(t).__name__ not in ("TINYINT",) else pa.int8()
    if isinstance(t, sa.Numeric) and not isinstance(t, sa.Float):
        if t.precision and t.scale is not None and t.precision <= 38:
            return pa.decimal128(t.precision, t.scale)
        return pa.float64()
    if isinstance(t, sa.Float):
        return pa.float32() if type(t).__name__ in ("REAL", "FLOAT") else pa.float64()
    if isinstance(t, sa.DateTime):
        return pa.timestamp("us", tz="UTC" if t.timezone else None)
    if isinstance(t, sa.Date):
        return pa.date32()
    if isinstance(t, sa.LargeBinary) or type(t).__name__ in ("BLOB", "VARBINARY", "BINARY"):
        return pa.binary()
    return pa.string()  # text, JSON, UUID, enums: as text


def _column(dest: Destination, name: str, type_name: str, *, key: bool, nullable: bool) -> Any:
    """A column for ``CREATE TABLE`` / ``ALTER TABLE … ADD``."""
    import sqlalchemy as sa

    t = getattr(sa, type_name)
    if type_name == "Text" and key:
        t = sa.String(255)  # MySQL indexes no TEXT without a length
    elif type_name == "DateTime" and dest.dialect == "mysql":
        from sqlalchemy.dialects.mysql import DATETIME

        t = DATETIME(fsp=6)  # MySQL keeps whole seconds by default
    elif type_name == "JSON" and dest.dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB

        t = JSONB
    elif type_name == "JSON" and dest.dialect == "sqlite":
        t = sa.Text
    return sa.Column(name, t, nullable=nullable, autoincrement=False)


def create_table(
    dest: Destination,
    table: str,
    fields: Sequence[tuple[str, tuple[str, str], bool]],
    keys: Sequence[Any],
) -> list[Any]:
    """``CREATE TABLE`` in the database from (name, (SQLAlchemy type, _), nullable) and
    the connector's keys (``PRIMARY``, ``UNIQUE``, ``KEY``; SingleStore's ``SHARD`` and
    ``COLUMNSTORE`` where the server is SingleStore). Returns the keys left out."""
    import sqlalchemy as sa

    key_cols = {c for k in keys for c in k.columns}
    pk = [c for k in keys if k.kind == "PRIMARY" for c in k.columns]
    cols = [
        _column(dest, name, type_name, key=name in key_cols, nullable=nullable and name not in pk)
        for name, (type_name, _), nullable in fields
    ]
    meta = sa.MetaData()
    t = sa.Table(table, meta, *cols, schema=dest.schema)
    left_out = []
    for k in keys:
        if k.kind == "PRIMARY":
            t.append_constraint(sa.PrimaryKeyConstraint(*k.columns, name=k.name))
        elif k.kind == "UNIQUE":
            t.append_constraint(sa.UniqueConstraint(*k.columns, name=k.name))
        elif k.kind == "KEY":
            sa.Index(k.name or f"ix_{table}_{'_'.join(k.columns)}", *[t.c[c] for c in k.columns])
        else:
            left_out.append(k)
    engine = dest.engine()
    try:
        with engine.begin() as conn:
            meta.create_all(conn)
    except Exception as e:
        raise dest.error(e, f"creating table '{table}'") from None
    finally:
        engine.dispose()
    return left_out


def add_columns(
    dest: Destination, table: str, fields: Sequence[tuple[str, tuple[str, str], bool]]
) -> None:
    """``ALTER TABLE … ADD`` each of ``fields`` (all nullable: a column added to a table
    with rows has none for them), one statement each, as Confluent's JDBC sink amends a
    table."""
    from sqlalchemy.schema import CreateColumn

    engine = dest.engine()
    try:
        with engine.begin() as conn:
            q = conn.dialect.identifier_preparer.quote
            target = f"{q(dest.schema)}.{q(table)}" if dest.schema else q(table)
            for name, (type_name, _), _nullable in fields:
                column = _column(dest, name, type_name, key=False, nullable=True)
                ddl = CreateColumn(column).compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {target} ADD {ddl}")
    except Exception as e:
        raise dest.error(e, f"adding columns to table '{table}'") from None
    finally:
        engine.dispose()

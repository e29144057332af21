"""Tables of a PostgreSQL or MySQL/MariaDB database as a Kafka Connect source connector
(``io.confluent.connect.jdbc.JdbcSourceConnector``, Confluent's JDBC source), on
SQLAlchemy with psycopg2 or PyMySQL.

* A **table** is a source partition, ``{"table": "public.orders"}`` (schema or database,
  then table); one connector task reads it (tables are spread over ``tasks.max`` tasks).
* Its offset is the position of the last row read, with Confluent's keys:
  ``{"incrementing": 42}``, ``{"timestamp": ms, "timestamp_nanos": ns}`` (epoch
  milliseconds, and nanoseconds within the second, so that microseconds survive) or
  both. A reader asks for the rows after it, in that order, so a restart resumes after
  the last committed row and never reads one twice.
* ``mode``: ``incrementing`` (a strictly increasing column, new rows only),
  ``timestamp`` (rows whose timestamp is later than the last one read: new and updated
  rows) or ``timestamp+incrementing`` (both, the two columns ordering rows uniquely).
  In ``timestamp`` mode rows sharing a timestamp are always read together, so a poll
  never stops between two of them. As in Confluent's connector, a row committed later
  with a timestamp (or id) below one already read is not seen; ``timestamp.delay.interval.ms``
  leaves recent rows for a later batch, to let slow transactions commit first.
* A record is the row as a JSON object: numbers as numbers (DECIMAL too), timestamps
  and dates as ISO-8601 text, bytes in base64. Its topic is ``topic.prefix`` and the
  table's name; its id is the table and the row's offset.

CONFIG: ``connection.url`` (``jdbc:postgresql://host:5432/db``, ``jdbc:mysql://…`` or
``jdbc:mariadb://…``; a password in it, ``user:password@`` or ``?password=``, is taken as
the login's, sealed and shown ``<redacted>``), ``connection.user``, ``connection.password``
(a secret, also accepted in CREDENTIALS), ``table.whitelist`` / ``table.blacklist`` (or
their ``include``/``exclude.list`` spellings; default: every table of the schema),
``schema.pattern``, ``mode``, ``incrementing.column.name``, ``timestamp.column.name`` (one
column, or several: the first not NULL counts), ``timestamp.delay.interval.ms``,
``topic.prefix``, ``batch.max.rows`` (rows per query; default the extractor batch size)
and ``validate.non.null`` (default true: the offset columns must be NOT NULL, as a row
with NULL there would never be read).
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit
from uuid import UUID

import pyarrow as pa

from sparkpipes.config import REDACTED, Secret, urls
from sparkpipes.errors import ConfigError, SourceAuthError, SourceError, SourceUnavailableError
from sparkpipes.sources.connect import jdbc_url
from sparkpipes.sources.connect.base import (
    PartitionReader,
    Polled,
    RecordColumns,
    SourceConnector,
    compact,
)
from sparkpipes.util import db as dbutil
from sparkpipes.util.db import classify

MODES = ("incrementing", "timestamp", "timestamp+incrementing")
#: URL scheme → (SQLAlchemy driver, Python module, pip extra, name in messages, port)
DRIVERS = {
    "postgresql": ("postgresql+psycopg2", "psycopg2", None, "PostgreSQL", 5432),
    "mysql": ("mysql+pymysql", "pymysql", "jdbc", "MySQL", 3306),
    "mariadb": ("mysql+pymysql", "pymysql", "jdbc", "MariaDB", 3306),
}
CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class Database:
    """Where to connect (picklable; no I/O until :meth:`engine`)."""

    scheme: str
    host: str
    port: int
    database: str
    user: str | None
    password: Secret | None
    schema: str | None
    #: driver options from the URL (libpq's TLS settings), as (name, value) pairs
    options: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> str:
        return DRIVERS[self.scheme][3]

    def where(self) -> str:
        return f"{self.kind} database '{self.database}' at {self.host}:{self.port}"

    def engine(self) -> Any:
        return dbutil.engine(
            DRIVERS[self.scheme][0],
            host=self.host,
            port=self.port,
            database=self.database,
            user=self.user,
            password=self.password,
            query=dict(self.options) or None,
            connect_timeout_s=CONNECT_TIMEOUT_S,
        )

    def default_schema(self) -> str:
        if self.scheme == "postgresql":
            return self.schema or "public"
        return self.database

    def error(self, e: BaseException, doing: str) -> SourceError:
        """A driver error as the sparkpipes error a user can act on (never the password)."""
        d = classify(e)
        if d.refused:
            return SourceAuthError(
                f"{self.where()} refused user '{self.user}' while {doing}: {d.text}"
            )
        if d.down:
            return SourceUnavailableError(f"cannot reach {self.where()} while {doing}: {d.text}")
        return SourceError(f"{self.where()}: {d.text} (while {doing})")


def parse_url(
    url: str,
    user: str | None,
    password: Secret | None,
    schema: str | None,
    url_password: Secret | None = None,
) -> Database:
    """``jdbc:<postgresql|mysql|mariadb>://[user[:password]@]host[:port]/database[?user=…
    &password=…]``, checked. ``url`` is as stored, its password ``<redacted>`` and kept in
    ``url_password``; a password in a URL given in clear is taken out here. As the JDBC
    drivers (and psycopg2 / PyMySQL URLs) do, a password in the URL is the login's, the
    same as ``connection.password`` would give."""
    text, clear = urls.split(url.strip(), what="connection.url")
    if clear is not None:
        url_password = Secret(clear)
    rest = text[5:] if text.lower().startswith("jdbc:") else text
    parts = urlsplit(rest)
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme.lower()
    if scheme not in DRIVERS or not parts.hostname:
        raise ConfigError(
            f"connection.url '{text}' is not a JDBC URL sparkpipes can read: write "
            "jdbc:postgresql://host:5432/database, jdbc:mysql://host:3306/database or "
            "jdbc:mariadb://host:3306/database"
        )
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    family = jdbc_url.POSTGRESQL if scheme == "postgresql" else jdbc_url.MYSQL
    refused = [m for k, v in params.items() if (m := jdbc_url.problem(family, k, v))]
    if refused:
        raise ConfigError("; ".join(refused))
    raw = urls.password_of(url_password)
    if raw is not None:
        given = Secret(unquote_plus(raw) if urls.in_query(text) else unquote(raw))
        if password is not None and password != given:
            raise ConfigError(
                "connection.url and connection.password give different passwords: give one"
            )
        password = given
    elif urls.is_redacted(text):
        raise ConfigError(
            f"connection.url '{text}' shows its password as {REDACTED} and none is stored: "
            "give the password"
        )
    login = user or params.get("user") or (unquote(parts.username) if parts.username else None)
    # pgjdbc connects to the database named as the user when the URL names none
    database = parts.path.lstrip("/") or (login if family == jdbc_url.POSTGRESQL else "") or ""
    if not database:
        raise ConfigError(f"connection.url '{text}' names no database (…/database)")
    try:
        port = parts.port or DRIVERS[scheme][4]
    except ValueError:
        raise ConfigError(f"connection.url '{text}' has an invalid port") from None
    return Database(
        scheme,
        parts.hostname,
        port,
        database,
        login,
        password,
        schema or params.get("currentSchema"),
        tuple(sorted(jdbc_url.driver_options(family, params).items())),
    )


@dataclass(frozen=True)
class Settings:
    """What a reader needs, checked once on the driver (picklable)."""

    db: Database
    mode: str
    incrementing: str | None
    timestamps: tuple[str, ...]
    delay_ms: int
    topic_prefix: str
    max_rows: int | None
    validate_non_null: bool


class JdbcConnector(SourceConnector):
    class_names = ("io.confluent.connect.jdbc.JdbcSourceConnector",)
    config_keys = frozenset(
        {
            "connection.url",
            "connection.user",
            "table.whitelist",
            "table.blacklist",
            "table.include.list",
            "table.exclude.list",
            "schema.pattern",
            "mode",
            "incrementing.column.name",
            "timestamp.column.name",
            "timestamp.delay.interval.ms",
            "topic.prefix",
            "batch.max.rows",
            "validate.non.null",
            "query",
        }
    )
    secret_keys = frozenset({"connection.password"})
    partition_noun = "table"
    not_applicable_keys = {
        "poll.interval.ms": (
            "how often Confluent's connector queries; here the pipeline's batch interval "
            "decides when the tables are read"
        ),
        "table.poll.interval.ms": "tables are listed again every batch",
        "connection.attempts": "a database that cannot be reached is retried with the batch",
        "connection.backoff.ms": "a database that cannot be reached is retried with the batch",
    }

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        cfg = config
        if cfg.get("query"):
            raise ConfigError(
                "CONFIG key 'query' (a custom query) is not supported by sparkpipes' JDBC "
                "connector: name the tables in table.whitelist"
            )
        white = _names(cfg.text("table.whitelist") or cfg.text("table.include.list"))
        black = _names(cfg.text("table.blacklist") or cfg.text("table.exclude.list"))
        if white and black:
            raise ConfigError("give table.whitelist or table.blacklist, not both")
        mode = (cfg.text("mode") or "").strip().lower()
        if mode not in MODES:
            why = " (bulk mode reloads whole tables, which has no offset to resume)" * (
                mode == "bulk"
            )
            raise ConfigError(
                f"CONFIG key 'mode' must be one of {', '.join(MODES)}, got "
                f"{json.dumps(cfg.get('mode'))}{why}"
            )
        inc = cfg.text("incrementing.column.name") if "incrementing" in mode else None
        ts = _names(cfg.text("timestamp.column.name")) if "timestamp" in mode else ()
        if "incrementing" in mode and not inc:
            raise ConfigError(f"mode '{mode}' needs CONFIG key 'incrementing.column.name'")
        if "timestamp" in mode and not ts:
            raise ConfigError(f"mode '{mode}' needs CONFIG key 'timestamp.column.name'")
        password = config.secrets.get("connection.password")
        db = parse_url(
            cfg.require("connection.url"),
            cfg.text("connection.user"),
            password,
            cfg.text("schema.pattern"),
            config.secrets.get(urls.secret_key("connection.url")),
        )
        _, module, extra, kind, _ = DRIVERS[db.scheme]
        if importlib.util.find_spec(module) is None:
            hint = f"pip install 'sparkpipes[{extra}]'" if extra else f"pip install {module}"
            raise ConfigError(f"reading {kind} needs Python package '{module}': {hint}")
        max_rows = cfg.get("batch.max.rows")
        non_null = str(cfg.get("validate.non.null", "true")).strip().lower()
        if non_null not in ("true", "false"):
            raise ConfigError("CONFIG key 'validate.non.null' must be true or false")
        self.settings = Settings(
            db,
            mode,
            inc.strip() if inc else None,
            ts,
            cfg.integer("timestamp.delay.interval.ms", 0),
            cfg.text("topic.prefix") or "",
            cfg.integer("batch.max.rows", 1, low=1) if max_rows is not None else None,
            non_null == "true",
        )
        self.whitelist, self.blacklist = white, black
        self._engine: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}

    def _connect(self, doing: str) -> Any:
        if self._engine is None:
            self._engine = self.settings.db.engine()
        try:
            return self._engine.connect()
        except Exception as e:
            raise self.settings.db.error(e, doing) from None

    def partitions(self) -> list[dict[str, Any]]:
        from sqlalchemy import inspect

        db = self.settings.db
        with self._connect("listing its tables") as conn:
            try:
                found = inspect(conn)
                if not self.whitelist:
                    schema = db.default_schema()
                    names = [f"{schema}.{t}" for t in found.get_table_names(schema=schema)]
                    skip = {_qualified(db, t) for t in self.blacklist}
                    return [{"table": t} for t in sorted(names) if t not in skip]
                tables = [_qualified(db, t) for t in self.whitelist]
                missing = [t for t in tables if not found.has_table(*_split(t)[::-1])]
            except Exception as e:
                raise db.error(e, "listing its tables") from None
        if missing:
            raise SourceError(f"{db.where()} has no table {', '.join(missing)}")
        return [{"table": t} for t in tables]

    def start_offset(self, partition: Mapping[str, Any], policy: str) -> dict[str, Any]:
        """``latest``: after the rows there now (their greatest offset)."""
        if policy != "latest":
            return {}
        reader = self.reader()
        reader.open(partition, {})
        try:
            return reader.last()
        finally:
            reader.close()

    def reader(self) -> JdbcReader:
        return JdbcReader(self.settings)

    def label(self) -> str:
        return self.settings.db.where()

    def check(self) -> str:
        n = len(self.partitions())
        return f"{self.label()} has {n} table{'' if n == 1 else 's'} to read ({self.settings.mode})"

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


class JdbcReader(PartitionReader):
    """Reads one table in offset order, one query per poll, each in its own transaction
    (so that rows committed since are seen, under MySQL's repeatable read too)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engine: Any = None
        self._conn: Any = None
        self._table: Any = None
        self._offset: dict[str, Any] = {}
        self._name = ""
        self._aware = False

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None, "_conn": None, "_table": None}

    def open(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        from sqlalchemy import DateTime, MetaData, Table
        from sqlalchemy.exc import NoSuchTableError

        s, db = self.settings, self.settings.db
        self._name = str(partition["table"])
        self._offset = dict(offset)
        schema, table = _split(self._name)
        self._engine = db.engine()
        try:
            self._conn = self._engine.connect()
            self._table = Table(table, MetaData(), schema=schema, autoload_with=self._conn)
            self._conn.rollback()
        except NoSuchTableError:
            raise self._tag(SourceError(f"{db.where()} has no table {self._name}")) from None
        except Exception as e:
            raise self._tag(db.error(e, f"opening table {self._name}")) from None
        wanted = [c for c in (s.incrementing, *s.timestamps) if c]
        missing = [c for c in wanted if c not in self._table.c]
        if missing:
            raise self._tag(
                ConfigError(f"table {self._name} of {db.where()} has no column {missing[0]}")
            )
        nullable = [c for c in wanted if self._table.c[c].nullable]
        if s.validate_non_null and nullable:
            raise self._tag(
                ConfigError(
                    f"column {nullable[0]} of table {self._name} can be NULL, and a row with "
                    "NULL there would never be read: make it NOT NULL, or set "
                    "validate.non.null to false"
                )
            )
        ts = [self._table.c[c].type for c in s.timestamps]
        self._aware = any(isinstance(t, DateTime) and t.timezone for t in ts)

    def _tag(self, err: Any) -> Any:
        err.partition = compact({"table": self._name})
        return err

    def poll(self, max_records: int, timeout_s: float) -> Polled:
        s = self.settings
        limit = max(1, min(max_records, s.max_rows or max_records))
        try:
            rows = self._query(limit)
            full = len(rows) == limit
            if full and s.mode == "timestamp":
                rows = self._whole_last_timestamp(rows)
            self._conn.rollback()
        except Exception as e:
            raise self._tag(s.db.error(e, f"reading table {self._name}")) from None
        if not rows:
            return Polled([], dict(self._offset), at_end=True)
        offsets = [self._offset_of(r) for r in rows]
        self._offset = offsets[-1]
        return Polled([], dict(self._offset), at_end=not full, columns=self._columns(rows, offsets))

    def last(self) -> dict[str, Any]:
        """The offset of the table's last row now ({} when empty)."""
        from sqlalchemy import select

        order = [o.desc() for o in self._order()]
        try:
            row = self._conn.execute(select(self._table).order_by(*order).limit(1)).mappings()
            found = row.first()
            self._conn.rollback()
        except Exception as e:
            raise self._tag(self.settings.db.error(e, f"reading table {self._name}")) from None
        return self._offset_of(found) if found is not None else {}

    # -- queries ----------------------------------------------------------------------------
    def _ts(self) -> Any:
        from sqlalchemy import func

        cols = [self._table.c[c] for c in self.settings.timestamps]
        return cols[0] if len(cols) == 1 else func.coalesce(*cols)

    def _order(self) -> list[Any]:
        s = self.settings
        out = [self._ts()] if s.timestamps else []
        return out + ([self._table.c[s.incrementing]] if s.incrementing else [])

    def _where(self) -> list[Any]:
        from sqlalchemy import and_, func, or_, select

        s, off = self.settings, self._offset
        inc = self._table.c[s.incrementing] if s.incrementing else None
        conds = [o.is_not(None) for o in self._order()]  # such a row has no offset
        if s.timestamps:
            ts = self._ts()
            if "timestamp" in off:
                at = _ts_value(off, self._aware)
                if inc is not None and "incrementing" in off:
                    conds.append(or_(ts > at, and_(ts == at, inc > off["incrementing"])))
                else:
                    conds.append(ts > at)
            if s.delay_ms:
                now = func.current_timestamp() if self._aware else func.localtimestamp()
                bound = self._conn.execute(select(now)).scalar()
                conds.append(ts < bound - dt.timedelta(milliseconds=s.delay_ms))
        elif inc is not None and "incrementing" in off:
            conds.append(inc > off["incrementing"])
        return conds

    def _query(self, limit: int) -> list[Mapping[str, Any]]:
        from sqlalchemy import select

        stmt = select(self._table).where(*self._where()).order_by(*self._order()).limit(limit)
        return list(self._conn.execute(stmt).mappings())

    def _whole_last_timestamp(self, rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """Rows sharing the last row's timestamp, all of them: the offset (a timestamp
        alone) cannot stop between two of them."""
        from sqlalchemy import select

        last = self._ts_of(rows[-1])
        kept = [r for r in rows if self._ts_of(r) != last]
        ts = self._ts()
        stmt = select(self._table).where(ts == last)
        return kept + list(self._conn.execute(stmt).mappings())

    # -- records ----------------------------------------------------------------------------
    def _ts_of(self, row: Mapping[str, Any]) -> Any:
        return next((row[c] for c in self.settings.timestamps if row[c] is not None), None)

    def _offset_of(self, row: Mapping[str, Any]) -> dict[str, Any]:
        s, out = self.settings, {}
        if s.timestamps:
            out.update(_ts_offset(self._ts_of(row)))
        if s.incrementing:
            out["incrementing"] = int(row[s.incrementing])
        return out

    def _columns(
        self, rows: Sequence[Mapping[str, Any]], offsets: Sequence[Mapping[str, Any]]
    ) -> RecordColumns:
        table = {"table": self._name}
        topic = self.settings.topic_prefix + _split(self._name)[1]
        values = [
            json.dumps(dict(r), default=_jsonable, separators=(",", ":"), ensure_ascii=False)
            for r in rows
        ]
        stamps = [o["timestamp"] for o in offsets] if self.settings.timestamps else None
        return RecordColumns(
            pa.array([topic] * len(rows), pa.string()),
            pa.array([compact({**table, **o}) for o in offsets], pa.string()),
            pa.array(values, pa.string()),
            pa.array([compact(o) for o in offsets], pa.string()),
            pa.array(stamps, pa.int64()) if stamps is not None else None,
        )

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # the server may be gone; nothing to keep
                pass
        if self._engine is not None:
            self._engine.dispose()
        self._conn = self._engine = self._table = None


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


def _qualified(db: Database, name: str) -> str:
    return name if "." in name else f"{db.default_schema()}.{name}"


def _split(name: str) -> tuple[str, str]:
    schema, _, table = name.rpartition(".")
    return schema, table


def _ts_offset(value: Any) -> dict[str, int]:
    """A timestamp as Confluent's offset keys: epoch ms and nanoseconds of the second (a
    zone-less timestamp is taken as UTC, both ways, so it comes back as it was)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
    elif isinstance(value, dt.date):
        value = dt.datetime(value.year, value.month, value.day)
    else:
        raise SourceError(f"timestamp column holds {value!r}, not a timestamp")
    secs = calendar.timegm(value.timetuple())
    return {
        "timestamp": secs * 1000 + value.microsecond // 1000,
        "timestamp_nanos": value.microsecond * 1000,
    }


def _ts_value(offset: Mapping[str, Any], aware: bool) -> dt.datetime:
    ms, nanos = int(offset["timestamp"]), int(offset.get("timestamp_nanos", 0))
    secs = (ms - nanos // 1_000_000) // 1000 if nanos else ms // 1000
    micros = nanos // 1000 if nanos else (ms % 1000) * 1000
    value = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs, microseconds=micros)
    return value.replace(tzinfo=dt.UTC) if aware else value


def _jsonable(value: Any) -> Any:
    """A column value JSON has no type for, as the record shows it."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, UUID):
        return str(value)
    return str(value)

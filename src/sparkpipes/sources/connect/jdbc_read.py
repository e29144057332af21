"""The executor side of the JDBC source: what one task does with one table (or the
custom query) in each ``mode`` — Confluent's queriers, as sparkpipes readers.

* :class:`IncrementalReader` (``incrementing``, ``timestamp``, ``timestamp+incrementing``):
  the rows after the committed offset, in offset order, one query per poll, each in its own
  transaction (so rows committed since are seen, under MySQL's repeatable read too).
* :class:`BulkReader` (``bulk``): a **snapshot** — every row of the table, read by one
  SELECT in one transaction (the table at one instant), whole in one poll, so a batch never
  holds part of a snapshot and its offset never points inside one. Each snapshot is tagged:
  its records' ids carry ``"snapshot": n`` (1, 2, …) and the row's place in it, and the
  partition's offset is ``{"snapshot": n, "timestamp": ms}``. Rows and offset are committed
  together, so snapshot *n* is loaded exactly once: a batch that fails before its commit
  leaves the offset at *n-1* and the retry reads snapshot *n* again, in full, once.

With ``query`` the source is the user's SELECT, wrapped as a subquery, and the offset
condition and order are put around it: what Confluent gets by appending its WHERE clause to
the query, which also works here when the query has its own WHERE.
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

import pyarrow as pa

from sparkpipes.errors import ConfigError, SourceError, SparkpipesError
from sparkpipes.sources.connect.base import PartitionReader, Polled, RecordColumns, compact
from sparkpipes.sources.connect.jdbc_dialects import Database

BULK = "bulk"
INCREMENTAL = ("incrementing", "timestamp", "timestamp+incrementing")
MODES = (BULK, *INCREMENTAL)
#: the source partition of ``query`` mode, as Confluent names it
QUERY_PARTITION = {"query": "query"}
#: the subquery's name around a custom query
QUERY_ALIAS = "sparkpipes_query"
#: how SQLite's timestamps are compared (its own format, to the millisecond)
SQLITE_TIME = "%Y-%m-%d %H:%M:%f"
#: the label of a SQLite row's timestamp as SQLite compares it (read with the row, so that
#: its offset is what the next query's ``>`` compares against, rounding and all)
TS_KEY = "__sp_ts"


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
    query: str | None = None
    #: bulk: the least time between two snapshots of a table (Confluent's default 5 s)
    poll_interval_ms: int = 5000


class _Reader(PartitionReader):
    """What every mode shares: the connection, the table (or the query as a subquery)
    and the records' columns."""

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
        from sqlalchemy import DateTime

        s, db = self.settings, self.settings.db
        self._name = str(partition.get("table") or "query")
        self._offset = dict(offset)
        self._engine = db.engine()
        try:
            self._conn = db.connect(self._engine, f"opening {self._what()}")
        except SparkpipesError as e:
            raise self._tag(e) from None
        try:
            self._table = self._query_source() if s.query else self._table_source()
            self._conn.rollback()
        except SourceError as e:
            raise self._tag(e) from None
        except Exception as e:
            raise self._tag(db.error(e, f"opening {self._what()}")) from None
        wanted = [c for c in (s.incrementing, *s.timestamps) if c]
        missing = [c for c in wanted if c not in self._table.c]
        if missing:
            raise self._tag(
                ConfigError(f"{self._what()} of {db.where()} has no column {missing[0]}")
            )
        nullable = [c for c in wanted if not s.query and _nullable(self._table, c)]
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

    def _what(self) -> str:
        return "the query" if self.settings.query else f"table {self._name}"

    def _table_source(self) -> Any:
        from sqlalchemy import MetaData, Table
        from sqlalchemy.exc import NoSuchTableError

        schema, table = split(self._name)
        try:
            return Table(table, MetaData(), schema=schema, autoload_with=self._conn)
        except NoSuchTableError:
            raise SourceError(f"{self.settings.db.where()} has no table {self._name}") from None

    def _query_source(self) -> Any:
        """The query as a subquery with the columns it gives (asked with a query that
        returns no row)."""
        from sqlalchemy import column, text

        query = str(self.settings.query).strip().rstrip(";")
        probe = text(f"SELECT * FROM ({query}) {QUERY_ALIAS} WHERE 1 = 0")
        names = list(self._conn.execute(probe).keys())
        return text(query).columns(*(column(n) for n in names)).subquery(QUERY_ALIAS)

    def _tag(self, err: Any) -> Any:
        err.partition = compact(
            {"query": "query"} if self.settings.query else {"table": self._name}
        )
        return err

    def _topic(self) -> str:
        s = self.settings
        return s.topic_prefix if s.query else s.topic_prefix + split(self._name)[1]

    def _columns(
        self,
        rows: Sequence[Mapping[str, Any]],
        ids: Sequence[Mapping[str, Any]],
        offsets: Sequence[Mapping[str, Any]],
        stamps: Sequence[int] | None,
    ) -> RecordColumns:
        values = [
            json.dumps(
                {k: v for k, v in r.items() if k != TS_KEY},
                default=jsonable,
                separators=(",", ":"),
                ensure_ascii=False,
            )
            for r in rows
        ]
        return RecordColumns(
            pa.array([self._topic()] * len(rows), pa.string()),
            pa.array([compact(i) for i in ids], pa.string()),
            pa.array(values, pa.string()),
            pa.array([compact(o) for o in offsets], pa.string()),
            pa.array(stamps, pa.int64()) if stamps is not None else None,
        )

    def _partition(self) -> dict[str, Any]:
        return dict(QUERY_PARTITION) if self.settings.query else {"table": self._name}

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # the server may be gone; nothing to keep
                pass
        if self._engine is not None:
            self._engine.dispose()
        self._conn = self._engine = self._table = None


class BulkReader(_Reader):
    """``mode=bulk``: one snapshot per open (the connector opens a table only when
    ``poll.interval.ms`` has passed since its last snapshot), whole in one poll."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._done = False

    def open(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        super().open(partition, offset)
        self._done = False

    def poll(self, max_records: int, timeout_s: float) -> Polled:
        """The snapshot, whatever ``max_records`` (a snapshot is never split; rows are
        fetched ``batch.max.rows`` at a time); then nothing until the next open."""
        from sqlalchemy import select

        if self._done:
            return Polled([], dict(self._offset), at_end=True)
        s = self.settings
        taken = int(time.time() * 1000)
        try:
            result = self._conn.execute(select(self._table)).mappings()
            rows: list[Mapping[str, Any]] = []
            while chunk := result.fetchmany(s.max_rows or 10_000):
                rows.extend(chunk)
            self._conn.rollback()
        except Exception as e:
            raise self._tag(s.db.error(e, f"reading {self._what()}")) from None
        self._done = True
        number = int(self._offset.get("snapshot", 0)) + 1
        self._offset = {"snapshot": number, "timestamp": taken}
        if not rows:  # an empty table: the snapshot is taken, and holds nothing
            return Polled([], dict(self._offset), at_end=True)
        at = {"snapshot": number, "timestamp": taken}
        ids = [{**self._partition(), **at, "row": i} for i in range(len(rows))]
        offsets = [{**at, "row": i} for i in range(len(rows))]
        cols = self._columns(rows, ids, offsets, [taken] * len(rows))
        return Polled([], dict(self._offset), at_end=True, columns=cols)


class IncrementalReader(_Reader):
    """``incrementing`` / ``timestamp`` / ``timestamp+incrementing``: the rows after the
    offset, in offset order, one query per poll."""

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
            raise self._tag(s.db.error(e, f"reading {self._what()}")) from None
        if not rows:
            return Polled([], dict(self._offset), at_end=True)
        offsets = [self._offset_of(r) for r in rows]
        self._offset = offsets[-1]
        ids = [{**self._partition(), **o} for o in offsets]
        stamps = [o["timestamp"] for o in offsets] if s.timestamps else None
        cols = self._columns(rows, ids, offsets, stamps)
        return Polled([], dict(self._offset), at_end=not full, columns=cols)

    def last(self) -> dict[str, Any]:
        """The offset of the last row now ({} when there is none)."""

        order = [o.desc() for o in self._order()]
        try:
            row = self._conn.execute(self._select().order_by(*order).limit(1)).mappings()
            found = row.first()
            self._conn.rollback()
        except Exception as e:
            raise self._tag(self.settings.db.error(e, f"reading {self._what()}")) from None
        return self._offset_of(found) if found is not None else {}

    # -- queries ----------------------------------------------------------------------------
    def _text_time(self) -> bool:
        """SQLite keeps timestamps as text, in whatever format the writer chose: they are
        compared through its own date functions, at their millisecond precision."""
        return self.settings.db.scheme == "sqlite"

    def _ts(self) -> Any:
        from sqlalchemy import func

        cols = [self._table.c[c] for c in self.settings.timestamps]
        ts = cols[0] if len(cols) == 1 else func.coalesce(*cols)
        return func.strftime(SQLITE_TIME, ts) if self._text_time() else ts

    def _param(self, value: dt.datetime) -> Any:
        """A timestamp to compare with :meth:`_ts`."""
        if not self._text_time():
            return value
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"

    def _same(self, value: Any) -> Any:
        """A row's timestamp as :meth:`_ts` compares it (milliseconds for SQLite)."""
        if self._text_time() and isinstance(value, (str, dt.datetime)):
            return self._param(_parse_time(value))
        return value

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
                at = self._param(ts_value(off, self._aware))
                if inc is not None and "incrementing" in off:
                    conds.append(or_(ts > at, and_(ts == at, inc > off["incrementing"])))
                else:
                    conds.append(ts > at)
            if s.delay_ms:
                now = func.current_timestamp() if self._aware else func.localtimestamp()
                if self._text_time():
                    now = func.strftime(SQLITE_TIME, "now")
                bound = _parse_time(self._conn.execute(select(now)).scalar())
                conds.append(ts < self._param(bound - dt.timedelta(milliseconds=s.delay_ms)))
        elif inc is not None and "incrementing" in off:
            conds.append(inc > off["incrementing"])
        return conds

    def _query(self, limit: int) -> list[Mapping[str, Any]]:

        stmt = self._select().where(*self._where()).order_by(*self._order()).limit(limit)
        return list(self._conn.execute(stmt).mappings())

    def _select(self) -> Any:
        """The rows, with a SQLite row's timestamp as SQLite compares it (:data:`TS_KEY`):
        it rounds to the millisecond, which Python cannot be relied on to do alike."""
        from sqlalchemy import select

        stmt = select(self._table)
        if self._text_time() and self.settings.timestamps:
            stmt = stmt.add_columns(self._ts().label(TS_KEY))
        return stmt

    def _whole_last_timestamp(self, rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """Rows sharing the last row's timestamp, all of them: the offset (a timestamp
        alone) cannot stop between two of them."""

        last = self._same(self._ts_of(rows[-1]))
        kept = [r for r in rows if self._same(self._ts_of(r)) != last]
        stmt = self._select().where(self._ts() == last)
        return kept + list(self._conn.execute(stmt).mappings())

    def _ts_of(self, row: Mapping[str, Any]) -> Any:
        if TS_KEY in row:
            return row[TS_KEY]
        return next((row[c] for c in self.settings.timestamps if row[c] is not None), None)

    def _offset_of(self, row: Mapping[str, Any]) -> dict[str, Any]:
        s, out = self.settings, {}
        if s.timestamps:
            out.update(ts_offset(self._ts_of(row)))
        if s.incrementing:
            out["incrementing"] = int(row[s.incrementing])
        return out


def _nullable(table: Any, name: str) -> bool:
    """Whether column ``name`` may hold NULL. SQLite reports its ``INTEGER PRIMARY KEY``
    (the rowid, never NULL) as nullable: a lone integer primary key is not."""
    col = table.c[name]
    if not col.nullable:
        return False
    keys = list(table.primary_key.columns)
    lone = len(keys) == 1 and keys[0] is col
    return not (lone and col.type.__class__.__name__.upper().startswith("INT"))


def reader(settings: Settings) -> _Reader:
    """The reader of ``settings.mode``."""
    return BulkReader(settings) if settings.mode == BULK else IncrementalReader(settings)


def split(name: str) -> tuple[str, str]:
    """``(schema, table)`` of a qualified name."""
    schema, _, table = name.rpartition(".")
    return schema, table


def _parse_time(value: Any) -> Any:
    """A timestamp SQLite gave as text, as a datetime (anything else as it is)."""
    if not isinstance(value, str):
        return value
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise SourceError(f"timestamp column holds {value!r}, not a timestamp") from None


def ts_offset(value: Any) -> dict[str, int]:
    """A timestamp as Confluent's offset keys: epoch ms and nanoseconds of the second (a
    zone-less timestamp is taken as UTC, both ways, so it comes back as it was)."""
    value = _parse_time(value)  # SQLite keeps timestamps as text
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


def ts_value(offset: Mapping[str, Any], aware: bool) -> dt.datetime:
    ms, nanos = int(offset["timestamp"]), int(offset.get("timestamp_nanos", 0))
    secs = (ms - nanos // 1_000_000) // 1000 if nanos else ms // 1000
    micros = nanos // 1000 if nanos else (ms % 1000) * 1000
    value = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs, microseconds=micros)
    return value.replace(tzinfo=dt.UTC) if aware else value


def jsonable(value: Any) -> Any:
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

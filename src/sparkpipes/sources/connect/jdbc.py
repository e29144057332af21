"""Tables of a database as a Kafka Connect source connector
(``io.confluent.connect.jdbc.JdbcSourceConnector``, Confluent's JDBC source), on
SQLAlchemy: PostgreSQL, MySQL/MariaDB and SQLite here, Oracle and SQL Server where their
drivers are installed (``jdbc_dialects``).

* A **table** is a source partition, ``{"table": "public.orders"}`` (schema or database,
  then table); one connector task reads it (tables are spread over ``tasks.max`` tasks).
  With ``query`` the one partition is ``{"query": "query"}``, as Confluent names it.
* ``mode`` (``jdbc_read`` has the readers):

  - ``incrementing`` (a strictly increasing column, new rows only), ``timestamp`` (rows
    whose timestamp is later than the last one read: new and updated rows) or
    ``timestamp+incrementing`` (both, the two columns ordering rows uniquely). The offset
    is the last row read, with Confluent's keys: ``{"incrementing": 42}``,
    ``{"timestamp": ms, "timestamp_nanos": ns}`` or both; a restart resumes after the last
    committed row and never reads one twice. Rows sharing a timestamp are always read
    together. As in Confluent's connector, a row committed later with a timestamp (or id)
    below one already read is not seen; ``timestamp.delay.interval.ms`` leaves recent
    rows for a later batch, to let slow transactions commit first.
  - ``bulk``: a full snapshot of the table every ``poll.interval.ms`` (default 5000, as
    Confluent's), **each snapshot tagged** and loaded exactly once: its records' ids hold
    ``"snapshot": n`` and the row's place, the offset ``{"snapshot": n, "timestamp": ms}``
    is committed with them, and the latest snapshot is the rows of the greatest ``n``.
    Why tagged rather than replacing the table: the destination is the pipeline's table or
    procedure, which several source tables share (their rows told apart by ``topic``) and
    which the user may also fill otherwise, so a source may not delete from it; the rows a
    Kafka consumer of Confluent's connector gets are the same (every poll the whole table
    again), made tellable apart; and nothing loaded is ever lost. A table can be kept to
    its latest snapshot with SQL, or by a procedure that replaces it.

* A record is the row as a JSON object: numbers as numbers (DECIMAL too), timestamps
  and dates as ISO-8601 text, bytes in base64. Its topic is ``topic.prefix`` and the
  table's name (with ``query``: ``topic.prefix`` itself, as in Confluent's connector).

CONFIG: ``connection.url`` (a password in it, ``user:password@`` or ``?password=``, is
taken as the login's, sealed and shown ``<redacted>``), ``connection.user``,
``connection.password`` (a secret, also accepted in CREDENTIALS), ``table.whitelist`` /
``table.blacklist`` (or their ``include``/``exclude.list`` spellings; default: every table
of the schema), ``schema.pattern``, ``query``, ``mode``, ``incrementing.column.name``,
``timestamp.column.name`` (one column, or several: the first not NULL counts),
``timestamp.delay.interval.ms``, ``timestamp.initial`` (epoch ms: a timestamp mode starts
after it; -1, "now", is refused), ``table.types`` (TABLE, VIEW), ``poll.interval.ms``
(bulk), ``topic.prefix``,
``batch.max.rows`` (rows per query; default the extractor batch size),
``validate.non.null`` (default true: the offset columns must be NOT NULL, as a row with
NULL there would never be read), ``db.timezone`` (UTC, the zone zone-less timestamps are
read in; another is refused) and ``quote.sql.identifiers`` (``always``: names are used as
the catalog spells them; ``never`` is refused), ``connection.attempts`` (default 3) and
``connection.backoff.ms`` (default 10000): a database that cannot be reached is tried that
many times, that far apart, before the batch fails (and is retried as any transient
failure). Problems are reported all at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sparkpipes.config import urls
from sparkpipes.errors import ConfigError, SourceError
from sparkpipes.sources.connect.base import SourceConnector, compact
from sparkpipes.sources.connect.framework import ConnectConfigError
from sparkpipes.sources.connect.jdbc_dialects import Database, parse_url
from sparkpipes.sources.connect.jdbc_read import (
    BULK,
    MODES,
    QUERY_PARTITION,
    IncrementalReader,
    Settings,
    reader,
    split,
)

#: zones ``db.timezone`` may name: the one zone-less timestamps are read in here
UTC_NAMES = frozenset({"UTC", "Z", "GMT", "Etc/UTC", "Etc/GMT", "UTC+0", "GMT+0", "+00:00"})
#: what ``table.types`` may list
TABLE_TYPES = ("TABLE", "VIEW")
#: Confluent's default ``poll.interval.ms``
POLL_INTERVAL_MS = 5000


class JdbcConnector(SourceConnector):
    class_names = ("io.confluent.connect.jdbc.JdbcSourceConnector",)
    #: Confluent's JDBC source gives its records no timestamp (transforms see null)
    record_timestamps = False
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
            "query",
            "incrementing.column.name",
            "timestamp.column.name",
            "timestamp.delay.interval.ms",
            "poll.interval.ms",
            "topic.prefix",
            "batch.max.rows",
            "validate.non.null",
            "db.timezone",
            "quote.sql.identifiers",
            "table.types",
            "timestamp.initial",
            "connection.attempts",
            "connection.backoff.ms",
        }
    )
    secret_keys = frozenset({"connection.password"})
    partition_noun = "table"
    not_applicable_keys = {
        "poll.interval.ms": (
            "how often Confluent's connector queries; outside bulk mode the pipeline's "
            "batch interval decides when the tables are read"
        ),
        "table.poll.interval.ms": "tables are listed again every batch",
        "numeric.mapping": (
            "chooses the Connect schema type of NUMERIC columns for Kafka's converters; here "
            "a record is JSON and a NUMERIC value is a JSON number whatever it says"
        ),
        "numeric.precision.mapping": (
            "the older spelling of numeric.mapping: a NUMERIC value is a JSON number here"
        ),
        "dialect.name": "the dialect follows from connection.url",
    }

    @classmethod
    def inapplicable(cls, config: Mapping[str, Any]) -> dict[str, str]:
        """``poll.interval.ms`` is honoured in bulk mode (the time between snapshots)."""
        out = super().inapplicable(config)
        if str(config.get("mode", "")).strip().lower() == BULK:
            out.pop("poll.interval.ms", None)
        return out

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        cfg = config
        problems: list[tuple[str | None, str]] = []

        def check(key: str | None, fn: Any, *args: Any) -> Any:
            try:
                return fn(*args)
            except ConfigError as e:
                problems.append((key, e.message))
                return None

        white = _one_of(cfg, "table.whitelist", "table.include.list", problems)
        black = _one_of(cfg, "table.blacklist", "table.exclude.list", problems)
        pattern = cfg.text("schema.pattern") or ""
        if "%" in pattern:
            problems.append(
                (
                    "schema.pattern",
                    f"schema.pattern '{pattern}' is a pattern (%): matching several schemas "
                    "is not supported, name one schema",
                )
            )
        self.table_types = tuple(t.upper() for t in _names(cfg.text("table.types") or "TABLE"))
        odd = [t for t in self.table_types if t not in TABLE_TYPES]
        if odd:
            problems.append(
                (
                    "table.types",
                    f"table.types '{odd[0]}' is not supported (read: TABLE, VIEW)",
                )
            )
        initial = cfg.get("timestamp.initial")
        if initial is not None and str(initial).strip() == "-1":
            problems.append(
                (
                    "timestamp.initial",
                    "timestamp.initial -1 (the time the connector starts) is not supported: "
                    "start the pipeline at latest, which reads the rows after the last one now",
                )
            )
            initial = None
        self.initial_ms = (
            check("timestamp.initial", cfg.integer, "timestamp.initial", 0)
            if initial is not None
            else None
        )
        if white and black:
            problems.append(
                ("table.blacklist", "give table.whitelist or table.blacklist, not both")
            )
        query = (cfg.text("query") or "").strip() or None
        if query and (white or black):
            key = "table.whitelist" if white else "table.blacklist"
            problems.append((key, f"give query or {key}, not both: a query names its own tables"))
        mode = (cfg.text("mode") or "").strip().lower()
        if mode not in MODES:
            problems.append(
                (
                    "mode",
                    f"CONFIG key 'mode' must be one of {', '.join(MODES)}, got "
                    f"{json.dumps(cfg.get('mode'))}",
                )
            )
        inc = cfg.text("incrementing.column.name") if "incrementing" in mode else None
        ts = _names(cfg.text("timestamp.column.name")) if "timestamp" in mode else ()
        if "incrementing" in mode and not (inc or "").strip():
            problems.append(
                (
                    "incrementing.column.name",
                    f"mode '{mode}' needs CONFIG key 'incrementing.column.name'",
                )
            )
        if "timestamp" in mode and not ts:
            problems.append(
                ("timestamp.column.name", f"mode '{mode}' needs CONFIG key 'timestamp.column.name'")
            )
        zone = str(cfg.get("db.timezone", "UTC")).strip()
        if zone not in UTC_NAMES:
            problems.append(
                (
                    "db.timezone",
                    f"db.timezone '{zone}' is not supported: zone-less timestamps are read as "
                    "UTC (give UTC, or store the zone in the column)",
                )
            )
        quoting = str(cfg.get("quote.sql.identifiers", "always")).strip().lower()
        if quoting != "always":
            problems.append(
                (
                    "quote.sql.identifiers",
                    f"quote.sql.identifiers '{quoting}' is not supported: table and column "
                    "names are always used as the database spells them (always)",
                )
            )
        url = cfg.get("connection.url")
        db: Database | None = None
        if not url:
            problems.append(
                (
                    "connection.url",
                    f"connector {config.connector_class} needs CONFIG key 'connection.url'",
                )
            )
        else:
            db = check(
                "connection.url",
                parse_url,
                str(url),
                cfg.text("connection.user"),
                config.secrets.get("connection.password"),
                cfg.text("schema.pattern"),
                config.secrets.get(urls.secret_key("connection.url")),
            )
        if db is not None and white:
            for name in white:
                check("table.whitelist", db.qualified, name)
        non_null = str(cfg.get("validate.non.null", "true")).strip().lower()
        if non_null not in ("true", "false"):
            problems.append(
                ("validate.non.null", "CONFIG key 'validate.non.null' must be true or false")
            )
        max_rows = cfg.get("batch.max.rows")
        rows = (
            check("batch.max.rows", cfg.integer, "batch.max.rows", 1, 1)
            if max_rows is not None
            else None
        )
        delay = check("timestamp.delay.interval.ms", cfg.integer, "timestamp.delay.interval.ms", 0)
        interval = check("poll.interval.ms", cfg.integer, "poll.interval.ms", POLL_INTERVAL_MS)
        attempts = check("connection.attempts", cfg.integer, "connection.attempts", 3, 1)
        backoff = check("connection.backoff.ms", cfg.integer, "connection.backoff.ms", 10_000)
        if problems:
            raise ConnectConfigError(problems, what=f"{config.connector_class}")
        assert db is not None
        limits = replace(db.limits, attempts=attempts or 3, backoff_ms=backoff or 0)
        self.settings = Settings(
            replace(db, limits=limits),
            mode,
            inc.strip() if inc else None,
            ts,
            delay or 0,
            cfg.text("topic.prefix") or "",
            rows,
            non_null == "true",
            query,
            interval if interval is not None else POLL_INTERVAL_MS,
        )
        self.whitelist, self.blacklist = white, black
        self._engine: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}

    def _connect(self, doing: str) -> Any:
        if self._engine is None:
            self._engine = self.settings.db.engine()
        return self.settings.db.connect(self._engine, doing)

    def partitions(self) -> list[dict[str, Any]]:
        from sqlalchemy import inspect

        db = self.settings.db
        if self.settings.query:
            return [dict(QUERY_PARTITION)]
        with self._connect("listing its tables") as conn:
            try:
                found = inspect(conn)
                if not self.whitelist:
                    schema = db.default_schema()
                    listed = [
                        *(
                            found.get_table_names(schema=schema)
                            if "TABLE" in self.table_types
                            else []
                        ),
                        *(
                            found.get_view_names(schema=schema)
                            if "VIEW" in self.table_types
                            else []
                        ),
                    ]
                    names = [f"{schema}.{t}" for t in listed]
                    skip = {db.qualified(t) for t in self.blacklist}
                    return [{"table": t} for t in sorted(names) if t not in skip]
                tables = [db.qualified(t) for t in self.whitelist]
                missing = [t for t in tables if not found.has_table(*split(t)[::-1])]
            except Exception as e:
                raise db.error(e, "listing its tables") from None
        if missing:
            raise SourceError(f"{db.where()} has no table {', '.join(missing)}")
        return [{"table": t} for t in tables]

    def ready(
        self, partitions: Sequence[Mapping[str, Any]], offsets: Mapping[str, Any]
    ) -> list[Mapping[str, Any]]:
        """In bulk mode, the tables whose last snapshot is ``poll.interval.ms`` old."""
        if self.settings.mode != BULK:
            return list(partitions)
        now = time.time() * 1000
        due = []
        for p in partitions:
            offset = offsets.get(compact(p))
            last = offset.get("timestamp") if isinstance(offset, Mapping) else None
            if last is None or now - int(last) >= self.settings.poll_interval_ms:
                due.append(p)
        return due

    def start_offset(self, partition: Mapping[str, Any], policy: str) -> dict[str, Any]:
        """``earliest``: the first row, or in a timestamp mode the rows after
        ``timestamp.initial`` (epoch ms) when it is given; ``latest``: after the rows there
        now (their greatest offset). In bulk mode a snapshot is the table as it is now, so
        either policy takes the first one at once."""
        if policy != "latest" or self.settings.mode == BULK:
            at = self.initial_ms
            if at is None or not self.settings.timestamps:
                return {}
            return {"timestamp": at, "timestamp_nanos": (at % 1000) * 1_000_000}
        r = IncrementalReader(self.settings)
        r.open(partition, {})
        try:
            return r.last()
        finally:
            r.close()

    def reader(self) -> Any:
        return reader(self.settings)

    def label(self) -> str:
        return self.settings.db.where()

    def check(self) -> str:
        """What was found, and for MySQL and MariaDB how the connection is secured."""
        n = len(self.partitions())
        tls = self.settings.db.tls
        over = f"; {tls.describe()}" if tls is not None else ""
        if self.settings.query:
            return f"{self.label()} has a query to read ({self.settings.mode}){over}"
        tables = f"{n} table{'' if n == 1 else 's'}"
        return f"{self.label()} has {tables} to read ({self.settings.mode}){over}"

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


def _one_of(
    cfg: Any, old: str, new: str, problems: list[tuple[str | None, str]]
) -> tuple[str, ...]:
    """The tables of ``old`` or its newer spelling ``new``; both, naming different tables,
    is a problem (neither may be ignored)."""
    first, second = _names(cfg.text(old)), _names(cfg.text(new))
    if first and second and first != second:
        problems.append((new, f"{old} and {new} name different tables: give one"))
    return first or second

"""Pinot's broker query endpoint, ``POST /query/sql``, answered as Pinot's broker answers
(``BrokerResponseNative``), so Pinot's clients — ``pinotdb`` (DB-API and SQLAlchemy), the
Java client, scripts reading the JSON — work unchanged.

What is promised, as Pinot gives it:

- The request is Pinot's JSON, ``{"sql": …, "queryOptions": "k=v;k2=v2", "trace": …}``; a
  query runs as the signed-in user, under the same privileges as SQL anywhere else.
- ``resultTable`` holds ``dataSchema`` (``columnNames``, ``columnDataTypes``: Pinot's
  column data types — INT, LONG, FLOAT, DOUBLE, BIG_DECIMAL, BOOLEAN, TIMESTAMP, STRING,
  JSON, BYTES, MAP, and the ``_ARRAY`` types — from the result's Spark types) and ``rows``
  with each value as Pinot writes it: TIMESTAMP as Java's ``Timestamp.toString()`` (``2024-
  01-02 03:04:05.0``, UTC), BIG_DECIMAL as plain text, BYTES as hex, a non-finite FLOAT or
  DOUBLE as ``"NaN"`` / ``"Infinity"``. A statement that answers no rows has no
  ``resultTable``, as Pinot omits it.
- Columns are named as Spark names them, but ``count(*)`` (Spark's ``count(1)``) as Pinot
  does.
- Pinot's default LIMIT: a query without a LIMIT answers at most 10 rows, as Pinot's
  single-stage engine does (``useMultistageEngine=true`` in ``queryOptions``: no default);
  never more than :data:`MAX_ROWS`.
- Every statistic Pinot's broker gives is there with its name and type. One engine answers,
  so ``numServersQueried`` = ``numServersResponded`` = 1 (0 when the query failed before
  running, as Pinot's broker says of a query it refused); ``totalDocs`` and
  ``numDocsScanned`` are the rows of the tables read (from their Delta logs; a filter's
  matches are not counted); the segment, CPU and memory figures, which describe Pinot's
  servers, are 0.
- Errors are in ``exceptions`` as ``[{"errorCode", "message"}]`` with Pinot's codes (150
  SQL parsing, 180 access denied, 190 no such table, 700 validation, 710 unknown column,
  200 execution, 450 internal) and HTTP 200, or the code's HTTP status when the request
  sends ``Pinot-Use-Http-Status-For-Errors: true``; ``X-Pinot-Error-Code`` is the first
  code (-1: none). A request refused before it ran (sign-in, a bad body) keeps its status
  (401, 400, 429 …) and gets the same shape (:func:`failure`), so ``pinotdb`` reports the
  reason. Never a stack trace, never a credential.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import logging
import math
import re
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import sqlglot
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlglot import exp

from sparkpipes.errors import (
    AccessDeniedError,
    NotAdmittedError,
    NotFoundError,
    QueryError,
    SparkpipesError,
)
from sparkpipes.frontends.singlestore.errors import ParseError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.server.access import user_of
from sparkpipes.server.errors import ERRORS, unexpected

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

log = logging.getLogger("sparkpipes.server")

#: path prefixes whose errors are shaped as Pinot's broker shapes them (:func:`failure`)
PATHS = ("/query/",)
#: rows answered at most, whatever the query's LIMIT
MAX_ROWS = 100_000
#: Pinot's broker's ``pinot.broker.default.query.limit``
DEFAULT_LIMIT = 10
#: the request header asking for HTTP error statuses, and the answer's error-code header
STATUS_HEADER = "Pinot-Use-Http-Status-For-Errors"
CODE_HEADER = "X-Pinot-Error-Code"

#: Pinot's ``QueryErrorCode``: id → (default message, HTTP status)
CODES: dict[int, tuple[str, int]] = {
    100: ("JsonParsingError", 400),
    150: ("SQLParsingError", 400),
    180: ("AccessDenied", 403),
    190: ("TableDoesNotExistError", 404),
    200: ("QueryExecutionError", 500),
    429: ("TooManyRequests", 429),
    450: ("InternalError", 500),
    700: ("QueryValidationError", 400),
    710: ("UnknownColumnError", 400),
    1000: ("UnknownError", 500),
}
#: an HTTP status of a request refused before its query ran → Pinot's code for it
_BY_STATUS = {400: 100, 401: 180, 403: 180, 404: 190, 429: 429, 500: 450}


class PinotQuery(BaseModel):
    """Pinot's broker request."""

    sql: str = Field(min_length=1, description="the query")
    queryOptions: str | None = Field(  # Pinot's name
        None, description="Pinot's query options, 'key=value;key=value'"
    )
    trace: bool | str | None = Field(None, description="accepted; no trace is kept")


# -- types and values -------------------------------------------------------------------
_SPARK_TYPES = {
    "boolean": "BOOLEAN",
    "tinyint": "INT",
    "smallint": "INT",
    "int": "INT",
    "integer": "INT",
    "bigint": "LONG",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
    "binary": "BYTES",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP",
    "date": "STRING",  # Pinot has no DATE: ISO text
}
#: Pinot's types that have an ``_ARRAY`` type
_ARRAYABLE = frozenset(
    ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "BOOLEAN", "TIMESTAMP", "STRING", "BYTES")
)


def pinot_type(spark: str) -> str:
    """Pinot's column data type of a Spark type (``DataType.simpleString()``): a decimal is
    BIG_DECIMAL, an array of a scalar ``<T>_ARRAY``, a map MAP, a struct (or any other
    nesting) JSON; char/varchar, dates, intervals and anything else STRING."""
    s = spark.strip().lower()
    if s in _SPARK_TYPES:
        return _SPARK_TYPES[s]
    if s.startswith("decimal"):
        return "BIG_DECIMAL"
    if s.startswith("array<") and s.endswith(">"):
        inner = pinot_type(s[6:-1])
        return f"{inner}_ARRAY" if inner in _ARRAYABLE else "JSON"
    if s.startswith("map<"):
        return "MAP"
    if s.startswith("struct<"):
        return "JSON"
    return "STRING"


def inferred_type(values: Iterable[Any]) -> str:
    """Pinot's type of a column whose Spark type was not given (a query answered without
    Spark), from its first non-null value."""
    for v in values:
        if v is None:
            continue
        if isinstance(v, list):
            inner = inferred_type(v)
            return f"{inner}_ARRAY" if inner in _ARRAYABLE else "JSON"
        return _value_type(v)
    return "STRING"


def _value_type(v: Any) -> str:
    for kind, name in (
        (bool, "BOOLEAN"),
        (int, "LONG"),
        (float, "DOUBLE"),
        (decimal.Decimal, "BIG_DECIMAL"),
        (dt.datetime, "TIMESTAMP"),
        ((bytes, bytearray), "BYTES"),
        (dict, "MAP"),
        (tuple, "JSON"),
    ):
        if isinstance(v, kind):
            return name
    return "STRING"


def cell(value: Any, kind: str) -> Any:
    """``value`` as Pinot's broker writes a value of Pinot type ``kind`` in JSON."""
    if value is None:
        return None
    if kind.endswith("_ARRAY"):
        return [cell(v, kind[: -len("_ARRAY")]) for v in value]
    if kind == "TIMESTAMP" and isinstance(value, dt.datetime):
        return java_timestamp(value)
    if kind in ("INT", "LONG") and not isinstance(value, bool):
        return int(value)
    if kind in ("FLOAT", "DOUBLE"):
        return _number(float(value))
    if kind == "BOOLEAN":
        return bool(value)
    if kind == "JSON":
        return json.dumps(_plain(value), separators=(",", ":"))
    if kind == "STRING" and isinstance(value, str):
        return value
    return _plain(value)


def java_timestamp(value: dt.datetime) -> str:
    """Java's ``java.sql.Timestamp.toString()`` of ``value`` (UTC): ``2024-01-02
    03:04:05.0``, ``…05.123``: the fraction without trailing zeros, at least one digit."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    fraction = f"{value.microsecond * 1000:09d}".rstrip("0") or "0"
    return f"{value:%Y-%m-%d %H:%M:%S}.{fraction}"


def _number(v: float) -> Any:
    """A float as Jackson writes it: non-finite ones as text."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _plain(value: Any) -> Any:
    """A value inside a JSON / MAP / STRING cell: times as ISO text (timestamps as Java
    shows them), decimals as plain text, bytes as hex, a struct as an object."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, dt.datetime):
        return java_timestamp(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if hasattr(value, "asDict"):  # a struct (a PySpark Row)
        return {str(k): _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


# -- the answer -------------------------------------------------------------------------
def _answer(
    *,
    table: dict[str, Any] | None,
    exceptions: list[dict[str, Any]],
    took_ms: float,
    servers: int,
    docs: int = 0,
    tables: list[str] | None = None,
    request_id: str | None = None,
    client_id: str | None = None,
    broker: str | None = None,
) -> dict[str, Any]:
    """A ``BrokerResponseNative``: its fields, names, types and order."""
    out: dict[str, Any] = {}
    if table is not None:
        out["resultTable"] = table
    out["numRowsResultSet"] = len(table["rows"]) if table is not None else 0
    out["partialResult"] = bool(exceptions)
    out["exceptions"] = exceptions
    for flag in (
        "numGroupsLimitReached",
        "numGroupsWarningLimitReached",
        "maxRowsInDistinctReached",
        "maxRowsWithoutChangeInDistinctReached",
        "maxExecutionTimeInDistinctReached",
    ):
        out[flag] = False
    out["timeUsedMs"] = round(took_ms)
    out["requestId"] = request_id
    out["clientRequestId"] = client_id
    out["brokerId"] = broker
    out["numDocsScanned"] = docs
    out["totalDocs"] = docs
    out["numEntriesScannedInFilter"] = 0
    out["numEntriesScannedPostFilter"] = 0
    out["numServersQueried"] = servers
    out["numServersResponded"] = servers
    for name in _ZEROS:
        out[name] = 0
    out["traceInfo"] = {}
    out["tablesQueried"] = tables or []
    for name in _MEMORY:
        out[name] = 0
    out["pools"] = []
    out["rlsFiltersApplied"] = False
    out["groupsTrimmed"] = False
    return out


_ZEROS = (
    *("numSegmentsQueried", "numSegmentsProcessed", "numSegmentsMatched"),
    *("numConsumingSegmentsQueried", "numConsumingSegmentsProcessed"),
    *("numConsumingSegmentsMatched", "minConsumingFreshnessTimeMs"),
    *("numSegmentsPrunedByBroker", "numSegmentsPrunedByServer", "numSegmentsPrunedInvalid"),
    *("numSegmentsPrunedByLimit", "numSegmentsPrunedByValue", "brokerReduceTimeMs"),
    *("offlineThreadCpuTimeNs", "realtimeThreadCpuTimeNs"),
    *("offlineSystemActivitiesCpuTimeNs", "realtimeSystemActivitiesCpuTimeNs"),
    *("offlineResponseSerializationCpuTimeNs", "realtimeResponseSerializationCpuTimeNs"),
    *("offlineTotalCpuTimeNs", "realtimeTotalCpuTimeNs"),
    *("explainPlanNumEmptyFilterSegments", "explainPlanNumMatchAllFilterSegments"),
)
_MEMORY = (
    *("offlineThreadMemAllocatedBytes", "realtimeThreadMemAllocatedBytes"),
    *("offlineResponseSerMemAllocatedBytes", "realtimeResponseSerMemAllocatedBytes"),
    *("offlineTotalMemAllocatedBytes", "realtimeTotalMemAllocatedBytes"),
)


def exception(code: int, message: str) -> dict[str, Any]:
    """One of Pinot's ``QueryProcessingException``: its code's name, then the message."""
    name = CODES.get(code, CODES[1000])[0]
    return {"errorCode": code, "message": f"{name}: {message}"}


def failure(status: int, message: str) -> dict[str, Any]:
    """The answer to a request refused before its query ran (HTTP ``status``): Pinot's
    shape, no server queried, so ``pinotdb`` reports ``message``."""
    code = _BY_STATUS.get(status, 1000)
    return _answer(table=None, exceptions=[exception(code, message)], took_ms=0, servers=0)


def code_of(e: SparkpipesError, *, running: bool) -> int:
    """Pinot's error code of a failed query (``running``: it failed amid its rows)."""
    if isinstance(e, (AccessDeniedError, NotAdmittedError)):
        return 180
    if isinstance(e, NotFoundError) or "TABLE_OR_VIEW_NOT_FOUND" in e.message:
        return 190
    if isinstance(e, ParseError):
        return 150
    if "UNRESOLVED_COLUMN" in e.message:
        return 710
    if isinstance(e, QueryError) and not running:
        return 700
    return 200


_COUNT_STAR = re.compile(r"count\s*\(\s*\*\s*\)", re.IGNORECASE)


def column_names(columns: list[str], sql: str) -> list[str]:
    """The result's column names as Pinot names them: Spark calls ``count(*)``
    ``count(1)``; Pinot, as it was written."""
    if not _COUNT_STAR.search(sql):
        return list(columns)
    return ["count(*)" if c == "count(1)" else c for c in columns]


def options(text: str | None) -> dict[str, str]:
    """Pinot's ``queryOptions`` text, ``key=value;key=value``, as a dict."""
    out = {}
    for part in (text or "").split(";"):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _shape(sql: str) -> tuple[bool, list[str]]:
    """Whether the last statement is a query without a LIMIT, and the tables it names (as
    far as sqlglot reads it; none when it cannot)."""
    try:
        trees = [t for t in sqlglot.parse(sql, read="spark") if t is not None]
    except Exception:
        return False, []
    if not trees or not isinstance(trees[-1], exp.Query):
        return False, []
    tree = trees[-1]
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    names = sorted({t.name for t in tree.find_all(exp.Table) if t.name not in ctes})
    return tree.args.get("limit") is None, names


def _docs(engine: Engine, tables: list[str]) -> int:
    """Rows of the warehouse tables among ``tables`` (their Delta logs say; 0 if not)."""
    known = set(engine.tables())
    total = 0
    for name in tables:
        if name in known:
            try:
                total += int(engine.table_status(name)["rows"] or 0)
            except Exception:
                log.debug("no row count for %s", name, exc_info=True)
    return total


def router(engine: Engine) -> APIRouter:
    """``POST /query/sql``: Pinot's broker query endpoint and answer."""
    r = APIRouter(responses={400: ERRORS[400], 401: ERRORS[401]})
    ids = itertools.count(1)

    @r.post("/query/sql")
    def pinot_query(request: Request, body: PinotQuery) -> JSONResponse:
        """A query as Pinot's broker runs it; its answer is a ``BrokerResponseNative``."""
        started = time.perf_counter()
        opts = options(body.queryOptions)
        multistage = opts.get("useMultistageEngine", "").lower() == "true"
        tables: list[str] = []
        common = {
            "request_id": str(next(ids)),
            "client_id": opts.get("clientQueryId"),
            "broker": f"Broker_{request.url.hostname}_{request.url.port}",
        }
        running = False
        try:
            results = SqlSession(engine, stream=True, user=user_of(request)).execute(body.sql)
            last = next((x for x in reversed(results) if x.has_rows), None)
            table = None
            if last is not None:
                running = True
                unlimited, tables = _shape(body.sql)  # SQL the statement parser took
                limit = DEFAULT_LIMIT if unlimited and not multistage else MAX_ROWS
                source = last.stream if last.stream is not None else iter(last.rows)
                rows = list(itertools.islice(source, limit))
                close = getattr(source, "close", None)
                if close is not None:
                    close()
                kinds = (
                    [pinot_type(t) for t in last.types]
                    if last.types
                    else [inferred_type(row[i] for row in rows) for i in range(len(last.columns))]
                )
                table = {
                    "dataSchema": {
                        "columnNames": column_names(last.columns, body.sql),
                        "columnDataTypes": kinds,
                    },
                    "rows": [[cell(v, k) for v, k in zip(row, kinds)] for row in rows],
                }
        except Exception as e:  # answered as Pinot's broker does: in its exceptions list
            error = unexpected(e)
            # an error no statement should raise (logged, its details kept back) is Pinot's
            # InternalError; over-deep input is the user's, like any other QueryError
            known = error is e or isinstance(error, QueryError)
            code = code_of(error, running=running) if known else 450
            took = (time.perf_counter() - started) * 1000
            found = exception(code, str(error))
            out = _answer(table=None, exceptions=[found], took_ms=took, servers=0, **common)
            header = request.headers.get(STATUS_HEADER, "").lower() == "true"
            status = CODES.get(code, CODES[1000])[1] if header else 200
            return JSONResponse(out, status_code=status, headers={CODE_HEADER: str(code)})
        took = (time.perf_counter() - started) * 1000
        docs = _docs(engine, tables) if table is not None else 0
        out = _answer(
            table=table, exceptions=[], took_ms=took, servers=1, docs=docs, tables=tables, **common
        )
        return JSONResponse(out, headers={CODE_HEADER: "-1"})

    return r

"""The HTTP API of ``sparkpipes serve`` (``/api/…``; Pinot's ``POST /query/sql`` is
``server.pinot_query``): pipelines (list, detail, create from SQL, start, stop, offsets),
batches, errors, files, tables with their schema and row counts, variables, and SQL.

Reads come from the catalog and the tables' snapshots and never wait for a running batch.
A query answers at most ``max_rows`` rows (``truncated`` says when there were more, and
Spark computes no more than that); ``/api/query/stream`` streams every row of a query of
any size as NDJSON, a Spark partition at a time, never holding the result in memory; a
statement that fails answers 400 with the sparkpipes message, and for SQL the line and
column, never a stack trace. Credentials are redacted in everything this API returns.
The OpenAPI document at ``/openapi.json`` is the contract (the tests run schemathesis
against it).
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import logging
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from sparkpipes.engine.status import pipeline_status
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.frontends.singlestore.parser import locate
from sparkpipes.frontends.singlestore.privileges import sees_pipeline, sees_table
from sparkpipes.frontends.singlestore.script import mask_credentials, split
from sparkpipes.server.access import access_of, user_of
from sparkpipes.server.errors import ERRORS, error_body, unexpected
from sparkpipes.util.display import cell

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

MAX_ROWS = 100_000
log = logging.getLogger("sparkpipes.server")


class Sql(BaseModel):
    sql: str = Field(min_length=1, description="statements in the SingleStore dialect")
    max_rows: int = Field(1000, ge=1, le=MAX_ROWS, description="rows answered at most")


class Script(BaseModel):
    sql: str = Field(min_length=1, description="statements in the SingleStore dialect")


class Offsets(BaseModel):
    offsets: str | dict[str, Any] = Field(description="'earliest', 'latest' or {partition: offset}")


def _json(value: Any) -> Any:
    """A cell as JSON: times as ISO text, decimals as text, bytes as hex; any other value
    JSON cannot hold (a VARIANT, an interval) as its text."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


_PINOT_TYPES = ((bool, "BOOLEAN"), (int, "LONG"), (float, "DOUBLE"), (dt.datetime, "TIMESTAMP"))


def _type_of(values: list[Any]) -> str:
    for v in values:
        if v is None:
            continue
        for kind, name in _PINOT_TYPES:
            if isinstance(v, kind):
                return name
        return "STRING"
    return "STRING"


def run_sql(engine: Engine, sql: str, max_rows: int, user: str | None = None) -> dict[str, Any]:
    """Run ``sql`` (a script) as ``user`` (None: the owner); the last statement's rows (at
    most ``max_rows``), every statement's message, and the time taken."""
    started = time.perf_counter()
    results = SqlSession(engine, max_rows=max_rows, user=user).execute(sql)
    last = next((r for r in reversed(results) if r.has_rows), None)
    rows = list(last.rows) if last else []
    return {
        "columns": list(last.columns) if last else [],
        "types": [_type_of([r[i] for r in rows[:100]]) for i in range(len(last.columns))]
        if last
        else [],
        "rows": [[_json(v) for v in r] for r in rows[:max_rows]],
        "truncated": len(rows) > max_rows,
        "messages": [r.message for r in results if r.message],
        "time_ms": round((time.perf_counter() - started) * 1000, 1),
    }


NDJSON = "application/x-ndjson"
STREAM_DOC = (
    'One JSON value per line: {"columns": [...]}, then each row as an array, then '
    '{"rows": n, "time_ms": t}, or {"error": {...}} if the query fails midway.'
)


def stream_sql(engine: Engine, sql: str, user: str | None = None) -> Iterator[bytes]:
    """Run ``sql`` now as ``user`` (an error before the first row raises, for a 400) and
    stream the rows of its last query as NDJSON, a Spark partition at a time."""
    import json

    started = time.perf_counter()
    results = SqlSession(engine, stream=True, user=user).execute(sql)
    last = next((r for r in reversed(results) if r.has_rows), None)

    def lines() -> Iterator[bytes]:
        yield json.dumps({"columns": last.columns if last else []}).encode() + b"\n"
        n = 0
        try:
            for row in (last.stream or iter(last.rows)) if last else ():
                yield json.dumps([_json(v) for v in row]).encode() + b"\n"
                n += 1
        except SparkpipesError as e:
            yield json.dumps({"error": error_body(e)}).encode() + b"\n"
            return
        except Exception as e:  # the headers (200) are sent: the error goes in the stream
            yield json.dumps({"error": error_body(unexpected(e))}).encode() + b"\n"
            return
        took = round((time.perf_counter() - started) * 1000, 1)
        yield json.dumps({"rows": n, "time_ms": took}).encode() + b"\n"

    return lines()


SCRIPT_DOC = (
    "One JSON object per line, per statement as it completes: its masked text "
    "(`statement`), `columns` and `rows` as `sparkpipes sql` shows the cells (text; null "
    "is NULL), `message`, `affected` rows. A query's rows may follow in chunks as Spark "
    'gives them: its line then says `"more": true`, `{"rows": [...]}` lines follow and '
    '`{"end": {"rows": n}}` ends them. The first error, even midway through rows, ends the '
    'stream as {"error": {..., "text": the CLI\'s one-line message with line and column}}.'
)
_AFFECTED = re.compile(r"Query OK, (\d+) rows? affected")
#: rows per line of a streamed result of ``POST /api/sql``
CHUNK_ROWS = 1000


def script_lines(
    engine: Engine,
    text: str,
    *,
    background: bool,
    served: dict[str, int],
    user: str | None = None,
) -> Iterator[bytes]:
    """``sparkpipes sql`` run here: the statements of ``text`` in order, each result as
    NDJSON as soon as it is done, cells as the CLI displays them; a query's rows stream in
    chunks of :data:`CHUNK_ROWS` as Spark gives them (never the whole result here); the
    first error, before or amid a result's rows, ends it, pointed at its line and column as
    a local run points it. Nothing runs before the first line is asked for, so a client
    that got no answer knows that nothing ran."""
    import json

    def line(value: dict[str, Any]) -> bytes:
        return json.dumps(value).encode() + b"\n"

    def failed(e: SparkpipesError) -> bytes:
        return line({"error": {**error_body(e), "text": str(e)}})

    results = SqlSession(engine, background=background, user=user, stream=True).each(text)
    for index in itertools.count():
        try:
            item = next(results, None)
        except SparkpipesError as e:
            yield failed(e)
            return
        except Exception as e:  # the answer (200) has begun: the error goes in the stream
            yield failed(unexpected(e))
            return
        if item is None:
            return
        stmt, res = item
        served["statements"] += 1
        m = _AFFECTED.match(res.message or "")
        head = {
            "statement": mask_credentials(stmt.to_sql()),
            "columns": list(res.columns),
            "rows": [[None if v is None else cell(v) for v in r] for r in res.rows],
            "message": res.message,
            "affected": int(m.group(1)) if m else None,
        }
        if res.stream is None:
            yield line(head)
            continue
        yield line({**head, "more": True})
        n = 0
        try:
            while chunk := list(itertools.islice(res.stream, CHUNK_ROWS)):
                n += len(chunk)
                yield line({"rows": [[None if v is None else cell(v) for v in r] for r in chunk]})
        except SparkpipesError as e:
            yield failed(locate(e, text, split(text)[index]))
            return
        except Exception as e:
            yield failed(locate(unexpected(e), text, split(text)[index]))
            return
        yield line({"end": {"rows": n}})


def router(engine: Engine, *, run: bool) -> APIRouter:
    r = APIRouter(prefix="/api", responses=ERRORS)
    served = {"statements": 0}

    @r.get("/status")
    def status() -> dict[str, Any]:
        """The server is up: pipelines by state; statements run for ``POST /api/sql``."""
        states: dict[str, int] = {}
        for p in engine.pipelines():
            states[p.state] = states.get(p.state, 0) + 1
        return {"status": "ok", "pipelines": states, "sql_statements": served["statements"]}

    @r.get("/pipelines")
    def pipelines(request: Request, lag: bool = True) -> list[dict[str, Any]]:
        """Every pipeline the user may see: state, rows loaded, rows/s, lag, last error,
        last batch."""
        access = access_of(engine, request)
        return [p for p in pipeline_status(engine, lag=lag) if sees_pipeline(access, p["name"])]

    @r.post("/pipelines", status_code=201)
    def create_pipeline(request: Request, body: Sql) -> dict[str, Any]:
        """``CREATE PIPELINE …`` (any statements; the pipelines they create are listed)."""
        before = {p.name for p in engine.pipelines()}
        out = run_sql(engine, body.sql, body.max_rows, user_of(request))
        made = sorted({p.name for p in engine.pipelines()} - before)
        return {"created": made, "messages": out["messages"]}

    @r.get("/pipelines/{name}")
    def pipeline(name: str) -> dict[str, Any]:
        """One pipeline: its status, definition (credentials redacted) and offsets."""
        (summary,) = pipeline_status(engine, name)
        spec = engine.spec(name)
        rec = engine.pipeline(name)
        try:
            snap = engine.offset_snapshot(rec)
        except SparkpipesError:
            snap = []
        offsets = [
            {
                "partition": o.partition,
                "committed": _json(o.committed),
                "earliest": _json(o.earliest),
                "latest": _json(o.latest),
                "lag": o.lag,
            }
            for o in snap
        ]
        return {**summary, "definition": spec.to_json(), "offsets": offsets}

    @r.post("/pipelines/{name}/start")
    def start(name: str) -> dict[str, Any]:
        engine.start(name, run=run)
        return {"name": name, "state": engine.pipeline(name).state}

    @r.post("/pipelines/{name}/stop")
    def stop(name: str) -> dict[str, Any]:
        engine.stop(name)
        return {"name": name, "state": engine.pipeline(name).state}

    @r.put("/pipelines/{name}/offsets")
    def set_offsets(name: str, body: Offsets) -> dict[str, Any]:
        return {"name": name, "offsets": _json(engine.set_offsets(name, body.offsets))}

    @r.get("/pipelines/{name}/batches")
    def batches(name: str, limit: int = Query(100, ge=1, le=10_000)) -> list[dict[str, Any]]:
        engine.pipeline(name)
        return [_json(b) for b in engine.batches(name, last=limit)]

    @r.get("/pipelines/{name}/errors")
    def errors(name: str, limit: int = Query(100, ge=1, le=10_000)) -> list[dict[str, Any]]:
        engine.pipeline(name)
        return [_json(e) for e in engine.errors(name, last=limit)]

    @r.get("/pipelines/{name}/files")
    def files(name: str) -> list[dict[str, Any]]:
        engine.pipeline(name)
        table = engine.information_schema("PIPELINES_FILES").to_pylist()
        return [_json(f) for f in table if f.get("PIPELINE_NAME") == name]

    @r.get("/tables")
    def tables(request: Request) -> list[dict[str, Any]]:
        """Every table the user may see: columns and row count (from the table's log)."""
        access = access_of(engine, request)
        return [table_detail(engine, t) for t in engine.tables() if sees_table(access, t)]

    @r.get("/tables/{name}")
    def table(name: str) -> dict[str, Any]:
        return table_detail(engine, name)

    @r.get("/variables")
    def variables() -> dict[str, Any]:
        return {k: _json(v) for k, v in engine.variables().items()}

    @r.post("/query")
    def query(request: Request, body: Sql) -> dict[str, Any]:
        """Statements; the rows of the last one that answers rows (at most ``max_rows``:
        Spark computes no more; ``truncated`` says there were more)."""
        return run_sql(engine, body.sql, body.max_rows, user_of(request))

    @r.post(
        "/query/stream",
        response_class=StreamingResponse,
        responses={200: {"content": {NDJSON: {}}, "description": STREAM_DOC}},
    )
    def query_stream(request: Request, body: Script) -> StreamingResponse:
        """Statements; every row of the last query, streamed as it comes from Spark."""
        lines = stream_sql(engine, body.sql, user_of(request))
        return StreamingResponse(lines, media_type=NDJSON)

    @r.post(
        "/sql",
        response_class=StreamingResponse,
        responses={200: {"content": {NDJSON: {}}, "description": SCRIPT_DOC}},
    )
    def sql(request: Request, body: Script) -> StreamingResponse:
        """Statements as ``sparkpipes sql`` runs them (it sends them here when this server
        serves its warehouse): every statement's result, shown as the CLI shows it."""
        user = user_of(request)
        lines = script_lines(engine, body.sql, background=run, served=served, user=user)
        return StreamingResponse(lines, media_type=NDJSON)

    return r


def table_detail(engine: Engine, name: str) -> dict[str, Any]:
    """A table's columns, rows and upkeep (``SHOW TABLE STATUS``'s figures)."""
    rec = engine.catalog.tables.get(name)
    out: dict[str, Any] = {
        "name": name,
        "columns": [{"name": f.name, "type": str(f.type)} for f in rec.schema],
        "rows": None,  # stays unknown when the table's log cannot be read
    }
    try:
        status = engine.table_status(name)
    except Exception:
        return out
    for key in ("rows", "bytes", "files", "small_files", "version", "checkpoint"):
        out[key] = status[key]
    for key in ("last_compaction", "last_vacuum"):
        out[key] = _json(status[key])
    return out

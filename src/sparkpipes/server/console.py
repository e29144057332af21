"""The web console of ``sparkpipes serve``, under ``/console``: pipelines at a glance, a
pipeline's detail (throughput and lag over time, recent batches and errors, its definition),
tables, and a query console over the JSON API.

Pages are rendered on the server (Jinja2, autoescaped) and kept live by htmx polling
fragments under ``/console/fragments/…``, so the console needs no build step and no
Node.js; its browser libraries (htmx, uPlot, CodeMirror 5) are vendored by
``scripts/vendor_console.sh`` and served, like its own CSS and JS, by this router under
``/console/static/…`` (no StaticFiles mount: including the router is all an app does).
Each page, fragment and action is a method of :class:`Console` (which holds the engine, the
templates, the assets and the lag history); :func:`router` only wires routes to them.

Promises:

- Credentials never reach the browser: definitions are shown as ``PipelineSpec.to_json()``
  redacts them, and nothing else rendered here comes from them.
- A ``SparkpipesError`` is shown as its message, never a stack trace: a page answers with
  an error page (404 naming a missing pipeline), a fragment with an inline message (so
  polling keeps the page in place and htmx swaps it).
- Lag over time is sampled by one light thread (``console_lag``: every ``WATCHED_EVERY_S``
  while the console is watched, ``IDLE_EVERY_S`` otherwise; started by the router's
  lifespan or the first console request) into a bounded in-memory ring per pipeline
  covering the last ``WINDOW_S``: the catalog keeps no lag history, so it starts empty
  with the server.
  Fragments show the latest sample rather than asking the sources, so pages stay fast
  however many are open, and a slow broker delays only the sampler.
- Only the last ``BATCH_POINTS`` batches feed the throughput chart.
- ``POST`` start/stop requires htmx's ``HX-Request`` header and the page's CSRF token
  (``security.console_action``), which a cross-site form cannot send; the JSON API is the
  place for scripts.
- Console routes are not in the OpenAPI document (``/api`` is the contract).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response

from sparkpipes.catalog.states import BatchState
from sparkpipes.engine import Engine
from sparkpipes.engine.status import pipeline_status
from sparkpipes.errors import NotFoundError, SparkpipesError
from sparkpipes.frontends.singlestore.privileges import sees_pipeline, sees_table
from sparkpipes.server.access import access_of
from sparkpipes.server.api import table_detail
from sparkpipes.server.console_lag import LagHistory, LagSampler
from sparkpipes.server.errors import status_of
from sparkpipes.server.security import console_action

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

#: batches read for the throughput chart, shown in the batch list, errors shown
BATCH_POINTS = 300
BATCH_ROWS = 50
ERROR_ROWS = 20
#: at most this many points on the throughput chart
BUCKETS = 120
_NICE_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)

HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class _Asset:
    def __init__(self, path: Path) -> None:
        self.body = path.read_bytes()
        self.etag = hashlib.sha256(self.body).hexdigest()[:16]
        self.media_type = _MEDIA.get(path.suffix, "text/plain; charset=utf-8")


_MEDIA = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


def _assets() -> dict[str, _Asset]:
    """Every file under static/ (flat) and static/vendor/, by its path below static/."""
    found = {}
    for folder, prefix in ((STATIC, ""), (STATIC / "vendor", "vendor/")):
        if folder.is_dir():
            for p in sorted(folder.iterdir()):
                if p.is_file() and not p.name.startswith("."):
                    found[prefix + p.name] = _Asset(p)
    return found


# -- formatting ----------------------------------------------------------------------------


def _utc(value: Any) -> dt.datetime | None:
    """A catalog time (naive UTC datetime, or its ISO text) as an aware datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, dt.datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _epoch(value: Any) -> float | None:
    t = _utc(value)
    return t.timestamp() if t else None


def fmt_num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def fmt_rate(value: Any) -> str:
    if not value:
        return "0"
    return f"{value:,.1f}" if value < 100 else f"{round(value):,}"


def fmt_ms(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value} ms" if value < 1000 else f"{value / 1000:,.1f} s"


def fmt_bytes(value: Any) -> str:
    if value is None:
        return "—"
    size = float(value)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def fmt_time(value: Any) -> str:
    t = _utc(value)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t else "—"


def fmt_ago(value: Any, now: float | None = None) -> str:
    at = value if isinstance(value, (int, float)) else _epoch(value)
    if at is None:
        return "—"
    secs = max(0, int((time.time() if now is None else now) - at))
    if secs < 60:
        return f"{secs} s ago"
    if secs < 3600:
        return f"{secs // 60} min ago"
    if secs < 86400:
        return f"{secs // 3600} h {secs % 3600 // 60} min ago"
    return f"{secs // 86400} d ago"


def ident(name: str) -> str:
    """A table or column name as SQL text (backquoted unless a plain identifier)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _environment(assets: dict[str, _Asset]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )

    def static(path: str) -> str:
        asset = assets.get(path)
        return f"/console/static/{path}" + (f"?v={asset.etag}" if asset else "")

    env.globals.update(static=static)
    env.filters.update(
        num=fmt_num,
        rate=fmt_rate,
        ms=fmt_ms,
        size=fmt_bytes,
        time=fmt_time,
        ago=fmt_ago,
        path=lambda name: quote(str(name), safe=""),
        ident=ident,
    )
    return env


# -- data ----------------------------------------------------------------------------------


def throughput(batches: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """Rows per second over time from batch history: each succeeded batch's rows spread
    over its run time, summed into at most ``BUCKETS`` equal buckets ending now (idle time
    shows as 0)."""
    spans = []
    for b in batches:
        if b.get("state") != BatchState.SUCCEEDED or not b.get("rows"):
            continue
        end = _epoch(b.get("finished_at")) or _epoch(b.get("started_at"))
        start = _epoch(b.get("started_at")) or end
        if end is not None and start is not None:
            spans.append((min(start, end), end, b["rows"]))
    if not spans:
        return {"x": [], "y": [], "bucket_s": 0}
    first = min(s for s, _, _ in spans)
    span = max(now - first, 1.0)
    width = next((w for w in _NICE_S if span / w <= BUCKETS), _NICE_S[-1])
    latest = math.floor(now / width) * width
    origin = max(math.floor(first / width) * width, latest - width * (BUCKETS - 1))
    n = int((now - origin) // width) + 1
    rows = [0.0] * n
    for start, end, count in spans:
        if end < origin:
            continue
        if end <= start:
            i = int((end - origin) // width)
            if i < n:
                rows[i] += count
            continue
        i = max(int((start - origin) // width), 0)
        while i < n and origin + i * width < end:
            lo = origin + i * width
            overlap = min(lo + width, end) - max(lo, start)
            rows[i] += count * max(overlap, 0.0) / (end - start)
            i += 1
    return {
        "x": [origin + i * width for i in range(n)],
        "y": [round(r / width, 2) for r in rows],
        "bucket_s": width,
    }


def _batch_rows(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "batch_id": b.get("batch_id"),
            "attempt": b.get("attempt"),
            "state": b.get("state"),
            "rows": b.get("rows"),
            "bytes": b.get("bytes"),
            "errors": b.get("errors"),
            "started_at": b.get("started_at"),
            "duration_ms": b.get("duration_ms"),
            "partitions": len(b.get("partitions") or ()),
            "error": b.get("error"),
        }
        for b in reversed(batches[-BATCH_ROWS:])
    ]


class Console:
    """The console's pages, fragments, actions and static files, one method each, which
    :func:`router` wires to its routes. What they ask of ``engine``: ``pipelines()``,
    ``pipeline(name)``, ``spec(name)``, ``batches(name, last=)``, ``errors(name, last=)``,
    ``tables()``, ``start(name, run=)``, ``stop(name)``, and what
    ``engine.status.pipeline_status``, ``server.api.table_detail`` and
    ``server.access.access_of`` read. ``run`` as for the API: a pipeline started here is run
    by this engine's scheduler. Every page or fragment rendered tells ``sampler`` the
    console is being watched."""

    def __init__(
        self,
        engine: Engine,
        *,
        run: bool,
        history: LagHistory | None = None,
        sampler: LagSampler | None = None,
    ) -> None:
        self.engine, self.run = engine, run
        self.assets = _assets()
        self.env = _environment(self.assets)
        self.history = LagHistory() if history is None else history
        self.sampler = LagSampler(engine, self.history) if sampler is None else sampler

    # -- rendering ----------------------------------------------------------------------

    def html(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        self.sampler.touch()
        context.setdefault("user", getattr(request.state, "user", None))
        context.setdefault("nav", "")
        context.setdefault("error", None)
        context.setdefault("csrf", getattr(request.state, "csrf", None) or "")
        body = self.env.get_template(template).render(**context)
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    def error_page(self, request: Request, e: SparkpipesError, title: str) -> HTMLResponse:
        return self.html(request, "error.html", status_of(e), title=title, message=e.message)

    def fragment(self, request: Request, template: str, load: Any, **context: Any) -> HTMLResponse:
        """``template`` with what ``load()`` gives; its error as an inline message."""
        try:
            context.update(load())
        except SparkpipesError as e:
            return self.html(request, "_message.html", message=e.message)
        return self.html(request, template, **context)

    # -- data ---------------------------------------------------------------------------

    def overview(self, request: Request) -> list[dict[str, Any]]:
        """The pipelines the request's user sees (any privilege on them), each with its
        latest lag sample."""
        access = access_of(self.engine, request)
        rows = [
            p for p in pipeline_status(self.engine, lag=False) if sees_pipeline(access, p["name"])
        ]
        for p in rows:
            p["lag"], p["lag_at"] = self.lag(p["name"])
        return rows

    def lag(self, name: str) -> tuple[int | None, float | None]:
        """The latest lag sample of pipeline ``name`` and when it was taken."""
        last = self.history.latest(name)
        return (last[1], last[0]) if last else (None, None)

    def detail(self, name: str) -> dict[str, Any]:
        """A pipeline's status (``p``) and its charts' series (throughput from its last
        ``BATCH_POINTS`` batches, lag from the samples)."""
        (status,) = pipeline_status(self.engine, name, lag=False)
        status["lag"], status["lag_at"] = self.lag(name)
        now = time.time()
        batches = self.engine.batches(name, last=BATCH_POINTS)
        series = {
            "throughput": throughput(batches, now),
            "lag": self.history.series(name),
            "now": now,
        }
        return {"p": status, "series": series}

    def recent(self, name: str) -> dict[str, Any]:
        """A pipeline's last ``BATCH_ROWS`` batches and ``ERROR_ROWS`` errors, newest
        first, and how many batches it has run."""
        batches = self.engine.batches(name, last=BATCH_ROWS)
        errors = list(reversed(self.engine.errors(name, last=ERROR_ROWS)))
        total = batches[-1]["batch_id"] if batches else 0  # batch ids count from 1
        return {"batches": _batch_rows(batches), "errors": errors, "total": total}

    def tables(self, request: Request) -> list[dict[str, Any]]:
        """The tables the request's user sees, each with the pipelines loading it that
        the user sees; a table dropped meanwhile with its error."""
        access = access_of(self.engine, request)
        loaders: dict[str, list[str]] = {}
        for p in self.engine.pipelines():
            if sees_pipeline(access, p.name):
                loaders.setdefault(p.table, []).append(p.name)
        out = []
        for name in (t for t in self.engine.tables() if sees_table(access, t)):
            try:
                t = table_detail(self.engine, name)
            except SparkpipesError as e:  # dropped between the listing and now
                t = {"name": name, "columns": [], "rows": None, "error": e.message}
            out.append({**t, "pipelines": loaders.get(name, [])})
        return out

    # -- pages --------------------------------------------------------------------------

    def pipelines_page(self, request: Request) -> HTMLResponse:
        try:
            rows = self.overview(request)
        except SparkpipesError as e:
            return self.error_page(request, e, "Pipelines")
        return self.html(request, "pipelines.html", nav="pipelines", pipelines=rows)

    def pipeline_page(self, request: Request, name: str) -> HTMLResponse:
        try:
            self.engine.pipeline(name)
        except NotFoundError as e:
            return self.html(
                request, "error.html", 404, title=f"No pipeline '{name}'", message=e.message
            )
        except SparkpipesError as e:
            return self.error_page(request, e, f"Pipeline '{name}'")
        try:
            definition = json.dumps(self.engine.spec(name).to_json(), indent=2, default=str)
            definition_error = None
        except SparkpipesError as e:
            definition, definition_error = None, e.message
        try:
            context = {**self.detail(name), **self.recent(name)}
        except SparkpipesError as e:
            return self.error_page(request, e, f"Pipeline '{name}'")
        return self.html(
            request,
            "pipeline.html",
            nav="pipelines",
            name=name,
            definition=definition,
            definition_error=definition_error,
            **context,
        )

    def tables_page(self, request: Request) -> HTMLResponse:
        try:
            found = self.tables(request)
        except SparkpipesError as e:
            return self.error_page(request, e, "Tables")
        return self.html(request, "tables.html", nav="tables", tables=found)

    def query_page(self, request: Request) -> HTMLResponse:
        return self.html(request, "query.html", nav="query")

    # -- fragments ----------------------------------------------------------------------

    def pipelines_fragment(self, request: Request) -> HTMLResponse:
        return self.fragment(
            request, "_pipelines.html", lambda: {"pipelines": self.overview(request)}
        )

    def status_fragment(self, request: Request, name: str) -> HTMLResponse:
        return self.fragment(request, "_pipeline_status.html", lambda: self.detail(name), name=name)

    def batches_fragment(self, request: Request, name: str) -> HTMLResponse:
        return self.fragment(
            request, "_pipeline_batches.html", lambda: self.recent(name), name=name
        )

    def tables_fragment(self, request: Request) -> HTMLResponse:
        return self.fragment(request, "_tables.html", lambda: {"tables": self.tables(request)})

    # -- actions ------------------------------------------------------------------------

    def act(self, request: Request, name: str, action: str, view: str) -> HTMLResponse:
        """Start or stop pipeline ``name`` if the request comes from a console page, then
        the fragment of the page it came from (``view``: ``detail`` or the list), with the
        refusal's message if any."""
        if not console_action(request):
            return HTMLResponse("console actions are sent by its pages", 403, headers=HEADERS)
        error = None
        try:
            if action == "start":
                self.engine.start(name, run=self.run)
            else:
                self.engine.stop(name)
        except SparkpipesError as e:
            error = e.message
        if view == "detail":
            return self.fragment(
                request, "_pipeline_status.html", lambda: self.detail(name), name=name, error=error
            )
        return self.fragment(
            request, "_pipelines.html", lambda: {"pipelines": self.overview(request)}, error=error
        )

    def start(self, request: Request, name: str, view: str = "list") -> HTMLResponse:
        return self.act(request, name, "start", view)

    def stop(self, request: Request, name: str, view: str = "list") -> HTMLResponse:
        return self.act(request, name, "stop", view)

    # -- static files -------------------------------------------------------------------

    def static(self, request: Request, path: str, v: str | None = None) -> Response:
        asset = self.assets.get(path)
        if asset is None:
            return Response("not found", 404, media_type="text/plain")
        etag = f'"{asset.etag}"'
        cache = "public, max-age=31536000, immutable" if v == asset.etag else "no-cache"
        headers = {"ETag": etag, "Cache-Control": cache, "X-Content-Type-Options": "nosniff"}
        if request.headers.get("If-None-Match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(asset.body, media_type=asset.media_type, headers=headers)


def router(engine: Engine, *, run: bool) -> APIRouter:
    """The console's routes (none in the OpenAPI document); ``run`` as for the API: a
    pipeline started here is run by this engine's scheduler."""
    return routes(Console(engine, run=run))


def routes(console: Console) -> APIRouter:
    """``console``'s pages, fragments, actions and static files at their paths; its lag
    sampler runs with the app (and is started by the first page otherwise)."""
    sampler = console.sampler

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        sampler.start()
        try:
            yield
        finally:
            await run_in_threadpool(sampler.stop)

    r = APIRouter(include_in_schema=False, lifespan=lifespan)
    r.get("/console")(console.pipelines_page)
    r.get("/console/pipelines/{name}")(console.pipeline_page)
    r.get("/console/tables")(console.tables_page)
    r.get("/console/query")(console.query_page)
    r.get("/console/fragments/pipelines")(console.pipelines_fragment)
    r.get("/console/fragments/pipelines/{name}/status")(console.status_fragment)
    r.get("/console/fragments/pipelines/{name}/batches")(console.batches_fragment)
    r.get("/console/fragments/tables")(console.tables_fragment)
    r.post("/console/pipelines/{name}/start")(console.start)
    r.post("/console/pipelines/{name}/stop")(console.stop)
    r.get("/console/static/{path:path}")(console.static)
    return r

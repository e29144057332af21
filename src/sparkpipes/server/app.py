"""The FastAPI app of ``sparkpipes serve``; :func:`create_app` mounts every part on one
engine. Errors are JSON with the sparkpipes message and never a stack trace, shaped as
each API's own clients expect: Kafka Connect's ``{"error_code", "message"}``, Pinot's
``{"code", "error"}`` under ``/schemas`` and ``/tables``, Pinot's broker answer (its
``exceptions``) under ``/query``. Over-deep input — a JSON body or
SQL nested deeper than Python or Spark's JVM can follow — is a 400 that says so."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from py4j.protocol import Py4JJavaError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from sparkpipes.errors import (
    SparkpipesError,
)
from sparkpipes.server import api, auth, connect, console, pinot, pinot_query
from sparkpipes.server.access import guard
from sparkpipes.server.errors import error_body, status_of, unexpected
from sparkpipes.server.pinot import PATHS
from sparkpipes.server.security import Guard, Hosts
from sparkpipes.server.throttle import Throttle

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

log = logging.getLogger("sparkpipes.server")


def create_app(
    engine: Engine,
    *,
    run: bool = True,
    loopback: bool = True,
    local_token: str | None = None,
    hosts: Hosts | None = None,
    throttle: Throttle | None = None,
) -> FastAPI:
    """The app over ``engine``; with ``run``, connectors it creates or resumes are run
    by this engine's scheduler (``sparkpipes serve``). ``loopback``: the server listens on
    loopback only. ``local_token``: the owner's Bearer credential (``cli.remote``; without
    one and without users, nobody may sign in). ``hosts``: the names requests may give in
    ``Host`` (default: loopback's); ``throttle``: failed sign-ins, shared with the MySQL
    endpoint. Every request signs in (``server.auth``) after the browser checks
    (``server.security``), then needs its route's privileges (``server.access``); the
    sign-in state is ``app.state.signin``."""
    app = FastAPI(
        title="sparkpipes",
        description="Pipelines, tables and SQL (/api); sink connectors through Kafka "
        "Connect's REST API; Pinot schemas and realtime tables through Pinot's controller "
        "endpoints, and its query endpoint (/query/sql).",
        version="0.1.0",
        # the API viewers load their scripts from a CDN onto this origin: not served
        docs_url=None,
        redoc_url=None,
        # each route's privileges, after sign-in (``server.access``)
        dependencies=[Depends(guard(engine))],
    )

    @app.exception_handler(SparkpipesError)
    async def _sparkpipes_error(request: Request, e: SparkpipesError) -> JSONResponse:
        code = status_of(e)
        if code >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, e)
        return _error(request, code, e.message, e)

    @app.exception_handler(RecursionError)
    async def _too_deep(request: Request, e: RecursionError) -> JSONResponse:
        return _error(request, 400, _nested(e))

    @app.exception_handler(Py4JJavaError)
    async def _jvm_error(request: Request, e: Py4JJavaError) -> JSONResponse:
        error = unexpected(e)
        return _error(request, status_of(error), error.message, error)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, e: HTTPException) -> Response:
        if isinstance(e.__cause__, RecursionError):  # FastAPI's reading of a JSON body
            return _error(request, 400, _nested(e.__cause__))
        return await http_exception_handler(request, e)

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, e: ClientDisconnect) -> Response:
        return Response(status_code=400)  # nobody to tell (a timed-out or dropped body)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, e: RequestValidationError) -> JSONResponse:
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        text = first.get("msg", "invalid request")
        message = f"{text} ({where})" if where else text
        return _error(request, 400, message)

    signin = auth.Auth(
        engine.catalog.users, loopback=loopback, local_token=local_token, throttle=throttle
    )
    app.state.signin = signin
    auth.install(app, signin, _error)
    app.include_router(connect.router(engine, run=run))
    app.include_router(pinot.router(engine, run=run))
    app.include_router(api.router(engine, run=run))
    app.include_router(pinot_query.router(engine))
    app.include_router(console.router(engine, run=run))
    # added last, so it runs first: nothing else happens for a foreign Host or Origin
    app.add_middleware(Guard, hosts=hosts or Hosts.of("127.0.0.1"), error=_error)
    return app


def _nested(e: RecursionError) -> str:
    """What over-deep input is said to be (Python's own message names the JSON case)."""
    if "JSON" in str(e):
        return "the JSON body is nested too deeply"
    return "the request is nested too deeply to process"


def _error(
    request: Request, code: int, message: str, e: SparkpipesError | None = None
) -> JSONResponse:
    path = request.url.path
    if path.startswith("/api/"):
        body = error_body(e) if e is not None else {"code": "SP100", "message": message}
        return JSONResponse({"error": body}, status_code=code)
    if path.startswith(PATHS):
        return JSONResponse({"code": code, "error": message}, status_code=code)
    if path.startswith(pinot_query.PATHS):
        return JSONResponse(pinot_query.failure(code, message), status_code=code)
    return JSONResponse({"error_code": code, "message": message}, status_code=code)

"""The FastAPI app of ``sparkpipes serve``; :func:`create_app` mounts every part on one
engine. Errors are JSON with the sparkpipes message and never a stack trace, shaped as
each API's own clients expect: Kafka Connect's ``{"error_code", "message"}``, Pinot's
``{"code", "error"}`` under ``/schemas`` and ``/tables``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from sparkpipes.errors import AlreadyExistsError, ConfigError, NotFoundError, SparkpipesError

log = logging.getLogger("sparkpipes.server")


def status_of(e: SparkpipesError) -> int:
    if isinstance(e, NotFoundError):
        return 404
    if isinstance(e, AlreadyExistsError):
        return 409
    if isinstance(e, ConfigError):
        return 400
    return 400 if not e.transient else 500


def create_app(
    engine: Any, *, run: bool = True, loopback: bool = True, local_token: str | None = None
) -> FastAPI:
    """The app over ``engine``; with ``run``, connectors it creates or resumes are run
    by this engine's scheduler (``sparkpipes serve``). ``loopback``: the server listens on
    loopback only; otherwise every request must sign in (``server.auth``). ``local_token``:
    a Bearer credential for ``sparkpipes sql`` on this machine (``cli.remote``)."""
    from sparkpipes.server import api, auth, connect, console, pinot

    app = FastAPI(
        title="sparkpipes",
        description="Pipelines, tables and SQL (/api); sink connectors through Kafka "
        "Connect's REST API; Pinot schemas and realtime tables through Pinot's controller "
        "endpoints, and its query endpoint (/query/sql).",
        version="0.1.0",
    )

    @app.exception_handler(SparkpipesError)
    async def _sparkpipes_error(request: Request, e: SparkpipesError) -> JSONResponse:
        code = status_of(e)
        if code >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, e)
        return _error(request, code, e.message, e)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, e: RequestValidationError) -> JSONResponse:
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        text = first.get("msg", "invalid request")
        message = f"{text} ({where})" if where else text
        return _error(request, 400, message)

    signin = auth.Auth(engine.catalog.users, loopback=loopback, local_token=local_token)
    auth.install(app, signin, _error)
    app.include_router(connect.router(engine, run=run))
    app.include_router(pinot.router(engine, run=run))
    app.include_router(api.router(engine, run=run))
    app.include_router(api.pinot_router(engine))
    app.include_router(console.router(engine, run=run))
    return app


def _error(
    request: Request, code: int, message: str, e: SparkpipesError | None = None
) -> JSONResponse:
    from sparkpipes.server.api import error_body
    from sparkpipes.server.pinot import PATHS

    path = request.url.path
    if path.startswith("/api/"):
        body = error_body(e) if e is not None else {"code": "SP100", "message": message}
        return JSONResponse({"error": body}, status_code=code)
    if path.startswith(PATHS):
        return JSONResponse({"code": code, "error": message}, status_code=code)
    return JSONResponse({"error_code": code, "message": message}, status_code=code)

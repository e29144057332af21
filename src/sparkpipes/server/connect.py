"""Kafka Connect's REST API for sink connectors (and source connectors of the classes
``frontends.connect.sources`` names tables for), over :class:`sparkpipes.frontends.connect
.service.Connectors`: the paths, verbs, status codes and JSON of Kafka Connect (3.6: stop
and offsets of KIP-875, ``expand``, restart with tasks, one task's status and restart,
active topics, plugins and their keys), so its clients and habits work unchanged.

``GET /`` is Kafka Connect's version document for its clients (curl, kafka-connect-py);
a browser asking for HTML there is sent to the console at ``/console``."""

from __future__ import annotations

import base64
import json
import uuid
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from sparkpipes import __version__
from sparkpipes.errors import AccessDeniedError, ConfigError
from sparkpipes.frontends.connect import plugins as catalogue
from sparkpipes.frontends.connect import validate as validation
from sparkpipes.frontends.connect.model import SinkConnectorConfig, load
from sparkpipes.frontends.connect.shape import flat
from sparkpipes.frontends.connect.sources import is_source
from sparkpipes.server.access import access_of, require_file_read, require_file_write
from sparkpipes.server.auth import wants_html
from sparkpipes.sources.connect.source import KafkaConnectSource
from sparkpipes.util.localfiles import local_file_keys

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

#: the Kafka Connect release whose REST API this one answers as (clients decide by it
#: whether ``PUT …/stop`` and the offsets endpoints exist: 3.5 and 3.6)
CONNECT_VERSION = "3.6.0"


def json_body(raw: bytes) -> Any:
    """A request's JSON body; ConfigError (400) when it is not JSON."""
    try:
        return json.loads(raw or b"null")
    except ValueError as e:
        raise ConfigError(f"the request body is not valid JSON: {e}") from None


def _flat(body: dict[str, Any]) -> dict[str, Any]:
    """A request's connector options, as ``load()`` reads them: ``{"name", "config"}`` or
    flat."""
    inner = body.get("config")
    return inner if isinstance(inner, dict) else body


def require_delete_to_upsert(engine: Engine, request: Request, cfg: SinkConnectorConfig) -> None:
    """``singlestore.upsert``: a record replaces the stored row of its key, which is a
    DELETE as well as an INSERT (MySQL's REPLACE): it needs DELETE on the database too.
    Confluent's JDBC sink: ``delete.enabled`` deletes rows (DELETE), ``insert.mode``
    upsert or update changes stored rows (UPDATE). Decided on the config as loaded (any
    spelling of true, any shape of body)."""
    jdbc = cfg.jdbc
    if cfg.upsert or (jdbc is not None and jdbc.deletes):
        access_of(engine, request).require("DELETE")
    if jdbc is not None and jdbc.insert_mode != "insert":
        access_of(engine, request).require("UPDATE")


def cluster_id(engine: Engine) -> str:
    """A Kafka-style cluster id (22 characters of base64url) stable for a warehouse: a
    name for this deployment, as Kafka Connect names the Kafka cluster it runs on (its
    connectors here may each read a different one). Derived, never revealing the path."""
    digest = uuid.uuid5(uuid.NAMESPACE_URL, str(getattr(engine, "warehouse", ""))).bytes
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _flag(value: str) -> bool:
    """A boolean query parameter as Kafka Connect reads it: ``true`` in any case."""
    return value.strip().lower() == "true"


def router(engine: Engine, *, run: bool) -> APIRouter:
    """Kafka Connect's routes over ``engine.connectors``; with ``run``, connectors
    created, resumed or restarted are run by this engine's scheduler."""
    r = APIRouter()
    conns = engine.connectors

    @r.get("/", include_in_schema=False)
    def root(request: Request) -> Any:
        if wants_html(request.headers):
            return RedirectResponse("/console", status_code=302)
        return {
            "version": CONNECT_VERSION,
            "commit": f"sparkpipes-{__version__}",
            "kafka_cluster_id": cluster_id(engine),
        }

    @r.get("/health", include_in_schema=False)
    def health() -> Any:
        # Connect 3.9's readiness answer: this server answers once its engine is open
        return {
            "status": "healthy",
            "message": "Worker has completed startup and is ready to handle requests.",
        }

    @r.get("/connectors")
    def list_connectors(expand: list[str] = Query(default=[])) -> Any:  # noqa: B008
        names = conns.names()
        wanted = [e for e in ("status", "info") if e in expand]
        if not wanted:
            return names
        parts = {"status": conns.status, "info": conns.info}
        return {n: {e: parts[e](n) for e in wanted} for n in names}

    @r.post("/connectors", status_code=201)
    async def create(request: Request) -> Any:
        body = json_body(await request.body())
        if not isinstance(body, dict) or "config" not in body:
            raise ConfigError('POST /connectors takes {"name": …, "config": {…}}')

        def made() -> Any:  # talks to databases and brokers: not on the event loop
            require_file_read(engine, request, local_file_keys(_flat(body)))
            if is_source(_flat(body)):
                info = _source(flat(body), request, replace=False)
            else:
                cfg = load(body)  # checked as it will run: whatever the body's shape
                require_delete_to_upsert(engine, request, cfg)
                require_file_write(engine, request, _written_files(cfg))
                info = conns.create(cfg)
            _run(info["name"])
            return info

        return await run_in_threadpool(made)

    @r.get("/connectors/{name}")
    def info(name: str) -> Any:
        return conns.info(name)

    @r.get("/connectors/{name}/config")
    def config(name: str) -> Any:
        return conns.config(name)

    @r.put("/connectors/{name}/config")
    async def put_config(name: str, request: Request, response: Response) -> Any:
        body = json_body(await request.body())
        if not isinstance(body, dict):
            raise ConfigError("PUT /connectors/{name}/config takes the config as a JSON object")

        def made() -> Any:  # talks to databases and brokers: not on the event loop
            require_file_read(engine, request, local_file_keys(_flat(body)))
            exists = name in conns.names()
            if is_source(_flat(body)):
                info = _source(flat(body, name=name), request, replace=exists)
            else:
                cfg = load(body, name=name)
                require_delete_to_upsert(engine, request, cfg)
                require_file_write(engine, request, _written_files(cfg))
                info = conns.create(cfg, replace=exists)
            _run(name)
            response.status_code = 200 if exists else 201
            return info

        return await run_in_threadpool(made)

    @r.get("/connectors/{name}/status")
    def status(name: str) -> Any:
        return conns.status(name)

    @r.get("/connectors/{name}/tasks")
    def tasks(name: str) -> Any:
        cfg = conns.config(name)
        return [
            {"id": {"connector": name, "task": i}, "config": {**cfg, "pipeline": p}}
            for i, p in enumerate(conns.task_pipelines(name))
        ]

    @r.get("/connectors/{name}/tasks-config")
    def tasks_config(name: str) -> Any:
        # deprecated in Connect 3.x (gone in 4.0), still called by older tools
        return {f"{t['id']['connector']}-{t['id']['task']}": t["config"] for t in tasks(name)}

    @r.get("/connectors/{name}/tasks/{task}/status")
    def task_status(name: str, task: int) -> Any:
        return conns.task_status(name, task)

    @r.post("/connectors/{name}/tasks/{task}/restart", status_code=204)
    def restart_task(name: str, task: int) -> Response:
        conns.restart_task(name, task, run=run)
        return Response(status_code=204)

    @r.put("/connectors/{name}/pause", status_code=202)
    def pause(name: str) -> Response:
        conns.pause(name)
        return Response(status_code=202)

    @r.put("/connectors/{name}/resume", status_code=202)
    def resume(name: str) -> Response:
        conns.resume(name, run=run)
        return Response(status_code=202)

    @r.put("/connectors/{name}/stop", status_code=202)
    def stop(name: str) -> Response:
        conns.stop(name)
        return Response(status_code=202)

    @r.post("/connectors/{name}/restart", status_code=204)
    def restart(name: str, includeTasks: str = "false", onlyFailed: str = "false") -> Response:
        tasks, failed = _flag(includeTasks), _flag(onlyFailed)
        answer = conns.restart(name, include_tasks=tasks, only_failed=failed, run=run)
        if not tasks and not failed:
            return Response(status_code=204)
        return JSONResponse(answer, status_code=202)

    @r.get("/connectors/{name}/offsets")
    def offsets(name: str) -> Any:
        return conns.offsets(name)

    @r.patch("/connectors/{name}/offsets")
    async def alter_offsets(name: str, request: Request) -> Any:
        body = json_body(await request.body())
        return await run_in_threadpool(conns.alter_offsets, name, body)

    @r.delete("/connectors/{name}/offsets")
    def reset_offsets(name: str) -> Any:
        return conns.reset_offsets(name)

    @r.get("/connectors/{name}/topics")
    def topics(name: str) -> Any:
        return conns.topics(name)

    @r.put("/connectors/{name}/topics/reset")
    def reset_topics(name: str) -> Response:
        conns.reset_topics(name)
        return Response(status_code=200)

    @r.delete("/connectors/{name}", status_code=204)
    def delete(name: str) -> Response:
        conns.delete(name)
        return Response(status_code=204)

    @r.get("/connector-plugins")
    def plugins(connectorsOnly: str = "true") -> Any:
        return catalogue.listed(connectors_only=_flag(connectorsOnly))

    @r.get("/connector-plugins/{plugin}/config")
    def plugin_config(plugin: str) -> Any:
        return catalogue.definition(plugin)

    @r.put("/connector-plugins/{plugin}/config/validate")
    def validate(plugin: str, body: dict = Body(...)) -> Any:  # noqa: B008 - FastAPI's idiom
        return validation.validate(plugin, body)

    def _source(cfg: dict[str, Any], request: Request, *, replace: bool) -> dict[str, Any]:
        # a source that signs in as the server (the AWS default chain) needs FILE READ,
        # as its CREATE PIPELINE does (one reading the server's files, a SQLite database,
        # was asked for it already: require_file_read)
        access = access_of(engine, request)
        if KafkaConnectSource.signs_in_as_server(cfg, {}) and not (
            access.owner or access.may("FILE READ")
        ):
            raise AccessDeniedError(
                f"Access denied for user '{access.user}': connector "
                f"{cfg.get('connector.class')} given no login signs in with the server's own "
                "credentials, which needs the FILE READ privilege (GRANT FILE READ ON *.*), "
                "as its CREATE PIPELINE does"
            )
        return conns.create_source(cfg, replace=replace)

    def _run(name: str) -> None:
        if run:
            conns.resume(name, run=True)

    return r


def _written_files(cfg: SinkConnectorConfig) -> list[str]:
    """The keys of a sink config that name a file of the server the sink writes."""
    return ["connection.url"] if cfg.jdbc is not None and cfg.jdbc.dialect == "sqlite" else []

"""Kafka Connect's REST API for sink connectors, over :class:`sparkpipes.frontends.connect.service
.Connectors`: the paths, verbs, status codes and JSON of Kafka Connect, so its clients
and habits work unchanged."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Body, Request, Response

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect import validate as validation
from sparkpipes.frontends.connect.model import CLASS_NAMES, SinkConnectorConfig, load
from sparkpipes.server.access import access_of, require_file_read
from sparkpipes.sources.connect import known
from sparkpipes.util.localfiles import local_file_keys

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine


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
    Decided on the config as loaded (any spelling of true, any shape of body)."""
    if cfg.upsert:
        access_of(engine, request).require("DELETE")


def router(engine: Engine, *, run: bool) -> APIRouter:
    r = APIRouter()
    conns = engine.connectors

    @r.get("/connectors")
    def list_connectors(expand: str | None = None) -> Any:
        names = conns.names()
        if expand == "status":
            return {n: {"status": conns.status(n)} for n in names}
        if expand == "info":
            return {n: {"info": conns.info(n)} for n in names}
        return names

    @r.post("/connectors", status_code=201)
    async def create(request: Request) -> Any:
        body = json_body(await request.body())
        if not isinstance(body, dict) or "config" not in body:
            raise ConfigError('POST /connectors takes {"name": …, "config": {…}}')
        require_file_read(engine, request, local_file_keys(_flat(body)))
        cfg = load(body)  # checked as it will run: whatever the body's shape or spelling
        require_delete_to_upsert(engine, request, cfg)
        info = conns.create(cfg)
        _run(info["name"])
        return info

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
        require_file_read(engine, request, local_file_keys(_flat(body)))
        cfg = load(body, name=name)
        require_delete_to_upsert(engine, request, cfg)
        exists = name in conns.names()
        info = conns.create(cfg, replace=exists)
        _run(name)
        response.status_code = 200 if exists else 201
        return info

    @r.get("/connectors/{name}/status")
    def status(name: str) -> Any:
        return conns.status(name)

    @r.get("/connectors/{name}/tasks")
    def tasks(name: str) -> Any:
        d = conns.get(name)
        cfg = conns.config(name)
        return [
            {"id": {"connector": name, "task": i}, "config": {**cfg, "pipeline": p}}
            for i, p in enumerate(d["pipelines"])
        ]

    @r.put("/connectors/{name}/pause", status_code=202)
    def pause(name: str) -> Response:
        conns.pause(name)
        return Response(status_code=202)

    @r.put("/connectors/{name}/resume", status_code=202)
    def resume(name: str) -> Response:
        conns.resume(name, run=run)
        return Response(status_code=202)

    @r.post("/connectors/{name}/restart", status_code=204)
    def restart(name: str) -> Response:
        conns.resume(name, run=run)
        return Response(status_code=204)

    @r.delete("/connectors/{name}", status_code=204)
    def delete(name: str) -> Response:
        conns.delete(name)
        return Response(status_code=204)

    @r.get("/connector-plugins")
    def plugins() -> Any:
        sinks = [{"class": c, "type": "sink", "version": "sparkpipes"} for c in CLASS_NAMES]
        sources = [{"class": c, "type": "source", "version": "sparkpipes"} for c in known()]
        return sinks + sources

    @r.put("/connector-plugins/{plugin}/config/validate")
    def validate(plugin: str, body: dict = Body(...)) -> Any:  # noqa: B008 - FastAPI's idiom
        return validation.validate(plugin, body)

    def _run(name: str) -> None:
        if run:
            conns.resume(name, run=True)

    return r

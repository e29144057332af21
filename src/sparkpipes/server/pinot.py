"""Pinot controller endpoints for schemas and realtime tables, over
:class:`sparkpipes.frontends.pinot.service.PinotTables`: Pinot's paths, verbs and answers
(``{"status": …}``; errors ``{"code", "error"}``), so ``pinot-admin``-style scripts and
``curl -X POST -d @schema.json localhost:9000/schemas`` work unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request

from sparkpipes.frontends.pinot.model import local_files, unrecognized_properties
from sparkpipes.frontends.pinot.problems import pointer
from sparkpipes.server.access import require_file_read
from sparkpipes.server.connect import json_body

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

#: path prefixes whose errors are shaped as Pinot's controller shapes them
PATHS = ("/schemas", "/tables")


async def _body(request: Request) -> Any:
    return json_body(await request.body())


def _files(engine: Engine, request: Request, table: Any) -> None:
    """A table config naming a file of the server's disk (an Avro schema by its path, TLS
    material, a plugin's path option) needs ``FILE READ``."""
    require_file_read(engine, request, local_files(table), "; give an Avro schema inline as JSON")


def _pointers(found: dict[str, Any]) -> dict[str, Any]:
    """Pinot's shape of ``unrecognizedProperties``: JSON pointer → value."""
    return {pointer(path): value for path, value in found.items()}


def _unrecognized(raw: Any, paths: tuple[str, ...]) -> dict[str, Any]:
    """A schema's accepted-without-effect keys with their values (secrets redacted)."""
    values: dict[str, Any] = {}
    for path in paths:
        node: Any = raw
        for part in path.replace("]", "").replace("[", ".").split("."):
            node = node[int(part)] if isinstance(node, list) else node.get(part)
        values[path] = node
    return _pointers(unrecognized_properties(values))


def router(engine: Engine, *, run: bool) -> APIRouter:
    r = APIRouter()
    pinot = engine.pinot

    @r.post("/schemas")
    async def add_schema(request: Request, override: bool = False) -> Any:
        s = pinot.add_schema(await _body(request), override=override)
        return {
            "unrecognizedProperties": _unrecognized(s.raw, s.unrecognized),
            "status": f"{s.name} successfully added",
        }

    @r.get("/schemas")
    def schemas() -> Any:
        return pinot.schema_names()

    @r.get("/schemas/{name}")
    def schema(name: str) -> Any:
        return dict(pinot.schema(name).raw)

    @r.delete("/schemas/{name}")
    def delete_schema(name: str) -> Any:
        pinot.delete_schema(name)
        return {"status": f"Schema {name} deleted"}

    @r.post("/tables")
    async def add_table(request: Request) -> Any:
        body = await _body(request)
        _files(engine, request, body)
        out = pinot.add(body, run=run)
        return {
            "unrecognizedProperties": _pointers(pinot.unrecognized(out["table"])),
            "status": out["status"],
        }

    @r.post("/tables/validate")
    async def validate(request: Request) -> Any:
        """``{"schema": …, "table": …}`` (or a bare table config naming a stored schema):
        what adding it would do, nothing created."""
        body = await _body(request)
        if isinstance(body, dict) and "table" in body:
            _files(engine, request, body["table"])
            return pinot.plan(body["table"], body.get("schema"))
        _files(engine, request, body)
        return pinot.plan(body)

    @r.get("/tables")
    def tables() -> Any:
        return {"tables": pinot.names()}

    @r.get("/tables/{name}")
    def table(name: str) -> Any:
        return {"REALTIME": pinot.config(name)}

    @r.delete("/tables/{name}")
    def delete_table(name: str) -> Any:
        return {"status": f"Tables: [{pinot.delete(name)}] deleted"}

    return r

"""Pinot controller endpoints for schemas and realtime tables, over
:class:`sparkpipes.frontends.pinot.service.PinotTables`: Pinot's paths, verbs and answers
(``{"status": …}``; errors ``{"code", "error"}``), so ``pinot-admin``-style scripts,
``curl -X POST -d @schema.json localhost:9000/schemas`` and ``pinotdb``'s SQLAlchemy dialect
(which lists ``/tables`` and reads ``/tables/{name}/schema``) work unchanged.

What is shown back is what was given (secrets redacted; keys Pinot does not use are kept,
as they were reported in ``unrecognizedProperties``), with what Pinot's controller adds when
it shows a config: a schema's ``enableColumnBasedNullHandling`` (false by default) and each
field's ``fieldType``; a table config's ``tableName`` with its type (``t_REALTIME``), its
``tableType`` in capitals and ``isDimTable``. ``GET /tables`` lists names sorted (``?type=
realtime`` with their type, ``offline`` / ``dimension``: none here; ``sortAsc=false``).

Pausing and resuming a table (``pauseConsumption``, ``resumeConsumption?consumeFrom=``)
stops and starts every stream's pipeline; ``pauseTopicConsumption`` /
``resumeTopicConsumption?topicIndices=0,2`` only those streams, by their index in
``streamConfigMaps``, as Pinot's do. The answer is Pinot's ``PauseStatusDetails``:
``pauseFlag`` (every stream stopped), ``indexOfInactiveTopics`` (the stopped streams, when
some run), ``comment``; ``consumingSegments`` is empty, as there are no segments here
(``sparkpipes pinot table NAME`` shows each stream's partitions and offsets)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request

from sparkpipes.errors import AccessDeniedError, ConfigError, NotFoundError
from sparkpipes.frontends.pinot.model import (
    local_files,
    server_logins,
    unrecognized_properties,
)
from sparkpipes.frontends.pinot.problems import pointer
from sparkpipes.server.access import access_of, require_file_read
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
    logins = server_logins(table)
    access = access_of(engine, request)
    if logins and not access.owner and not access.may("FILE READ"):
        raise AccessDeniedError(
            f"Access denied for user '{access.user}': {', '.join(logins)} gives no accessKey "
            "and secretKey, so Kinesis would be read with the server's own AWS login, which "
            "needs the FILE READ privilege (GRANT FILE READ ON *.*); give accessKey and "
            "secretKey"
        )


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


#: a schema's lists of field specs → the ``fieldType`` Pinot shows for each
_FIELD_TYPES = {
    "dimensionFieldSpecs": "DIMENSION",
    "metricFieldSpecs": "METRIC",
    "dateTimeFieldSpecs": "DATE_TIME",
    "complexFieldSpecs": "COMPLEX",
}


def shown_schema(raw: Any) -> dict[str, Any]:
    """A stored schema as Pinot's controller shows it (``Schema.toJsonObject``): the
    defaults it writes out added, everything given kept."""
    out: dict[str, Any] = {"schemaName": raw.get("schemaName")}
    for key in ("description", "tags"):
        if key in raw:
            out[key] = raw[key]
    out["enableColumnBasedNullHandling"] = raw.get("enableColumnBasedNullHandling", False)
    for key, value in raw.items():
        kind = _FIELD_TYPES.get(key)
        if kind and isinstance(value, list):
            value = [_field(spec, kind) for spec in value]
        elif key == "timeFieldSpec" and isinstance(value, dict):
            value = _field(value, "TIME")
        out.setdefault(key, value)
    return out


def _field(spec: Any, kind: str) -> Any:
    """A field spec with Pinot's ``fieldType`` after its ``dataType``."""
    if not isinstance(spec, dict) or "fieldType" in spec:
        return spec
    out: dict[str, Any] = {}
    for key, value in spec.items():
        out[key] = value
        if key == "dataType":
            out["fieldType"] = kind
    out.setdefault("fieldType", kind)
    return out


def shown_config(config: dict[str, Any]) -> dict[str, Any]:
    """A stored REALTIME table config as Pinot's controller shows it (``TableConfig.
    toJsonNode``): the name with its type, the type in capitals, ``isDimTable``."""
    out = dict(config)
    name = str(config.get("tableName", ""))
    out["tableName"] = name if name.endswith("_REALTIME") else f"{name}_REALTIME"
    out["tableType"] = "REALTIME"
    out.setdefault("isDimTable", False)
    return out


def _realtime(pinot: Any, name: str, kind: str | None = None) -> str:
    """The raw name of the REALTIME table ``name`` (raw, or with its type) asked for as
    ``?type=kind``; Pinot's 404 otherwise (an OFFLINE table never exists here)."""
    base = name[: -len("_REALTIME")] if name.endswith("_REALTIME") else name
    wanted = (kind or "realtime").lower()
    if wanted != "realtime" or name.endswith("_OFFLINE") or base not in pinot.names():
        shown = f"{name}_{kind.upper()}" if kind else name
        raise NotFoundError(f"Table {shown} does not exist")
    return base


def _indices(text: str) -> list[int]:
    try:
        return [int(i.strip()) for i in text.split(",")]
    except ValueError:
        raise ConfigError("topicIndices should be a comma separated list of integers") from None


def pause_details(pinot: Any, base: str, comment: str | None = None) -> dict[str, Any]:
    """A table's pause state as Pinot's controller answers it (``PauseStatusDetails``)."""
    streams = pinot.status(base, lag=False)["streams"]
    inactive = [s["index"] for s in streams if s["state"] != "Running"]
    paused = len(inactive) == len(streams)
    out: dict[str, Any] = {"pauseFlag": paused, "consumingSegments": []}
    if paused:
        out["reasonCode"] = "ADMINISTRATIVE"
    out["comment"] = comment or ("Table is paused." if paused else "Table is unpaused.")
    if inactive and not paused:
        out["indexOfInactiveTopics"] = inactive
    return out


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
        return shown_schema(pinot.schema(name).raw)

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
    def tables(
        kind: str | None = Query(None, alias="type"),
        ascending: bool = Query(True, alias="sortAsc"),
    ) -> Any:
        """Pinot's names (``?type=realtime``: with their type), sorted."""
        names = sorted(pinot.names(), reverse=not ascending)
        wanted = (kind or "").lower()
        if wanted in ("offline", "dimension"):
            return {"tables": []}
        if wanted == "realtime":
            return {"tables": [f"{n}_REALTIME" for n in names]}
        if wanted:
            raise ConfigError(f"type '{kind}' is not one of realtime, offline, dimension")
        return {"tables": names}

    @r.get("/tables/{name}")
    def table(name: str, kind: str | None = Query(None, alias="type")) -> Any:
        """``{"REALTIME": config}``, as Pinot answers for a realtime table."""
        return {"REALTIME": shown_config(pinot.config(_realtime(pinot, name, kind)))}

    @r.get("/tables/{name}/schema")
    def table_schema(name: str) -> Any:
        """The schema of the table (its ``segmentsConfig.schemaName``, else its name)."""
        base = _realtime(pinot, name)
        named = (pinot.config(base).get("segmentsConfig") or {}).get("schemaName") or base
        try:
            return shown_schema(pinot.schema(named).raw)
        except NotFoundError:
            raise NotFoundError(f"Schema not found for table: {base}") from None

    @r.delete("/tables/{name}")
    def delete_table(name: str) -> Any:
        return {"status": f"Tables: [{pinot.delete(name)}] deleted"}

    @r.post("/tables/{name}/pauseConsumption")
    def pause(name: str, comment: str | None = None) -> Any:
        base = _realtime(pinot, name)
        pinot.pause(base)
        return pause_details(pinot, base, comment)

    @r.post("/tables/{name}/pauseTopicConsumption")
    def pause_topics(name: str, indices: str = Query(..., alias="topicIndices")) -> Any:
        base = _realtime(pinot, name)
        pinot.pause(base, _indices(indices))
        return pause_details(pinot, base)

    @r.post("/tables/{name}/resumeConsumption")
    def resume(
        name: str,
        comment: str | None = None,
        consume_from: str | None = Query(None, alias="consumeFrom"),
    ) -> Any:
        base = _realtime(pinot, name)
        pinot.resume(base, consume_from=consume_from, run=run)
        return pause_details(pinot, base, comment)

    @r.post("/tables/{name}/resumeTopicConsumption")
    def resume_topics(name: str, indices: str = Query(..., alias="topicIndices")) -> Any:
        base = _realtime(pinot, name)
        pinot.resume(base, _indices(indices), run=run)
        return pause_details(pinot, base)

    @r.get("/tables/{name}/pauseStatus")
    def pause_status(name: str) -> Any:
        return pause_details(pinot, _realtime(pinot, name))

    return r

"""Privileges on the HTTP surfaces of ``sparkpipes serve``: the JSON API, the console,
Kafka Connect's REST API and Pinot's controller endpoints enforce the same grants as SQL
(``catalog.grants``, ``sql.privileges``).

Every route is classified in :data:`NEEDS` by its method and path template: the
privileges it needs (on the object its ``{name}`` names, or on the database), or
:data:`ANY` for routes any signed-in user may call — SQL (each statement is checked as
it runs), listings (which show only what the user holds a privilege on) and the
console's pages and assets. A route missing from the table is refused (fail closed; a
test lists the app's routes against it). A Kafka Connect connector or a Pinot table spans
pipelines and tables (a sink connector makes its tables and loads them), so those APIs need
their privileges on the database.

:func:`guard` is a FastAPI dependency of the whole app: it runs after routing, checks,
and leaves the request's :class:`~sparkpipes.catalog.grants.Access` in
``request.state.access`` for the listings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request

from sparkpipes.catalog.grants import TABLE, Access
from sparkpipes.errors import AccessDeniedError
from sparkpipes.server.auth import LOCAL_USER

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine


@dataclass(frozen=True)
class Need:
    """Privileges a route needs, all of them; ``on``: the path parameter naming the
    object (None: the database); ``any_of``: one of these suffices instead."""

    privileges: tuple[str, ...] = ()
    on: str | None = None
    kind: str = "pipeline"
    any_of: tuple[str, ...] = ()


ANY = Need()


def _pipeline(*privileges: str) -> Need:
    return Need(privileges, on="name")


def _db(*privileges: str) -> Need:
    return Need(privileges)


NEEDS: dict[tuple[str, str], Need] = {
    # the JSON API
    ("GET", "/api/status"): ANY,
    ("GET", "/api/pipelines"): ANY,
    ("POST", "/api/pipelines"): ANY,
    ("GET", "/api/pipelines/{name}"): _pipeline("SHOW PIPELINE"),
    ("POST", "/api/pipelines/{name}/start"): _pipeline("START PIPELINE"),
    ("POST", "/api/pipelines/{name}/stop"): _pipeline("START PIPELINE"),
    ("PUT", "/api/pipelines/{name}/offsets"): _pipeline("ALTER PIPELINE"),
    ("GET", "/api/pipelines/{name}/batches"): _pipeline("SHOW PIPELINE"),
    ("GET", "/api/pipelines/{name}/errors"): _pipeline("SHOW PIPELINE"),
    ("GET", "/api/pipelines/{name}/files"): _pipeline("SHOW PIPELINE"),
    ("GET", "/api/tables"): ANY,
    ("GET", "/api/tables/{name}"): Need(on="name", kind="table", any_of=TABLE),
    ("GET", "/api/variables"): ANY,
    ("POST", "/api/query"): ANY,
    ("POST", "/api/query/stream"): ANY,
    ("POST", "/api/sql"): ANY,
    ("POST", "/api/login"): ANY,
    ("POST", "/query/sql"): ANY,
    # Kafka Connect's REST API (``/``: its version document, or the console for a browser)
    ("GET", "/"): ANY,
    ("GET", "/connectors"): _db("SHOW PIPELINE"),
    ("POST", "/connectors"): _db("CREATE PIPELINE", "CREATE", "INSERT"),
    ("GET", "/connectors/{name}"): _db("SHOW PIPELINE"),
    ("GET", "/connectors/{name}/config"): _db("SHOW PIPELINE"),
    ("PUT", "/connectors/{name}/config"): _db(
        "CREATE PIPELINE", "ALTER PIPELINE", "CREATE", "INSERT"
    ),
    ("GET", "/connectors/{name}/status"): _db("SHOW PIPELINE"),
    ("GET", "/connectors/{name}/tasks"): _db("SHOW PIPELINE"),
    ("GET", "/connectors/{name}/tasks-config"): _db("SHOW PIPELINE"),
    ("GET", "/connectors/{name}/tasks/{task}/status"): _db("SHOW PIPELINE"),
    ("POST", "/connectors/{name}/tasks/{task}/restart"): _db("START PIPELINE"),
    ("PUT", "/connectors/{name}/pause"): _db("START PIPELINE"),
    ("PUT", "/connectors/{name}/resume"): _db("START PIPELINE"),
    ("POST", "/connectors/{name}/restart"): _db("START PIPELINE"),
    ("PUT", "/connectors/{name}/stop"): _db("START PIPELINE"),
    ("GET", "/connectors/{name}/offsets"): _db("SHOW PIPELINE"),
    ("PATCH", "/connectors/{name}/offsets"): _db("ALTER PIPELINE"),
    ("DELETE", "/connectors/{name}/offsets"): _db("ALTER PIPELINE"),
    ("GET", "/connectors/{name}/topics"): _db("SHOW PIPELINE"),
    ("PUT", "/connectors/{name}/topics/reset"): _db("ALTER PIPELINE"),
    ("DELETE", "/connectors/{name}"): _db("DROP PIPELINE"),
    ("GET", "/connector-plugins"): ANY,
    ("PUT", "/connector-plugins/{plugin}/config/validate"): ANY,
    ("GET", "/connector-plugins/{plugin}/config"): ANY,
    ("GET", "/health"): ANY,
    # Pinot's controller
    ("POST", "/schemas"): _db("CREATE"),
    ("GET", "/schemas"): _db("SHOW PIPELINE"),
    ("GET", "/schemas/{name}"): _db("SHOW PIPELINE"),
    ("DELETE", "/schemas/{name}"): _db("DROP"),
    ("POST", "/tables"): _db("CREATE", "CREATE PIPELINE"),
    ("POST", "/tables/validate"): _db("SHOW PIPELINE"),
    ("GET", "/tables"): _db("SHOW PIPELINE"),
    ("GET", "/tables/{name}"): _db("SHOW PIPELINE"),
    ("GET", "/tables/{name}/schema"): _db("SHOW PIPELINE"),
    ("DELETE", "/tables/{name}"): _db("DROP", "DROP PIPELINE"),
    ("POST", "/tables/{name}/pauseConsumption"): _db("START PIPELINE"),
    ("POST", "/tables/{name}/pauseTopicConsumption"): _db("START PIPELINE"),
    ("POST", "/tables/{name}/resumeConsumption"): _db("START PIPELINE", "ALTER PIPELINE"),
    ("POST", "/tables/{name}/resumeTopicConsumption"): _db("START PIPELINE"),
    ("GET", "/tables/{name}/pauseStatus"): _db("SHOW PIPELINE"),
    # the console
    ("GET", "/console"): ANY,
    ("GET", "/console/pipelines/{name}"): _pipeline("SHOW PIPELINE"),
    ("GET", "/console/tables"): ANY,
    ("GET", "/console/query"): ANY,
    ("GET", "/console/fragments/pipelines"): ANY,
    ("GET", "/console/fragments/pipelines/{name}/status"): _pipeline("SHOW PIPELINE"),
    ("GET", "/console/fragments/pipelines/{name}/batches"): _pipeline("SHOW PIPELINE"),
    ("GET", "/console/fragments/tables"): ANY,
    ("POST", "/console/pipelines/{name}/start"): _pipeline("START PIPELINE"),
    ("POST", "/console/pipelines/{name}/stop"): _pipeline("START PIPELINE"),
    ("GET", "/console/static/{path:path}"): ANY,
}
#: routes of the framework and of signing in, which hold no data
FRAMEWORK = ("/openapi.json", "/login", "/logout")


def user_of(request: Request) -> str | None:
    """The signed-in user's name; None for the server's owner (the local token)."""
    user = getattr(request.state, "user", None)
    return None if user in (None, LOCAL_USER) else user


def access_of(engine: Engine, request: Request) -> Access:
    """The request's access (set by :func:`guard`; made here for routes it skipped)."""
    found = getattr(request.state, "access", None)
    return found if found is not None else Access(engine.catalog.grants, user_of(request))


def guard(engine: Engine) -> Callable[[Request], None]:
    """The app-wide dependency: the route's privileges, or AccessDeniedError (403)."""

    def check(request: Request) -> None:
        route = request.scope.get("route")
        path = getattr(route, "path", request.url.path)
        if path in FRAMEWORK or path.startswith("/login"):
            return
        access = Access(engine.catalog.grants, user_of(request))
        request.state.access = access
        need = NEEDS.get((request.method.upper(), path))
        if need is None and request.method.upper() == "HEAD":
            need = NEEDS.get(("GET", path))
        if need is None:
            raise AccessDeniedError(f"{request.method} {path} is not open to any user")
        if access.owner:
            return
        obj = request.path_params.get(need.on) if need.on else None
        for privilege in need.privileges:
            access.require(privilege, obj, kind=need.kind)
        if need.any_of and not access.may_any(need.any_of, obj):
            access.require(need.any_of[0], obj, kind=need.kind)

    return check


def require_file_write(engine: Engine, request: Request, keys: list[str]) -> None:
    """A config that has the server write files of its own disk (a JDBC sink into an
    SQLite file) needs ``FILE WRITE``: FILE READ is not enough, as a written file can be
    any file the server may write. The refusal names the options, never their values."""
    _require_file(engine, request, keys, "FILE WRITE", "that the connector writes", "writing")


def require_file_read(engine: Engine, request: Request, keys: list[str], hint: str = "") -> None:
    """A config whose options ``keys`` name files of the server's disk (TLS material, a
    schema file, a plugin's path) has the server read them: that needs ``FILE READ``, as
    ``LOAD DATA FS`` does. The refusal names the options, never their values."""
    _require_file(engine, request, keys, "FILE READ", "", "reading", hint)


def _require_file(
    engine: Engine,
    request: Request,
    keys: list[str],
    privilege: str,
    what: str,
    doing: str,
    hint: str = "",
) -> None:
    access = access_of(engine, request)
    if not keys or access.owner or access.may(privilege):
        return
    raise AccessDeniedError(
        f"Access denied for user '{access.user}': {', '.join(keys)} names a file of the "
        f"server{' ' + what if what else ''}, and {doing} the server's files needs the "
        f"{privilege} privilege (GRANT {privilege} ON *.*){hint}"
    )

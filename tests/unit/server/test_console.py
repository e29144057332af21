"""The web console's handlers one by one (``server.console.Console``), without an engine or
Spark: a small stand-in engine holds two pipelines and three tables, privileges are real
(``catalog.grants.Access`` over a SQLite catalog: ana is the admin, bo may see pipeline
``orders_p`` and table ``orders`` only). Pages are rendered through FastAPI's TestClient
behind the same privilege check as ``sparkpipes serve`` (``server.access.guard``), the data
methods are called directly.

What each proves: listings show only what the user holds a privilege on; a page shows a
``SparkpipesError`` as its message with its status (404 naming a missing pipeline), a
fragment as an inline message; a definition that cannot be read leaves the rest of the page;
actions need htmx's header and the page's CSRF token and report the engine's refusal inline;
every rendered page tells the lag sampler it is watched; static files are versioned."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from starlette.requests import Request as StarletteRequest

from sparkpipes.catalog.store import Catalog
from sparkpipes.errors import CatalogError, NotFoundError, SparkpipesError
from sparkpipes.server import console as console_module
from sparkpipes.server.access import guard
from sparkpipes.server.console import (
    BATCH_POINTS,
    BATCH_ROWS,
    ERROR_ROWS,
    HEADERS,
    Console,
    routes,
)
from sparkpipes.server.console_lag import LagHistory
from sparkpipes.server.errors import status_of
from sparkpipes.server.security import CSRF_HEADER

CSRF = "csrf-token-of-this-page"
NOW = dt.datetime.now(dt.UTC).replace(tzinfo=None)  # the catalog's times: naive UTC


@dataclass
class Rec:
    """What the console reads of a pipeline record."""

    name: str
    id: str
    table: str
    state: str = "Stopped"
    last_error: str | None = None


def batch(i: int, rows: int, state: str = "Succeeded", **more: Any) -> dict[str, Any]:
    started = NOW - dt.timedelta(seconds=100 - i)
    return {
        "batch_id": i,
        "attempt": 1,
        "state": state,
        "rows": rows,
        "bytes": rows * 10,
        "errors": 0,
        "started_at": started,
        "finished_at": started + dt.timedelta(seconds=1),
        "duration_ms": 1000,
        "partitions": [{"partition": "0"}],
        "error": None,
        **more,
    }


def error(i: int, reason: str) -> dict[str, Any]:
    return {
        "batch_id": i,
        "partition": "0",
        "offset": i,
        "code": "SP300",
        "kind": "decode",
        "reason": reason,
        "excerpt": "{oops",
        "created_at": NOW,
    }


class Spec:
    def __init__(self, definition: dict[str, Any]) -> None:
        self.definition = definition

    def to_json(self) -> dict[str, Any]:
        return self.definition


class FakeEngine:
    """Stands in for the engine with what the console's handlers ask of it (and what
    ``engine.status.pipeline_status`` and ``server.api.table_detail`` read); records
    each start and stop; ``fail`` makes a method raise the given error."""

    def __init__(self, catalog: Catalog) -> None:
        self.recs = {
            "orders_p": Rec("orders_p", "id-1", "orders", "Running"),
            "secret_p": Rec("secret_p", "id-2", "secret", last_error="broker down"),
        }
        self.batch_log = {
            "orders_p": [batch(i, 100) for i in range(1, 61)] + [batch(61, 0, "Failed")],
            "secret_p": [],
        }
        self.error_log = {"orders_p": [error(i, f"bad record {i}") for i in range(1, 31)]}
        self.specs = {
            "orders_p": Spec({"name": "orders_p", "credentials": "<redacted>"}),
            "secret_p": Spec({"name": "secret_p"}),
        }
        self.schemas = {
            "orders": pa.schema([("id", pa.int64()), ("item", pa.string())]),
            "secret": pa.schema([("x", pa.int64())]),
        }
        self.listed = ["orders", "secret", "gone"]  # "gone" was dropped after the listing
        self.calls: list[tuple] = []
        self.fail: dict[str, SparkpipesError] = {}
        self.catalog = SimpleNamespace(
            grants=catalog.grants, tables=SimpleNamespace(get=self._table)
        )
        self.rt = SimpleNamespace(
            catalog=SimpleNamespace(
                notes=SimpleNamespace(starting=lambda kind: {}),
                leases=SimpleNamespace(all=dict),
                batches=SimpleNamespace(
                    list=lambda pid, last=None: self._log(pid)[-last:],
                    loaded=lambda pid: (sum(b["rows"] for b in self._log(pid)), NOW),
                ),
            )
        )

    def _check(self, method: str) -> None:
        if method in self.fail:
            raise self.fail[method]

    def _log(self, pid: str) -> list[dict[str, Any]]:
        return next(self.batch_log[r.name] for r in self.recs.values() if r.id == pid)

    def _table(self, name: str) -> Any:
        if name not in self.schemas:
            raise NotFoundError(f"table '{name}' does not exist")
        return SimpleNamespace(name=name, schema=self.schemas[name])

    # what the console's handlers call
    def pipelines(self) -> list[Rec]:
        self._check("pipelines")
        return list(self.recs.values())

    def pipeline(self, name: str) -> Rec:
        self._check("pipeline")
        if name not in self.recs:
            raise NotFoundError(f"pipeline '{name}' does not exist")
        return self.recs[name]

    def spec(self, name: str) -> Spec:
        self._check("spec")
        return self.specs[name]

    def batches(self, name: str, last: int | None = None) -> list[dict[str, Any]]:
        self._check("batches")
        self.calls.append(("batches", name, last))
        return self.batch_log[name][-last:]

    def errors(self, name: str, last: int | None = None) -> list[dict[str, Any]]:
        self.calls.append(("errors", name, last))
        return self.error_log.get(name, [])[-last:]

    def tables(self) -> list[str]:
        self._check("tables")
        return list(self.listed)

    def table_status(self, name: str) -> dict[str, Any]:
        return {
            "rows": 6000,
            "bytes": 1,
            "files": 1,
            "small_files": 0,
            "version": 3,
            "checkpoint": None,
            "last_compaction": None,
            "last_vacuum": None,
        }

    def start(self, name: str, *, run: bool = True) -> None:
        self.calls.append(("start", name, run))
        self._check("start")

    def stop(self, name: str) -> None:
        self.calls.append(("stop", name))
        self._check("stop")


class Sampler:
    """Stands in for the lag sampler: counts the pages that said they are watched."""

    def __init__(self) -> None:
        self.touched = 0

    def touch(self) -> None:
        self.touched += 1

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """Read only by the tests (signing users up hashes their passwords: once)."""
    c = Catalog(f"sqlite:///{tmp_path_factory.mktemp('console') / 'catalog.db'}")
    c.users.create("ana", "pw-a")  # the first user: the admin
    c.users.create("bo", "pw-b")
    c.grants.grant(["bo"], ["SHOW PIPELINE"], "orders_p", option=False)
    c.grants.grant(["bo"], ["SELECT"], "orders", option=False)
    yield c
    c.close()


@pytest.fixture
def engine(catalog):
    return FakeEngine(catalog)


@pytest.fixture
def console(engine):
    return Console(engine, run=False, history=LagHistory(), sampler=Sampler())


@pytest.fixture
def client(console, engine):
    """The console's routes as ``sparkpipes serve`` mounts them: the user (header
    ``x-user``, else the owner) signed in with the page's CSRF token, then the route's
    privileges checked; a refusal answered with its status."""

    def signed_in(request: Request) -> None:
        request.state.user = request.headers.get("x-user")
        request.state.csrf = CSRF

    app = FastAPI(dependencies=[Depends(signed_in), Depends(guard(engine))])

    @app.exception_handler(SparkpipesError)
    async def refused(request: Request, e: SparkpipesError) -> JSONResponse:
        return JSONResponse({"message": e.message}, status_code=status_of(e))

    app.include_router(routes(console))
    return TestClient(app)


def request_of(
    user: str | None = None, headers: dict[str, str] | None = None, csrf: str | None = None
) -> StarletteRequest:
    """A request signed in as ``user`` (None: the owner), for calling a method directly."""
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "method": "GET", "path": "/", "headers": raw, "state": {}}
    req = StarletteRequest(scope)
    req.state.user, req.state.csrf = user, csrf
    return req


# -- data ----------------------------------------------------------------------------------


def test_overview_lists_the_pipelines_the_user_sees_with_their_latest_lag(console):
    console.history.add("orders_p", 7, at=1000.0)
    console.history.add("orders_p", 42, at=1002.0)
    owner = {p["name"]: p for p in console.overview(request_of(None))}
    assert set(owner) == {"orders_p", "secret_p"}
    assert (owner["orders_p"]["lag"], owner["orders_p"]["lag_at"]) == (42, 1002.0)
    assert (owner["secret_p"]["lag"], owner["secret_p"]["lag_at"]) == (None, None)
    assert owner["orders_p"]["rows_loaded"] == 6000
    assert [p["name"] for p in console.overview(request_of("ana"))] == ["orders_p", "secret_p"]
    assert [p["name"] for p in console.overview(request_of("bo"))] == ["orders_p"]


def test_detail_is_the_status_and_both_charts_series(console, engine):
    console.history.add("orders_p", 5, at=time.time())
    out = console.detail("orders_p")
    assert out["p"]["name"] == "orders_p" and out["p"]["lag"] == 5
    assert ("batches", "orders_p", BATCH_POINTS) in engine.calls
    series = out["series"]
    assert sum(series["throughput"]["y"]) > 0 and series["throughput"]["bucket_s"] > 0
    assert series["lag"]["y"] == [5]
    assert abs(series["now"] - time.time()) < 60
    with pytest.raises(NotFoundError):
        console.detail("nope")


def test_recent_is_the_newest_batches_and_errors_first(console, engine):
    out = console.recent("orders_p")
    assert ("batches", "orders_p", BATCH_ROWS) in engine.calls
    assert ("errors", "orders_p", ERROR_ROWS) in engine.calls
    assert [b["batch_id"] for b in out["batches"]] == list(range(61, 61 - BATCH_ROWS, -1))
    assert out["batches"][0]["state"] == "Failed" and out["batches"][0]["partitions"] == 1
    assert [e["batch_id"] for e in out["errors"]] == list(range(30, 30 - ERROR_ROWS, -1))
    assert out["total"] == 61
    assert console.recent("secret_p") == {"batches": [], "errors": [], "total": 0}


def test_tables_lists_what_the_user_sees_with_the_pipelines_loading_them(console):
    owner = {t["name"]: t for t in console.tables(request_of(None))}
    assert list(owner) == ["orders", "secret", "gone"]
    assert owner["orders"]["pipelines"] == ["orders_p"] and owner["orders"]["rows"] == 6000
    assert owner["orders"]["columns"] == [
        {"name": "id", "type": "int64"},
        {"name": "item", "type": "string"},
    ]
    assert owner["secret"]["pipelines"] == ["secret_p"]
    # dropped between the listing and now: listed with its error, not an error page
    assert owner["gone"] == {
        "name": "gone",
        "columns": [],
        "rows": None,
        "error": "table 'gone' does not exist",
        "pipelines": [],
    }
    (orders,) = console.tables(request_of("bo"))
    assert orders["name"] == "orders" and orders["pipelines"] == ["orders_p"]


def test_bo_does_not_see_a_pipeline_loading_a_table_he_sees(console, engine):
    engine.recs["secret_p"].table = "orders"
    (orders,) = console.tables(request_of("bo"))
    assert orders["pipelines"] == ["orders_p"]
    assert console.tables(request_of(None))[0]["pipelines"] == ["orders_p", "secret_p"]


# -- pages ---------------------------------------------------------------------------------


def test_the_console_lives_under_its_own_path_leaving_root_to_kafka_connect(client):
    """``/`` is Kafka Connect's version document (``server.connect``, which sends a
    browser asking for HTML to ``/console``); the console answers under ``/console``."""
    assert client.get("/", follow_redirects=False).status_code == 404
    assert client.get("/console", follow_redirects=False).status_code == 200


def test_pipelines_page_shows_the_users_pipelines_and_is_watched(client, console):
    r = client.get("/console", headers={"x-user": "bo"})
    assert r.status_code == 200
    assert r.headers["content-security-policy"] == HEADERS["Content-Security-Policy"]
    assert r.headers["cache-control"] == "no-store"
    assert "orders_p" in r.text and "secret_p" not in r.text
    assert CSRF in r.text and "bo" in r.text
    assert console.sampler.touched == 1
    owner = client.get("/console")
    assert "orders_p" in owner.text and "secret_p" in owner.text and "broker down" in owner.text


def test_a_failing_catalog_is_an_error_page_with_its_message(client, engine):
    engine.fail["pipelines"] = e = CatalogError("the catalog is locked")
    r = client.get("/console")
    assert r.status_code == status_of(e)
    assert "the catalog is locked" in r.text and "Traceback" not in r.text
    assert "<title>" in r.text.lower() and "Pipelines" in r.text


def test_pipeline_page_shows_status_batches_errors_and_definition(client):
    r = client.get("/console/pipelines/orders_p", headers={"x-user": "bo"})
    assert r.status_code == 200
    assert "&lt;redacted&gt;" in r.text  # the definition as to_json() gives it, escaped
    assert "bad record 30" in r.text and "bad record 10" not in r.text  # 20 newest errors
    assert "Running" in r.text and "6,000" in r.text


def test_a_missing_pipeline_is_a_404_naming_it(client):
    r = client.get("/console/pipelines/nope")
    assert r.status_code == 404
    assert (
        "No pipeline &#39;nope&#39;" in r.text
        and "pipeline &#39;nope&#39; does not exist" in r.text
    )


def test_a_definition_that_cannot_be_read_leaves_the_rest_of_the_page(client, engine):
    engine.fail["spec"] = SparkpipesError("the definition needs a newer sparkpipes")
    r = client.get("/console/pipelines/orders_p")
    assert r.status_code == 200
    assert "the definition needs a newer sparkpipes" in r.text and "bad record 30" in r.text


def test_a_pipeline_whose_history_fails_is_an_error_page(client, engine):
    engine.fail["batches"] = e = CatalogError("batches unreadable")
    r = client.get("/console/pipelines/orders_p")
    assert r.status_code == status_of(e) and "batches unreadable" in r.text
    assert "Pipeline &#39;orders_p&#39;" in r.text


def test_a_pipeline_page_needs_show_pipeline_on_it(client):
    assert client.get("/console/pipelines/secret_p", headers={"x-user": "bo"}).status_code == 403
    denied = client.get("/console/fragments/pipelines/secret_p/status", headers={"x-user": "bo"})
    assert denied.status_code == 403
    assert client.get("/console/pipelines/secret_p", headers={"x-user": "ana"}).status_code == 200


def test_tables_page_shows_the_users_tables(client):
    r = client.get("/console/tables", headers={"x-user": "bo"})
    assert r.status_code == 200 and "orders" in r.text and "secret" not in r.text
    assert "SELECT%20%2A%20FROM%20orders%20LIMIT%20100" in r.text  # the query link, URL-encoded


def test_query_page(client, console):
    r = client.get("/console/query")
    assert r.status_code == 200 and "codemirror" in r.text.lower()
    assert console.sampler.touched == 1


# -- fragments -----------------------------------------------------------------------------


def test_fragments_render_their_part(client):
    listing = client.get("/console/fragments/pipelines", headers={"x-user": "bo"})
    assert listing.status_code == 200 and "orders_p" in listing.text
    assert "secret_p" not in listing.text and "<html" not in listing.text.lower()
    status = client.get("/console/fragments/pipelines/orders_p/status")
    assert status.status_code == 200 and "Running" in status.text
    batches = client.get("/console/fragments/pipelines/orders_p/batches")
    assert batches.status_code == 200 and "bad record 30" in batches.text
    tables = client.get("/console/fragments/tables", headers={"x-user": "bo"})
    assert tables.status_code == 200 and "orders" in tables.text and "secret" not in tables.text


def test_a_fragment_shows_an_error_inline_so_polling_goes_on(client, engine):
    engine.fail["batches"] = CatalogError("batches unreadable")
    r = client.get("/console/fragments/pipelines/orders_p/batches")
    assert r.status_code == 200 and "batches unreadable" in r.text
    assert "<html" not in r.text.lower()
    missing = client.get("/console/fragments/pipelines/nope/status")
    assert missing.status_code == 200 and "pipeline &#39;nope&#39; does not exist" in missing.text


# -- actions -------------------------------------------------------------------------------


HTMX = {"hx-request": "true", CSRF_HEADER: CSRF}


@pytest.mark.parametrize(
    "headers",
    [{}, {"hx-request": "true"}, {CSRF_HEADER: CSRF}, {**HTMX, CSRF_HEADER: "forged"}],
)
def test_an_action_needs_htmx_and_the_pages_csrf_token(client, engine, headers):
    r = client.post("/console/pipelines/orders_p/stop", headers=headers)
    assert r.status_code == 403 and r.text == "console actions are sent by its pages"
    assert not [c for c in engine.calls if c[0] in ("start", "stop")]


def test_start_and_stop_answer_with_the_fragment_of_their_page(client, engine):
    r = client.post("/console/pipelines/secret_p/start", headers=HTMX)
    assert r.status_code == 200 and "secret_p" in r.text and "orders_p" in r.text  # the list
    assert ("start", "secret_p", False) in engine.calls  # run as the console was built
    r = client.post("/console/pipelines/orders_p/stop?view=detail", headers=HTMX)
    assert r.status_code == 200 and ("stop", "orders_p") in engine.calls
    assert "orders_p" in r.text and "secret_p" not in r.text  # the pipeline's status


def test_an_action_the_user_may_not_do_is_refused_before_the_engine(client, engine):
    r = client.post("/console/pipelines/orders_p/start", headers={**HTMX, "x-user": "bo"})
    assert r.status_code == 403 and not [c for c in engine.calls if c[0] == "start"]


def test_an_action_the_engine_refuses_shows_its_message(client, engine):
    engine.fail["start"] = SparkpipesError("pipeline 'orders_p' is already running")
    r = client.post("/console/pipelines/orders_p/start?view=detail", headers=HTMX)
    assert r.status_code == 200 and "is already running" in r.text


def test_a_started_pipeline_runs_where_the_console_says(engine):
    console = Console(engine, run=True, sampler=Sampler())
    assert console.start(request_of(None, HTMX, CSRF), "orders_p").status_code == 200
    assert ("start", "orders_p", True) in engine.calls


# -- static files --------------------------------------------------------------------------


def test_static_files_are_versioned_and_revalidated(client, console):
    etag = console.assets["console.css"].etag
    r = client.get("/console/static/console.css")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/css")
    assert r.headers["etag"] == f'"{etag}"' and r.headers["cache-control"] == "no-cache"
    pinned = client.get(f"/console/static/console.css?v={etag}")
    assert pinned.headers["cache-control"] == "public, max-age=31536000, immutable"
    again = client.get("/console/static/console.css", headers={"If-None-Match": f'"{etag}"'})
    assert again.status_code == 304 and again.content == b""
    assert client.get("/console/static/vendor/htmx.min.js").status_code == 200
    assert client.get("/console/static/../console.py").status_code == 404
    assert client.get("/console/static/nope.js").status_code == 404
    assert console.sampler.touched == 0  # assets do not count as watching


def test_pages_link_their_assets_by_version(client, console):
    etag = console.assets["console.css"].etag
    assert f"/console/static/console.css?v={etag}" in client.get("/console").text


def test_router_wires_a_console_of_the_engine(engine):
    r = console_module.router(engine, run=False)
    paths = {(m, route.path) for route in r.routes for m in route.methods}
    assert ("GET", "/console/pipelines/{name}") in paths
    assert ("POST", "/console/pipelines/{name}/stop") in paths
    assert len(paths) == 11 and ("GET", "/") not in paths  # / is Kafka Connect's


# -- lag history (console_lag) -------------------------------------------------------------


def test_lag_history_keeps_its_window_and_never_averages_a_spike_away():
    history = LagHistory(window_s=10.0, every_s=1.0)
    for t in range(30):
        history.add("p", 1000 if t == 25 else t, at=float(t))
    assert [at for at, _ in history.points("p")] == [float(t) for t in range(19, 30)]
    series = history.series("p", most=4)
    assert len(series["x"]) == 4 and 1000 in series["y"] and series["x"][-1] == 29.0
    history.add("p", None, at=30.0)
    assert history.latest("p") == (30.0, None)
    history.add("q", 1, at=30.0)
    history.retain(["q"])
    assert history.points("p") == [] and history.latest("q") == (30.0, 1)

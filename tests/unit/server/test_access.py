"""Every route of ``sparkpipes serve`` is classified for privileges (``server.access``): a
route added without saying what it needs would be refused to every user but the owner,
so this test names it instead; and each classified route exists."""

from __future__ import annotations

from fastapi.routing import APIRoute

from sparkpipes import Engine
from sparkpipes.server import create_app
from sparkpipes.server.access import FRAMEWORK, NEEDS


def test_every_route_is_classified(tmp_path):
    engine = Engine(tmp_path / "wh")
    try:
        app = create_app(engine, run=False, local_token="t")
        routes = {
            (method, r.path)
            for r in _routes(app.routes)
            if isinstance(r, APIRoute) and r.path not in FRAMEWORK
            for method in r.methods
        }
    finally:
        engine.close()
    assert routes - set(NEEDS) == set(), "classify these routes in server.access.NEEDS"
    assert set(NEEDS) - routes == set(), "these NEEDS entries name no route"


def _routes(routes, prefix=""):
    """The app's routes, those of included routers too (FastAPI nests them)."""
    for r in routes:
        inner = getattr(r, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes, prefix + r.include_context.prefix)
        elif isinstance(r, APIRoute):
            yield r

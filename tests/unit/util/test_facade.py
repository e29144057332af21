"""A forwarded facade method is its service's method: signature, docstring and call."""

import inspect

from sparkpipes import Engine
from sparkpipes.engine.pipelines import Pipelines
from sparkpipes.engine.tables import Tables
from sparkpipes.util.facade import forward


class _Service:
    def put(self, key: str, *, value: int = 1) -> tuple[str, int]:
        """Store ``value`` under ``key``."""
        return key, value


class _Facade:
    store = forward("_store", _Service.put)

    def __init__(self) -> None:
        self._store = _Service()


def test_the_call_reaches_the_service_with_every_argument():
    assert _Facade().store("k", value=3) == ("k", 3)
    assert _Facade().store("k") == ("k", 1)


def test_help_shows_the_services_signature_and_docstring():
    assert str(inspect.signature(_Facade.store)) == str(inspect.signature(_Service.put))
    assert _Facade.store.__doc__ == "Store ``value`` under ``key``."


def test_the_engines_forwarded_methods_are_its_services():
    assert inspect.signature(Engine.drop_table) == inspect.signature(Tables.drop)
    assert inspect.signature(Engine.alter_pipeline) == inspect.signature(Pipelines.alter)
    forwarded = [n for n, v in vars(Engine).items() if hasattr(v, "__wrapped__")]
    assert {"create_table_spec", "tables", "spec", "set_offsets", "start"} <= set(forwarded)
    for name in forwarded:
        assert inspect.getdoc(getattr(Engine, name)), f"Engine.{name} has no docstring"


def test_the_python_apis_keyword_names_stay():
    """Callers pass these by keyword (README's Python API): a service's own names must
    not leak through the facade."""
    assert list(inspect.signature(Engine.drop_file).parameters) == ["self", "name", "file"]
    params = list(inspect.signature(Engine.information_schema).parameters)
    assert params == ["self", "view", "cache"]
    assert list(inspect.signature(Engine.set_offsets).parameters) == ["self", "name", "offsets"]

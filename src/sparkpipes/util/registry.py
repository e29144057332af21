"""Name → factory registries with lazy imports and install hints.

A registry maps a user-facing name (``kafka``, ``json``) to ``"module:attribute"``; the
module is imported only when the name is first used, so a pipeline that reads files does
not import the Kafka client. Third-party plugins register through an entry-point group.
"""

from __future__ import annotations

import importlib
import os
import re
from importlib.metadata import entry_points
from typing import Any

from sparkpipes.errors import ConfigError


class Registry:
    def __init__(self, what: str, entry_point_group: str | None = None) -> None:
        self.what = what
        self.group = entry_point_group
        self._targets: dict[str, tuple[str, str | None]] = {}
        self._planned: dict[str, str] = {}
        self._loaded: dict[str, Any] = {}

    def register(self, name: str, target: str, *, install_hint: str | None = None) -> None:
        self._targets[name.lower()] = (target, install_hint)

    def plan(self, name: str, when: str) -> None:
        """A name the product will support later: a clear 'not supported yet' error now."""
        self._planned[name.lower()] = when

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._targets)

    def get(self, name: str) -> Any:
        key = name.lower()
        if key in self._loaded:
            return self._loaded[key]
        self._load_entry_points()
        if key not in self._targets:
            if key in self._planned:
                raise ConfigError(
                    f"{self.what} '{name}' is not supported yet ({self._planned[key]})"
                )
            raise ConfigError(
                f"unknown {self.what} '{name}' (available: {', '.join(self.names())})"
            )
        target, hint = self._targets[key]
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            extra = f"; install it with: {hint}" if hint else ""
            raise ConfigError(
                f"{self.what} '{name}' needs {e.name}, which is missing{extra}"
            ) from None
        obj = getattr(module, attr)
        self._loaded[key] = obj
        return obj

    def _load_entry_points(self) -> None:
        if not self.group:
            return
        for ep in entry_points(group=self.group):
            self._targets.setdefault(ep.name.lower(), (ep.value, None))


#: the environment variable naming the modules a user may name a plugin class of by its
#: Python path (comma-separated module prefixes: ``acme.plugins`` allows
#: ``acme.plugins.kafka:Factory``); unset, only built-ins and entry points resolve
PLUGIN_MODULES_ENV = "SPARKPIPES_PLUGIN_MODULES"


def allowed_plugin_modules() -> tuple[str, ...]:
    """The module prefixes of :data:`PLUGIN_MODULES_ENV` (read on each use)."""
    raw = os.environ.get(PLUGIN_MODULES_ENV, "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def _allowed(module_name: str) -> bool:
    return any(
        module_name == p or module_name.startswith(p + ".") for p in allowed_plugin_modules()
    )


def resolve_class(
    name: str,
    *,
    builtin: dict[str, str],
    group: str,
    base: type,
    what: str,
    hint: str,
) -> Any:
    """The class a user names by a well-known (often Java) class name: first ``builtin``
    (name → ``"module:Class"``), then the entry-point ``group``, then a Python path
    (``package.module:Class`` or ``package.module.Class``) of a ``base`` subclass — only
    of a module the operator allowed in :data:`PLUGIN_MODULES_ENV`: a user's class name
    never imports a module that is not allowed (importing runs its top-level code in the
    server). ConfigError naming ``what`` otherwise; ``hint`` says what a Python path must
    be."""
    target = builtin.get(name)
    if target is None:
        for ep in entry_points(group=group):
            if ep.name == name:
                target = ep.value
                break
    if target is None:
        path = _as_python_path(name)
        if path is not None and _allowed(path.partition(":")[0]):
            target = path
        else:
            why = (
                f"; Python module '{path.partition(':')[0]}' is not one the server's operator "
                f"allowed in {PLUGIN_MODULES_ENV}, so it is not imported"
                if path is not None
                else ""
            )
            raise ConfigError(
                f"unknown {what} '{name}': sparkpipes has {_known(builtin, group)}{why}. "
                f"A plugin is registered under the '{group}' entry-point group; the Python "
                f"path of {hint} (package.module:Class) is taken only of a module the "
                f"operator lists in {PLUGIN_MODULES_ENV} (comma-separated module prefixes)"
            )
    module_name, _, attr = target.partition(":")
    try:
        obj = getattr(_import(module_name, what, name), attr)
    except AttributeError:
        raise ConfigError(f"{what} '{name}': module '{module_name}' has no '{attr}'") from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ConfigError(f"{what} '{name}' is not {hint}")
    return obj


def _known(builtin: dict[str, str], group: str) -> str:
    known = sorted({*builtin, *(ep.name for ep in entry_points(group=group))})
    return ", ".join(known) or "none built in"


def _import(module_name: str, what: str, name: str) -> Any:
    """The module, or ConfigError: whatever its top-level code raises (SystemExit and
    KeyboardInterrupt among them) must not take the server down."""
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(
            f"{what} '{name}' needs Python module '{e.name}', which is missing"
        ) from None
    except BaseException as e:  # SystemExit, KeyboardInterrupt: not the server's end
        raise ConfigError(
            f"{what} '{name}': importing Python module '{module_name}' failed ({type(e).__name__})"
        ) from None


def _as_python_path(name: str) -> str | None:
    """``pkg.mod:Class`` as given, ``pkg.mod.Class`` as ``pkg.mod:Class``; None if
    ``name`` has neither shape. Imports nothing."""
    module_name, sep, attr = name.partition(":")
    if not sep:
        module_name, _, attr = name.rpartition(".")
    if not module_name or not attr or not _DOTTED.fullmatch(module_name):
        return None
    if not attr.isidentifier():
        return None
    return f"{module_name}:{attr}"


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")

"""Name → factory registries with lazy imports and install hints.

A registry maps a user-facing name (``kafka``, ``json``) to ``"module:attribute"``; the
module is imported only when the name is first used, so a pipeline that reads files does
not import the Kafka client. Third-party plugins register through an entry-point group.
"""

from __future__ import annotations

import importlib
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
    (``package.module:Class`` or ``package.module.Class``) of a ``base`` subclass.
    ConfigError naming ``what`` otherwise; ``hint`` says what a Python path must be."""
    target = builtin.get(name)
    if target is None:
        for ep in entry_points(group=group):
            if ep.name == name:
                target = ep.value
                break
    if target is None:
        target = name if ":" in name else _as_python_path(name)
    if target is None:
        known = sorted({*builtin, *(ep.name for ep in entry_points(group=group))})
        raise ConfigError(
            f"unknown {what} '{name}': sparkpipes has {', '.join(known) or 'none built in'}; "
            f"or give the Python path of {hint} (package.module:Class)"
        )
    module_name, _, attr = target.partition(":")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except ImportError as e:
        raise ConfigError(
            f"{what} '{name}' needs Python module '{e.name}', which is missing"
        ) from None
    except AttributeError:
        raise ConfigError(f"{what} '{name}': module '{module_name}' has no '{attr}'") from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ConfigError(f"{what} '{name}' is not {hint}")
    return obj


def _as_python_path(name: str) -> str | None:
    """``pkg.mod.Class`` as ``pkg.mod:Class`` if ``pkg.mod`` imports (a Java name of a
    class sparkpipes does not have fails to import and is reported as unknown)."""
    module_name, _, attr = name.rpartition(".")
    if not module_name or not attr:
        return None
    try:
        importlib.import_module(module_name)
    except ImportError:
        return None
    return f"{module_name}:{attr}"

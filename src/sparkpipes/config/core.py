"""The building blocks of typed configuration: secrets, unknown-key checks, JSON objects.

Credentials are wrapped in :class:`Secret`, whose ``str`` and ``repr`` never show the
value, so a secret cannot leak through a log line, an error message or a ``repr`` of a
config.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from sparkpipes.errors import ConfigError

REDACTED = "<redacted>"


class Secret:
    """A credential value. Shows as ``<redacted>``; ``reveal()`` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = str(value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r})"

    def __str__(self) -> str:
        return REDACTED

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("secret", self._value))

    def __reduce__(self):  # pickled to executors with the value
        return (Secret, (self._value,))


def reject_unknown(
    given: Iterable[str], allowed: Iterable[str], *, what: str, pipeline: str | None = None
) -> None:
    """Raise ConfigError naming the first unknown key and the closest allowed one."""
    allowed = sorted(set(allowed))
    for key in given:
        if key not in allowed:
            near = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else ""
            raise ConfigError(
                f"unknown {what} '{key}'{hint} (accepted: {', '.join(allowed)})",
                pipeline=pipeline,
            )


def parse_json_object(text: str | Mapping[str, Any] | None, *, what: str) -> dict[str, Any]:
    """Accept a JSON object given as text or as a mapping; anything else is a ConfigError."""
    if text is None or text == "":
        return {}
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def check_name(name: str, what: str) -> None:
    """Names of pipelines and tables: letters, digits and underscores."""
    if not isinstance(name, str) or not name or not name.replace("_", "a").isalnum():
        raise ConfigError(f"{what} must be letters, digits and underscores, got {name!r}")


def check_int(value: Any, key: str, low: int, *, pipeline: str | None = None) -> None:
    """An option that must be an integer ``>= low`` (``bool`` is not an integer here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{key} must be an integer >= {low}, got {value!r}", pipeline=pipeline)


def check_choice(value: Any, key: str, choices: Iterable[Any], *, pipeline: str | None = None):
    choices = tuple(choices)
    if value not in choices:
        shown = ", ".join(str(c) for c in choices if c is not None)
        raise ConfigError(f"{key} must be one of {shown}, got '{value}'", pipeline=pipeline)

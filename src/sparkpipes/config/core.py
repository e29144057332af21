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
#: the largest integer option (a signed 64-bit integer, SingleStore's BIGINT)
MAX_INT = 2**63 - 1


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
    """Accept a JSON object given as text or as a mapping; anything else is a ConfigError
    (NaN and Infinity too, which Python's json takes and JSON does not)."""
    if text is None or text == "":
        return {}
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = strict_json(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except ValueError as e:  # NaN, Infinity, 1e999, more digits than int() takes
        raise ConfigError(f"{what} is not valid JSON: {e}") from None
    except RecursionError:
        raise ConfigError(f"{what} is nested too deeply") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def strict_json(text: str | bytes) -> Any:
    """``json.loads`` without what JSON does not have: NaN and ±Infinity (Python takes
    them; the catalog's readers do not) and numbers out of a float's range. Raises
    ``json.JSONDecodeError`` or ``ValueError``."""
    return json.loads(text, parse_constant=_not_json, parse_float=_finite)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def _finite(number: str) -> float:
    value = float(number)
    if value in (float("inf"), float("-inf")):
        shown = number if len(number) <= 40 else number[:37] + "..."
        raise ValueError(f"number {shown} is out of range")
    return value


def check_name(name: str, what: str) -> None:
    """Names of pipelines and tables: letters, digits and underscores."""
    if not isinstance(name, str) or not name or not name.replace("_", "a").isalnum():
        raise ConfigError(f"{what} must be letters, digits and underscores, got {name!r}")


def check_int(value: Any, key: str, low: int, *, pipeline: str | None = None) -> None:
    """An option that must be an integer ``>= low`` (``bool`` is not an integer here) and
    fit a signed 64-bit integer: the engine divides, sleeps and hands offsets to clients
    with it, none of which take a larger one."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{key} must be an integer >= {low}, got {value!r}", pipeline=pipeline)
    if value > MAX_INT:
        raise ConfigError(f"{key} must be at most {MAX_INT}", pipeline=pipeline)


def check_flag(config: Mapping[str, Any], key: str, default: bool, label: str) -> bool:
    """An option that must be true or false (JSON's, not text), or ``default``."""
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f'{label} option "{key}" must be true or false')
    return value


def check_choice(value: Any, key: str, choices: Iterable[Any], *, pipeline: str | None = None):
    choices = tuple(choices)
    if value not in choices:
        shown = ", ".join(str(c) for c in choices if c is not None)
        raise ConfigError(f"{key} must be one of {shown}, got '{value}'", pipeline=pipeline)


#: columns a source that hands over record metadata fills from the record rather than its
#: payload (Pinot's ``metadata.populate``): the key, each header by name, and these
METADATA_PREFIXES = ("__key", "__header$", "__metadata$")
METADATA_COLUMNS = (
    "__key",
    "__metadata$offset",
    "__metadata$partition",
    "__metadata$recordTimestamp",
)


def is_metadata_column(name: str) -> bool:
    """Whether a table column of this name is filled from record metadata."""
    return name in METADATA_COLUMNS or name.startswith("__header$")

"""The shape of a connector config as users hand it over, before any key is read: a JSON
object (Kafka Connect's ``{"name", "config"}`` or the flat config), JSON text, or a Java
``.properties`` file; and the names of a connector's pipelines. Shared by the sink model,
source connectors made through the REST API and ``sparkpipes connect validate``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sparkpipes.config.core import reject_unknown
from sparkpipes.errors import ConfigError


def pipeline_name(connector: str, topic: str, many: bool) -> str:
    """A pipeline name (letters, digits, underscores) for a connector's topic: the
    connector's name, with the topic's when it has several."""
    base = f"{connector}__{topic}" if many else connector
    return re.sub(r"[^A-Za-z0-9_]", "_", base)


def parse_properties(text: str) -> dict[str, str]:
    """A Java ``.properties`` file: ``key=value`` or ``key: value`` lines, ``#``/``!``
    comments, a trailing backslash continuing a line."""
    out: dict[str, str] = {}
    pending = ""
    for number, line in enumerate(text.splitlines(), 1):
        line = pending + line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if not m:
            raise ConfigError(f"line {number} of the properties is not key=value: {line!r}")
        out[m.group(1)] = m.group(2)
    return out


def flat(text_or_obj: str | Mapping[str, Any], *, name: str | None = None) -> dict[str, Any]:
    """The flat config (values as given) of a JSON object, JSON text or ``.properties``
    text, as :func:`load` reads it: ``{"name", "config"}`` is unwrapped, the two names
    must agree. The shape only: no key is checked here."""
    obj: Any = text_or_obj
    if isinstance(obj, str):
        text = obj.strip()
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise ConfigError(f"connector config is not valid JSON: {e}") from None
        else:
            obj = parse_properties(text)
    if not isinstance(obj, Mapping):
        raise ConfigError("a connector config is a JSON object")
    if "config" in obj and isinstance(obj["config"], Mapping):
        reject_unknown(obj, ("name", "config"), what="connector request key")
        cfg = {**obj["config"]}
        cfg.setdefault("name", obj.get("name"))
        if obj.get("name") and cfg["name"] != obj["name"]:
            raise ConfigError(
                f"connector name '{obj['name']}' and config name '{cfg['name']}' differ"
            )
    else:
        cfg = dict(obj)
    if name is not None:
        if cfg.get("name") not in (None, name):
            raise ConfigError(f"connector name '{name}' and config name '{cfg['name']}' differ")
        cfg["name"] = name
    return cfg

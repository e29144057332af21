"""Kafka Connect's validation of a connector config (``PUT /connector-plugins/{class}/
config/validate``, ``sparkpipes connect validate``): every problem at once, each under the
key it names, in Connect's ``ConfigInfos`` shape, for sink and source classes alike — a
source config is checked as a KAFKACONNECT pipeline's CONFIG is (no I/O).

Values are shown as stored: secrets ``<redacted>``, a password inside a URL too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkpipes.config import REDACTED, urls
from sparkpipes.config.transforms import is_transform_key
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect import model
from sparkpipes.sources.connect import framework, resolve
from sparkpipes.sources.connect.source import KafkaConnectSource

#: a problem that names no key is shown under this one, as Connect does for class errors
WHOLE = "connector.class"


def problems(
    config: Mapping[str, Any], *, name: str = "validate"
) -> tuple[list[tuple[str | None, str]], dict[str, str]]:
    """``(problems as (key, message), keys accepted as not applicable → why)`` of a flat
    config; CREATE PIPELINE, ``POST /connectors`` and this agree on both."""
    cfg = dict(config)
    cls = str(cfg.get("connector.class", "")).strip()
    try:
        if cls in model.CLASS_NAMES or not cls:
            built = model.load(cfg, name=str(cfg.get("name") or name))
            return [], model.not_applicable(built.raw)
        source = KafkaConnectSource(str(cfg.get("name") or name), cfg, {})
        return [], dict(source.not_applicable)
    except framework.ConnectConfigError as e:
        found = list(e.problems)
    except ConfigError as e:
        found = [(framework.key_of(e.message, list(cfg)), e.message)]
    if cls in model.CLASS_NAMES or not cls:
        return found, model.not_applicable({k: str(v) for k, v in cfg.items()})
    accepted, _ = framework.sort(cfg, framework.SOURCE)
    try:
        accepted.update(resolve(cls).inapplicable(cfg))
    except ConfigError:
        pass
    return found, accepted


def _secret_keys(plugin: str) -> frozenset[str]:
    """The keys a source connector class declares secret (``aws.secret.key.id``…)."""
    if plugin in model.CLASS_NAMES or not plugin:
        return frozenset()
    try:
        return frozenset(resolve(plugin).secret_keys)
    except ConfigError:
        return frozenset()


def _shown(key: str, value: Any, secret: frozenset[str] = frozenset()) -> Any:
    if key in model.SECRET_KEYS or key in secret or framework.is_secret(key):
        return REDACTED
    return urls.redact(value) if isinstance(value, str) else value


def validate(plugin: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Connect's answer: ``name``, ``error_count``, ``groups`` and one ``configs`` entry
    per key given, its ``errors`` listing the problems that name it; ``not_applicable``
    (sparkpipes' addition) says why each key accepted without effect changes nothing."""
    cfg = {**config, "connector.class": plugin}
    found, accepted = problems(cfg, name=str(config.get("name") or "validate"))
    secret = _secret_keys(plugin.strip())
    by_key: dict[str, list[str]] = {}
    for key, message in found:
        # a transform's option not given (a required one) is shown under its own key,
        # as Connect lists every option of a configured transform
        own = key is not None and (key in cfg or is_transform_key(key))
        by_key.setdefault(key if own else WHOLE, []).append(message)
    configs = [
        {
            "definition": {"name": key, "group": "Common", "required": False},
            "value": {
                "name": key,
                "value": _shown(key, cfg.get(key), secret),
                "recommended_values": [],
                "errors": by_key.get(key, []),
                "visible": True,
            },
        }
        for key in dict.fromkeys([*cfg, *by_key])
    ]
    return {
        "name": plugin,
        "error_count": len(found),
        "groups": ["Common"],
        "configs": configs,
        "not_applicable": accepted,
    }

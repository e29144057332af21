"""The plugins Kafka Connect's REST API lists (``GET /connector-plugins``, KIP-769's
``?connectorsOnly=false``) and the keys each connector class takes (``GET
/connector-plugins/{class}/config``), from the registries that decide them: the sink's
keys (``model``), each source connector's ``config_keys``, Connect's worker keys
(``sources.connect.framework``) and the Single Message Transforms (``sources.connect.smt``).

Only the classes listed here are looked up: a class name is never imported from a Python
path given over HTTP. Answers hold key names and kinds, never a value.
"""

from __future__ import annotations

from typing import Any

from sparkpipes.errors import NotFoundError
from sparkpipes.frontends.connect import model
from sparkpipes.sources.connect import known, resolve, smt
from sparkpipes.sources.connect.base import COMMON_KEYS

#: the converters a sink connector reads records with (``value.converter``)
CONVERTERS = (model.JSON_CONVERTER, model.STRING_CONVERTER, *model.AVRO_CONVERTERS)


#: a plugin's ``version`` (Connect shows the plugin jar's; these are sparkpipes' own)
VERSION = "sparkpipes"


def _plugin(cls: str, kind: str) -> dict[str, str]:
    return {"class": cls, "type": kind, "version": VERSION}


def listed(connectors_only: bool = True) -> list[dict[str, str]]:
    """``GET /connector-plugins``: the sink and source connector classes; with
    ``connectors_only`` false also the transforms, predicates and converters understood,
    typed as Connect types them."""
    out = [_plugin(c, "sink") for c in model.CLASS_NAMES]
    out += [_plugin(c, "source") for c in known()]
    if not connectors_only:
        out += [_plugin(c, "transformation") for c in smt.TRANSFORMS]
        out += [_plugin(c, "predicate") for c in smt.PREDICATES]
        out += [_plugin(c, "converter") for c in CONVERTERS]
    return out


def _key(name: str, secret: bool, order: int) -> dict[str, Any]:
    """One ``ConfigKeyInfo`` as Connect answers it (types and defaults are the class's
    own documentation's business: shown as Connect shows an undocumented key)."""
    return {
        "name": name,
        "type": "PASSWORD" if secret else "STRING",
        "required": False,
        "default_value": None,
        "importance": "MEDIUM",
        "documentation": "",
        "group": "Common",
        "order_in_group": order,
        "width": "NONE",
        "display_name": name,
        "dependents": [],
    }


def definition(plugin: str) -> list[dict[str, Any]]:
    """``GET /connector-plugins/{class}/config``: the keys the class reads (a key with a
    variable part ends in ``.``: ``tableKey.``), sorted; NotFoundError, with Connect's
    words, for a class not listed by :func:`listed`."""
    if plugin in model.CLASS_NAMES:
        keys = model.keys_of(plugin)
        names = sorted(keys | (set(model.PREFIXES) if keys is model.KEYS else set()))
        secret = model.SECRET_KEYS
    elif plugin in known():
        cls = resolve(plugin)
        names = sorted(set(cls.config_keys) | set(cls.secret_keys) | COMMON_KEYS)
        secret = frozenset(cls.secret_keys)
    else:
        raise NotFoundError(f"Unknown plugin {plugin}.")
    return [_key(n, n in secret, i) for i, n in enumerate(names)]

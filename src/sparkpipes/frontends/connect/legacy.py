"""The SingleStore sink connector's keys as its other releases and deployments name them,
and what sparkpipes does with each (one registry, read by ``model``): the MemSQL
connector's ``memsql.*`` names and SingleStore Helios' ``connection.clientEndpoint`` are
**honoured** as the keys they are today; keys that only say how that connector sends its
``LOAD DATA`` stream are **accepted as not applicable** (their values still checked); keys
that would change what is loaded and are not implemented are **refused by name**.
Sources: ``MemSQLSinkConfig.java`` and ``SingleStoreSinkConfig.java`` of
memsql/singlestore-kafka-connector, and SingleStore Helios' connector properties.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkpipes.errors import ConfigError

#: a name of another release or deployment → the key it is here
ALIASES: dict[str, str] = {
    "memsql.loadDataCompression": "singlestore.loadDataCompression",
    "memsql.metadata.allow": "singlestore.metadata.allow",
    "memsql.metadata.table": "singlestore.metadata.table",
    "connection.clientEndpoint": "connection.ddlEndpoint",
}

_STREAM = (
    "how the SingleStore connector encodes its LOAD DATA stream; the rows are written "
    "here by the destination's own bulk path (COPY, multi-row INSERT, Delta files)"
)
#: accepted, kept and shown back, reported as changing nothing here
NOT_APPLICABLE: dict[str, str] = {
    "singlestore.loadDataCompression": _STREAM,
    "memsql.loadDataCompression": _STREAM,
    "memsql.loadDataFormat": _STREAM,
}
#: the values a not-applicable key may still have (as the connector checks them)
CHOICES: dict[str, tuple[str, ...]] = {
    "singlestore.loadDataCompression": ("GZip", "LZ4", "Skip"),
    "memsql.loadDataCompression": ("GZip", "LZ4", "Skip"),
    "memsql.loadDataFormat": ("CSV", "Avro"),
}
#: (key or prefix ending in '.') → why it is refused: each changes what is loaded
REFUSED: dict[str, str] = {
    "singlestore.filter": (
        "singlestore.filter (a SQL condition on the rows loaded) is not supported: load "
        "every record and filter with SQL, or use a Filter transform"
    ),
    "singlestore.columnToField.": (
        "singlestore.columnToField.<table>.<column> (a column from a nested record field) "
        "is not supported: load the fields by name (fields.whitelist) or flatten them with "
        "a Flatten transform"
    ),
    "singlestore.recordToTable.": (
        "singlestore.recordToTable.* (a table chosen by a field of each record) is not "
        "supported: a topic loads one table here (singlestore.tableName.<topic>, or a "
        "RegexRouter transform)"
    ),
}


def canonical(cfg: Mapping[str, str]) -> dict[str, str]:
    """``cfg`` with each alias read as its key today; a ConfigError naming both when a
    key is given under both names with different values, or a not-applicable key has a
    value its connector refuses."""
    out = dict(cfg)
    for old, new in ALIASES.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out and out[new].strip() != value.strip():
            raise ConfigError(f"{old} and {new} are the same setting with different values")
        out[new] = value
    for key, choices in CHOICES.items():
        value = cfg.get(key)
        if value is not None and value.strip().lower() not in {c.lower() for c in choices}:
            raise ConfigError(f"{key} must be one of {', '.join(choices)}, got '{value}'")
    return out


def refusal(key: str) -> str | None:
    """Why the SingleStore sink key ``key`` is refused, or None."""
    for name, why in REFUSED.items():
        if key == name or (name.endswith(".") and key.startswith(name)):
            return why
    return None


def not_applicable(key: str) -> str | None:
    """Why the SingleStore sink key ``key`` changes nothing here, or None."""
    return NOT_APPLICABLE.get(key)

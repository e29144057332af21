"""The SingleStore (and MemSQL) sink connector's destination keys: where its tables are
(``connection.ddlEndpoint`` + ``connection.database``, a MySQL-protocol database, or
``connection.url``, ``jdbc:postgresql://host:5432/db``), the ``tableKey.*`` keys of a
table it creates, its password, and the MySQL ``params.*`` it understands. ``model``
builds the connector around them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from sparkpipes.config import urls
from sparkpipes.config.core import REDACTED, Secret
from sparkpipes.errors import ConfigError

KEY_KINDS = ("PRIMARY", "UNIQUE", "SHARD", "COLUMNSTORE", "KEY")
#: MySQL connection parameters understood (``params.<name>``)
PARAMS = ("connectTimeout", "ssl", "useSSL")


@dataclass(frozen=True)
class Key:
    """``tableKey.<KIND>[.<name>]=col,col``: a key of a table the connector creates."""

    kind: str
    columns: tuple[str, ...]
    name: str | None = None


def keys(cfg: Mapping[str, str]) -> tuple[Key, ...]:
    out = []
    for k, v in cfg.items():
        if not k.startswith("tableKey."):
            continue
        kind, _, name = k[len("tableKey.") :].partition(".")
        if kind.upper() not in KEY_KINDS:
            raise ConfigError(
                f"connector config key '{k}': the key kind must be one of {', '.join(KEY_KINDS)}"
            )
        cols = tuple(c.strip().strip("`").strip() for c in v.split(",") if c.strip())
        if not cols:
            raise ConfigError(f"connector config key '{k}' names no column")
        out.append(Key(kind.upper(), cols, name or None))
    return tuple(out)


def password(cfg: Mapping[str, str], in_url: Secret | None) -> Secret | None:
    """The destination's password: ``connection.password``, or the one inside
    ``connection.url`` (as a JDBC driver takes it), not two different ones. A URL that
    shows it ``<redacted>`` (a config shown by ``GET …/config`` sent back) keeps the
    stored one (``PipelineSpec.keep_secrets``)."""
    given = cfg.get("connection.password")
    url = cfg.get("connection.url", "")
    raw = urls.password_of(in_url)
    if raw is not None:
        found = unquote_plus(raw) if urls.in_query(url) else unquote(raw)
        if given and given != found:
            raise ConfigError(
                "connection.url and connection.password give different passwords: give one"
            )
        return Secret(found)
    if given:
        return Secret(given)
    return Secret(REDACTED) if urls.is_redacted(url) else None


def destination(
    cfg: Mapping[str, str],
) -> tuple[str, str | None, int | None, str | None, str | None, str | None]:
    """``(kind, host, port, database, schema, user named by the URL)``."""
    endpoint, url = cfg.get("connection.ddlEndpoint"), cfg.get("connection.url")
    if endpoint and url:
        raise ConfigError(
            "give connection.ddlEndpoint (MySQL protocol) or connection.url, not both"
        )
    if endpoint:
        host, _, port = endpoint.strip().partition(":")
        database = cfg.get("connection.database", "").strip()
        if not database:
            raise ConfigError("connection.ddlEndpoint needs connection.database")
        return "mysql", host, _port(port, 3306, "connection.ddlEndpoint"), database, None, None
    if url:
        parts = urlsplit(url.strip().removeprefix("jdbc:"))
        if parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
            raise ConfigError(
                f"connection.url must be jdbc:postgresql://host:5432/database, got '{url}'"
            )
        params = dict(parse_qsl(parts.query))
        unknown = [p for p in params if p not in ("currentSchema", "user", "password")]
        if unknown:
            raise ConfigError(
                f"connection.url parameter '{unknown[0]}' is not understood "
                "(currentSchema, user, password)"
            )
        database = parts.path.lstrip("/") or cfg.get("connection.database", "")
        if not database:
            raise ConfigError(f"connection.url '{url}' names no database")
        try:
            port = parts.port or 5432
        except ValueError:
            raise ConfigError(f"connection.url '{url}' has an invalid port") from None
        user = params.get("user") or (unquote(parts.username) if parts.username else None)
        return "postgresql", parts.hostname, port, database, params.get("currentSchema"), user
    if cfg.get("connection.database"):
        raise ConfigError(
            "connection.database needs connection.ddlEndpoint (a MySQL-protocol database); "
            "without either the connector loads Delta tables of the warehouse"
        )
    return "delta", None, None, None, None, None


def _port(text: str, default: int, key: str) -> int:
    if not text:
        return default
    if not text.isdigit():
        raise ConfigError(f"{key} has an invalid port '{text}'")
    return int(text)

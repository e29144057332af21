"""Typed, frozen configuration built once at the boundary.

Everything a user hands in (Python keyword arguments, later SQL clauses and JSON configs)
becomes one of these objects before any work starts; unknown keys are rejected there with
a message naming the key and the keys that are accepted. Credentials are wrapped in
:class:`Secret`, whose ``str`` and ``repr`` never show the value, so a secret cannot leak
through a log line, an error message or a ``repr`` of a config.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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


OFFSET_POLICIES = ("earliest", "latest")
OUT_OF_RANGE_POLICIES = ("fail", "earliest")


@dataclass(frozen=True)
class CsvOptions:
    """``FIELDS TERMINATED BY … ENCLOSED BY … ESCAPED BY …`` and header handling."""

    delimiter: str = ","
    quote: str | None = '"'
    escape: str | None = None
    header: bool = False


@dataclass(frozen=True)
class FieldMapping:
    """``column <- path``: where in the record a table column comes from.

    ``path`` is a tuple of keys into nested JSON objects (``a::b`` becomes ``("a", "b")``).
    A ``column`` starting with ``@`` is a variable: loaded for ``SET`` expressions only.
    For CSV the mappings list the fields in order. Given any mapping, table columns it
    does not name are not loaded (NULL unless a ``SET`` fills them).
    """

    column: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class PipelineSpec:
    """Everything that defines a pipeline, frozen. Stored in the catalog as JSON.

    ``credentials`` is kept apart from ``config`` so that it can be left out of every
    view of the definition.
    """

    name: str
    source: str
    location: str
    table: str
    format: str = "json"
    config: Mapping[str, Any] = field(default_factory=dict)
    credentials: Mapping[str, Secret] = field(default_factory=dict)
    mapping: tuple[FieldMapping, ...] = ()
    csv: CsvOptions = CsvOptions()
    batch_interval_ms: int = 2500
    max_partitions_per_batch: int | None = None
    max_offsets_per_batch_partition: int = 1_000_000
    max_retries: int = 4
    skip_parser_errors: bool = False
    offsets: str = "earliest"
    on_offset_out_of_range: str = "fail"
    provenance: bool = False
    fetch_timeout_ms: int = 200
    on_duplicate_key: str | None = None  # None (append) | "replace" | "ignore"
    assignments: tuple[tuple[str, str], ...] = ()
    where: str | None = None
    skip_lines: int = 0

    def __post_init__(self) -> None:
        check_name(self.name, "pipeline name")
        check_name(self.table, "table name")
        if self.offsets not in OFFSET_POLICIES:
            raise ConfigError(
                f"offsets must be one of {', '.join(OFFSET_POLICIES)}, got '{self.offsets}'",
                pipeline=self.name,
            )
        if self.on_offset_out_of_range not in OUT_OF_RANGE_POLICIES:
            raise ConfigError(
                "on_offset_out_of_range must be one of "
                f"{', '.join(OUT_OF_RANGE_POLICIES)}, got '{self.on_offset_out_of_range}'",
                pipeline=self.name,
            )
        for key, low in (
            ("skip_lines", 0),
            ("batch_interval_ms", 0),
            ("max_offsets_per_batch_partition", 1),
            ("max_retries", 0),
            ("fetch_timeout_ms", 1),
        ):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigError(
                    f"{key} must be an integer >= {low}, got {value!r}", pipeline=self.name
                )
        if self.on_duplicate_key not in (None, "replace", "ignore"):
            raise ConfigError(
                f"on_duplicate_key must be replace or ignore, got '{self.on_duplicate_key}'",
                pipeline=self.name,
            )
        mpb = self.max_partitions_per_batch
        if mpb is not None and (not isinstance(mpb, int) or mpb < 1):
            raise ConfigError(
                f"max_partitions_per_batch must be a positive integer, got {mpb!r}",
                pipeline=self.name,
            )

    @classmethod
    def build(cls, **kwargs: Any) -> PipelineSpec:
        """Build from loose keyword arguments, rejecting unknown keys by name."""
        names = {f.name for f in dataclasses.fields(cls)}
        reject_unknown(kwargs, names, what="pipeline option", pipeline=kwargs.get("name"))
        kw = dict(kwargs)
        kw["config"] = parse_json_object(kw.get("config"), what="CONFIG")
        creds = parse_json_object(
            {k: v.reveal() if isinstance(v, Secret) else v for k, v in kw["credentials"].items()}
            if isinstance(kw.get("credentials"), Mapping)
            else kw.get("credentials"),
            what="CREDENTIALS",
        )
        kw["credentials"] = {k: Secret(v) for k, v in creds.items()}
        kw["mapping"] = tuple(_mapping(m) for m in kw.get("mapping") or ())
        kw["assignments"] = tuple((str(c), str(e)) for c, e in kw.get("assignments") or ())
        csv = kw.get("csv")
        if isinstance(csv, Mapping):
            reject_unknown(csv, {f.name for f in dataclasses.fields(CsvOptions)}, what="csv option")
            kw["csv"] = CsvOptions(**csv)
        kw["format"] = str(kw.get("format", "json")).lower()
        kw["source"] = str(kw.get("source", "")).lower()
        return cls(**kw)

    def to_json(self, *, with_credentials: bool = False) -> dict[str, Any]:
        """The definition as JSON. Credentials only when asked, for the catalog's own column."""
        d = dataclasses.asdict(self)
        d["mapping"] = [{"column": m.column, "path": list(m.path)} for m in self.mapping]
        d["credentials"] = (
            {k: v.reveal() for k, v in self.credentials.items()}
            if with_credentials
            else {k: REDACTED for k in self.credentials}
        )
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any], credentials: Mapping[str, Any] | None = None):
        kw = dict(d)
        kw["credentials"] = dict(credentials or {})
        kw["mapping"] = [(m["column"], tuple(m["path"])) for m in d.get("mapping", [])]
        return cls.build(**kw)

    def replace(self, **changes: Any) -> PipelineSpec:
        return dataclasses.replace(self, **changes)


def _mapping(m: Any) -> FieldMapping:
    if isinstance(m, FieldMapping):
        return m
    column, path = m
    if isinstance(path, str):
        if path.strip() in ("", "%"):
            path = () if path.strip() == "%" else None
        else:
            path = tuple(p for p in path.split("::") if p and p != "%")
    if path is None:
        raise ConfigError(f"field mapping for column '{column}' has an empty path")
    return FieldMapping(str(column), tuple(str(p) for p in path))


def check_name(name: str, what: str) -> None:
    """Names of pipelines and tables: letters, digits and underscores."""
    if not isinstance(name, str) or not name or not name.replace("_", "a").isalnum():
        raise ConfigError(f"{what} must be letters, digits and underscores, got {name!r}")

"""The Python front end: ``Engine.create_pipeline(name, **options)`` ↔ ``PipelineSpec``.

The options are flat (``source="kafka", location=…, table=…, batch_interval_ms=…``), as
the README documents them. :func:`parts_of` lowers them into the nested spec's parts
(``config.spec.from_kwargs`` makes the spec of them), rejecting an unknown option by name
with the closest known one; :func:`to_kwargs` is the way back, so
``from_kwargs(to_kwargs(spec)) == spec``. Version-1 catalog definitions were
these flat options, so :func:`upgrade_v1` is the catalog's migration of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.config.core import ConfigError, Secret, parse_json_object, reject_unknown
from sparkpipes.config.parts import (
    BATCH_OPTION_NAMES,
    WRITE_MODES,
    BatchSpec,
    CsvOptions,
    FieldMapping,
    FormatSpec,
    RecordProgram,
    SinkSpec,
    SourceSpec,
    TransformSpec,
)

if TYPE_CHECKING:
    from sparkpipes.config.spec import PipelineSpec

#: flat option → (component, field); batch options come from BATCH_OPTION_NAMES
_FIELDS: dict[str, tuple[str, str]] = {
    "source": ("source", "kind"),
    "location": ("source", "location"),
    "config": ("source", "config"),
    "credentials": ("source", "credentials"),
    "offsets": ("source", "start"),
    "on_offset_out_of_range": ("source", "on_out_of_range"),
    "source_hints": ("source", "hints"),
    "format": ("format", "kind"),
    "mapping": ("format", "mapping"),
    "csv": ("format", "csv"),
    "skip_lines": ("format", "skip_lines"),
    "skip_parser_errors": ("format", "skip_parser_errors"),
    "skip_constraint_errors": ("format", "skip_constraint_errors"),
    "text_values": ("format", "text_values"),
    "program": ("format", "program"),
    "format_options": ("format", "options"),
    "assignments": ("transform", "assignments"),
    "where": ("transform", "where"),
    "table": ("sink", "table"),
    "sink": ("sink", "kind"),
    "on_duplicate_key": ("sink", "write"),
    "provenance": ("sink", "provenance"),
    "sink_config": ("sink", "config"),
    "sink_credentials": ("sink", "credentials"),
    "on_duplicate_key_update": ("sink", "update"),
    **{flat: ("batch", f) for f, flat in BATCH_OPTION_NAMES.items()},
}
OPTIONS = ("name", *_FIELDS)


def parts_of(
    kwargs: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Lower flat options into a spec. ``defaults`` (flat names, the engine's variables)
    fill the batch options a caller left out or gave as None."""
    name = kwargs.get("name")
    reject_unknown(kwargs, OPTIONS, what="pipeline option", pipeline=name)
    parts: dict[str, dict[str, Any]] = {k: {} for k in ("source", "format", "transform", "sink")}
    parts["batch"] = {}
    given = dict(defaults or {})
    given.update({k: v for k, v in kwargs.items() if v is not None or k not in given})
    for flat, value in given.items():
        if flat == "name" or flat not in _FIELDS:
            continue
        part, fld = _FIELDS[flat]
        if value is None and part == "batch" and fld != "max_partitions":
            continue  # not given: the default
        parts[part][fld] = value
    src = parts["source"]
    src["kind"] = str(src.get("kind", "")).lower()
    src.setdefault("location", "")
    src["config"] = parse_json_object(src.get("config"), what="CONFIG")
    src["credentials"] = _secrets(src.get("credentials"))
    src["hints"] = tuple(src.get("hints") or ())
    fmt = parts["format"]
    fmt["kind"] = str(fmt.get("kind") or "json").lower()
    fmt["mapping"] = tuple(_mapping(m) for m in fmt.get("mapping") or ())
    fmt["options"] = {str(k): str(v) for k, v in (fmt.get("options") or {}).items()}
    program = fmt.get("program")
    if isinstance(program, Mapping):
        reject_unknown(
            program, [f.name for f in dataclasses.fields(RecordProgram)], what="program option"
        )
        fmt["program"] = RecordProgram(**program)
    elif isinstance(program, list | tuple):
        fmt["program"] = RecordProgram(*program)
    csv = fmt.get("csv")
    if isinstance(csv, Mapping):
        reject_unknown(csv, [f.name for f in dataclasses.fields(CsvOptions)], what="csv option")
        fmt["csv"] = CsvOptions(**csv)
    elif csv is None:
        fmt.pop("csv", None)
    tr = parts["transform"]
    tr["assignments"] = tuple((str(c), str(e)) for c, e in tr.get("assignments") or ())
    sink = parts["sink"]
    if "table" not in sink:
        raise ConfigError("a pipeline needs a table (table=…)", pipeline=name)
    sink["kind"] = str(sink.get("kind") or "delta").lower()
    sink["config"] = dict(sink.get("config") or {})
    sink["credentials"] = _secrets(sink.get("credentials"))
    sink["update"] = tuple((str(c), str(e)) for c, e in sink.get("update") or ())
    write = sink.get("write")
    sink["write"] = "append" if write is None else str(write).lower()
    if sink["write"] not in WRITE_MODES or (sink["write"] == "append" and write is not None):
        raise ConfigError(
            f"on_duplicate_key must be replace, ignore, skip_duplicates or update, got '{write}'",
            pipeline=name,
        )
    return dict(
        name=name,
        source=SourceSpec(**src),
        format=FormatSpec(**fmt),
        transform=TransformSpec(**tr),
        sink=SinkSpec(**sink),
        batch=BatchSpec(**parts["batch"]),
    )


def to_kwargs(spec: PipelineSpec) -> dict[str, Any]:
    """The flat options of a spec (every option, defaults included)."""
    out: dict[str, Any] = {"name": spec.name}
    for flat, (part, fld) in _FIELDS.items():
        out[flat] = getattr(getattr(spec, part), fld)
    out["on_duplicate_key"] = None if spec.sink.write == "append" else spec.sink.write
    out["config"] = dict(spec.source.config)
    out["credentials"] = dict(spec.source.credentials)
    out["sink_config"] = dict(spec.sink.config)
    out["sink_credentials"] = dict(spec.sink.credentials)
    out["source_hints"] = list(spec.source.hints)
    out["mapping"] = list(spec.format.mapping)
    out["csv"] = dataclasses.asdict(spec.format.csv)
    out["format_options"] = dict(spec.format.options)
    out["assignments"] = [tuple(a) for a in spec.transform.assignments]
    out["on_duplicate_key_update"] = [tuple(a) for a in spec.sink.update]
    return out


def upgrade_v1(d: Mapping[str, Any]) -> dict[str, Any]:
    """A version-1 stored definition (flat options, credentials redacted) as options."""
    out = {k: v for k, v in d.items() if k in OPTIONS and k != "credentials"}
    out["mapping"] = [(m["column"], tuple(m["path"])) for m in d.get("mapping", [])]
    return out


def _secrets(given: Any) -> dict[str, Secret]:
    if isinstance(given, Mapping):
        given = {k: v.reveal() if isinstance(v, Secret) else v for k, v in given.items()}
    return {k: Secret(v) for k, v in parse_json_object(given, what="CREDENTIALS").items()}


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

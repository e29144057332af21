"""``PipelineSpec``: one typed, frozen definition of a pipeline, whatever front end wrote it.

A spec nests one config per component, in the order a record flows through them::

    PipelineSpec(name,
                 source=SourceSpec(kind, location, config, credentials, start, on_out_of_range),
                 format=FormatSpec(kind, mapping, csv, skip_lines, skip_parser_errors),
                 transform=TransformSpec(assignments, where),
                 sink=SinkSpec(kind, table, write, provenance),
                 batch=BatchSpec(interval_ms, max_partitions, max_offsets_per_partition, …))

Each component spec checks what is the same for every plugin (types, ranges, policies);
the plugin named by ``kind`` validates its own options (a Kafka source its client keys, a
CSV decoder its delimiter) when the engine assembles the pipeline, before anything runs.

The components live in ``config.parts``. Front ends (SQL DDL, Pinot table configs, Kafka
Connect properties: ``sparkpipes.frontends``; the Python API's keyword arguments:
``config.kwargs``) lower into a spec; ``SHOW CREATE
PIPELINE`` is that lowering run backwards. The catalog stores :meth:`PipelineSpec.to_json`
(credentials apart, in their own encrypted-at-rest column).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import (
    REDACTED,
    Secret,
    check_name,
    reject_unknown,
)
from sparkpipes.config.kwargs import parts_of, upgrade_v1
from sparkpipes.config.kwargs import to_kwargs as _to_kwargs
from sparkpipes.config.parts import (
    _COMPONENTS,
    _FIELD_NAMES,
    _MAY_CHANGE,
    _MAY_CHANGE_OPTIONS,
    _OWNED,
    _SECRET_PARTS,
    SPEC_VERSION,
    BatchSpec,
    CsvOptions,
    FieldMapping,
    FormatSpec,
    FunctionCall,
    NestedSpec,
    RecordProgram,
    SinkSpec,
    SourceSpec,
    TransformSpec,
)
from sparkpipes.config.transforms import ConnectRecords
from sparkpipes.errors import ConfigError


@dataclass(frozen=True)
class PipelineSpec:
    """Everything that defines a pipeline, frozen; see the module docstring."""

    name: str
    source: SourceSpec
    sink: SinkSpec
    format: FormatSpec = FormatSpec()
    transform: TransformSpec = TransformSpec()
    batch: BatchSpec = BatchSpec()

    def __post_init__(self) -> None:
        check_name(self.name, "pipeline name")
        self.source.check(self.name)
        self.format.check(self.name)
        self.sink.check(self.name)
        self.batch.check(self.name)

    # -- the Python front end -----------------------------------------------------------
    @classmethod
    def build(cls, **kwargs: Any) -> PipelineSpec:
        """From the Python API's flat keyword arguments (``Engine.create_pipeline``)."""
        return from_kwargs(kwargs)

    def to_kwargs(self) -> dict[str, Any]:
        """The Python API's keyword arguments that build this spec (credentials as
        Secrets)."""
        return _to_kwargs(self)

    # -- storage ------------------------------------------------------------------------
    def to_json(self, *, with_credentials: bool = False) -> dict[str, Any]:
        """The definition as JSON; credentials redacted unless asked for (the catalog
        keeps them in their own column)."""
        d: dict[str, Any] = {"version": SPEC_VERSION, "name": self.name}
        for part in _COMPONENTS:
            d[part] = dataclasses.asdict(getattr(self, part))
        d["format"]["mapping"] = [
            {"column": m.column, "path": list(m.path)}
            | ({} if m.on_missing == "null" else {"on_missing": m.on_missing})
            | ({"default": m.default} if m.on_missing == "default" else {})
            for m in self.format.mapping
        ]
        if self.format.connect is None:
            del d["format"]["connect"]  # as stored before it existed
        elif self.format.connect.rows is None:
            del d["format"]["connect"]["rows"]  # as stored before it existed
        if self.format.options:
            d["format"]["options"] = dict(self.format.options)
        else:
            del d["format"]["options"]  # as stored before it existed
        d["transform"]["assignments"] = [list(a) for a in self.transform.assignments]
        if self.transform.functions:
            d["transform"]["functions"] = [
                {"column": f.column, "function": f.function, "args": list(f.args)}
                for f in self.transform.functions
            ]
        else:
            del d["transform"]["functions"]  # as stored before they existed
        if self.transform.rejects:
            d["transform"]["rejects"] = [list(r) for r in self.transform.rejects]
        else:
            del d["transform"]["rejects"]  # as stored before they existed
        if self.source.hints:
            d["source"]["hints"] = list(self.source.hints)
        else:
            del d["source"]["hints"]  # as stored before they existed
        d["format"]["credentials"] = (
            {k: v.reveal() for k, v in self.format.credentials.items()}
            if with_credentials
            else {k: REDACTED for k in self.format.credentials}
        )
        if not self.format.credentials:
            del d["format"]["credentials"]  # as stored before they existed
        for part in ("source", "sink"):
            creds = getattr(self, part).credentials
            d[part]["config"] = dict(getattr(self, part).config)
            d[part]["credentials"] = (
                {k: v.reveal() for k, v in creds.items()}
                if with_credentials
                else {k: REDACTED for k in creds}
            )
        if not self.sink.config and not self.sink.credentials:
            del d["sink"]["config"], d["sink"]["credentials"]  # as stored before they existed
        if not self.sink.update:
            del d["sink"]["update"]
        return d

    @classmethod
    def from_json(
        cls, d: Mapping[str, Any], credentials: Mapping[str, Any] | None = None
    ) -> PipelineSpec:
        """From :meth:`to_json` (any stored version); ``credentials`` in clear, from the
        catalog's credentials column."""
        if d.get("version") != SPEC_VERSION:
            return from_kwargs({**upgrade_v1(d), "credentials": dict(credentials or {})})
        name = d.get("name")
        reject_unknown(d, ["version", "name", *_COMPONENTS], what="definition key", pipeline=name)
        parts: dict[str, Any] = {}
        for part, kind in _COMPONENTS.items():
            given = dict(d.get(part) or {})
            reject_unknown(given, [f.name for f in dataclasses.fields(kind)], what=f"{part} option")
            parts[part] = given
        src = parts["source"]
        given = dict(credentials or {})
        fmt = parts["format"]
        src["credentials"] = {
            k: Secret(v)
            for k, v in given.items()
            if not any(k.startswith(p) for p in _OWNED.values())
        }
        for part, prefix in _OWNED.items():
            parts[part]["credentials"] = {
                k[len(prefix) :]: Secret(v) for k, v in given.items() if k.startswith(prefix)
            }
        fmt["mapping"] = tuple(
            FieldMapping(
                str(m["column"]),
                tuple(m["path"]),
                m.get("on_missing", "null"),
                m.get("default"),
            )
            for m in fmt.get("mapping", ())
        )
        if "csv" in fmt:
            fmt["csv"] = CsvOptions(**fmt["csv"])
        if fmt.get("program"):
            fmt["program"] = RecordProgram(**fmt["program"])
        if fmt.get("nested"):
            n = fmt["nested"]
            fmt["nested"] = NestedSpec(
                tuple(n.get("unnest", ())),
                n.get("delimiter", "."),
                n.get("collections", "NON_PRIMITIVE"),
                tuple((str(p), str(r)) for p, r in n.get("renames", ())),
            )
        if fmt.get("connect"):
            fmt["connect"] = ConnectRecords.from_json(fmt["connect"])
        tr = parts["transform"]
        tr["assignments"] = tuple((str(c), str(e)) for c, e in tr.get("assignments", ()))
        tr["functions"] = tuple(
            FunctionCall(str(f["column"]), str(f["function"]), tuple(str(a) for a in f["args"]))
            for f in tr.get("functions", ())
        )
        tr["rejects"] = tuple((str(c), str(r)) for c, r in tr.get("rejects", ()))
        sink = parts["sink"]
        sink["update"] = tuple((str(c), str(e)) for c, e in sink.get("update", ()))
        return cls(name=name, **{k: _COMPONENTS[k](**v) for k, v in parts.items()})

    def replace(self, **changes: Any) -> PipelineSpec:
        """A copy with whole components (or the name) replaced."""
        return dataclasses.replace(self, **changes)

    # -- secrets given back as shown -------------------------------------------------------
    def redacted_secrets(self) -> list[tuple[str, str]]:
        """``(component, credential key)`` of every secret this spec shows as
        ``<redacted>`` without holding its value: a credential given as ``<redacted>``, a
        URL whose password is ``<redacted>`` and not among the credentials. That is how a
        statement printed by SHOW CREATE PIPELINE (or a config shown by an API) comes
        back."""
        out: list[tuple[str, str]] = []
        for part in _SECRET_PARTS:
            comp = getattr(self, part)
            for key, value in comp.credentials.items():
                if isinstance(value, Secret) and value.reveal() == REDACTED:
                    out.append((part, key))
            for option in comp.redacted_urls():
                if urls.secret_key(option) not in comp.credentials:
                    out.append((part, urls.secret_key(option)))
        return out

    def keep_secrets(self, stored: PipelineSpec | None) -> PipelineSpec:
        """This spec with each secret it shows as ``<redacted>`` (:meth:`redacted_secrets`)
        taken from ``stored``, the pipeline's stored spec: so running SHOW CREATE PIPELINE's
        text again (CREATE OR REPLACE) keeps the sealed values instead of storing the word
        ``<redacted>``. A secret ``stored`` does not hold (or no ``stored``) is a
        ConfigError naming it.

        A secret is kept only where it would be sent where it was: every field of its
        component but those of ``_MAY_CHANGE`` (the source's kind, location and every
        CONFIG option; the decoder's kind and options, but those that only decide how
        values are read, ``_MAY_CHANGE_OPTIONS``; the sink's kind and options) must
        be as stored, else a ConfigError names the secrets and what changed, and asks for
        the values again. The batch options, the mapping, SET / WHERE, the table and the
        other components may change."""
        creds = {p: dict(getattr(self, p).credentials) for p in _SECRET_PARTS}
        missing: list[str] = []
        #: per component: (its secrets that would go elsewhere, what changed)
        moved: dict[str, tuple[list[str], list[str]]] = {}
        for part, key in self.redacted_secrets():
            kept = getattr(stored, part).credentials.get(key) if stored is not None else None
            if kept is None or kept.reveal() == REDACTED:
                missing.append(_secret_named(part, key))
                continue
            changed = _moved(part, getattr(self, part), getattr(stored, part))
            if changed:
                moved.setdefault(part, ([], changed))[0].append(_secret_named(part, key))
            else:
                creds[part][key] = kept
        if missing:
            why = (
                f"pipeline '{self.name}' has no stored value to keep"
                if stored is not None
                else "only CREATE OR REPLACE of an existing pipeline keeps its stored value"
            )
            raise ConfigError(
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} '{REDACTED}', "
                f"as SHOW CREATE PIPELINE shows secrets: give the value ({why})",
                pipeline=self.name,
            )
        if moved:
            why = [
                f"{', '.join(secrets)} {'is' if len(secrets) == 1 else 'are'} '{REDACTED}' "
                f"but {', '.join(changed)} {'differs' if len(changed) == 1 else 'differ'} "
                "from the stored definition"
                for secrets, changed in moved.values()
            ]
            raise ConfigError(
                f"{'; '.join(why)}: a stored secret is kept only while everything that "
                "decides where it is sent stays the same; give the value again to send it "
                "to the new place",
                pipeline=self.name,
            )
        changed = {
            p: dataclasses.replace(getattr(self, p), credentials=c)
            for p, c in creds.items()
            if c != dict(getattr(self, p).credentials)
        }
        return self.replace(**changed) if changed else self

    # -- short names used everywhere ------------------------------------------------------
    @property
    def table(self) -> str:
        return self.sink.table

    @property
    def credentials(self) -> Mapping[str, Secret]:
        """Every secret of the pipeline, as the catalog stores them: the source's, the
        sink's under ``sink.``-prefixed keys and the decoder's under ``format.``."""
        owned = {
            prefix + k: v
            for part, prefix in _OWNED.items()
            for k, v in getattr(self, part).credentials.items()
        }
        return {**self.source.credentials, **owned} if owned else self.source.credentials

    @property
    def mapping(self) -> tuple[FieldMapping, ...]:
        return self.format.mapping


def _secret_named(part: str, key: str) -> str:
    """How an error names secret ``key`` of component ``part`` (never its value)."""
    option = urls.option_of(key)
    if option is None:
        return f"credential '{key}'" if part == "source" else f"{part} credential '{key}'"
    if part == "source" and option == urls.LOCATION:
        return "the password in the location"
    return f"the password in {_SECRET_PARTS[part]} '{option}'"


def _moved(part: str, new: Any, stored: Any) -> list[str]:
    """What of component ``part`` that decides where its secrets are sent differs between
    ``new`` and ``stored``: every field but its credentials and ``_MAY_CHANGE``, options
    one by one (a CONFIG key the stored component keeps as a secret, given again in
    clear, is a secret, not a setting). Named, never with their values."""
    out: list[str] = []
    for f in dataclasses.fields(new):
        name = f.name
        if name == "credentials" or name in _MAY_CHANGE[part]:
            continue
        a, b = getattr(new, name), getattr(stored, name)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            secret = set(stored.credentials)
            free = _MAY_CHANGE_OPTIONS.get(part, frozenset())
            keys = sorted((set(a) | set(b)) - secret - free, key=str)
            out += [
                f"{_SECRET_PARTS[part]} '{k}'"
                for k in keys
                if k not in a or k not in b or not _same(a[k], b[k])
            ]
        elif name == "kind":
            if str(a).lower() != str(b).lower():
                out.append(_FIELD_NAMES[part]["kind"])
        elif not _same(a, b):
            out.append(_FIELD_NAMES[part].get(name, f"{part} setting '{name}'"))
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal as the stored JSON would hold them (``1`` and ``True`` differ)."""
    if isinstance(a, Mapping | list | tuple) or isinstance(b, Mapping | list | tuple):
        return json.dumps(a, sort_keys=True, default=str) == json.dumps(
            b, sort_keys=True, default=str
        )
    return type(a) is type(b) and a == b


def lift_stored_urls(definition: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A stored definition (:meth:`PipelineSpec.to_json`) written before passwords inside
    URLs were taken out: the definition with them ``<redacted>``, and the passwords under
    the catalog's credential keys (``url:location``, ``format.url:<option>`` …). For the
    catalog's upgrade; works on the JSON, so a definition its plugins would refuse is
    sealed all the same."""
    d = json.loads(json.dumps(definition))
    found: dict[str, str] = {}
    for part, prefix in (("source", ""), *_OWNED.items()):
        comp = d.get(part)
        if not isinstance(comp, dict):
            continue
        lifted: dict[str, Secret] = {}
        field_ = "options" if part == "format" else "config"
        if isinstance(comp.get(field_), dict):
            comp[field_] = urls.lift(comp[field_], lifted, what=f"{part} option")
        if part == "source" and isinstance(comp.get("location"), str):
            kafka = str(comp.get("kind", "")).lower() == "kafka"
            shown, password = urls.split(comp["location"], bare=kafka)
            if password is not None:
                comp["location"] = shown
                lifted[urls.secret_key(urls.LOCATION)] = Secret(password)
        if lifted:
            comp["credentials"] = {
                **(comp.get("credentials") or {}),
                **dict.fromkeys(lifted, REDACTED),
            }
            found.update({prefix + k: v.reveal() for k, v in lifted.items()})
    return d, found


def from_kwargs(
    kwargs: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> PipelineSpec:
    """A spec from the Python API's flat options (``config.kwargs``); ``defaults`` (flat
    names, the engine's variables) fill the batch options a caller left out or gave as
    None."""
    return PipelineSpec(**parts_of(kwargs, defaults))

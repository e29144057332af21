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

Front ends (Python keyword arguments, SQL DDL, later Pinot table configs and Kafka
Connect properties) lower into a spec in ``sparkpipes.config.lower``; ``SHOW CREATE
PIPELINE`` is that lowering run backwards. The catalog stores :meth:`PipelineSpec.to_json`
(credentials apart, in their own encrypted-at-rest column).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import (
    REDACTED,
    Secret,
    check_choice,
    check_int,
    check_name,
    reject_unknown,
)
from sparkpipes.errors import ConfigError

#: the version of :meth:`PipelineSpec.to_json`; the catalog migrates older definitions
SPEC_VERSION = 2

START_POLICIES = ("earliest", "latest")
#: a start policy ``at:<epoch ms>``: each partition's first record at or after that time
START_AT = "at:"
OUT_OF_RANGE_POLICIES = ("fail", "earliest")
WRITE_MODES = ("append", "replace", "ignore")
FORMAT_OPTIONS = (
    "schema.registry.url",
    "schema",
    "schema.registry.ssl.ca.location",
    "schema.registry.ssl.certificate.location",
    "schema.registry.ssl.key.location",
    "decoder.class",
    "decoder.topic",
)
#: the props of a stream plugin's decoder (``FORMAT`` kind ``stream``)
FORMAT_PROP_PREFIX = "decoder.prop."
#: the decoder's secrets (``FormatSpec.credentials``)
FORMAT_SECRETS = ("schema.registry.basic.auth.user.info",)


def _set_lifted(spec: Any, name: str, lifted: Any, creds: dict[str, Secret]) -> None:
    """Set a frozen spec's URL-bearing field and its credentials, where passwords were
    lifted out of them (each lifted password is a credential it did not have)."""
    if creds != dict(spec.credentials):
        object.__setattr__(spec, name, lifted)
        object.__setattr__(spec, "credentials", creds)


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

    ``path`` is a tuple of keys into nested JSON objects (``a::b`` becomes ``("a", "b")``;
    ``()`` is the whole record). A ``column`` starting with ``@`` is a variable: loaded for
    ``SET`` expressions only. For CSV the mappings list the fields in order. Given any
    mapping, table columns it does not name are not loaded (NULL unless a ``SET`` fills
    them).
    """

    column: str
    path: tuple[str, ...]

    @property
    def is_variable(self) -> bool:
        return self.column.startswith("@")


@dataclass(frozen=True)
class SourceSpec:
    """Where records come from. ``kind`` names a source plugin (``kafka``, ``fs``);
    ``config`` and ``credentials`` are its options, checked by that plugin. ``start`` is
    where a new pipeline's partitions begin; ``on_out_of_range`` what a batch does when
    its resume offset no longer exists (``fail``, or resume at ``earliest`` and record
    the gap).

    A password inside the location or a CONFIG URL is taken out when the spec is made
    (``config.urls``): the field keeps the URL with ``<redacted>`` in its place and the
    password is a credential, ``url:location`` or ``url:<option>``."""

    kind: str
    location: str
    config: Mapping[str, Any] = field(default_factory=dict)
    credentials: Mapping[str, Secret] = field(default_factory=dict)
    #: ``earliest``, ``latest`` or ``at:<epoch ms>`` (Pinot's offset criteria by time)
    start: str = "earliest"
    on_out_of_range: str = "fail"

    def __post_init__(self) -> None:
        creds = dict(self.credentials)
        if isinstance(self.location, str):
            shown, password = urls.split(self.location, bare=self.hosts, what="the location")
            if password is not None:
                object.__setattr__(self, "location", shown)
                creds[urls.secret_key(urls.LOCATION)] = Secret(password)
        config = self.config
        if isinstance(config, Mapping):
            config = urls.lift(config, creds, what="CONFIG option")
        _set_lifted(self, "config", config, creds)

    @property
    def hosts(self) -> bool:
        """The location starts with a host list (``[user:pass@]host:port,…``)."""
        return str(self.kind).lower() == "kafka"

    def url_options(self) -> dict[str, Any]:
        """The location and the CONFIG options, by the names their passwords are kept
        under (``url:<name>``)."""
        return {urls.LOCATION: self.location, **self.config}

    def redacted_urls(self) -> list[str]:
        """The options (``location`` among them) that show a password as ``<redacted>``."""
        bare = frozenset([urls.LOCATION]) if self.hosts else frozenset()
        return urls.redacted_options(self.url_options(), bare=bare)

    def check(self, pipeline: str | None = None) -> None:
        if not self.kind:
            raise ConfigError("a pipeline needs a source", pipeline=pipeline)
        at = isinstance(self.start, str) and self.start.startswith(START_AT)
        if not (at and self.start[len(START_AT) :].isdigit()):
            check_choice(self.start, "offsets", START_POLICIES, pipeline=pipeline)
        check_choice(
            self.on_out_of_range, "on_offset_out_of_range", OUT_OF_RANGE_POLICIES, pipeline=pipeline
        )
        for k, v in self.credentials.items():
            if not isinstance(v, Secret):
                raise ConfigError(f"credential '{k}' must be a Secret", pipeline=pipeline)


@dataclass(frozen=True)
class FormatSpec:
    """How payloads decode to columns: a decoder plugin (``json``, ``csv``, ``raw``), the
    ``col <- path`` mapping, CSV options, ``IGNORE n LINES`` and whether records that do
    not decode are skipped (to the errors store) or fail the batch."""

    kind: str = "json"
    mapping: tuple[FieldMapping, ...] = ()
    csv: CsvOptions = CsvOptions()
    skip_lines: int = 0
    skip_parser_errors: bool = False
    #: the decoder's own options: ``schema.registry.url`` or ``schema`` (Avro messages)
    options: Mapping[str, str] = field(default_factory=dict)
    #: its secrets (a schema registry's user and password, the password of a registry
    #: URL as ``url:schema.registry.url``), kept with the pipeline's under
    #: ``format.``-prefixed keys
    credentials: Mapping[str, Secret] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.options, Mapping):
            creds = dict(self.credentials)
            _set_lifted(
                self, "options", urls.lift(self.options, creds, what="format option"), creds
            )

    def check(self, pipeline: str | None = None) -> None:
        check_int(self.skip_lines, "skip_lines", 0, pipeline=pipeline)
        reject_unknown(
            [k for k in self.options if not k.startswith(FORMAT_PROP_PREFIX)],
            FORMAT_OPTIONS,
            what="format option",
            pipeline=pipeline,
        )
        reject_unknown(
            [k for k in self.credentials if urls.option_of(k) not in self.options],
            FORMAT_SECRETS,
            what="format secret",
            pipeline=pipeline,
        )
        for k, v in self.credentials.items():
            if not isinstance(v, Secret):
                raise ConfigError(f"format credential '{k}' must be a Secret", pipeline=pipeline)

    def decoder_options(self) -> dict[str, str]:
        """The options the decoder is built with: its options and, revealed, its secrets
        (a URL's password under ``url:<option>``, the URL itself kept redacted)."""
        return {**self.options, **{k: v.reveal() for k, v in self.credentials.items()}}

    def redacted_urls(self) -> list[str]:
        """The options that show a password as ``<redacted>``."""
        return urls.redacted_options(self.options)


@dataclass(frozen=True)
class TransformSpec:
    """Ingest-time SQL of the pipeline: ``SET col = expr`` and ``WHERE cond``."""

    assignments: tuple[tuple[str, str], ...] = ()
    where: str | None = None

    def __bool__(self) -> bool:
        return bool(self.assignments or self.where)


@dataclass(frozen=True)
class SinkSpec:
    """Where rows go: a sink plugin (``delta``) and its table. ``write`` is the write
    strategy: ``append``, or an upsert by primary key that ``replace``s the row with the
    same key or ``ignore``s the new one. ``provenance`` fills ``__source_partition`` and
    ``__source_offset``. ``config`` and ``credentials`` are the options of a sink outside
    the warehouse (a database's address and user; its password), checked by that plugin;
    the catalog keeps the credentials with the source's, under ``sink.``-prefixed keys
    (a password inside a URL option among them, as for the source)."""

    table: str
    kind: str = "delta"
    write: str = "append"
    provenance: bool = False
    config: Mapping[str, Any] = field(default_factory=dict)
    credentials: Mapping[str, Secret] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.config, Mapping):
            creds = dict(self.credentials)
            _set_lifted(self, "config", urls.lift(self.config, creds, what="sink option"), creds)

    def redacted_urls(self) -> list[str]:
        """The options that show a password as ``<redacted>``."""
        return urls.redacted_options(self.config)

    def check(self, pipeline: str | None = None) -> None:
        if self.kind != "database":  # a database's own names may hold any character
            check_name(self.table, "table name")
        elif not isinstance(self.table, str) or not self.table or len(self.table) > 64:
            raise ConfigError(f"table name must be 1 to 64 characters, got {self.table!r}")
        check_choice(self.write, "write mode", WRITE_MODES, pipeline=pipeline)
        for k, v in self.credentials.items():
            if not isinstance(v, Secret):
                raise ConfigError(f"sink credential '{k}' must be a Secret", pipeline=pipeline)


#: prefixes of the sink's and the decoder's keys among a pipeline's stored credentials
SINK_SECRET = "sink."
FORMAT_SECRET = "format."
_OWNED = {"sink": SINK_SECRET, "format": FORMAT_SECRET}
#: the components that hold secrets, and how an error names their URL options
_SECRET_PARTS = {"source": "CONFIG option", "format": "format option", "sink": "sink option"}
#: the fields of a component that may change while a secret given back as ``<redacted>``
#: is kept (:meth:`PipelineSpec.keep_secrets`): none of them decides where the component's
#: secrets are sent. Every other field — the kind, the location, every CONFIG, format and
#: sink option, and a field added later — must be as stored. The other components
#: (the batch options, the SET / WHERE, the other components' settings) may change too.
_MAY_CHANGE = {
    "source": frozenset({"start", "on_out_of_range"}),
    "format": frozenset({"mapping", "csv", "skip_lines", "skip_parser_errors"}),
    "sink": frozenset({"table", "write", "provenance"}),
}
#: how an error names a component's fields that are not options
_FIELD_NAMES = {
    "source": {"kind": "the source kind (LOAD DATA …)", "location": "the location"},
    "format": {"kind": "the format (FORMAT …)"},
    "sink": {"kind": "the sink kind"},
}


@dataclass(frozen=True)
class BatchSpec:
    """How batches are cut. The defaults are those of the engine variables
    (``pipelines_batch_interval`` …), which a front end's engine applies when a clause
    is absent."""

    interval_ms: int = 2500
    max_partitions: int | None = None
    max_offsets_per_partition: int = 1_000_000
    max_retries: int = 4
    fetch_timeout_ms: int = 200
    chunk_records: int = 20_000

    def check(self, pipeline: str | None = None) -> None:
        for key, low in (
            ("interval_ms", 0),
            ("max_offsets_per_partition", 1),
            ("max_retries", 0),
            ("fetch_timeout_ms", 1),
            ("chunk_records", 1),
        ):
            check_int(getattr(self, key), BATCH_OPTION_NAMES.get(key, key), low, pipeline=pipeline)
        mpb = self.max_partitions
        if mpb is not None and (not isinstance(mpb, int) or isinstance(mpb, bool) or mpb < 1):
            raise ConfigError(
                f"max_partitions_per_batch must be a positive integer, got {mpb!r}",
                pipeline=pipeline,
            )


#: the Python API's (and the stored v1 definitions') names of BatchSpec fields
BATCH_OPTION_NAMES = {
    "interval_ms": "batch_interval_ms",
    "max_partitions": "max_partitions_per_batch",
    "max_offsets_per_partition": "max_offsets_per_batch_partition",
    "max_retries": "max_retries",
    "fetch_timeout_ms": "fetch_timeout_ms",
    "chunk_records": "chunk_records",
}

_COMPONENTS = {
    "source": SourceSpec,
    "format": FormatSpec,
    "transform": TransformSpec,
    "sink": SinkSpec,
    "batch": BatchSpec,
}


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
        from sparkpipes.config.kwargs import from_kwargs

        return from_kwargs(kwargs)

    def to_kwargs(self) -> dict[str, Any]:
        """The Python API's keyword arguments that build this spec (credentials as
        Secrets)."""
        from sparkpipes.config.kwargs import to_kwargs

        return to_kwargs(self)

    # -- storage ------------------------------------------------------------------------
    def to_json(self, *, with_credentials: bool = False) -> dict[str, Any]:
        """The definition as JSON; credentials redacted unless asked for (the catalog
        keeps them in their own column)."""
        d: dict[str, Any] = {"version": SPEC_VERSION, "name": self.name}
        for part in _COMPONENTS:
            d[part] = dataclasses.asdict(getattr(self, part))
        d["format"]["mapping"] = [
            {"column": m.column, "path": list(m.path)} for m in self.format.mapping
        ]
        if self.format.options:
            d["format"]["options"] = dict(self.format.options)
        else:
            del d["format"]["options"]  # as stored before it existed
        d["transform"]["assignments"] = [list(a) for a in self.transform.assignments]
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
        return d

    @classmethod
    def from_json(
        cls, d: Mapping[str, Any], credentials: Mapping[str, Any] | None = None
    ) -> PipelineSpec:
        """From :meth:`to_json` (any stored version); ``credentials`` in clear, from the
        catalog's credentials column."""
        if d.get("version") != SPEC_VERSION:
            from sparkpipes.config.kwargs import from_kwargs, upgrade_v1

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
            FieldMapping(str(m["column"]), tuple(m["path"])) for m in fmt.get("mapping", ())
        )
        if "csv" in fmt:
            fmt["csv"] = CsvOptions(**fmt["csv"])
        tr = parts["transform"]
        tr["assignments"] = tuple((str(c), str(e)) for c, e in tr.get("assignments", ()))
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
        CONFIG option; the decoder's kind and options; the sink's kind and options) must
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
            keys = sorted((set(a) | set(b)) - secret, key=str)
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

"""Kafka Connect's Single Message Transforms as a connector config declares them, parsed
once into a frozen :class:`TransformChain`.

Connect's keys (``ConnectorConfig`` of Apache Kafka): ``transforms`` lists the aliases in
the order records pass through them; ``transforms.<alias>.type`` is the Java class and
every other ``transforms.<alias>.<option>`` is that transform's option, except
``predicate`` (an alias listed in ``predicates``) and ``negate`` (``true``: apply where
the predicate does *not* hold). ``predicates`` / ``predicates.<alias>.type`` /
``predicates.<alias>.<option>`` declare the predicates the same way.

This module only checks the structure (every alias has a type, a predicate named is
declared, no option of an alias not listed); what a class's options mean is checked by
the registry that runs them (``sources.connect.smt``), so both agree on one chain. Values
are kept as the text the user wrote: the chain is stored and shown back as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkpipes.errors import ConfigError

TRANSFORMS, PREDICATES = "transforms", "predicates"


@dataclass(frozen=True)
class PredicateSpec:
    """``predicates.<alias>.*``: a condition a transform may be applied under."""

    alias: str
    type: str
    options: Mapping[str, str] = field(default_factory=dict)

    def key(self, option: str = "type") -> str:
        return f"{PREDICATES}.{self.alias}.{option}"


@dataclass(frozen=True)
class StepSpec:
    """``transforms.<alias>.*``: one transform of the chain, its class and its options
    (``predicate`` and ``negate`` taken out)."""

    alias: str
    type: str
    options: Mapping[str, str] = field(default_factory=dict)
    predicate: str | None = None
    negate: bool = False

    def key(self, option: str = "type") -> str:
        return f"{TRANSFORMS}.{self.alias}.{option}"


@dataclass(frozen=True)
class TransformChain:
    """The transforms in the order records pass through them, and the predicates they
    name. Empty (falsy) when the config declares none."""

    steps: tuple[StepSpec, ...] = ()
    predicates: tuple[PredicateSpec, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.steps)

    def predicate(self, alias: str) -> PredicateSpec:
        return next(p for p in self.predicates if p.alias == alias)


def is_transform_key(key: str) -> bool:
    """Whether ``key`` is one of the chain's keys (``transforms``, ``predicates`` and
    their ``.``-prefixed keys)."""
    return key in (TRANSFORMS, PREDICATES) or key.startswith((f"{TRANSFORMS}.", f"{PREDICATES}."))


def _aliases(text: str | None) -> list[str]:
    """Connect's LIST type: comma-separated, each item trimmed, empty items dropped."""
    return [a.strip() for a in str(text or "").split(",") if a.strip()]


def _group(
    cfg: Mapping[str, str], prefix: str, listed: list[str], problems: list[tuple[str, str]]
) -> dict[str, dict[str, str]]:
    """``<prefix>.<alias>.<option>`` keys by alias (an alias may hold dots: the longest
    listed alias that prefixes the key wins)."""
    out: dict[str, dict[str, str]] = {a: {} for a in listed}
    by_length = sorted(listed, key=len, reverse=True)
    for key, value in cfg.items():
        if not key.startswith(prefix + "."):
            continue
        rest = key[len(prefix) + 1 :]
        alias = next((a for a in by_length if rest.startswith(a + ".")), None)
        if alias is None:
            problems.append(
                (
                    key,
                    f"{key} belongs to no alias listed in '{prefix}' "
                    f"({', '.join(listed) or 'none listed'})",
                )
            )
            continue
        out[alias][rest[len(alias) + 1 :]] = str(value)
    return out


def parse_chain(cfg: Mapping[str, str]) -> tuple[TransformChain, list[tuple[str, str]]]:
    """The chain ``cfg`` declares and the structural problems, each ``(key, message)``
    (all of them: validation lists every problem at once)."""
    problems: list[tuple[str, str]] = []
    steps_of = _group(cfg, TRANSFORMS, _aliases(cfg.get(TRANSFORMS)), problems)
    preds_of = _group(cfg, PREDICATES, _aliases(cfg.get(PREDICATES)), problems)
    predicates = []
    for alias, options in preds_of.items():
        kind = options.pop("type", "").strip()
        if not kind:
            problems.append(
                (PREDICATES, f"predicate '{alias}' needs {PREDICATES}.{alias}.type (its class)")
            )
            continue
        predicates.append(PredicateSpec(alias, kind, options))
    steps = []
    for alias, options in steps_of.items():
        kind = options.pop("type", "").strip()
        if not kind:
            problems.append(
                (TRANSFORMS, f"transform '{alias}' needs {TRANSFORMS}.{alias}.type (its class)")
            )
            continue
        predicate = options.pop("predicate", "").strip() or None
        given_negate = "negate" in options
        negate_text = options.pop("negate", "false").strip().lower()
        if given_negate and predicate is None:  # ConnectorConfig.validateProps refuses it
            problems.append(
                (
                    f"{TRANSFORMS}.{alias}.negate",
                    f"Config '{TRANSFORMS}.{alias}.negate' was provided but there is no "
                    f"config '{TRANSFORMS}.{alias}.predicate'",
                )
            )
        if negate_text not in ("true", "false"):
            problems.append(
                (
                    f"{TRANSFORMS}.{alias}.negate",
                    f"{TRANSFORMS}.{alias}.negate must be true or false",
                )
            )
        if predicate is not None and predicate not in preds_of:
            problems.append(
                (
                    f"{TRANSFORMS}.{alias}.predicate",
                    f"{TRANSFORMS}.{alias}.predicate names '{predicate}', which is not listed "
                    f"in '{PREDICATES}'",
                )
            )
        steps.append(StepSpec(alias, kind, options, predicate, negate_text == "true"))
    return TransformChain(tuple(steps), tuple(predicates)), problems


#: Kafka Connect's converters of a sink connector's record values, by the name a
#: :class:`ConnectRecords` keeps (``value.converter`` class → kind in ``frontends.connect``)
CONVERTERS = ("json", "string", "avro")
#: Confluent's JDBC sink's ``pk.mode`` values
PK_MODES = ("none", "kafka", "record_key", "record_value")
#: the converters a record key is read with: the value's, and Kafka's primitive ones
#: (``org.apache.kafka.connect.converters.LongConverter`` … ``ByteArrayConverter``)
KEY_CONVERTERS = (*CONVERTERS, "long", "integer", "short", "double", "float", "bytes")


@dataclass(frozen=True)
class RecordRows:
    """How a sink task makes a table row of each record beyond its value's fields, as
    Confluent's JDBC sink does (``FieldsMetadata``, ``RecordValidator``; ``formats.
    connect_rows`` applies it): the primary-key columns ``pk_fields`` from the record's
    key (``record_key``: a struct key's fields, or a primitive key as the one column
    named), from its Kafka coordinates (``kafka``: topic, partition, offset) or its
    value (``record_value``); with ``deletes`` a tombstone is a delete of its key,
    marked in that staged column; a value field the table has no column for fails its
    record (``evolve`` says whether the connector adds columns when it is made). The
    key is read with ``key_converter`` (``json`` with its envelope when ``key_schemas``,
    ``string``, ``avro``); a ``string`` value is the one column ``string_column``.
    ``connector`` and ``table`` name them in messages."""

    connector: str
    table: str
    pk_mode: str = "none"
    pk_fields: tuple[str, ...] = ()
    key_converter: str = "json"
    key_schemas: bool = True
    deletes: str | None = None
    fields: tuple[str, ...] = ()
    string_column: str = "record_value"
    evolve: bool = False

    def __post_init__(self) -> None:
        if self.pk_mode not in PK_MODES:
            raise ConfigError(f"pk.mode is one of {', '.join(PK_MODES)}, not {self.pk_mode!r}")
        if self.key_converter not in KEY_CONVERTERS:
            raise ConfigError(
                f"a Kafka Connect key converter is one of {', '.join(KEY_CONVERTERS)}, "
                f"not {self.key_converter!r}"
            )
        object.__setattr__(self, "pk_fields", tuple(str(f) for f in self.pk_fields))
        object.__setattr__(self, "fields", tuple(str(f) for f in self.fields))

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> RecordRows:
        names = {f: d[f] for f in cls.__dataclass_fields__ if f in d}
        return cls(**names)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ConnectRecords:
    """Kafka records decoded and transformed as a Kafka Connect sink task sees them,
    before their fields map to the table's columns (``FormatSpec.connect``).

    ``converter`` is how a value decodes (``json``: the JsonConverter, with its
    ``{"schema", "payload"}`` envelope when ``schemas``; ``avro``: Confluent's converter
    through the format's schema registry; ``string``); ``topic`` is the topic the
    records are read from; ``config`` holds the connector's ``transforms`` /
    ``predicates`` keys as given (stored and shown back as written), parsed once into
    :attr:`chain`; ``rows`` is set for Confluent's JDBC sink (:class:`RecordRows`)."""

    converter: str
    topic: str
    schemas: bool = True
    config: tuple[tuple[str, str], ...] = ()
    #: how rows are made of the records beyond their values' fields (a JDBC sink's)
    rows: RecordRows | None = None

    def __post_init__(self) -> None:
        if self.converter not in CONVERTERS:
            raise ConfigError(
                f"a Kafka Connect converter is one of {', '.join(CONVERTERS)}, "
                f"not {self.converter!r}"
            )
        object.__setattr__(self, "config", tuple((str(k), str(v)) for k, v in self.config))
        chain, _ = parse_chain(dict(self.config))
        object.__setattr__(self, "_chain", chain)

    @property
    def chain(self) -> TransformChain:
        """The chain of :attr:`config` (its problems are the connector config's, reported
        when the connector is made)."""
        return self._chain  # type: ignore[attr-defined,no-any-return]

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> ConnectRecords:
        return cls(
            converter=str(d["converter"]),
            topic=str(d["topic"]),
            schemas=bool(d.get("schemas", True)),
            config=tuple((str(k), str(v)) for k, v in d.get("config", ()) or ()),  # type: ignore[attr-defined]
            rows=RecordRows.from_json(d["rows"]) if d.get("rows") else None,  # type: ignore[arg-type]
        )

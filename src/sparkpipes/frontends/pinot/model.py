"""Pinot realtime tables (seeds 002, 003), as users write them: a schema JSON and a table
config JSON, checked once into frozen :class:`PinotSchema` (:mod:`.schema`) and
:class:`PinotTableConfig`.

Keys are handled as Pinot's controller handles them (:mod:`.keys` is the registry): a key
sparkpipes reads is checked; a key that only concerns Pinot's servers (indexes, tenants,
routing, segment assignment, …) or that Pinot does not know is accepted, kept with the
stored config and reported in :attr:`PinotTableConfig.unrecognized` (Pinot's
``unrecognizedProperties``); a key that would change what is loaded and is not implemented
is refused by name. Every problem of a file is reported at once, each at its JSON path
(:mod:`.problems`). Empty strings (seed 002's SSL example leaves most values empty) mean
"not given".

Secrets — the password in ``sasl.jaas.config``, ``ssl.*.password``, the schema registry's
``basic.auth.user.info``, a password inside a URL (the registry's, ``stream.redis.url``) —
become :class:`Secret` values; :meth:`PinotTableConfig.shown` is the config with them
redacted, which is all the catalog keeps and all any surface shows. The JAAS string itself
is never handed to the Kafka client: its user name and password are taken out of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import REDACTED, is_metadata_column, parse_json_object
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot import chain, keys, timecheck
from sparkpipes.frontends.pinot.aggregation import IngestionAggregation, aggregation_config
from sparkpipes.frontends.pinot.complex import ComplexTypeConfig, complex_type_config
from sparkpipes.frontends.pinot.expr import Budget, PinotExpr, filter_sql, translate
from sparkpipes.frontends.pinot.kinesis import STREAM_TYPE, load_kinesis
from sparkpipes.frontends.pinot.multistream import check as check_streams
from sparkpipes.frontends.pinot.problems import Problems, raise_all
from sparkpipes.frontends.pinot.schema import (  # noqa: F401  (the model's public names)
    DateTimeFormat,
    FieldSpec,
    PinotSchema,
    load_schema,
)
from sparkpipes.frontends.pinot.stream import (
    StreamConfig,
    is_secret_key,
    load_stream,
    local_file_keys,
)
from sparkpipes.frontends.pinot.upsert import (
    UpsertConfig,
    dedup_enabled,
    retention_ms,
    upsert_config,
)

# -- table config -------------------------------------------------------------------------
#: the keys read here, per section; any other is sorted by :mod:`.keys`
TABLE_KEYS = (
    "tableName",
    "tableType",
    "segmentsConfig",
    "tableIndexConfig",
    "ingestionConfig",
    "upsertConfig",
    "dedupConfig",
)
SEGMENTS_KEYS = ("timeColumnName", "schemaName", "retentionTimeUnit", "retentionTimeValue")
INDEX_KEYS = ("streamConfigs", "nullHandlingEnabled", "aggregateMetrics")
INGESTION_KEYS = (
    "streamIngestionConfig",
    "transformConfigs",
    "filterConfig",
    "continueOnError",
    "aggregationConfigs",
    "complexTypeConfig",
    "rowTimeValueCheck",
)


@dataclass(frozen=True)
class PinotTableConfig:
    """A REALTIME table config, checked; :meth:`shown` is what may be shown back.

    ``streams`` are its stream configs in order (``streamConfigMaps``, :mod:`.multistream`);
    ``stream`` is the first, the only one of most tables."""

    name: str
    schema_name: str
    time_column: str | None
    stream: StreamConfig
    retention_ms: int | None = None
    transforms: tuple[tuple[str, str], ...] = ()
    filter: str | None = None
    upsert: UpsertConfig | None = None
    dedup: bool = False
    continue_on_error: bool = False
    #: ``ingestionConfig.rowTimeValueCheck``: the time column checked (:mod:`.timecheck`)
    row_time_check: bool = False
    #: ``tableIndexConfig.nullHandlingEnabled``: nulls are kept (``frontends.pinot.nulls``)
    null_handling: bool = False
    #: ``aggregationConfigs`` / ``aggregateMetrics`` (:mod:`.aggregation`)
    aggregation: IngestionAggregation | None = None
    #: ``ingestionConfig.complexTypeConfig`` (:mod:`.complex`)
    complex: ComplexTypeConfig | None = None
    #: what the user should hear of that is not a problem (:attr:`notes`)
    warnings: tuple[str, ...] = ()
    #: the config as given, every secret value replaced by ``<redacted>``
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: JSON path → value (redacted) of each key accepted without effect
    unrecognized: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: every stream config, in order (empty: ``stream`` alone)
    streams: tuple[StreamConfig, ...] = ()

    def __post_init__(self) -> None:
        if not self.streams:
            object.__setattr__(self, "streams", (self.stream,))

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(n for s in self.streams for n in s.notes) + self.warnings

    def shown(self) -> dict[str, Any]:
        """The table config as given, secrets redacted: all any surface shows or keeps."""
        return dict(self.raw)


def redacted(doc: Any, key: str = "") -> Any:
    """``doc`` with every secret value, and every password inside a URL (or a broker
    list), replaced by ``<redacted>``."""
    if isinstance(doc, Mapping):
        return {
            k: (REDACTED if is_secret_key(k) and v not in ("", None) else redacted(v, k))
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [redacted(v, key) for v in doc]
    return urls.redact_all(doc, key)


def unrecognized_properties(found: Mapping[str, Any]) -> dict[str, Any]:
    """Path → value of the keys accepted without effect, secrets redacted."""
    return {p: redacted({p: v})[p] for p, v in found.items()}


def _object(d: Mapping[str, Any], key: str, where: str, found: Problems) -> dict[str, Any]:
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        found.add(f"{where}{key}", f"{where}{key} must be an object")
        return {}
    return v


def load_table(
    doc: str | Mapping[str, Any],
    schema: PinotSchema | None = None,
    *,
    schema_problems: Problems | None = None,
) -> PinotTableConfig:
    """A table config from its JSON text or object, checked against ``schema`` when
    given. Every problem (and ``schema_problems``, the schema's) is raised at once, as one
    ConfigError listing each at its JSON path."""
    d = parse_json_object(doc, what="the Pinot table config")
    found = Problems("table config")
    found.sort(d, TABLE_KEYS, "", "")
    name = d.get("tableName")
    if not isinstance(name, str) or not name:
        found.add("tableName", "the table config needs a tableName" + keys.near("tableName", d))
        name = "?"
    base = re.sub(r"_(REALTIME|OFFLINE)$", "", name)
    if name != "?" and not re.fullmatch(r"[A-Za-z0-9_]+", base):
        found.add("tableName", f"tableName '{name}' must be letters, digits and underscores")
    kind = str(d.get("tableType", "")).upper()
    if kind == "OFFLINE":
        found.add(
            "tableType",
            f"table '{base}': tableType OFFLINE (batch segment push) is not supported; "
            "sparkpipes loads REALTIME tables from streams (for files, use CREATE PIPELINE "
            "… LOAD DATA FS/S3)",
        )
    elif kind != "REALTIME":
        found.add(
            "tableType", f"table '{base}': tableType must be REALTIME, got {d.get('tableType')!r}"
        )
    seg = _object(d, "segmentsConfig", "", found)
    found.sort(seg, SEGMENTS_KEYS, "segmentsConfig", "segmentsConfig")
    index = _object(d, "tableIndexConfig", "", found)
    found.sort(index, INDEX_KEYS, "tableIndexConfig", "tableIndexConfig")
    ingestion = _object(d, "ingestionConfig", "", found)
    found.sort(ingestion, INGESTION_KEYS, "ingestionConfig", "ingestionConfig")
    _tasks(d, found)
    before = len(found.errors)
    streams = _streams(index, ingestion, base, found)
    if len(found.errors) == before:  # Pinot's rules for several, over streams that loaded
        check_streams(streams, d, base, found)
    schema_name = seg.get("schemaName") or base
    if schema is not None and schema.name != schema_name:
        found.add(
            "segmentsConfig.schemaName",
            f"table '{base}' names schema '{schema_name}' (segmentsConfig.schemaName) but "
            f"the schema given is '{schema.name}'",
        )
    time_column = seg.get("timeColumnName") or None
    if schema is not None and time_column is not None:
        with found.at("segmentsConfig.timeColumnName"):
            if schema.field(time_column).role != "dateTime":
                raise ConfigError(
                    f"table '{base}': timeColumnName '{time_column}' must be a dateTime "
                    f"field of schema '{schema.name}'"
                )
    with found.at("ingestionConfig.aggregationConfigs"):
        aggregation = aggregation_config(
            index,
            ingestion,
            d,
            schema,
            upsert=isinstance(d.get("upsertConfig"), dict)
            and str(d["upsertConfig"].get("mode", "FULL")).upper() != "NONE",
            dedup=isinstance(d.get("dedupConfig"), dict)
            and bool(d["dedupConfig"].get("dedupEnabled", False)),
            found=found,
        )
    sources = aggregation.sources if aggregation is not None else frozenset()
    complex_types = complex_type_config(ingestion, schema, found)
    made: dict[str, PinotExpr] = {}
    budget = Budget()  # the SQL of all the table's expressions (.chain)
    transforms = _transforms(ingestion, schema, found, sources, made, budget)
    if not made:  # none, or refused: what reads them is checked by itself
        budget = Budget()
    # spent in the lowering's order: the transforms, what the aggregations read, the filter
    for path, read in _aggregated(ingestion, aggregation):
        with found.at(path):
            chain.source(read, made, budget)
    filt = _object(ingestion, "filterConfig", "ingestionConfig.", found)
    where = "ingestionConfig.filterConfig"
    found.sort(filt, ("filterFunction",), where, where)
    if filt.get("filterFunction"):
        where += ".filterFunction"
        with found.at(where):  # (after the transforms: reads what they make)
            filter_sql(filt["filterFunction"], where=where, derived=made, budget=budget)
    retention = upsert = None
    dedup = False
    with found.at("segmentsConfig"):
        retention = retention_ms(seg, base)
    with found.at("upsertConfig"):
        upsert = upsert_config(d, schema, time_column, base, found)
    with found.at("dedupConfig"):
        dedup = dedup_enabled(d, schema, base, found)
    null_handling = index.get("nullHandlingEnabled", False)
    if null_handling not in (True, False, "true", "false"):
        found.add(
            "tableIndexConfig.nullHandlingEnabled",
            f"table '{base}': nullHandlingEnabled must be true or false",
        )
    null_handling = null_handling in (True, "true")
    row_time_check = _row_time_check(ingestion, schema, time_column, base, found)
    if (
        upsert is not None
        and upsert.mode == "PARTIAL"
        and not null_handling
        and not (schema is not None and schema.column_nulls)
    ):
        found.add(
            "upsertConfig.mode",
            f"table '{base}': a PARTIAL upsert needs null handling (Pinot's own rule: "
            '"Null handling must be enabled for partial upsert tables"): set '
            '"nullHandlingEnabled": true in tableIndexConfig or '
            '"enableColumnBasedNullHandling": true in the schema',
        )
    raise_all(
        *([schema_problems] if schema_problems else []),
        found,
        what=f"the Pinot table config '{base}'"
        + (" and its schema" if schema_problems and schema_problems.errors else ""),
    )
    assert streams  # no problem was found, so the streams loaded
    return PinotTableConfig(
        name=base,
        schema_name=schema_name,
        time_column=time_column,
        stream=streams[0],
        streams=tuple(streams),
        retention_ms=retention,
        transforms=tuple(transforms),
        filter=filt.get("filterFunction") or None,
        upsert=upsert,
        dedup=dedup,
        continue_on_error=bool(ingestion.get("continueOnError", False)),
        null_handling=null_handling,
        row_time_check=row_time_check,
        aggregation=aggregation,
        complex=complex_types,
        warnings=tuple(w for i, s in enumerate(streams) for w in _unfilled(schema, s, i))
        + _unchecked(row_time_check, time_column),
        raw=redacted(d),
        unrecognized=unrecognized_properties(found.unrecognized),
    )


def _row_time_check(
    ingestion: Mapping[str, Any],
    schema: PinotSchema | None,
    time_column: str | None,
    base: str,
    found: Problems,
) -> bool:
    """``rowTimeValueCheck`` (true or false, as Jackson reads a boolean; default false),
    the time column's format checked to be one read here (:mod:`.timecheck`)."""
    where = timecheck.WHERE
    given = ingestion.get("rowTimeValueCheck", False)
    text = str(given).lower() if isinstance(given, (bool, str)) else None
    if text not in ("true", "false"):
        found.add(where, f"table '{base}': rowTimeValueCheck must be true or false")
        return False
    if text == "true" and schema is not None and time_column is not None:
        with found.at(where):
            timecheck.check(schema.field(time_column))
    return text == "true"


def _unchecked(row_time_check: bool, time_column: str | None) -> tuple[str, ...]:
    """What to say of a ``rowTimeValueCheck`` with no time column to check."""
    if not row_time_check or time_column:
        return ()
    return (
        "ingestionConfig.rowTimeValueCheck is true but the table has no "
        "segmentsConfig.timeColumnName: no time is checked, as in Pinot",
    )


def _aggregated(
    ingestion: Mapping[str, Any], aggregation: IngestionAggregation | None
) -> list[tuple[str, str]]:
    """(JSON path, source field) of each metric that reads a field, in the order the
    lowering reads them."""
    if aggregation is None:
        return []
    configs = ingestion.get("aggregationConfigs")
    paths = {
        c.get("columnName"): f"ingestionConfig.aggregationConfigs[{i}]"
        for i, c in enumerate(configs if isinstance(configs, list) else [])
        if isinstance(c, dict)
    }
    return [
        (paths.get(m.column, "tableIndexConfig.aggregateMetrics"), m.source)
        for m in aggregation.metrics
        if m.source is not None
    ]


def _transforms(
    ingestion: Mapping[str, Any],
    schema: PinotSchema | None,
    found: Problems,
    sources: frozenset[str] = frozenset(),
    made: dict[str, PinotExpr] | None = None,
    budget: Budget | None = None,
) -> list[tuple[str, str]]:
    """``transformConfigs`` (and, with the schema, its fields' own ``transformFunction``),
    each expression translated once here so that all their errors come at once, with
    Pinot's own rules (``TableConfigUtils``, ``ExpressionTransformer``): one transform per
    column, none reading its own column, none in a cycle of transforms reading each
    other (:mod:`.chain`). A transform may make a column of the schema, a field an
    aggregation reads (``sources``) or a field another transform reads (an intermediate,
    as the newest Pinot allows). ``made`` receives each transform as others read it,
    their SQL spent from ``budget`` (the table's; a chain past it is refused at the
    transform where it ran out)."""
    configs = ingestion.get("transformConfigs") or []
    if not isinstance(configs, list):
        found.add("ingestionConfig.transformConfigs", "transformConfigs must be a list")
        configs = []
    # Pinot's pre-pass: every field a transformConfig reads (such a destination may be an
    # intermediate, no schema column)
    given = {
        str(i): t["transformFunction"]
        for i, t in enumerate(configs)
        if isinstance(t, dict) and isinstance(t.get("transformFunction"), str)
    }
    read = {f for args in chain.arguments(given).values() for f in args}
    paths: dict[str, str] = {}
    transforms: list[tuple[str, str]] = []
    for i, t in enumerate(configs):
        where = f"ingestionConfig.transformConfigs[{i}]"
        if not isinstance(t, dict):
            found.add(where, f"{where} must be an object with columnName and transformFunction")
            continue
        found.sort(t, ("columnName", "transformFunction"), "transformConfig", where)
        col, fn = t.get("columnName"), t.get("transformFunction")
        if not isinstance(col, str) or not isinstance(fn, str) or not fn.strip():
            found.add(where, f"{where} needs columnName and transformFunction")
            continue
        if col in paths:
            found.add(
                where,
                f"column '{col}' has a transform at {paths[col]} already; Pinot refuses a "
                f"second one too (\"Duplicate transform config found for column '{col}'\")",
            )
            continue
        paths[col] = where
        transforms.append((col, fn))
        with found.at(where):
            args = translate(fn, where=chain.where(col)).fields
            if col in args:
                transforms.pop()  # (not a cycle as well)
                raise ConfigError(
                    f"{chain.where(col)} reads its own column; Pinot refuses it too "
                    f"(\"Arguments of a transform function '[{', '.join(args)}]' cannot "
                    f"contain the destination column '{col}'\")"
                )
            if schema is not None and col not in {*sources, *read, *schema.names}:
                raise ConfigError(
                    f"{chain.where(col)}: schema '{schema.name}' has no column '{col}', "
                    "and no transform or aggregation reads it (Pinot's rule: \"The "
                    f"destination column '{col}' of the transform function must be "
                    "present in the schema, be consumed as the input of another transform "
                    'function, or be a source column for aggregations"; columns: '
                    f"{', '.join(schema.names)})"
                )
    if schema is not None:
        for f in schema.fields:
            if f.transform and f.name not in paths:
                paths[f.name] = f"schema field '{f.name}'.transformFunction"
                with found.at(paths[f.name]):
                    translate(f.transform, where=chain.where(f.name))
        every = dict(transforms)
        every.update((f.name, f.transform) for f in schema.fields if f.transform)
        every.update(transforms)  # a transformConfig wins over the field's own, as in Pinot
        translated = chain.arguments(every)  # (one that does not is reported above)
        try:
            made = made if made is not None else {}
            resolved = {c: t for c, t in every.items() if c in translated}
            made.update(chain.resolve(resolved, budget))
        except chain.ChainError as e:
            found.add(paths[e.column], e.message)
    return transforms


def _unfilled(schema: PinotSchema | None, stream: StreamConfig | None, index: int = 0) -> list[str]:
    """A warning for the schema's stream metadata columns the stream does not fill: without
    ``"metadata.populate": "true"`` Pinot's Kafka consumer hands over no headers and no
    ``__metadata$…`` values, and such a column stores its default null value, as any field
    no record carries (``__key`` is filled from a Kafka record's key either way, as Pinot's
    ``StreamDataDecoderImpl`` does)."""
    if schema is None or stream is None or stream.metadata_populate:
        return []
    # a Kafka record's key; other streams, and Pinot's high-level consumer: none
    keyed = stream.stream_type == "kafka" and not stream.high_level
    unfilled = [
        f.name
        for f in schema.fields
        if is_metadata_column(f.name) and not (keyed and f.name == "__key")
    ]
    if not unfilled:
        return []
    which = "the streamConfigs" if index == 0 else f"streamConfigMaps[{index}]"
    return [
        f"schema '{schema.name}' lists {', '.join(unfilled)}, which only "
        f'"metadata.populate": "true" in {which} fills: without it they store '
        "their default null value, as in Pinot"
    ]


def _tasks(d: Mapping[str, Any], found: Problems) -> None:
    """A ``MergeRollupTask`` that rolls rows up changes what the table holds: refused.
    Other minion tasks (and ``concat`` merges) only move or merge segments."""
    task = d.get("task")
    tasks = task.get("taskTypeConfigsMap") if isinstance(task, Mapping) else None
    merge = tasks.get("MergeRollupTask") if isinstance(tasks, Mapping) else None
    if not isinstance(merge, Mapping):
        return
    for k, v in merge.items():
        if k.endswith("mergeType") and str(v).lower() == "rollup":
            path = f"task.taskTypeConfigsMap.MergeRollupTask.{k}"
            found.add(path, keys.REFUSED["task.MergeRollupTask"])


def local_files(doc: Any) -> list[str]:
    """The keys (``where: key``) of a table config's stream configs that name a file of the
    server's disk — what reading it needs ``FILE READ`` for; [] for a config that does not
    parse (its error comes from :func:`load_table`)."""
    try:
        d = parse_json_object(doc, what="the Pinot table config")
    except ConfigError:
        return []
    found: list[str] = []
    index = d.get("tableIndexConfig")
    if isinstance(index, Mapping) and isinstance(index.get("streamConfigs"), Mapping):
        found += [
            f"tableIndexConfig.streamConfigs.{k}" for k in local_file_keys(index["streamConfigs"])
        ]
    ingestion = d.get("ingestionConfig")
    sic = ingestion.get("streamIngestionConfig") if isinstance(ingestion, Mapping) else None
    maps = sic.get("streamConfigMaps") if isinstance(sic, Mapping) else None
    for i, m in enumerate(maps if isinstance(maps, list) else []):
        if isinstance(m, Mapping):
            found += [
                f"ingestionConfig.streamIngestionConfig.streamConfigMaps[{i}].{k}"
                for k in local_file_keys(m)
            ]
    return found


def server_logins(doc: Any) -> list[str]:
    """The JSON paths of a table config's Kinesis stream configs that give no accessKey and
    secretKey: they read with the AWS default chain, the server's own login — what that
    needs ``FILE READ`` for, as ``LOAD DATA S3`` without keys does; [] for a config that
    does not parse."""
    try:
        d = parse_json_object(doc, what="the Pinot table config")
    except ConfigError:
        return []
    index = d.get("tableIndexConfig")
    ingestion = d.get("ingestionConfig")
    sic = ingestion.get("streamIngestionConfig") if isinstance(ingestion, Mapping) else None
    maps = sic.get("streamConfigMaps") if isinstance(sic, Mapping) else None
    found = {
        f"ingestionConfig.streamIngestionConfig.streamConfigMaps[{i}]": m
        for i, m in enumerate(maps if isinstance(maps, list) else [])
    }
    if isinstance(index, Mapping):
        found["tableIndexConfig.streamConfigs"] = index.get("streamConfigs")
    return [
        path
        for path, m in found.items()
        if isinstance(m, Mapping)
        and str(m.get("streamType", "")).strip() == STREAM_TYPE
        and not str(m.get("accessKey") or "").strip()
    ]


def _streams(
    index: Mapping[str, Any], ingestion: Mapping[str, Any], table: str, found: Problems
) -> list[StreamConfig]:
    """The table's stream configs, each loaded (its problems at its own path); [] when
    there is none to load."""
    sic = _object(ingestion, "streamIngestionConfig", "ingestionConfig.", found)
    found.sort(
        sic,
        ("streamConfigMaps",),
        "ingestionConfig.streamIngestionConfig",
        "ingestionConfig.streamIngestionConfig",
    )
    maps = sic.get("streamConfigMaps")
    legacy = index.get("streamConfigs")
    if maps and legacy:
        found.add(
            "tableIndexConfig.streamConfigs",
            f"table '{table}' gives both tableIndexConfig.streamConfigs and "
            "ingestionConfig.streamIngestionConfig.streamConfigMaps: give one",
        )
    if maps:
        where = "ingestionConfig.streamIngestionConfig.streamConfigMaps"
        if not isinstance(maps, list) or not all(isinstance(m, dict) for m in maps):
            found.add(where, f"table '{table}': streamConfigMaps must be a list of stream configs")
            return []
        # several: one pipeline each into the table (:mod:`.multistream`)
        return [_load(m, f"{where}[{i}]", table=table, found=found) for i, m in enumerate(maps)]
    if not isinstance(legacy, dict):
        found.add(
            "tableIndexConfig.streamConfigs",
            f"table '{table}' has no stream: a REALTIME table needs "
            "tableIndexConfig.streamConfigs (or ingestionConfig.streamIngestionConfig."
            "streamConfigMaps)",
        )
        return []
    return [_load(legacy, "tableIndexConfig.streamConfigs", table=table, found=found)]


#: stream types whose streamConfigs their own module reads (any other: ``load_stream``)
LOADERS: dict[str, Callable[..., StreamConfig]] = {STREAM_TYPE: load_kinesis}


def _load(d: Mapping[str, Any], where: str, *, table: str, found: Problems) -> StreamConfig:
    loader = LOADERS.get(str(d.get("streamType", "")).strip(), load_stream)
    return loader(d, where, table=table, found=found)


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False)

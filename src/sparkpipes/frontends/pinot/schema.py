"""Pinot schemas, checked into a frozen :class:`PinotSchema`: its field specs, their types
and dateTime formats, the primary key.

Types (Pinot → table column): INT → INT, LONG → BIGINT, FLOAT → FLOAT, DOUBLE → DOUBLE,
BIG_DECIMAL → DECIMAL(38,18), BOOLEAN → BOOLEAN, TIMESTAMP → TIMESTAMP, STRING → STRING,
JSON → STRING (declared JSON), BYTES → BINARY; a multi-value field
(``singleValueField: false``) is an ARRAY of its type. What a record without a value for a
field stores, and how long text may be, is :mod:`~sparkpipes.frontends.pinot.nulls`'s.

The legacy ``timeFieldSpec`` is the dateTime field Pinot makes of it, filled from the
incoming field when the outgoing one differs (:mod:`~sparkpipes.frontends.pinot.timespec`).

Keys sparkpipes does not read are accepted and reported (``unrecognizedProperties``, see
:mod:`~sparkpipes.frontends.pinot.keys`); the ones that would change what is loaded are
refused by name. Every problem of the document is reported at once, at its JSON path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.config.core import parse_json_object
from sparkpipes.config.tables import EXCEED
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import translate
from sparkpipes.frontends.pinot.expr.times import joda_illegal
from sparkpipes.frontends.pinot.problems import Problems, raise_all
from sparkpipes.frontends.pinot.timespec import time_field
from sparkpipes.frontends.pinot.units import TIME_UNITS_MS

#: Pinot data type → Spark DDL type of the table column
TYPES = {
    "INT": "INT",
    "LONG": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BIG_DECIMAL": "DECIMAL(38,18)",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "STRING": "STRING",
    "JSON": "STRING",
    "BYTES": "BINARY",
}
ROLES = {
    "dimensionFieldSpecs": "dimension",
    "metricFieldSpecs": "metric",
    "dateTimeFieldSpecs": "dateTime",
}
METRIC_TYPES = ("INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "BYTES")
DATETIME_TYPES = ("INT", "LONG", "STRING", "TIMESTAMP")
SCHEMA_KEYS = (
    "schemaName",
    *ROLES,
    "timeFieldSpec",
    "primaryKeyColumns",
    "enableColumnBasedNullHandling",
)
FIELD_KEYS = tuple(
    [
        "name",
        "dataType",
        "singleValueField",
        "defaultNullValue",
        "format",
        "granularity",
        "maxLength",
        "maxLengthExceedStrategy",
        "notNull",
        "transformFunction",
    ]
)


# -- schema -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DateTimeFormat:
    """A dateTime field's ``format``: epoch in ``size`` ``unit``s, a date pattern
    (``SIMPLE_DATE_FORMAT``) or ``TIMESTAMP``."""

    kind: str  # EPOCH, SIMPLE_DATE_FORMAT, TIMESTAMP
    unit: str = "MILLISECONDS"
    size: int = 1
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str, where: str) -> DateTimeFormat:
        """``1:MILLISECONDS:EPOCH``, ``1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd`` (the colon
        form), ``EPOCH|MILLISECONDS|1``, ``SIMPLE_DATE_FORMAT|yyyy-MM-dd`` (the pipe form)
        or ``TIMESTAMP``."""
        bad = ConfigError(
            f"{where}: format '{text}' is not a Pinot dateTime format (e.g. "
            "'1:MILLISECONDS:EPOCH', '1:DAYS:SIMPLE_DATE_FORMAT:yyyy-MM-dd', "
            "'EPOCH|SECONDS', 'TIMESTAMP')"
        )
        if text.strip().upper() == "TIMESTAMP":
            return cls("TIMESTAMP")
        if "|" in text or ":" not in text:  # the pipe form; bare EPOCH is epoch millis
            parts = text.split("|")
            kind = parts[0].upper()
            if kind == "EPOCH":
                unit = (parts[1] if len(parts) > 1 else "MILLISECONDS").upper()
                size = parts[2] if len(parts) > 2 else "1"
                return cls._epoch(unit, size, bad)
            if kind == "SIMPLE_DATE_FORMAT" and len(parts) >= 2:
                _check_joda(parts[1], text, where, zoned=False)
                return cls("SIMPLE_DATE_FORMAT", pattern="|".join(parts[1:]))
            raise bad
        parts = text.split(":", 3)
        if len(parts) < 3:
            raise bad
        size, unit, kind = parts[0], parts[1].upper(), parts[2].upper()
        if kind == "EPOCH":
            return cls._epoch(unit, size, bad)
        if kind == "SIMPLE_DATE_FORMAT" and len(parts) == 4:
            _check_joda(parts[3], text, where, zoned=True)
            return cls("SIMPLE_DATE_FORMAT", unit=unit, pattern=parts[3])
        if kind == "TIMESTAMP":
            return cls("TIMESTAMP")
        raise bad

    @classmethod
    def _epoch(cls, unit: str, size: str, bad: ConfigError) -> DateTimeFormat:
        if unit not in TIME_UNITS_MS or not size.isdigit() or int(size) < 1:
            raise bad
        return cls("EPOCH", unit=unit, size=int(size))


#: Pinot's ``SDF_PATTERN_WITH_TIMEZONE``: ``yyyyMMdd tz(America/Chicago)``
_SDF_WITH_ZONE = re.compile(r"(.+)( tz[ ]*\((.+)\))[ ]*")


def _check_joda(pattern: str, text: str, where: str, *, zoned: bool) -> None:
    """Pinot's ``SchemaUtils.validateDateTimeFieldSpec``: a pattern Joda-Time refuses
    makes the format invalid (``DateTimeFormatPatternSpec``; the colon form's pattern
    after its `` tz(zone)``, which the pipe form, given its zone apart, keeps)."""
    with_zone = _SDF_WITH_ZONE.match(pattern) if zoned else None
    pattern = with_zone.group(1).strip() if with_zone else pattern
    illegal = "Pattern is null or empty" if not pattern else joda_illegal(pattern)
    if illegal is not None and pattern:
        illegal = f"Illegal pattern component: {illegal}"
    if illegal is not None:
        raise ConfigError(
            f"{where}: Invalid format: {text} (Pinot: Invalid SIMPLE_DATE_FORMAT pattern: "
            f"{pattern}; Joda-Time: {illegal}; quote literal "
            "text: yyyy-MM-dd'T'HH:mm:ss)"
        )


@dataclass(frozen=True)
class FieldSpec:
    """One column of a Pinot schema."""

    name: str
    data_type: str
    role: str  # dimension, metric, dateTime
    single_value: bool = True
    default_null: Any = None
    not_null: bool = False
    format: DateTimeFormat | None = None
    granularity: str | None = None
    transform: str | None = None  # a transformFunction in the schema (older Pinot configs)
    max_length: int | None = None  # maxLength, when given
    exceed: str | None = None  # maxLengthExceedStrategy, when given

    @property
    def ddl_type(self) -> str:
        base = TYPES[self.data_type]
        return base if self.single_value else f"ARRAY<{base}>"


@dataclass(frozen=True)
class PinotSchema:
    """A Pinot schema, checked; ``raw`` is the document as given."""

    name: str
    fields: tuple[FieldSpec, ...]
    primary_key: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: JSON paths of the keys accepted without effect (Pinot's ``unrecognizedProperties``)
    unrecognized: tuple[str, ...] = field(default=(), compare=False)
    #: ``enableColumnBasedNullHandling``: each field but the ``notNull`` ones keeps nulls
    column_nulls: bool = False

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise ConfigError(
            f"schema '{self.name}' has no column '{name}' (columns: "
            f"{', '.join(f.name for f in self.fields)})"
        )

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


def load_schema(doc: str | Mapping[str, Any], problems: Problems | None = None) -> PinotSchema:
    """A schema from its JSON text or object. Every problem is reported at once (one
    ConfigError), or added to ``problems`` when given (the caller raises)."""
    d = parse_json_object(doc, what="the Pinot schema")
    found = problems if problems is not None else Problems("schema")
    found.sort(d, SCHEMA_KEYS, "schema", "")
    name = d.get("schemaName")
    if not isinstance(name, str) or not name:
        found.add("schemaName", "the Pinot schema needs a schemaName")
        name = "?"
    fields: list[FieldSpec] = []
    expected = 0  # field specs given
    given: dict[str, tuple[str, str]] = {}  # path → (column, its own transformFunction)
    for key, role in ROLES.items():
        if key == "dateTimeFieldSpecs" and "timeFieldSpec" in d:  # Pinot's time column first
            expected += 1
            with found.at("timeFieldSpec"):
                fields.append(_time_field(d["timeFieldSpec"], found))
                _given(d["timeFieldSpec"], fields[-1].name, "timeFieldSpec", given)
        specs = d.get(key) or []
        if not isinstance(specs, list):
            found.add(key, f"schema '{name}': {key} must be a list of field specs")
            continue
        expected += len(specs)
        for i, spec in enumerate(specs):
            with found.at(f"{key}[{i}]"):
                fields.append(_field(spec, role, f"{key}[{i}]", found))
                _given(spec, fields[-1].name, f"{key}[{i}]", given)
    _unchained(given, found)
    if not fields and not found.errors:
        found.add("dimensionFieldSpecs", f"schema '{name}' has no field specs")
    seen: set[str] = set()
    for f in fields:
        if f.name in seen:
            found.add("", f"schema '{name}' lists column '{f.name}' twice")
        seen.add(f.name)
    pk = d.get("primaryKeyColumns") or []
    if not isinstance(pk, list) or not all(isinstance(c, str) for c in pk):
        found.add(
            "primaryKeyColumns",
            f"schema '{name}': primaryKeyColumns must be a list of column names",
        )
        pk = []
    for c in pk:
        if c not in seen and len(fields) == expected:
            found.add(
                "primaryKeyColumns",
                f"schema '{name}': primary key column '{c}' is not a field of the schema",
            )
    column_nulls = d.get("enableColumnBasedNullHandling", False)
    if not isinstance(column_nulls, bool):
        found.add(
            "enableColumnBasedNullHandling",
            f"schema '{name}': enableColumnBasedNullHandling must be true or false",
        )
    if problems is None:
        raise_all(found, what=f"the Pinot schema '{name}'")
    return PinotSchema(
        name, tuple(fields), tuple(pk), d, tuple(found.unrecognized), column_nulls is True
    )


def _given(spec: Any, column: str, path: str, given: dict[str, tuple[str, str]]) -> None:
    """Note the field's own ``transformFunction`` as given (a ``timeFieldSpec``'s
    conversion between its specs is none: Pinot's rule below does not see it either)."""
    fn = spec.get("transformFunction") if isinstance(spec, dict) else None
    if isinstance(fn, str) and fn.strip():
        given[f"{path}.transformFunction"] = (column, fn)


def _unchained(given: Mapping[str, tuple[str, str]], found: Problems) -> None:
    """Pinot's rule on the schema's own transforms (``SchemaUtils.validate``): none reads
    its own column, and none reads a column another makes ("chained transforms … not
    supported"). A table config's ``transformConfigs`` may read each other (Pinot sorts
    them, :mod:`~sparkpipes.frontends.pinot.chain`); these may not, so a schema Pinot
    refuses is refused here too, in its words. An expression that does not translate is
    left to the table config's checks, which name what is wrong with it."""
    reads: dict[str, tuple[str, ...]] = {}
    for path, (column, fn) in given.items():
        try:
            args = translate(fn, where=f"transform of column '{column}'").fields
        except ConfigError:
            continue
        if column in args:
            found.add(
                path,
                f"the transformFunction of column '{column}' reads its own column; Pinot "
                f'refuses the schema too ("Exception in getting arguments for transform '
                f"function '{fn}' for column '{column}'\": \"The arguments of transform "
                f'function {fn} should not contain the destination column {column}")',
            )
        else:
            reads[path] = args
    made = {given[path][0] for path in reads}
    for path, args in reads.items():
        chained = [a for a in args if a in made]
        if chained:
            names = ", ".join(chained)
            found.add(
                path,
                f"the transformFunction of column '{given[path][0]}' reads {names}, which "
                "another field's transformFunction makes; Pinot refuses the schema too "
                f'("Columns: [{names}] are a result of transformations, and cannot be used '
                'as arguments to other transform functions"). Give these transforms as '
                "the table config's ingestionConfig.transformConfigs instead: those may read "
                "each other",
            )


def _time_field(spec: Any, found: Problems) -> FieldSpec:
    """The legacy ``timeFieldSpec`` as the dateTime field Pinot makes of it
    (:mod:`~sparkpipes.frontends.pinot.timespec`)."""
    t = time_field(spec, found)
    return FieldSpec(
        name=t.name,
        data_type=t.data_type,
        role="dateTime",
        default_null=t.default_null,
        not_null=t.not_null,
        format=DateTimeFormat.parse(t.format, "timeFieldSpec"),
        granularity=f"{t.size}:{t.unit}",
        transform=t.transform,
    )


def _field(spec: Any, role: str, where: str, found: Problems) -> FieldSpec:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be an object with name and dataType")
    found.sort(spec, FIELD_KEYS, "fieldSpec", where)
    name, dtype = spec.get("name"), spec.get("dataType")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where} has no name")
    where = f"{where} ('{name}')"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z0-9_$]+)*", name):
        raise ConfigError(
            f"{where}: column names are letters, digits, '_' and '$', starting with a letter "
            "or '_', and may be dotted ('group.group_city', as complexTypeConfig flattens "
            "nested records into; without it, the record's key of that name)"
        )
    if not isinstance(dtype, str) or dtype.upper() not in TYPES:
        raise ConfigError(
            f"{where}: dataType {dtype!r} is not a Pinot data type ({', '.join(TYPES)})"
        )
    dtype = dtype.upper()
    allowed = METRIC_TYPES if role == "metric" else DATETIME_TYPES if role == "dateTime" else None
    if allowed and dtype not in allowed:
        raise ConfigError(f"{where}: a {role} field cannot be {dtype} ({', '.join(allowed)})")
    single = spec.get("singleValueField", True)
    if not isinstance(single, bool):
        raise ConfigError(f"{where}: singleValueField must be true or false")
    if not single and role != "dimension":
        raise ConfigError(f"{where}: only dimension fields can be multi-value")
    fmt = None
    if role == "dateTime":
        if not isinstance(spec.get("format"), str):
            raise ConfigError(f"{where}: a dateTime field needs a format")
        fmt = DateTimeFormat.parse(spec["format"], where)
        if not isinstance(spec.get("granularity"), str):
            raise ConfigError(f"{where}: a dateTime field needs a granularity")
    transform = spec.get("transformFunction")
    if transform is not None and not isinstance(transform, str):
        raise ConfigError(f"{where}: transformFunction must be a string")
    limit = spec.get("maxLength")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"{where}: maxLength must be a positive whole number, got {limit!r}")
    exceed = spec.get("maxLengthExceedStrategy")
    if exceed is not None and (not isinstance(exceed, str) or exceed.upper() not in EXCEED):
        raise ConfigError(
            f"{where}: maxLengthExceedStrategy {exceed!r} is not one of {', '.join(EXCEED)}"
        )
    return FieldSpec(
        name=name,
        data_type=dtype,
        role=role,
        single_value=single,
        default_null=spec.get("defaultNullValue"),
        not_null=bool(spec.get("notNull", False)),
        format=fmt,
        granularity=spec.get("granularity"),
        transform=transform,
        max_length=limit,
        exceed=exceed.upper() if exceed else None,
    )

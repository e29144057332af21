"""The legacy schema ``timeFieldSpec`` (Pinot before 0.5), read as Pinot reads it.

A ``timeFieldSpec`` names the time column by an ``incomingGranularitySpec`` (the record's
field: ``name``, ``dataType``, ``timeType`` — a ``TimeUnit`` —, ``timeUnitSize``
(default 1) and ``timeFormat``: ``EPOCH`` (the default) or
``SIMPLE_DATE_FORMAT:<pattern>``) and, optionally, an ``outgoingGranularitySpec`` (the
column stored). The column is the outgoing spec's (the incoming one's when there is
none), as Pinot's ``Schema.convertToDateTimeFieldSpec`` makes it a dateTime field: format
``<size>:<unit>:EPOCH`` or ``<size>:<unit>:SIMPLE_DATE_FORMAT:<pattern>``, granularity
``<size>:<unit>``.

When the two specs differ, Pinot's ingestion (``TimeSpecFunctionEvaluator`` with
``TimeConverter``) fills the outgoing column from the incoming field: the incoming value
(a whole number) times its size in its unit is epoch millis, which is then counted in the
outgoing unit (truncated) and divided by the outgoing size (truncated): incoming
``DAYS`` 18000 → outgoing ``HOURS`` 432000. That is the field's transform here, written
with Pinot's own functions (``fromEpochDays``, ``toEpochHoursBucket`` …), unless the spec
gives its own ``transformFunction``. As in Pinot, a conversion needs both specs EPOCH and
different names; sub-millisecond units and a millisecond size other than 1, where Pinot's
two readings of the spec disagree, are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.problems import Problems

#: the keys of a timeFieldSpec (``name`` and ``dataType`` are ignored by Pinot too: the
#: granularity specs give them)
TIME_KEYS = (
    "incomingGranularitySpec",
    "outgoingGranularitySpec",
    "defaultNullValue",
    "transformFunction",
    "maxLength",
    "notNull",
    "singleValueField",
    "name",
    "dataType",
)
GRANULARITY_KEYS = ("name", "dataType", "timeType", "timeUnitSize", "timeFormat")
#: the data types Pinot's TimeConverter writes
TIME_TYPES = ("INT", "LONG", "FLOAT", "DOUBLE", "STRING")
_UNITS = ("NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS")
#: the units Pinot converts between (its transform functions' names)
_CONVERTED = {"SECONDS": "Seconds", "MINUTES": "Minutes", "HOURS": "Hours", "DAYS": "Days"}


@dataclass(frozen=True)
class TimeColumn:
    """The dateTime field a timeFieldSpec is: its column, data type, format (``EPOCH`` in
    ``size`` ``unit``s, or the date ``pattern``), and how it is filled."""

    name: str
    data_type: str
    unit: str
    size: int
    pattern: str | None
    transform: str | None
    default_null: Any = None
    not_null: bool = False

    @property
    def format(self) -> str:
        """The dateTime format Pinot's ``convertToDateTimeFieldSpec`` gives it."""
        if self.pattern is None:
            return f"{self.size}:{self.unit}:EPOCH"
        return f"{self.size}:{self.unit}:SIMPLE_DATE_FORMAT:{self.pattern}"


def time_field(spec: Any, found: Problems) -> TimeColumn:
    """The column a ``timeFieldSpec`` is; its unread keys are sorted into ``found``.
    Raises ConfigError for what cannot be read."""
    where = "timeFieldSpec"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be an object with an incomingGranularitySpec")
    found.sort(spec, TIME_KEYS, "fieldSpec", where)
    incoming = _granularity(spec.get("incomingGranularitySpec"), "incoming", found)
    outgoing = incoming
    if spec.get("outgoingGranularitySpec") is not None:
        outgoing = _granularity(spec["outgoingGranularitySpec"], "outgoing", found)
    if spec.get("singleValueField", True) is not True:
        raise ConfigError(f"{where}: a time field cannot be multi-value (singleValueField)")
    transform = spec.get("transformFunction")
    if transform is not None and not isinstance(transform, str):
        raise ConfigError(f"{where}: transformFunction must be a string")
    if transform is None and incoming != outgoing:
        transform = _conversion(incoming, outgoing, where)
    name, dtype, unit, size, fmt = outgoing
    return TimeColumn(
        name,
        dtype,
        unit,
        size,
        None if fmt == "EPOCH" else fmt.split(":", 1)[1],
        transform or None,
        spec.get("defaultNullValue"),
        bool(spec.get("notNull", False)),
    )


def _granularity(g: Any, which: str, found: Problems) -> tuple[str, str, str, int, str]:
    """(name, dataType, timeType, timeUnitSize, timeFormat) of the ``which`` granularity
    spec; its other keys are sorted into ``found``."""
    where = f"timeFieldSpec.{which}GranularitySpec"
    if isinstance(g, dict):
        found.sort(g, GRANULARITY_KEYS, "granularitySpec", where)
    if not isinstance(g, dict):
        raise ConfigError(f"{where}: needs an object with name, dataType and timeType")
    name, dtype, unit = g.get("name"), g.get("dataType"), g.get("timeType")
    if not isinstance(name, str) or not name or not isinstance(dtype, str) or unit is None:
        raise ConfigError(f"{where}: needs name, dataType and timeType")
    dtype = dtype.upper()
    if dtype not in TIME_TYPES:
        raise ConfigError(f"{where}: dataType {dtype} is not one of {', '.join(TIME_TYPES)}")
    if not isinstance(unit, str) or unit.upper() not in _UNITS:
        raise ConfigError(f"{where}: timeType {unit!r} is not a TimeUnit ({', '.join(_UNITS)})")
    size = g.get("timeUnitSize", 1)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"{where}: timeUnitSize must be a positive whole number")
    fmt = g.get("timeFormat", "EPOCH")
    if not isinstance(fmt, str) or not (
        fmt == "EPOCH" or (fmt.startswith("SIMPLE_DATE_FORMAT:") and len(fmt) > 19)
    ):
        raise ConfigError(
            f"{where}: timeFormat {fmt!r} is not EPOCH or SIMPLE_DATE_FORMAT:<pattern>"
        )
    return name, dtype, unit.upper(), size, fmt


def _conversion(incoming: tuple, outgoing: tuple, where: str) -> str:
    """The Pinot expression of the outgoing value of the incoming field."""
    src, _, in_unit, in_size, in_fmt = incoming
    dst, _, out_unit, out_size, out_fmt = outgoing
    if src == dst:
        raise ConfigError(
            f"{where}: the incoming and outgoing granularity specs differ but both name "
            f"'{src}' (Pinot refuses this time spec too)"
        )
    if in_fmt != "EPOCH" or out_fmt != "EPOCH":
        raise ConfigError(
            f"{where}: converting a SIMPLE_DATE_FORMAT time from incoming to outgoing is not "
            "supported (nor is it by Pinot)"
        )
    for unit, size in ((in_unit, in_size), (out_unit, out_size)):
        if unit not in _CONVERTED and (unit != "MILLISECONDS" or size != 1):
            raise ConfigError(
                f"{where}: converting a time counted in {size} {unit} is not supported"
            )
    millis = f'"{src}"'
    if in_unit in _CONVERTED:
        fn = f"fromEpoch{_CONVERTED[in_unit]}"
        millis = f"{fn}Bucket({millis}, {in_size})" if in_size > 1 else f"{fn}({millis})"
    if out_unit not in _CONVERTED:
        return millis
    fn = f"toEpoch{_CONVERTED[out_unit]}"
    return f"{fn}Bucket({millis}, {out_size})" if out_size > 1 else f"{fn}({millis})"

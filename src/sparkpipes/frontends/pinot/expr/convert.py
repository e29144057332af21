"""Pinot's ``dateTimeConvert`` (``DATETIME_CONVERT``) scalar function, registered in
``FUNCTIONS``, with the format and granularity strings read as Pinot reads them.

Pinot's ingestion calls the scalar function ``DateTimeConvert.dateTimeConvert``
(``pinot-common/.../function/scalar/DateTimeConvert.java``, "equivalent to
DateTimeConversionTransformFunction"); its strings are read by ``DateTimeFormatSpec``,
``DateTimeFormatPatternSpec`` and ``DateTimeGranularitySpec`` (``pinot-spi/.../data/``):

* a format is ``size:unit:EPOCH``, ``size:unit:SIMPLE_DATE_FORMAT:pattern[ tz(zone)]``,
  ``size:unit:TIMESTAMP`` (the colon form, when it begins with a digit), or
  ``EPOCH[|unit[|size]]``, ``SIMPLE_DATE_FORMAT|pattern[|zone]``, ``TIMESTAMP`` (the pipe
  form); a granularity ``size:unit`` or ``unit[|size]``. Units are Java's ``TimeUnit``
  names, upper case, as Pinot's ``valueOf`` takes them.
* the value becomes epoch millis: text (and any value of a ``SIMPLE_DATE_FORMAT`` input) is
  read by the input format (EPOCH text as a ``BigDecimal``, cut to a whole number, so
  ``"1.4988924E12"`` is read), a number as a ``long``; EPOCH counts ``size`` units.
* with four arguments, an EPOCH or TIMESTAMP output is the millis cut toward zero to a
  multiple of the granularity (``ms / g * g``, Java's division), then counted in the
  output's unit and size (EPOCH) or written as ``java.sql.Timestamp`` text (TIMESTAMP,
  ``2017-07-01 00:00:00.0``, UTC as Pinot's servers run); a SIMPLE_DATE_FORMAT output
  truncates the calendar field of the granularity's unit to a multiple of its size in
  the output's time zone (``15:MINUTES`` → minute of the hour 0, 15, 30, 45; ``DAYS``
  counts days of the month from the 1st) and formats by the output's pattern.
* with a fifth argument, the bucketing time zone, the calendar truncation is done in that
  zone for every output; EPOCH and TIMESTAMP outputs are then counted in the output's unit
  and size (epoch millis for TIMESTAMP).

Refused by name, where Pinot fails at the first record or the value would not be Pinot's:
``WEEKS`` / ``MONTHS`` / ``YEARS`` units (Pinot's scalar function has no ``TimeUnit`` for
them), a SIMPLE_DATE_FORMAT without a pattern (Pinot's ISO parser cannot print), a
granularity under a millisecond, and a time zone Java would read as GMT without saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sparkpipes.frontends.pinot.expr.core import (
    _as,
    _def,
    _Fail,
    _from_local,
    _lit,
    _Node,
    _ntz,
    _s,
    _str,
    _to_local,
)
from sparkpipes.frontends.pinot.expr.times import (
    _from_date_time,
    _to_date_time,
    _unparsed,
    _zone_checked,
)

#: Java's TimeUnit → its length in millis (negative: that many of it make one milli)
_UNIT_MS = {
    "NANOSECONDS": -1_000_000,
    "MICROSECONDS": -1_000,
    "MILLISECONDS": 1,
    "SECONDS": 1_000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
#: Pinot's DateTimeTransformUnit names that are no TimeUnit
_CALENDAR_UNITS = ("WEEKS", "MONTHS", "YEARS")
_KINDS = ("EPOCH", "SIMPLE_DATE_FORMAT", "TIMESTAMP")
#: DateTimeFormatPatternSpec's SDF_PATTERN_WITH_TIMEZONE
_WITH_ZONE = re.compile(r"^(.+)( tz[ ]*\((.+)\))[ ]*")
_DAY = 86_400_000


@dataclass(frozen=True)
class TimeFormat:
    """A dateTime format string as Pinot's ``DateTimeFormatSpec`` reads it."""

    kind: str  # EPOCH, SIMPLE_DATE_FORMAT, TIMESTAMP
    unit: str = "MILLISECONDS"
    size: int = 1
    pattern: str | None = None
    zone: str | None = None  # None: UTC

    @classmethod
    def parse(cls, text: str) -> TimeFormat:
        """``1:MILLISECONDS:EPOCH``, ``1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd tz(Europe/Paris)``,
        ``EPOCH|SECONDS|5``, ``SIMPLE_DATE_FORMAT|yyyy-MM-dd|Asia/Tokyo``, ``TIMESTAMP``."""
        if not text:
            raise _Fail("a dateTime format must not be empty")
        if text[0].isdigit():  # the colon form, at most 4 tokens (the pattern keeps its ':')
            tokens = text.split(":", 3)
            if len(tokens) < 3:
                raise _Fail(
                    f"format '{text}' must be of format 'size:timeUnit:timeFormat(:pattern)'"
                )
            size, unit, kind = tokens[0], tokens[1], tokens[2]
            pattern = tokens[3] if len(tokens) > 3 else None
            zone = None
            if kind == "SIMPLE_DATE_FORMAT" and pattern is not None:
                m = _WITH_ZONE.match(pattern)
                if m:
                    pattern, zone = m.group(1).strip(), m.group(3).strip()
        else:  # the pipe form, at most 3 tokens
            tokens = text.split("|", 2)
            kind = tokens[0]
            unit = tokens[1] if len(tokens) > 1 and kind == "EPOCH" else "MILLISECONDS"
            size = tokens[2] if len(tokens) > 2 and kind == "EPOCH" else "1"
            pattern = tokens[1] if len(tokens) > 1 and kind != "EPOCH" else None
            zone = tokens[2] if len(tokens) > 2 and kind != "EPOCH" else None
        if kind not in _KINDS:
            raise _Fail(f"invalid time format '{kind}' in format '{text}' ({', '.join(_KINDS)})")
        if kind == "TIMESTAMP":
            return cls("TIMESTAMP")
        if kind == "SIMPLE_DATE_FORMAT":
            if not pattern:
                raise _Fail(
                    f"format '{text}': a SIMPLE_DATE_FORMAT without a pattern (Pinot's ISO "
                    "parser, which cannot write a date) is not supported"
                )
            return cls(kind, pattern=pattern, zone=zone)
        return cls(kind, _unit(unit, text), _size(size, text))

    @property
    def unit_ms(self) -> int:
        return _UNIT_MS[self.unit]


def _unit(unit: str, text: str) -> str:
    if unit in _CALENDAR_UNITS:
        raise _Fail(
            f"time unit {unit} in '{text}' is not supported (Pinot's dateTimeConvert "
            "scalar function has no TimeUnit for it)"
        )
    if unit not in _UNIT_MS:
        raise _Fail(f"invalid time unit '{unit}' in '{text}' (one of {', '.join(_UNIT_MS)})")
    return unit


def _size(size: str, text: str) -> int:
    if not size.isdigit() or int(size) < 1 or int(size) > 2**31 - 1:
        raise _Fail(f"invalid size '{size}' in '{text}': must be a positive whole number")
    return int(size)


@dataclass(frozen=True)
class Granularity:
    """An output granularity as Pinot's ``DateTimeGranularitySpec`` reads it."""

    unit: str
    size: int

    @classmethod
    def parse(cls, text: str) -> Granularity:
        """``15:MINUTES`` (the colon form) or ``MINUTES|15``, ``DAYS`` (the pipe form)."""
        if not text:
            raise _Fail("the granularity must not be empty")
        colon = text[0].isdigit()
        tokens = text.split(":" if colon else "|", 1)
        if colon and len(tokens) != 2:
            raise _Fail(
                f"granularity '{text}' must be of format 'size:timeUnit' or 'timeUnit|size'"
            )
        unit, size = (tokens[1], tokens[0]) if colon else (tokens[0], [*tokens, "1"][1])
        if unit not in _UNIT_MS:
            raise _Fail(f"invalid time unit '{unit}' in granularity '{text}'")
        g = cls(unit, _size(size, text))
        if g.millis < 1:
            raise _Fail(f"granularity '{text}' is under a millisecond (Pinot divides by zero)")
        return g

    @property
    def millis(self) -> int:
        """``granularityToMillis``: Java's ``TimeUnit`` conversion, cut toward zero."""
        ms = _UNIT_MS[self.unit]
        return self.size * ms if ms > 0 else self.size // -ms


#: Java's old three-letter zone ids (``ZoneId.SHORT_IDS``), which ``TimeZone.getTimeZone``
#: reads and Spark's zone functions read alike (``IST`` is Asia/Kolkata)
_SHORT_IDS = frozenset(
    {
        *("ACT", "AET", "AGT", "ART", "AST", "BET", "BST", "CAT", "CNT", "CST", "CTT", "EAT"),
        *("ECT", "EST", "HST", "IET", "IST", "JST", "MIT", "MST", "NET", "NST", "PLT", "PNT"),
        *("PRT", "PST", "SST", "VST"),
    }
)


def _zone(zone: str | None) -> _Node | None:
    """The zone as an expression node (None: UTC), refused where Java would silently read
    an unknown id as GMT."""
    if zone is None:
        return None
    if zone in _SHORT_IDS:  # not a literal node: the zone checks of times.py pass it by
        return _Node(_str(zone), "STRING")
    return _zone_checked(_s(zone))


def _to_millis(value: _Node, fmt: TimeFormat) -> str:
    """``fromInputFormatToMillis``: the value as epoch millis."""
    text = value.type in (None, "STRING")
    if fmt.kind == "SIMPLE_DATE_FORMAT":
        zone = _zone(fmt.zone)
        args = [_as(value, "STRING"), _s(fmt.pattern or "")]
        return _from_date_time([*args, *([zone] if zone is not None else [])])
    if fmt.kind == "TIMESTAMP":
        ts = _as(value, "TIMESTAMP").sql if text else _as(value, "BIGINT").sql
        return f"unix_millis({ts})" if text else ts
    # EPOCH: text is a BigDecimal cut to a long, a number a long
    count = f"try_cast(try_cast({value.sql} AS DECIMAL(38, 9)) AS BIGINT)"
    count = count if text else _as(value, "BIGINT").sql
    # try_multiply: a count too large for a long is NULL, not a failed batch
    scaled = f"try_multiply({count}, {fmt.size})" if fmt.size != 1 else count
    ms = fmt.unit_ms
    if ms > 1:
        return f"try_multiply({scaled}, {ms})"
    return f"({scaled} div {-ms})" if ms < 0 else scaled


#: the text ``new BigDecimal(String)`` reads (no surrounding blanks)
_DECIMAL = r"'^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$'"


def _unread(value: _Node, fmt: TimeFormat, millis: str) -> str | None:
    """Where Pinot's ``DateTimeConvert.fromInputFormatToMillis`` throws for ``value``:
    text (any value, for SIMPLE_DATE_FORMAT) its input format cannot read
    (``DateTimeFormatSpec.fromFormatToMillis(String)``: ``new BigDecimal`` for EPOCH,
    ``TimestampUtils.toMillisSinceEpoch`` for TIMESTAMP, Joda's ``parseMillis`` for
    SIMPLE_DATE_FORMAT). A number into EPOCH or TIMESTAMP never throws."""
    if value.is_null:
        return None
    x = value.sql
    if fmt.kind == "SIMPLE_DATE_FORMAT":
        return _unparsed([_as(value, "STRING"), _s(fmt.pattern or "")])
    if value.type not in (None, "STRING"):
        return None
    if fmt.kind == "TIMESTAMP":
        return f"(({x}) IS NOT NULL AND ({millis}) IS NULL)"
    return f"(({x}) IS NOT NULL AND NOT ({x}) RLIKE {_DECIMAL})"


def _from_millis(millis: str, fmt: TimeFormat) -> str:
    """``unit.convert(millis, MILLISECONDS) / size``, Java's divisions."""
    ms = fmt.unit_ms
    count = (
        f"({millis} div {ms})" if ms > 1 else f"try_multiply({millis}, {-ms})" if ms < 0 else millis
    )
    return f"({count} div {fmt.size})" if fmt.size != 1 else count


def _truncate(millis: str, g: Granularity, zone: _Node | None) -> str:
    """``truncateDateTime``: the calendar field of ``g``'s unit cut to a multiple of its
    size (and the smaller fields zeroed) in ``zone``."""
    local = _to_local(millis, zone)
    if g.unit in ("NANOSECONDS", "MICROSECONDS"):
        return millis  # Joda has no such field: unchanged
    if g.unit == "DAYS":
        day = f"(dayofmonth({_ntz(local)}) - 1)"
        start = f"({local} - pmod({local}, {_DAY}))"
        cut = f"({start} - {day} * {_DAY}L + ({day} div {g.size}) * {g.size * _DAY}L)"
    else:
        field_ms = _UNIT_MS[g.unit]
        span = {"MILLISECONDS": 1000, "SECONDS": 60_000, "MINUTES": 3_600_000}.get(g.unit, _DAY)
        within = f"pmod({local}, {span})"
        value = f"({within} div {field_ms})" if field_ms > 1 else within
        cut = f"({local} - {within} + ({value} div {g.size}) * {g.size * field_ms})"
    return _from_local(cut, zone)


def _java_timestamp(millis: str) -> str:
    """``new java.sql.Timestamp(ms).toString()`` in UTC: ``2017-07-01 00:00:00.0``."""
    ntz = _ntz(millis)
    frac = f"regexp_replace(format_string('%03d', pmod({millis}, 1000)), '(?<=.)0+$', '')"
    return f"concat(date_format({ntz}, 'yyyy-MM-dd HH:mm:ss'), '.', {frac})"


def _convert(args: list[_Node]) -> _Node:
    source = TimeFormat.parse(_lit(args[1], str, "the input format of dateTimeConvert"))
    target = TimeFormat.parse(_lit(args[2], str, "the output format of dateTimeConvert"))
    g = Granularity.parse(_lit(args[3], str, "the output granularity of dateTimeConvert"))
    millis = _to_millis(args[0], source)
    fails = _unread(args[0], source, millis)
    out_zone = _zone(target.zone) if target.kind == "SIMPLE_DATE_FORMAT" else None
    if len(args) > 4:
        bucket = _zone(_lit(args[4], str, "the bucketing time zone"))
        cut = _truncate(millis, g, bucket)
        if target.kind == "SIMPLE_DATE_FORMAT":
            return replace(_format(cut, target, out_zone), fails=fails)
        return _Node(_from_millis(cut, target), "BIGINT", fails=fails)
    if target.kind == "SIMPLE_DATE_FORMAT":
        return replace(_format(_truncate(millis, g, out_zone), target, out_zone), fails=fails)
    rounded = f"(({millis} div {g.millis}) * {g.millis})" if g.millis > 1 else millis
    if target.kind == "TIMESTAMP":
        return _Node(_java_timestamp(rounded), "STRING", fails=fails)
    return _Node(_from_millis(rounded, target), "BIGINT", fails=fails)


def _format(millis: str, fmt: TimeFormat, zone: _Node | None) -> _Node:
    args = [_Node(millis, "BIGINT"), _s(fmt.pattern or "")]
    return _Node(_to_date_time([*args, *([zone] if zone is not None else [])]), "STRING")


_def(
    "dateTimeConvert(timeValue:*, inputFormat:S, outputFormat:S, outputGranularity:S, "
    "bucketingTimeZone:S?) -> X",
    _convert,
    "a time from one dateTime format to another, bucketed by the output granularity "
    "(Pinot's DateTimeConvert, e.g. '1:MILLISECONDS:EPOCH', '1:MILLISECONDS:EPOCH', "
    "'15:MINUTES')",
)

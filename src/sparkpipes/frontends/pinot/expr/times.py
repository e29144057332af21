"""The date and time functions (epoch conversions, date parts, ``toDateTime`` /
``fromDateTime`` with Joda-Time patterns, ``dateTrunc`` …), registered in ``FUNCTIONS``."""

from __future__ import annotations

import difflib
import re
import zoneinfo
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from sparkpipes.frontends.pinot.expr.core import (
    _NOT,
    _as,
    _def,
    _Fail,
    _floordiv,
    _from_local,
    _lit,
    _Node,
    _ntz,
    _ntz_millis,
    _str,
    _to_local,
    _utc,
    millis_ts,
)

_UNITS = {
    "Seconds": 1000,
    "Minutes": 60_000,
    "Hours": 3_600_000,
    "Days": 86_400_000,
}
for _unit, _f in _UNITS.items():
    _u = _unit.lower()
    _def(
        f"toEpoch{_unit}(millis:L) -> L",
        f"({{0}} div {_f})",
        f"epoch millis → whole {_u} since the epoch (truncated, as Java's TimeUnit)",
    )
    _def(
        f"toEpoch{_unit}Rounded(millis:L, roundToNearest:L) -> L",
        f"((({{0}} div {_f}) div {{1}}) * {{1}})",
        f"epoch {_u}, rounded down to a multiple of roundToNearest",
    )
    _def(
        f"toEpoch{_unit}Bucket(millis:L, bucket:L) -> L",
        f"(({{0}} div {_f}) div {{1}})",
        f"epoch {_u} divided by bucket (n-{_u}-since-epoch)",
    )
    _def(
        f"fromEpoch{_unit}(value:L) -> L",
        f"({{0}} * {_f})",
        f"epoch {_u} → epoch millis",
    )
    _def(
        f"fromEpoch{_unit}Bucket(value:L, bucket:L) -> L",
        f"(({{0}} * {{1}}) * {_f})",
        f"n-{_u}-since-epoch (value * bucket {_u}) → epoch millis",
    )
_def(
    "round(timeValue:L, roundToNearest:L) -> L",
    "(({0} div {1}) * {1})",
    "Pinot's round: timeValue rounded down to a multiple of roundToNearest (BIGINT)",
)
_def("toTimestamp(millis:L) -> T", millis_ts("{0}"), "epoch millis → TIMESTAMP")
_def("fromTimestamp(timestamp:T) -> L", "unix_millis({0})", "TIMESTAMP → epoch millis")
_def("now() -> L", "unix_millis(current_timestamp())", "the batch's start, in epoch millis")

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
    r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.I,
)


def _ago(args: list[_Node]) -> str:
    text = _lit(args[0], str, "the period of ago (an ISO-8601 duration such as 'P1D')")
    m = _DURATION.fullmatch(text.strip())
    if not m or not any(m.groups()[1:]) or text.strip().upper().endswith("T"):
        raise _Fail(f"'{text}' is not an ISO-8601 duration such as 'P1D', 'PT15M' or 'PT1.5S'")
    sign, d, h, mi, s, frac = m.groups()
    seconds = Decimal(f"{s or 0}.{frac or 0}")
    seconds += sum(int(v or 0) * k for v, k in ((d, 86400), (h, 3600), (mi, 60)))
    millis = int(seconds * 1000) * (-1 if sign == "-" else 1)
    return f"(unix_millis(current_timestamp()) - {millis})"


_def("ago(period:S) -> L", _ago, "now minus an ISO-8601 duration ('P1D'), in epoch millis")


def _zone_checked(tz: _Node | None) -> _Node | None:
    value = None if tz is None else tz.literal(str)
    if value is None or value is _NOT or _utc(tz):
        return tz
    offset = re.fullmatch(r"(?:UTC|GMT)?[+-]\d{1,2}(?::?\d\d)?", value)
    zones = zoneinfo.available_timezones()
    if not offset and zones and value not in zones:
        near = difflib.get_close_matches(value, zones, n=1)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        raise _Fail(f"unknown time zone '{value}'{hint}")
    return tz


def _field(sql: str) -> Callable[[list[_Node]], str]:
    def build(args: list[_Node]) -> str:
        tz = _zone_checked(args[1] if len(args) > 1 else None)
        return sql.format(_ntz(_to_local(args[0].sql, tz)))

    return build


for _names, _sql, _what in (
    ("year", "year({})", "year"),
    ("yearOfWeek|yow", "extract(YEAROFWEEK FROM {})", "ISO week-based year"),
    ("quarter", "quarter({})", "quarter, 1-4"),
    ("month", "month({})", "month, 1-12"),
    ("week|weekOfYear", "weekofyear({})", "ISO week of the year, 1-53"),
    ("dayOfYear|doy", "dayofyear({})", "day of the year, 1-366"),
    ("day|dayOfMonth", "dayofmonth({})", "day of the month, 1-31"),
    ("dayOfWeek|dow", "(weekday({}) + 1)", "day of the week, 1 (Monday) to 7 (Sunday)"),
    ("hour", "hour({})", "hour of the day, 0-23"),
    ("minute", "minute({})", "minute of the hour"),
    ("second", "second({})", "second of the minute"),
):
    _def(
        f"{_names}(millis:L, timezone:S?) -> I",
        _field(_sql),
        f"the {_what} of epoch millis, in UTC or the given time zone",
    )
_def(
    "millisecond(millis:L, timezone:S?) -> I",
    lambda a: f"CAST(pmod({a[0].sql}, 1000) AS INT)",
    "the millisecond of the second, 0-999",
)

_MONTHS = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _names_at(names: Sequence[str], index: str) -> str:
    return f"element_at(array({', '.join(map(_str, names))}), {index})"


def _joda(pattern: str) -> list[str | tuple[str, int]]:
    """A Joda-Time pattern as literal texts and (letter, count) fields."""
    out: list[str | tuple[str, int]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            if pattern.startswith("''", i):
                out.append("'")
                i += 2
                continue
            j, buf = i + 1, []
            while True:
                if j >= len(pattern):
                    raise _Fail(f"pattern {pattern!r} has an unterminated quote")
                if pattern[j] == "'":
                    if pattern.startswith("''", j):
                        buf.append("'")
                        j += 2
                        continue
                    break
                buf.append(pattern[j])
                j += 1
            out.append("".join(buf))
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            out.append((c, j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return out


#: the pattern letters Joda-Time's ``DateTimeFormat.forPattern`` knows; any other letter
#: is its "Illegal pattern component"
JODA_LETTERS = frozenset("GCYxweEDyMdaKhHkmsSzZ")


def joda_illegal(pattern: str) -> str | None:
    """The first run of letters Joda-Time refuses in ``pattern`` (unquoted ``T`` in
    ``yyyy-MM-ddTHH``), or None. An unterminated quote is no error to Joda (its text runs
    to the end)."""
    try:
        pieces = _joda(pattern)
    except _Fail:
        pieces = _joda(pattern + "'")
    for piece in pieces:
        if isinstance(piece, tuple) and piece[0] not in JODA_LETTERS:
            return piece[0] * piece[1]
    return None


def _num(sql: str, n: int) -> str:
    return f"CAST({sql} AS STRING)" if n == 1 else f"format_string('%0{n}d', {sql})"


def _format(millis: str, pattern: str, tz: _Node | None) -> str:
    """SQL formatting epoch ``millis`` by the Joda-Time ``pattern`` in zone ``tz``."""
    local = _ntz(_to_local(millis, tz))
    parts: list[str] = []
    for piece in _joda(pattern):
        if isinstance(piece, str):
            parts.append(_str(piece))
            continue
        c, n = piece
        numeric = {
            "y": f"year({local})",
            "Y": f"year({local})",
            "x": f"extract(YEAROFWEEK FROM {local})",
            "w": f"weekofyear({local})",
            "D": f"dayofyear({local})",
            "d": f"dayofmonth({local})",
            "e": f"(weekday({local}) + 1)",
            "H": f"hour({local})",
            "k": f"(pmod(hour({local}) + 23, 24) + 1)",
            "K": f"(hour({local}) % 12)",
            "h": f"(pmod(hour({local}) + 11, 12) + 1)",
            "m": f"minute({local})",
            "s": f"second({local})",
            "C": f"(year({local}) div 100)",
        }
        if c in "yYx" and n == 2:
            parts.append(_num(f"pmod({numeric[c]}, 100)", 2))
        elif c in numeric:
            parts.append(_num(numeric[c], n))
        elif c == "M":
            month = f"month({local})"
            names = [m[:3] for m in _MONTHS] if n == 3 else _MONTHS
            parts.append(_num(month, n) if n <= 2 else _names_at(names, month))
        elif c == "E":
            names = [d[:3] for d in _DAYS] if n <= 3 else _DAYS
            parts.append(_names_at(names, f"(weekday({local}) + 1)"))
        elif c == "a":
            parts.append(f"CASE WHEN hour({local}) < 12 THEN 'AM' ELSE 'PM' END")
        elif c == "S":
            digits = f"format_string('%03d', pmod({millis}, 1000))"
            zeros = "0" * (n - 3)
            parts.append(f"substr({digits}, 1, {n})" if n <= 3 else f"concat({digits}, '{zeros}')")
        elif c == "G":
            parts.append("'AD'")
        elif c == "Z" or (c == "z" and _utc(tz)):
            parts.append(_offset(millis, tz, n if c == "Z" else 3))
        else:
            raise _Fail(f"pattern letter '{c}' of {pattern!r} is not supported")
    return f"concat({', '.join(parts)})" if len(parts) > 1 else (parts or ["''"])[0]


def _offset(millis: str, tz: _Node | None, n: int) -> str:
    """Joda's Z (+0000), ZZ (+00:00) and ZZZ (the zone id) for ``tz`` at ``millis``."""
    if n >= 3:
        return "'UTC'" if _utc(tz) else tz.sql  # type: ignore[union-attr]
    sep = ":" if n == 2 else ""
    if _utc(tz):
        return _str(f"+00{sep}00")
    off = f"(({_to_local(millis, tz)} - {millis}) div 60000)"
    return (
        f"concat(CASE WHEN {off} < 0 THEN '-' ELSE '+' END, format_string('%02d', "
        f"abs({off}) div 60), '{sep}', format_string('%02d', abs({off}) % 60))"
    )


def _to_date_time(args: list[_Node]) -> str:
    pattern = _lit(args[1], str, "the pattern of toDateTime")
    tz = _zone_checked(args[2] if len(args) > 2 else None)
    return _format(args[0].sql, pattern, tz)


_def(
    "toDateTime(millis:L, pattern:S, timezone:S?) -> S",
    _to_date_time,
    "epoch millis → text by a Joda-Time pattern, in UTC or the given time zone",
)

_ZONE_LETTERS = {"Z": {1: "XX", 2: "XXX"}, "z": {}}


#: the English day names Joda-Time reads for ``E`` (any case, short or long)
#: the first English day name of a text, as Joda-Time reads ``E`` (any case, short or
#: long, joined to what follows or not): group 1 what is before it, group 2 the name
_DAY_NAME = (
    "^(.*?)(?i:(monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    "|mon|tue|wed|thu|fri|sat|sun))"
)
_DAY = 86_400_000
#: Joda-Time's numeric fields (``DateTimeFormat.isNumericToken``; ``M`` up to two letters)
_NUMERIC = set("cCxyYdhHmsSeDFWwkK")
#: Joda reads these from one digit up to two (``appendDecimal(field, n, 2)``); Spark's
#: single letter reads one or two, its double letter exactly two
_UP_TO_TWO = set("MdHhkKms")


def _numeric_field(piece: str | tuple[str, int] | None) -> bool:
    return isinstance(piece, tuple) and (
        piece[0] in _NUMERIC or (piece[0] == "M" and piece[1] <= 2)
    )


@dataclass(frozen=True)
class _Parse:
    """How Spark parses what a Joda-Time pattern reads: the ``pattern`` in Spark's
    letters, whether it reads a zone, and whether it reads a day name (``E``, which
    Spark cannot parse: the name is taken out of the text and applied after)."""

    pattern: str
    zoned: bool
    day_name: bool

    def text(self, sql: str) -> str:
        return f"regexp_replace({sql}, {_str(_DAY_NAME)}, '$1')" if self.day_name else sql

    def to_named_day(self, text: str, millis: str, wall: str) -> str:
        """``millis`` moved to the day the text names in the ISO week of its wall-clock
        date ``wall`` (epoch millis of the text's own date and time, read as UTC), as Joda
        sets the parsed day of week after the day of month (``DateTimeParserBucket``
        applies the fields by range, largest first): a name that matches the date changes
        nothing."""
        if not self.day_name:
            return millis
        name = f"lower(substr(regexp_extract({text}, {_str(_DAY_NAME)}, 2), 1, 3))"
        days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        named = "CASE " + " ".join(f"WHEN {name} = '{d}' THEN {i}" for i, d in enumerate(days, 1))
        iso = f"(pmod(floor(({wall}) / {_DAY}) + 3, 7) + 1)"
        return f"(({millis}) + (({named} END) - {iso}) * {_DAY})"


def _spark_pattern(pattern: str) -> _Parse:
    """A Joda-Time pattern for parsing, in Spark's pattern letters. Where Joda reads a
    number of fewer digits than its letters (``2024-1-5`` by ``yyyy-MM-dd``: a field
    next to no number field), Spark is given the letters that read as many: one for
    ``MdHhkKms`` (one or two digits), ``y`` for a year (Joda: up to nine digits). A
    fraction ``S…`` reads one digit up to its letters in both."""
    out, zoned, day_name = [], False, False
    same = set("GyDMdaKhHkmsS")
    pieces = _joda(pattern)
    for i, piece in enumerate(pieces):
        if isinstance(piece, str):
            plain = not any(ch.isalpha() or ch == "'" for ch in piece)
            out.append(piece if plain else "'" + piece.replace("'", "''") + "'")
            continue
        c, n = piece
        c = "y" if c == "Y" else c
        # between no number fields (Spark reads adjacent ones by fixed widths)
        free = not any(_numeric_field(pieces[j]) for j in (i - 1, i + 1) if 0 <= j < len(pieces))
        if free and c in _UP_TO_TWO and n <= 2:
            out.append(c)
        elif free and c == "y" and n >= 3:
            out.append("y")
        elif c in same:
            out.append(c * n)
        elif c == "E":
            day_name = True
        elif c == "Z":
            zoned = True
            out.append({1: "XX", 2: "XXX"}.get(n, "VV"))
        elif c == "z":
            zoned = True
            out.append("z" * n)
        else:
            raise _Fail(f"pattern letter '{c}' of {pattern!r} is not supported for parsing")
    return _Parse("".join(out), zoned, day_name)


def _from_date_time(args: list[_Node]) -> str:
    parse = _spark_pattern(_lit(args[1], str, "the pattern of fromDateTime"))
    text = parse.text(args[0].sql)
    tz = _zone_checked(args[2] if len(args) > 2 else None)
    p = _str(parse.pattern)
    wall = _ntz_millis(f"to_timestamp_ntz({text}, {p})")  # the text's own date and time
    if parse.zoned:
        value = parse.to_named_day(args[0].sql, f"unix_millis(try_to_timestamp({text}, {p}))", wall)
    else:
        value = _from_local(parse.to_named_day(args[0].sql, wall, wall), tz)
    # to_timestamp_ntz throws on text it cannot read: only read what try_to_timestamp reads
    sql = f"CASE WHEN try_to_timestamp({text}, {p}) IS NULL THEN NULL ELSE {value} END"
    return f"coalesce({sql}, {_as(args[3], 'BIGINT').sql})" if len(args) > 3 else sql


def _unparsed(args: list[_Node]) -> str:
    """Where ``fromDateTime(text, pattern)`` throws in Pinot: Joda's ``parseMillis`` of
    text the pattern does not read (``DateTimePatternHandler.parseWithDstGapFallback``;
    only the form with a default catches it), judged by Spark's parse of the pattern."""
    parse = _spark_pattern(_lit(args[1], str, "the pattern"))
    text, pattern = parse.text(args[0].sql), _str(parse.pattern)
    return f"(({args[0].sql}) IS NOT NULL AND try_to_timestamp({text}, {pattern}) IS NULL)"


def _from_date_time_node(args: list[_Node]) -> _Node:
    fails = _unparsed(args) if len(args) < 4 and not args[0].is_null else None
    return _Node(_from_date_time(args), "BIGINT", fails=fails)


_def(
    "fromDateTime(text:S, pattern:S, timezone:S?, default:L?) -> L",
    _from_date_time_node,
    "text by a Joda-Time pattern → epoch millis, read in UTC or the given time zone "
    "(an offset in the text wins); text that does not parse is NULL, or default",
)

_TIME_UNITS = {
    "NANOSECONDS": -1_000_000,
    "MICROSECONDS": -1_000,
    "MILLISECONDS": 1,
    "SECONDS": 1_000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
_TRUNC = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
}


def _time_unit(node: _Node, what: str) -> int:
    unit = _lit(node, str, what).upper()
    if unit not in _TIME_UNITS:
        raise _Fail(f"{what} '{unit}' is not one of {', '.join(_TIME_UNITS)}")
    return _TIME_UNITS[unit]


def _date_trunc(args: list[_Node]) -> str:
    unit = _lit(args[0], str, "the unit of dateTrunc").lower()
    units = [*_TRUNC, "week", "month", "quarter", "year"]
    if unit not in units:
        raise _Fail(f"dateTrunc unit '{unit}' is not one of {', '.join(units)}")
    fin = _time_unit(args[2], "the input time unit") if len(args) > 2 else 1
    tz = _zone_checked(args[3] if len(args) > 3 else None)
    fout = _time_unit(args[4], "the output time unit") if len(args) > 4 else fin
    value = args[1].sql
    millis = f"({value} div {-fin})" if fin < 0 else f"({value} * {fin})" if fin > 1 else value
    local = _to_local(millis, tz)
    day = 86_400_000
    if unit in _TRUNC:
        size = _TRUNC[unit]
        trunc = local if size == 1 else f"({local} - pmod({local}, {size}))"
    else:
        days = _floordiv(local, day)
        if unit == "week":
            trunc = f"(({days}) - pmod(({days}) + 3, 7)) * {day}"
        else:
            fmt = {"month": "MM", "quarter": "QUARTER", "year": "YEAR"}[unit]
            start = f"trunc(date_from_unix_date(CAST({days} AS INT)), '{fmt}')"
            trunc = f"(CAST(unix_date({start}) AS BIGINT) * {day})"
    out = _from_local(trunc, tz)
    return f"({out} * {-fout})" if fout < 0 else f"({out} div {fout})" if fout > 1 else out


_def(
    "dateTrunc(unit:S, timeValue:L, inputTimeUnit:S?, timezone:S?, outputTimeUnit:S?) -> L",
    _date_trunc,
    "timeValue truncated to the start of its millisecond/second/minute/hour/day/week "
    "(Monday)/month/quarter/year, in UTC or the given time zone",
)

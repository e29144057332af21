"""Java's ``SimpleDateFormat`` patterns as Kafka Connect's ``TimestampConverter`` and
``TimestampRouter`` use them, formatted and parsed column-wise on Arrow.

Connect makes ``new SimpleDateFormat(pattern)`` (the worker JVM's default locale) and sets
it to UTC. What is promised is that format in English (``en_US``: what the JVM takes when
``LANG`` is unset or ``C``, as in Connect's images): the letters ``y M d H m s S`` (numbers),
``MMM``/``MMMM`` (``Dec``/``December``), ``E``/``EEEE`` (``Thu``/``Thursday``), ``z``
(``UTC``; ``zzzz`` ``Coordinated Universal Time``), ``Z`` (``+0000``) and ``X`` (``Z``);
text in quotes as it is. Parsing is ``SimpleDateFormat.parse`` (OpenJDK's
``subParse``): names in any case, the long name before the short one; a number takes
every digit unless a numeric field follows at once (then the letter count); numbers
before a numeric field may be preceded by blanks; a two-digit ``yy`` lands within 80
years before and 20 after the moment the transform was made; a day name is read and
ignored where the day of the month is given (Java's lenient calendar does so); values
out of range roll over (``Dec 32`` is ``Jan 1``), and text after the pattern is ignored.
Zones: ``GMT``, ``GMT+hh:mm``, ``+hhmm`` and the UTC zone's own names (``UTC``,
``Coordinated Universal Time``) are read as Java reads them; another zone name
(``PST``, ``CET``) is refused for its record: Java resolves it through its table of
every zone's names, where a name such as ``CST`` or ``IST`` belongs to several zones and
the one chosen depends on the JVM. Dates are proleptic Gregorian (Java's calendar is
Julian before 1582-10-15).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the letters formatted and parsed here; the other letters Java knows are refused by name
SUPPORTED = "yMdHmsSEzZX"
JAVA_LETTERS = "GyMdkHmsSEDFwWahKzZYuXL"
#: numeric fields (Java's ``shouldObeyCount``: a field right before one obeys its count)
_NUMERIC = "ydHmsS"
MONTHS = [
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
UTC_NAMES = ("Coordinated Universal Time", "UTC")
#: a run of digits longer than this is refused (Java wraps it to an int)
_MAX_DIGITS = 9
_MAX_YEAR = 200_000_000
_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']+")


@dataclass(frozen=True)
class Token:
    """A letter run (``letter`` set, ``count`` letters) or literal ``text``."""

    letter: str = ""
    count: int = 0
    text: str = ""

    def numeric(self) -> bool:
        return self.letter in _NUMERIC or (self.letter == "M" and self.count <= 2)


def tokens(pattern: str) -> list[Token]:
    """A pattern as Java compiles it: letter runs and literal text (``'…'`` quoted,
    ``''`` a quote)."""
    out: list[Token] = []
    for m in _TOKEN.finditer(pattern):
        text = m.group(0)
        if text.startswith("'"):
            out.append(Token(text=text[1:-1].replace("''", "'") or "'"))
        elif text[0].isalpha():
            out.append(Token(text[0], len(text)))
        else:
            out.append(Token(text=text))
    return out


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` is not one formatted and parsed here, or None."""
    if pattern.count("'") % 2:
        return "has an unfinished quote (Java: Unfinished quote in pattern)"
    letters = [t for t in tokens(pattern) if t.letter]
    illegal = sorted({t.letter for t in letters if t.letter not in JAVA_LETTERS})
    if illegal:
        return f"has '{illegal[0]}', which is no SimpleDateFormat pattern letter"
    bad = sorted({t.letter for t in letters if t.letter not in SUPPORTED})
    if bad:
        return (
            f"uses pattern letters {', '.join(bad)}, not supported yet ({' '.join(SUPPORTED)} are)"
        )
    if any(t.letter == "X" and t.count > 3 for t in letters):
        return "has XXXX: Java's X takes 1 to 3 letters (invalid ISO 8601 format)"
    if any(t.count > 9 and (t.numeric() or t.letter == "y") for t in letters):
        return "repeats a numeric pattern letter more than 9 times"
    return None


def parse_refusal(pattern: str) -> str | None:
    """Why text is not parsed by ``pattern`` here (formatting by it is), or None."""
    letters = {t.letter for t in tokens(pattern) if t.letter}
    if "E" in letters and "d" not in letters:
        return (
            "is read by a pattern with a day name (E) and no day of the month (d): which "
            "day Java's lenient calendar then picks is not reproduced here"
        )
    return None


# -- formatting -----------------------------------------------------------------------------
def format_timestamps(ts: pa.Array, pattern: str) -> pa.Array:
    """Timestamps as text by ``pattern``, in UTC, as Java formats them in English."""
    ts = ts.cast(pa.timestamp("ms", "UTC"))
    parts: list[pa.Array | str] = []
    for t in tokens(pattern):
        if not t.letter:
            parts.append(t.text)
        else:
            parts.append(_field(ts, t))
    if not parts:
        return pc.if_else(ts.is_valid(), "", pa.scalar(None, pa.string()))
    if not any(isinstance(p, pa.Array) for p in parts):
        text = "".join(p for p in parts if isinstance(p, str))
        return pc.if_else(ts.is_valid(), text, pa.scalar(None, pa.string()))
    out = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(ts.is_valid(), out, pa.scalar(None, pa.string()))


def _field(ts: pa.Array, t: Token) -> pa.Array | str:
    if t.letter == "M" and t.count >= 3:
        names = pa.array([m if t.count >= 4 else m[:3] for m in MONTHS])
        return names.take(pc.subtract(pc.month(ts), 1))
    if t.letter == "E":
        names = pa.array([d if t.count >= 4 else d[:3] for d in DAYS])
        return names.take(pc.day_of_week(ts))
    if t.letter == "z":
        return UTC_NAMES[0] if t.count >= 4 else UTC_NAMES[1]
    if t.letter == "Z":
        return "+0000"
    if t.letter == "X":
        return "Z"
    value = {
        "y": pc.year,
        "M": pc.month,
        "d": pc.day,
        "H": pc.hour,
        "m": pc.minute,
        "s": pc.second,
        "S": pc.millisecond,
    }[t.letter](ts)
    digits = value.cast(pa.string())
    if t.letter == "y" and t.count == 2:
        return pc.utf8_slice_codeunits(pc.utf8_lpad(digits, 4, "0"), -2)
    return pc.utf8_lpad(digits, t.count, "0")


# -- parsing --------------------------------------------------------------------------------
#: why a text with a zone name Java looks up in its table of names is refused
ZONE_NAMES = (
    "has a time-zone name other than GMT or UTC: Java resolves it through its table of "
    "every zone's names, where one name (CST, IST) may stand for several zones; write "
    "GMT, UTC or an offset (+0100, GMT+01:00)"
)


@dataclass(frozen=True)
class Parsed:
    """Parsed text: the timestamps (null where not read), the texts the pattern does
    not read, and those refused (``why``: a zone name Java would resolve by its table,
    or :func:`parse_refusal`'s reason)."""

    timestamps: pa.Array
    unread: pa.Array
    refused: pa.Array
    why: str = ZONE_NAMES


def _names(names: list[str]) -> str:
    return "(?i:" + "|".join(re.escape(n) for n in names) + ")"


def _regex(toks: list[Token]) -> tuple[str, list[tuple[str, Token]]]:
    """The pattern as one anchored regular expression (RE2), and the group of each field."""
    pieces, groups = ["^"], []
    for i, t in enumerate(toks):
        if not t.letter:
            pieces.append(re.escape(t.text))
            continue
        g = f"f{i}"
        groups.append((g, t))
        follows = toks[i + 1] if i + 1 < len(toks) else None
        obey = follows is not None and follows.letter != "" and follows.numeric()
        if t.numeric():
            if obey:
                pieces.append(f"(?P<{g}>-[0-9]{{1,{max(1, t.count - 1)}}}|[0-9]{{1,{t.count}}})")
            else:
                pieces.append(f"[ \\t]*(?P<{g}>-?[0-9]+)")
        elif t.letter == "M":
            pieces.append(f"(?P<{g}>{_names(MONTHS + [m[:3] for m in MONTHS])})")
        elif t.letter == "E":
            pieces.append(f"(?P<{g}>{_names(DAYS + [d[:3] for d in DAYS])})")
        elif t.letter in "zZ":
            utc = _names(list(UTC_NAMES))
            pieces.append(
                f"(?:[ \\t]*(?P<{g}s>[+-][0-9]{{4}})|(?P<{g}g>(?i:GMT))"
                f"(?P<{g}t>[+-][0-9]{{0,2}}:?[0-9]{{0,2}})?|[ \\t]*(?P<{g}n>{utc})"
                f"|[ \\t]*(?P<{g}o>[A-Za-z][A-Za-z/_]*))"
            )
        else:  # X: Z, or ±hh, ±hhmm, ±hh:mm by count
            tail = {1: "", 2: "[0-9]{2}", 3: ":[0-9]{2}"}[t.count]
            pieces.append(f"[ \\t]*(?P<{g}x>Z|[+-][0-9]{{2}}{tail})")
    return "".join(pieces), groups


def century_start(now: dt.datetime | None = None) -> dt.datetime:
    """Java's ``defaultCenturyStart``: 80 years before the format was made."""
    now = now or dt.datetime.now(dt.UTC)
    try:
        return now.replace(year=now.year - 80)
    except ValueError:  # 29 February
        return now.replace(year=now.year - 80, day=28)


def parse(texts: pa.Array, pattern: str, start: dt.datetime | None = None) -> Parsed:
    """Text as timestamps (ms, UTC) by ``pattern`` (see the module docstring)."""
    texts = texts.cast(pa.string())
    n = len(texts)
    why = parse_refusal(pattern)
    if why is not None:
        none = pa.array([False] * n, pa.bool_())
        return Parsed(pa.nulls(n, pa.timestamp("ms", "UTC")), none, texts.is_valid(), why)
    toks = tokens(pattern)
    regex, groups = _regex(toks)
    found = pc.extract_regex(texts, regex)
    matched = pc.fill_null(found.is_valid(), False)
    bad = np.zeros(n, dtype=bool)
    zoned = np.zeros(n, dtype=bool)
    fields = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
    values = {k: np.full(n, v, dtype=np.int64) for k, v in fields.items()}
    offset = np.zeros(n, dtype=np.int64)
    two_digit = np.zeros(n, dtype=bool)
    for g, t in groups:
        if t.letter == "E":
            continue
        if t.letter in "zZX":
            off, wrong, named = _zone(found, g, t)
            offset, bad, zoned = offset + off, bad | wrong, zoned | named
            continue
        text = pc.fill_null(pc.struct_field(found, g), "")
        if t.letter == "M" and t.count >= 3:
            lower = pc.utf8_lower(text)
            index = pc.index_in(lower, pa.array([m.lower() for m in MONTHS]))
            short = pc.index_in(lower, pa.array([m[:3].lower() for m in MONTHS]))
            month = pc.fill_null(pc.coalesce(index, short), 0).to_numpy(zero_copy_only=False)
            values["M"] = month.astype(np.int64) + 1
            continue
        digits = pc.utf8_length(pc.utf8_ltrim(text, "-"))
        bad |= pc.fill_null(pc.greater(digits, _MAX_DIGITS), False).to_numpy(zero_copy_only=False)
        number = pc.if_else(pc.equal(text, ""), "0", text)
        number = pc.if_else(pc.greater(digits, _MAX_DIGITS), "0", number)
        values[t.letter] = number.cast(pa.int64()).to_numpy(zero_copy_only=False)
        if t.letter == "y" and t.count <= 2:
            two = pc.match_substring_regex(text, "^[0-9]{2}$").to_numpy(zero_copy_only=False)
            two_digit |= two
    begin = start or century_start()
    year = values["y"]
    bad |= np.abs(year) > _MAX_YEAR  # beyond what epoch milliseconds hold
    adjusted = year + (begin.year // 100) * 100 + np.where(year < begin.year % 100, 100, 0)
    year = np.where(two_digit, adjusted, year)
    ms = _millis(year, values) - offset
    begin_ms = int(begin.timestamp() * 1000)
    ambiguous = two_digit & (values["y"] == begin.year % 100) & (ms < begin_ms)
    if ambiguous.any():
        ms = np.where(ambiguous, _millis(year + 100, values) - offset, ms)
    ok = matched.to_numpy(zero_copy_only=False) & ~bad & ~zoned
    out = pa.array(ms, pa.int64(), mask=~ok).cast(pa.timestamp("ms", "UTC"))
    valid = texts.is_valid().to_numpy(zero_copy_only=False)
    return Parsed(
        out,
        pa.array(valid & ~ok & ~zoned, pa.bool_()),
        pa.array(valid & zoned & matched.to_numpy(zero_copy_only=False), pa.bool_()),
    )


def _zone(found: pa.Array, g: str, t: Token) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A zone field's offset (ms), the rows whose zone text Java would not read, and the
    rows with a zone name resolved only by Java's table of names."""

    def part(name: str) -> pa.Array:
        return pc.fill_null(pc.struct_field(found, name), "")

    n = len(found)
    none = np.zeros(n, dtype=bool)
    if t.letter == "X":
        offset, wrong = _offset(part(f"{g}x"), r"^(?P<s>[+-])(?P<h>[0-9]{2}):?(?P<m>[0-9]{0,2})$")
        return offset, wrong, none
    rfc, wrong = _offset(part(f"{g}s"), r"^(?P<s>[+-])(?P<h>[0-9]{2})(?P<m>[0-9]{2})$")
    # GMT+h:mm, GMT+hh:mm: Java's subParseNumericZone wants the colon and two minutes
    gmt, tail_wrong = _offset(part(f"{g}t"), r"^(?P<s>[+-])(?P<h>[0-9]{1,2}):(?P<m>[0-9]{2})$")
    named = pc.not_equal(part(f"{g}o"), "").to_numpy(zero_copy_only=False)
    return rfc + gmt, wrong | tail_wrong, named


def _offset(text: pa.Array, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """``±hh[:]mm`` texts as offsets (ms; 0 for ``""`` and ``Z``), and the texts that are
    there but not of ``shape`` or out of range (hours over 23, minutes over 59)."""
    found = pc.extract_regex(text, shape)
    given = pc.and_(pc.not_equal(text, ""), pc.not_equal(text, "Z"))
    sign = np.where(pc.starts_with(text, "-").to_numpy(zero_copy_only=False), -1, 1)
    hours = _digits(pc.struct_field(found, "h"))
    minutes = _digits(pc.struct_field(found, "m"))
    given_np = given.to_numpy(zero_copy_only=False)
    shaped = pc.fill_null(found.is_valid(), False).to_numpy(zero_copy_only=False)
    wrong = given_np & (~shaped | (hours > 23) | (minutes > 59))
    return np.where(given_np, sign * (hours * 60 + minutes) * 60_000, 0), wrong


def _digits(col: pa.Array) -> np.ndarray:
    text = pc.fill_null(col, "")
    text = pc.if_else(pc.match_substring_regex(text, "^[0-9]+$"), text, "0")
    return text.cast(pa.int64()).to_numpy(zero_copy_only=False)


def _millis(year: np.ndarray, v: dict[str, np.ndarray]) -> np.ndarray:
    """Epoch milliseconds of lenient calendar fields (month 1-based, any value rolls)."""
    month0 = v["M"] - 1
    y = year + np.floor_divide(month0, 12)
    m = np.mod(month0, 12) + 1
    days = _days_from_civil(y, m) + v["d"] - 1
    return (((days * 24 + v["H"]) * 60 + v["m"]) * 60 + v["s"]) * 1000 + v["S"]


def _days_from_civil(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of the first of month ``m`` of year ``y`` (proleptic
    Gregorian; H. Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * np.mod(m + 9, 12) + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468

"""Apache Kafka's ``Cast`` and ``TimestampConverter`` on Arrow columns, with Connect's
conversions: integers narrow as Java's ``Number.byteValue()`` does (two's complement, no
error), a float to an integer truncates, booleans are 1/0 and any non-zero number is
true, text parses as Java's ``parseLong``/``parseDouble``/``parseBoolean``; a value
that does not parse is refused (Connect's task fails on it). Timestamps are formatted
and parsed with Java ``SimpleDateFormat`` patterns in UTC, as Connect does.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.connect.smt.base import (
    Options,
    Outcome,
    Records,
    Transform,
    fields_of,
    refuse_all,
    refuse_where,
    struct_of,
)

_NULL_DEFAULT = "replace.null.with.default"
#: Connect's Cast target types → Arrow
TYPES = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}
_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def cast_column(col: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array | None]:
    """``col`` as Connect's Cast converts it to ``target``: (the result, a mask of the
    values that do not convert, or None)."""
    src = col.type
    if pa.types.is_null(src):
        return pa.nulls(len(col), target), None
    if pa.types.is_string(target):
        if pa.types.is_floating(src):
            text = col.cast(pa.string())
            plain = pc.match_substring_regex(text, r"^-?\d+$")
            return pc.if_else(plain, pc.binary_join_element_wise(text, ".0", ""), text), None
        if pa.types.is_binary(src):
            return pa.array(
                [None if v is None else base64.b64encode(v).decode() for v in col.to_pylist()],
                pa.string(),
            ), None
        if pa.types.is_boolean(src) or pa.types.is_integer(src) or pa.types.is_string(src):
            return col.cast(pa.string()), None
        return col, pc.is_valid(col)
    if pa.types.is_boolean(target):
        if pa.types.is_integer(src) or pa.types.is_floating(src):
            return pc.not_equal(col, 0), None
        if pa.types.is_string(src):
            return pc.equal(pc.utf8_lower(col), "true"), None
        if pa.types.is_boolean(src):
            return col, None
        return col, pc.is_valid(col)
    if pa.types.is_boolean(src):
        return col.cast(pa.int8()).cast(target), None
    if pa.types.is_integer(src) or pa.types.is_floating(src):
        return col.cast(target, safe=False), None
    if pa.types.is_string(src):
        try:
            return col.cast(target), None
        except _CAST_ERRORS:
            out, bad = [], []
            for v in col.to_pylist():
                try:
                    out.append(None if v is None else pa.scalar(v).cast(target).as_py())
                    bad.append(False)
                except _CAST_ERRORS:
                    out.append(None)
                    bad.append(True)
            return pa.array(out, target), pa.array(bad)
    return col, pc.is_valid(col)


class Cast(Transform):
    """``Cast$Key|$Value``: ``spec`` is ``field:type,…`` (top-level fields of a struct)
    or one ``type`` (the whole operand); types int8, int16, int32, int64, float32,
    float64, boolean, string. A null operand passes unchanged."""

    options: ClassVar[frozenset[str]] = frozenset({"spec", _NULL_DEFAULT})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.whole: pa.DataType | None = None
        self.casts: dict[str, pa.DataType] = {}
        spec = opts.list("spec", required=True)
        for item in spec:
            name, sep, kind = item.rpartition(":")
            kind = kind.strip().lower()  # Cast.java: Schema.Type.valueOf(upper case)
            if kind not in TYPES:
                opts.problem("spec", f"has type '{kind}': valid types are {', '.join(TYPES)}")
                continue
            if not sep:
                if len(spec) > 1:
                    opts.problem("spec", "casts the whole value and fields at once")
                self.whole = TYPES[kind]
            else:
                self.casts[name.strip()] = TYPES[kind]
        opts.boolean(_NULL_DEFAULT, True)

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        if self.whole is not None:
            out, bad = cast_column(column, self.whole)
            return self._done(records, out, bad, f"Cast to {self.whole} failed")
        if pa.types.is_null(column.type):
            return Outcome(records)
        if not pa.types.is_struct(column.type):
            return refuse_all(
                records, f"Only Struct objects supported for [cast types], found: {column.type}"
            )
        names, cols = fields_of(column), []
        failed: pa.Array | None = None
        for i, name in enumerate(names):
            col = pc.struct_field(column, [i])
            if name in self.casts:
                col, bad = cast_column(col, self.casts[name])
                if bad is not None:
                    failed = bad if failed is None else pc.or_(failed, bad)
            cols.append(col)
        out = struct_of(names, cols, column.is_valid(), len(records))
        return self._done(records, out, failed, "a field does not convert to its Cast type")

    def _done(self, records: Records, out: pa.Array, bad: pa.Array | None, why: str) -> Outcome:
        records = self.with_operand(records, out)
        if bad is None:
            return Outcome(records)
        kept, refused = refuse_where(records, bad, why)
        return Outcome(kept, refused)


# -- TimestampConverter ---------------------------------------------------------------------
_UNITS = {"seconds": "s", "milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}
#: SimpleDateFormat letters → (strftime for parsing, zero-padded width of the component)
_LETTERS = {"y": "%Y", "M": "%m", "d": "%d", "H": "%H", "m": "%M", "s": "%S", "S": None}
_PATTERN_TOKEN = re.compile(r"'[^']*'|([A-Za-z])\1*|[^A-Za-z']+")


def _tokens(pattern: str) -> list[tuple[str, str]]:
    """A SimpleDateFormat pattern as (kind, text): kind is a letter run or '' for text."""
    out = []
    for m in _PATTERN_TOKEN.finditer(pattern):
        text = m.group(0)
        if text.startswith("'"):
            out.append(("", text[1:-1] or "'"))
        elif text[0].isalpha():
            out.append((text[0], text))
        else:
            out.append(("", text))
    return out


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` is not one sparkpipes formats (letters y M d H m s S only), or None."""
    tokens = _tokens(pattern)
    bad = sorted({k for k, _ in tokens if k and k not in _LETTERS})
    if bad:
        return f"uses pattern letters {', '.join(bad)}, not supported yet (y M d H m s S are)"
    if any(k == "M" and len(text) >= 3 for k, text in tokens):  # Jan, January in Java
        return "uses month names (MMM, MMMM), not supported yet (MM is)"
    if any(k and len(text) > 9 for k, text in tokens):  # each run pads every value
        return "repeats a pattern letter more than 9 times"
    return None


def format_timestamps(ts: pa.Array, pattern: str) -> pa.Array:
    """UTC timestamps as text by a SimpleDateFormat ``pattern``, column-wise."""
    ts = ts.cast(pa.timestamp("ms", "UTC"))
    parts: list[pa.Array | str] = []
    ms = pc.millisecond(ts)
    for kind, text in _tokens(pattern):
        if not kind:
            parts.append(text)
            continue
        value = {
            "y": pc.year(ts),
            "M": pc.month(ts),
            "d": pc.day(ts),
            "H": pc.hour(ts),
            "m": pc.minute(ts),
            "s": pc.second(ts),
            "S": ms,
        }[kind]
        digits = value.cast(pa.string())
        if kind == "y" and len(text) == 2:
            digits = pc.utf8_slice_codeunits(pc.utf8_lpad(digits, 4, "0"), -2)
        elif kind == "S" and len(text) < 3:  # fewer digits: the value as is
            pass
        parts.append(pc.utf8_lpad(digits, len(text), "0"))
    if not parts:
        return pa.array([""] * len(ts), pa.string())
    out = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(ts.is_valid(), out, pa.scalar(None, pa.string()))


def _code(kind: str, text: str, fraction: str) -> str:
    """A pattern token as ``strptime`` writes it (``fraction`` for ``S``)."""
    if not kind:
        return text.replace("%", "%%")
    if kind == "y" and len(text) == 2:
        return "%y"
    return _LETTERS[kind] or fraction


def parse_timestamps(texts: pa.Array, pattern: str | None) -> tuple[pa.Array, pa.Array]:
    """Text as UTC timestamps (ms) by a SimpleDateFormat ``pattern``, or as ISO-8601
    (how connectors here write a ``Timestamp`` in their JSON records: Connect's JDBC
    source would hand the transform a ``Timestamp``, which ``format`` does not parse):
    (timestamps, mask of texts that do neither). Column-wise (Arrow's ``strptime`` and
    ISO-8601 cast); only texts neither reads whole (fractions of a second by pattern,
    zone offsets) are read one by one."""
    kind = pa.timestamp("ms", "UTC")
    texts = texts.cast(pa.string())
    out = pa.nulls(len(texts), kind)
    tokens = _tokens(pattern) if pattern is not None else []
    if pattern is not None and not any(k == "S" for k, _ in tokens):
        fmt = "".join(_code(k, text, "") for k, text in tokens)
        out = pc.strptime(texts, format=fmt, unit="ms", error_is_null=True)
        out = out.cast(kind) if out.type.tz is None else out
    left = pc.and_(texts.is_valid(), out.is_null())
    if pc.any(left).as_py():
        try:  # zone-less ISO-8601, as the JDBC source writes timestamp columns
            iso = pc.if_else(left, texts, pa.scalar(None, pa.string())).cast(pa.timestamp("us"))
            out = pc.coalesce(out, pc.assume_timezone(iso, "UTC").cast(kind))
        except _CAST_ERRORS:
            out = _one_by_one(texts, out, pattern, tokens)
    bad = pc.and_(texts.is_valid(), out.is_null())
    return out, bad


def _one_by_one(
    texts: pa.Array, out: pa.Array, pattern: str | None, tokens: list[tuple[str, str]]
) -> pa.Array:
    py = "".join(_code(k, text, "%f") for k, text in tokens) if pattern is not None else None
    values: list[dt.datetime | None] = []
    for text, done in zip(texts.to_pylist(), out.to_pylist()):
        parsed = done
        if parsed is None and text is not None:
            parsed = _parse_one(text, py)
        values.append(parsed)
    return pa.array(values, pa.timestamp("ms", "UTC"))


def _parse_one(text: str, py: str | None) -> dt.datetime | None:
    for attempt in (py, None):
        try:
            if attempt is None:
                parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            else:
                parsed = dt.datetime.strptime(text, attempt)
        except ValueError:
            continue
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)
    return None


class TimestampConverter(Transform):
    """``TimestampConverter$Key|$Value``: the operand (``field`` empty) or its field
    ``field`` converted to ``target.type``: ``string`` (by ``format``, a SimpleDateFormat
    pattern, UTC), ``unix`` (an integer in ``unix.precision``, default milliseconds),
    ``Timestamp``, ``Date`` (the day, midnight UTC) or ``Time`` (the time of day). The
    input's kind follows its type: a timestamp, an integer (unix, by precision) or
    text — parsed by ``format``, or as ISO-8601 (the JSON connectors here write
    timestamps so, where Connect's JDBC source hands it a ``Timestamp``). A null stays
    null."""

    options: ClassVar[frozenset[str]] = frozenset(
        {"field", "target.type", "format", "unix.precision", _NULL_DEFAULT}
    )

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.field = opts.text("field", "") or ""
        self.target = opts.choice("target.type", ("string", "unix", "Date", "Time", "Timestamp"))
        self.format = opts.text("format", "") or None
        self.unit = _UNITS[opts.choice("unix.precision", tuple(_UNITS), "milliseconds")]
        opts.boolean(_NULL_DEFAULT, True)
        if self.target == "string" and not self.format:
            opts.problem(
                "format", "is required with target.type string (a SimpleDateFormat pattern)"
            )
        if self.format:
            why = check_pattern(self.format)
            if why:
                opts.problem("format", why)

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        if not self.field:
            out, bad = self._convert(column)
            records = self.with_operand(records, out)
            kept, refused = refuse_where(
                records, bad, "the value is not a timestamp this format reads"
            )
            return Outcome(kept, refused)
        if pa.types.is_null(column.type):
            return Outcome(records)
        if not pa.types.is_struct(column.type):
            return refuse_all(
                records,
                "Only Struct objects supported for [converting timestamp formats], found: "
                f"{column.type}",
            )
        names = fields_of(column)
        if self.field not in names:
            return refuse_all(records, f"{self.field} is not a valid field name")
        cols = [pc.struct_field(column, [i]) for i in range(len(names))]
        at = names.index(self.field)
        cols[at], bad = self._convert(cols[at])
        out = struct_of(names, cols, column.is_valid(), len(records))
        kept, refused = refuse_where(
            self.with_operand(records, out),
            bad,
            f"field {self.field} is not a timestamp this format reads",
        )
        return Outcome(kept, refused)

    def _convert(self, col: pa.Array) -> tuple[pa.Array, pa.Array]:
        ts, bad = self._timestamps(col)
        if self.target == "string":
            return format_timestamps(ts, self.format or ""), bad
        if self.target == "unix":
            return ts.cast(pa.timestamp(self.unit, "UTC")).cast(pa.int64()), bad
        if self.target == "Date":
            return ts.cast(pa.date32()), bad
        if self.target == "Time":
            ticks = ts.cast(pa.int64())
            of_day = pc.subtract(
                ticks,
                pc.multiply(
                    pc.floor(pc.divide(ticks.cast(pa.float64()), 86_400_000)).cast(pa.int64()),
                    86_400_000,
                ),
            )
            return of_day.cast(pa.int32()).cast(pa.time32("ms")), bad
        return ts, bad

    def _timestamps(self, col: pa.Array) -> tuple[pa.Array, pa.Array]:
        t = col.type
        none = pa.array([False] * len(col), pa.bool_())
        if pa.types.is_null(t):
            return pa.nulls(len(col), pa.timestamp("ms", "UTC")), none
        if pa.types.is_timestamp(t):
            zoned = col if t.tz else pc.assume_timezone(col, "UTC")
            return zoned.cast(pa.timestamp("ms", "UTC")), none
        if pa.types.is_date(t):
            return col.cast(pa.timestamp("ms")).cast(pa.timestamp("ms", "UTC")), none
        if pa.types.is_integer(t):
            ticks = col.cast(pa.int64()).cast(pa.timestamp(self.unit, "UTC"))
            return ticks.cast(pa.timestamp("ms", "UTC"), safe=False), none
        if pa.types.is_string(t):
            return parse_timestamps(col, self.format)
        return pa.nulls(len(col), pa.timestamp("ms", "UTC")), pc.is_valid(col)

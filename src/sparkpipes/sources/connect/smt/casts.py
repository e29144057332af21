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
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.connect.smt import javadates
from sparkpipes.sources.connect.smt.base import (
    Options,
    Outcome,
    Records,
    Refused,
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
_MS = pa.timestamp("ms", "UTC")


def parse_timestamps(
    texts: pa.Array, pattern: str | None, start: dt.datetime | None = None
) -> tuple[pa.Array, pa.Array, pa.Array, str]:
    """Text as UTC timestamps (ms) by a SimpleDateFormat ``pattern`` (``javadates``), or
    as ISO-8601 (how connectors here write a ``Timestamp`` in their JSON records: Connect's
    JDBC source would hand the transform a ``Timestamp``, which ``format`` does not parse):
    (timestamps, texts read neither way, texts refused, why those are)."""
    texts = texts.cast(pa.string())
    if pattern is not None:
        parsed = javadates.parse(texts, pattern, start)
        out, refused, why = parsed.timestamps, parsed.refused, parsed.why
    else:
        out, refused, why = (
            pa.nulls(len(texts), _MS),
            pa.array([False] * len(texts), pa.bool_()),
            "",
        )
    left = pc.and_(pc.and_(texts.is_valid(), out.is_null()), pc.invert(refused))
    if pc.any(left).as_py():
        out = pc.coalesce(out, _iso(pc.if_else(left, texts, pa.scalar(None, pa.string()))))
    bad = pc.and_(pc.and_(texts.is_valid(), out.is_null()), pc.invert(refused))
    return out, bad, refused, why


def _iso(texts: pa.Array) -> pa.Array:
    """ISO-8601 texts as UTC timestamps (a text without a zone is UTC; null where not
    ISO-8601): column-wise for zone-less ones, the others one by one."""
    try:
        return pc.assume_timezone(texts.cast(pa.timestamp("us")), "UTC").cast(_MS)
    except _CAST_ERRORS:
        values: list[dt.datetime | None] = []
        for text in texts.to_pylist():
            try:
                parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            values.append(parsed)
        return pa.array(values, _MS)


class TimestampConverter(Transform):
    """``TimestampConverter$Key|$Value``: the operand (``field`` empty) or its field
    ``field`` converted to ``target.type``: ``string`` (by ``format``, a SimpleDateFormat
    pattern, UTC, English names: ``javadates``), ``unix`` (an integer in
    ``unix.precision``, default milliseconds), ``Timestamp``, ``Date`` (the day, midnight
    UTC) or ``Time`` (the time of day). The input's kind follows its type: a timestamp, an
    integer (unix, by precision) or text — parsed by ``format`` as ``SimpleDateFormat``
    parses it, or as ISO-8601 (the JSON connectors here write timestamps so, where
    Connect's JDBC source hands it a ``Timestamp``). A null stays null. A text with a
    zone name Java looks up in its table of names is refused (``javadates.ZONE_NAMES``),
    as is text read by a pattern ``javadates.parse_refusal`` names."""

    options: ClassVar[frozenset[str]] = frozenset(
        {"field", "target.type", "format", "unix.precision", _NULL_DEFAULT}
    )

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.field = opts.text("field", "") or ""
        self.target = opts.choice("target.type", ("string", "unix", "Date", "Time", "Timestamp"))
        self.format = opts.text("format", "") or None
        self.unit = _UNITS[opts.choice("unix.precision", tuple(_UNITS), "milliseconds")]
        #: where two-digit years start, fixed when the transform is made (as Java's format)
        self.century = javadates.century_start()
        opts.boolean(_NULL_DEFAULT, True)
        if self.target == "string" and not self.format:
            opts.problem(
                "format", "is required with target.type string (a SimpleDateFormat pattern)"
            )
        if self.format:
            why = javadates.check_pattern(self.format)
            if why:
                opts.problem("format", why)

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        what = f"field {self.field}" if self.field else "the value"
        if not self.field:
            out, bad, refused, why = self._convert(column)
            records = self.with_operand(records, out)
        else:
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
            cols[at], bad, refused, why = self._convert(cols[at])
            out = struct_of(names, cols, column.is_valid(), len(records))
            records = self.with_operand(records, out)
        both = pc.or_(bad, refused)
        if not pc.any(both).as_py():
            return Outcome(records)
        reasons = []
        for mask, reason in (
            (bad, f"{what} is not a timestamp this format reads"),
            (refused, f"{what} {why}"),
        ):
            if pc.any(mask).as_py():
                reasons.append(Refused(records.index.filter(mask), reason))
        return Outcome(records.filter(pc.invert(both)), tuple(reasons))

    def _convert(self, col: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array, str]:
        ts, bad, refused, why = self._timestamps(col)
        if self.target == "string":
            return javadates.format_timestamps(ts, self.format or ""), bad, refused, why
        if self.target == "unix":
            return ts.cast(pa.timestamp(self.unit, "UTC")).cast(pa.int64()), bad, refused, why
        if self.target == "Date":
            return ts.cast(pa.date32()), bad, refused, why
        if self.target == "Time":
            ticks = ts.cast(pa.int64())
            of_day = pc.subtract(
                ticks,
                pc.multiply(
                    pc.floor(pc.divide(ticks.cast(pa.float64()), 86_400_000)).cast(pa.int64()),
                    86_400_000,
                ),
            )
            return of_day.cast(pa.int32()).cast(pa.time32("ms")), bad, refused, why
        return ts, bad, refused, why

    def _timestamps(self, col: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array, str]:
        t = col.type
        none = pa.array([False] * len(col), pa.bool_())
        if pa.types.is_null(t):
            return pa.nulls(len(col), _MS), none, none, ""
        if pa.types.is_timestamp(t):
            zoned = col if t.tz else pc.assume_timezone(col, "UTC")
            return zoned.cast(_MS), none, none, ""
        if pa.types.is_date(t):
            return col.cast(pa.timestamp("ms")).cast(_MS), none, none, ""
        if pa.types.is_integer(t):
            ticks = col.cast(pa.int64()).cast(pa.timestamp(self.unit, "UTC"))
            return ticks.cast(_MS, safe=False), none, none, ""
        if pa.types.is_string(t):
            return parse_timestamps(col, self.format, self.century)
        return pa.nulls(len(col), _MS), pc.is_valid(col), none, ""

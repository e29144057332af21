"""Apache Kafka's record-level transforms and predicates: ``Filter``, the routers
(``RegexRouter``, ``TimestampRouter``), the header transforms (``DropHeaders``,
``InsertHeader``, ``HeaderFrom``) and the predicates ``TopicNameMatches``,
``HasHeaderKey`` and ``RecordIsTombstone``.

A topic is a column here (a KAFKACONNECT pipeline's ``topic``), so a router rewrites that
column; Java regular expressions are matched with Python's ``re`` (the same syntax for
the patterns people write: classes, groups, anchors), once per distinct topic. Headers
are not loaded into tables; they matter to a predicate (``HasHeaderKey``) or when
``HeaderFrom`` moves fields out of the value.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.connect.smt.base import (
    Options,
    Outcome,
    Predicate,
    Records,
    Transform,
    fields_of,
    refuse_all,
    refuse_where,
    struct_of,
)
from sparkpipes.sources.connect.smt.javadates import check_pattern, format_timestamps
from sparkpipes.util.regex import compile_user

_NULL_DEFAULT = "replace.null.with.default"


def java_regex(opts: Options, name: str) -> Any:
    """Option ``name`` as a pattern run in linear time (``util.regex``: RE2)."""
    text = opts.text(name, required=True)
    if text is None:
        return None
    try:
        return compile_user(text)
    except ValueError as e:
        opts.problem(name, f"is not a regular expression sparkpipes runs: {e}")
        return None


def java_replacement(text: str) -> str:
    """A Java ``Matcher.replaceFirst`` replacement (``$1``, ``${name}``, ``\\$``) in
    Python's ``re`` syntax."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1].replace("\\", "\\\\"))
            i += 2
        elif ch == "$" and i + 1 < len(text) and text[i + 1] == "{":
            end = text.find("}", i)
            if end < 0:
                raise ValueError("'${' is not closed by '}'")
            out.append(f"\\g<{text[i + 2 : end]}>")
            i = end + 1
        elif ch == "$":
            m = re.match(r"\d+", text[i + 1 :])
            out.append(f"\\g<{m.group(0)}>" if m else "$")
            i += 1 + (len(m.group(0)) if m else 0)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def per_topic(topics: pa.Array, fn: object) -> pa.Array:
    """``fn`` (topic → new topic) over each distinct topic, mapped back column-wise."""
    distinct = pc.unique(topics)
    mapped = pa.array([fn(t) for t in distinct.to_pylist()], pa.string())  # type: ignore[operator]
    return mapped.take(pc.index_in(topics, value_set=distinct))


class Filter(Transform):
    """``Filter``: drops every record it sees; with a predicate (the way it is used) the
    ones the predicate selects. A dropped record is not an error."""

    reads: ClassVar[frozenset[str]] = frozenset()

    def apply(self, records: Records) -> Outcome:
        return Outcome(records.filter(pa.array([False] * len(records), pa.bool_())))


class RegexRouter(Transform):
    """``RegexRouter``: a topic ``regex`` matches whole is replaced by ``replacement``
    (Java's ``$1`` groups); other topics stay."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"regex", "replacement"})
    routes: ClassVar[bool] = True

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.regex = java_regex(opts, "regex")
        given = opts.text("replacement", "", required=True) or ""
        try:
            self.replacement = java_replacement(given)
        except ValueError as e:
            opts.problem("replacement", f"is not a replacement: {e}")
            self.replacement = ""
        for ref in re.findall(r"\\g<([^>]*)>", self.replacement):
            known = ref.isdigit() and int(ref) <= (self.regex.groups if self.regex else 0)
            if not known and not (self.regex and ref in self.regex.groupindex):
                opts.problem("replacement", f"names group {ref}, which regex does not have")

    def apply(self, records: Records) -> Outcome:
        regex = self.regex
        assert regex is not None

        def route(topic: str | None) -> str | None:
            if topic is not None and regex.fullmatch(topic):
                return regex.sub(self.replacement, topic, count=1)
            return topic

        return Outcome(records.replace(topic=per_topic(records.topic, route)))


class TimestampRouter(Transform):
    """``TimestampRouter``: the topic becomes ``topic.format`` (default
    ``${topic}-${timestamp}``) with the record's timestamp by ``timestamp.format``
    (default ``yyyyMMdd``, UTC). A record without a timestamp is refused (Connect:
    ``Timestamp missing on record``)."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"topic.format", "timestamp.format"})
    routes: ClassVar[bool] = True

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.topic_format = opts.text("topic.format", "${topic}-${timestamp}") or ""
        self.ts_format = opts.text("timestamp.format", "yyyyMMdd") or "yyyyMMdd"
        why = check_pattern(self.ts_format)
        if why:
            opts.problem("timestamp.format", why)

    def apply(self, records: Records) -> Outcome:
        n = len(records)
        ts = records.timestamp if records.timestamp is not None else pa.nulls(n, pa.int64())
        records, refused = refuse_where(records, ts.is_null(), "Timestamp missing on record")
        ts = (
            records.timestamp
            if records.timestamp is not None
            else pa.nulls(len(records), pa.int64())
        )
        stamp = format_timestamps(
            ts.cast(pa.int64()).cast(pa.timestamp("ms", "UTC")), self.ts_format
        )
        pieces = re.split(r"(\$\{topic\}|\$\{timestamp\})", self.topic_format)
        parts: list[pa.Array | str] = []
        for piece in pieces:
            if piece == "${topic}":
                parts.append(records.topic)
            elif piece == "${timestamp}":
                parts.append(stamp)
            elif piece:
                parts.append(piece)
        if not any(isinstance(p, pa.Array) for p in parts):
            topic = pa.array(
                ["".join(p for p in parts if isinstance(p, str))] * len(records), pa.string()
            )
        else:
            topic = pc.binary_join_element_wise(*parts, "")
        return Outcome(records.replace(topic=topic), refused)


class DropHeaders(Transform):
    """``DropHeaders``: removes the headers named in ``headers``."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"headers"})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.names = set(opts.list("headers", required=True))

    def apply(self, records: Records) -> Outcome:
        kept = tuple((n, c) for n, c in records.headers if n not in self.names)
        present = tuple((n, m) for n, m in records.present if n not in self.names)
        return Outcome(records.replace(headers=kept, present=present))


class InsertHeader(Transform):
    """``InsertHeader``: adds header ``header`` with the text ``value.literal``."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"header", "value.literal"})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.name = opts.text("header", "", required=True) or ""
        self.value = opts.text("value.literal", "", required=True) or ""

    def apply(self, records: Records) -> Outcome:
        col = pa.array([self.value] * len(records), pa.string())
        return Outcome(records.with_header(self.name, col))


class HeaderFrom(Transform):
    """``HeaderFrom$Key|$Value``: the operand's ``fields`` become the headers named in
    ``headers`` (pairwise); ``operation`` ``move`` removes the fields from the operand,
    ``copy`` keeps them. A field the struct lacks is refused (Connect's
    ``DataException``)."""

    options: ClassVar[frozenset[str]] = frozenset({"fields", "headers", "operation", _NULL_DEFAULT})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.fields = opts.list("fields", required=True)
        self.headers = opts.list("headers", required=True)
        self.move = opts.choice("operation", ("move", "copy")) == "move"
        opts.boolean(_NULL_DEFAULT, True)
        if len(self.fields) != len(self.headers):
            opts.problem("headers", "must name as many headers as fields names fields")

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        if pa.types.is_null(column.type):
            return Outcome(records)
        if not pa.types.is_struct(column.type):
            return refuse_all(
                records, f"Only Struct objects supported for [header from], found: {column.type}"
            )
        names = fields_of(column)
        missing = [f for f in self.fields if f not in names]
        if missing:
            return refuse_all(records, f"{missing[0]} is not a valid field name")
        for field, header in zip(self.fields, self.headers):
            records = records.with_header(header, pc.struct_field(column, [names.index(field)]))
        if self.move:
            kept = [n for n in names if n not in self.fields]
            cols = [pc.struct_field(column, [names.index(n)]) for n in kept]
            records = self.with_operand(
                records, struct_of(kept, cols, column.is_valid(), len(records))
            )
        return Outcome(records)


class TopicNameMatches(Predicate):
    """``TopicNameMatches``: the topic matches ``pattern`` whole."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"pattern"})

    def __init__(self, opts: Options) -> None:
        super().__init__(opts)
        self.pattern = java_regex(opts, "pattern")

    def test(self, records: Records) -> pa.Array:
        pattern = self.pattern
        assert pattern is not None
        distinct = pc.unique(records.topic)
        hits = pa.array(
            [t is not None and bool(pattern.fullmatch(t)) for t in distinct.to_pylist()]
        )
        return hits.take(pc.index_in(records.topic, value_set=distinct))


class HasHeaderKey(Predicate):
    """``HasHeaderKey``: the record has a header named ``name``."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"name"})

    def __init__(self, opts: Options) -> None:
        super().__init__(opts)
        self.name = opts.text("name", "", required=True) or ""

    def test(self, records: Records) -> pa.Array:
        return records.has(self.name)


class RecordIsTombstone(Predicate):
    """``RecordIsTombstone``: the record's value is null."""

    def test(self, records: Records) -> pa.Array:
        return pc.is_null(records.value)

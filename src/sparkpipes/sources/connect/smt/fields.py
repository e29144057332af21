"""The field transforms of Apache Kafka's ``connect/transforms`` — ValueToKey,
ExtractField, ReplaceField, InsertField, MaskField, HoistField, Flatten and
SetSchemaMetadata — on struct columns, with Connect's option names, defaults and
"with schema" rules (each class's behaviour is cited from its Java source).
"""

from __future__ import annotations

from typing import Any, ClassVar

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


def _require_struct(column: pa.Array, purpose: str) -> str | None:
    """Connect's ``requireStruct``: why ``column`` cannot be worked on, or None."""
    if pa.types.is_struct(column.type) or pa.types.is_null(column.type):
        return None
    return f"Only Struct objects supported for [{purpose}], found: {column.type}"


def _field(column: pa.Array, name: str) -> pa.Array:
    return pc.struct_field(column, [column.type.get_field_index(name)])


class ValueToKey(Transform):
    """``ValueToKey``: the key becomes a struct of the value's ``fields``. With a schema a
    field the value lacks is ``DataException: Field does not exist``, and a null value
    fails ``requireStruct``."""

    reads: ClassVar[frozenset[str]] = frozenset({"value"})

    options: ClassVar[frozenset[str]] = frozenset({"fields", _NULL_DEFAULT})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.fields = opts.list("fields", required=True)
        opts.boolean(_NULL_DEFAULT, True)

    def apply(self, records: Records) -> Outcome:
        value = records.value
        why = _require_struct(value, "copying fields from value to key")
        if why:
            return refuse_all(records, why)
        missing = [f for f in self.fields if f not in fields_of(value)]
        if missing:
            return refuse_all(records, f"Field does not exist: {missing[0]}")
        records, refused = refuse_where(
            records,
            value.is_null(),
            "Only Struct objects supported for [copying fields from value to key], found: null",
        )
        value = records.value
        key = struct_of(
            list(self.fields), [_field(value, f) for f in self.fields], None, len(records)
        )
        return Outcome(records.replace(key=key), refused)


class ExtractField(Transform):
    """``ExtractField$Key|$Value``: the operand becomes its field ``field``; a null
    operand stays null; with a schema an unknown field is ``Unknown field``. The path is
    Connect's ``field.syntax.version``: ``V1`` (default) a plain name, ``V2`` dotted
    (nested structs)."""

    options: ClassVar[frozenset[str]] = frozenset({"field", "field.syntax.version", _NULL_DEFAULT})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.field = opts.text("field", "", required=True) or ""
        version = opts.choice("field.syntax.version", ("V1", "V2"), "V1")
        opts.boolean(_NULL_DEFAULT, True)
        if version == "V2" and "`" in self.field:
            opts.problem("field", "uses backquotes of field.syntax.version V2, not supported yet")
        self.path = tuple(self.field.split(".")) if version == "V2" else (self.field,)

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        for name in self.path:
            why = _require_struct(column, "field extraction")
            if why:
                return refuse_all(records, why)
            if name not in fields_of(column):
                return refuse_all(records, f"Unknown field: {self.field}")
            column = _field(column, name)
        return Outcome(self.with_operand(records, column))


class ReplaceField(Transform):
    """``ReplaceField$Key|$Value``: keep the fields ``include`` lists (all when empty)
    and not ``exclude`` (which wins), renamed by ``renames`` (``old:new,…``); order as
    in the record. ``whitelist`` / ``blacklist`` are the names of Kafka before 2.7 (and
    Confluent's docs) for ``include`` / ``exclude``. A null operand passes unchanged."""

    options: ClassVar[frozenset[str]] = frozenset(
        {"include", "exclude", "renames", "whitelist", "blacklist", _NULL_DEFAULT}
    )

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.include = set(opts.list("include")) | set(opts.list("whitelist"))
        self.exclude = set(opts.list("exclude")) | set(opts.list("blacklist"))
        self.renames: dict[str, str] = {}
        for pair in opts.list("renames"):
            parts = pair.split(":")
            if len(parts) != 2:
                opts.problem("renames", f"has an invalid rename mapping '{pair}' (old:new)")
                continue
            self.renames[parts[0]] = parts[1]
        opts.boolean(_NULL_DEFAULT, True)

    def keeps(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        if pa.types.is_null(column.type):
            return Outcome(records)
        why = _require_struct(column, "field replacement")
        if why:
            return refuse_all(records, why)
        kept = [n for n in fields_of(column) if self.keeps(n)]
        names = [self.renames.get(n, n) for n in kept]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            return refuse_all(records, f"field name duplication: {dup}")
        out = struct_of(names, [_field(column, n) for n in kept], column.is_valid(), len(records))
        return Outcome(self.with_operand(records, out))


def _spec(text: str | None) -> tuple[str, bool] | None:
    """InsertField's ``name[!|?]``: (name, optional)."""
    if not text:
        return None
    if text.endswith("!"):
        return text[:-1], False
    return text.removesuffix("?"), True


class InsertField(Transform):
    """``InsertField$Key|$Value``: append the topic, the Kafka partition, the Kafka
    offset, the record timestamp (Connect's ``Timestamp``) and/or a static string, in
    that order. A null operand passes unchanged (tombstones). A missing partition or
    timestamp leaves the field null; a field marked ``!`` (required) without a value is
    refused, as Connect's struct validation refuses it. ``offset.field`` needs a sink
    record: on a source connector Connect fails every record with it, so it is a
    problem of the config here."""

    options: ClassVar[frozenset[str]] = frozenset(
        {
            "topic.field",
            "partition.field",
            "offset.field",
            "timestamp.field",
            "static.field",
            "static.value",
            _NULL_DEFAULT,
        }
    )

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.topic = _spec(opts.text("topic.field"))
        self.partition = _spec(opts.text("partition.field"))
        self.offset = _spec(opts.text("offset.field"))
        self.timestamp = _spec(opts.text("timestamp.field"))
        self.static = _spec(opts.text("static.field"))
        self.static_value = opts.text("static.value")
        opts.boolean(_NULL_DEFAULT, True)
        if self.static and self.static_value is None:
            opts.problem("static.value", "is required when static.field is set")
        if self.offset and opts.role != "sink":
            opts.problem(
                "offset.field",
                "is only applicable to sink connectors: Connect fails every record of a "
                "source connector with it (Only SinkRecord supported for [field insertion])",
            )

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        why = _require_struct(column, "field insertion")
        if why:
            return refuse_all(records, why)
        n = len(records)
        names, cols = fields_of(column), [_field(column, f) for f in fields_of(column)]
        added: list[tuple[tuple[str, bool], pa.Array]] = []
        if self.topic:
            added.append((self.topic, records.topic))
        if self.partition:
            added.append((self.partition, _or_nulls(records.partition, pa.int32(), n)))
        if self.offset:
            added.append((self.offset, _or_nulls(records.offset, pa.int64(), n)))
        if self.timestamp:
            ts = _or_nulls(records.timestamp, pa.int64(), n).cast(pa.int64())
            added.append((self.timestamp, ts.cast(pa.timestamp("ms", "UTC"))))
        if self.static:
            added.append((self.static, pa.array([self.static_value] * n, pa.string())))
        bad = pa.array([False] * n, pa.bool_())
        for (name, optional), col in added:
            if name in names:
                return refuse_all(
                    records, f"Cannot create field because of field name duplication {name}"
                )
            if not optional:
                bad = pc.or_(bad, pc.and_(col.is_null(), column.is_valid()))
        keep = pc.invert(bad)
        records, refused = refuse_where(
            records, bad, "Invalid value: null used for a required field"
        )
        column = column.filter(keep)
        names += [name for (name, _), _ in added]
        cols = [c.filter(keep) for c in cols] + [c.filter(keep) for _, c in added]
        out = struct_of(names, cols, column.is_valid(), len(records))
        return Outcome(self.with_operand(records, out), refused)


def _or_nulls(column: pa.Array | None, kind: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, kind) if column is None else column.cast(kind)


def _zero(kind: pa.DataType) -> Any:
    if pa.types.is_boolean(kind):
        return False
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return 0
    if pa.types.is_string(kind):
        return ""
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return 0
    if pa.types.is_list(kind):
        return []
    return None


class MaskField(Transform):
    """``MaskField$Key|$Value``: each of ``fields`` the struct has becomes the empty value
    of its type (0, false, "", epoch, []) or ``replacement`` (converted to the field's
    type); a null stays null."""

    options: ClassVar[frozenset[str]] = frozenset({"fields", "replacement", _NULL_DEFAULT})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.fields = set(opts.list("fields", required=True))
        self.replacement = opts.text("replacement")
        if self.replacement is not None and not self.replacement:
            opts.problem("replacement", "must not be empty")
        opts.boolean(_NULL_DEFAULT, True)

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        if pa.types.is_null(column.type):
            return Outcome(records)
        why = _require_struct(column, "mask fields")
        if why:
            return refuse_all(records, why)
        names, cols = fields_of(column), []
        for name in names:
            col = _field(column, name)
            if name in self.fields:
                try:
                    col = self._masked(col)
                except (pa.ArrowInvalid, ValueError):
                    return refuse_all(
                        records, f"Unable to mask value of type {col.type} with replacement"
                    )
            cols.append(col)
        out = struct_of(names, cols, column.is_valid(), len(records))
        return Outcome(self.with_operand(records, out))

    def _masked(self, col: pa.Array) -> pa.Array:
        if self.replacement is not None:
            if pa.types.is_nested(col.type) or pa.types.is_timestamp(col.type):
                raise ValueError("no replacement for this type")
            fill = pa.scalar(self.replacement).cast(col.type)
        else:
            zero = _zero(col.type)
            if zero is None and not pa.types.is_null(col.type):
                raise ValueError("no empty value for this type")
            fill = pa.scalar(zero).cast(col.type) if zero is not None else pa.scalar(None)
        return pc.if_else(col.is_null(), pa.scalar(None, col.type), fill)


class HoistField(Transform):
    """``HoistField$Key|$Value``: the operand becomes a struct with the one field
    ``field`` holding it."""

    options: ClassVar[frozenset[str]] = frozenset({"field"})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.field = opts.text("field", "", required=True) or ""

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        out = struct_of([self.field], [column], None, len(records))
        return Outcome(self.with_operand(records, out))


class Flatten(Transform):
    """``Flatten$Key|$Value``: nested structs become top-level fields named by their path
    joined with ``delimiter`` (default ``.``); a null struct's fields are null."""

    options: ClassVar[frozenset[str]] = frozenset({"delimiter"})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.delimiter = opts.text("delimiter", ".") or "."

    def apply(self, records: Records) -> Outcome:
        column = self.operand(records)
        if pa.types.is_null(column.type):
            return Outcome(records)
        why = _require_struct(column, "flattening")
        if why:
            return refuse_all(records, why)
        names: list[str] = []
        cols: list[pa.Array] = []
        self._walk(column, "", names, cols)
        if len(set(names)) != len(names):
            return refuse_all(records, "flattened field names collide")
        return Outcome(
            self.with_operand(records, struct_of(names, cols, column.is_valid(), len(records)))
        )

    def _walk(self, column: pa.Array, prefix: str, names: list[str], cols: list[pa.Array]) -> None:
        for name in fields_of(column):
            child = _field(column, name)
            full = prefix + name
            if pa.types.is_struct(child.type):
                self._walk(child, full + self.delimiter, names, cols)
            else:
                names.append(full)
                cols.append(child)


class SetSchemaMetadata(Transform):
    """``SetSchemaMetadata$Key|$Value``: sets the schema's name and version. Rows carry no
    schema name or version once loaded (a Delta table has its own schema), so nothing
    that is loaded changes: accepted, and said so in the README."""

    reads: ClassVar[frozenset[str]] = frozenset()

    options: ClassVar[frozenset[str]] = frozenset({"schema.name", "schema.version", _NULL_DEFAULT})

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        version = opts.text("schema.version")
        if version is not None and not version.strip().lstrip("-").isdigit():
            opts.problem("schema.version", f"must be an integer, got '{version}'")
        opts.boolean(_NULL_DEFAULT, True)

    def apply(self, records: Records) -> Outcome:
        return Outcome(records)

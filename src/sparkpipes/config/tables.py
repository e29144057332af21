"""A table as every front end describes it: :class:`TableSpec`, its columns and its keys.

SingleStore's ``CREATE TABLE``, a Pinot schema and a Kafka Connect sink's automatic tables
each lower into one ``TableSpec``, which the engine creates (``Engine.create_table_spec``)
and the catalog keeps (its Arrow schema, the Spark DDL of its types, and the options
:meth:`TableSpec.options` writes). :meth:`TableSpec.of_stored` gives the spec back from what
is stored, so ``SHOW CREATE TABLE`` and ``DESCRIBE`` are the lowering run backwards.

A column's type is an Arrow type, or Spark DDL text (``ARRAY<STRING>``) that the engine
parses with Spark; ``declared`` keeps the type as the user wrote it (``JSON``,
``VARCHAR(20)``). Primary-key columns are NOT NULL, as in SingleStore.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.errors import ConfigError


@dataclass(frozen=True)
class TableKey:
    """``PRIMARY`` / ``UNIQUE`` / ``SHARD`` / ``SORT`` / ``KEY`` (an index) / ``FULLTEXT``
    on ``columns``."""

    kind: str
    columns: tuple[str, ...]
    name: str | None = None
    using: str | None = None
    #: the columns in descending order (``SORT KEY (ts DESC)``)
    descending: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {
            "kind": self.kind,
            "name": self.name,
            "columns": list(self.columns),
            "using": self.using,
        }
        return {**out, "descending": list(self.descending)} if self.descending else out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TableKey:
        return cls(
            str(d["kind"]),
            tuple(d.get("columns") or ()),
            d.get("name"),
            d.get("using"),
            tuple(d.get("descending") or ()),
        )


@dataclass(frozen=True)
class ColumnDefault:
    """A column's ``DEFAULT``: what a row that gives the column no value has in it — a
    pipeline that does not load the column, an INSERT that does not name it. ``value``
    is a JSON scalar (text, a number, a boolean), converted to the column's type as a
    record's value is; with ``now``, the time the row is loaded (``CURRENT_TIMESTAMP``,
    ``NOW()``)."""

    value: Any = None
    now: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"now": True} if self.now else {"value": self.value}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ColumnDefault:
        return cls(d.get("value"), bool(d.get("now")))


@dataclass(frozen=True)
class Choices:
    """The members of an ``ENUM`` (``many`` False) or ``SET`` (``many``) column, as
    declared. A value is stored as the member it matches (case and trailing spaces aside)
    in the member's spelling; an ENUM value that matches none is stored as ``''``, a SET
    keeps the members it names, once each, in declared order: SingleStore's rule ("an
    invalid value is inserted as an empty string")."""

    members: tuple[str, ...]
    many: bool = False

    def pick(self, value: str) -> str:
        """What a column of these members stores for ``value``."""
        known = {m.lower(): m for m in self.members}
        if not self.many:
            return known.get(value.rstrip(" ").lower(), "")
        named = {p.rstrip(" ").lower() for p in value.split(",")}
        return ",".join(m for m in self.members if m.lower() in named)

    def to_json(self) -> dict[str, Any]:
        return {"members": list(self.members), "set": self.many}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Choices:
        return cls(tuple(d.get("members", ())), bool(d.get("set")))


@dataclass(frozen=True)
class NullFill:
    """What a NULL in a column is stored as (Pinot's ``defaultNullValue``): ``value``, the
    text of a value of the column's type (hex for binary; for a list column, its one
    element; None: NULL, which makes a list column's empty lists NULL), or with ``now`` the
    time the rows are loaded — a TIMESTAMP, whole
    ``unit_ms`` since the epoch in a number, or text by the C ``strftime`` pattern."""

    value: str | None = None
    now: bool = False
    unit_ms: int = 1
    strftime: str | None = None

    def to_json(self) -> dict[str, Any]:
        if not self.now:
            return {"value": self.value}
        return {"now": True, "unit_ms": self.unit_ms, "strftime": self.strftime}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NullFill:
        return cls(d.get("value"), bool(d.get("now")), int(d.get("unit_ms", 1)), d.get("strftime"))


#: what :class:`MaxLength` does with a longer value (Pinot's ``MaxLengthExceedStrategy``)
EXCEED = ("TRIM_LENGTH", "SUBSTITUTE_DEFAULT_VALUE", "ERROR", "NO_ACTION")


@dataclass(frozen=True)
class MaxLength:
    """The most a text or binary column's values hold (Pinot's ``maxLength``): text counted
    in UTF-16 units as Java counts it, binary in bytes. A longer value — and text with a NUL
    character, which ends it — is, by ``exceed``: cut (``TRIM_LENGTH``), the column's
    :class:`NullFill` (``SUBSTITUTE_DEFAULT_VALUE``), a constraint error (``ERROR``), or
    kept but cut at its NUL (``NO_ACTION``; binary kept whole) — Pinot's
    ``SanitizationTransformer``. ``default``: the value substituted, as
    :attr:`NullFill.value` is written."""

    limit: int
    exceed: str = "TRIM_LENGTH"
    default: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "exceed": self.exceed, "default": self.default}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MaxLength:
        return cls(int(d["limit"]), str(d.get("exceed", "TRIM_LENGTH")), d.get("default"))


@dataclass(frozen=True)
class ValueRules:
    """What a table's values must be beyond their Arrow type, by column: the members of
    ``ENUM`` / ``SET`` columns (a value is stored as its member), the shapes of
    ``GEOGRAPHY`` / ``GEOGRAPHYPOINT`` columns and the dimensions of ``VECTOR`` columns (a
    value that does not fit is a constraint error), what a NULL is stored as (``fills``)
    and how long a value may be (``lengths``; after the fills, as Pinot sanitizes after
    filling nulls). Applied wherever rows are made: in the tasks (``formats.rules``) and
    after ingest-time SQL (``engine.batch.transform``)."""

    choices: tuple[tuple[str, Choices], ...] = ()
    geography: tuple[tuple[str, str], ...] = ()
    vectors: tuple[tuple[str, int], ...] = ()
    fills: tuple[tuple[str, NullFill], ...] = ()
    lengths: tuple[tuple[str, MaxLength], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.choices or self.geography or self.vectors or self.fills or self.lengths)

    def of(self, names: Collection[str]) -> ValueRules:
        """The rules of the columns ``names``."""
        return ValueRules(
            tuple(r for r in self.choices if r[0] in names),
            tuple(r for r in self.geography if r[0] in names),
            tuple(r for r in self.vectors if r[0] in names),
            tuple(r for r in self.fills if r[0] in names),
            tuple(r for r in self.lengths if r[0] in names),
        )

    def to_options(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.choices:
            out["choices"] = {c: ch.to_json() for c, ch in self.choices}
        if self.geography:
            out["geography"] = dict(self.geography)
        if self.vectors:
            out["vectors"] = dict(self.vectors)
        if self.fills:
            out["fills"] = {c: f.to_json() for c, f in self.fills}
        if self.lengths:
            out["lengths"] = {c: n.to_json() for c, n in self.lengths}
        return out

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ValueRules:
        return cls(
            tuple((c, Choices.from_json(d)) for c, d in options.get("choices", {}).items()),
            tuple((c, str(k)) for c, k in options.get("geography", {}).items()),
            tuple((c, int(n)) for c, n in options.get("vectors", {}).items()),
            tuple((c, NullFill.from_json(d)) for c, d in options.get("fills", {}).items()),
            tuple((c, MaxLength.from_json(d)) for c, d in options.get("lengths", {}).items()),
        )


@dataclass(frozen=True)
class ColumnSpec:
    """A column: its type (Arrow, or Spark DDL text), the type as declared, whether it
    refuses NULL, and for a computed column its expression (Spark SQL over the others)."""

    name: str
    type: pa.DataType | str
    declared: str | None = None
    not_null: bool = False
    computed: str | None = None
    default: ColumnDefault | None = None
    #: ``AUTO_INCREMENT``: a value from the table's counter in the catalog is
    #: generated for a row that gives it no value
    auto_increment: bool = False
    #: the members of an ``ENUM`` / ``SET`` column
    choices: Choices | None = None
    #: ``GEOGRAPHY`` or ``GEOGRAPHYPOINT``: WKT text, checked (``formats.geography``)
    geography: str | None = None
    #: ``ON UPDATE CURRENT_TIMESTAMP``: the time a row is updated (ON DUPLICATE KEY UPDATE)
    on_update: bool = False
    #: ``SERIES TIMESTAMP``: kept, no effect (SingleStore's time-series functions' column)
    series_timestamp: bool = False
    #: ``VECTOR(n)``: the number of elements each value has
    dimensions: int | None = None
    #: what a NULL is stored as (a Pinot field's ``defaultNullValue``), or None: NULL
    fill: NullFill | None = None
    #: the most a text / binary value holds (a Pinot field's ``maxLength``)
    max_length: MaxLength | None = None


@dataclass(frozen=True)
class TableSpec:
    """A table to create: checked when made (names unique, keys on its columns)."""

    name: str
    columns: tuple[ColumnSpec, ...]
    keys: tuple[TableKey, ...] = ()
    #: options after the column list, as written: (NAME, value); kept for SHOW CREATE
    #: TABLE, without effect but ``AUTO_INCREMENT`` (the first value generated)
    table_options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.columns:
            raise ConfigError(f"table '{self.name}' needs at least one column")
        seen: set[str] = set()
        for c in self.columns:
            if c.name.lower() in seen:
                raise ConfigError(f"table '{self.name}' has column '{c.name}' twice")
            seen.add(c.name.lower())
        names = {c.name for c in self.columns}
        for k in self.keys:
            missing = [c for c in k.columns if c not in names]
            if missing:
                raise ConfigError(f"{k.kind} KEY names unknown column(s) {', '.join(missing)}")

    @property
    def primary(self) -> tuple[str, ...]:
        return tuple(c for k in self.keys if k.kind == "PRIMARY" for c in k.columns)

    @property
    def schema(self) -> pa.Schema | str:
        """An Arrow schema when every type is Arrow (no JVM needed), else Spark DDL."""
        if all(isinstance(c.type, pa.DataType) for c in self.columns):
            return pa.schema([pa.field(c.name, c.type) for c in self.columns])
        return ", ".join(f"{_bq(c.name)} {_ddl(c.type)}" for c in self.columns)

    @property
    def not_null(self) -> tuple[str, ...]:
        """Columns that refuse NULL at ingest: declared so, or in the primary key."""
        primary = set(self.primary)
        return tuple(c.name for c in self.columns if c.not_null or c.name in primary)

    @property
    def computed(self) -> dict[str, str]:
        return {c.name: c.computed for c in self.columns if c.computed is not None}

    @property
    def declared(self) -> dict[str, str]:
        return {c.name: c.declared for c in self.columns if c.declared is not None}

    @property
    def defaults(self) -> dict[str, ColumnDefault]:
        return {c.name: c.default for c in self.columns if c.default is not None}

    @property
    def rules(self) -> ValueRules:
        cols = self.columns
        return ValueRules(
            tuple((c.name, c.choices) for c in cols if c.choices is not None),
            tuple((c.name, c.geography) for c in cols if c.geography is not None),
            tuple((c.name, c.dimensions) for c in cols if c.dimensions is not None),
            tuple((c.name, c.fill) for c in cols if c.fill is not None),
            tuple((c.name, c.max_length) for c in cols if c.max_length is not None),
        )

    def options(self) -> dict[str, Any]:
        """What the catalog keeps of the spec besides the schema."""
        out: dict[str, Any] = {"keys": [k.to_json() for k in self.keys], "computed": self.computed}
        if self.declared:
            out["declared"] = self.declared
        if self.not_null:
            out["not_null"] = list(self.not_null)
        if self.defaults:
            out["defaults"] = {c: d.to_json() for c, d in self.defaults.items()}
        generated = [c.name for c in self.columns if c.auto_increment]
        if generated:
            out["auto_increment"] = generated
        out.update(self.rules.to_options())
        if self.table_options:
            out["table_options"] = [list(o) for o in self.table_options]
        for flag in ("on_update", "series_timestamp"):
            marked = [c.name for c in self.columns if getattr(c, flag)]
            if marked:
                out[flag] = marked
        return out

    @classmethod
    def of_stored(
        cls, name: str, schema: pa.Schema, ddl: str, options: Mapping[str, Any]
    ) -> TableSpec:
        """The spec of a stored table; a column's ``declared`` is the type as written, or
        Spark's name of it (what ``SHOW CREATE TABLE`` prints)."""
        spark_types = ddl_types(ddl)
        declared = options.get("declared", {})
        computed = options.get("computed", {})
        not_null = set(options.get("not_null", ()))
        defaults = stored_defaults(options)
        rules = ValueRules.from_options(options)
        choices, shapes, vectors = dict(rules.choices), dict(rules.geography), dict(rules.vectors)
        fills, lengths = dict(rules.fills), dict(rules.lengths)
        columns = tuple(
            ColumnSpec(
                f.name,
                f.type,
                declared.get(f.name) or spark_types.get(f.name, str(f.type)),
                f.name in not_null,
                computed.get(f.name),
                defaults.get(f.name),
                f.name in options.get("auto_increment", ()),
                choices.get(f.name),
                shapes.get(f.name),
                f.name in options.get("on_update", ()),
                f.name in options.get("series_timestamp", ()),
                vectors.get(f.name),
                fills.get(f.name),
                lengths.get(f.name),
            )
            for f in schema
        )
        keys = tuple(TableKey.from_json(k) for k in options.get("keys", ()))
        table_options = tuple((str(n), str(v)) for n, v in options.get("table_options", ()))
        return cls(name, columns, keys, table_options)


def stored_defaults(options: Mapping[str, Any]) -> dict[str, ColumnDefault]:
    """The column defaults a table's stored options hold."""
    return {c: ColumnDefault.from_json(d) for c, d in options.get("defaults", {}).items()}


def ddl_types(ddl: str) -> dict[str, str]:
    """Column → Spark type text of a stored DDL (``\\`a\\` BIGINT, \\`b\\` ARRAY<STRING>``)."""
    out = {}
    for part in _split_top(ddl):
        part = part.strip()
        m = _QUOTED.match(part)
        if m is not None:
            out[m.group(1).replace("``", "`")] = part[m.end() :].strip()
        else:
            name, _, typ = part.partition(" ")
            out[name] = typ.strip()
    return out


_QUOTED = re.compile(r"`((?:[^`]|``)*)`")


def _split_top(text: str) -> Sequence[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return parts


def _ddl(t: pa.DataType | str) -> str:
    if isinstance(t, str):
        return t
    raise ConfigError(f"a table spec mixes Arrow and Spark DDL types ({t})")


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"

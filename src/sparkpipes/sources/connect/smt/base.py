"""What a Single Message Transform works on, and the contract every one keeps.

:class:`Records` is a chunk of Connect records as Arrow columns — the key and the value
(any Arrow type: a Connect ``Struct`` is a struct column), the topic, the Kafka
partition, offset and timestamp (null where the record has none: a source record has no
Kafka offset), the headers — and ``index``, each row's position in the chunk the
connector fetched, so that a record dropped or refused is still named by its source
partition and offset.

A :class:`Transform` is built once from its options (checked when the config is, every
problem named by its key) and then applied to chunks in the tasks. ``apply`` returns
the records it produced and :class:`Refused` rows: records it cannot process (Connect's
``DataException``), which ``errors.tolerance`` decides about, never silently dropped.

Values have schemas here, as a JDBC source's do: a struct column is Connect's ``Struct``,
so the rules Connect applies "with schema" hold (a field that does not exist is an
error, an inserted field the record lacks a value for is null).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

#: the longest text an option may hold: a literal (``InsertHeader``'s value, a static
#: field) is written into every record of a chunk, and a pattern runs per record
MAX_OPTION_CHARS = 4096


@dataclass(frozen=True)
class Records:
    """Connect records, column-wise; every column has one row per record."""

    key: pa.Array
    value: pa.Array
    topic: pa.Array
    index: pa.Array
    partition: pa.Array | None = None
    offset: pa.Array | None = None
    timestamp: pa.Array | None = None
    #: headers by name, each a column (null where a record lacks it); a name given
    #: twice keeps its last value, which is what ``HasHeaderKey`` and ``HeaderFrom`` read
    headers: tuple[tuple[str, pa.Array], ...] = ()
    #: which records have a header (by name), where its column cannot say (a header a
    #: transform set under a predicate on some records: a null is then a value)
    present: tuple[tuple[str, pa.Array], ...] = ()

    def __len__(self) -> int:
        return len(self.index)

    def replace(self, **changes: Any) -> Records:
        return dataclasses.replace(self, **changes)

    def _each(self, op: Any) -> Records:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("headers", "present"):
                out[f.name] = tuple((name, op(col)) for name, col in v)
            else:
                out[f.name] = None if v is None else op(v)
        return Records(**out)

    def filter(self, mask: pa.Array) -> Records:
        """The records where ``mask`` is true."""
        return self._each(lambda c: c.filter(mask))

    def take(self, rows: pa.Array) -> Records:
        return self._each(lambda c: c.take(rows))

    def header(self, name: str) -> pa.Array | None:
        return next((col for n, col in self.headers if n == name), None)

    def has(self, name: str) -> pa.Array:
        """Which records have header ``name``: as :attr:`present` says; else, for a
        header read from Kafka (bytes), where it is not null (a header without a value is
        ``b""``); else every record when the column is there (a transform set it)."""
        mask = next((m for n, m in self.present if n == name), None)
        if mask is not None:
            return mask
        column = self.header(name)
        if column is None:
            return pa.array([False] * len(self), pa.bool_())
        if pa.types.is_binary(column.type):
            return pc.is_valid(column)
        return pa.array([True] * len(self), pa.bool_())

    def with_header(self, name: str, column: pa.Array) -> Records:
        """Header ``name`` set to ``column`` on every record (the last value wins)."""
        headers = tuple((n, c) for n, c in self.headers if n != name)
        present = tuple((n, m) for n, m in self.present if n != name)
        return self.replace(headers=(*headers, (name, column)), present=present)

    def null_column(self, kind: pa.DataType) -> pa.Array:
        return pa.nulls(len(self), kind)


@dataclass(frozen=True)
class Refused:
    """Records (by ``Records.index``) a transform cannot process, and why."""

    index: pa.Array
    reason: str


@dataclass(frozen=True)
class Outcome:
    records: Records
    refused: tuple[Refused, ...] = ()


def refuse_all(records: Records, reason: str) -> Outcome:
    """Every record refused with one reason (a field the value's schema lacks)."""
    empty = records.filter(pa.array([False] * len(records), pa.bool_()))
    return Outcome(empty, (Refused(records.index, reason),) if len(records) else ())


def refuse_where(
    records: Records, bad: pa.Array, reason: str
) -> tuple[Records, tuple[Refused, ...]]:
    """Split off the records where ``bad`` is true: (the others, their refusal)."""
    bad = pc.fill_null(bad, False)
    if not pc.any(bad).as_py():
        return records, ()
    return records.filter(pc.invert(bad)), (Refused(records.index.filter(bad), reason),)


class Options:
    """A transform's options as given (text), read with Connect's ConfigDef types; every
    problem is collected under its key (``transforms.<alias>.<option>``)."""

    def __init__(
        self, prefix: str, given: Mapping[str, str], known: frozenset[str], role: str = "source"
    ) -> None:
        self.prefix = prefix
        #: the connector's role, ``source`` or ``sink`` (a few options need a sink record)
        self.role = role
        self.given = dict(given)
        self.problems: list[tuple[str, str]] = []
        for name in sorted(set(given) - known):
            self.problem(name, f"is not an option of this transform ({', '.join(sorted(known))})")

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}"

    def problem(self, name: str, message: str) -> None:
        self.problems.append((self.key(name), f"{self.key(name)} {message}"))

    def text(self, name: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self.given.get(name)
        if value is None or (required and not value.strip()):
            if required:
                self.problem(name, "is required (it has no default)")
            return default
        if len(value) > MAX_OPTION_CHARS:  # a literal is copied into every record
            self.problem(name, f"is longer than {MAX_OPTION_CHARS} characters")
            return default
        return value

    def list(self, name: str, *, required: bool = False) -> tuple[str, ...]:
        """Connect's LIST: comma-separated, items trimmed, empty items dropped."""
        items = tuple(i.strip() for i in (self.given.get(name) or "").split(",") if i.strip())
        if required and not items:
            self.problem(name, "needs at least one item")
        return items

    def boolean(self, name: str, default: bool) -> bool:
        value = self.given.get(name)
        if value is None:
            return default
        if value.strip().lower() not in ("true", "false"):
            self.problem(name, f"must be true or false, got '{value}'")
            return default
        return value.strip().lower() == "true"

    def choice(self, name: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.given.get(name, default)
        if value is None:
            self.problem(name, f"is required: one of {', '.join(choices)}")
            return choices[0]
        if value not in choices:
            self.problem(name, f"must be one of {', '.join(choices)}, got '{value}'")
            return choices[0]
        return value


class Transform(abc.ABC):
    """One transform of a chain. Subclasses list their options (Connect's names) and
    read them in ``__init__`` through :class:`Options`; ``apply`` works on whole
    columns."""

    #: the option names Connect's ConfigDef of the class defines
    options: ClassVar[frozenset[str]] = frozenset()
    #: Connect's ``$Key`` / ``$Value`` variant this instance works on
    part: str = "value"
    #: it rewrites the record's topic (a router): on a sink connector the topic decides
    #: the table, so the chain's routing is computed per topic before anything runs
    routes: ClassVar[bool] = False
    #: the parts of a record (``key``, ``value``) it reads as typed values; None: its own
    #: part. A part no step reads stays the connector's JSON text, written out as it came
    #: (reading text into Arrow guesses types: big numbers, shapes that vary by record)
    reads: ClassVar[frozenset[str] | None] = None

    def __init__(self, opts: Options, part: str = "value") -> None:
        self.part = part

    @abc.abstractmethod
    def apply(self, records: Records) -> Outcome:
        """The records transformed (some dropped or refused)."""

    def parts(self) -> frozenset[str]:
        """What :attr:`reads` says, its own part by default."""
        return self.reads if self.reads is not None else frozenset({self.part})

    def operand(self, records: Records) -> pa.Array:
        return records.key if self.part == "key" else records.value

    def with_operand(self, records: Records, new: pa.Array) -> Records:
        return records.replace(**{self.part: new})


class Predicate(abc.ABC):
    """A predicate of ``predicates.<alias>``: true or false for each record."""

    options: ClassVar[frozenset[str]] = frozenset()
    #: the parts of a record it reads as typed values (see :attr:`Transform.reads`)
    reads: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def __init__(self, opts: Options) -> None:
        self.given = dict(opts.given)

    @abc.abstractmethod
    def test(self, records: Records) -> pa.Array:
        """A boolean column, no nulls."""


def fields_of(column: pa.Array) -> list[str]:
    """A struct column's field names ([] for any other type)."""
    return [f.name for f in column.type] if pa.types.is_struct(column.type) else []


def struct_of(
    names: list[str], columns: list[pa.Array], valid: pa.Array | None, n: int
) -> pa.Array:
    """A struct column of ``columns`` named ``names`` (``n`` rows), null where ``valid``
    is false."""
    mask = None if valid is None else pc.invert(pc.fill_null(valid, False))
    if not names:  # a struct without fields (every field excluded)
        empty = pa.array([{}] * n, pa.struct([]))
        return empty if mask is None else pc.if_else(mask, pa.scalar(None, empty.type), empty)
    return pa.StructArray.from_arrays(columns, names=names, mask=mask)

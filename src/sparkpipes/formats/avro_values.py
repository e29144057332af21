"""Avro values extracted and converted as SingleStore's ``LOAD DATA … FORMAT AVRO`` does
(https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/extracting-and-converting-avro-values):
used for pipelines made from SingleStore SQL (``FormatSpec.text_values``), Avro object
container files and Avro messages alike.

Extracting (each column's ``::`` path, compiled once per writer schema):

- ``%`` (the empty path) is the whole record; a leading ``%::`` may be left out.
- A name under a record is one of its fields; a record without that field is a schema
  the mapping does not fit: every record is an error (SingleStore's ``LOAD DATA``
  terminates), unless the mapping says ``DEFAULT``.
- A name under a union is one of its branches: a primitive's type name (``string``),
  ``array``, ``map``, or a named type's fullname (``n.a``, written in backticks). A union
  without that branch is an error as above; a branch that is not the one the record
  selected extracts Avro ``null`` (NULL) and the load goes on.
- A name under anything else (an array, a map, a primitive) cannot be followed: arrays
  and maps are not indexed by paths (SingleStore: ``JSON_EXTRACT_<type>`` in ``SET``).

Converting, as if from a SQL string (then converted to the column's type as text is):
``null`` is NULL; ``boolean`` is ``1`` / ``0``; ``int`` / ``long`` their decimal text;
``float`` / ``double`` NULL when not finite, else the shortest text that reads back as
the same value; ``string`` and ``enum`` their text (the enum's symbol); ``bytes`` and
``fixed`` the bytes verbatim (UTF-8 text for a text column, the bytes for a binary one);
a record, map, array or a union taken whole its Avro JSON encoding (compact; a union's
value as ``{"<branch>": value}``, bytes as a string of code points 0-255). Logical types
(``date``, ``timestamp-millis``, ``decimal`` …) are not applied: the underlying value is
converted (``date`` is its day number, ``decimal`` its unscaled bytes), as SingleStore's
table of Avro conversions lists only Avro's own types and as SingleStore's own demo
pipelines read them (singlestore-labs/singlestore-logistics-sim loads a ``timestamp-millis``
into ``@received`` and computes ``FROM_UNIXTIME(0) + INTERVAL (@received / 1000) SECOND``);
a ``DATETIME`` or ``DATE`` column then refuses such a number as a record error, never a
silent NULL.

A path that cannot be told apart at run time is refused by name: a union holding both
``int`` and ``long`` (or ``float`` and ``double``), whose branch the decoded value does
not name.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from sparkpipes.config import FieldMapping

__all__ = ["ERROR_COLUMN", "AvroValues", "json_encoding", "to_text"]

#: the column of a framed chunk naming why a record could not be extracted (or NULL)
ERROR_COLUMN = "__avro_error__"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)
_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))
#: a decoded Python value → the union branch (type name) it can only have come from
_BY_PY_TYPE: tuple[tuple[type, tuple[str, ...]], ...] = (
    (type(None), ("null",)),
    (bool, ("boolean",)),
    (int, ("int", "long")),
    (float, ("float", "double")),
    (str, ("string",)),
    (uuid.UUID, ("string",)),
    (bytes, ("bytes",)),
    (decimal.Decimal, ("bytes",)),
    (list, ("array",)),
    (dict, ("map",)),
    (dt.datetime, ("long",)),
    (dt.date, ("int",)),
    (dt.time, ("int", "long")),
)


class PathProblem(ValueError):
    """The writer schema has no such path (a record without the field, a union without
    the branch): SingleStore's ``LOAD DATA`` terminates with an error."""


def _kind(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return "union"
    return str(schema["type"]) if not isinstance(schema["type"], dict | list) else "wrapped"


class _Names:
    """The named types of one writer schema (as fastavro parses it: full names, each
    defined once and referred to by name after)."""

    def __init__(self, schema: Any) -> None:
        self.types: dict[str, Any] = {}
        self._walk(schema)

    def _walk(self, s: Any) -> None:
        if isinstance(s, list):
            for b in s:
                self._walk(b)
        elif isinstance(s, dict):
            if isinstance(s.get("type"), dict | list):
                self._walk(s["type"])
                return
            if s.get("type") in ("record", "error", "enum", "fixed") and "name" in s:
                self.types[s["name"]] = s
            for f in s.get("fields", ()):
                self._walk(f["type"])
            for key in ("items", "values"):
                if key in s:
                    self._walk(s[key])

    def resolve(self, s: Any) -> Any:
        """``s`` with a name referring to a defined type replaced by its definition, and
        ``{"type": {...}}`` unwrapped."""
        while True:
            if isinstance(s, str) and s not in _PRIMITIVES:
                s = self.types[s]
            elif isinstance(s, dict) and _wraps(s):
                s = s["type"]
            else:
                return s

    def branch_name(self, s: Any) -> str:
        """The name a union branch goes by in paths and in the JSON encoding."""
        r = self.resolve(s)
        if isinstance(r, str):
            return r
        kind = r["type"]
        return r["name"] if kind in ("record", "error", "enum", "fixed") else kind


def _wraps(s: dict[str, Any]) -> bool:
    """``{"type": <schema>}``, or a primitive without a logical type in an object."""
    t = s.get("type")
    return isinstance(t, dict | list) or (t in _PRIMITIVES and "logicalType" not in s)


@dataclass(frozen=True)
class _Step:
    kind: str  # "field" or "branch"
    name: str
    #: a union's branches (type names), to tell which one a decoded value selected
    branches: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Program:
    steps: tuple[_Step, ...]
    leaf: Any  # the schema of the extracted value
    problem: str | None = None


def compile_path(
    writer: Any, path: Sequence[str], names: _Names | None = None, *, fold_case: bool = False
) -> _Program:
    """The steps that take ``path`` through records and unions of ``writer``, and the
    schema of what it extracts; a path the schema cannot have is a ``_Program`` with its
    ``problem`` (SingleStore's error cases). ``fold_case``: a field name may differ in
    case (a column's own name, when no mapping names its path: SQL's column names are
    not case-sensitive, Avro's field names are)."""
    names = names or _Names(writer)
    s: Any = writer
    steps: list[_Step] = []
    for i, key in enumerate(path):
        where = "%::" + "::".join(path[:i]) if i else "%"
        r = names.resolve(s)
        kind = _kind(r)
        if kind in ("record", "error"):
            fields = {f["name"]: f["type"] for f in r["fields"]}
            if key not in fields and fold_case:
                folded = [n for n in fields if n.lower() == key.lower()]
                key = folded[0] if len(folded) == 1 else key
            if key not in fields:
                why = f"the Avro record {r['name']} at {where} has no field '{key}'"
                return _Program((), None, why)
            steps.append(_Step("field", key))
            s = fields[key]
        elif kind == "union":
            by_name = {names.branch_name(b): b for b in r}  # a namespaced type: its fullname
            name = key if key in by_name else None
            if name is None:
                return _Program(
                    (),
                    None,
                    f"the Avro union at {where} has no branch '{key}' (its branches: "
                    f"{', '.join(by_name)}; a named type in a namespace goes by its fullname, "
                    "in backticks)",
                )
            steps.append(_Step("branch", name, tuple(by_name)))
            s = by_name[name]
        else:
            what = kind if kind != "wrapped" else "value"
            return _Program(
                (),
                None,
                f"the Avro {what} at {where} has no '{key}': paths name record fields and "
                "union branches, not elements of arrays or maps",
            )
    return _Program(tuple(steps), s)


def _selected(value: Any, branches: Sequence[str]) -> tuple[str, Any]:
    """The branch a decoded union value selected, and the value itself. fastavro (with
    ``return_named_type``) tags named types as ``(name, value)``; the others are told by
    their Python type."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] in branches:
        return value[0], value[1]
    for py, kinds in _BY_PY_TYPE:
        if type(value) is py or (py is dt.date and isinstance(value, dt.date)):
            found = [k for k in kinds if k in branches]
            if len(found) == 1:
                return found[0], value
            if len(found) > 1:
                raise ValueError(
                    f"the Avro union of {' and '.join(found)} does not say which branch "
                    "this value is: such a union is not supported"
                )
    raise ValueError(f"cannot tell which branch of the Avro union {list(branches)} holds a value")


def extract(rec: Any, program: _Program) -> Any:
    """The value ``program`` extracts from a decoded record (None for a union branch
    the record did not select)."""
    v = rec
    for step in program.steps:
        if step.kind == "field":
            v = v[step.name]
        else:
            branch, inner = _selected(v, step.branches)
            if branch != step.name:
                return None
            v = inner
    return v


def _raw(value: Any, s: Any) -> Any:
    """The underlying Avro value of a logical type's decoded value (its logical type
    not applied)."""
    if not isinstance(s, dict) or "logicalType" not in s:
        return value
    logical = s["logicalType"]
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        milli = logical.endswith("millis")
        unit = dt.timedelta(milliseconds=1) if milli else dt.timedelta(microseconds=1)
        return (aware - _EPOCH) // unit
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, dt.time):
        seconds = (value.hour * 60 + value.minute) * 60 + value.second
        micros = seconds * 1_000_000 + value.microsecond
        return micros // 1000 if logical == "time-millis" else micros
    if isinstance(value, decimal.Decimal):
        unscaled = int(value.scaleb(int(s.get("scale", 0))))
        size = s.get("size") or max(1, (unscaled.bit_length() + 8) // 8)
        return unscaled.to_bytes(size, "big", signed=True)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _float_text(value: float, single: bool) -> str | None:
    if not math.isfinite(value):
        return None
    return str(np.float32(value)) if single else repr(value)


def to_text(value: Any, s: Any, names: _Names, *, binary: bool = False) -> str | bytes | None:
    """``value`` (of schema ``s``) as SingleStore converts an extracted Avro value: the
    text (bytes for ``binary`` columns) of the module docstring's table."""
    if value is None:
        return None
    r = names.resolve(s)
    value = _raw(value, r)
    kind = _kind(r)
    if kind == "boolean":
        out: str | bytes | None = "1" if value else "0"
    elif kind in ("int", "long"):
        out = str(int(value))
    elif kind in ("float", "double"):
        out = _float_text(float(value), kind == "float")
    elif kind in ("string", "enum"):
        out = str(value)
    elif kind in ("bytes", "fixed"):
        if binary:
            return bytes(value)
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"Avro {kind} are not UTF-8 text (at byte {e.start})") from None
    else:  # record, map, array, a union taken whole
        out = json.dumps(json_encoding(value, s, names), separators=(",", ":"), ensure_ascii=False)
    return out.encode() if binary and isinstance(out, str) else out


def json_encoding(value: Any, s: Any, names: _Names) -> Any:
    """``value`` as Avro's JSON encoding (a JSON-able Python value): a union's non-null
    value as ``{"<branch>": value}``, bytes and fixed as text of code points 0-255."""
    r = names.resolve(s)
    kind = _kind(r)
    if kind == "union":
        branches = tuple(names.branch_name(b) for b in r)
        branch, inner = _selected(value, branches)
        if branch == "null":
            return None
        return {branch: json_encoding(inner, r[branches.index(branch)], names)}
    if value is None:
        return None
    value = _raw(value, r)
    if kind in ("record", "error"):
        return {f["name"]: json_encoding(value[f["name"]], f["type"], names) for f in r["fields"]}
    if kind == "array":
        return [json_encoding(v, r["items"], names) for v in value]
    if kind == "map":
        return {k: json_encoding(v, r["values"], names) for k, v in value.items()}
    if kind in ("bytes", "fixed"):
        return bytes(value).decode("latin-1")
    if kind in ("float", "double") and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")
    return value


class AvroValues:
    """Each table column's value of a decoded Avro record, extracted and converted as
    above (see the module docstring). Picklable; compiles paths once per writer schema.

    ``mapping``: the columns' paths (a column without one is its own name under the
    record); ``on_missing``: the mappings whose path the schema may lack (``DEFAULT``
    literal, or NULL), else that is an error for each record."""

    def __init__(
        self,
        schema: pa.Schema,
        paths: Mapping[str, tuple[str, ...]],
        on_missing: Mapping[str, FieldMapping],
    ) -> None:
        self.schema = schema
        self.paths = dict(paths)
        self.on_missing = dict(on_missing)
        self._programs: dict[int, tuple[Any, _Names, dict[str, _Program]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_programs": {}}

    def _compiled(self, writer: Any) -> tuple[_Names, dict[str, _Program]]:
        """The paths compiled for ``writer``; a writer schema is one object per file or
        schema id, so it is known by identity (and kept, so the identity stays its)."""
        found = self._programs.get(id(writer))
        if found is None or found[0] is not writer:
            names = _Names(writer)
            programs = {
                c: compile_path(writer, p, names, fold_case=c not in self.on_missing)
                for c, p in self.paths.items()
            }
            found = self._programs[id(writer)] = (writer, names, programs)
        return found[1], found[2]

    def row(self, writer: Any, rec: Any) -> dict[str, Any]:
        """column → text (bytes, or a DEFAULT literal) of one record; ValueError names a
        record that cannot be converted or a path its schema does not have."""
        names, programs = self._compiled(writer)
        out: dict[str, Any] = {}
        for f in self.schema:
            program = programs[f.name]
            if program.problem is not None:
                out[f.name] = self._missing(f.name, program.problem)
                continue
            value = extract(rec, program)
            binary = pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
            try:
                out[f.name] = to_text(value, program.leaf, names, binary=binary)
            except ValueError as e:
                raise ValueError(f"column '{f.name}': {e}") from None
        return out

    def _missing(self, column: str, problem: str) -> Any:
        m = self.on_missing.get(column)
        if m is None or m.on_missing == "error":
            raise PathProblem(
                f"{problem} (for {column}; a mapping with DEFAULT gives a value for records "
                "without it)"
            )
        return m.default if m.on_missing == "default" else None

    def table(self, writer: Any, rows: Iterable[Any]) -> pa.Table:
        """The columns of ``rows`` as text (binary for binary columns; a DEFAULT literal
        as text), and :data:`ERROR_COLUMN` naming why a record has none."""
        text = {f.name: pa.binary() if _is_binary(f.type) else pa.string() for f in self.schema}
        cols: dict[str, list[Any]] = {n: [] for n in text}
        errors: list[str | None] = []
        for rec in rows:
            try:
                values = self.row(writer, rec)
            except ValueError as e:
                values, why = {}, str(e)
            else:
                why = None
            errors.append(why)
            for n, t in text.items():
                v = values.get(n)
                if v is not None and not isinstance(v, str | bytes):
                    v = str(v) if t == pa.string() else str(v).encode()
                cols[n].append(v)
        arrays = [pa.array(cols[n], t) for n, t in text.items()]
        arrays.append(pa.array(errors, pa.string()))
        return pa.Table.from_arrays(arrays, names=[*text, ERROR_COLUMN])


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)

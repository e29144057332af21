"""Nested records flattened into columns and arrays unnested into rows, on Arrow
(``FormatSpec.nested``; Pinot's ``complexTypeConfig``, as its ``ComplexTypeTransformer``
does it record by record).

What is promised, for a :class:`~sparkpipes.config.NestedSpec`:

- a column named ``a.b.c`` (names joined by the spec's delimiter) holds the record's
  ``{"a": {"b": {"c": …}}}``; a record without that path gives NULL;
- each array named in ``unnest`` makes one row per element (its fields are the columns
  ``<array>.<field>``, a primitive element is the column ``<array>`` itself); an empty or
  missing array keeps the record as one row, its element columns NULL; several arrays
  make the cross product of their elements, a parent array before its children (the
  names sorted, as Pinot sorts them);
- an array not unnested that reaches a text column is its JSON text (the inner decoder's
  reading of a list into a string column); with ``collections`` ``ALL``, one that reaches
  a multi-value column is its JSON text as the one value, as Pinot stores a string in a
  multi-value column (and an unnested primitive element, the same way, its one value);
- ``renames``: a flattened name starting with a prefix is renamed by the first prefix
  that matches; a row where a renamed and an unrenamed field land on the same column with
  both values is Pinot's "Name conflict", and its record a :class:`RecordError`;
- the inner decoder's schema says, in its fields' metadata, which column each value
  fills (:data:`COLUMN`; empty for a variable's or an ``ALL`` array's text) and which
  arrays unnest (:data:`UNNEST`), so a decoder that converts a value by its column's
  rules (Pinot's, ``formats.pinot_leaves``) converts each leaf and element as Pinot does;
- every row keeps the index of its record (``Decoded.kept``, once per row), so a row's
  source partition and offset are its record's; a record is either all its rows or one
  error, never both.

The record is decoded once by the inner decoder into a schema of nested Arrow types
made from the column names (its fast path reads the whole chunk with ``pyarrow.json``);
flattening is ``StructArray.flatten``, unnesting ``list_value_length`` + ``take``: no
Python object per row, except where the inner decoder falls back to reading record by
record (a value of another shape than the names say: a record error, with its reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config import FieldMapping, NestedSpec
from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Decoded, Decoder, RecordError
from sparkpipes.formats.coerce import coerce_column
from sparkpipes.sources.base import Framing

Path = tuple[str, ...]


#: field metadata of the inner decoder's schema: the column a value fills (empty: a
#: variable's, or an ``ALL`` array's JSON text), and an array unnested into rows
COLUMN = b"nested.column"
UNNEST = b"nested.unnest"


@dataclass
class _Node:
    """A node of the record's shape: a record (``children``), an unnested array (``elem``)
    or a value (``type``), with the column it fills (``column``)."""

    children: dict[str, _Node] = field(default_factory=dict)
    elem: _Node | None = None
    type: pa.DataType | None = None
    column: str | None = None

    def arrow(self) -> pa.DataType:
        if self.elem is not None:
            return pa.list_(self.elem.field("item"))
        if self.type is not None:
            return self.type
        return pa.struct([c.field(k) for k, c in self.children.items()])

    def field(self, name: str) -> pa.Field:
        meta = {UNNEST: b"1"} if self.elem is not None else {}
        if self.column is not None:
            meta[COLUMN] = self.column.encode()
        return pa.field(name, self.arrow(), metadata=meta or None)


@dataclass(frozen=True)
class _Column:
    field: pa.Field
    #: the paths that may fill it (a renamed one first); names as flattened, for messages
    sources: tuple[Path, ...]
    names: tuple[str, ...]
    #: ``ALL``: a multi-value column reads the array's JSON text as its one value
    wrap: bool = False


class NestedPlan:
    """How the columns of ``schema`` (each read by its mapping's path, joined with the
    delimiter, else by its name) come out of nested records: the schema the inner decoder
    reads (:attr:`schema`, one column per top-level field) and the steps after it."""

    def __init__(
        self, schema: pa.Schema, mapping: Sequence[FieldMapping], spec: NestedSpec
    ) -> None:
        self.spec = spec
        by_column = {m.column: m for m in mapping}
        if any(m.on_missing != "null" for m in mapping):
            raise ConfigError("nested records: a column's DEFAULT for a missing path is not read")
        #: Pinot sorts the arrays to unnest, so a parent comes before its children
        self.unnest: tuple[Path, ...] = tuple(self.split(u) for u in sorted(spec.unnest))
        root = _Node()
        for u in self.unnest:
            self._place(root, u, None)
        columns = []
        variables = [f for f in schema if f.name.startswith("@")]
        for f in [f for f in schema if not f.name.startswith("@")] + variables:
            m = by_column.get(f.name)
            name = spec.delimiter.join(m.path) if m is not None else f.name
            if not name:
                raise ConfigError(f"nested records: column '{f.name}' reads the whole record")
            originals = self.originals(name)
            paths = tuple(self.split(o) for o in originals)
            many = pa.types.is_list(f.type)
            text = False  # ALL: the array's JSON text, not the column's value
            if many and any(p in self.unnest for p in paths):
                wrap, leaf = True, f.type.value_type  # an element, as the one value
            else:
                wrap = text = spec.collections == "ALL" and many
                leaf = pa.string() if wrap else f.type
            column = "" if f.name.startswith("@") or text else f.name
            for p in paths:
                self._place(root, p, leaf, column)
            columns.append(_Column(f, paths, originals, wrap))
        order = {f.name: i for i, f in enumerate(schema)}
        self.columns = tuple(sorted(columns, key=lambda c: order[c.field.name]))
        self.target = schema
        self.schema = pa.schema([c.field(k) for k, c in root.children.items()])
        self.mapping = tuple(FieldMapping(k, (k,)) for k in root.children)

    def split(self, name: str) -> Path:
        return tuple(name.split(self.spec.delimiter))

    def originals(self, name: str) -> tuple[str, ...]:
        """The flattened names that become ``name``: renamed by the first prefix of
        ``renames`` they start with (Pinot's ``renamePrefix``), or ``name`` itself when no
        prefix renames it."""
        out = []
        renames = self.spec.renames
        for prefix, repl in renames:
            if name.startswith(repl):
                o = prefix + name[len(repl) :]
                first = next(p for p, _ in renames if o.startswith(p))
                if first == prefix and o not in out:
                    out.append(o)
        if not any(name.startswith(p) for p, _ in renames):
            out.append(name)
        if not out:
            raise ConfigError(
                f"nested records: no field becomes column '{name}' (its name starts with a "
                "prefix that is renamed)"
            )
        return tuple(out)

    def _place(
        self, root: _Node, path: Path, leaf: pa.DataType | None, column: str | None = None
    ) -> None:
        """Add ``path`` to the shape: an array where it is unnested, a record above, a
        value of type ``leaf`` at its end (None: an array to unnest, elements unread),
        filling ``column`` (empty: a variable's text). A path read twice keeps the first
        reading, a column's before a variable's."""
        node = root
        for i, key in enumerate(path):
            here, last = path[: i + 1], i == len(path) - 1
            child = node.children.get(key)
            if here in self.unnest:
                if child is None:
                    child = node.children[key] = _Node(elem=_Node())
                if child.elem is None:
                    raise self._clash(here)
                if last:
                    if leaf is not None:
                        elem = child.elem
                        if elem.children and elem.type is None:
                            raise self._clash(here)
                        if elem.type is None:
                            elem.type, elem.column = leaf, column
                    return
                node = child.elem
                if node.type is not None:
                    raise self._clash(here)
                continue
            if last:
                if child is None:
                    node.children[key] = _Node(type=leaf, column=column)
                elif child.type is None:
                    raise self._clash(here)
                return
            if child is None:
                child = node.children[key] = _Node()
            if child.type is not None or child.elem is not None:
                raise self._clash(here)
            node = child

    def _clash(self, path: Path) -> ConfigError:
        name = self.spec.delimiter.join(path)
        return ConfigError(
            f"nested records: '{name}' is read both as a value and as a record holding "
            "other columns; give one of them"
        )


class NestedDecoder(Decoder):
    """``inner`` decoding each record into :attr:`NestedPlan.schema`, then flattened and
    unnested into the plan's columns (see the module's promises)."""

    def __init__(self, inner: Decoder, plan: NestedPlan) -> None:
        self.inner, self.plan = inner, plan
        self.columnar = inner.columnar
        self.schema, self.csv, self.text_values = plan.target, inner.csv, inner.text_values
        self.paths = {f.name: (f.name,) for f in plan.target}
        self.on_missing = {}

    def framing(self, skip_lines: int = 0) -> Framing:
        return self.inner.framing(skip_lines)

    def decode(self, values: pa.Array) -> Decoded:
        return self.shape(self.inner.decode(values))

    def decode_table(self, table: pa.Table) -> Decoded:
        return self.shape(self.inner.decode_table(table))

    def shape(self, decoded: Decoded) -> Decoded:
        """The decoded records flattened and unnested into the target's columns."""
        table, kept = decoded.table, decoded.kept
        cols: dict[Path, pa.Array] = {}
        for name in table.column_names:
            _flatten((name,), _whole(table.column(name)), cols)
        for u in self.plan.unnest:
            lists = cols.pop(u)
            parent, elems = explode(lists)
            cols = {k: v.take(parent) for k, v in cols.items()}
            kept = kept.take(parent)
            _flatten(u, elems, cols)
        n = len(kept)
        arrays = []
        bad = np.zeros(n, dtype=bool)
        reasons: dict[int, str] = {}
        for c in self.plan.columns:
            got = [cols[p] for p in c.sources]
            value = got[0]
            if len(got) > 1:
                given = np.sum([g.is_valid().to_numpy(zero_copy_only=False) for g in got], axis=0)
                clash = given > 1
                for row in np.flatnonzero(clash & ~bad):
                    reasons[int(row)] = (
                        f"Name conflict after attempting to rename field {c.names[0]} to "
                        f"{c.field.name}"
                    )
                bad |= clash
                value = pc.coalesce(*got)
            if c.wrap:
                offsets = pa.array(np.arange(n + 1, dtype=np.int32))
                value = pa.ListArray.from_arrays(offsets, value, mask=value.is_null())
            arrays.append(_cast(value, c.field))
        out = pa.Table.from_arrays(arrays, schema=self.schema)
        errors = list(decoded.errors)
        if bad.any():
            records = pc.unique(kept.filter(pa.array(bad)))
            first = {}
            for row, reason in reasons.items():
                first.setdefault(kept[row].as_py(), reason)
            errors += [RecordError(i, first[i]) for i in records.to_pylist()]
            keep = pc.invert(pc.is_in(kept, value_set=records))
            out, kept = out.filter(keep), kept.filter(keep)
        return Decoded(out, kept.cast(pa.int32()), tuple(errors))

    def _fast(self, values: pa.Array) -> pa.Table:  # pragma: no cover - decode() is whole
        raise NotImplementedError

    def _parse_one(self, raw: bytes) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError


def _whole(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _flatten(path: Path, values: pa.Array, cols: dict[Path, pa.Array]) -> None:
    """``values`` into ``cols`` by path, records into their fields (a null record: null
    fields)."""
    if pa.types.is_struct(values.type):
        for i, child in enumerate(values.flatten()):
            _flatten((*path, values.type.field(i).name), child, cols)
    else:
        cols[path] = values


def explode(lists: pa.Array) -> tuple[pa.Array, pa.Array]:
    """One row per element of each array of ``lists``: for each, the index of its array's
    row and the element; a null or empty array is one row with a null element (Pinot keeps
    such a record as it is)."""
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    reps = np.maximum(lengths, 1)
    parent = np.repeat(np.arange(len(lists), dtype=np.int64), reps)
    starts = lists.offsets.to_numpy(zero_copy_only=False)[:-1].astype(np.int64)
    within = np.arange(len(parent), dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps)
    index = pa.array(np.repeat(starts, reps) + within, mask=np.repeat(lengths == 0, reps))
    return pa.array(parent), lists.values.take(index)


def _cast(values: pa.Array, target: pa.Field) -> pa.Array:
    """``values`` as the column's type; a value Arrow cannot cast (a list read as text by
    a variable) as the record-by-record reading converts it."""
    if values.type == target.type:
        return values
    try:
        return values.cast(target.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([coerce_column(v, target) for v in values.to_pylist()], target.type)

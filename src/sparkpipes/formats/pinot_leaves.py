"""The values a Pinot decoder converts by a column's rules, found in its schema: each
top-level column, and under a ``complexTypeConfig`` (:mod:`~sparkpipes.formats.nested`)
each leaf of a record and each element of an array to unnest, as Pinot's
``ComplexTypeTransformer`` hands them to its ``DataTypeTransformer`` one by one
(apache/pinot@210c2951e72: ``RecordTransformerUtils.getTransformers`` runs the complex-type
transformer first and ``DataTypeTransformer`` on each row it makes).

The walk is the one place that knows the shape; what a value becomes is the caller's
(``pinot_values.convert`` record by record, the Arrow reading's fixes on the fast path), so
a flattened field and a top-level column are converted by the same rules. A leaf marked
with an empty column (a variable, an ``ALL`` array's JSON text) is left as read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.formats.nested import COLUMN, UNNEST


def column_of(f: pa.Field) -> str | None:
    """The column a leaf fills (None: a variable's text, or not a leaf)."""
    if pa.types.is_struct(f.type) or unnested(f):
        return None
    meta = f.metadata or {}
    if COLUMN in meta:
        return meta[COLUMN].decode() or None
    return None if f.name.startswith("@") else f.name


def unnested(f: pa.Field) -> bool:
    """An array unnested into rows: each element is one row's value."""
    return bool(f.metadata and f.metadata.get(UNNEST))


def children(f: pa.Field) -> list[pa.Field]:
    """The fields under a record or an array to unnest (its element), else none."""
    if pa.types.is_struct(f.type):
        return [f.type.field(i) for i in range(f.type.num_fields)]
    if unnested(f):
        return [f.type.value_field]
    return []


def has_column(f: pa.Field) -> bool:
    """``f`` is, or holds, a value a column's rules convert."""
    return column_of(f) is not None or any(has_column(c) for c in children(f))


def leaves(f: pa.Field) -> list[tuple[str, pa.DataType]]:
    """The (column, type) of each leaf under ``f`` that a column's rules convert."""
    column = column_of(f)
    if column is not None:
        return [(column, f.type)]
    return [leaf for c in children(f) for leaf in leaves(c)]


def read_type(f: pa.Field, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """The type Arrow's reader reads ``f`` as: each converted leaf's type as ``leaf``
    gives it (epoch millis for a TIMESTAMP, text for BYTES), the shape kept."""
    if pa.types.is_struct(f.type):
        return pa.struct([pa.field(c.name, read_type(c, leaf)) for c in children(f)])
    if unnested(f):
        return pa.list_(read_type(f.type.value_field, leaf))
    return leaf(f.type) if column_of(f) is not None else f.type


def fix(
    col: pa.Array | pa.ChunkedArray,
    f: pa.Field,
    leaf: Callable[[pa.Array, pa.DataType], pa.Array],
) -> pa.Array:
    """``col`` (as Arrow's reader read ``f``) with ``leaf`` applied to each converted
    leaf, records and arrays rebuilt around them (their nulls kept)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_struct(f.type):
        kids = children(f)
        parts = [fix(c, k, leaf) for c, k in zip(col.flatten(), kids, strict=True)]
        fields = [pa.field(k.name, p.type) for k, p in zip(kids, parts, strict=True)]
        return pa.StructArray.from_arrays(parts, fields=fields, mask=col.is_null())
    if unnested(f):
        start, end = col.offsets[0].as_py(), col.offsets[-1].as_py()
        inner = fix(col.values.slice(start, end - start), f.type.value_field, leaf)
        offsets = pc.subtract(col.offsets, col.offsets[0])
        return pa.ListArray.from_arrays(offsets, inner, mask=col.is_null())
    return leaf(col, f.type) if column_of(f) is not None else col


def converted(value: Any, f: pa.Field, leaf: Callable[[Any, pa.DataType, str], Any]) -> Any:
    """A record's ``value`` for ``f`` with ``leaf(value, type, column)`` applied to each
    converted leaf. An array to unnest given one value is that one element (Pinot keeps
    such a record as it is); a value of another shape than ``f`` is left for the
    decoder's reading to refuse."""
    column = column_of(f)
    if column is not None:
        return leaf(value, f.type, column)
    if value is None:
        return None
    if pa.types.is_struct(f.type):
        if not isinstance(value, dict):
            return value
        return {c.name: converted(value.get(c.name), c, leaf) for c in children(f)}
    if unnested(f):
        items = value if isinstance(value, list) else [value]
        return [converted(v, f.type.value_field, leaf) for v in items]
    return value

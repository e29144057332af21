"""A table's value rules (``config.tables.ValueRules``) applied to a chunk of its rows in
the tasks: ENUM / SET values stored as their members, GEOGRAPHY values read as WKT,
VECTOR values of the declared number of elements. A row whose value its column cannot
hold is named as a :class:`~sparkpipes.formats.base.RecordError` by its ``kept`` index
(the caller decides whether that fails the batch), in row order. NULLs are then stored as
their column's fill and values fitted to its maximum length (``formats.sanitize``).

On Arrow: ENUM / SET values are looked up once per distinct value, WKT is read by shapely
over the whole column, vector lengths by ``list_value_length``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config.tables import Choices, MaxLength, NullFill, ValueRules
from sparkpipes.formats.base import Decoded, RecordError
from sparkpipes.formats.geography import normalize
from sparkpipes.formats.sanitize import fill_nulls, fill_scalar, fit_length

__all__ = ["apply_rules", "choose", "substitute", "vector_problems"]


def choose(table: pa.Table, choices: Mapping[str, Choices]) -> pa.Table:
    """``table`` with each ENUM / SET column's values as its members (each distinct value
    looked up once, not each row)."""
    for name, ch in choices.items():
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        column = table.column(i)
        distinct = pc.unique(column)
        picked = pa.array(
            [None if v is None else ch.pick(v) for v in distinct.to_pylist()], pa.string()
        )
        chosen = pc.take(picked, pc.index_in(column, value_set=distinct))
        table = table.set_column(i, table.field(i), chosen.cast(table.field(i).type))
    return table


def vector_problems(values: pa.Array | pa.ChunkedArray, n: int, column: str) -> pa.Array:
    """Per row, why a ``VECTOR(n)`` column cannot hold the list, or NULL: another number
    of elements, or a NULL element."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(values), n).to_numpy(zero_copy_only=False)
    holes = np.zeros(len(values), dtype=bool)
    flat = pc.list_flatten(values)
    if flat.null_count:
        parents = pc.list_parent_indices(values).to_numpy(zero_copy_only=False)
        holes[parents[~flat.is_valid().to_numpy(zero_copy_only=False)]] = True
    reasons: list[str | None] = [None] * len(values)
    for i in np.flatnonzero((lengths != n) | holes):
        what = "a NULL element" if holes[i] else f"{int(lengths[i])} elements"
        reasons[int(i)] = f"column '{column}' is VECTOR({n}); the value has {what}"
    return pa.array(reasons, pa.string())


def substitute(rule: MaxLength, field: pa.Field) -> pa.Scalar | None:
    """The value ``SUBSTITUTE_DEFAULT_VALUE`` puts in place of a value too long (one
    element of a list column)."""
    if rule.default is None:
        return None
    t = field.type
    elem = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
    return fill_scalar(NullFill(rule.default), elem)


def apply_rules(table: pa.Table, kept: pa.Array, rules: ValueRules) -> Decoded:
    """The rows of ``table`` whose values fit ``rules`` (ENUM / SET and GEOGRAPHYPOINT
    values as stored), their ``kept`` indices, and an error for each other row."""
    if rules.choices:
        table = choose(table, dict(rules.choices))
    good = np.ones(table.num_rows, dtype=bool)
    why: dict[int, str] = {}

    def refuse(reasons: pa.Array) -> None:
        nonlocal good
        bad = reasons.is_valid().to_numpy(zero_copy_only=False)
        for row in np.flatnonzero(bad & good):
            why[int(row)] = reasons[int(row)].as_py()
        good &= ~bad

    for name, kind in rules.geography:
        if name in table.column_names:
            i = table.column_names.index(name)
            stored, reasons = normalize(table.column(i), kind, name)
            table = table.set_column(i, table.field(i), stored)
            refuse(reasons)
    for name, n in rules.vectors:
        if name in table.column_names:
            refuse(vector_problems(table.column(name), n, name))
    for name, fill in rules.fills:
        if name in table.column_names:
            i = table.column_names.index(name)
            filled = fill_nulls(table.column(i), fill_scalar(fill, table.field(i).type))
            table = table.set_column(i, table.field(i), filled)
    for name, rule in rules.lengths:
        if name in table.column_names:
            i = table.column_names.index(name)
            fitted, reasons = fit_length(
                table.column(i), rule, name, substitute(rule, table.field(i))
            )
            table = table.set_column(i, table.field(i), fitted)
            if reasons is not None:
                refuse(reasons)
    if good.all():
        return Decoded(table, kept, ())
    rejected = tuple(RecordError(kept[r].as_py(), why[r]) for r in sorted(why))
    mask = pa.array(good)
    return Decoded(table.filter(mask), kept.filter(mask), rejected)

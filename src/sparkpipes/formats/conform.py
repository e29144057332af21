"""A decoded chunk shaped into the table's rows: what happens to a decoder's output before
it is written (``engine.batch.task`` calls these, in this order, on each chunk).

Promises:

- :func:`to_columns` gives exactly the table's columns, in its order; a column the decoder
  did not load holds its DEFAULT, else NULL; a loaded one is cast to the column's type (a
  cast that loses data raises ``ArrowInvalid``). Unlike ``formats.base.conform`` (a
  decoder's own fast path, which needs every column), columns may be missing.
- :func:`with_metadata` fills the table's record-metadata columns (``__key``,
  ``__header$<name>``, ``__metadata$offset|partition|recordTimestamp``; see
  ``config.core.is_metadata_column``) from each kept record's key, headers, position,
  partition and timestamp, as text unless the column has another type; a column the
  source gives nothing for is NULL, never an error; columns not in the table are skipped.
- :func:`not_null` drops the rows that leave a NOT NULL column empty and names each as a
  :class:`~sparkpipes.formats.base.RecordError` by its index in the fetched records (as a
  decoder names a record it could not decode), in row order, with the first such column
  in the order given; whether that fails the batch is the caller's decision.

All are pure functions of Arrow data: no I/O, no state, nothing per row in Python but for
the rows a check rejects, the ``__header$…`` columns and bytes that are not UTF-8.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config.tables import ColumnDefault
from sparkpipes.formats.base import Decoded, RecordError
from sparkpipes.formats.coerce import coerce_column
from sparkpipes.sources.base import Fetched

__all__ = ["as_text", "default_values", "not_null", "to_columns", "with_metadata"]


def to_columns(
    table: pa.Table, schema: pa.Schema, defaults: Mapping[str, ColumnDefault] | None = None
) -> pa.Table:
    """Columns of ``schema`` in its order; the ones the decoder did not load hold their
    ``defaults`` (the time now for ``now``), or NULL."""
    n = table.num_rows
    cols = [
        table.column(f.name)
        if f.name in table.column_names
        else default_values(defaults[f.name], f, n)
        if defaults and f.name in defaults
        else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def default_values(default: ColumnDefault, field: pa.Field, n: int) -> pa.Array:
    """``n`` rows of a column's DEFAULT, of its type (a ValueError names a default the
    type cannot hold)."""
    value = dt.datetime.now(dt.UTC) if default.now else coerce_column(default.value, field)
    return pa.repeat(pa.scalar(value, field.type), n)


def with_metadata(
    table: pa.Table, columns: Iterable[str], partition: str, fetched: Fetched, kept: pa.Array
) -> pa.Table:
    """``table`` with its record-metadata columns filled (Pinot's ``metadata.populate``):
    each is text unless the table gives the column another type. ``kept``: the index in
    ``fetched`` of each row of ``table``."""
    n = table.num_rows
    headers = None
    for name in columns:
        if name not in table.column_names:
            continue
        if name == "__key":
            values = as_text(fetched.keys.take(kept)) if fetched.keys is not None else None
        elif name == "__metadata$offset":
            values = fetched.positions.take(kept).cast(pa.string())
        elif name == "__metadata$partition":
            values = pa.array([partition] * n, pa.string())
        elif name == "__metadata$recordTimestamp":
            ts = fetched.timestamps
            values = ts.take(kept).cast(pa.string()) if ts is not None else None
        else:  # __header$<name>: the last header of that name, as text
            if headers is None:
                rows = fetched.headers.take(kept).to_pylist() if fetched.headers else [[]] * n
                headers = [{h["key"]: h["value"] for h in row or ()} for row in rows]
            key = name[len("__header$") :]
            values = as_text(pa.array([h.get(key) for h in headers], pa.binary()))
        if values is None:
            values = pa.nulls(n, pa.string())
        idx = table.schema.get_field_index(name)
        target = table.schema.field(idx)
        table = table.set_column(idx, target, values.cast(target.type))
    return table


def as_text(values: pa.Array) -> pa.Array:
    """Bytes as UTF-8 text (invalid sequences replaced, never an error)."""
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array(
            [None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()],
            pa.string(),
        )


def not_null(table: pa.Table, kept: pa.Array, columns: Iterable[str]) -> Decoded:
    """The rows of ``table`` with a value in each of ``columns`` it has, their ``kept``
    indices, and a ``RecordError`` (by ``kept`` index) for each row without."""
    masks = {c: pc.is_null(table.column(c)) for c in columns if c in table.column_names}
    if not masks:
        return Decoded(table, kept, ())
    mask = None
    for m in masks.values():
        mask = m if mask is None else pc.or_(mask, m)
    if not pc.any(mask).as_py():
        return Decoded(table, kept, ())
    rejected = []
    for row in pc.indices_nonzero(mask).to_pylist():
        column = next(c for c, m in masks.items() if m[row].as_py())
        reason = f"column '{column}' is NOT NULL but the record gives it no value"
        rejected.append(RecordError(kept[row].as_py(), reason))
    good = pc.invert(mask)
    return Decoded(table.filter(good), kept.filter(good), tuple(rejected))

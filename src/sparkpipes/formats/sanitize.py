"""What a NULL is stored as and how long a value may be, on Arrow columns: a table's
``fills`` and ``lengths`` (``config.tables.NullFill`` / ``MaxLength``), which a Pinot
schema's ``defaultNullValue`` and ``maxLength`` become.

Promises, as Pinot's ``NullValueTransformer`` then ``SanitizationTransformer`` do:

- :func:`fill_nulls`: a NULL — and, in a list column, an empty list (Pinot's
  ``DataTypeTransformer`` reads one as null) — is the fill value (a list column: a list of
  the one value).
- :func:`fit_length`: text is cut at its first NUL character and to ``limit`` UTF-16
  units (Java's ``String.substring``; a surrogate pair cut in two leaves ``?``, as Java's
  UTF-8 encoder writes a lone surrogate), binary to ``limit`` bytes; what happens to a
  value so changed is the rule's ``exceed`` (see ``MaxLength``); each element of a list.

Whole columns at once; only text that is too long and holds characters outside the BMP
(where UTF-16 units and code points differ) is cut in Python, row by row.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config.tables import MaxLength, NullFill

__all__ = ["fill_nulls", "fill_scalar", "fit_length"]

_ASTRAL = "[\\x{10000}-\\x{10FFFF}]"  # characters Java counts as two UTF-16 units


def fill_scalar(fill: NullFill, t: pa.DataType, now: dt.datetime | None = None) -> pa.Scalar:
    """The value of ``fill`` in type ``t`` (for a list type, a list of the one value;
    a fill of no value: NULL);
    ``now`` (default: the time now) for a fill of the load time. A ValueError names a fill
    the type cannot hold."""
    elem = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
    if fill.value is None and not fill.now:
        return pa.scalar(None, t)
    if fill.now:
        when = now or dt.datetime.now(dt.UTC)
        if pa.types.is_timestamp(elem):
            one = pa.scalar(when, elem)
        elif pa.types.is_integer(elem):
            ms = int(when.timestamp() * 1000)
            one = pa.scalar(ms // fill.unit_ms, elem)
        else:
            one = pa.scalar(when.strftime(fill.strftime or "%Y-%m-%dT%H:%M:%S"), elem)
    elif pa.types.is_binary(elem) or pa.types.is_large_binary(elem):
        one = pa.scalar(bytes.fromhex(fill.value or ""), elem)
    else:
        try:
            one = pa.array([fill.value], pa.string()).cast(elem)[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValueError(f"cannot hold {fill.value!r} in {elem}: {e}") from None
    return one if elem is t else pa.scalar([one.as_py()], t)


def fill_nulls(values: pa.Array | pa.ChunkedArray, value: pa.Scalar) -> pa.Array:
    """``values`` with each NULL (and each empty list) as ``value``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    empty = pc.is_null(values)
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        empty = pc.or_kleene(empty, pc.equal(pc.list_value_length(values), 0))
    if not pc.any(empty).as_py():
        return values
    return pc.if_else(empty, value, values)


def fit_length(
    values: pa.Array | pa.ChunkedArray, rule: MaxLength, column: str, default: pa.Scalar | None
) -> tuple[pa.Array, pa.Array | None]:
    """``values`` as ``rule`` stores them, and per row why one cannot be (with
    ``ERROR``), or None when every row can. ``default``: the column's default value (of
    the element type), for ``SUBSTITUTE_DEFAULT_VALUE``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        flat = pc.list_flatten(values)
        fitted, reasons = _fit(flat, rule, column, default)
        out = type(values).from_arrays(
            _offsets(values), fitted, type=values.type, mask=pc.is_null(values)
        )
        if reasons is None:
            return out, None
        per_row: list[str | None] = [None] * len(values)
        parents = pc.list_parent_indices(values).to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(reasons.is_valid().to_numpy(zero_copy_only=False)):
            per_row[int(parents[i])] = per_row[int(parents[i])] or reasons[int(i)].as_py()
        return out, pa.array(per_row, pa.string())
    return _fit(values, rule, column, default)


def _offsets(values: pa.Array) -> pa.Array:
    """The offsets of a list array's own slice, starting at 0 (as ``list_flatten`` gives)."""
    offsets = values.offsets
    return pc.subtract(offsets, offsets[0])


def _fit(
    values: pa.Array, rule: MaxLength, column: str, default: pa.Scalar | None
) -> tuple[pa.Array, pa.Array | None]:
    text = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    if text:
        has_nul = pc.fill_null(pc.match_substring(values, "\0"), False)
        cut = pc.if_else(
            has_nul, pc.list_element(pc.split_pattern(values, "\0", max_splits=1), 0), values
        )
        astral = pc.fill_null(pc.count_substring_regex(cut, _ASTRAL), 0)
        units = pc.add(pc.utf8_length(cut), astral)
        too_long = pc.fill_null(pc.greater(units, rule.limit), False)
        changed = pc.or_(has_nul, too_long)
        sanitized = _cut_text(cut, too_long, astral, rule.limit)
    else:
        has_nul = None
        too_long = pc.fill_null(pc.greater(pc.binary_length(values), rule.limit), False)
        changed = too_long
        sanitized = pc.binary_slice(values, 0, rule.limit)
    if not pc.any(changed).as_py():
        return values, None
    exceed = rule.exceed
    if exceed == "TRIM_LENGTH":
        return pc.if_else(changed, sanitized, values), None
    if exceed == "SUBSTITUTE_DEFAULT_VALUE":
        return pc.if_else(
            changed, default if default is not None else pa.scalar(None, values.type), values
        ), None
    if exceed == "ERROR":
        long_why = pa.scalar(f"column '{column}' is longer than its maxLength {rule.limit}")
        why = pc.if_else(too_long, long_why, pa.scalar(None, pa.string()))
        if has_nul is not None:
            nul_why = pa.scalar(f"column '{column}' holds a NUL character")
            why = pc.if_else(has_nul, nul_why, why)
        return values, why
    # NO_ACTION: text with a NUL is cut (there, and to the limit); anything else is kept
    return (pc.if_else(has_nul, sanitized, values) if has_nul is not None else values), None


def _cut_text(cut: pa.Array, too_long: pa.Array, astral: pa.Array, limit: int) -> pa.Array:
    """``cut`` to ``limit`` UTF-16 units where ``too_long``."""
    out = pc.if_else(too_long, pc.utf8_slice_codeunits(cut, 0, limit), cut)
    slow = pc.and_(too_long, pc.greater(astral, 0))
    if not pc.any(slow).as_py():
        return out
    rows = out.to_pylist()
    for i in np.flatnonzero(slow.to_numpy(zero_copy_only=False)):
        rows[int(i)] = _java_prefix(cut[int(i)].as_py(), limit)
    return pa.array(rows, cut.type)


def _java_prefix(text: str, limit: int) -> str:
    """``text.substring(0, limit)`` in Java, as its UTF-8 encoder writes it."""
    units = text.encode("utf-16-le", "surrogatepass")[: 2 * limit]
    if len(units) >= 2 and 0xD8 <= units[-1] <= 0xDB:  # a high surrogate cut from its pair
        return units[:-2].decode("utf-16-le") + "?"
    return units.decode("utf-16-le")

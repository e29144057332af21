"""``GEOGRAPHY`` and ``GEOGRAPHYPOINT`` values: WKT text, read and checked as SingleStore
reads it ("Working with Geospatial Features").

- A ``GEOGRAPHY`` holds a ``POINT``, ``LINESTRING`` or ``POLYGON`` (SingleStore's subset
  of WKT: no ``MULTI…``, no ``GEOMETRYCOLLECTION``), stored as the text given.
- A ``GEOGRAPHYPOINT`` holds a ``POINT``, stored as SingleStore prints one:
  ``POINT(<longitude> <latitude>)`` with 8 decimals; a longitude past ±180 wraps around.
- A latitude outside [-90, 90], a coordinate that is not finite, Z or M coordinates,
  text that is not WKT (or nests deeper than a polygon, or passes 1 MB), another shape, or
  an empty one cannot be held: the row gets a reason (a constraint error, as a value a column's type
  cannot hold), and its value is NULL.

Vectorized with shapely (GEOS) over the whole column: no Python object per row but the
rows that cannot be held.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the text of a shape SingleStore reads (2-D only)
_SHAPE_TEXT = r"(?i)^\s*(POINT|LINESTRING|POLYGON)\s*\("
_MAX_TEXT = 1 << 20
#: shapely's type ids of the shapes each kind of column holds
_SHAPES = {"GEOGRAPHY": (0, 1, 3), "GEOGRAPHYPOINT": (0,)}


def normalize(
    values: pa.Array | pa.ChunkedArray, kind: str, column: str
) -> tuple[pa.Array, pa.Array]:
    """The values a ``kind`` column stores for ``values`` (text) and, per row, why it
    cannot hold it, or NULL."""
    import shapely

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    strings = values.cast(pa.string())
    text = np.asarray(strings.to_numpy(zero_copy_only=False), dtype=object)
    given = values.is_valid().to_numpy(zero_copy_only=False)
    # before GEOS reads it: one of the shapes, two levels of parentheses at most (a deeply
    # nested collection would exhaust GEOS's stack), no Z/M coordinates, 1 MB at most
    screened = pc.and_(
        pc.match_substring_regex(strings, _SHAPE_TEXT),
        pc.and_(
            pc.invert(pc.match_substring(strings, "(((")),
            pc.less_equal(pc.utf8_length(strings), _MAX_TEXT),
        ),
    )
    readable = given & pc.fill_null(screened, False).to_numpy(zero_copy_only=False)
    shapes = shapely.from_wkt(np.where(readable, text, None), on_invalid="ignore")
    ok = np.isin(shapely.get_type_id(shapes), _SHAPES[kind]) & ~shapely.is_empty(shapes)
    bounds = shapely.bounds(shapes)
    with np.errstate(invalid="ignore"):
        ok &= np.isfinite(bounds).all(axis=1)
        ok &= (bounds[:, 1] >= -90) & (bounds[:, 3] <= 90)
    if kind == "GEOGRAPHYPOINT":
        points = np.where(ok, shapes, None)
        x = np.nan_to_num(shapely.get_x(points))
        y = np.nan_to_num(shapely.get_y(points))
        x = np.where(np.abs(x) <= 180, x, np.mod(x + 180, 360) - 180)
        stored = np.char.add(
            np.char.add("POINT(", np.char.mod("%.8f", x)),
            np.char.add(np.char.add(" ", np.char.mod("%.8f", y)), ")"),
        ).astype(object)
    else:
        stored = text
    out = pa.array(np.where(ok, stored, None), pa.string())
    bad = given & ~ok
    reasons: list[str | None] = [None] * len(text)
    for i in np.flatnonzero(bad):
        shown = str(text[i]) if len(str(text[i])) <= 60 else str(text[i])[:59] + "…"
        reasons[i] = f"column '{column}' cannot hold '{shown}' as {kind}"
    return out, pa.array(reasons, pa.string())

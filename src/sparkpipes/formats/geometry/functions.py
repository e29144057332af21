"""Pinot's geospatial scalar functions (``ScalarFunctions`` of ``pinot-core``) over Arrow
columns, as a pipeline's transform computes them (``FunctionCall``).

Each takes and returns whole columns: Pinot's geometry bytes (:mod:`.serde`) in and out,
shapes read and tested by shapely (GEOS, the C++ port of the JTS library Pinot uses).
As Pinot's scalar functions, a NULL argument gives NULL. Where Pinot's function throws
(text that is not WKT, bytes that are not a shape, a geography with a geometry, a
spherical distance between shapes that are not points or a coordinate out of range) the
value is NULL, as sparkpipes' other functions give NULL for a value they cannot convert;
Pinot fails the record unless ``continueOnError``.

:data:`FUNCTIONS`: the name a ``FunctionCall`` gives (``pinot.<Pinot's name>``) → its
:class:`ArrowFunction`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal
from types import MappingProxyType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.formats.geometry.serde import (
    GEOGRAPHY,
    buffers,
    deserialize,
    serialize,
    serialize_points,
)

#: GeometryCollections nested deeper than this in a WKT text are not read (GEOS reads
#: them recursively; a text of nested collections could exhaust its stack)
MAX_COLLECTIONS = 32
#: Earth's radius Pinot's spherical distance uses (``GeometryUtils.EARTH_RADIUS_M``)
EARTH_RADIUS_M = 6371.01 * 1000.0


@dataclass(frozen=True)
class ArrowFunction:
    """A function of Arrow columns; ``returns`` is its result's Spark SQL type."""

    run: Callable[..., pa.Array]
    returns: str


def _is_true(values: pa.Array) -> np.ndarray:
    return pc.fill_null(values.cast(pa.bool_()), False).to_numpy(zero_copy_only=False)


def _null_where(values: pa.Array, *args: pa.Array) -> pa.Array:
    """``values`` with NULL wherever an argument is NULL."""
    for a in args:
        values = pc.if_else(a.is_valid(), values, pa.scalar(None, values.type))
    return values


# -- constructors -----------------------------------------------------------------------


def st_point(x: pa.Array, y: pa.Array, geography: pa.Array | None = None) -> pa.Array:
    """``stPoint(x, y[, isGeography])``: a point (``isGeography`` is a boolean here; the
    front end converts Pinot's ``true`` / ``1`` / ``'true'`` to one)."""
    xs = pc.fill_null(x.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
    ys = pc.fill_null(y.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
    present = x.is_valid().to_numpy(zero_copy_only=False) & y.is_valid().to_numpy(
        zero_copy_only=False
    )
    geo = np.zeros(len(xs), bool)
    if geography is not None:
        geo = _is_true(geography)
        present &= geography.is_valid().to_numpy(zero_copy_only=False)
    return serialize_points(xs, ys, geo, present)


def _from_text(geography: bool) -> Callable[[pa.Array], pa.Array]:
    def run(text: pa.Array) -> pa.Array:
        import shapely

        strings = text.cast(pa.string())
        deep = pc.greater(
            pc.count_substring_regex(strings, "(?i)GEOMETRYCOLLECTION"), MAX_COLLECTIONS
        )
        readable = pc.and_(strings.is_valid(), pc.invert(pc.fill_null(deep, False)))
        values = strings.to_numpy(zero_copy_only=False)
        ok = readable.to_numpy(zero_copy_only=False)
        shapes = shapely.from_wkt(np.where(ok, values, None), on_invalid="ignore")
        return serialize(shapes, np.full(len(values), geography))

    return run


def _from_wkb(geography: bool) -> Callable[[pa.Array], pa.Array]:
    def run(wkb: pa.Array) -> pa.Array:
        import shapely

        values = wkb.cast(pa.binary()).to_numpy(zero_copy_only=False)
        shapes = shapely.from_wkb(values, on_invalid="ignore")
        srid = shapely.get_srid(shapes)
        # an extended WKB naming an SRID gives it, as JTS's WKBReader (4326: a geography)
        geo = np.where(srid > 0, srid == 4326, geography)
        return serialize(shapes, geo)

    return run


def _set_geography(geography: bool) -> Callable[[pa.Array], pa.Array]:
    """``toSphericalGeography`` / ``toGeometry``: the same bytes with the type byte's
    geography bit set or cleared (members of a collection keep theirs, as in Pinot)."""

    def run(values: pa.Array) -> pa.Array:
        shapes, _ = deserialize(values)
        readable = ~_missing(shapes)
        values, offsets, data = buffers(values)
        data = data.copy()
        firsts = offsets[:-1][readable]
        data[firsts] = data[firsts] | GEOGRAPHY if geography else data[firsts] & 0x7F
        validity = pa.array(readable, pa.bool_()).buffers()[1]
        parts = [validity, pa.py_buffer(offsets.copy()), pa.py_buffer(data)]
        return pa.Array.from_buffers(pa.binary(), len(values), parts)

    return run


def _missing(shapes: np.ndarray) -> np.ndarray:
    import shapely

    return shapely.is_missing(shapes)


# -- output -----------------------------------------------------------------------------

_EXPONENT = re.compile(r"-?\d+(?:\.\d+)?e[-+]?\d+")


def _jts_number(match: re.Match[str]) -> str:
    """A number as JTS's WKTWriter writes it (plain decimals, at most 16 after the point)."""
    exact = Context(prec=800)  # a double's digits, whole (up to 10^308)
    value = Decimal(match.group(0)).quantize(Decimal("1e-16"), ROUND_HALF_EVEN, exact)
    text = format(value, "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "-0" if text in ("-0", "0") and match.group(0).startswith("-") else text


def jts_text(shapes: np.ndarray) -> pa.Array:
    """The WKT JTS's ``WKTWriter`` writes (Pinot's ``ST_AsText``): 2-D, ``POINT (1 2)``,
    ``MULTIPOINT ((1 2), (3 4))``, numbers in plain decimals with at most 16 digits after
    the point."""
    import shapely

    text = shapely.to_wkt(shapes, rounding_precision=16, trim=True, output_dimension=2)
    out = pa.array(text, pa.string())
    has_exp = pc.fill_null(pc.match_substring(out, "e"), False).to_numpy(zero_copy_only=False)
    if not has_exp.any():
        return out
    fixed = out.to_pylist()
    for i in np.flatnonzero(has_exp):
        fixed[i] = _EXPONENT.sub(_jts_number, fixed[i])
    return pa.array(fixed, pa.string())


def st_as_text(values: pa.Array) -> pa.Array:
    """``ST_AsText(bytes)``: the shape's WKT, as JTS writes it."""
    shapes, _ = deserialize(values)
    return jts_text(shapes)


def st_as_binary(values: pa.Array) -> pa.Array:
    """``ST_AsBinary(bytes)``: the shape's WKB as JTS's WKBWriter writes it (big-endian,
    2-D, no SRID)."""
    import shapely

    shapes, _ = deserialize(values)
    wkb = shapely.to_wkb(shapes, output_dimension=2, byte_order=0, include_srid=False)
    return pa.array(wkb, pa.binary())


_TYPE_NAMES = np.array(
    [
        "Point",
        "LineString",
        "LinearRing",
        "Polygon",
        "MultiPoint",
        "MultiLineString",
        "MultiPolygon",
        "GeometryCollection",
    ],
    dtype=object,
)


def st_geometry_type(values: pa.Array) -> pa.Array:
    """``ST_GeometryType(bytes)``: JTS's name of the shape (``Point``, ``MultiPolygon`` …)."""
    import shapely

    shapes, _ = deserialize(values)
    ids = shapely.get_type_id(shapes)
    return pa.array(np.where(ids >= 0, _TYPE_NAMES[np.clip(ids, 0, 7)], None), pa.string())


# -- relations --------------------------------------------------------------------------


def _pair(a: pa.Array, b: pa.Array, same_kind: bool = True):
    """Both sides' shapes and geography flags, and where both are readable (and, with
    ``same_kind``, both geographies or both geometries, else Pinot throws)."""
    left, left_geo = deserialize(a)
    right, right_geo = deserialize(b)
    ok = ~_missing(left) & ~_missing(right)
    if same_kind:
        ok &= left_geo == right_geo
    return left, right, left_geo, ok


def _ints(flags: np.ndarray, ok: np.ndarray) -> pa.Array:
    return pa.array(np.where(ok, flags.astype(np.int32), 0), pa.int32(), mask=~ok)


def st_contains(a: pa.Array, b: pa.Array) -> pa.Array:
    """``ST_Contains(a, b)``: 1 if ``a`` contains ``b``, else 0 (planar, for geographies
    too, as Pinot)."""
    import shapely

    left, right, _, ok = _pair(a, b)
    return _ints(np.where(ok, shapely.contains(left, right), False), ok)


def st_within(a: pa.Array, b: pa.Array) -> pa.Array:
    """``ST_Within(a, b)``: 1 if ``a`` is within ``b``, else 0 (planar, as Pinot)."""
    import shapely

    left, right, _, ok = _pair(a, b)
    return _ints(np.where(ok, shapely.within(left, right), False), ok)


def st_equals(a: pa.Array, b: pa.Array) -> pa.Array:
    """``ST_Equals(a, b)``: 1 if the shapes are topologically equal, else 0."""
    import shapely

    left, right, _, ok = _pair(a, b, same_kind=False)
    return _ints(np.where(ok, shapely.equals(left, right), False), ok)


def st_distance(a: pa.Array, b: pa.Array) -> pa.Array:
    """``ST_Distance(a, b)``: planar distance between geometries (NaN if one is empty);
    between geography points, the great-circle distance in meters on Pinot's sphere."""
    import shapely

    left, right, geo, ok = _pair(a, b)
    planar = ok & ~geo
    out = np.full(len(left), np.nan)
    empty = shapely.is_empty(np.where(planar, left, None)) | shapely.is_empty(
        np.where(planar, right, None)
    )
    both = planar & ~empty
    out[both] = shapely.distance(left[both], right[both])
    spherical = ok & geo
    points = spherical & (shapely.get_type_id(left) == 0) & (shapely.get_type_id(right) == 0)
    points &= ~shapely.is_empty(np.where(points, left, None))
    points &= ~shapely.is_empty(np.where(points, right, None))
    lon1, lat1 = shapely.get_x(left[points]), shapely.get_y(left[points])
    lon2, lat2 = shapely.get_x(right[points]), shapely.get_y(right[points])
    inside = (np.abs(lat1) <= 90) & (np.abs(lat2) <= 90) & (np.abs(lon1) <= 180)
    inside &= np.abs(lon2) <= 180
    out[points] = _great_circle(lon1, lat1, lon2, lat2)
    points[points] = inside
    ok = planar | points
    return pa.array(np.where(ok, out, 0.0), pa.float64(), mask=~ok)


def _great_circle(lon1, lat1, lon2, lat2) -> np.ndarray:
    """Pinot's great-circle distance (Vincenty's formula on a sphere), in its order of
    operations so the doubles agree."""
    r1, r2 = np.radians(lat1), np.radians(lat2)
    sin1, cos1, sin2, cos2 = np.sin(r1), np.cos(r1), np.sin(r2), np.cos(r2)
    delta = np.radians(lon1) - np.radians(lon2)
    cos_delta = np.cos(delta)
    t1 = cos2 * np.sin(delta)
    t2 = cos1 * sin2 - sin1 * cos2 * cos_delta
    t3 = sin1 * sin2 + cos1 * cos2 * cos_delta
    return np.arctan2(np.sqrt(t1 * t1 + t2 * t2), t3) * EARTH_RADIUS_M


#: ``FunctionCall.function`` → the function
FUNCTIONS: Mapping[str, ArrowFunction] = MappingProxyType(
    {
        "pinot.stPoint": ArrowFunction(st_point, "binary"),
        "pinot.stGeomFromText": ArrowFunction(_from_text(False), "binary"),
        "pinot.stGeogFromText": ArrowFunction(_from_text(True), "binary"),
        "pinot.stGeomFromWKB": ArrowFunction(_from_wkb(False), "binary"),
        "pinot.stGeogFromWKB": ArrowFunction(_from_wkb(True), "binary"),
        "pinot.toSphericalGeography": ArrowFunction(_set_geography(True), "binary"),
        "pinot.toGeometry": ArrowFunction(_set_geography(False), "binary"),
        "pinot.stAsText": ArrowFunction(st_as_text, "string"),
        "pinot.stAsBinary": ArrowFunction(st_as_binary, "binary"),
        "pinot.stGeometryType": ArrowFunction(st_geometry_type, "string"),
        "pinot.stContains": ArrowFunction(st_contains, "int"),
        "pinot.stWithin": ArrowFunction(st_within, "int"),
        "pinot.stEquals": ArrowFunction(st_equals, "int"),
        "pinot.stDistance": ArrowFunction(st_distance, "double"),
    }
)

"""Pinot's geometry bytes (``GeometrySerializer``), read and written over whole columns.

A Pinot ``BYTES`` column holding a shape holds it in this form (all numbers big-endian):

- one **type byte**: the shape's id (0 Point, 1 MultiPoint, 2 LineString, 3
  MultiLineString, 4 Polygon, 5 MultiPolygon, 6 GeometryCollection), with bit ``0x80``
  set for a *geography* (SRID 4326, what ``toSphericalGeography`` and ``ST_GeogFrom…``
  make) and clear for a planar geometry;
- a Point: x then y as doubles (NaN, NaN for an empty point);
- a MultiPoint: the number of points (int), then their coordinates;
- a (Multi)LineString or (Multi)Polygon: the number of parts and of points (ints), the
  index of each part's first point (ints), then every coordinate; a polygon's rings are
  its parts, each shell turned clockwise and each hole counter-clockwise (Pinot decides
  the turn by the sign of ``Σ (x₂ - x₁)(y₂ + y₁)``, summed in ring order — reproduced
  here exactly, as it decides which bytes are written and which rings a reader takes for
  shells); an empty one is its type and two zero ints;
- a GeometryCollection: its type byte, then each member written whole (its own type
  byte), up to the end of the value.

Shapes are shapely (GEOS) geometries; only the byte layout is done here. Points, by far
the most common value, are written and read without a Python step per row; other shapes
take one per row. A value that is not such bytes reads as ``None``.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

#: bit of the type byte that marks a geography
GEOGRAPHY = 0x80
#: Pinot's type ids, by shapely's (``shapely.get_type_id``; 2, a LinearRing, is a LineString)
_PINOT_TYPE = {0: 0, 4: 1, 1: 2, 2: 2, 5: 3, 3: 4, 6: 5, 7: 6}
_POINT = np.dtype([("type", "u1"), ("x", ">f8"), ("y", ">f8")])
_COORD = np.dtype(">f8")


def serialize(geoms: np.ndarray, geography: np.ndarray) -> pa.BinaryArray:
    """Pinot's bytes of each shape (``None``: NULL), marked a geography where
    ``geography`` is true (the members of a collection too, as Pinot's readers make
    them)."""
    import shapely

    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    present = ~shapely.is_missing(geoms)
    types = shapely.get_type_id(geoms)
    flags = np.where(np.asarray(geography, dtype=bool), GEOGRAPHY, 0).astype(np.uint8)
    points = present & (types == 0)
    xy = np.full((int(points.sum()), 2), np.nan)  # an empty point is NaN, NaN
    solid = ~shapely.is_empty(geoms[points])
    xy[solid] = shapely.get_coordinates(geoms[points][solid])
    x, y = xy[:, 0], xy[:, 1]
    rec = _point_records(x, y, flags[points])
    others = np.flatnonzero(present & ~points)
    if not len(others):  # points and NULLs only: the bytes as they lie, no step per row
        return _points_array(rec, points)
    out: list[bytes | None] = [None] * n
    raw, size = rec.tobytes(), _POINT.itemsize
    for j, i in enumerate(np.flatnonzero(points)):
        out[i] = raw[j * size : (j + 1) * size]
    for i in others:
        parts: list[bytes] = []
        _write(geoms[i], int(flags[i]), parts)
        out[i] = b"".join(parts)
    return pa.array(out, pa.binary())


def serialize_points(
    x: np.ndarray, y: np.ndarray, geography: np.ndarray, present: np.ndarray
) -> pa.BinaryArray:
    """Pinot's bytes of the points (x, y) where ``present`` (else NULL), coordinates kept
    as given (NaN and infinities too, as JTS keeps them), with no step per row."""
    flags = np.where(np.asarray(geography, dtype=bool), GEOGRAPHY, 0).astype(np.uint8)
    return _points_array(_point_records(x[present], y[present], flags[present]), present)


def _point_records(x: np.ndarray, y: np.ndarray, flags: np.ndarray) -> np.ndarray:
    rec = np.empty(len(x), dtype=_POINT)
    rec["type"], rec["x"], rec["y"] = flags, x, y
    return rec


def _points_array(rec: np.ndarray, present: np.ndarray) -> pa.BinaryArray:
    n = len(present)
    offsets = np.concatenate([[0], np.cumsum(np.where(present, _POINT.itemsize, 0))])
    validity = pa.array(present, pa.bool_()).buffers()[1]
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(rec.tobytes())]
    return pa.Array.from_buffers(pa.binary(), n, buffers, null_count=n - len(rec))


def buffers(values: pa.Array | pa.ChunkedArray) -> tuple[pa.BinaryArray, np.ndarray, np.ndarray]:
    """A binary column as one array, its value offsets (``n + 1``, into its data buffer)
    and its data buffer's bytes."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.binary())
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], np.int32)[values.offset : values.offset + n + 1]
    data_buffer = values.buffers()[2]
    data = (
        np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    )
    return values, offsets, data


def _coords(g) -> np.ndarray:
    import shapely

    return shapely.get_coordinates(g).astype(_COORD)


def _clockwise(xy: np.ndarray) -> bool:
    """Pinot's turn of a ring: ``Σ (x₂ - x₁)(y₂ + y₁)`` over its edges, closing edge last,
    summed left to right (as Java does), positive for clockwise."""
    x, y = xy[:, 0].astype(float), xy[:, 1].astype(float)
    if len(x) == 0:
        return False
    area = 0.0
    if len(x) > 1:
        area = float(np.cumsum((x[1:] - x[:-1]) * (y[1:] + y[:-1]))[-1])
    return area + (x[0] - x[-1]) * (y[0] + y[-1]) > 0


def _write(g, flag: int, out: list[bytes]) -> None:
    import shapely

    kind = _PINOT_TYPE[int(shapely.get_type_id(g))]
    if kind == 0:
        xy = _coords(g)
        x, y = (np.nan, np.nan) if len(xy) == 0 else (float(xy[0, 0]), float(xy[0, 1]))
        out.append(struct.pack(">Bdd", kind | flag, x, y))
    elif kind == 1:
        xy = _coords(g)
        out.append(struct.pack(">Bi", kind | flag, len(xy)) + xy.tobytes())
    elif kind in (2, 3):
        lines = [g] if kind == 2 else list(shapely.get_parts(g))
        counts = [int(shapely.get_num_coordinates(part)) for part in lines]
        if kind == 2 and counts[0] == 0:
            lines, counts = [], []
        _write_parts(kind | flag, [_coords(part) for part in lines], counts, out)
    elif kind in (4, 5):
        rings: list[np.ndarray] = []
        for poly in [g] if kind == 4 else shapely.get_parts(g):
            if shapely.is_empty(poly):
                continue
            shell = _coords(shapely.get_exterior_ring(poly))
            rings.append(shell if _clockwise(shell) else shell[::-1])
            for k in range(int(shapely.get_num_interior_rings(poly))):
                hole = _coords(shapely.get_interior_ring(poly, k))
                rings.append(hole[::-1] if _clockwise(hole) else hole)
        _write_parts(kind | flag, rings, [len(r) for r in rings], out)
    else:
        out.append(struct.pack(">B", kind | flag))
        for member in shapely.get_parts(g):
            _write(member, flag, out)


def _write_parts(type_byte: int, parts: list[np.ndarray], counts: list[int], out: list[bytes]):
    total = sum(counts)
    out.append(struct.pack(">Bii", type_byte, len(parts), total))
    if parts:
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(">i4")
        out.append(starts.tobytes())
        out.extend(np.ascontiguousarray(p, dtype=_COORD).tobytes() for p in parts)


def deserialize(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """The shapes of Pinot's bytes (``None`` for NULL or bytes that are not a shape) and
    whether each is a geography."""
    import shapely

    values, offsets, data = buffers(values)
    n = len(values)
    geoms = np.full(n, None, dtype=object)
    geography = np.zeros(n, dtype=bool)
    if n == 0:
        return geoms, geography
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    lengths = np.where(valid, np.diff(offsets), 0)
    firsts = np.zeros(n, np.uint8)
    firsts[lengths > 0] = data[offsets[:-1][lengths > 0]]
    geography[:] = (firsts & GEOGRAPHY) != 0
    points = (lengths == _POINT.itemsize) & ((firsts & 0x7F) == 0)
    if points.any():  # gathered from the buffer as they lie, no step per row
        at = offsets[:-1][points][:, None] + np.arange(_POINT.itemsize)
        rec = np.ascontiguousarray(data[at]).view(_POINT).ravel()
        x, y = rec["x"].astype(float), rec["y"].astype(float)
        empty = np.isnan(x) | np.isnan(y)
        made = shapely.points(np.where(empty, 0.0, x), np.where(empty, 0.0, y))
        made[empty] = shapely.from_wkt("POINT EMPTY")
        geoms[points] = made
    for i in np.flatnonzero((lengths > 0) & ~points):
        value = data[offsets[i] : offsets[i + 1]].tobytes()
        try:
            geoms[i], _ = _read(memoryview(value), 0)
        except (struct.error, ValueError, IndexError, shapely.errors.GEOSException):
            continue
    geography &= ~shapely.is_missing(geoms)
    return geoms, geography


_KINDS = ("Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon")


def _read(buf: memoryview, pos: int):
    import shapely

    kind = buf[pos] & 0x7F
    pos += 1
    if kind == 0:
        x, y = struct.unpack_from(">dd", buf, pos)
        empty = np.isnan(x) or np.isnan(y)
        return (shapely.from_wkt("POINT EMPTY") if empty else shapely.Point(x, y)), pos + 16
    if kind == 1:
        (count,) = struct.unpack_from(">i", buf, pos)
        xy, pos = _read_coords(buf, pos + 4, count)
        return shapely.MultiPoint(xy) if count else shapely.from_wkt("MULTIPOINT EMPTY"), pos
    if kind in (2, 3, 4, 5):
        return _read_parts(buf, pos, kind)
    if kind == 6:
        members = []
        while pos < len(buf):
            member, pos = _read(buf, pos)
            members.append(member)
        return shapely.GeometryCollection(members), pos
    raise ValueError(f"not a shape type: {kind}")


def _read_coords(buf: memoryview, pos: int, count: int) -> tuple[np.ndarray, int]:
    if count < 0 or pos + 16 * count > len(buf):
        raise ValueError("coordinates past the end")
    xy = np.frombuffer(buf, dtype=_COORD, count=2 * count, offset=pos).astype(float)
    return xy.reshape(count, 2), pos + 16 * count


def _read_parts(buf: memoryview, pos: int, kind: int):
    import shapely

    parts, total = struct.unpack_from(">ii", buf, pos)
    pos += 8
    if parts == 0:
        return shapely.from_wkt(f"{_KINDS[kind].upper()} EMPTY"), pos
    if parts < 0 or pos + 4 * parts > len(buf):
        raise ValueError("parts past the end")
    starts = np.frombuffer(buf, dtype=">i4", count=parts, offset=pos).astype(np.int64)
    xy, pos = _read_coords(buf, pos + 4 * parts, total)
    bounds = [*starts.tolist(), total]
    pieces = [xy[bounds[k] : bounds[k + 1]] for k in range(parts)]
    if kind == 2:
        if parts != 1:
            raise ValueError("a LineString has one part")
        return shapely.LineString(pieces[0]), pos
    if kind == 3:
        return shapely.MultiLineString(pieces), pos
    polygons: list[tuple[np.ndarray, list[np.ndarray]]] = []
    for ring in pieces:  # a clockwise ring starts a polygon, the others are its holes
        if _clockwise(ring):
            polygons.append((ring, []))
        elif polygons:
            polygons[-1][1].append(ring)
        else:
            raise ValueError("a hole before any shell")
    made = [shapely.Polygon(shell, holes) for shell, holes in polygons]
    if kind == 4:
        if len(made) != 1:
            raise ValueError("a Polygon has one shell")
        return made[0], pos
    return shapely.MultiPolygon(made), pos

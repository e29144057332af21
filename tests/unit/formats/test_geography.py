"""GEOGRAPHY / GEOGRAPHYPOINT values as SingleStore reads WKT ("Working with Geospatial
Features"): its subset of shapes, points printed with 8 decimals, longitudes wrapped,
latitudes past ±90 refused."""

import pyarrow as pa

from sparkpipes.formats.geography import normalize

TEXT = pa.array(
    [
        "POINT(-73.9499 40.6999)",
        "point (190 10)",
        "POINT(1 95)",
        "LINESTRING(0 0, 1 1)",
        "POLYGON((0 0, 0 10, 10 10, 10 0, 0 0))",
        "MULTIPOINT(1 1, 2 2)",
        "POINT EMPTY",
        "POLYGON((0 0, 1 1))",
        "not wkt",
        None,
    ]
)


def test_a_geographypoint_is_a_point_printed_with_eight_decimals():
    stored, reasons = normalize(TEXT, "GEOGRAPHYPOINT", "c")
    assert stored.to_pylist()[:2] == [
        "POINT(-73.94990000 40.69990000)",
        "POINT(-170.00000000 10.00000000)",  # 190 wraps around
    ]
    assert stored.to_pylist()[2:] == [None] * 8
    assert reasons.to_pylist()[2] == "column 'c' cannot hold 'POINT(1 95)' as GEOGRAPHYPOINT"
    assert reasons.to_pylist()[-1] is None  # NULL is NULL
    assert all(r is not None for r in reasons.to_pylist()[2:9])


def test_a_geography_is_a_point_line_or_polygon_kept_as_written():
    stored, reasons = normalize(TEXT, "GEOGRAPHY", "c")
    kept = [v for v in stored.to_pylist() if v is not None]
    assert kept == [
        "POINT(-73.9499 40.6999)",
        "point (190 10)",
        "LINESTRING(0 0, 1 1)",
        "POLYGON((0 0, 0 10, 10 10, 10 0, 0 0))",
    ]
    refused = [r for r in reasons.to_pylist() if r is not None]
    assert len(refused) == 5  # latitude 95, MULTIPOINT, empty, unclosed ring, not WKT


def test_text_geos_should_not_read_is_refused_before_it_does():
    """A deeply nested collection would exhaust GEOS's stack and kill the worker; Z and M
    coordinates and non-finite ones are not SingleStore's."""
    nested = "GEOMETRYCOLLECTION(" * 40_000 + "POINT(1 1)" + ")" * 40_000
    values = pa.array([nested, "POINT Z(1 2 3)", "POINT(1e999 0)", "POINT(nan 1)", "POINT(1 2)"])
    stored, reasons = normalize(values, "GEOGRAPHY", "c")
    assert stored.to_pylist() == [None, None, None, None, "POINT(1 2)"]
    assert all(r is not None for r in reasons.to_pylist()[:4])

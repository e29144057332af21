"""Pinot's geospatial ingestion functions: the bytes Pinot's ``GeometrySerializer`` writes,
the text its ``ST_AsText`` gives, and its relations and distances, with the values of
Pinot's own tests (``pinot-core/src/test/.../geospatial``), and how the transforms of a
Pinot table config lower to them."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.formats.geometry.functions import FUNCTIONS
from sparkpipes.frontends.pinot.expr import translate


def run(name: str, *args):
    return FUNCTIONS[f"pinot.{name}"].run(
        *[a if isinstance(a, pa.Array) else pa.array(a) for a in args]
    )


def text(name: str, wkts: list[str | None]):
    return run("stAsText", run(name, wkts)).to_pylist()


def test_a_point_is_its_type_byte_and_two_big_endian_doubles():
    # the defaultNullValue of pinot-recipes' geospatial schema is such a point
    (value,) = run("stPoint", [0.6861134172138761], [83.5002942140996]).to_pylist()
    assert value == bytes.fromhex("003fe5f4a42008f90c4054e004d205fbe4")
    assert run("stAsText", [value]).to_pylist() == ["POINT (0.6861134172138761 83.5002942140996)"]
    # isGeography (and toSphericalGeography) set bit 0x80 of the type byte
    geo = run("stPoint", [20.0], [10.0], pa.array([True])).to_pylist()[0]
    assert geo == b"\x80" + struct.pack(">dd", 20.0, 10.0)
    assert run("toSphericalGeography", [value]).to_pylist()[0][0] == 0x80
    assert run("toGeometry", run("toSphericalGeography", [value])).to_pylist() == [value]
    # NULL in, NULL out
    assert run("stPoint", pa.array([None, 1.0]), [2.0, None]).to_pylist() == [None, None]


def test_shapes_are_written_as_pinot_writes_them():
    polygon, line, multi, empty = run(
        "stGeomFromText",
        [
            "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (1 1, 1 2, 2 2, 2 1, 1 1))",
            "LINESTRING (0 0, 1 2)",
            "MULTIPOINT (1 2, 3 4)",
            "LINESTRING EMPTY",
        ],
    ).to_pylist()
    # type 4, 2 parts, 10 points, parts at 0 and 5; the shell turned clockwise, the hole not
    shell = [(0, 0), (0, 10), (10, 10), (10, 0), (0, 0)]
    hole = [(1, 1), (2, 1), (2, 2), (1, 2), (1, 1)]
    coords = b"".join(struct.pack(">dd", x, y) for x, y in shell + hole)
    assert polygon == struct.pack(">Biiii", 4, 2, 10, 0, 5) + coords
    assert line == struct.pack(">Biii", 2, 1, 2, 0) + struct.pack(">dddd", 0, 0, 1, 2)
    assert multi == struct.pack(">Bi", 1, 2) + struct.pack(">dddd", 1, 2, 3, 4)
    assert empty == struct.pack(">Bii", 2, 0, 0)
    assert run("stGeogFromText", ["POINT (1 2)"]).to_pylist()[0][0] == 0x80


# GeoInputOutputTest: text → bytes → WKB → bytes → text gives the text back
ROUND_TRIPS = [
    "MULTIPOINT EMPTY",
    "LINESTRING EMPTY",
    "MULTILINESTRING EMPTY",
    "POLYGON EMPTY",
    "MULTIPOLYGON EMPTY",
    "GEOMETRYCOLLECTION EMPTY",
    "POINT (1 2)",
    "MULTIPOINT ((1 2), (3 4))",
    "LINESTRING (0 0, 1 2, 3 4)",
    "MULTILINESTRING ((1 1, 5 1), (2 4, 4 4))",
    "POLYGON ((0 0, 0 1, 1 1, 1 0, 0 0))",
    "POLYGON ((0 0, 0 3, 3 3, 3 0, 0 0), (1 1, 2 1, 2 2, 1 2, 1 1))",
    "MULTIPOLYGON (((1 1, 1 3, 3 3, 3 1, 1 1)), ((2 4, 2 6, 6 6, 6 4, 2 4)))",
    "GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 2, 3 4), POLYGON ((0 0, 0 1, 1 1, 1 0, 0 0)))",
    "MULTIPOINT ((0 0), (0 1), (1 1), (0 1))",
    "LINESTRING (0 0, 0 1, 0 1, 1 1, 1 0, 0 0)",
]


@pytest.mark.parametrize("kind", ["Geom", "Geog"])
def test_text_and_wkb_round_trip_as_in_pinot(kind):
    stored = run(f"st{kind}FromText", ROUND_TRIPS)
    again = run(f"st{kind}FromWKB", run("stAsBinary", stored))
    assert run("stAsText", again).to_pylist() == ROUND_TRIPS
    assert again.to_pylist() == stored.to_pylist()


def test_text_numbers_are_written_as_jts_writes_them():
    assert text(
        "stGeomFromText", ["POINT (-0.0000001 1e20)", "POINT (0.1234567890123456789 1)"]
    ) == [
        "POINT (-0.0000001 100000000000000000000)",
        "POINT (0.1234567890123457 1)",
    ]


def test_what_pinot_cannot_read_is_null():
    assert run("stGeomFromText", ["not wkt", None, "POINT (1"]).to_pylist() == [None, None, None]
    assert run("stAsText", [b"\x09junk", b"", None]).to_pylist() == [None, None, None]
    nested = "GEOMETRYCOLLECTION (" * 40 + "POINT (1 2)" + ")" * 40
    assert run("stGeomFromText", [nested]).to_pylist() == [None]


def test_geometry_type_names_are_jts_names():
    shapes = ["Point (1 4)", "LINESTRING (1 1, 2 2)", "POLYGON ((1 1, 1 4, 4 4, 4 1, 1 1))"]
    shapes += ["GEOMETRYCOLLECTION(POINT(4 6),LINESTRING(4 6, 7 10))"]
    got = run("stGeometryType", run("stGeomFromText", shapes)).to_pylist()
    assert got == ["Point", "LineString", "Polygon", "GeometryCollection"]


def test_distances_are_pinots():  # StDistanceFunctionTest
    planar = [
        ("POINT (50 100)", "POINT (150 150)", 111.80339887498948),
        ("LINESTRING (50 100, 50 200)", "LINESTRING (10 10, 20 20)", 85.44003745317531),
        (
            "POLYGON ((1 1, 1 3, 3 3, 3 1, 1 1))",
            "POLYGON ((4 4, 4 5, 5 5, 5 4, 4 4))",
            1.4142135623730951,
        ),
    ]
    a = run("stGeomFromText", [p[0] for p in planar])
    b = run("stGeomFromText", [p[1] for p in planar])
    assert run("stDistance", a, b).to_pylist() == pytest.approx([p[2] for p in planar], abs=1e-5)
    spherical = [
        ("POINT(-86.67 36.12)", "POINT(-118.40 33.94)", 2886448.9734367016),
        ("POINT(-71.0589 42.3601)", "POINT(-71.2290 42.4430)", 16734.69743457383),
        ("POINT(-86.67 36.12)", "POINT(-86.67 36.12)", 0.0),
    ]
    a = run("stGeogFromText", [p[0] for p in spherical])
    b = run("stGeogFromText", [p[1] for p in spherical])
    assert run("stDistance", a, b).to_pylist() == pytest.approx([p[2] for p in spherical], abs=1e-5)
    # a geography against a geometry, or a spherical distance from a polygon: Pinot throws
    mixed = run("stDistance", a.slice(0, 1), run("stGeomFromText", ["POINT (1 2)"]))
    polygon = run("stGeogFromText", ["POLYGON ((1 1, 1 3, 3 3, 3 1, 1 1))"])
    assert mixed.to_pylist() == [None]
    assert run("stDistance", polygon, a.slice(0, 1)).to_pylist() == [None]


def test_relations_are_pinots():  # StContainsFunctionTest, StWithinFunctionTest
    outer = run("stGeomFromText", ["POLYGON ((0 0, 0 4, 4 4, 4 0, 0 0))", "POINT (20 20)"])
    inner = run("stGeomFromText", ["POLYGON ((1 1, 1 2, 2 2, 2 1, 1 1))", "POINT (25 25)"])
    assert run("stContains", outer, inner).to_pylist() == [1, 0]
    assert run("stWithin", inner, outer).to_pylist() == [1, 0]
    assert run("stEquals", outer, outer).to_pylist() == [1, 1]


def test_transforms_translate_to_function_calls():
    e = translate("toSphericalGeography(stPoint(group_lon,group_lat))", where="t")
    assert e.fields == ("group_lon", "group_lat")
    assert e.type == "BINARY"
    assert [c.function for c in e.calls] == ["pinot.stPoint", "pinot.toSphericalGeography"]
    assert e.sql == f"`{e.calls[-1].column}`"
    # the same call twice is computed once
    twice = translate("ST_AsText(ST_GeomFromText(a)) = ST_AsText(ST_GeomFromText(a))", where="t")
    assert len(twice.calls) == 2


@pytest.mark.parametrize(
    "expr, says",
    [
        ("ST_Area(ST_GeomFromText(a))", "ST_Area is a query function of Pinot"),
        ("ST_Polygon(a)", "ST_Polygon is a query function of Pinot"),
        ("geoToH3(lon, lat, 5)", "geoToH3 (H3 cells) is not supported"),
        ("ST_GeomFromGeoJSON(a)", "ST_GeomFromGeoJSON (GeoJSON) is not supported"),
        ("stPoint(a)", "stPoint takes 2 to 3 arguments"),
    ],
)
def test_what_is_not_implemented_is_refused_by_name(expr, says):
    with pytest.raises(ConfigError) as e:
        translate(expr, where="transform of column 'c'")
    assert says in str(e.value)


def test_a_lowered_config_keeps_its_calls_through_storage():
    from sparkpipes.config import PipelineSpec
    from sparkpipes.frontends.pinot.lowering import lower
    from sparkpipes.frontends.pinot.model import load_schema, load_table
    from tests.unit.frontends.pinot.test_corpus import CORPUS, ITEMS

    item = ITEMS["pinot-recipes/geospatial-config-table"]
    schema = load_schema((CORPUS / item["schema"]).read_text())
    spec = lower(schema, load_table((CORPUS / item["table"]).read_text(), schema))
    calls = spec.transform.functions
    assert {c.function for c in calls} == {"pinot.stGeomFromText", "pinot.toSphericalGeography"}
    assert len(calls) == 10  # five columns, two calls each
    assert PipelineSpec.from_json(spec.to_json()).transform == spec.transform
    assert "functions" not in PipelineSpec("p", spec.source, spec.sink).to_json()["transform"]


def test_a_bytes_default_is_read_as_hex_as_pinot_reads_it():
    from sparkpipes.formats.sanitize import fill_scalar
    from sparkpipes.frontends.pinot.lowering import table_spec
    from sparkpipes.frontends.pinot.model import load_schema, load_table
    from tests.unit.frontends.pinot.test_corpus import CORPUS, ITEMS

    item = ITEMS["pinot-recipes/geospatial-default-config-table"]
    schema = load_schema((CORPUS / item["schema"]).read_text())
    table = table_spec(schema, load_table((CORPUS / item["table"]).read_text(), schema))
    fill = dict(table.rules.fills)["point"]
    assert fill_scalar(fill, pa.binary()).as_py() == bytes.fromhex(
        "003fe5f4a42008f90c4054e004d205fbe4"
    )

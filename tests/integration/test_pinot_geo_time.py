"""Pinot configs that use geospatial transform functions and the legacy ``timeFieldSpec``,
loaded from the real broker: the bytes stored are Pinot's ``GeometrySerializer`` bytes
and the outgoing time column holds what Pinot's ``TimeConverter`` makes of the incoming
one — checked by the rows of the table."""

from __future__ import annotations

import json
import struct

from tests.integration.test_pinot_tables import produce, rows, table_config


def test_geospatial_transforms_and_a_legacy_time_spec(engine, broker, topic):
    s = {
        "schemaName": "s",
        "dimensionFieldSpecs": [
            {"name": "id", "dataType": "INT"},
            # meetupRsvp's column, made by a schema transformFunction
            {
                "name": "location",
                "dataType": "BYTES",
                "transformFunction": "toSphericalGeography(stPoint(group_lon,group_lat))",
            },
            {"name": "shape", "dataType": "BYTES"},
            {"name": "wkt", "dataType": "STRING"},
            {"name": "kind", "dataType": "STRING"},
            {"name": "meters", "dataType": "DOUBLE"},
            {"name": "inside", "dataType": "INT"},
        ],
        "timeFieldSpec": {
            "incomingGranularitySpec": {"name": "days", "dataType": "LONG", "timeType": "DAYS"},
            "outgoingGranularitySpec": {"name": "ts", "dataType": "LONG", "timeType": "HOURS"},
        },
    }
    nyc = "ST_GeogFromText('POINT (-73.935242 40.730610)')"
    t = table_config(
        broker,
        topic,
        ingestionConfig={
            "transformConfigs": [
                # pinot-recipes' geospatial table
                {
                    "columnName": "shape",
                    "transformFunction": "toSphericalGeography(ST_GeomFromText(wkt_in))",
                },
                {"columnName": "wkt", "transformFunction": "ST_AsText(ST_GeomFromText(wkt_in))"},
                {
                    "columnName": "kind",
                    "transformFunction": "ST_GeometryType(ST_GeomFromText(wkt_in))",
                },
                {
                    "columnName": "meters",
                    "transformFunction": f"ST_Distance(stPoint(group_lon, group_lat, true), {nyc})",
                },
                {
                    "columnName": "inside",
                    "transformFunction": "ST_Contains(ST_GeomFromText(wkt_in), stPoint(1, 1))",
                },
            ],
            "filterConfig": {
                "filterFunction": "ST_Within(stPoint(group_lon, group_lat), ST_GeomFromText('POLYGON ((170 0, 180 0, 180 10, 170 0))')) = 1"
            },
        },
    )
    t["segmentsConfig"]["timeColumnName"] = "ts"
    produce(
        broker,
        topic,
        [
            (
                None,
                {
                    "id": 1,
                    "group_lon": -122.4194,
                    "group_lat": 37.7749,
                    "days": 18000,
                    "wkt_in": "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))",
                },
                None,
            ),
            (
                None,
                {
                    "id": 2,
                    "group_lon": 2.35,
                    "group_lat": 48.85,
                    "days": 18001,
                    "wkt_in": "not wkt",
                },
                None,
            ),
            # dropped by the filter: a point within the polygon
            (
                None,
                {"id": 3, "group_lon": 175.0, "group_lat": 1.0, "days": 1, "wkt_in": "POINT (1 1)"},
                None,
            ),
        ],
    )
    engine.pinot.add(t, s)
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    got = rows(engine)
    assert set(got) == {1, 2}
    one, two = got[1], got[2]
    assert one["location"] == b"\x80" + struct.pack(">dd", -122.4194, 37.7749)
    shell = [(0, 0), (0, 10), (10, 10), (10, 0), (0, 0)]  # turned clockwise, as Pinot stores it
    assert one["shape"] == struct.pack(">Biii", 0x84, 1, 5, 0) + b"".join(
        struct.pack(">dd", x, y) for x, y in shell
    )
    assert (one["wkt"], one["kind"], one["inside"]) == (
        "POLYGON ((0 0, 0 10, 10 10, 10 0, 0 0))",
        "Polygon",
        1,
    )
    assert abs(one["meters"] - 4_129_000) < 10_000  # San Francisco → New York on Pinot's sphere
    # TimeConverter: 18000 DAYS → 432000 HOURS
    assert (one["ts"], two["ts"]) == (432_000, 432_024)
    # text that is not WKT: no shapes, so each field's default null value, as Pinot stores
    # them with continueOnError (without it, Pinot fails the record)
    assert (two["shape"], two["wkt"], two["kind"], two["inside"]) == (b"", "null", "null", -(2**31))
    assert two["location"][0] == 0x80


def test_transforms_reading_other_transforms_load_the_rows_pinot_loads(engine, broker, topic):
    """Pinot runs transforms in the order they read each other and skips one whose column
    the record already holds; the filter reads what they made (``frontends/pinot/chain``)."""
    s = {
        "schemaName": "s",
        "dimensionFieldSpecs": [
            {"name": "id", "dataType": "INT"},
            {"name": "wkt", "dataType": "STRING"},
            {"name": "point", "dataType": "BYTES"},
            {"name": "level", "dataType": "STRING"},
            {"name": "loud", "dataType": "STRING", "transformFunction": "upper(level)"},
        ],
    }
    t = table_config(
        broker,
        topic,
        ingestionConfig={
            "transformConfigs": [
                {"columnName": "wkt", "transformFunction": "ST_AsText(point)"},
                {"columnName": "point", "transformFunction": "stPoint(lon, lat)"},
                # an intermediate, no column: parsed once, read by the next
                {"columnName": "msg", "transformFunction": "jsonPathString(payload, '$.msg')"},
                {"columnName": "level", "transformFunction": "jsonPathString(msg, '$.level')"},
            ],
            "filterConfig": {"filterFunction": "strcmp(loud, 'DEBUG') = 0"},
        },
    )
    del t["segmentsConfig"]["timeColumnName"]

    def payload(level):
        return json.dumps({"msg": json.dumps({"level": level})})

    produce(
        broker,
        topic,
        [
            (None, {"id": 1, "lon": 1.5, "lat": 2, "payload": payload("warn")}, None),
            # the record's own level wins over the transform, and loud reads it
            (
                None,
                {"id": 2, "lon": 0, "lat": 0, "payload": payload("warn"), "level": "info"},
                None,
            ),
            (None, {"id": 3, "lon": 0, "lat": 0, "payload": payload("debug")}, None),  # dropped
        ],
    )
    engine.pinot.add(t, s)
    engine.run_batches("t_REALTIME", 10, until_idle=True)
    got = rows(engine)
    assert set(got) == {1, 2}
    assert (got[1]["wkt"], got[1]["level"], got[1]["loud"]) == ("POINT (1.5 2)", "warn", "WARN")
    assert got[1]["point"] == b"\x00" + struct.pack(">dd", 1.5, 2.0)
    assert (got[2]["wkt"], got[2]["level"], got[2]["loud"]) == ("POINT (0 0)", "info", "INFO")

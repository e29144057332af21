"""Pinot's geometry values: shapes in a ``BYTES`` column, in the byte form of Pinot's
``GeometrySerializer`` (:mod:`.serde`), and Pinot's geospatial scalar functions over
Arrow columns (:mod:`.functions`), as a Pinot table's ingestion transforms compute them.
Shapes are shapely's (GEOS); a module here writes and reads bytes and text only."""

"""Pinot's geospatial scalar functions in ingestion expressions (``stPoint``,
``ST_GeomFromText``, ``toSphericalGeography`` …).

Spark SQL cannot write Pinot's geometry bytes, so a call is not SQL: it becomes a
:class:`~sparkpipes.config.FunctionCall` of the engine's Arrow function of the same name
(``sparkpipes.formats.geometry``, Pinot's ``GeometrySerializer`` form, shapes by
shapely), computed over the SQL of its arguments before ``SET`` / ``WHERE``, which read
its result as a column. Nested calls are calls of calls, computed inner first; the same
call written twice is computed once.

:data:`GEOSPATIAL` lists what is computed, :data:`REFUSED` what is refused by name and
why: Pinot's query-only functions (``ST_Area``, ``ST_Polygon``: its ingestion transforms
cannot call them either), H3 cells and GeoJSON.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sparkpipes.config import FunctionCall
from sparkpipes.frontends.pinot.expr.core import _as, _Fail, _Node, _numeric


@dataclass(frozen=True)
class GeoFunction:
    """One of Pinot's geospatial scalar functions: its name, the Spark type each argument
    is converted to (Pinot's parameter types; BINARY reads a text field as hex, as Pinot
    reads text into ``byte[]``), how many are required, and what it returns."""

    name: str
    types: tuple[str, ...]
    min_args: int
    returns: str

    @property
    def function(self) -> str:
        """The engine's name of the Arrow function (``formats.geometry.functions``)."""
        return f"pinot.{self.name}"


_BYTES = ("BINARY",)
_GEO = [
    GeoFunction("stPoint", ("DOUBLE", "DOUBLE", "BOOLEAN"), 2, "BINARY"),
    GeoFunction("stGeomFromText", ("STRING",), 1, "BINARY"),
    GeoFunction("stGeogFromText", ("STRING",), 1, "BINARY"),
    GeoFunction("stGeomFromWKB", _BYTES, 1, "BINARY"),
    GeoFunction("stGeogFromWKB", _BYTES, 1, "BINARY"),
    GeoFunction("toSphericalGeography", _BYTES, 1, "BINARY"),
    GeoFunction("toGeometry", _BYTES, 1, "BINARY"),
    GeoFunction("stAsText", _BYTES, 1, "STRING"),
    GeoFunction("stAsBinary", _BYTES, 1, "BINARY"),
    GeoFunction("stGeometryType", _BYTES, 1, "STRING"),
    GeoFunction("stContains", _BYTES * 2, 2, "INT"),
    GeoFunction("stWithin", _BYTES * 2, 2, "INT"),
    GeoFunction("stEquals", _BYTES * 2, 2, "INT"),
    GeoFunction("stDistance", _BYTES * 2, 2, "DOUBLE"),
]
#: canonical name (lower case, no underscores, as Pinot matches names) → the function
GEOSPATIAL: Mapping[str, GeoFunction] = MappingProxyType({f.name.lower(): f for f in _GEO})

_QUERY_ONLY = (
    "is a query function of Pinot (its ingestion transforms cannot call it either) and is "
    "not supported"
)
#: canonical name → why it is refused (after the name as written)
REFUSED: Mapping[str, str] = MappingProxyType(
    {
        "starea": _QUERY_ONLY,
        "stpolygon": _QUERY_ONLY,
        "geotoh3": "(H3 cells) is not supported",
        "griddistance": "(H3 cells) is not supported",
        "griddisk": "(H3 cells) is not supported",
        "stgeomfromgeojson": "(GeoJSON) is not supported",
        "stgeogfromgeojson": "(GeoJSON) is not supported",
        "stasgeojson": "(GeoJSON) is not supported",
    }
)


def _is_geography(arg: _Node) -> _Node:
    """Pinot's ``BooleanUtils.toBoolean(Object)`` of ``isGeography``: a boolean as is, a
    number when its integer part is 1, text when it is ``true`` (any case) or ``1``."""
    if arg.type == "BOOLEAN" or arg.is_null:
        return _as(arg, "BOOLEAN")
    if _numeric(arg.type):
        return _Node(f"(CAST({arg.sql} AS INT) = 1)", "BOOLEAN")
    text = _as(arg, "STRING").sql
    return _Node(f"(lower({text}) = 'true' OR {text} = '1')", "BOOLEAN")


def call(fn: GeoFunction, args: list[_Node]) -> tuple[_Node, FunctionCall]:
    """The column ``fn(args)`` is computed into, and its computation. Raises ``_Fail``
    for a wrong number of arguments."""
    if not fn.min_args <= len(args) <= len(fn.types):
        lo, hi = fn.min_args, len(fn.types)
        many = f"{lo} to {hi}" if lo != hi else str(lo)
        raise _Fail(f"{fn.name} takes {many} arguments, got {len(args)}")
    sqls = []
    for arg, t in zip(args, fn.types):
        converted = _is_geography(arg) if t == "BOOLEAN" else _as(arg, t)
        sqls.append(converted.sql)
    digest = hashlib.sha1("\0".join([fn.function, *sqls]).encode()).hexdigest()[:16]
    column = f"__sp_fn_{digest}"
    return _Node(f"`{column}`", fn.returns), FunctionCall(column, fn.function, tuple(sqls))

"""The core: typed, frozen configuration built once at the boundary.

Everything a user hands in (Python keyword arguments, SQL clauses, Pinot table configs,
connector properties) becomes a :class:`PipelineSpec` before any work starts; unknown keys
are rejected there with a message naming the key and the keys that are accepted.
``core`` holds the building blocks (secrets, checks, record-metadata columns), ``urls``
the passwords inside URLs (taken out as secrets, shown redacted), ``parts`` the spec's
components, ``spec`` the spec itself (stored form, versions, secrets kept on replace),
``kwargs`` the Python API's flat options (and version-1 stored definitions), ``procedure``
a stored procedure's spec. The front ends (``sparkpipes.frontends``) lower into these.
It may import ``errors`` and ``util`` only.
"""

from sparkpipes.config.core import (
    REDACTED,
    Secret,
    check_name,
    parse_json_object,
    reject_unknown,
)
from sparkpipes.config.parts import (
    BatchSpec,
    CsvOptions,
    FieldMapping,
    FormatSpec,
    FunctionCall,
    NestedSpec,
    RecordProgram,
    SinkSpec,
    SourceSpec,
    TransformSpec,
)
from sparkpipes.config.spec import PipelineSpec

__all__ = [
    "REDACTED",
    "BatchSpec",
    "CsvOptions",
    "FieldMapping",
    "FormatSpec",
    "FunctionCall",
    "NestedSpec",
    "PipelineSpec",
    "RecordProgram",
    "Secret",
    "SinkSpec",
    "SourceSpec",
    "TransformSpec",
    "check_name",
    "parse_json_object",
    "reject_unknown",
]

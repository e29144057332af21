"""Typed, frozen configuration built once at the boundary.

Everything a user hands in (Python keyword arguments, SQL clauses, later JSON table
configs and connector properties) becomes a :class:`PipelineSpec` before any work
starts; unknown keys are rejected there with a message naming the key and the keys that
are accepted. ``core`` holds the building blocks (secrets, checks), ``urls`` the passwords
inside URLs (taken out as secrets, shown redacted), ``spec`` the nested spec, ``lower`` one
module per front end that lowers into it and back.
"""

from sparkpipes.config.core import (
    REDACTED,
    Secret,
    check_name,
    parse_json_object,
    reject_unknown,
)
from sparkpipes.config.spec import (
    BatchSpec,
    CsvOptions,
    FieldMapping,
    FormatSpec,
    PipelineSpec,
    SinkSpec,
    SourceSpec,
    TransformSpec,
)

__all__ = [
    "REDACTED",
    "BatchSpec",
    "CsvOptions",
    "FieldMapping",
    "FormatSpec",
    "PipelineSpec",
    "Secret",
    "SinkSpec",
    "SourceSpec",
    "TransformSpec",
    "check_name",
    "parse_json_object",
    "reject_unknown",
]

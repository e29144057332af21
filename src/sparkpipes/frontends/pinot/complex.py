"""``ingestionConfig.complexTypeConfig``, checked into a frozen :class:`ComplexTypeConfig`
and lowered to the core's :class:`~sparkpipes.config.NestedSpec` (``formats.nested``
flattens and unnests on Arrow).

Read as Pinot's ``ComplexTypeConfig`` and ``ComplexTypeTransformer`` read it:
``fieldsToUnnest`` (flattened names of arrays: one row per element, several arrays their
cross product), ``delimiter`` (``.``, its default) joining the names of nested fields,
``collectionNotUnnestedToJson`` (``NON_PRIMITIVE``, the default, or ``ALL``: an array not
unnested as JSON text) and ``prefixesToRename`` (a prefix of the flattened names
replaced). As Pinot's ``TableConfigUtils`` does, a schema field may not begin with a
prefix that is renamed. A ``delimiter`` other than ``.`` is refused by name: a name is cut
into the record's keys at each delimiter, and ``_`` or ``__`` occur inside keys (a key
holding a ``.`` is not found either). ``collectionNotUnnestedToJson: NONE`` is refused: Pinot
then hands each column the array itself, which its type conversion reads element by
element; that is not done here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.config import FieldMapping, NestedSpec
from sparkpipes.errors import ConfigError
from sparkpipes.formats.nested import NestedPlan
from sparkpipes.frontends.pinot.problems import Problems
from sparkpipes.frontends.pinot.schema import PinotSchema

WHERE = "ingestionConfig.complexTypeConfig"
KEYS = ("fieldsToUnnest", "delimiter", "collectionNotUnnestedToJson", "prefixesToRename")
MODES = ("NONE", "NON_PRIMITIVE", "ALL")


@dataclass(frozen=True)
class ComplexTypeConfig:
    """A ``complexTypeConfig``, checked; names as the user gave them."""

    fields_to_unnest: tuple[str, ...] = ()
    delimiter: str = "."
    collection_to_json: str = "NON_PRIMITIVE"
    prefixes_to_rename: tuple[tuple[str, str], ...] = ()

    def nested(self) -> NestedSpec:
        """The core's description of the same flattening and unnesting."""
        return NestedSpec(
            self.fields_to_unnest,
            self.delimiter,
            self.collection_to_json,
            self.prefixes_to_rename,
        )


def complex_type_config(
    ingestion: Mapping[str, Any], schema: PinotSchema | None, found: Problems
) -> ComplexTypeConfig | None:
    """``ingestion``'s ``complexTypeConfig`` (None without one); each problem is added to
    ``found`` at its JSON path, and checking goes on."""
    c = ingestion.get("complexTypeConfig")
    if c is None:
        return None
    if not isinstance(c, Mapping):
        found.add(WHERE, f"{WHERE} must be an object")
        return None
    found.sort(c, KEYS, WHERE, WHERE)
    unnest = c.get("fieldsToUnnest") or []
    if not isinstance(unnest, list) or not all(isinstance(f, str) and f for f in unnest):
        found.add(f"{WHERE}.fieldsToUnnest", "fieldsToUnnest must be a list of field names")
        unnest = []
    delimiter = c.get("delimiter")
    if delimiter is None:
        delimiter = "."
    elif not isinstance(delimiter, str) or not delimiter:
        found.add(f"{WHERE}.delimiter", "delimiter must be a non-empty string")
        delimiter = "."
    elif delimiter != ".":
        found.add(
            f"{WHERE}.delimiter",
            f"delimiter {delimiter!r} is not supported, only '.' (Pinot's default): a column "
            "name is cut into the record's keys at each delimiter, and other delimiters "
            "(such as '_') occur inside keys",
        )
        delimiter = "."
    mode = c.get("collectionNotUnnestedToJson")
    if mode is None:
        mode = "NON_PRIMITIVE"
    elif mode not in MODES:
        found.add(
            f"{WHERE}.collectionNotUnnestedToJson",
            f"collectionNotUnnestedToJson {mode!r} is not one of {', '.join(MODES)}",
        )
        mode = "NON_PRIMITIVE"
    elif mode == "NONE":
        found.add(
            f"{WHERE}.collectionNotUnnestedToJson",
            "collectionNotUnnestedToJson NONE (arrays not unnested handed to the columns as "
            "arrays) is not supported: use NON_PRIMITIVE (the default) or ALL",
        )
        mode = "NON_PRIMITIVE"
    renames = c.get("prefixesToRename") or {}
    if not isinstance(renames, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in renames.items()
    ):
        found.add(
            f"{WHERE}.prefixesToRename",
            "prefixesToRename must be an object of prefix to replacement text",
        )
        renames = {}
    for prefix in renames:
        for name in schema.names if schema is not None else ():
            if name.startswith(prefix):  # Pinot's TableConfigUtils refuses the same
                found.add(
                    f"{WHERE}.prefixesToRename",
                    "Fields in the schema may not begin with any prefix specified in the "
                    f"prefixesToRename config. Name conflict with field: {name} and prefix: "
                    f"{prefix}",
                )
    out = ComplexTypeConfig(tuple(unnest), delimiter, mode, tuple(renames.items()))
    if schema is not None:
        _shape(out, schema, found)
    return out


def _shape(config: ComplexTypeConfig, schema: PinotSchema, found: Problems) -> None:
    """The schema's names as records and arrays (``formats.nested``'s plan, made once here
    so that a name read both as a value and as a record holding others is a problem of
    the file, not of the first batch)."""
    columns = [f.name for f in schema.fields]
    try:
        NestedPlan(
            pa.schema([(c, pa.string()) for c in columns]),
            [FieldMapping(c, (c,)) for c in columns],
            config.nested(),
        )
    except ConfigError as e:
        found.add(WHERE, e.message)

"""JSON text columns ⇄ Arrow columns, without a Python object per record where Arrow can
do it: what lets Single Message Transforms work on typed columns (a record's value as a
struct, its key as whatever it holds) while connectors hand records over as JSON text.

:func:`parse` reads a whole column with ``pyarrow.json`` (each text wrapped as
``{"v": …}``, so scalars, arrays and ``null`` read too); text that looks like a timestamp
stays text (the reader would otherwise guess a type the connector never meant). Only a
column the reader refuses (a field that is a number in one record and text in another)
is read record by record. :func:`dump` writes any Arrow column back as compact JSON text
with Arrow's string kernels; values no kernel writes (binary, control characters in
text) fall back to ``json.dumps`` for those rows only.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

_WRAP = "v"
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_OTHER_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f]"


class JsonText(pa.ExtensionType):
    """JSON text kept as it is: records of one chunk whose values have different shapes
    (a transform applied under a predicate to some of them), written out verbatim by
    :func:`dump`; :func:`parse` reads it when a later transform needs the values."""

    def __init__(self) -> None:
        super().__init__(pa.string(), "sparkpipes.json_text")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> JsonText:
        return cls()


def verbatim(texts: pa.Array) -> pa.Array:
    """JSON texts marked to be written as they are (:class:`JsonText`)."""
    return pa.ExtensionArray.from_storage(JsonText(), texts.cast(pa.string()))


class MixedTypes(ValueError):
    """Values of one field are of different JSON types within one chunk."""


def parse(texts: pa.Array) -> pa.Array:
    """A column of JSON texts (a null is JSON ``null``) as one Arrow column; a field
    holding numbers in some records and text in others is :class:`MixedTypes`."""
    n = len(texts)
    if n == 0:
        return pa.nulls(0)
    if isinstance(texts.type, JsonText):
        texts = texts.storage
    texts = texts.cast(pa.string()).fill_null("null")
    wrapped = pc.binary_join_element_wise('{"v":', texts, "}", "")
    try:
        out = _read(wrapped, None)
        if _has_timestamp(out.type):
            out = _read(wrapped, _no_timestamps(out.type))
        if len(out) == n:
            return out
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    try:
        return pa.array([json.loads(t) for t in texts.to_pylist()])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise MixedTypes(
            f"values of one field have different types in these records ({e}); "
            "transforms need one type per field, as Connect's schemas give"
        ) from None


def _read(wrapped: pa.Array, value_type: pa.DataType | None) -> pa.Array:
    flat = pc.replace_substring(wrapped, "\n", " ")
    joined = pc.binary_join_element_wise(flat, "", "\n")
    data = _buffer(joined)
    schema = pa.schema([pa.field(_WRAP, value_type)]) if value_type is not None else None
    table = pj.read_json(
        pa.BufferReader(data),
        read_options=pj.ReadOptions(block_size=max(data.size + 1, 1 << 20)),
        parse_options=pj.ParseOptions(explicit_schema=schema),
    )
    return table.column(_WRAP).combine_chunks()


def _buffer(lines: pa.Array) -> pa.Buffer:
    """The string column's characters as one buffer (its rows end in newlines)."""
    lines = lines.cast(pa.string())
    offsets = np.frombuffer(lines.buffers()[1], np.int32, len(lines) + 1, lines.offset * 4)
    first, last = int(offsets[0]), int(offsets[-1])
    return lines.buffers()[2].slice(first, last - first)


def _has_timestamp(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_timestamp(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t):
        return _has_timestamp(t.value_type)
    return False


def _no_timestamps(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_no_timestamps(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(_no_timestamps(t.value_type))
    return t


def dump(values: pa.Array) -> pa.Array:
    """Each value of ``values`` as compact JSON text (a null is ``null``)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values.type, JsonText):
        return values.storage.fill_null("null")
    return _dump(values).fill_null("null")


def _dump(values: pa.Array) -> pa.Array:
    """JSON text of each value, null where the value is null."""
    t = values.type
    if pa.types.is_null(t):
        return pa.nulls(len(values), pa.string())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _quoted(values.cast(pa.string()))
    if pa.types.is_boolean(t):
        return pc.if_else(values, "true", "false")
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return values.cast(pa.string())
    if pa.types.is_floating(t):
        finite = pc.is_finite(values)
        return pc.if_else(finite, values.cast(pa.string()), pa.scalar(None, pa.string()))
    if pa.types.is_timestamp(t):
        return _quoted(iso_text(values))
    if pa.types.is_date(t):
        return _quoted(pc.strftime(values, format="%Y-%m-%d"))
    if pa.types.is_struct(t):
        return _struct(values)
    if pa.types.is_list(t):
        items = _dump(values.flatten()).fill_null("null")
        rebuilt = pa.ListArray.from_arrays(values.offsets, items, mask=values.is_null())
        joined = pc.binary_join(rebuilt, ",")
        return pc.binary_join_element_wise("[", joined, "]", "")
    return _python(values)


def _struct(values: pa.StructArray) -> pa.Array:
    n = len(values)
    if values.type.num_fields == 0:
        body = pa.array(["{}"] * n, pa.string())
    else:
        parts: list[Any] = []
        for i, f in enumerate(values.type):
            child = _dump(values.field(i)).fill_null("null")
            sep = "{" if i == 0 else ","
            parts += [sep + json.dumps(f.name, ensure_ascii=False) + ":", child]
        parts.append("}")
        body = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(values.is_valid(), body, pa.scalar(None, pa.string()))


def _quoted(texts: pa.Array) -> pa.Array:
    if len(texts) and pc.any(pc.match_substring_regex(texts, _OTHER_CONTROL)).as_py():
        return _python(texts)
    for raw, escaped in _ESCAPES:
        texts = pc.replace_substring(texts, raw, escaped)
    return pc.binary_join_element_wise('"', texts, '"', "")


def iso_text(values: pa.Array) -> pa.Array:
    """Timestamps as ISO-8601 text (``2024-05-01T10:00:00.123``; zoned ones in UTC with
    ``Z``), as a connector's JSON shows them."""
    unit = values.type.unit
    zoned = values.type.tz is not None
    whole = pc.strftime(values.cast(pa.timestamp("s", values.type.tz)), format="%Y-%m-%dT%H:%M:%S")
    if unit != "s":
        digits = {"ms": 3, "us": 6, "ns": 9}[unit]
        ticks = values.cast(pa.int64())
        frac = pc.subtract(ticks, pc.multiply(pc.divide(ticks, 10**digits), 10**digits))
        frac = pc.if_else(pc.less(frac, 0), pc.add(frac, 10**digits), frac)
        padded = pc.utf8_lpad(frac.cast(pa.string()), digits, "0")
        whole = pc.binary_join_element_wise(whole, ".", padded, "")
    if zoned:
        whole = pc.binary_join_element_wise(whole, "Z", "")
    return whole


def _python(values: pa.Array) -> pa.Array:
    return pa.array(
        [
            None if v is None else json.dumps(v, default=_plain, ensure_ascii=False)
            for v in values.to_pylist()
        ],
        pa.string(),
    )


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)

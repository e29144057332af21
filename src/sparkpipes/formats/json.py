"""FORMAT JSON: one JSON object per record, columns taken by path (``col <- a::b``)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from sparkpipes.formats.base import Decoder, Mismatch, conform

_DIRECT = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_string,
    pa.types.is_boolean,
    pa.types.is_timestamp,
    pa.types.is_list,
    pa.types.is_struct,
)
_VIA_STRING = (pa.types.is_date, pa.types.is_decimal, pa.types.is_binary)


def newline_joined(values: pa.Array, *, keep_newlines: bool = False) -> pa.Buffer:
    """All payloads as one newline-delimited buffer, without per-row Python objects.
    A newline inside a payload (pretty-printed JSON) becomes a space, unless the reader
    of the buffer tells them apart (``keep_newlines``: CSV's quoted fields)."""
    flat = values.cast(pa.binary())
    if not keep_newlines and _has_newline(flat):
        flat = pc.replace_substring(flat, b"\n", b" ")
    lines = pc.binary_join_element_wise(flat, pa.scalar(b""), pa.scalar(b"\n"))
    offsets = pa.Array.from_buffers(
        pa.int32(), len(lines) + 1, [None, lines.buffers()[1]], offset=lines.offset
    )
    first, last = offsets[0].as_py(), offsets[len(lines)].as_py()
    return lines.buffers()[2].slice(first, last - first)


def _has_newline(values: pa.Array) -> bool:
    if values.buffers()[2] is None:  # every payload is empty
        return False
    offsets = np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, values.offset * 4)
    data = np.frombuffer(values.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    return bool(np.any(data == 10))


class JsonDecoder(Decoder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parse_schema, self.fast = self._parse_schema()

    def _parse_schema(self) -> tuple[pa.Schema | None, bool]:
        tree: dict[str, Any] = {}
        for f in self.schema:
            t = self._parse_type(f)
            if t is None:
                return None, False
            if not self.paths[f.name]:
                return None, False  # the whole record: slow path
            node = tree
            *parents, leaf = self.paths[f.name]
            for key in parents:
                node = node.setdefault(key, {})
                if not isinstance(node, dict):
                    return None, False
            if leaf in node:
                return None, False
            node[leaf] = t

        def build(node: dict[str, Any]) -> list[pa.Field]:
            return [
                pa.field(k, pa.struct(build(v)) if isinstance(v, dict) else v)
                for k, v in node.items()
            ]

        return pa.schema(build(tree)), True

    def _parse_type(self, f: pa.Field) -> pa.DataType | None:
        """The type Arrow's reader reads column ``f`` as (None: it cannot)."""
        t = f.type
        if any(p(t) for p in _VIA_STRING):
            return pa.string()
        return t if any(p(t) for p in _DIRECT) else None

    def _fast_ok(self, values: pa.Array) -> bool:
        return self.fast and pc.min(pc.binary_length(values)).as_py() > 0

    def _fast(self, values: pa.Array) -> pa.Table:
        return conform(pa.table(self._read(values)), self.schema)

    def _read(self, values: pa.Array) -> dict[str, pa.ChunkedArray]:
        """Each column as Arrow's reader reads it (of its :meth:`_parse_type`)."""
        _valid_utf8(values)  # Arrow's reader lets invalid UTF-8 into a string column
        buf = newline_joined(values)
        table = pj.read_json(
            pa.BufferReader(buf),
            read_options=pj.ReadOptions(block_size=max(buf.size + 1, 1 << 20)),
            parse_options=pj.ParseOptions(
                explicit_schema=self.parse_schema, unexpected_field_behavior="ignore"
            ),
        )
        if table.num_rows != len(values):
            raise Mismatch
        cols = {}
        for f in self.schema:
            top, *rest = self.paths[f.name]
            col = table.column(top)
            for key in rest:
                col = pc.struct_field(col, key)
            if f.name in self.on_missing and col.null_count:
                raise Mismatch  # a missing path or a null: the record by record path tells
            cols[f.name] = col
        return cols

    def _loads(self, raw: bytes) -> Any:
        if self.text_values:
            return json.loads(raw, parse_int=_Number, parse_float=_Number)
        return json.loads(raw)

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        try:
            rec = self._loads(raw)
        except json.JSONDecodeError as e:  # its text says where: "…: line 1 column 7 (char 6)"
            raise ValueError(f"invalid JSON: {e}") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"invalid JSON: not UTF-8 at byte {e.start}") from None
        if not isinstance(rec, dict):
            raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
        picked = self.pick(rec)
        if self.text_values:
            for f in self.schema:
                if not pa.types.is_nested(f.type):
                    picked[f.name] = as_text(picked[f.name])
        return picked


def _valid_utf8(values: pa.Array) -> None:
    """Raise ArrowInvalid unless every payload is UTF-8 (then record by record tells
    which are not)."""
    if pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type):
        values.view(pa.large_string()).validate(full=True)
    elif pa.types.is_binary(values.type) or pa.types.is_string(values.type):
        values.view(pa.string()).validate(full=True)


class _Number(str):
    """A JSON number as written (``1.50``, ``1e3``): SingleStore converts it verbatim."""


def as_text(value: Any) -> str | None:
    """A JSON value as SingleStore's LOAD DATA converts it before assigning it: null is
    NULL, ``true``/``false`` are ``1``/``0``, a number is its text as written, a string
    its characters, an object or array its JSON text (compact, numbers as written)."""
    if value is None or isinstance(value, str):
        return None if value is None else str.__str__(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return str(value)
    return _json_text(value)


def _json_text(value: Any) -> str:
    if isinstance(value, dict):
        items = (f"{json.dumps(k, ensure_ascii=False)}:{_json_text(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, _Number):
        return str.__str__(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)

"""Avro objects cut into records: object container files (:class:`AvroFraming`) and raw
streams of binary values (:class:`AvroStreamFraming`), each in bounded memory."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from sparkpipes.sources.base import Frame, Framing
from sparkpipes.sources.framing import BLOCK, CHUNK_ROWS


class AvroFraming(Framing):
    """Records of an Avro object container file, ``CHUNK_ROWS`` at a time, in columns
    typed from the file's own writer schema. Positions are record numbers. Not split:
    an Avro file is read by one task."""

    position_name = "record"
    splittable = False
    resumable = False
    streams = True

    def __init__(self, values: Any = None) -> None:
        #: with ``values`` (a ``formats.avro_values.AvroValues``), each chunk is what it
        #: makes of the records and the file's writer schema (SingleStore's extraction,
        #: which needs each union's selected branch), not the records' own columns
        self.values = values

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        import fastavro

        reader = fastavro.reader(f, return_named_type=self.values is not None)
        endless = zero_width_items(reader.writer_schema)
        if endless:  # the file's own schema: as hostile as its bytes
            raise ValueError(
                f"the file's Avro schema has an array ({endless}) of items encoded in zero "
                "bytes, whose count alone could claim billions of them"
            )
        schema = avro_schema_to_arrow(reader.writer_schema)
        rows: list[dict[str, Any]] = []
        first = 0
        for rec in reader:
            rows.append(rec)
            if len(rows) >= CHUNK_ROWS:
                yield self._chunk(rows, first, schema, reader.writer_schema)
                first += len(rows)
                rows = []
        if rows:
            yield self._chunk(rows, first, schema, reader.writer_schema)

    def _chunk(
        self, rows: list[dict[str, Any]], first: int, schema: pa.Schema | None, writer: Any
    ) -> Frame:
        if self.values is None:
            return self._frame(rows, first, schema)
        table = self.values.table(writer, rows)
        return Frame(pa.array(np.arange(first, first + len(rows)), pa.int64()), 0, table=table)

    @staticmethod
    def _frame(rows: list[dict[str, Any]], first: int, schema: pa.Schema | None) -> Frame:
        table = None
        if schema is not None:
            try:
                table = pa.Table.from_pylist(rows, schema=schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                table = None
        if table is None:
            table = pa.Table.from_pylist(rows)
        return Frame(pa.array(np.arange(first, first + len(rows)), pa.int64()), 0, table=table)


class AvroStreamFraming(Framing):
    """Records of a raw Avro stream: binary-encoded values one after another, nothing
    else (SingleStore's ``FORMAT AVRO SCHEMA '…'`` over a file, its Load Avro Files
    Example 2), read with the given writer ``schema``; each record's bytes are one
    payload for the Avro message decoder. Positions are byte offsets; not split (a byte
    cannot tell where a record begins).

    Read block by block: what is held is a window of the stream from the record being
    decoded, ``block`` bytes or, for a record longer than that, twice what it took so
    far; frames hold at most ``CHUNK_ROWS`` records and about ``block`` bytes. Bytes
    that end inside a record, and a record longer than ``max_record`` (its lengths and
    counts say so, or its bytes are garbage), fail the object naming the byte where that
    record begins: a raw stream has no mark to find the next record by."""

    position_name = "byte"
    splittable = False
    resumable = False
    streams = True

    def __init__(self, schema: Any, block: int = BLOCK) -> None:
        self.schema = schema  # parsed by fastavro
        self.block = block

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        import fastavro

        read = fastavro.schemaless_reader
        window, base, at, eof = b"", 0, 0, False
        buf = io.BytesIO(window)
        starts: list[int] = []
        payloads: list[bytes] = []
        held = 0
        while True:
            if at == len(window) and eof:
                break
            buf.seek(at)
            failure: Exception | None = None
            try:
                read(buf, self.schema, None)
            except Exception as e:  # fastavro raises many kinds on cut bytes
                failure = e
            end = buf.tell()
            # a record is whole once it ended inside the window (a read past the window's
            # end comes back short, and fastavro may not notice) or the stream is over
            if not eof and (failure is not None or end >= len(window)):
                if len(window) - at > self.max_record:
                    raise ValueError(
                        f"the raw Avro record at byte {base + at} is longer than "
                        f"{self.max_record} bytes (max_record_bytes), or does not decode "
                        "with the pipeline's SCHEMA"
                    )
                more = f.read(max(self.block, len(window) - at))
                eof = not more
                window, base, at = window[at:] + more, base + at, 0
                buf = io.BytesIO(window)
                continue
            if failure is not None:
                raise ValueError(
                    f"the raw Avro stream does not decode at byte {base + at} with the "
                    f"pipeline's SCHEMA: {type(failure).__name__}: {failure}"
                ) from None
            if end == at:  # a schema whose values take no bytes: no end to them
                raise ValueError(
                    "the pipeline's SCHEMA encodes a record in zero bytes (a record without "
                    "fields, null, a fixed of size 0): a raw Avro stream of it has no records"
                )
            starts.append(base + at)
            payloads.append(window[at:end])
            held += end - at
            at = end
            if len(starts) >= CHUNK_ROWS or held >= self.block:
                yield self._frame(starts, payloads, base + at)
                starts, payloads, held = [], [], 0
        if starts:
            yield self._frame(starts, payloads, base + at)

    @staticmethod
    def _frame(starts: list[int], payloads: list[bytes], end: int) -> Frame:
        return Frame(pa.array(starts, pa.int64()), end, values=pa.array(payloads, pa.binary()))


def zero_width_items(schema: Any) -> str | None:
    """The first array of ``schema`` (as fastavro parses it) whose items are encoded in
    zero bytes (null, a fixed of size 0, a record of only such fields), named by its
    path; None if there is none. Such an array's count is all its bytes say: two bytes
    could claim billions of items, and decoding them would not end."""
    named = schema.get("__named_schemas", {}) if isinstance(schema, dict) else {}
    return _Widths(dict(named)).zero_items(schema, "value", frozenset())


class _Widths:
    """Walks a parsed schema, named types resolved by name (each record once per path:
    a recursive record's every level takes bytes, the union that ends it)."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named

    def _resolve(self, t: Any, seen: frozenset[str]) -> tuple[Any, frozenset[str]] | None:
        """``t`` with a name resolved and a record's name added to ``seen``; None for a
        record already on the path."""
        if isinstance(t, str) and t in self.named:
            t = self.named[t]
        if isinstance(t, dict) and t.get("type") in ("record", "fixed") and "name" in t:
            self.named.setdefault(t["name"], t)  # defined before any use by name
        if isinstance(t, dict) and t.get("type") == "record":
            name = t.get("name", "")
            if name in seen:
                return None
            seen = seen | {name}
        return t, seen

    def zero_items(self, t: Any, path: str, seen: frozenset[str]) -> str | None:
        got = self._resolve(t, seen)
        if got is None:
            return None
        t, seen = got
        if isinstance(t, list):
            return next((p for b in t if (p := self.zero_items(b, path, seen))), None)
        if not isinstance(t, dict):
            return None
        kind = t.get("type")
        if kind == "record":
            for fl in t.get("fields", ()):
                found = self.zero_items(fl.get("type"), f"{path}.{fl.get('name')}", seen)
                if found:
                    return found
            return None
        if kind == "array":
            if self.zero_width(t.get("items"), frozenset()):
                return path
            return self.zero_items(t.get("items"), f"{path}[]", seen)
        if kind == "map":
            return self.zero_items(t.get("values"), f"{path}{{}}", seen)
        return self.zero_items(kind, path, seen) if isinstance(kind, (dict, list)) else None

    def zero_width(self, t: Any, seen: frozenset[str]) -> bool:
        """Whether a value of ``t`` is encoded in zero bytes."""
        got = self._resolve(t, seen)
        if got is None:
            return False
        t, seen = got
        if t == "null":
            return True
        if not isinstance(t, dict):
            return False  # a union (its branch index) and every other type take bytes
        kind = t.get("type")
        if kind == "fixed":
            return t.get("size") == 0
        if kind == "record":
            return all(self.zero_width(fl.get("type"), seen) for fl in t.get("fields", ()))
        return kind == "null" or (isinstance(kind, dict) and self.zero_width(kind, seen))


_AVRO_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_AVRO_LOGICAL = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
    "uuid": pa.string(),
}


def avro_schema_to_arrow(schema: Any) -> pa.Schema | None:
    """The Arrow schema of an Avro record schema (as fastavro parses it), or None when a
    part has no faithful Arrow form (the reader then infers types from the values)."""
    try:
        t = _avro_type(schema)
    except (KeyError, TypeError, ValueError):
        return None
    return pa.schema(list(t)) if pa.types.is_struct(t) else None


def _avro_type(t: Any) -> pa.DataType:
    if isinstance(t, str):
        return _AVRO_PRIMITIVES[t]
    if isinstance(t, list):  # a union: [null, T] is a nullable T
        kinds = [k for k in t if k != "null"]
        if len(kinds) != 1:
            raise ValueError("a union of several types")
        return _avro_type(kinds[0])
    logical = t.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(t["precision"], t.get("scale", 0))
    if logical in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[logical]
    kind = t["type"]
    if kind == "record":
        return pa.struct([pa.field(fl["name"], _avro_type(fl["type"])) for fl in t["fields"]])
    if kind == "array":
        return pa.list_(_avro_type(t["items"]))
    if kind == "map":
        return pa.map_(pa.string(), _avro_type(t["values"]))
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary(t["size"])
    return _avro_type(kind)

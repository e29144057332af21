"""How an object's bytes become records (the :class:`~sparkpipes.sources.base.Framing` of a
format): lines for JSON, CSV and raw text; row groups for Parquet; blocks for Avro.

Memory bound: a framing holds one read block (``BLOCK``, 4 MiB, plus the line that
straddles it), one Parquet batch of at most ``CHUNK_ROWS`` rows of one row group, or
``CHUNK_ROWS`` Avro records, at a time — never the object. The task writes what it
decoded to the destination every ``file_rows`` rows, so an object of any size loads in
memory bounded by those settings.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.base import Frame, Framing

BLOCK = 4 << 20
CHUNK_ROWS = 65_536


class LineFraming(Framing):
    """One record per line (``\\n`` or ``\\r\\n``; empty lines are not records). A range
    owns the lines that begin inside it, so split ranges read every line exactly once;
    positions are the byte offsets where lines begin. ``skip_lines`` (``IGNORE n
    LINES``) are dropped at the start of an object. With ``keep_cr`` a carriage return
    before the newline stays in the line (``LOAD DATA``'s ``LINES TERMINATED BY '\n'``).

    ``terminator`` other than a newline (``LINES TERMINATED BY ';'``) cuts at each of its
    occurrences instead, newlines being data; such framings are not splittable (a split
    byte cannot tell where a record begins). With ``prefix`` (``LINES STARTING BY``) a
    record is what follows the first occurrence of it in its line; a line without it is
    no record, as an empty line is not."""

    position_name = "byte"
    splittable = True
    resumable = True
    streams = True

    def __init__(
        self,
        skip_lines: int = 0,
        block: int = BLOCK,
        *,
        keep_cr: bool = False,
        terminator: bytes = b"\n",
        prefix: bytes = b"",
    ) -> None:
        self.skip_lines = skip_lines
        self.block = block
        self.keep_cr = keep_cr
        self.terminator = terminator
        self.prefix = prefix
        if terminator != b"\n":
            self.splittable = False

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        pos, tail = start, b""
        if align and start > 0:
            f.seek(start - 1)
            pos = start - 1
            while True:  # the first line that begins at or after ``start``
                chunk = f.read(self.block)
                if not chunk:
                    return
                i = chunk.find(b"\n")
                if i >= 0:
                    pos, tail = pos + i + 1, chunk[i + 1 :]
                    break
                pos += len(chunk)
        elif start:
            f.seek(start)
        skip = self.skip_lines if start == 0 else 0
        limit = np.iinfo(np.int64).max if stop is None else stop
        while pos < limit:
            chunk = f.read(self.block)
            buf = tail + chunk if tail else chunk
            real = len(buf)
            if not chunk:
                if not buf:
                    return
                if final:
                    buf, tail = buf + self.terminator, b""
                else:  # a last line still being written waits for its newline
                    cut = self._last_end(buf)
                    if cut < 0:
                        return
                    buf, tail = buf[: cut + 1], b""
                    real = len(buf)
            else:
                cut = self._last_end(buf)
                if cut < 0:
                    tail = buf
                    continue
                buf, tail = buf[: cut + 1], buf[cut + 1 :]
                real = len(buf)
            frame, skip = self._frame(buf, pos, limit, skip, real)
            pos += real
            if frame is not None:
                yield frame
            if not chunk:
                return

    def _ends(self, data: np.ndarray) -> np.ndarray:
        """Indexes of the last bytes of the terminators that end records in ``data``
        (which begins with a record)."""
        if self.terminator == b"\n":
            return np.flatnonzero(data == 10)
        return occurrences(data, self.terminator) + (len(self.terminator) - 1)

    def _last_end(self, buf: bytes) -> int:
        """Index of the last byte of the last record-ending terminator of ``buf``; -1 if
        there is none."""
        if self.terminator == b"\n":
            return buf.rfind(b"\n")
        ends = self._ends(np.frombuffer(buf, dtype=np.uint8))
        return int(ends[-1]) if len(ends) else -1

    def _frame(
        self, buf: bytes, base: int, limit: int, skip: int, real: int
    ) -> tuple[Frame | None, int]:
        """The lines of ``buf`` (complete, newline-terminated) that begin before ``limit``,
        as one frame; and how many lines are still to be skipped."""
        data = np.frombuffer(buf, dtype=np.uint8)
        ends = self._ends(data)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        keep = (starts + base) < limit
        if skip:
            dropped = min(skip, len(starts))
            keep[:dropped] = False
            skip -= dropped
        lengths = ends - starts - (len(self.terminator) - 1)
        crlf = lengths > 0
        crlf[crlf] = data[ends[crlf] - 1] == 13
        crlf &= not self.keep_cr and self.terminator == b"\n"
        lengths = lengths - crlf
        keep &= lengths > 0
        n_in = int(np.count_nonzero((starts + base) < limit))
        end = base + (int(ends[n_in - 1]) + 1 if n_in else 0)
        end = min(end, base + real)
        if not keep.any():
            return (Frame(pa.array([], pa.int64()), end, values=pa.array([], pa.binary())), skip)
        offsets = np.empty(len(starts) + 1, dtype=np.int32)
        offsets[:-1] = starts
        offsets[-1] = len(buf)
        whole = pa.Array.from_buffers(
            pa.binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(buf)]
        )
        idx = np.flatnonzero(keep)
        lines = pc.binary_slice(whole.take(pa.array(idx)), 0, -len(self.terminator))
        if crlf[idx].any():
            lines = pc.replace_substring_regex(lines, "\r$", "")
        positions = pa.array(starts[idx] + base, pa.int64())
        if self.prefix:
            lines, positions = self._after_prefix(lines, positions)
        return Frame(positions, end, values=lines), skip

    def _after_prefix(self, lines: pa.Array, positions: pa.Array) -> tuple[pa.Array, pa.Array]:
        """The lines that hold :attr:`prefix`, each from after its first occurrence."""
        has = pc.greater_equal(pc.find_substring(lines, self.prefix), 0)
        lines, positions = lines.filter(has), positions.filter(has)
        head = "(?s)^.*?" + re.escape(self.prefix.decode("utf-8", "surrogateescape"))
        return pc.replace_substring_regex(lines, head, "", max_replacements=1), positions


def occurrences(data: np.ndarray, pattern: bytes) -> np.ndarray:
    """Where ``pattern`` begins in ``data``, left to right without overlaps (``;;`` in
    ``;;;`` once), as a scan that cuts at each occurrence finds them."""
    k, n = len(pattern), len(data)
    if n < k:
        return np.empty(0, dtype=np.int64)
    hit = data[: n - k + 1] == pattern[0]
    for i in range(1, k):
        hit &= data[i : n - k + 1 + i] == pattern[i]
    starts = np.flatnonzero(hit)
    if len(starts) > 1 and bool((np.diff(starts) < k).any()):  # it overlaps itself
        kept, last = [], -k
        for at in starts.tolist():
            if at >= last + k:
                kept.append(at)
                last = at
        starts = np.array(kept, dtype=np.int64)
    return starts


class CsvFraming(LineFraming):
    """CSV records: lines, except that a newline inside a quoted field (``"a\nb"``)
    belongs to the field. Which newlines are inside quotes is known only from a record
    boundary, so an object is read from its start or a committed offset, never from a
    byte a split chose: not splittable. A quote doubled (``""``) or preceded by the
    escape character is part of the field."""

    splittable = False

    def __init__(
        self,
        quote: str,
        escape: str | None = None,
        skip_lines: int = 0,
        block: int = BLOCK,
        *,
        keep_cr: bool = False,
        terminator: bytes = b"\n",
        prefix: bytes = b"",
    ) -> None:
        super().__init__(skip_lines, block, keep_cr=keep_cr, terminator=terminator, prefix=prefix)
        self.quote = ord(quote)
        self.escape = ord(escape) if escape else None

    def _ends(self, data: np.ndarray) -> np.ndarray:
        quotes = data == self.quote
        if self.escape is not None and len(data) > 1:
            escaped = np.zeros_like(quotes)
            escaped[1:] = data[:-1] == self.escape
            quotes &= ~escaped
        inside = (np.cumsum(quotes, dtype=np.int64) & 1).astype(bool)
        ends = super()._ends(data)
        return ends[~inside[ends]]

    def _last_end(self, buf: bytes) -> int:
        ends = self._ends(np.frombuffer(buf, dtype=np.uint8))
        return int(ends[-1]) if len(ends) else -1


class ParquetFraming(Framing):
    """Parquet row groups, each read in batches of at most ``CHUNK_ROWS`` rows. A range
    owns the row groups whose first page begins inside it. Positions are row numbers
    within the object."""

    position_name = "row"
    splittable = True
    resumable = False
    streams = False

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(f)
        md = pf.metadata
        limit = np.iinfo(np.int64).max if stop is None else stop
        first_row = 0
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            rows = rg.num_rows
            at = _row_group_offset(rg)
            if start <= at < limit:
                row = first_row
                for batch in pf.iter_batches(
                    batch_size=CHUNK_ROWS, row_groups=[i], use_threads=False
                ):
                    n = batch.num_rows
                    yield Frame(
                        pa.array(np.arange(row, row + n), pa.int64()),
                        0,
                        table=pa.Table.from_batches([batch]),
                    )
                    row += n
            first_row += rows


def _row_group_offset(rg: Any) -> int:
    """Where a row group's data begins in the file: its first column chunk's first page."""
    col = rg.column(0)
    offs = [col.data_page_offset]
    if col.has_dictionary_page and col.dictionary_page_offset:
        offs.append(col.dictionary_page_offset)
    return min(o for o in offs if o is not None)


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
    payload for the Avro message decoder, ``CHUNK_ROWS`` at a time. Positions are byte
    offsets; not split (a byte cannot tell where a record begins). Bytes that end inside
    a record fail the object, naming where. The object is read whole: such streams are
    files one writer made, not logs (a limit to lift by reading in blocks)."""

    position_name = "byte"
    splittable = False
    resumable = False
    streams = True

    def __init__(self, schema: Any) -> None:
        self.schema = schema  # parsed by fastavro

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        import fastavro

        data = f.read()
        buf = io.BytesIO(data)
        starts: list[int] = []
        at = 0
        while at < len(data):
            try:
                fastavro.schemaless_reader(buf, self.schema, None)
            except Exception as e:  # fastavro raises many kinds on cut bytes
                raise ValueError(
                    f"the raw Avro stream does not decode at byte {at} with the pipeline's "
                    f"SCHEMA: {type(e).__name__}: {e}"
                ) from None
            if buf.tell() == at:  # a schema whose values take no bytes: no end to them
                raise ValueError(
                    "the pipeline's SCHEMA encodes a record in zero bytes (a record without "
                    "fields, null, a fixed of size 0): a raw Avro stream of it has no records"
                )
            starts.append(at)
            at = buf.tell()
            if len(starts) >= CHUNK_ROWS:
                yield self._frame(data, starts, at)
                starts = []
        if starts:
            yield self._frame(data, starts, at)

    @staticmethod
    def _frame(data: bytes, starts: list[int], end: int) -> Frame:
        bounds = [*starts[1:], end]
        payloads = pa.array([data[a:b] for a, b in zip(starts, bounds, strict=True)], pa.binary())
        return Frame(pa.array(starts, pa.int64()), end, values=payloads)


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

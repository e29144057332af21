"""How an object's bytes become records (the :class:`~sparkpipes.sources.base.Framing` of a
format): lines for JSON, CSV and raw text; row groups for Parquet; blocks for Avro.

Memory bound: a framing holds one read block (``BLOCK``, 4 MiB, plus the line that
straddles it), one Parquet batch of at most ``CHUNK_ROWS`` rows of one row group, or
``CHUNK_ROWS`` Avro records, at a time — never the object. The task writes what it
decoded to the destination every ``file_rows`` rows, so an object of any size loads in
memory bounded by those settings.
"""

from __future__ import annotations

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
    before the newline stays in the line (``LOAD DATA``'s ``LINES TERMINATED BY '\n'``)."""

    position_name = "byte"
    splittable = True
    resumable = True
    streams = True

    def __init__(self, skip_lines: int = 0, block: int = BLOCK, *, keep_cr: bool = False) -> None:
        self.skip_lines = skip_lines
        self.block = block
        self.keep_cr = keep_cr

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
                    buf, tail = buf + b"\n", b""
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
        """Indexes of the newlines that end records in ``data`` (which begins with a
        record)."""
        return np.flatnonzero(data == 10)

    def _last_end(self, buf: bytes) -> int:
        """Index of the last record-ending newline of ``buf``; -1 if there is none."""
        return buf.rfind(b"\n")

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
        lengths = ends - starts
        crlf = lengths > 0
        crlf[crlf] = data[ends[crlf] - 1] == 13
        crlf &= not self.keep_cr
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
        lines = pc.binary_slice(whole.take(pa.array(idx)), 0, -1)
        if crlf[idx].any():
            lines = pc.replace_substring_regex(lines, "\r$", "")
        positions = pa.array(starts[idx] + base, pa.int64())
        return Frame(positions, end, values=lines), skip


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
    ) -> None:
        super().__init__(skip_lines, block, keep_cr=keep_cr)
        self.quote = ord(quote)
        self.escape = ord(escape) if escape else None

    def _ends(self, data: np.ndarray) -> np.ndarray:
        quotes = data == self.quote
        if self.escape is not None and len(data) > 1:
            escaped = np.zeros_like(quotes)
            escaped[1:] = data[:-1] == self.escape
            quotes &= ~escaped
        inside = (np.cumsum(quotes, dtype=np.int64) & 1).astype(bool)
        return np.flatnonzero((data == 10) & ~inside)

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

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        import fastavro

        reader = fastavro.reader(f)
        schema = avro_schema_to_arrow(reader.writer_schema)
        rows: list[dict[str, Any]] = []
        first = 0
        for rec in reader:
            rows.append(rec)
            if len(rows) >= CHUNK_ROWS:
                yield self._frame(rows, first, schema)
                first += len(rows)
                rows = []
        if rows:
            yield self._frame(rows, first, schema)

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

"""How an object's bytes become records (the :class:`~sparkpipes.sources.base.Framing` of a
format): lines for JSON, CSV and raw text; row groups for Parquet; blocks for Avro
(``sources.avro_framing``).

Memory bound: a framing holds one read block (``BLOCK``, 4 MiB) and the record that
straddles it, at most ``max_record`` bytes (64 MiB unless the source's options say
otherwise); one Parquet batch of at most ``CHUNK_ROWS`` rows of one row group; or
``CHUNK_ROWS`` Avro records — never the object. The task writes what it decoded to the
destination every ``file_rows`` rows, so an object of any size loads in memory bounded
by those settings.

Time bound: each byte of an object is scanned for where records end once as it is
read, and once more in the frame that holds it, whatever the length of its record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.base import Frame, Framing

BLOCK = 4 << 20
CHUNK_ROWS = 65_536
#: how much of an over-long record its error shows
HEAD_BYTES = 512


class _Ends:
    """Where records end in an object read chunk by chunk: each chunk scanned once, with
    what an earlier chunk left that matters (a terminator's first bytes, whether a quote
    is open). :meth:`bounds` gives the first and last end in a chunk, as indexes of the
    terminators' last bytes (-1, -1: none); :attr:`found`, every end in it, where the
    scan had to find them all (the frame of those records need not scan them again)."""

    found: np.ndarray | None = None

    def ends(self, chunk: bytes) -> np.ndarray:
        raise NotImplementedError

    def bounds(self, chunk: bytes) -> tuple[int, int]:
        ends = self.found = self.ends(chunk)
        return (int(ends[0]), int(ends[-1])) if len(ends) else (-1, -1)


class _Newlines(_Ends):
    def ends(self, chunk: bytes) -> np.ndarray:
        return np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)

    def bounds(self, chunk: bytes) -> tuple[int, int]:
        last = chunk.rfind(b"\n")
        return (chunk.find(b"\n") if last >= 0 else -1), last


class _Terminators(_Ends):
    """A terminator of several bytes may straddle two chunks: the bytes after the last
    occurrence, up to one less than it has, are scanned again with the next chunk."""

    def __init__(self, terminator: bytes) -> None:
        self.terminator = terminator
        self.carry = b""

    def ends(self, chunk: bytes) -> np.ndarray:
        k = len(self.terminator)
        data = self.carry + chunk
        at = occurrences(np.frombuffer(data, dtype=np.uint8), self.terminator)
        after = data[int(at[-1]) + k :] if len(at) else data
        self.carry = after[len(after) - k + 1 :] if k > 1 else b""
        return at + (k - 1 - (len(data) - len(chunk)))


class _Quoted(_Ends):
    """The ends of ``inner`` outside quotes: whether a quote is open, and whether the
    last byte was the escape character, carry from chunk to chunk."""

    def __init__(self, inner: _Ends, quote: int, escape: int | None) -> None:
        self.inner, self.quote, self.escape = inner, quote, escape
        self.open = 0
        self.last = -1

    def ends(self, chunk: bytes) -> np.ndarray:
        ends = self.inner.ends(chunk)
        if not chunk:
            return ends
        data = np.frombuffer(chunk, dtype=np.uint8)
        quotes = data == self.quote
        if self.escape is not None:
            escaped = np.empty_like(quotes)
            escaped[0] = self.last == self.escape
            escaped[1:] = data[:-1] == self.escape
            quotes &= ~escaped
        inside = ((np.cumsum(quotes, dtype=np.int64) + self.open) & 1).astype(bool)
        self.open = (self.open + int(np.count_nonzero(quotes))) & 1
        self.last = int(data[-1])
        return ends[~inside[ends]]


class _Overlong:
    """A record found longer than ``max_record`` before its end: passed over, never held
    (its first bytes are kept for its error)."""

    def __init__(self, position: int, length: int, head: bytes) -> None:
        self.position, self.length, self.head = position, length, head


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
    no record, as an empty line is not.

    A line longer than ``max_record`` bytes (its terminator not counted, its prefix
    counted: the cap is on lines) is not loaded: it is passed over without being held,
    and reported with its position (:attr:`Frame.unreadable`); the lines after it load.
    A line still open at the end of an object that is still being written waits, as any
    last line does."""

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

    def _scanner(self) -> _Ends:
        """A fresh scan for where records end, from a record's start."""
        return _Newlines() if self.terminator == b"\n" else _Terminators(self.terminator)

    def frames(
        self, f: Any, start: int, stop: int | None, *, final: bool, align: bool
    ) -> Iterator[Frame]:
        pos, chunk = start, b""
        if align and start > 0:
            f.seek(start - 1)
            pos = start - 1
            while True:  # the first line that begins at or after ``start``
                chunk = f.read(self.block)
                if not chunk:
                    return
                i = chunk.find(b"\n")
                if i >= 0:
                    pos, chunk = pos + i + 1, chunk[i + 1 :]
                    break
                pos += len(chunk)
        elif start:
            f.seek(start)
        skip = self.skip_lines if start == 0 else 0
        limit = np.iinfo(np.int64).max if stop is None else stop
        scan = self._scanner()
        longest = self.max_record + len(self.terminator) - 1  # its end may be cut in two
        held: list[bytes] = []  # the bytes from ``pos`` on: a record without its end yet
        size = 0
        over: _Overlong | None = None
        while pos < limit:
            if not chunk:
                chunk = f.read(self.block)
                if not chunk:
                    break
            first, last = scan.bounds(chunk)
            if last < 0:  # no record ends here
                if over is not None:
                    over.length += len(chunk)
                else:
                    held.append(chunk)
                    size += len(chunk)
                    if size > longest:
                        over = _Overlong(pos, size, _head(held))
                        held, size = [], 0
                chunk = b""
                continue
            begin = 0
            if over is not None:  # it ends at the first end here
                length = over.length + first + 1 - len(self.terminator)
                pos = over.position + over.length + first + 1
                frame, skip = self._passed(over, length, pos, skip)
                over, begin = None, first + 1
                yield frame
            if last >= begin:
                body = chunk[begin : last + 1]
                buf = b"".join([*held, body]) if held else body
                ends = scan.found
                if ends is not None:  # where they are in ``buf``
                    ends = ends[ends >= begin] + (size - begin)
                held, size = [], 0
                frame, skip = self._frame(buf, pos, limit, skip, len(buf), ends)
                pos += len(buf)
                yield frame
            rest = chunk[last + 1 :]
            chunk = b""
            if rest:
                held, size = [rest], len(rest)
                if size > longest:
                    over = _Overlong(pos, size, rest[:HEAD_BYTES])
                    held, size = [], 0
        else:
            return  # the range is read: what follows belongs to the next
        if over is not None:
            if final:  # an object that ends inside the over-long line
                end = over.position + over.length
                frame, skip = self._passed(over, over.length, end, skip)
                yield frame
            return  # else it may still be being written: it waits for its end
        if held and final:  # a last line without its terminator is a record (its end
            buf = b"".join(held) + self.terminator  # is the object's, open quote or not)
            end = np.array([len(buf) - 1])
            frame, skip = self._frame(buf, pos, limit, skip, size, end)
            yield frame

    def _passed(self, over: _Overlong, length: int, end: int, skip: int) -> tuple[Frame, int]:
        """The frame, ending at ``end``, that reports an over-long line of ``length``
        bytes (or says nothing of a line ``IGNORE n LINES`` skips); how many lines are
        still to be skipped."""
        if skip:
            return self._empty(end), skip - 1
        head = over.head[:length]  # what was held may end with a terminator's first bytes
        return self._empty(end, ((over.position, self._too_long(length), head),)), skip

    def _too_long(self, length: int) -> str:
        return (
            f"the line is longer than {self.max_record} bytes ({length} bytes): it is not loaded "
            "(the source's CONFIG option max_record_bytes raises the limit)"
        )

    @staticmethod
    def _empty(end: int, unreadable: tuple[tuple[int, str, bytes | None], ...] = ()) -> Frame:
        return Frame(
            pa.array([], pa.int64()), end, values=pa.array([], pa.binary()), unreadable=unreadable
        )

    def _ends(self, data: np.ndarray) -> np.ndarray:
        """Indexes of the last bytes of the terminators that end records in ``data``
        (which begins with a record)."""
        if self.terminator == b"\n":
            return np.flatnonzero(data == 10)
        return occurrences(data, self.terminator) + (len(self.terminator) - 1)

    def _frame(
        self,
        buf: bytes,
        base: int,
        limit: int,
        skip: int,
        real: int,
        ends: np.ndarray | None = None,
    ) -> tuple[Frame, int]:
        """The lines of ``buf`` (complete, terminated; ``ends``: where, if known) that
        begin before ``limit``, as one frame, those longer than ``max_record`` reported;
        and how many lines are still to be skipped."""
        data = np.frombuffer(buf, dtype=np.uint8)
        if ends is None:
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
        long = keep & (lengths > self.max_record)
        unreadable = tuple(
            (
                int(at) + base,
                self._too_long(int(n)),
                buf[int(at) : int(at) + min(int(n), HEAD_BYTES)],
            )
            for at, n in zip(starts[long], lengths[long], strict=True)
        )
        keep &= ~long
        crlf = lengths > 0
        crlf[crlf] = data[ends[crlf] - 1] == 13
        crlf &= not self.keep_cr and self.terminator == b"\n"
        lengths = lengths - crlf
        keep &= lengths > 0
        n_in = int(np.count_nonzero((starts + base) < limit))
        end = base + (int(ends[n_in - 1]) + 1 if n_in else 0)
        end = min(end, base + real)
        if not keep.any():
            return self._empty(end, unreadable), skip
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
        return Frame(positions, end, values=lines, unreadable=unreadable), skip

    def _after_prefix(self, lines: pa.Array, positions: pa.Array) -> tuple[pa.Array, pa.Array]:
        """The lines that hold :attr:`prefix`, each from after its first occurrence."""
        has = pc.greater_equal(pc.find_substring(lines, self.prefix), 0)
        lines, positions = lines.filter(has), positions.filter(has)
        head = "(?s)^.*?" + re.escape(self.prefix.decode("utf-8", "surrogateescape"))
        return pc.replace_substring_regex(lines, head, "", max_replacements=1), positions


def _head(pieces: list[bytes]) -> bytes:
    """The first :data:`HEAD_BYTES` of ``pieces`` joined."""
    out = b""
    for piece in pieces:
        out += piece[: HEAD_BYTES - len(out)]
        if len(out) >= HEAD_BYTES:
            break
    return out


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
    escape character is part of the field. A quote never closed makes the rest of the
    object one record: longer than ``max_record``, it is reported as such."""

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

    def _scanner(self) -> _Ends:
        return _Quoted(super()._scanner(), self.quote, self.escape)

    def _ends(self, data: np.ndarray) -> np.ndarray:
        quotes = data == self.quote
        if self.escape is not None and len(data) > 1:
            escaped = np.zeros_like(quotes)
            escaped[1:] = data[:-1] == self.escape
            quotes &= ~escaped
        inside = (np.cumsum(quotes, dtype=np.int64) & 1).astype(bool)
        ends = super()._ends(data)
        return ends[~inside[ends]]


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

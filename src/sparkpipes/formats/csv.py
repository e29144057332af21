"""FORMAT CSV: one delimited record per payload or line, fields in table-column order, read
as SingleStore's ``LOAD DATA`` reads them (:class:`~sparkpipes.config.CsvOptions`).

The fast path hands a whole chunk to ``pyarrow.csv`` when its rules and ``LOAD DATA``'s
agree on it: a one-character delimiter and no escape character anywhere in the chunk. A
chunk with escapes (``\\t``, ``\\N``, an escaped delimiter) or a longer delimiter is split
field by field in Python (:func:`split_fields`), with the same result per record.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from sparkpipes.config import CsvOptions
from sparkpipes.formats.base import Decoded, Decoder, Mismatch, conform
from sparkpipes.formats.json import newline_joined
from sparkpipes.sources.base import Framing
from sparkpipes.sources.framing import CsvFraming, LineFraming

#: what an escaped character stands for (MySQL's and SingleStore's LOAD DATA); any other
#: escaped character stands for itself
ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def split_fields(text: str, opts: CsvOptions) -> list[str | None]:
    """The fields of one record, as ``LOAD DATA`` splits them (None: ``\\N``, NULL).

    Raises ValueError for an enclosed field that is never closed."""
    delim, quote, esc = opts.delimiter, opts.quote, opts.escape
    fields: list[str | None] = []
    i, n = 0, len(text)
    while True:
        buf: list[str] = []
        if quote is not None and text.startswith(quote, i):
            i += 1
            while True:
                if i >= n:
                    crlf = text.endswith(quote + "\r")
                    raise ValueError(
                        f"a field enclosed by {quote!r} is not closed"
                        + (
                            " (a carriage return follows its quote: lines that end with "
                            "'\\r\\n' need LINES TERMINATED BY '\\r\\n')"
                            if crlf
                            else ""
                        )
                    )
                c = text[i]
                if esc is not None and c == esc and i + 1 < n:
                    buf.append(ESCAPES.get(text[i + 1], text[i + 1]))
                    i += 2
                elif c == quote and text.startswith(quote, i + 1):
                    buf.append(quote)  # doubled: the character itself
                    i += 2
                elif c == quote and (i + 1 == n or text.startswith(delim, i + 1)):
                    i += 1
                    break
                else:
                    buf.append(c)
                    i += 1
            value = "".join(buf)
            fields.append(None if opts.null_enclosed and value == opts.null_text else value)
        else:
            start = i
            while i < n and not text.startswith(delim, i):
                c = text[i]
                if esc is not None and c == esc and i + 1 < n:
                    buf.append(ESCAPES.get(text[i + 1], text[i + 1]))
                    i += 2
                else:
                    buf.append(c)
                    i += 1
            value = "".join(buf)
            null = (esc is not None and text[start:i] == esc + "N") or value == opts.null_text
            fields.append(None if null else value)
        if i >= n:
            return fields
        i += len(delim)
        if i == n:  # a delimiter at the end: one more, empty field
            fields.append("")
            return fields


class CsvDecoder(Decoder):
    def framing(self, skip_lines: int = 0) -> Framing:
        """Quoted fields may hold newlines: with a quote character, records are cut
        outside quotes (:class:`CsvFraming`), else at every newline."""
        opts = self.csv
        cuts = {
            "keep_cr": opts.carriage_return,
            "terminator": opts.terminator.encode(),
            "prefix": opts.line_start.encode(),
        }
        if not opts.quote:
            return LineFraming(skip_lines, **cuts)
        return CsvFraming(opts.quote, opts.escape, skip_lines, **cuts)

    @property
    def framing_only(self) -> str | None:
        """``LINES STARTING BY`` and a terminator other than a newline cut objects into
        records; a stream's messages are records already."""
        if self.csv.line_start:
            return "LINES STARTING BY"
        if self.csv.terminator != "\n":
            return f"LINES TERMINATED BY {self.csv.line_end!r}"
        return None

    def decode(self, values: pa.Array) -> Decoded:
        """``LINES TERMINATED BY 'x\\n'``: each record ends with ``x`` (its newline is the
        framing's), which is cut off; a chunk where one does not is decoded record by
        record, that one an error."""
        suffix = self.csv.line_suffix.encode()
        if not suffix or len(values) == 0:
            return super().decode(values)
        flat = values.cast(pa.binary())
        if not pc.all(pc.ends_with(flat, self.csv.line_suffix)).as_py():
            return self._slow(flat, self._parse_suffixed)
        return super().decode(pc.binary_slice(flat, 0, -len(suffix)))

    def _fast_ok(self, values: pa.Array) -> bool:
        """Whether ``pyarrow.csv`` reads this chunk as LOAD DATA would: a one-character
        delimiter, no escape character, and every quote character at a field's edge or
        doubled (``"a"b"``: LOAD DATA keeps the middle quote, pyarrow drops it), and no
        carriage return kept in a record, nor a newline that is data (pyarrow ends a line
        there)."""
        opts = self.csv
        if len(opts.delimiter) != 1:
            return False
        flat = values.cast(pa.binary())
        if opts.carriage_return and pc.any(pc.match_substring(flat, "\r")).as_py():
            return False
        if opts.terminator != "\n" and pc.any(pc.match_substring(flat, "\n")).as_py():
            return False  # a newline is data here
        if opts.escape is not None and pc.any(pc.match_substring(flat, opts.escape)).as_py():
            return False
        if opts.quote is None:
            return True
        edge = re.escape(opts.delimiter + opts.quote)
        inner = f"[^{edge}]{re.escape(opts.quote)}[^{edge}]"
        return not pc.any(pc.match_substring_regex(flat, inner)).as_py()

    def _fast(self, values: pa.Array) -> pa.Table:
        opts = self.csv
        buf = newline_joined(values, keep_newlines=bool(opts.quote))
        table = pcsv.read_csv(
            pa.BufferReader(buf),
            read_options=pcsv.ReadOptions(
                column_names=self.schema.names, block_size=max(buf.size + 1, 1 << 20)
            ),
            parse_options=pcsv.ParseOptions(
                delimiter=opts.delimiter,
                quote_char=opts.quote or False,
                double_quote=True,
                escape_char=False,
                ignore_empty_lines=False,
                newlines_in_values=bool(opts.quote),
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=self.schema,
                null_values=[""] if opts.null_text is None else [opts.null_text],
                strings_can_be_null=opts.null_text is not None,
                quoted_strings_can_be_null=opts.null_enclosed,
            ),
        )
        if table.num_rows != len(values):
            raise Mismatch
        return conform(table, self.schema)

    def _parse_suffixed(self, raw: bytes) -> dict[str, Any]:
        suffix = self.csv.line_suffix.encode()
        if not raw.endswith(suffix):
            raise ValueError(
                f"the line does not end with LINES TERMINATED BY {self.csv.line_end!r}"
            )
        return self._parse_one(raw[: -len(suffix)])

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        try:
            text = raw.decode()
        except UnicodeDecodeError as e:
            raise ValueError(f"not UTF-8 text: {e.reason} at byte {e.start}") from None
        fields = split_fields(text, self.csv)
        if self.csv.trailing_nullcols and len(fields) < len(self.schema):
            fields += [None] * (len(self.schema) - len(fields))
        if len(fields) != len(self.schema):
            raise ValueError(f"expected {len(self.schema)} fields, found {len(fields)}")
        if self.csv.carriage_return and fields and fields[-1] is not None:
            last = self.schema.field(len(fields) - 1)
            if not pa.types.is_string(last.type) and not pa.types.is_large_string(last.type):
                fields[-1] = fields[-1].removesuffix("\r")  # '5\r' is 5, as MySQL converts
        return {
            f.name: (None if v == "" and not pa.types.is_string(f.type) else v)
            for f, v in zip(self.schema, fields)
        }

"""FORMAT CSV: one delimited line per record, fields in table-column order."""

from __future__ import annotations

import csv
import io
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv

from sparkpipes.formats.base import Decoder, Mismatch, conform
from sparkpipes.formats.json import newline_joined
from sparkpipes.sources.base import Framing
from sparkpipes.sources.framing import CsvFraming, LineFraming


class CsvDecoder(Decoder):
    def framing(self, skip_lines: int = 0) -> Framing:
        """Quoted fields may hold newlines: with a quote character, records are cut
        outside quotes (:class:`CsvFraming`), else at every newline."""
        if not self.csv.quote:
            return LineFraming(skip_lines)
        return CsvFraming(self.csv.quote, self.csv.escape, skip_lines)

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
                escape_char=opts.escape or False,
                ignore_empty_lines=False,
                newlines_in_values=bool(opts.quote),
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=self.schema,
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        if table.num_rows != len(values):
            raise Mismatch
        return conform(table, self.schema)

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        try:
            text = raw.decode()
        except UnicodeDecodeError as e:
            raise ValueError(f"not UTF-8 text: {e.reason} at byte {e.start}") from None
        opts = self.csv
        reader = csv.reader(
            io.StringIO(text),
            delimiter=opts.delimiter,
            quotechar=opts.quote,
            escapechar=opts.escape,
            quoting=csv.QUOTE_MINIMAL if opts.quote else csv.QUOTE_NONE,
            strict=True,
        )
        try:
            fields = next(reader, [])
        except csv.Error as e:
            raise ValueError(f"malformed CSV: {e}") from None
        if len(fields) != len(self.schema):
            raise ValueError(f"expected {len(self.schema)} fields, found {len(fields)}")
        return {
            f.name: (None if v == "" and not pa.types.is_string(f.type) else v)
            for f, v in zip(self.schema, fields)
        }

"""CSV messages as Pinot's ``CSVMessageDecoder`` reads them (pinot-plugins,
``pinot-csv/.../inputformat/csv/CSVMessageDecoder.java`` and ``CSVRecordExtractor.java``):
Apache Commons CSV's rules, not SingleStore's ``LOAD DATA`` (``formats.csv``).

What is promised, each following Pinot's source:

* **The format.** ``fileFormat`` picks Commons CSV's predefined format (``DEFAULT``,
  ``EXCEL``, ``RFC4180``, ``TDF``, ``MYSQL``; any other name is ``DEFAULT``, as Pinot falls
  back to it); then ``delimiter``, ``quoteCharacter``, ``escapeCharacter`` and
  ``commentMarker`` (each its first character, Pinot's ``charAt(0)``), ``nullStringValue``,
  ``ignoreEmptyLines``, ``ignoreSurroundingSpaces``, ``skipHeader`` (Java's
  ``Boolean.parseBoolean``: ``true`` in any case, anything else false) and ``quoteMode``
  change it.
* **The columns.** ``header`` names them, split at any character of ``delimiter``
  (Commons Lang's ``StringUtils.split``: empty names dropped; without ``delimiter``, at
  whitespace). Without ``header``, each message's first line is its own header and the
  record is the next line. With ``skipHeader``, the message's first record is skipped.
  Only the first record of a message is read; a message without one is a bad record.
* **The values.** An empty field (``a,,b`` and ``a,"",b`` alike) is NULL, as is a field
  equal to ``nullStringValue``; a column the record does not reach is NULL; with
  ``multiValueDelimiter`` a field is split at that character, empty parts dropped, and
  becomes a list when two or more parts remain (else it stays as written).
* **The conversion.** Each text reaches its column as Pinot's ``DataTypeTransformer``
  converts a ``String`` (:mod:`~sparkpipes.formats.pinot_convert`, the rules of
  :mod:`~sparkpipes.formats.pinot_values`): ``Integer.parseInt`` for INT (``2.7`` and
  ``1e3`` do not convert), ``BooleanUtils`` for BOOLEAN (``true`` in any case or ``1``;
  any other text is false), hex for BYTES, ``TimestampUtils`` for TIMESTAMP. A
  multi-value column takes a single value as a one-element list; a single-value column
  given several values does not convert. A value that does not convert makes the record a
  bad record, or, with the option ``pinot.continue.on.error`` (``continueOnError``), null
  (then the column's default null value), the row kept.
* Bytes that are not UTF-8 read as U+FFFD (Java's ``InputStreamReader``), never an error.

The hot path hands the chunk to ``pyarrow.csv`` (all columns as text, then converted
column-wide where Arrow's cast equals Pinot's: :func:`~sparkpipes.formats.pinot_convert.
fast_column`) when its rules and Commons CSV's agree on every message: a header given and no skipped
one, one line per message, no escape, comment marker, surrounding-space trimming or strict
quote mode, and quotes only at a field's edges. Any other chunk, or one Arrow rejects,
is read message by message with :func:`records`, which follows Commons CSV's lexer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Mismatch, OptionsDecoder
from sparkpipes.formats.json import newline_joined
from sparkpipes.formats.pinot_convert import PinotValues

#: the decoder props, as Pinot's ``FormatSpec`` options carry them
PROP = "decoder.prop."
#: the props ``CSVMessageDecoder.init`` reads (``recordSeparator`` only shapes output)
PROPS = (
    "fileFormat",
    "header",
    "delimiter",
    "commentMarker",
    "escapeCharacter",
    "multiValueDelimiter",
    "nullStringValue",
    "skipHeader",
    "ignoreEmptyLines",
    "ignoreSurroundingSpaces",
    "quoteCharacter",
    "quoteMode",
    "recordSeparator",
)
#: Commons CSV's ``QuoteMode`` values; the strict ones keep a quoted null string as text
QUOTE_MODES = ("ALL", "ALL_NON_NULL", "MINIMAL", "NON_NUMERIC", "NONE")
_STRICT = ("ALL_NON_NULL", "NON_NUMERIC")


@dataclass(frozen=True)
class PinotCsvFormat:
    """A Commons CSV ``CSVFormat`` as Pinot's decoder builds it (see the module)."""

    delimiter: str = ","
    quote: str | None = '"'
    escape: str | None = None
    comment: str | None = None
    null_string: str | None = None
    ignore_empty_lines: bool = True
    ignore_spaces: bool = False
    quote_mode: str | None = None
    header: tuple[str, ...] | None = None
    skip_header: bool = False
    multi_value: str | None = None


#: Commons CSV's predefined formats, by Pinot's ``fileFormat`` names
FILE_FORMATS: Mapping[str, PinotCsvFormat] = {
    "DEFAULT": PinotCsvFormat(),
    "EXCEL": PinotCsvFormat(ignore_empty_lines=False),
    "RFC4180": PinotCsvFormat(ignore_empty_lines=False),
    "TDF": PinotCsvFormat(delimiter="\t", ignore_spaces=True),
    "MYSQL": PinotCsvFormat(
        delimiter="\t",
        quote=None,
        escape="\\",
        null_string="\\N",
        ignore_empty_lines=False,
        quote_mode="ALL_NON_NULL",
    ),
}


def _flag(text: str) -> bool:
    return text.lower() == "true"  # Java's Boolean.parseBoolean


def csv_format(props: Mapping[str, str]) -> PinotCsvFormat:
    """The format of Pinot's decoder props (names without ``decoder.prop.``), checked as
    Commons CSV checks a format: a ``quoteMode`` it does not know, or a delimiter that is
    also the quote, escape or comment character, is a ConfigError (Pinot's decoder fails
    to start on them)."""
    fmt = FILE_FORMATS.get(props.get("fileFormat", "DEFAULT").upper(), FILE_FORMATS["DEFAULT"])
    chars = {
        "delimiter": "delimiter",
        "quote": "quoteCharacter",
        "escape": "escapeCharacter",
        "comment": "commentMarker",
        "multi_value": "multiValueDelimiter",
    }
    fmt = replace(fmt, **{a: props[k][0] for a, k in chars.items() if props.get(k)})
    if "nullStringValue" in props:
        fmt = replace(fmt, null_string=props["nullStringValue"])
    flags = {
        "skip_header": "skipHeader",
        "ignore_empty_lines": "ignoreEmptyLines",
        "ignore_spaces": "ignoreSurroundingSpaces",
    }
    fmt = replace(fmt, **{a: _flag(props[k]) for a, k in flags.items() if k in props})
    if (mode := props.get("quoteMode")) is not None:
        if mode not in QUOTE_MODES:
            raise ConfigError(
                f"CSVMessageDecoder: quoteMode '{mode}' is not one of {', '.join(QUOTE_MODES)}"
            )
        fmt = replace(fmt, quote_mode=mode)
    if (header := props.get("header")) is not None:
        seps = props.get("delimiter")
        names = re.split(f"[{re.escape(seps)}]+" if seps else r"\s+", header)
        fmt = replace(fmt, header=tuple(n for n in names if n))
    for what, ch in (("quote", fmt.quote), ("escape", fmt.escape), ("comment", fmt.comment)):
        if ch is not None and ch == fmt.delimiter:
            raise ConfigError(
                f"CSVMessageDecoder: the {what} character and the delimiter cannot be the "
                f"same ({ch!r})"
            )
    if fmt.quote_mode == "NONE" and fmt.escape is None:
        raise ConfigError("CSVMessageDecoder: quoteMode NONE needs an escapeCharacter")
    return fmt


#: what an escaped character stands for in Commons CSV (``Lexer.readEscape``)
_ESCAPES = {"r": "\r", "n": "\n", "t": "\t", "b": "\b", "f": "\f"}


def records(text: str, fmt: PinotCsvFormat) -> Iterator[list[str | None]]:
    """The records of ``text`` as Commons CSV's parser reads them with ``fmt``; raises
    ValueError where it throws (an enclosed field not closed, text after one)."""
    i, n = 0, len(text)
    d, q, e, c = fmt.delimiter, fmt.quote, fmt.escape, fmt.comment
    meta = {ch for ch in (d, q, e, c) if ch is not None}
    strict = fmt.quote_mode in _STRICT
    while i < n:
        at_eol = text.startswith(("\r", "\n"), i)
        if fmt.ignore_empty_lines and at_eol:
            i += 2 if text.startswith("\r\n", i) else 1
            continue
        if c is not None and text[i] == c:  # a comment line
            while i < n and text[i] not in "\r\n":
                i += 1
            i += 2 if text.startswith("\r\n", i) else 1
            continue
        record: list[str | None] = []
        while True:
            if fmt.ignore_spaces:
                while i < n and text[i] in " \t" and text[i] != d:
                    i += 1
            buf: list[str] = []
            quoted = False
            if q is not None and i < n and text[i] == q:
                quoted, i = True, i + 1
                while True:
                    if i >= n:
                        raise ValueError("EOF reached before an encapsulated token finished")
                    ch = text[i]
                    if e is not None and ch == e:
                        i = _escaped(text, i, buf, meta)
                    elif ch == q and text.startswith(q, i + 1):
                        buf.append(q)
                        i += 2
                    elif ch == q:
                        i += 1
                        while i < n and text[i] != d and text[i] not in "\r\n":
                            if not text[i].isspace():
                                raise ValueError(
                                    f"invalid char between encapsulated token and delimiter "
                                    f"at position {i}"
                                )
                            i += 1
                        break
                    else:
                        buf.append(ch)
                        i += 1
            else:
                while i < n and text[i] != d and text[i] not in "\r\n":
                    if e is not None and text[i] == e:
                        i = _escaped(text, i, buf, meta)
                    else:
                        buf.append(text[i])
                        i += 1
            value = "".join(buf)
            if not quoted and fmt.ignore_spaces:
                value = value.rstrip(" \t")
            null = value == fmt.null_string and not (strict and quoted)
            record.append(None if null else value)
            if i < n and text[i] == d:
                i += 1
                if i == n:
                    record.append(None if fmt.null_string == "" else "")
                    break
                continue
            i += 2 if text.startswith("\r\n", i) else 1
            break
        yield record


def _escaped(text: str, i: int, buf: list[str], meta: set[str]) -> int:
    """The escape at ``i`` into ``buf`` (Commons CSV: control letters, a meta character
    stands for itself, any other character keeps the escape); the next position."""
    if i + 1 >= len(text):
        raise ValueError("EOF whilst processing escape sequence")
    nxt = text[i + 1]
    if nxt in _ESCAPES:
        buf.append(_ESCAPES[nxt])
    elif nxt in meta or nxt in "\r\n\f\t\b":
        buf.append(nxt)
    else:
        buf.append(text[i] + nxt)
    return i + 2


def extracted(text: str, fmt: PinotCsvFormat) -> dict[str, Any]:
    """The record of one message as ``CSVRecordExtractor`` gives it: header name → NULL,
    text, or (split at the multi-value delimiter) a list of texts."""
    it = records(text, fmt)
    header = fmt.header
    try:
        if header is None:
            header = tuple(v or "" for v in next(it))
        elif fmt.skip_header:
            next(it)
        values = next(it)
    except StopIteration:
        raise ValueError("the message holds no CSV record") from None
    return {
        name: _value(values[k] if k < len(values) else None, fmt.multi_value)
        for k, name in enumerate(header)
    }


def _value(text: str | None, multi: str | None) -> Any:
    if not text:
        return None
    if multi is None:
        return text
    parts = [p for p in text.split(multi) if p]
    return parts if len(parts) > 1 else text


class PinotCsvDecoder(OptionsDecoder):
    """See the module docstring. Built from the ``decoder.prop.*`` options."""

    def configure(self) -> None:
        self.format = csv_format(
            {k[len(PROP) :]: v for k, v in self.options.items() if k.startswith(PROP)}
        )
        self.lists = {f.name for f in self.schema if pa.types.is_list(f.type)}
        self.values = PinotValues(self.schema, self.options)

    def _fast_ok(self, values: pa.Array) -> bool:
        fmt = self.format
        if (
            fmt.header is None
            or fmt.skip_header
            or len(set(fmt.header)) != len(fmt.header)
            or fmt.escape is not None
            or fmt.comment is not None
            or fmt.ignore_spaces
            or fmt.quote_mode in _STRICT
            or self.on_missing
        ):
            return False
        flat = values.cast(pa.binary())
        if not pc.all(pc.greater(pc.binary_length(flat), 0)).as_py():
            return False
        if pc.any(pc.match_substring_regex(flat, "[\r\n]")).as_py():
            return False
        if fmt.quote is None:
            return True
        edge = re.escape(fmt.delimiter + fmt.quote)
        inner = f"[^{edge}]{re.escape(fmt.quote)}[^{edge}]"  # a quote inside a field
        stripped = pc.replace_substring(flat, fmt.quote * 2, "")  # doubled: itself
        return not pc.any(pc.match_substring_regex(stripped, inner)).as_py()

    def _fast(self, values: pa.Array) -> pa.Table:
        fmt = self.format
        header = list(fmt.header or ())
        buf = newline_joined(values)
        table = pcsv.read_csv(
            pa.BufferReader(buf),
            read_options=pcsv.ReadOptions(
                column_names=header, block_size=max(buf.size + 1, 1 << 20)
            ),
            parse_options=pcsv.ParseOptions(
                delimiter=fmt.delimiter,
                quote_char=fmt.quote or False,
                double_quote=True,
                escape_char=False,
                ignore_empty_lines=False,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={h: pa.string() for h in header},
                null_values=["", *([fmt.null_string] if fmt.null_string else [])],
                strings_can_be_null=True,
                quoted_strings_can_be_null=True,
            ),
        )
        if table.num_rows != len(values):
            raise Mismatch
        arrays = [self._column(table, f) for f in self.schema]
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _column(self, table: pa.Table, f: pa.Field) -> pa.Array:
        path = self.paths[f.name]
        if len(path) != 1 or path[0] not in table.column_names:
            return pa.nulls(table.num_rows, f.type)
        col = table.column(path[0]).combine_chunks()
        multi = self.format.multi_value
        if f.name in self.lists:
            if multi is None:
                offsets = pa.array(np.arange(len(col) + 1, dtype=np.int32))
                lists = pa.ListArray.from_arrays(offsets, col.fill_null(""), mask=col.is_null())
            else:
                lists = pc.split_pattern(col, multi)
                if pc.any(pc.equal(pc.list_flatten(lists), "")).as_py():
                    raise Mismatch  # empty parts are dropped: record by record
            return self.values.fast_column(lists, f)
        if multi is not None and pc.any(pc.match_substring(col, multi)).as_py():
            raise Mismatch  # perhaps several values for one: record by record
        return self.values.fast_column(col, f)

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        rec = self.pick(extracted(raw.decode("utf-8", errors="replace"), self.format))
        return self.values.row(rec)

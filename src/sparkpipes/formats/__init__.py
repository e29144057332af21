"""Formats: decoders from raw payloads to Arrow tables, looked up by ``FORMAT`` name; and
``conform``: a decoded chunk shaped into the table's rows (its columns, record-metadata
columns, NOT NULL)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from sparkpipes.config import CsvOptions, FieldMapping, RecordProgram
from sparkpipes.formats.base import Decoded, Decoder, RecordError
from sparkpipes.formats.programs import ProgramDecoder, build_program
from sparkpipes.util.registry import Registry

FORMATS = Registry("format", entry_point_group="sparkpipes.formats")
FORMATS.register("json", "sparkpipes.formats.json:JsonDecoder")
FORMATS.register("csv", "sparkpipes.formats.csv:CsvDecoder")
FORMATS.register("raw", "sparkpipes.formats.raw:RawDecoder")
FORMATS.register("parquet", "sparkpipes.formats.columnar:ParquetDecoder")
FORMATS.register(
    "avro", "sparkpipes.formats.columnar:AvroDecoder", install_hint="pip install fastavro"
)


def build_decoder(
    name: str,
    schema: pa.Schema,
    mapping: Sequence[FieldMapping] = (),
    csv: CsvOptions | None = None,
    options: Mapping[str, str] | None = None,
    *,
    text_values: bool = False,
    program: RecordProgram | None = None,
) -> Decoder:
    """The decoder of ``FORMAT name``; ``FORMAT AVRO`` with a schema (``SCHEMA REGISTRY
    'url'`` or ``SCHEMA '<json>'``) decodes Avro messages of a stream, without one Avro
    objects (container files). ``text_values``: see ``FormatSpec.text_values``; a
    ``program`` (``WITH TRANSFORM``) runs on the records before they decode."""
    decoder = _decoder(name, schema, mapping, csv, options, text_values)
    return ProgramDecoder(decoder, build_program(program)) if program else decoder


def _decoder(
    name: str,
    schema: pa.Schema,
    mapping: Sequence[FieldMapping],
    csv: CsvOptions | None,
    options: Mapping[str, str] | None,
    text_values: bool,
) -> Decoder:
    if name == "avro" and options:
        from sparkpipes.formats.avro import AvroMessageDecoder

        return AvroMessageDecoder(schema, mapping, csv, options=options)
    if name == "stream":
        from sparkpipes.formats.stream import StreamDecoder

        return StreamDecoder(schema, mapping, csv, options=options or {})
    return FORMATS.get(name)(schema, mapping, csv, text_values=text_values)


__all__ = ["FORMATS", "Decoded", "Decoder", "RecordError", "build_decoder"]

"""Formats: decoders from raw payloads to Arrow tables, looked up by ``FORMAT`` name; and
``conform``: a decoded chunk shaped into the table's rows (its columns, record-metadata
columns, NOT NULL)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from sparkpipes.config import CsvOptions, FieldMapping, NestedSpec, RecordProgram
from sparkpipes.config.transforms import ConnectRecords
from sparkpipes.formats.base import Decoded, Decoder, OptionsDecoder, RecordError
from sparkpipes.formats.connect import ConnectDecoder
from sparkpipes.formats.nested import NestedDecoder, NestedPlan
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
# Pinot's own message decoders, built with their ``decoder.prop.*`` options
FORMATS.register("pinot-csv", "sparkpipes.formats.pinot_csv:PinotCsvDecoder")
FORMATS.register("pinot-json", "sparkpipes.formats.pinot_json:PinotJsonDecoder")
FORMATS.register("pinot-clp", "sparkpipes.formats.pinot_clp:PinotClpDecoder")
FORMATS.register(
    "protobuf", "sparkpipes.formats.protobuf:ProtoBufDecoder", install_hint="pip install protobuf"
)
# Confluent's wire format with Protobuf or JSON bodies (formats.confluent)
FORMATS.register(
    "protobuf-registry",
    "sparkpipes.formats.confluent:ConfluentProtobufDecoder",
    install_hint="pip install protobuf",
)
FORMATS.register(
    "json-registry",
    "sparkpipes.formats.confluent:ConfluentJsonDecoder",
    install_hint="pip install protobuf",
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
    nested: NestedSpec | None = None,
    connect: ConnectRecords | None = None,
) -> Decoder:
    """The decoder of ``FORMAT name``; ``FORMAT AVRO`` with a schema (``SCHEMA REGISTRY
    'url'`` or ``SCHEMA '<json>'``) decodes Avro messages of a stream, without one Avro
    objects (container files). ``text_values``: see ``FormatSpec.text_values``; a
    ``program`` (``WITH TRANSFORM``) runs on the records before they decode; ``nested``
    flattens and unnests them into the columns (``formats.nested``); ``connect`` decodes
    Kafka records as a Kafka Connect sink task does, through its transforms
    (``formats.connect``)."""
    if connect is not None:
        return ConnectDecoder(schema, mapping, connect, options)
    if nested is not None:
        plan = NestedPlan(schema, mapping, nested)
        inner = _decoder(name, plan.schema, plan.mapping, csv, options, text_values)
        decoder: Decoder = NestedDecoder(inner, plan)
    else:
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
        from sparkpipes.formats.avro_pinot import FRAMING_OPTION, FRAMINGS

        # Confluent's wire format, or another framing named by the options (Pinot's own)
        make = FRAMINGS.get(options.get(FRAMING_OPTION, ""), AvroMessageDecoder)
        return make(schema, mapping, csv, options=options, text_values=text_values)
    if name == "stream":
        from sparkpipes.formats.stream import StreamDecoder

        return StreamDecoder(schema, mapping, csv, options=options or {})
    cls = FORMATS.get(name)
    if isinstance(cls, type) and issubclass(cls, OptionsDecoder):  # takes FormatSpec.options
        return cls(schema, mapping, csv, options=options or {}, text_values=text_values)
    return cls(schema, mapping, csv, text_values=text_values)


__all__ = ["FORMATS", "Decoded", "Decoder", "RecordError", "build_decoder"]

"""JSON log events as Pinot's ``CLPLogMessageDecoder`` stores them (pinot-plugins,
``pinot-clp-log/.../clplog/CLPLogMessageDecoder.java``, ``CLPLogRecordExtractor.java``,
``CLPLogRecordExtractorConfig.java``, apache/pinot@210c2951e72).

What is promised, each following Pinot's source:

* **The message** is read as Pinot's JSON decoder reads it
  (:class:`~sparkpipes.formats.pinot_json.PinotJsonDecoder`): its first JSON value, an
  object; one that is not is a bad record. Every field not encoded reaches its column
  converted by Pinot's rules, as from ``KafkaJSONMessageDecoder`` (the extractor's
  ``convert`` is ``JSONRecordExtractor``'s).
* **Each field of** ``fieldsForClpEncoding`` (comma-separated, names as written, empty
  ones skipped) is encoded with CLP (:mod:`~sparkpipes.formats.clp`) into
  ``<field>_logtype`` (text), ``<field>_dictionaryVars`` (a list of text) and
  ``<field>_encodedVars`` (a list of 64-bit integers), which replace any value the record
  gives those names. A value that is not text is encoded as its JSON text
  (``JsonUtils.objectToString``: objects in the order the message wrote their keys, reals
  as Java's ``Double.toString``). A missing or null field gives three nulls; a message
  without dictionary (or encoded) variables gives a null list, so the column stores its
  default null value (``["null"]``, ``[-9223372036854775808]``), as Pinot does.
* **Unencodable** (a value holding a CLP placeholder byte ``\\x11``-``\\x13``, or more than
  1000 variables of a kind: ``MAX_MULTI_VALUES_PER_ROW``): the three columns are the
  encoding of ``unencodableFieldError`` when it is given (and encodable), else null; with
  ``unencodableFieldSuffix`` the field's value goes to ``<field><suffix>`` as well.
* ``removeProcessedFields`` (``Boolean.parseBoolean``: ``true`` in any case) leaves the
  field itself null; without it the field keeps its value. Pinot reads
  ``removeProcessedFields``, ``unencodableFieldSuffix`` and ``unencodableFieldError`` only
  when ``fieldsForClpEncoding`` is given, and ignores an empty suffix or error text.
* ``topicNameDestinationColumn`` changes nothing stored: Pinot puts the topic there
  first, then every field its transforms read (all schema columns) from the record, the
  column included, so the record's own value (or null) is what a row holds.

On Arrow: the chunk is read as :class:`PinotJsonDecoder` reads it, the fields to encode
once more as text (a value of another type fails Arrow's reading: record by record), and
each is encoded into Arrow arrays; a chunk with an unencodable value, or whose encoded
columns are declared with other types, goes record by record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.json as pj

from sparkpipes.errors import ConfigError
from sparkpipes.formats import clp
from sparkpipes.formats.base import Mismatch
from sparkpipes.formats.json import newline_joined
from sparkpipes.formats.pinot_jackson import write
from sparkpipes.formats.pinot_json import PinotJsonDecoder

PROP = "decoder.prop."
FIELDS = "fieldsForClpEncoding"
REMOVE = "removeProcessedFields"
SUFFIX = "unencodableFieldSuffix"
ERROR = "unencodableFieldError"
TOPIC = "topicNameDestinationColumn"
EXTRACTOR = "recordExtractorClass"
EXTRACTOR_CONFIG = "recordExtractorConfigClass"
#: the decoder props (``errorSamplingPeriod`` only samples Pinot's error log)
PROPS = (FIELDS, REMOVE, SUFFIX, ERROR, TOPIC, "errorSamplingPeriod", EXTRACTOR, EXTRACTOR_CONFIG)

_PACKAGE = "org.apache.pinot.plugin.inputformat.clplog."
_EXTRACTOR = _PACKAGE + "CLPLogRecordExtractor"
_EXTRACTOR_CONFIG = _PACKAGE + "CLPLogRecordExtractorConfig"

#: the columns an encoded field becomes (``ClpRewriter``'s suffixes)
LOGTYPE, DICTIONARY_VARS, ENCODED_VARS = "_logtype", "_dictionaryVars", "_encodedVars"
#: ``ForwardIndexType.MAX_MULTI_VALUES_PER_ROW``
MAX_VARIABLES = 1000
_TYPES = {LOGTYPE: pa.string(), DICTIONARY_VARS: pa.list_(pa.string())}
_TYPES[ENCODED_VARS] = pa.list_(pa.int64())

#: the column types taken as they are made (others: converted record by record)
_KINDS = {
    LOGTYPE: pa.types.is_string,
    DICTIONARY_VARS: lambda t: pa.types.is_list(t) and pa.types.is_string(t.value_type),
    ENCODED_VARS: lambda t: pa.types.is_list(t) and pa.types.is_int64(t.value_type),
}

Encoded = tuple[str | None, list[str] | None, list[int] | None]
_NOTHING: Encoded = (None, None, None)


@dataclass(frozen=True)
class ClpConfig:
    """``CLPLogRecordExtractorConfig`` as its ``init`` reads the props."""

    fields: tuple[str, ...] = ()
    remove_processed: bool = False
    suffix: str | None = None
    error: str | None = None


def clp_config(props: Mapping[str, str]) -> ClpConfig:
    """The config of ``props`` (names after ``decoder.prop.``); raises ConfigError for a
    record extractor other than Pinot's CLP one, which would read the records otherwise."""
    extractor = props.get(EXTRACTOR)
    if extractor is not None and extractor.strip() != _EXTRACTOR:
        raise ConfigError(
            f"decoder.prop.{EXTRACTOR} '{extractor}' is not supported: records are "
            f"extracted as Pinot's {_EXTRACTOR} does (remove the prop)"
        )
    config_class = props.get(EXTRACTOR_CONFIG)
    if extractor is not None and (config_class or "").strip() != _EXTRACTOR_CONFIG:
        raise ConfigError(
            f"decoder.prop.{EXTRACTOR} needs decoder.prop.{EXTRACTOR_CONFIG} "
            f"'{_EXTRACTOR_CONFIG}' (Pinot's decoder does not start without it); "
            "or remove both props"
        )
    named = props.get(FIELDS)
    if named is None:  # Pinot reads nothing more then
        return ClpConfig()
    fields = tuple(dict.fromkeys(f for f in named.split(",") if f))
    suffix, error = props.get(SUFFIX) or None, props.get(ERROR) or None
    return ClpConfig(fields, (props.get(REMOVE) or "").lower() == "true", suffix, error)


def object_text(value: Any) -> str:
    """``JsonUtils.objectToString`` of a value of a message read by ``bytesToMap``:
    nested objects are ``LinkedHashMap``s, written in the message's key order."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{write(k)}:{object_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(object_text(v) for v in value) + "]"
    return write(value)


def _encoded(text: str) -> Encoded:
    """CLP's encoding of ``text``; raises Unencodable where Pinot's extractor gives up."""
    encoded = clp.encode_text(text)
    if any(v is not None and len(v) > MAX_VARIABLES for v in encoded[1:]):
        raise clp.Unencodable("too many variables")
    return encoded


class PinotClpDecoder(PinotJsonDecoder):
    def configure(self) -> None:
        super().configure()
        props = {k[len(PROP) :]: v for k, v in self.options.items() if k.startswith(PROP)}
        self.clp = clp_config(props)
        self.error_encoded = _NOTHING
        if self.clp.error is not None:
            try:  # (initConfig: no count of variables here)
                self.error_encoded = clp.encode_text(self.clp.error)
            except clp.Unencodable:
                pass  # Pinot logs it and stores null
        #: the columns of each encoded field: (field, suffix) by column name
        self.outputs = {
            name: (field, suffix)
            for name, path in self.paths.items()
            for field in self.clp.fields
            for suffix in _TYPES
            if path == (field + suffix,)
        }

    def encode(self, value: Any) -> tuple[Encoded, bool]:
        """What Pinot's ``encodeFieldWithClp`` gives a field's ``value``: its three
        values, and whether it was unencodable."""
        if value is None:
            return _NOTHING, False
        try:
            return _encoded(value if isinstance(value, str) else object_text(value)), False
        except clp.Unencodable:
            return self.error_encoded, True

    def record(self, rec: dict[str, Any]) -> dict[str, Any]:
        """A message's record as ``CLPLogRecordExtractor.extract`` makes it."""
        out = dict(rec)
        for field in self.clp.fields:
            value = rec.get(field)
            encoded, failed = self.encode(value)
            if failed and self.clp.suffix is not None:
                out[field + self.clp.suffix] = value
            for suffix, v in zip(_TYPES, encoded, strict=True):
                out[field + suffix] = v
            if self.clp.remove_processed:
                out.pop(field, None)
        return out

    def _loads(self, raw: bytes) -> Any:
        rec = super()._loads(raw)
        return self.record(rec) if isinstance(rec, dict) and self.clp.fields else rec

    def _read(self, values: pa.Array) -> dict[str, pa.ChunkedArray]:
        cols = super()._read(values)
        if not self.clp.fields:
            return cols
        if any(len(p) > 1 and p[0] in self.clp.fields for p in self.paths.values()):
            raise Mismatch  # a path into an encoded field: record by record
        texts = pj.read_json(
            pa.BufferReader(newline_joined(values)),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema([(f, pa.string()) for f in self.clp.fields]),
                unexpected_field_behavior="ignore",
            ),
        )
        if texts.num_rows != len(values):
            raise Mismatch
        made: dict[str, dict[str, list[Any]]] = {}
        for field in self.clp.fields:
            columns: dict[str, list[Any]] = {s: [] for s in _TYPES}
            for text in texts.column(field).to_pylist():
                encoded, failed = self.encode(text)
                if failed:
                    raise Mismatch  # its suffix column and error text: record by record
                for suffix, v in zip(_TYPES, encoded, strict=True):
                    columns[suffix].append(v)
            made[field] = columns
        for name, (field, suffix) in self.outputs.items():
            t = self.schema.field(name).type
            if not _KINDS[suffix](t):
                raise Mismatch  # declared otherwise: converted record by record
            cols[name] = pa.chunked_array([pa.array(made[field][suffix], t)])
        if self.clp.remove_processed:
            for name, path in self.paths.items():
                if path[0] in self.clp.fields:
                    cols[name] = pa.chunked_array([pa.nulls(len(values), cols[name].type)])
        return cols

"""Pinot's own message decoders that take ``decoder.prop.*`` settings (besides JSON and
Avro, which :mod:`.stream` reads itself), and the decoder classes refused by name.

Each decoder here lowers to a ``FORMAT`` kind of :mod:`sparkpipes.formats` whose decoder
gets the props as ``decoder.prop.<name>`` options (:func:`format_options`); the props it
reads are known keys (not reported as ``unrecognizedProperties``) and are checked when the
table is added, as Pinot's decoder checks them when it starts.

A file a prop names (``descriptorFile``) is read here, on the server, when the table is
added or loaded: the server asks ``FILE READ`` for it first (``stream.local_file_keys``
lists it), and whether it is missing, unreadable or of another kind is not told apart,
nor anything it holds, so that the decoder is no oracle of the server's files.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from sparkpipes.errors import ConfigError
from sparkpipes.formats import pinot_clp, pinot_csv, protobuf

PROP = "decoder.prop."


@dataclass(frozen=True)
class OwnDecoder:
    """A Pinot decoder class read here: the format it lowers to, the props it reads and
    the format options of their values (raises ConfigError for a value Pinot's decoder
    does not start with)."""

    kind: str
    props: tuple[str, ...]
    options: Callable[[Mapping[str, str]], dict[str, str]]


def _prefixed(props: Mapping[str, str]) -> dict[str, str]:
    return {PROP + k: v for k, v in props.items()}


def _csv_options(props: Mapping[str, str]) -> dict[str, str]:
    pinot_csv.csv_format(props)
    return _prefixed(props)


def _clp_options(props: Mapping[str, str]) -> dict[str, str]:
    pinot_clp.clp_config(props)
    return _prefixed(props)


#: the largest descriptor file read (a descriptor set is small; a device is not one)
MAX_DESCRIPTOR_FILE = 4 << 20


def _protobuf_options(props: Mapping[str, str]) -> dict[str, str]:
    """``ProtoBufMessageDecoder.init``: ``descriptorFile`` is required (a path, or a
    ``file:`` URI as Pinot's ``PinotFSFactory`` takes; other file systems are refused)."""
    where = props.get("descriptorFile")
    if not where:
        raise ConfigError(
            "Protocol Buffer schema descriptor file must be provided: "
            "ProtoBufMessageDecoder needs decoder.prop.descriptorFile"
        )
    uri = urlparse(where)
    if uri.scheme not in ("", "file") and len(uri.scheme) > 1:  # (a drive letter: a path)
        raise ConfigError(
            f"decoder.prop.descriptorFile: a file of file system '{uri.scheme}' is not read "
            "here: give a path of the server's disk (or a file: URI)"
        )
    path = unquote(uri.path) if uri.scheme == "file" else where
    unusable = ConfigError(
        "the file named by decoder.prop.descriptorFile cannot be used as a Protobuf "
        "descriptor set (a readable FileDescriptorSet, as protoc --descriptor_set_out "
        "writes it)"
    )
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DESCRIPTOR_FILE + 1)
    except (OSError, ValueError):
        raise unusable from None
    if len(data) > MAX_DESCRIPTOR_FILE:
        raise unusable
    try:
        protobuf.parsed_set(data)
    except ConfigError:
        raise unusable from None
    protobuf.message_descriptor(data, props.get("protoClassName"))
    return {**_prefixed(props), protobuf.DESCRIPTOR_OPTION: base64.b64encode(data).decode()}


#: Pinot decoder classes (simple names) → how they are read
OWN_DECODERS: Mapping[str, OwnDecoder] = {
    # pinot-csv: CSVMessageDecoder.init (formats.pinot_csv)
    "CSVMessageDecoder": OwnDecoder("pinot-csv", pinot_csv.PROPS, _csv_options),
    # pinot-protobuf: ProtoBufMessageDecoder.init (formats.protobuf)
    "ProtoBufMessageDecoder": OwnDecoder("protobuf", protobuf.PROPS, _protobuf_options),
    # pinot-clp-log: CLPLogMessageDecoder.init, JSON with CLP-encoded fields (formats.pinot_clp)
    "CLPLogMessageDecoder": OwnDecoder("pinot-clp", pinot_clp.PROPS, _clp_options),
}
#: the format kinds of decoders reading JSON as Pinot's JSON decoder does (a record's own
#: value of a transform's column loaded as converted: formats.pinot_json)
JSON_KINDS = frozenset({"pinot-clp"})
#: the format kinds they lower to
OWN_KINDS = frozenset(d.kind for d in OWN_DECODERS.values())

#: Pinot's decoders of Confluent's wire format besides Avro's → their decoder kinds,
#: read with the registry keys as the Avro one (``stream.registry_options``)
REGISTRY_DECODERS: Mapping[str, str] = {
    # pinot-confluent-protobuf, pinot-confluent-json (formats.confluent)
    "KafkaConfluentSchemaRegistryProtoBufMessageDecoder": "protobuf-registry",
    "KafkaConfluentSchemaRegistryJsonMessageDecoder": "json-registry",
}
#: the decoder kinds of a schema registry → the format each lowers to
REGISTRY_FORMATS: Mapping[str, str] = {
    "avro-registry": "avro",
    **{kind: kind for kind in REGISTRY_DECODERS.values()},
}
#: the decoder kinds that read a schema registry
REGISTRY_KINDS = frozenset(REGISTRY_FORMATS)
#: the props of those decoders besides the registry's: the size of the schema cache,
#: which changes nothing loaded
REGISTRY_PROPS = ("cached.schema.map.capacity",)

#: decoder classes refused by name, with why
REFUSED_DECODERS: Mapping[str, str] = {
    "ProtoBufCodeGenMessageDecoder": (
        "it compiles Java classes from a protobuf jar (jarFile) at run time, which has no "
        "equivalent here: use ProtoBufMessageDecoder with a descriptorFile"
    ),
}


def own_props(class_name: str) -> tuple[str, ...]:
    """The props (after ``decoder.prop.``) the decoder class ``class_name`` (a simple
    name) reads; none for the others."""
    own = OWN_DECODERS.get(class_name)
    if own is not None:
        return own.props
    return REGISTRY_PROPS if class_name in REGISTRY_DECODERS else ()


def refuse(class_name: str, full_name: str, where: str) -> None:
    """Raise a ConfigError naming a refused decoder class and why."""
    why = REFUSED_DECODERS.get(class_name)
    if why is not None:
        raise ConfigError(f"{where}: decoder '{full_name}' is not supported: {why}")


def format_options(kind: str, props: Mapping[str, str], where: str = "") -> dict[str, str]:
    """The ``FormatSpec`` options of the Pinot decoder lowering to ``kind`` with ``props``
    (names after ``decoder.prop.``), checked as the decoder checks them on start."""
    for own in OWN_DECODERS.values():
        if own.kind == kind:
            try:
                return own.options(props)
            except ConfigError as e:
                raise ConfigError(f"{where}: {e.message}" if where else e.message) from None
    return {}


def check_props(kind: str, props: Mapping[str, str], where: str) -> None:
    """:func:`format_options`, for its checks only."""
    format_options(kind, props, where)


_JSON_EXTRACTOR = "org.apache.pinot.plugin.inputformat.json.JSONRecordExtractor"


def check_json_props(given: Mapping[str, str], p: str, where: str) -> None:
    """``JSONMessageDecoder``'s props that would change its reading: refused by name."""
    fmt = given.get(p + "decoder.prop.jsonFormat", "")
    if fmt.strip() and fmt.strip().upper() != "TEXT":
        raise ConfigError(
            f"{where}: {p}decoder.prop.jsonFormat '{fmt}' is not supported: messages are "
            "read as JSON text (jsonFormat TEXT, the default), not SMILE, CBOR, "
            "POSTGRES_JSONB, SQLITE_JSONB or AUTO"
        )
    extractor = given.get(p + "decoder.prop.recordExtractorClass")
    if extractor is not None and extractor.strip() != _JSON_EXTRACTOR:
        raise ConfigError(
            f"{where}: {p}decoder.prop.recordExtractorClass '{extractor}' is not supported: "
            f"records are extracted as Pinot's {_JSON_EXTRACTOR} does (remove the prop)"
        )

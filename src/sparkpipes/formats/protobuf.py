"""Protobuf messages as Pinot's ``ProtoBufMessageDecoder`` reads them (pinot-plugins,
``pinot-protobuf/.../inputformat/protobuf/ProtoBufMessageDecoder.java`` and
``ProtoBufRecordExtractor.java``), decoded with Google's ``protobuf`` package.

What is promised, each following Pinot's source:

* **The schema.** A compiled ``FileDescriptorSet`` (``protoc --descriptor_set_out``), read
  by the front end from ``descriptorFile`` when the table is added and carried in the
  pipeline's spec as :data:`DESCRIPTOR_OPTION` (base64), so executors never open a file of
  the server. ``protoClassName`` names the message: its name within its package
  (``SampleRecord``, ``TestMessage.NestedMessage``) or its full name; without it, the
  first full name in Java's string order, as protobuf-dynamic's ``DynamicSchema`` (which
  Pinot's decoder uses) gives them (:func:`message_descriptor`).
* **The record.** Each column is the top-level field of its name (the ``.proto`` name, not
  the JSON one). A field with presence (``optional``, a message, proto2) that is not set
  is NULL; one without presence gives its value, the default too (``0``, ``""``); an
  empty repeated field is NULL, as Pinot's ``DataTypeTransformer`` standardizes an empty
  array. Nested messages become maps of their *set* fields (``Message.getAllFields``),
  repeated fields lists, map fields maps with text keys, enums their value's name (an
  unknown number ``UNKNOWN_ENUM_VALUE_<Enum>_<n>``, as Java's), bytes bytes.
* **The Java types** of Pinot's extractor are kept: 64-bit numbers ``Long``, ``float``
  ``Float``, ``uint32``/``uint64`` in Java's signed ``int``/``long`` (4294967295 is -1);
  with the option ``pinot.values`` (the Pinot front end) each column is converted as
  Pinot's ``DataTypeTransformer`` converts them (``formats.pinot_convert``): a nested
  message or map into a single-value column is its values (one: that value; several: it
  does not convert), ``continueOnError`` as for JSON.
* Bytes that do not parse as the message are a bad record naming the reason.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Decoder, Mismatch, OptionsDecoder
from sparkpipes.formats.pinot_convert import (
    PINOT_VALUES,
    JavaFloat,
    JavaLong,
    PinotValues,
    arrow,
    java_int,
    pick,
)

#: the option carrying the descriptor set (base64 of its bytes)
DESCRIPTOR_OPTION = "protobuf.descriptor"
CLASS_OPTION = "decoder.prop.protoClassName"
#: the props Pinot's decoder reads (after ``decoder.prop.``)
PROPS = ("descriptorFile", "protoClassName")


def parsed_set(data: bytes) -> Sequence[descriptor_pb2.FileDescriptorProto]:
    """The files of a descriptor set; ConfigError when ``data`` is none."""
    try:
        return descriptor_pb2.FileDescriptorSet.FromString(data).file
    except DecodeError:
        raise ConfigError("the descriptor file is not a FileDescriptorSet") from None


def message_descriptor(data: bytes, class_name: str | None) -> Descriptor:
    """The message type ``class_name`` of the descriptor set ``data``, found as
    protobuf-dynamic's ``DynamicSchema`` (which Pinot's decoder uses) finds it: by its
    name within its package (nested types dotted: ``TestMessage.NestedMessage``; a name
    two files share is dropped), else by its full name; without ``class_name``, the first
    of all message types' full names (nested ones and map entries too) in Java's string
    order (``getMessageTypes()`` is a ``TreeSet``). ConfigError when the set does not
    build (an import it does not hold, as ``DynamicSchema``) or has no such message."""
    files = parsed_set(data)
    pool = descriptor_pool.DescriptorPool()
    by_name = {f.name: f for f in files}
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        added.add(name)
        if name not in by_name:
            raise ConfigError(f"the descriptor set cannot resolve its import '{name}'")
        for dep in by_name[name].dependency:
            add(dep)
        try:
            pool.Add(by_name[name])
        except Exception as e:  # the pool's own errors (TypeError, ValueError, …)
            raise ConfigError(f"the descriptor set does not build: {e}") from None

    for f in files:
        add(f.name)
    full: dict[str, str] = {}
    short: dict[str, str] = {}
    dupes: set[str] = set()
    for f in files:
        for m in f.message_type:
            _register(
                pool.FindMessageTypeByName(_full(f.package, m.name)), None, full, short, dupes
            )
    for name in dupes:
        short.pop(name, None)
    if not class_name:
        if not full:
            raise ConfigError("the descriptor set holds no message type")
        first = min(full, key=lambda n: n.encode("utf-16-be"))  # Java's String order
        return pool.FindMessageTypeByName(first)
    found = short.get(class_name) or full.get(class_name)
    if found is None:
        raise ConfigError(f"protoClassName '{class_name}' is not a message of the descriptor set")
    return pool.FindMessageTypeByName(found)


def _full(package: str, name: str) -> str:
    return f"{package}.{name}" if package else name


def _register(d: Descriptor, scope: str | None, full: dict, short: dict, dupes: set[str]) -> None:
    """``DynamicSchema.addMessageType``: ``d`` and its nested types by both names."""
    name = d.name if scope is None else f"{scope}.{d.name}"
    if name in short:
        dupes.add(name)
    full[d.full_name] = d.full_name
    short[name] = d.full_name
    for nested in d.nested_types:
        _register(nested, name, full, short, dupes)


def _single(fd: FieldDescriptor, value: Any) -> Any:
    """``ProtoBufRecordExtractor.extractSingleValue``."""
    if fd.type == FieldDescriptor.TYPE_ENUM:
        found = fd.enum_type.values_by_number.get(value)
        return found.name if found else f"UNKNOWN_ENUM_VALUE_{fd.enum_type.name}_{value}"
    if fd.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return message_map(value)
    return _JAVA.get(fd.cpp_type, _same)(value)


def _same(value: Any) -> Any:
    return value


#: Java's types of protobuf's numbers (``getJavaType``): 64-bit ones a ``Long``, ``float``
#: a ``Float``, unsigned ones in the signed type of their size
_JAVA = {
    FieldDescriptor.CPPTYPE_INT64: JavaLong,
    FieldDescriptor.CPPTYPE_UINT64: lambda v: JavaLong(java_int(v, 64)),
    FieldDescriptor.CPPTYPE_UINT32: lambda v: java_int(v, 32),
    FieldDescriptor.CPPTYPE_FLOAT: JavaFloat,
}


def _value(fd: FieldDescriptor, value: Any) -> Any:
    """``ProtoBufRecordExtractor.extractValue``: maps, lists, single values."""
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        vfd = fd.message_type.fields_by_name["value"]
        return {_key(k): _single(vfd, value[k]) for k in value}
    if _repeated(fd):
        return [_single(fd, v) for v in value]
    return _single(fd, value)


def _repeated(fd: FieldDescriptor) -> bool:
    """Whether ``fd`` is repeated (``is_repeated`` since protobuf 6; ``label`` before, and
    gone in 7)."""
    if hasattr(fd, "is_repeated"):
        return bool(fd.is_repeated)
    return bool(fd.label == FieldDescriptor.LABEL_REPEATED)


def _key(k: Any) -> str:
    """Java's ``String.valueOf`` of a map key (``BaseRecordExtractor.stringifyMapKey``)."""
    return ("true" if k else "false") if isinstance(k, bool) else str(k)


def message_map(msg: Message) -> dict[str, Any]:
    """``extractMessage``: the set fields of a nested message, by name."""
    return {fd.name: _value(fd, v) for fd, v in msg.ListFields()}


def field_value(msg: Message, fd: FieldDescriptor) -> Any:
    """A top-level field as Pinot's ``extract`` and ``DataTypeTransformer`` leave it."""
    if fd.has_presence and not msg.HasField(fd.name):
        return None
    value = _value(fd, getattr(msg, fd.name))
    return None if isinstance(value, (list, dict)) and not value else value


def arrow_columns(decoder: Decoder, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """The decoder's columns of ``rows`` (top-level field → value), each built by Arrow in
    one call, which checks the types; raises (Mismatch, Arrow's errors) where a value needs
    the record-by-record path (a nested path, a map for a text column: JSON text)."""
    arrays = []
    pinot = getattr(decoder, "pinot", None)
    for f in decoder.schema:
        path = decoder.paths[f.name]
        if len(path) != 1 or f.name in decoder.on_missing:
            raise Mismatch
        col = [r.get(path[0]) for r in rows]
        if pinot is None and any(isinstance(v, dict) for v in col):
            raise Mismatch
        arrays.append(arrow(pinot, col, f))
    return pa.Table.from_arrays(arrays, schema=decoder.schema)


def pinot_values(decoder: OptionsDecoder) -> PinotValues | None:
    """Pinot's ``DataTypeTransformer`` conversion of the decoder's columns, when its
    options ask for it (``pinot.values``: the Pinot front end's decoders)."""
    if decoder.options.get(PINOT_VALUES) != "true":
        return None
    return PinotValues(decoder.schema, decoder.options)


class ProtoBufDecoder(OptionsDecoder):
    """See the module docstring. Pickled to executors: the message class is made on
    first use from the descriptor set in the options."""

    def configure(self) -> None:
        try:
            self.descriptor_set = base64.b64decode(
                self.options.get(DESCRIPTOR_OPTION, ""), validate=True
            )
        except binascii.Error:
            raise ConfigError("the Protobuf descriptor set is not base64") from None
        if not self.descriptor_set:
            raise ConfigError("ProtoBufMessageDecoder needs a descriptor set (descriptorFile)")
        self.class_name = self.options.get(CLASS_OPTION) or None
        self.pinot = pinot_values(self)
        self._message: Any = None
        self._fields: dict[str, FieldDescriptor] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_message": None, "_fields": {}}

    def _parsed(self, raw: bytes) -> Message:
        if self._message is None:
            d = message_descriptor(self.descriptor_set, self.class_name)
            self._message = message_factory.GetMessageClass(d)
            self._fields = dict(d.fields_by_name)
        try:
            return self._message.FromString(raw)
        except DecodeError as e:
            raise ValueError(f"Protobuf bytes do not decode: {e}") from None

    def _record(self, msg: Message) -> dict[str, Any]:
        rec = {}
        for path in self.paths.values():
            fd = self._fields.get(path[0])
            if fd is not None:
                rec[path[0]] = field_value(msg, fd)
        return rec

    def _fast(self, values: pa.Array) -> pa.Table:
        """Every message decoded and its columns built by Arrow (which checks the types);
        a message or value that will not go sends the chunk record by record."""
        rows = []
        for raw in values.to_pylist():
            try:
                rows.append(self._record(self._parsed(raw)))
            except ValueError:
                raise Mismatch from None
        return arrow_columns(self, rows)

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        rec = self._record(self._parsed(raw))
        if self.pinot is not None:
            return pick(self, self.pinot, rec)
        return self.pick(rec, nested_as_json=True)

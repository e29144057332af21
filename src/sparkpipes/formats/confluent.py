"""Protobuf and JSON messages in Confluent's wire format, as Pinot's
``KafkaConfluentSchemaRegistryProtoBufMessageDecoder`` (pinot-confluent-protobuf) and
``KafkaConfluentSchemaRegistryJsonMessageDecoder`` (pinot-confluent-json) read them
through Confluent's ``KafkaProtobufDeserializer`` / ``KafkaJsonSchemaDeserializer``.

The wire format: a zero magic byte, the writer schema's id (4 bytes, big-endian), then for
Protobuf the message indexes (a zig-zag varint count, then that many zig-zag varints: the
path to the message type, top-level index first, then nested; a count of 0 is ``[0]``,
the file's first message; Confluent's ``MessageIndexes.readFrom``), then the body:
Protobuf binary, or JSON text.

What is promised, each following Pinot's source:

* **Schemas** come from the registry by id (``decoder.prop.schema.registry.rest.url``,
  its basic auth and TLS files as for the Avro registry decoder: :func:`formats.avro.
  registry_client`), once per id and task. Protobuf schemas are asked in the registry's
  ``serialized`` format (``GET /schemas/ids/<id>?format=serialized``: a base64
  ``FileDescriptorProto``, as Confluent's registry answers since 7.x); their references
  are fetched the same way, by subject and version; ``google/protobuf/*`` imports are the
  well-known types. A JSON schema is fetched but, as Confluent's deserializer with its
  defaults (``json.fail.invalid.schema=false``), not validated against.
* **Records.** Protobuf messages are read as Pinot's ``ProtoBufRecordExtractor`` reads
  them (:mod:`formats.protobuf`); JSON bodies as Pinot's JSON decoder reads a message
  (:class:`formats.pinot_json.PinotJsonDecoder` with the option ``pinot.values``, as the
  Pinot front end gives it). Values are converted as Pinot's ``DataTypeTransformer``
  converts them, ``continueOnError`` included (``formats.pinot_convert``).
* **A message whose first byte is not 0** is discarded, no row and no error, as Pinot's
  decoders discard a row on Confluent's "Unknown magic byte!". A message too short for
  its header, a schema id the registry does not know (404) and a body that does not decode
  are bad records (``PIPELINES_ERRORS`` with ``continueOnError``); a registry that does
  not answer fails the batch, which is retried (``SourceUnavailableError``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import (
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.message import DecodeError

from sparkpipes.config import urls
from sparkpipes.errors import SourceUnavailableError
from sparkpipes.formats.avro import URL_OPTION, registry_client, registry_conf
from sparkpipes.formats.base import Decoded, Mismatch, OptionsDecoder, RecordError
from sparkpipes.formats.json import JsonDecoder
from sparkpipes.formats.pinot_convert import PINOT_VALUES, pick
from sparkpipes.formats.pinot_json import PinotJsonDecoder
from sparkpipes.formats.protobuf import arrow_columns, field_value, pinot_values

#: the well-known types a schema may import without a reference
WELL_KNOWN = {
    m.DESCRIPTOR.name: m.DESCRIPTOR
    for m in (
        any_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )
}
HEADER = 5  # the magic byte and the schema id
#: how deep a Protobuf schema's references may nest, and how many schemas they may name
#: in all (each is a request to the registry): a registry's answers are not trusted to end
MAX_REFERENCE_DEPTH = 32
MAX_REFERENCES = 256
#: the name the schema a message names is given in its pool
ROOT = "default"


class SchemaLookup:
    """The registry of ``options`` (no request until a schema is asked); pickled without
    its client and cache."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)
        url = self.options.get(URL_OPTION) or ""
        self.url = urls.redact(url)  # as messages name it
        registry_conf(url, self.options)  # a login it cannot take fails the table
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}

    def _call(self, what: str, fetch: Any) -> Any:
        if self._client is None:
            self._client = registry_client(self.options.get(URL_OPTION) or "", self.options)
        try:
            return fetch(self._client)
        except Exception as e:  # the registry's own errors, and its HTTP ones
            if getattr(e, "http_status_code", None) == 404:
                raise ValueError(f"{what} is not in the schema registry at {self.url}") from None
            raise SourceUnavailableError(
                f"cannot get {what} from the schema registry at {self.url}: {e}"
            ) from None

    def by_id(self, sid: int, fmt: str | None = None) -> Any:
        return self._call(f"schema id {sid}", lambda c: c.get_schema(sid, fmt=fmt))

    def by_version(self, subject: str, version: int) -> Any:
        return self._call(
            f"schema {subject} version {version}",
            lambda c: c.get_version(subject, version, fmt="serialized").schema,
        )


def split_header(values: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """The indices of the framed messages (first byte 0), of the others (discarded), and
    the framed ones' schema ids (None where a message is too short for its header)."""
    flat = values.cast(pa.binary())
    first = pc.binary_slice(flat, 0, 1)
    framed = pc.fill_null(pc.equal(first, pa.scalar(b"\x00")), False)
    empty = pc.fill_null(pc.equal(pc.binary_length(flat), 0), True)
    keep = pc.or_(framed, empty)  # an empty message is no framing at all: a bad record
    kept = pc.indices_nonzero(keep).cast(pa.int32())
    dropped = pc.indices_nonzero(pc.invert(keep)).cast(pa.int32())
    return kept, dropped, flat.take(kept)


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's ``ByteUtils.readVarint``) at ``at``; the next position."""
    shift = value = 0
    while True:
        if at >= len(raw) or shift > 28:
            raise ValueError("the message indexes of the Protobuf header do not decode")
        b = raw[at]
        value |= (b & 0x7F) << shift
        at += 1
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), at
        shift += 7


def message_indexes(raw: bytes) -> tuple[list[int], int]:
    """The message indexes after the header (Confluent's ``MessageIndexes.readFrom``) and
    where the body starts."""
    count, at = _varint(raw, HEADER)
    if count == 0:
        return [0], at
    if count < 0:
        raise ValueError("the message indexes of the Protobuf header do not decode")
    found = []
    for _ in range(count):
        i, at = _varint(raw, at)
        found.append(i)
    return found, at


def _schema_id(raw: bytes) -> int:
    if len(raw) < HEADER:
        raise ValueError(
            f"not a message of a schema registry: {len(raw)} bytes, shorter than its header "
            "(a magic byte and the schema id)"
        )
    return int.from_bytes(raw[1:HEADER], "big")


class _Framed(OptionsDecoder):
    """Discards messages without the magic byte, decodes the others (see the module)."""

    def configure(self) -> None:
        self.lookup = SchemaLookup(self.options)

    def decode(self, values: pa.Array) -> Decoded:
        kept, _, framed = split_header(values)
        decoded = self._decode_framed(framed)
        errors = tuple(RecordError(kept[e.index].as_py(), e.reason) for e in decoded.errors)
        return Decoded(decoded.table, kept.take(decoded.kept), errors)

    def _decode_framed(self, values: pa.Array) -> Decoded:
        return super().decode(values)


class ConfluentJsonDecoder(_Framed):
    """JSON bodies after Confluent's header, decoded as Pinot's JSON decoder reads them."""

    def configure(self) -> None:
        super().configure()
        if self.options.get(PINOT_VALUES) == "true":  # as Pinot's JSON decoder converts
            self.body: JsonDecoder = PinotJsonDecoder(
                self.schema, self.mapping, self.csv, options=self.options
            )
        else:
            self.body = JsonDecoder(
                self.schema, self.mapping, self.csv, text_values=self.text_values
            )
        self._known: set[int] = set()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_known": set()}

    def _decode_framed(self, values: pa.Array) -> Decoded:
        """Each record's schema id known to the registry (once per id), then all bodies
        through the JSON decoder."""
        errors: list[RecordError] = []
        good: list[int] = []
        for i, raw in enumerate(values.to_pylist()):
            try:
                if raw is None:
                    raise ValueError("record has no value (null payload)")
                sid = _schema_id(raw)
                if sid not in self._known:
                    self.lookup.by_id(sid)
                    self._known.add(sid)
            except ValueError as e:
                errors.append(RecordError(i, str(e)))
                continue
            good.append(i)
        origin = pa.array(good, pa.int32())
        bodies = pc.binary_slice(values.take(origin), HEADER)
        decoded = self.body.decode(bodies)
        errors += [RecordError(origin[e.index].as_py(), e.reason) for e in decoded.errors]
        return Decoded(decoded.table, origin.take(decoded.kept), tuple(errors))

    def _fast(self, values: pa.Array) -> pa.Table:
        raise NotImplementedError  # decoding is the body decoder's

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        raise NotImplementedError


class ConfluentProtobufDecoder(_Framed):
    """Protobuf bodies after Confluent's header, read with the writer's message type."""

    def configure(self) -> None:
        super().configure()
        self._pools: dict[int, Any] = {}
        self._types: dict[tuple[int, tuple[int, ...]], Any] = {}
        self._fields = {path[0] for path in self.paths.values() if path}
        self.pinot = pinot_values(self)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_pools": {}, "_types": {}}

    def _fast(self, values: pa.Array) -> pa.Table:
        """Every message read with its writer's type, the columns built by Arrow
        (:func:`formats.protobuf.arrow_columns`); any that will not go sends the chunk
        record by record, which names the reason."""
        try:
            rows = [self._record(raw) for raw in values.to_pylist()]
        except ValueError:
            raise Mismatch from None
        return arrow_columns(self, rows)

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        if self.pinot is not None:
            return pick(self, self.pinot, self._record(raw))
        return self.pick(self._record(raw), nested_as_json=True)

    def _record(self, raw: bytes) -> dict[str, Any]:
        """The top-level fields the columns read, of the message in ``raw``."""
        sid = _schema_id(raw)
        indexes, start = message_indexes(raw)
        cls = self._message_type(sid, tuple(indexes))
        try:
            msg = cls.FromString(raw[start:])
        except DecodeError as e:
            raise ValueError(f"Protobuf bytes do not decode: {e}") from None
        fields = msg.DESCRIPTOR.fields_by_name
        return {name: field_value(msg, fields[name]) for name in self._fields if name in fields}

    def _message_type(self, sid: int, indexes: tuple[int, ...]) -> Any:
        found = self._types.get((sid, indexes))
        if found is None:
            pool, file = self._pool(sid)
            protos = file.message_type
            name = file.package
            for depth, i in enumerate(indexes):
                if not 0 <= i < len(protos):
                    raise ValueError(
                        f"message index {list(indexes)} names no message of schema id {sid}"
                    )
                name = f"{name}.{protos[i].name}" if name else protos[i].name
                protos = protos[i].nested_type if depth + 1 < len(indexes) else protos
            found = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
            self._types[(sid, indexes)] = found
        return found

    def _pool(self, sid: int) -> tuple[Any, descriptor_pb2.FileDescriptorProto]:
        """The descriptor pool of schema ``sid`` and its file; a schema whose files do not
        make one is a bad record, remembered for the task (not asked for again)."""
        found = self._pools.get(sid)
        if isinstance(found, str):
            raise ValueError(found)
        if found is None:
            schema = self.lookup.by_id(sid, fmt="serialized")
            pool = descriptor_pool.DescriptorPool()
            try:
                root = _file(ROOT, schema.schema_str, sid)
                self._add(pool, schema, sid)
                _build(pool, root, sid)
            except ValueError as e:
                self._pools[sid] = str(e)
                raise
            found = self._pools[sid] = (pool, root)
        return found

    def _add(self, pool: Any, schema: Any, sid: int) -> None:
        """The files ``schema`` references, dependencies first, as Confluent's
        ``AbstractSchemaProvider.resolveReferences`` walks them (a name met again is
        there already). Walked without recursion, at most :data:`MAX_REFERENCE_DEPTH`
        deep and :data:`MAX_REFERENCES` in all; a reference to a file on its own path is
        a cycle (Confluent's walk would skip it, and the files would not build)."""
        added: set[str] = set()
        path: list[tuple[str, Any, Any]] = [(ROOT, iter(schema.references or ()), None)]
        asked = 0
        while path:
            name, refs, proto = path[-1]
            ref = next(refs, None)
            if ref is None:
                path.pop()
                if proto is not None:
                    _build(pool, proto, sid)
                    added.add(name)
                continue
            if ref.name in added or ref.name in WELL_KNOWN:
                continue
            chain = [n for n, _, _ in path[1:]] + [ref.name]
            if any(n == ref.name for n, _, _ in path):
                raise ValueError(
                    f"schema id {sid}: its references form a cycle ({' -> '.join(chain)})"
                )
            if len(path) > MAX_REFERENCE_DEPTH:
                raise ValueError(
                    f"schema id {sid}: its references nest deeper than {MAX_REFERENCE_DEPTH} "
                    f"({' -> '.join(chain[:3])} -> …)"
                )
            asked += 1
            if asked > MAX_REFERENCES:
                raise ValueError(
                    f"schema id {sid}: it references more than {MAX_REFERENCES} schemas"
                )
            child = self.lookup.by_version(ref.subject, ref.version)
            proto = _file(ref.name, child.schema_str, ref.subject)
            path.append((ref.name, iter(child.references or ()), proto))


def _file(name: str, text: str | None, what: object) -> descriptor_pb2.FileDescriptorProto:
    """A schema in the registry's serialized format (base64 ``FileDescriptorProto``)."""
    try:
        proto = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(text or "", validate=True)
        )
    except (binascii.Error, DecodeError):
        raise ValueError(
            f"schema {what} is not a Protobuf schema in the registry's serialized format"
        ) from None
    proto.name = name
    return proto


def _build(pool: Any, proto: descriptor_pb2.FileDescriptorProto, sid: int) -> None:
    """``proto`` and the well-known types it imports into ``pool``; files that do not
    build (a missing or clashing dependency) are a bad record."""
    _add_imports(pool, proto)
    try:
        pool.Add(proto)
    except (TypeError, ValueError) as e:  # protobuf's words for a file that will not build
        raise ValueError(
            f"schema id {sid}: file {proto.name} of the registry does not build: {e}"
        ) from None


def _add_imports(pool: Any, proto: descriptor_pb2.FileDescriptorProto) -> None:
    """The well-known types ``proto`` imports, into ``pool``."""
    for dep in proto.dependency:
        known = WELL_KNOWN.get(dep)
        if known is not None:
            try:
                pool.FindFileByName(dep)
            except KeyError:
                copy = descriptor_pb2.FileDescriptorProto()
                known.CopyToProto(copy)
                pool.Add(copy)

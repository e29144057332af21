"""Avro messages of a stream: ``FORMAT AVRO SCHEMA REGISTRY 'url'`` (Confluent's wire
format: a zero byte, the schema id in 4 big-endian bytes, then the Avro binary written with
that schema) or ``FORMAT AVRO SCHEMA '<schema JSON>'`` (bare Avro binary, one fixed
schema). Decoded with fastavro; writer schemas come from the registry through
confluent-kafka's client, fetched once per id and task (a registry that does not answer
fails the batch, which is retried; an id it does not know is a bad record). A user and
password in the registry's URL are its basic auth (sealed with the pipeline's secrets;
see :func:`registry_conf`).

Columns are taken by ``col <- path`` as for JSON (nested records are paths); a nested
record, map or array loaded into a text column is JSON text; logical types arrive as
fastavro gives them (timestamp-millis as a timestamp, decimal as a decimal, date as a
date). Pipelines from SingleStore SQL (``text_values``) extract and convert as SingleStore
does instead (``formats.avro_values``: union branches in paths, values as text, logical
types not applied), record by record; pipelines of Pinot's Avro decoders (the option
``pinot.values``) convert as Pinot's ``AvroRecordExtractor`` and ``DataTypeTransformer``
do (``formats.pinot_convert``). A record whose schema id is unknown, that does not
start with the magic byte or whose bytes do not decode is a record error (skipped or
failing, by the pipeline's rules) naming the reason.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkpipes.config import REDACTED, urls
from sparkpipes.errors import ConfigError, SourceUnavailableError
from sparkpipes.formats.avro_values import AvroValues
from sparkpipes.formats.base import Mismatch, OptionsDecoder
from sparkpipes.formats.pinot_convert import PINOT_VALUES, PinotValues, arrow, avro_java, pick
from sparkpipes.sources.avro_framing import AvroStreamFraming, zero_width_items
from sparkpipes.sources.base import Framing

MAGIC = 0
#: how deep a schema's JSON may nest (a nested record takes three levels: itself, its
#: fields, a field); parsing and decoding recurse once a level
MAX_SCHEMA_DEPTH = 256
#: the decoder option naming the registry
URL_OPTION = "schema.registry.url"
#: registry client keys users give with the ``schema.registry.`` prefix (Pinot's decoder
#: props and Kafka Connect's converter props use it)
REGISTRY_KEYS = (
    "basic.auth.user.info",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
)


def registry_conf(url: str, options: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of confluent-kafka's registry client for ``url``, checked (no I/O).

    A user and password in the URL are the registry's basic auth, as the client itself
    takes them; they are handed to it as ``basic.auth.user.info`` with the URL stripped
    of its user info, so neither the log lines of its HTTP requests (httpx) nor its errors
    hold the password. ``url`` is as stored, its password ``<redacted>`` and kept in
    ``options`` under ``url:schema.registry.url`` (:meth:`FormatSpec.decoder_options`),
    or a URL in clear."""
    opts = options or {}
    secret = opts.get(urls.secret_key(URL_OPTION))
    if urls.in_query(url):
        raise ConfigError(
            "the schema registry takes a password in the URL's user info "
            "(http://user:password@host:8081), as basic auth, not as a parameter"
        )
    if secret is None and urls.is_redacted(url):
        raise ConfigError(
            f"the schema registry URL '{url}' shows its password as {REDACTED} and none is "
            "stored: give the password"
        )
    bare, user, password = urls.login(url, secret)
    conf = {"url": bare}
    for key in REGISTRY_KEYS:
        value = opts.get(f"schema.registry.{key}")
        if value:
            conf[key] = value
    if password is not None:
        if "basic.auth.user.info" in conf:
            raise ConfigError(
                "the schema registry's user and password are given twice, in its URL and "
                "in basic.auth.user.info: give them once"
            )
        conf["basic.auth.user.info"] = f"{user or ''}:{password}"
    return conf


def registry_client(url: str, options: Mapping[str, str] | None = None) -> Any:
    """confluent-kafka's registry client for ``url`` (no request until a schema is asked);
    see :func:`registry_conf`."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient(registry_conf(url, options))


def schema_json(text: str) -> Any:
    """A schema's JSON text as a value; ConfigError if it is not JSON or nests deeper than
    :data:`MAX_SCHEMA_DEPTH` (a registry's answer is not trusted to be shallow, and
    parsing and decoding recurse once a level)."""
    try:
        value = json.loads(text)
    except RecursionError:
        value = None
    except ValueError as e:
        raise ConfigError(f"the Avro schema does not parse: {e}") from None
    if value is None or _depth(value) > MAX_SCHEMA_DEPTH:
        raise ConfigError(f"the Avro schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
    return value


def _depth(value: Any) -> int:
    """How deep ``value``'s objects and arrays nest (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, depth)
            stack.extend((item, depth + 1) for item in v)
    return deepest


def parsed(schema_text: str) -> Any:
    """A schema (JSON text) parsed by fastavro; ConfigError naming what is wrong. A
    schema with an array of items encoded in zero bytes (null, an empty record) is
    refused: such an array's count alone says how many there are, and two bytes of a
    message could claim billions, decoded one by one."""
    import fastavro

    value = schema_json(schema_text)
    try:
        schema = fastavro.parse_schema(value)
    except (ValueError, fastavro.schema.SchemaParseException) as e:
        raise ConfigError(f"the Avro schema does not parse: {e}") from None
    except Exception as e:  # a JSON value that is no schema (an object without "type")
        raise ConfigError(
            f"the Avro schema does not parse: {type(e).__name__} (not an Avro schema)"
        ) from None
    endless = zero_width_items(schema)
    if endless:
        raise ConfigError(
            f"the Avro schema's array {endless} holds items encoded in zero bytes (null, "
            "an empty record): its count alone would say how many, and two bytes could "
            "claim billions"
        )
    return schema


class AvroMessageDecoder(OptionsDecoder):
    """See the module docstring. Pickled to executors: the client is made on first use."""

    def configure(self) -> None:
        #: SingleStore's extraction and conversion (``formats.avro_values``), for
        #: pipelines from SingleStore SQL
        self.values = (
            AvroValues(self.schema, self.paths, self.on_missing) if self.text_values else None
        )
        #: Pinot's ``DataTypeTransformer`` conversion, for pipelines of Pinot's decoders
        self.pinot = (
            PinotValues(self.schema, self.options)
            if self.options.get(PINOT_VALUES) == "true"
            else None
        )
        #: the top-level fields the columns read: the only ones ``avro_java`` walks
        self._top = frozenset(path[0] for path in self.paths.values() if path)
        self._schemas: dict[Any, Any] = {}
        self._client: Any = None
        self._fixed: Any = None
        self.writer_schemas()

    def writer_schemas(self) -> None:
        """Where writer schemas come from (:meth:`_writer` asks there): the registry, or
        the one fixed schema."""
        url = self.options.get(URL_OPTION)
        #: the registry as messages name it: its password, if any, redacted
        self.url = urls.redact(url) if url else url
        self.fixed = self.options.get("schema")
        if not self.url and not self.fixed:
            raise ConfigError("FORMAT AVRO for messages needs SCHEMA REGISTRY 'url' or SCHEMA")
        if self.fixed:
            parsed(self.fixed)  # a schema that does not parse fails CREATE PIPELINE
        else:
            registry_conf(url or "", self.options)  # a login it cannot take fails it too

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None, "_schemas": {}, "_fixed": None}

    def framing(self, skip_lines: int = 0) -> Framing:
        """A file of Avro values with ``SCHEMA '…'`` is a raw Avro stream (SingleStore's
        Load Avro Files Example 2), never lines; a schema registry's wire format is for
        Kafka messages, so a file with ``SCHEMA REGISTRY`` is refused, naming it."""
        if not self.fixed:
            raise ConfigError(
                "FORMAT AVRO SCHEMA REGISTRY reads Kafka messages; a file of Avro values "
                "takes SCHEMA '<schema>' (a raw Avro stream) or nothing (an object "
                "container file)"
            )
        return AvroStreamFraming(parsed(self.fixed))

    def _fast_ok(self, values: pa.Array) -> bool:
        return self.values is None  # SingleStore's conversion is record by record

    def _fast(self, values: pa.Array) -> pa.Table:
        """Every record decoded, its fields gathered per column and each column built by
        Arrow in one call (which checks the types); any record or value that will not
        go (no schema id, bad bytes, a value of another type) sends the chunk to the
        record-by-record path, which names the reason."""
        import fastavro

        read = fastavro.schemaless_reader
        columns: dict[str, list[Any]] = {name: [] for name in self.paths}
        getters = [(columns[n], p[0] if len(p) == 1 else p) for n, p in self.paths.items()]
        for raw in values.to_pylist():
            try:
                writer, start = self._writer(raw)  # a registry that is down still raises
            except ValueError:
                raise Mismatch from None
            try:
                rec = read(io.BytesIO(raw[start:]), writer, None)
            except Exception:  # fastavro raises many kinds on bad bytes
                raise Mismatch from None
            if self.pinot is not None:
                rec = avro_java(writer, rec, self._top)
            for col, path in getters:
                if isinstance(path, str):
                    col.append(rec.get(path) if isinstance(rec, dict) else None)
                    continue
                v: Any = rec
                for key in path:
                    v = v.get(key) if isinstance(v, dict) else None
                col.append(v)
        arrays = [arrow(self.pinot, columns[f.name], f) for f in self.schema]
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _writer(self, raw: bytes) -> tuple[Any, int]:
        """The writer schema of ``raw`` and where its Avro body starts."""
        if self.fixed:
            if self._fixed is None:
                self._fixed = parsed(self.fixed)
            return self._fixed, 0
        if len(raw) < 5 or raw[0] != MAGIC:
            raise ValueError(
                "not an Avro message of a schema registry (no magic byte and schema id)"
            )
        sid = int.from_bytes(raw[1:5], "big")
        found = self._schemas.get(sid)
        if isinstance(found, str):  # why its schema does not parse (asked once a task)
            raise ValueError(found)
        if found is None:
            if self._client is None:
                self._client = registry_client(self.options.get(URL_OPTION) or "", self.options)
            try:
                text = self._client.get_schema(sid).schema_str
            except Exception as e:  # the registry's own errors, and its HTTP ones
                if getattr(e, "http_status_code", None) == 404:
                    raise ValueError(
                        f"schema id {sid} is not in the schema registry at {self.url}"
                    ) from None
                raise SourceUnavailableError(
                    f"cannot get schema id {sid} from the schema registry at {self.url}: {e}"
                ) from None
            try:
                found = self._schemas[sid] = parsed(text)
            except ConfigError as e:
                why = self._schemas[sid] = (
                    f"schema id {sid} of the schema registry at {self.url}: {e.message}"
                )
                raise ValueError(why) from None
        return found, 5

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        import fastavro

        writer, start = self._writer(raw)
        named = self.values is not None  # unions' named branches tagged with their names
        try:
            rec = fastavro.schemaless_reader(
                io.BytesIO(raw[start:]), writer, None, return_named_type=named
            )
        except Exception as e:  # fastavro raises many kinds on bad bytes
            raise ValueError(f"Avro bytes do not decode: {type(e).__name__}: {e}") from None
        if self.values is not None:
            return self.values.row(writer, rec)
        if self.pinot is not None:
            return pick(self, self.pinot, avro_java(writer, rec, self._top))
        return self.pick(rec, nested_as_json=True)

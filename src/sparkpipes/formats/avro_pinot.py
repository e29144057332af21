"""Avro messages as Pinot's own ``KafkaAvroMessageDecoder`` reads them (pinot-plugins,
``pinot-avro/.../inputformat/avro/KafkaAvroMessageDecoder.java``): not Confluent's wire
format, but LinkedIn's schema-repository framing.

A message is one header byte (Pinot skips it unread), the 16 bytes of the writer schema's
hash (the MD5 of the schema in LinkedIn's repository; Pinot only uses them as an id), then
the record in Avro binary. The writer schema is fetched from the repository by that hash
as ``GET <url>/id=<32 lower-case hex digits>``, which answers the schema's JSON text
(``Schema.parse`` of the body); ``schema.registry.rest.url`` may list several URLs,
comma-separated, all serving the same repository (Pinot picks one at random per fetch;
here they are tried in order). A schema is fetched once per hash and task. An empty
message decodes to no row (Pinot's decoder returns null for it, and the row is dropped).

Where Pinot's falls back and this does not: when a hash's schema cannot be fetched, Pinot
decodes the message with the newest schema of the topic (``/latest_with_type=<name>``,
fetched when it starts), which reads other fields than the writer's whenever the two
differ. Here a repository that does not answer (a connection failure, an HTTP 5xx) fails
the batch, which is retried (``SourceUnavailableError``), and a hash it does not know
(404) is a bad record naming the hash (``PIPELINES_ERRORS`` with ``continueOnError``):
a row is only ever read with its writer's schema.
"""

from __future__ import annotations

from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config import urls
from sparkpipes.errors import ConfigError, SourceUnavailableError
from sparkpipes.formats.avro import AvroMessageDecoder, parsed
from sparkpipes.formats.base import Decoded, RecordError

#: the decoder option naming the repository (Pinot's ``schema.registry.rest.url``), as
#: for the Confluent framing
URL_OPTION = "schema.registry.url"
#: the option that picks this framing in ``formats.build_decoder`` (value :data:`FRAMING`)
FRAMING_OPTION = "schema.registry.framing"
FRAMING = "pinot-schema-hash"
HEADER = 1 + 16  # the header byte, then the schema's hash
#: Pinot's SchemaFetcher timeouts (connect and read, 15 s each)
TIMEOUT_S = 15.0


def repository_urls(text: str) -> tuple[str, ...]:
    """The repository's URLs (Pinot's ``parseSchemaRegistryUrls``: split at commas),
    checked: http(s), no password (Pinot's fetch sends none)."""
    found = tuple(u.strip().rstrip("/") for u in text.split(",") if u.strip())
    if not found:
        raise ConfigError(
            "KafkaAvroMessageDecoder needs schema.registry.rest.url (the schema repository)"
        )
    for u in found:
        if not u.startswith(("http://", "https://")):
            raise ConfigError(f"schema repository '{urls.redact(u)}' is not an http(s) URL")
        if "?" in u or "#" in u:  # the hash must be the last part of the path
            raise ConfigError(
                f"schema repository '{urls.redact(u)}' has a query or fragment: give the "
                "URL the decoder appends /id=<hash> to"
            )
        if urls.redact(u) != u:
            raise ConfigError(
                f"schema repository '{urls.redact(u)}' holds a password, which Pinot's "
                "decoder never sends: give the repository's URL without one"
            )
    return found


class PinotAvroMessageDecoder(AvroMessageDecoder):
    """See the module docstring. Decodes as :class:`AvroMessageDecoder` does (fastavro,
    the same columns and values); only the framing and the schema lookup differ."""

    def writer_schemas(self) -> None:
        """The repository's URLs (by the schema's hash), never a fixed schema."""
        self.urls = repository_urls(self.options.get(URL_OPTION, ""))
        self.url = ",".join(self.urls)
        self.fixed = None

    def decode(self, values: pa.Array) -> Decoded:
        """Empty messages give no row (Pinot's decoder returns null); the others decode."""
        empty = pc.fill_null(pc.equal(pc.binary_length(values), 0), False)
        if not pc.any(empty).as_py():
            return super().decode(values)
        origin = pc.indices_nonzero(pc.invert(empty)).cast(pa.int32())
        decoded = super().decode(values.take(origin))
        errors = tuple(RecordError(origin[e.index].as_py(), e.reason) for e in decoded.errors)
        return Decoded(decoded.table, origin.take(decoded.kept), errors)

    def _writer(self, raw: bytes) -> tuple[Any, int]:
        """The writer schema of ``raw`` (by the hash in its header) and where its Avro
        body starts."""
        if len(raw) < HEADER:
            raise ValueError(
                f"not a message of Pinot's KafkaAvroMessageDecoder: {len(raw)} bytes, shorter "
                "than its header (a byte and the schema's 16-byte hash)"
            )
        digest = bytes(raw[1:HEADER])
        found = self._schemas.get(digest)
        if found is None:
            text = self._fetch(digest.hex())
            try:
                found = parsed(text)
            except ConfigError:  # what the URL answered is not shown: it may be anyone's
                raise ValueError(
                    f"schema hash {digest.hex()}: the schema repository's answer is not an "
                    "Avro schema"
                ) from None
            self._schemas[digest] = found
        return found, HEADER

    def _fetch(self, digest: str) -> str:
        """``GET <url>/id=<hash>`` of the first URL that answers."""
        failures = []
        for url in self.urls:
            try:
                r = httpx.get(f"{url}/id={digest}", timeout=TIMEOUT_S, follow_redirects=False)
            except httpx.HTTPError as e:
                failures.append(f"{url}: {type(e).__name__}: {e}")
                continue
            if r.status_code == 200:
                return r.text
            if r.status_code == 404:
                raise ValueError(f"schema hash {digest} is not in the schema repository at {url}")
            failures.append(f"{url}: HTTP {r.status_code}")
        raise SourceUnavailableError(
            f"cannot get the Avro schema of hash {digest} from the schema repository: "
            + "; ".join(failures)
        )


#: the Avro framings besides Confluent's, by the value of :data:`FRAMING_OPTION`
FRAMINGS = {FRAMING: PinotAvroMessageDecoder}

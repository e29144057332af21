"""A stand-in for a Confluent schema registry, serving the REST subset confluent-kafka's
client and our tests use (register a schema under a subject, get a schema by id); and for
LinkedIn's schema repository as Pinot's ``KafkaAvroMessageDecoder`` asks it
(``GET /schemaRegistry/id=<md5 hex>`` answers the schema's JSON text: :meth:`Registry.
register_hashed`, :func:`encode_hashed`).

No Confluent-compatible registry server is in the package registries this project can
install from (PyPI, npm, Debian), so the tests run this one over real HTTP on 127.0.0.1;
the client, the wire format and the decoding are the real ones. The benchmarks use it
too."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse


class Registry:
    """``user_info`` (``user:password``): the registry asks for HTTP basic auth, as a
    Confluent registry with ``authentication.method=BASIC`` does (401 otherwise)."""

    def __init__(self, user_info: str | None = None) -> None:
        self.schemas: dict[int, str] = {}
        self.by_text: dict[str, int] = {}
        #: each id's schemaType and references (Avro without: :meth:`register`), and the
        #: ids of (subject, version)
        self.kinds: dict[int, tuple[str, list[dict]]] = {}
        self.versions: dict[tuple[str, int], int] = {}
        self.refused = 0
        #: LinkedIn's repository: md5 hex → schema text; the requests it answered; an
        #: HTTP status it answers every request with instead (503: a repository that is down)
        self.by_hash: dict[str, str] = {}
        self.hash_requests: list[str] = []
        self.hash_status: int | None = None
        app = FastAPI()

        if user_info is not None:
            want = "Basic " + base64.b64encode(user_info.encode()).decode()

            @app.middleware("http")
            async def basic_auth(request: Request, call_next: Any) -> Any:
                if request.headers.get("authorization") != want:
                    self.refused += 1
                    return JSONResponse(
                        {"error_code": 401, "message": "Unauthorized"}, status_code=401
                    )
                return await call_next(request)

        @app.post("/subjects/{subject}/versions")
        async def register(subject: str, request: Request) -> Any:
            text = json.loads(await request.body())["schema"]
            sid = self.by_text.setdefault(text, len(self.schemas) + 1)
            self.schemas[sid] = text
            return {"id": sid}

        @app.get("/schemaRegistry/id={digest}")
        def schema_by_hash(digest: str) -> Any:
            self.hash_requests.append(digest)
            if self.hash_status is not None:
                return PlainTextResponse("unavailable", status_code=self.hash_status)
            if digest not in self.by_hash:
                return PlainTextResponse(f"no schema {digest}", status_code=404)
            return PlainTextResponse(self.by_hash[digest])

        @app.get("/schemas/ids/{sid}")
        def schema(sid: int) -> Any:
            if sid not in self.schemas:
                return JSONResponse(
                    {"error_code": 40403, "message": "Schema not found"}, status_code=404
                )
            kind, refs = self.kinds.get(sid, ("AVRO", []))
            return {"schema": self.schemas[sid], "schemaType": kind, "references": refs}

        @app.get("/subjects/{subject}/versions/{version}")
        def version(subject: str, version: int) -> Any:
            sid = self.versions.get((subject, version))
            if sid is None:
                return JSONResponse(
                    {"error_code": 40402, "message": "Version not found"}, status_code=404
                )
            kind, refs = self.kinds.get(sid, ("AVRO", []))
            return {
                "subject": subject,
                "version": version,
                "id": sid,
                "schema": self.schemas[sid],
                "schemaType": kind,
                "references": refs,
            }

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Registry:
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            assert time.time() < deadline, "the stand-in registry did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def register(self, schema: dict) -> int:
        text = json.dumps(schema)
        sid = self.by_text.setdefault(text, len(self.schemas) + 1)
        self.schemas[sid] = text
        return sid

    def register_typed(
        self,
        text: str,
        kind: str,
        references: list[dict] | None = None,
        subject: str | None = None,
        version: int = 1,
    ) -> int:
        """A schema of type ``kind`` (``PROTOBUF``: as the registry answers
        ``format=serialized``, the base64 of a ``FileDescriptorProto``; ``JSON``) with its
        references (``name``, ``subject``, ``version``), optionally under ``subject`` and
        ``version`` too; its id."""
        sid = self.by_text.setdefault(text, len(self.schemas) + 1)
        self.schemas[sid] = text
        self.kinds[sid] = (kind, list(references or []))
        if subject is not None:
            self.versions[(subject, version)] = sid
        return sid

    def register_hashed(self, schema: dict) -> bytes:
        """``schema`` in LinkedIn's repository, under the MD5 of its text; its hash."""
        text = json.dumps(schema)
        digest = hashlib.md5(text.encode()).digest()
        self.by_hash[digest.hex()] = text
        return digest

    @property
    def repository_url(self) -> str:
        """The repository's URL as Pinot's ``schema.registry.rest.url`` gives it."""
        return f"{self.url}/schemaRegistry"


def encode_hashed(schema: dict, record: dict, header: int = 0) -> bytes:
    """A message as LinkedIn's Avro encoder writes it and Pinot's KafkaAvroMessageDecoder
    reads it: a header byte, the MD5 of the schema's text (16 bytes), Avro binary."""
    digest = hashlib.md5(json.dumps(schema).encode()).digest()
    return bytes([header]) + digest + bare(schema, record)


def encode(schema_id: int, schema: dict, record: dict) -> bytes:
    """Confluent's wire format: magic byte, schema id, Avro binary."""
    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + buf.getvalue()


def framed(schema_id: int, body: bytes, indexes: tuple[int, ...] | None = None) -> bytes:
    """Confluent's wire format for Protobuf (``indexes``: the message indexes, written as
    its serializer writes them, ``(0,)`` as the single byte 0) and JSON (None)."""
    head = b"\x00" + schema_id.to_bytes(4, "big")
    if indexes is None:
        return head + body
    if tuple(indexes) == (0,):
        return head + b"\x00" + body

    def varint(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 31), b""
        while True:
            if z < 0x80:
                return out + bytes([z])
            out += bytes([(z & 0x7F) | 0x80])
            z >>= 7

    return head + varint(len(indexes)) + b"".join(varint(i) for i in indexes) + body


def bare(schema: dict, record: dict) -> bytes:
    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()

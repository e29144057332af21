"""Payloads decoded by a stream plugin's own message decoder (seed 003's
``StreamMessageDecoder``, named by ``stream.<type>.decoder.class.name``): record by
record, each row mapped to the table's columns as for JSON (nested fields are paths). A
payload the decoder rejects (None, or an exception) is a bad record with its reason."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkpipes.config import urls
from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import OptionsDecoder
from sparkpipes.sources.plugin import resolve_decoder

PROP = "decoder.prop."


class StreamDecoder(OptionsDecoder):
    """Options: ``decoder.class`` (a Python path), ``decoder.topic`` and
    ``decoder.prop.<name>`` (the plugin decoder's props, a URL among them with its
    password, sealed as ``url:decoder.prop.<name>``, put back as the user wrote it)."""

    def configure(self) -> None:
        options = self.options
        self.class_name = options.get("decoder.class") or ""
        if not self.class_name:
            raise ConfigError("a stream plugin decoder needs decoder.class")
        self.cls = resolve_decoder(self.class_name)
        self.topic = options.get("decoder.topic", "")
        given = urls.revealed(options, options)  # URLs with their passwords put back
        self.props = {k[len(PROP) :]: v for k, v in given.items() if k.startswith(PROP)}
        self._decoder: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_decoder": None}

    def _fast_ok(self, values: pa.Array) -> bool:
        return False

    def _fast(self, values: pa.Array) -> pa.Table:  # pragma: no cover - never taken
        raise NotImplementedError

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        if self._decoder is None:
            self._decoder = self.cls()
            self._decoder.init(dict(self.props), set(self.schema.names), self.topic)
        try:
            row = self._decoder.decode(raw)
        except Exception as e:  # the plugin's own failure: this record is bad
            raise ValueError(f"{self.class_name} failed: {type(e).__name__}: {e}") from None
        if row is None:
            raise ValueError(f"{self.class_name} decoded no row")
        return self.pick(dict(row), nested_as_json=True)

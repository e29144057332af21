"""FORMAT RAW: the whole payload into the one target column (string or binary)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Decoder


class RawDecoder(Decoder):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if len(self.schema) != 1 or not (
            pa.types.is_string(self.schema[0].type) or pa.types.is_binary(self.schema[0].type)
        ):
            raise ConfigError(
                "FORMAT RAW loads each record into one STRING or BINARY column; the table has "
                f"{', '.join(f'{f.name} {f.type}' for f in self.schema)}"
            )

    def _fast(self, values: pa.Array) -> pa.Table:
        field = self.schema[0]
        return pa.table({field.name: values.cast(field.type)})

    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        field = self.schema[0]
        return {field.name: raw if pa.types.is_binary(field.type) else _text(raw)}


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        raise ValueError(f"not valid UTF-8 text (byte {e.start})") from None

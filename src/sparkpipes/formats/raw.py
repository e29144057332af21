"""FORMAT RAW: the whole payload into the one target column (string or binary)."""

from __future__ import annotations

import pyarrow as pa

from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Decoded, Decoder, all_kept


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

    def decode(self, values: pa.Array) -> Decoded:
        field = self.schema[0]
        if pa.types.is_binary(field.type):
            col = values.cast(pa.binary())
            return Decoded(pa.table({field.name: col}), all_kept(len(values)), ())
        try:
            col = values.cast(pa.string())
            return Decoded(pa.table({field.name: col}), all_kept(len(values)), ())
        except pa.ArrowInvalid:
            return self._slow(values, lambda raw: {field.name: _text(raw)})


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        raise ValueError(f"not valid UTF-8 text (byte {e.start})") from None

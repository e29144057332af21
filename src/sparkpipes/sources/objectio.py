"""Reading an object's bytes: store failures told apart from bytes that do not decode,
and compressed objects decompressed on the fly, what is readable before damage kept."""

from __future__ import annotations

import bz2
import gzip
from typing import Any


class ReadFailed(Exception):
    """The store failed to deliver bytes (network, permission, vanished) — as opposed to
    bytes that do not decode. Raised through decompressors and Parquet readers."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class Guarded:
    """A file whose read errors are :class:`ReadFailed`, so a decoder's own errors
    (corrupt content) can be told apart from the store's."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def read(self, n: int = -1) -> bytes:
        try:
            return self._f.read(n)
        except Exception as e:
            raise ReadFailed(e) from e

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def seek(self, pos: int, whence: int = 0) -> int:
        try:
            return self._f.seek(pos, whence)
        except Exception as e:
            raise ReadFailed(e) from e

    def tell(self) -> int:
        return self._f.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return False

    @property
    def size(self) -> int:
        return self._f.size

    def close(self) -> None:
        self._f.close()


class Salvaging:
    """A decompressed stream read in small steps, so that a stream damaged part-way
    yields the bytes before the damage and raises on the read after them."""

    STEP = 64 << 10

    def __init__(self, stream: Any) -> None:
        self._s = stream
        self._error: BaseException | None = None

    def read(self, n: int = -1) -> bytes:
        if self._error is not None:
            raise self._error
        out = bytearray()
        while n < 0 or len(out) < n:
            try:
                chunk = self._s.read(self.STEP if n < 0 else min(self.STEP, n - len(out)))
            except ReadFailed:
                raise
            except Exception as e:
                if not out:
                    raise
                self._error = e
                break
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self._s.close()


def decompressed(f: Any, codec: str) -> Any:
    if codec == "gzip":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if codec == "bz2":
        return bz2.BZ2File(f, mode="rb")
    import zstandard

    return zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
